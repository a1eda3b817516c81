#include "compiler/compiler.h"

#include <chrono>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "compiler/backend/cpu_target.h"
#if WARPD_CPU_JIT
#include "compiler/backend/compile_pool.h"
#include "compiler/backend/cpu_jit.h"
#endif
#include "compiler/cache/disk_cache.h"
#include "compiler/cache/module_cache.h"
#include "compiler/compile_queue.h"
#include "compiler/codegen/adjoint.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/lane_blocks.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/sema.h"
#include "compiler/tir/array_access.h"
#include "compiler/tir/explicit_reads.h"
#include "compiler/tir/lower.h"
#include "compiler/tir/print_sites.h"
#include "warpd/embedded_headers.h"
#if WARPD_WITH_CUDA
#include "compiler/backend/cuda_nvrtc.h"
#endif

namespace warpd::compiler {
namespace {

constexpr char kObjectExt[] = ".o";
constexpr char kPtxExt[] = ".ptx";
[[maybe_unused]] constexpr int kVerifyArch = 90;  // unused in the lean build

// Bump when codegen or the launch ABI changes in a way the source text does not show.
constexpr char kCompilerAbi[] = "warpd-compiler-1";

std::string HeadersDigest() {
  std::vector<std::string_view> parts;
  for (const auto& h : native::EmbeddedHeaders()) {
    parts.push_back(h.path);
    parts.push_back(std::string_view(h.contents, h.size));
  }
  return CacheKey(parts);
}

// What a module's kernels' layouts, the types they use and its print table
// take in memory (an estimate from their sizes).
uint64_t LayoutBytes(const std::vector<CompiledKernel>& kernels, const types::TypeTable* types,
                     const abi::PrintTable* prints) {
  uint64_t bytes = kernels.capacity() * sizeof(CompiledKernel);
  for (const CompiledKernel& k : kernels) {
    const abi::KernelLayout& l = k.layout;
    bytes += l.name.capacity() + l.display_name.capacity() + l.file.capacity() +
             l.params.capacity() * sizeof(abi::ParamLayout) + k.cuda_entry.capacity() + k.cuda_adjoint.capacity();
    for (const abi::ParamLayout& p : l.params) bytes += p.name.capacity();
  }
  if (types != nullptr) bytes += types->MemoryBytes();
  if (prints != nullptr) {
    for (const abi::PrintSite& site : prints->sites) {
      bytes += sizeof(site) + site.segments.capacity() * sizeof(abi::PrintSegment);
      for (const abi::PrintSegment& seg : site.segments) bytes += seg.text.capacity();
    }
  }
  return bytes;
}

#if WARPD_CPU_JIT
class CpuModule final : public CompiledModule {
 public:
  // The JIT maps a module's code, read-only data and data on pages of their
  // own and keeps a JITDylib with its symbol table: a few pages beyond the
  // object file's size.
  static constexpr uint64_t kJitOverheadBytes = 16 << 10;

  // `code_bytes`: the object file the JIT loaded `code` from.
  CpuModule(std::string key, std::unique_ptr<JitModule> code, uint64_t code_bytes,
            std::vector<CompiledKernel> kernels, std::shared_ptr<types::TypeTable> types,
            std::shared_ptr<const abi::PrintTable> prints)
      : code_(std::move(code)) {
    cache_key_ = std::move(key);
    kernels_ = std::move(kernels);
    types_ = std::move(types);
    if (prints && !prints->sites.empty()) print_table_ = std::move(prints);
    memory_bytes_ =
        sizeof(*this) + code_bytes + kJitOverheadBytes + LayoutBytes(kernels_, types_.get(), print_table_.get());
  }

 private:
  std::unique_ptr<JitModule> code_;
};
#endif

// A module for CUDA devices: its PTX, which each device loads (and the
// driver compiles for the GPU) when a launch first needs it.
class CudaImageModule final : public CompiledModule {
 public:
  CudaImageModule(std::string key, std::string ptx, int arch, std::vector<CompiledKernel> kernels,
                  std::shared_ptr<types::TypeTable> types, std::shared_ptr<const abi::PrintTable> prints) {
    cache_key_ = std::move(key);
    kernels_ = std::move(kernels);
    types_ = std::move(types);
    if (prints && !prints->sites.empty()) print_table_ = std::move(prints);
    target_ = Target::kCuda;
    cuda_image_ = std::move(ptx);
    cuda_arch_ = arch;
    memory_bytes_ = sizeof(*this) + cuda_image_.capacity() + LayoutBytes(kernels_, types_.get(), print_table_.get());
  }
};

// "kernel 'k'" or "module 'm' (kernels a, b)": what a compile message names.
[[maybe_unused]] std::string Describe(const ir::Module& module) {
  std::vector<std::string> kernels;
  for (const auto& f : module.functions)
    if (f.kind == ir::FunctionKind::kKernel && !f.dropped) kernels.push_back(f.display_name);
  if (kernels.size() == 1) return absl::StrCat("kernel '", kernels[0], "'");
  return absl::StrCat("module '", module.name, "' (kernels ", absl::StrJoin(kernels, ", "), ")");
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

constexpr uint64_t kMemoryCacheBytes = uint64_t{256} << 20;

struct Compiler::Impl {
  HostCpu host;
  CpuTarget cpu_target;
#if WARPD_CPU_JIT
  std::unique_ptr<CpuJit> jit;
  std::unique_ptr<CompilePool> pool;  // null: compile in process
#endif
  // Modules no session holds are kept for the next session that loads
  // them, within 512 modules and 256 MiB of their memory_bytes (those that
  // sessions hold are charged to the sessions, session.h).
  ModuleCache<CompiledModule> cache{ModuleCache<CompiledModule>::kDefaultCapacity, kMemoryCacheBytes,
                                    [](const CompiledModule& m) { return m.memory_bytes(); }};
  DiskCache::Options disk_options;
  mutable absl::Mutex disk_mu;
  // The current directory's (SetCacheDir replaces it; builds in flight keep
  // the one they started with). Never null.
  std::shared_ptr<DiskCache> disk ABSL_GUARDED_BY(disk_mu);
  uint64_t evictions_before ABSL_GUARDED_BY(disk_mu) = 0;  // by earlier directories' caches
  std::shared_ptr<DiskCache> Disk() const {
    absl::MutexLock lock(&disk_mu);
    return disk;
  }
  std::string headers_digest;
  bool verify_cuda = false;
#if WARPD_WITH_CUDA
  // Loaded on the first CUDA compile (or verification); its error is kept.
  absl::Mutex nvrtc_mu;
  std::optional<absl::StatusOr<std::shared_ptr<Nvrtc>>> nvrtc ABSL_GUARDED_BY(nvrtc_mu);
  absl::StatusOr<std::shared_ptr<Nvrtc>> LoadNvrtc() {
    absl::MutexLock lock(&nvrtc_mu);
    if (!nvrtc) nvrtc = Nvrtc::Load();
    return *nvrtc;
  }
#endif
  // Last, so it is destroyed first: its jobs use everything above.
  std::unique_ptr<CompileQueue> queue;
};

// One compile request, shared by its cache creation and its callback.
struct Compiler::Request {
  std::shared_ptr<ir::Module> module;
  Target target = Target::kCpu;
  int cuda_arch = 0;  // kCuda: compute_<cuda_arch>, one NVRTC can target
  std::chrono::steady_clock::time_point t0;
  Generated generated;
  std::string key;
  CacheWriteGate gate;
  bool disk_hit = false;  // written by Build, read after it
};

Compiler::Compiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Compiler::~Compiler() = default;

absl::StatusOr<std::unique_ptr<Compiler>> Compiler::Create(const Options& options) {
  auto impl = std::make_unique<Impl>();
  impl->host = DetectHostCpu();
  impl->cpu_target = options.forced_cpu_target.empty()
                         ? SelectCpuTarget(impl->host)
                         : ParseForcedCpuTarget(impl->host.triple, options.forced_cpu_target);
  impl->headers_digest = HeadersDigest();
#if WARPD_CPU_JIT
  auto jit = CpuJit::Create(impl->cpu_target, options.precompiled_header ? &NativePchCache::Shared() : nullptr);
  if (!jit.ok()) return jit.status();
  impl->jit = *std::move(jit);
  if (!options.compile_worker.empty()) {
    CompilePool::Options pool_options;
    pool_options.worker_path = options.compile_worker;
    pool_options.workers = options.compile_workers;
    pool_options.timeout = options.compile_timeout;
    pool_options.memory_bytes = options.compile_memory_bytes;
    pool_options.precompiled_header = options.precompiled_header;
    pool_options.pch_target = impl->jit->target();
    auto pool = CompilePool::Create(pool_options);
    if (!pool.ok()) return pool.status();
    impl->pool = *std::move(pool);
  }
#endif
  impl->verify_cuda = options.verify_cuda;
  impl->queue = std::make_unique<CompileQueue>(options.compile_workers);
#if !WARPD_WITH_CUDA
  if (options.verify_cuda)
    return absl::FailedPreconditionError("verify_cuda needs a build with WARPD_WITH_CUDA");
#endif
  impl->disk_options.max_bytes = options.cache_max_bytes;
  absl::StatusOr<std::unique_ptr<DiskCache>> disk = DiskCache::Open(options.cache_dir, impl->disk_options);
  if (!disk.ok()) return disk.status();
  {
    absl::MutexLock lock(&impl->disk_mu);
    impl->disk = *std::move(disk);
  }
  return std::unique_ptr<Compiler>(new Compiler(std::move(impl)));
}

absl::StatusOr<Compiler::Generated> Compiler::Generate(ir::Module& module) {
  if (auto st = sema::Analyze(module); !st.ok()) return st;
  auto lowered = tir::Lower(module);
  if (!lowered.ok()) return lowered.status();
  Generated out;
  {
    std::vector<std::vector<uint8_t>> access = tir::AnalyzeArrayAccess(*lowered);
    for (size_t i = 0; i < lowered->functions.size(); ++i)
      if (lowered->functions[i].is_kernel()) out.param_access[lowered->functions[i].source->name] = access[i];
  }
  if (module.backward) {
    // The adjoints need every read of a mutable variable explicit; the
    // forward text of a backward module is emitted from the same TIR.
    // Which kernels' adjoints may run lane-blocked is judged before.
    std::set<std::string> lane_kernels;
    for (const tir::Function& f : lowered->functions)
      if (f.is_kernel() && ir::IsEmitted(*f.source) && codegen::AdjointRunsLaneBlocked(f))
        lane_kernels.insert(f.source->name);
    for (tir::Function& f : lowered->functions) tir::MakeReadsExplicit(f);
    codegen::Adjoints adjoints = codegen::GenerateAdjoints(*lowered, lane_kernels);
    for (const auto& [kernel, params] : adjoints.exclusive) {
      std::vector<uint8_t>& access = out.param_access[kernel];
      for (int p : params)
        if (static_cast<size_t>(p) < access.size()) access[static_cast<size_t>(p)] |= tir::kAccessExclusive;
    }
    if (!adjoints.grad_error.empty()) return absl::InvalidArgumentError(adjoints.grad_error);
    out.source = codegen::GenerateModule(*lowered) + adjoints.source;
    out.adjoint_failed = std::move(adjoints.failed);
  } else {
    // wp.grad() calls run adjoints in forward code: those functions' only.
    // Their adjoints need the reads made explicit; the forward text of such
    // a module comes from the same TIR.
    bool grad = false;
    for (const tir::Function& f : lowered->functions) grad |= ir::IsEmitted(*f.source) && tir::CallsGrad(f);
    if (grad) {
      for (tir::Function& f : lowered->functions) tir::MakeReadsExplicit(f);
      codegen::Adjoints adjoints = codegen::GenerateGradAdjoints(*lowered);
      if (!adjoints.grad_error.empty()) return absl::InvalidArgumentError(adjoints.grad_error);
      out.source = codegen::GenerateModule(*lowered) + adjoints.source;
    } else {
      out.source = codegen::GenerateModule(*lowered);
    }
  }
  out.prints = std::make_shared<const abi::PrintTable>(std::move(lowered->prints));
  return out;
}

absl::StatusOr<CompileResult> Compiler::Compile(ir::Module& module, Target target, int cuda_arch) {
  absl::Notification ready;
  absl::StatusOr<CompileResult> out = absl::UnknownError("unset");
  // The caller's module, not owned: this waits until the compile is done.
  CompileAsync(std::shared_ptr<ir::Module>(std::shared_ptr<ir::Module>(), &module), target,
               [&](absl::StatusOr<CompileResult> result) {
                 out = std::move(result);
                 ready.Notify();
               },
               {}, cuda_arch);
  ready.WaitForNotification();
  return out;
}

void Compiler::CompileAsync(std::shared_ptr<ir::Module> module, Target target, CompileCallback done,
                            CacheWriteGate gate, int cuda_arch) {
  auto request = std::make_shared<Request>();
  request->t0 = std::chrono::steady_clock::now();
  request->module = std::move(module);
  request->gate = std::move(gate);
  request->target = target;
  // What the key names besides the source: the CPU target and JIT options,
  // or NVRTC's version and the architecture.
  std::vector<std::string> target_parts;
  if (target == Target::kCuda) {
#if WARPD_WITH_CUDA
    absl::StatusOr<std::shared_ptr<Nvrtc>> nvrtc = impl_->LoadNvrtc();
    if (!nvrtc.ok()) return std::move(done)(nvrtc.status());
    // The newest architecture NVRTC has that the device runs (PTX for an
    // older one runs on a newer GPU).
    for (int a : (*nvrtc)->supported_archs())
      if (a <= cuda_arch) request->cuda_arch = a;
    if (request->cuda_arch == 0) {
      return std::move(done)(absl::FailedPreconditionError(absl::StrCat(
          "NVRTC ", (*nvrtc)->version(), " cannot compile for sm_", cuda_arch, " (", (*nvrtc)->library(), ")")));
    }
    target_parts = {"cuda", (*nvrtc)->version(), absl::StrCat("compute_", request->cuda_arch)};
#else
    return std::move(done)(
        absl::UnimplementedError("this warpd was built without the CUDA backend: it cannot compile for CUDA"));
#endif
  } else {
#if WARPD_CPU_JIT
    target_parts = {impl_->jit->TargetDescription(), std::string(CpuJit::OptionsDescription())};
#else
    return std::move(done)(absl::UnimplementedError(
        "this warpd was built without the CPU JIT (WARPD_CPU_JIT=OFF, the lean CUDA-only build): kernels run only "
        "on CUDA devices, so launch on 'cuda:N' or use a daemon built with the CPU JIT"));
#endif
  }
  auto generated = Generate(*request->module);
  if (!generated.ok()) return std::move(done)(generated.status());
  request->generated = *std::move(generated);
  const std::string& source = request->generated.source;
  // What print calls print is client text that the source does not hold:
  // part of the key, so modules share an entry only when they print alike
  // (no session ever formats its output with another session's text).
  const abi::PrintTable& prints = *request->generated.prints;
  std::vector<std::string_view> key_parts = {kCompilerAbi, source, impl_->headers_digest};
  for (const std::string& p : target_parts) key_parts.push_back(p);
  const std::string print_key = prints.sites.empty() ? "" : tir::PrintTableKey(prints);
  if (!print_key.empty()) key_parts.push_back(print_key);
  request->key = CacheKey(key_parts);
  // One creation per key at a time (the cache's single flight), and it waits
  // on a compile thread; requests that join it only leave a callback.
  impl_->cache.GetOrCreateAsync(
      request->key,
      [this, request](ModuleCache<CompiledModule>::Completion completion) {
        impl_->queue->Schedule([this, request, completion = std::move(completion)]() mutable {
          std::move(completion).Finish(request->target == Target::kCuda ? BuildCuda(*request) : Build(*request));
        });
      },
      [this, request, done = std::move(done)](absl::StatusOr<std::shared_ptr<const CompiledModule>> compiled,
                                              bool memory_hit) mutable {
        if (!compiled.ok()) return std::move(done)(compiled.status());
        // A module used from memory keeps its disk entry recent, so the
        // disk cache evicts what nobody uses, not what stays loaded.
        if (memory_hit) impl_->Disk()->Touch(request->key, request->target == Target::kCuda ? kPtxExt : kObjectExt);
        CompileResult result;
        result.module = *std::move(compiled);
        // disk_hit was written by Build, on this thread, for the request
        // that created the entry; false for the others.
        result.cache_hit = memory_hit || request->disk_hit;
        result.compile_ms = MsSince(request->t0);
        result.failures = request->module->failures;
        std::move(done)(std::move(result));
      });
}

absl::StatusOr<std::vector<CompiledKernel>> Compiler::Kernels(const Request& request, const EntryResolver& entries) {
  const ir::Module& module = *request.module;
  const std::shared_ptr<const abi::PrintTable>& prints = request.generated.prints;
  std::vector<CompiledKernel> kernels;
  for (const auto& f : module.functions) {
    if (f.kind != ir::FunctionKind::kKernel || f.dropped) continue;
    CompiledKernel kernel;
    kernel.layout = ComputeLayout(module, f);
    if (auto a = request.generated.param_access.find(f.name); a != request.generated.param_access.end())
      for (size_t p = 0; p < kernel.layout.params.size() && p < a->second.size(); ++p)
        kernel.layout.params[p].access = a->second[p];
    if (absl::Status s = entries(f.name, /*adjoint=*/false, kernel); !s.ok()) return s;
    if (module.backward) {
      auto why = request.generated.adjoint_failed.find(f.name);
      if (why != request.generated.adjoint_failed.end()) {
        kernel.adjoint_error = why->second;
      } else if (absl::Status s = entries(f.name, /*adjoint=*/true, kernel); !s.ok()) {
        return s;
      }
    }
    for (const std::string& k : prints->kernels) kernel.may_print |= k == f.name;
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

absl::StatusOr<std::shared_ptr<const CompiledModule>> Compiler::BuildCuda(Request& request) {
#if WARPD_WITH_CUDA
  const std::string& key = request.key;
  const std::shared_ptr<DiskCache> disk = impl_->Disk();
  std::optional<std::string> ptx = disk->Read(key, kPtxExt);
  request.disk_hit = ptx.has_value();
  if (!ptx) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Nvrtc> nvrtc, impl_->LoadNvrtc());
    // The translation unit's name comes from the key, never from the client.
    WARPD_ASSIGN_OR_RETURN(ptx, nvrtc->CompileToPtx(request.generated.source, "module_" + key.substr(0, 16) + ".cu",
                                                    request.cuda_arch));
    if (impl_->verify_cuda) WARPD_RETURN_IF_ERROR(VerifyPtx(*ptx, request.cuda_arch));
    if (!request.gate || request.gate(DiskCache::EntryBytes(ptx->size()))) (void)disk->Write(key, kPtxExt, *ptx);
  }
  WARPD_ASSIGN_OR_RETURN(std::vector<CompiledKernel> kernels,
                         Kernels(request, [](const std::string& name, bool adjoint, CompiledKernel& k) {
                           (adjoint ? k.cuda_adjoint : k.cuda_entry) =
                               adjoint ? codegen::AdjointCudaEntrySymbol(name) : codegen::CudaEntrySymbol(name);
                           return absl::OkStatus();
                         }));
  return std::shared_ptr<const CompiledModule>(std::make_shared<CudaImageModule>(
      key, *std::move(ptx), request.cuda_arch, std::move(kernels), request.module->types, request.generated.prints));
#else
  return absl::UnimplementedError("this warpd was built without the CUDA backend");
#endif
}

#if WARPD_CPU_JIT
absl::StatusOr<std::shared_ptr<const CompiledModule>> Compiler::Build(Request& request) {
  const ir::Module& module = *request.module;
  const std::string& key = request.key;
  const std::string& source = request.generated.source;
  const std::shared_ptr<const abi::PrintTable>& prints = request.generated.prints;
  // The translation unit's name (a file name inside the compilers) comes
  // from the key, never from the client's module name.
  const std::string unit_name = "module_" + key.substr(0, 16);
  const std::shared_ptr<DiskCache> disk = impl_->Disk();
  std::optional<std::string> object = disk->Read(key, kObjectExt);
  request.disk_hit = object.has_value();
  if (!object) {
#if WARPD_WITH_CUDA
    if (impl_->verify_cuda) {
      auto nvrtc = impl_->LoadNvrtc();
      if (!nvrtc.ok()) return nvrtc.status();
      auto ptx = (*nvrtc)->CompileToPtx(source, unit_name + ".cu", kVerifyArch);
      if (!ptx.ok()) return ptx.status();
      if (auto st = VerifyPtx(*ptx, kVerifyArch); !st.ok()) return st;
    }
#endif
    auto compiled = impl_->pool ? impl_->pool->Compile(impl_->jit->target(), source, unit_name, Describe(module))
                                : impl_->jit->CompileToObject(source, unit_name);
    if (!compiled.ok()) return compiled.status();
    object = *std::move(compiled);
    // A cache that cannot be written only costs time later. Past its
    // owner's budget the module is served from memory only.
    if (!request.gate || request.gate(DiskCache::EntryBytes(object->size()))) {
      (void)disk->Write(key, kObjectExt, *object);
    }
  }
  auto code = impl_->jit->Load(*object, key.substr(0, 16));
  if (!code.ok()) return code.status();
  JitModule& jit = **code;
  WARPD_ASSIGN_OR_RETURN(std::vector<CompiledKernel> kernels,
                         Kernels(request, [&jit](const std::string& name, bool adjoint, CompiledKernel& k) {
                           absl::StatusOr<void*> sym = jit.Lookup(adjoint ? codegen::AdjointCpuEntrySymbol(name)
                                                                          : codegen::CpuEntrySymbol(name));
                           if (!sym.ok()) return sym.status();
                           (adjoint ? k.cpu_adjoint : k.cpu_entry) = reinterpret_cast<CpuKernelFn>(*sym);
                           return absl::OkStatus();
                         }));
  return std::shared_ptr<const CompiledModule>(
      std::make_shared<CpuModule>(key, *std::move(code), object->size(), std::move(kernels), module.types, prints));
}
#else
absl::StatusOr<std::shared_ptr<const CompiledModule>> Compiler::Build(Request& request) {
  return absl::UnimplementedError("this warpd was built without the CPU JIT");  // CompileAsync refused it
}
#endif

const HostCpu& Compiler::host_cpu() const { return impl_->host; }
const CpuTarget& Compiler::cpu_target() const { return impl_->cpu_target; }
bool Compiler::has_cpu_jit() const { return WARPD_CPU_JIT != 0; }

std::string Compiler::cache_dir() const { return impl_->Disk()->dir(); }

absl::Status Compiler::SetCacheDir(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<DiskCache>> disk = DiskCache::Open(dir, impl_->disk_options);
  if (!disk.ok()) return disk.status();
  absl::MutexLock lock(&impl_->disk_mu);
  impl_->evictions_before += impl_->disk->stats().evictions;
  impl_->disk = *std::move(disk);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Compiler::ClearCache() {
  impl_->cache.ClearMemory();
  return impl_->Disk()->Clear();
}

DiskCache::Stats Compiler::cache_stats() const {
  absl::MutexLock lock(&impl_->disk_mu);
  DiskCache::Stats stats = impl_->disk->stats();
  stats.evictions += impl_->evictions_before;
  return stats;
}

}  // namespace warpd::compiler
