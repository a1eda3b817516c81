// warpd compiler: the facade the server uses to turn a module into code.
//
//   ir::Module (from compiler/ir/from_proto.h) -> validate -> sema -> codegen
//   -> module cache (memory, disk) -> clang in a compile worker process
//   (backend/compile_pool.h) -> ORC LLJIT in the daemon
//
// A CompiledModule (common/abi/compiled_module.h) is immutable and shared:
// launches hold a shared_ptr while they run, so a module stays loaded until
// its last user drops it. Every CompiledModule must be released before the
// Compiler that made it.
// Thread-safe: Compile() and CompileAsync() may be called from any number of
// threads; identical concurrent compiles are done once (the module cache's
// single flight: one compile, whatever the number of requests).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/backend/cpu_target.h"
#include "compiler/cache/disk_cache.h"
#include "common/abi/compiled_module.h"
#include "compiler/codegen/layout.h"
#include "common/types/type.h"
#include "compiler/ir/ir.h"

namespace warpd::compiler {

using abi::CompiledKernel;
using abi::CompiledModule;
using abi::CpuKernelFn;

using abi::Target;  // what a module is compiled for: one per device kind

struct CompileResult {
  std::shared_ptr<const CompiledModule> module;
  bool cache_hit = false;     // memory or disk
  double compile_ms = 0.0;    // wall time of this call's compile work
  // Kernels and functions that failed sema, left out of `module` (the
  // others compiled); the request's own, also on a cache hit.
  std::vector<ir::FunctionFailure> failures;
};

// Receives a compile's result; runs once (see Compiler::CompileAsync).
using CompileCallback = absl::AnyInvocable<void(absl::StatusOr<CompileResult> result) &&>;

// Decides whether a module this request compiled is saved to the disk cache:
// called (on a compile thread, at most once per request) with the bytes the
// entry takes on disk; true charges them to whoever asked and saves it,
// false leaves it in memory only. Empty: always saved.
using CacheWriteGate = absl::AnyInvocable<bool(uint64_t bytes)>;

}  // namespace warpd::compiler

namespace warpd::compiler {

class Compiler {
 public:
  struct Options {
    std::string cache_dir;  // empty: no disk cache
    // The disk cache's size limit (least recently used entries go; see
    // compiler/cache/disk_cache.h). 0: no limit.
    uint64_t cache_max_bytes = 0;
    // Also generate each module's CUDA source, compile it with NVRTC for
    // sm_90 and check the PTX with ptxas; a failure fails the compile
    // (INTERNAL). For test suites: keeps the CUDA path from drifting.
    bool verify_cuda = false;
    // The compile worker binary (warpd-compile-worker). Empty: clang runs in
    // this process (unit tests and tools; the daemon always uses workers).
    std::string compile_worker;
    // Compile worker processes, and the threads that wait on them (the
    // same number, also when clang runs in this process).
    int compile_workers = 2;
    absl::Duration compile_timeout = absl::Seconds(60);
    uint64_t compile_memory_bytes = uint64_t{4} << 30;
    // Load warpd/native/builtin.h precompiled (backend/native_pch.h): the
    // same objects, faster. False parses it in every compile.
    bool precompiled_header = true;
    // Test hook (WARPD_TEST_CPU_TARGET): compile for this target, unchecked
    // ("cpu" or "cpu:+f1,-f2"), instead of the one chosen for the host.
    std::string forced_cpu_target;
  };

  static absl::StatusOr<std::unique_ptr<Compiler>> Create(const Options& options);
  ~Compiler();

  // Validates, type-checks, generates code and compiles `module` for
  // `target`, or returns it from the cache. User errors: INVALID_ARGUMENT
  // whose message lists diagnostics as "file:line:col: error: ...", when
  // no kernel of the module passes sema (then `module.failures` lists each
  // failure, with its parts: ir/diagnostic.h); kernels that fail while
  // others pass are left out and listed in CompileResult::failures.
  // Thread-safe. Sema annotates `module` in place. kCuda compiles PTX with
  // NVRTC for compute_<a>, the newest architecture NVRTC has that is at most
  // `cuda_arch` (the device's compute capability, 90 for sm_90):
  // FAILED_PRECONDITION when NVRTC cannot be loaded or has none; UNIMPLEMENTED
  // in a build without the CUDA backend. The module's image is that PTX.
  // Blocks the calling thread until the result is ready (so never call it
  // from a CompileCallback: that runs on a compile thread).
  absl::StatusOr<CompileResult> Compile(ir::Module& module, Target target, int cuda_arch = 0);

  // Compile without waiting. Sema, lowering and codegen (and user errors)
  // happen on the calling thread; what may wait (a compile worker, clang,
  // the JIT, or another request's compile of the same module) happens on
  // the compiler's compile threads, so the caller's thread is never held.
  // `done` runs exactly once: before CompileAsync returns for errors found
  // before compiling and for memory-cache hits, else on a compile thread
  // when the compile this request needs (its own, or an identical one
  // already in flight) has ended. `done` must not block: compile threads are
  // few. The compiler keeps `module` until then. `gate` decides whether
  // what this request compiles is saved to the disk cache (a tenant's
  // budget); a module served from memory or disk never asks it.
  void CompileAsync(std::shared_ptr<ir::Module> module, Target target, CompileCallback done,
                    CacheWriteGate gate = {}, int cuda_arch = 0);

  // The front and middle of the pipeline, for Compile, tests and tools:
  // sema (annotating `module` in place), lowering to TIR, codegen. The C++
  // holds both the CPU and the CUDA entry points; the print table holds the
  // client text the source leaves out (part of the cache key).
  struct Generated {
    std::string source;
    // Backward modules: kernels left without an adjoint, and why.
    std::map<std::string, std::string> adjoint_failed;
    // Per kernel: how it uses each array parameter (tir/array_access.h).
    std::map<std::string, std::vector<uint8_t>> param_access;
    std::shared_ptr<const abi::PrintTable> prints;
  };
  static absl::StatusOr<Generated> Generate(ir::Module& module);

  // The host as LLVM sees it, and what CPU code is compiled for.
  const HostCpu& host_cpu() const;
  const CpuTarget& cpu_target() const;
  // False in the lean CUDA-only build (WARPD_CPU_JIT=OFF): CPU compiles fail
  // with UNIMPLEMENTED.
  bool has_cpu_jit() const;

  std::string cache_dir() const;
  // Later compiles read and write the disk cache under `dir` (created and
  // scanned; bounded by Options::cache_max_bytes like the first).
  absl::Status SetCacheDir(const std::string& dir);
  // Drops the memory cache entries no one holds and deletes the disk cache
  // files; returns how many disk entries were removed.
  absl::StatusOr<uint64_t> ClearCache();
  // The disk cache's size and limit; evictions count those of every
  // directory this compiler used.
  DiskCache::Stats cache_stats() const;

 private:
  struct Impl;
  explicit Compiler(std::unique_ptr<Impl> impl);
  struct Request;
  // The cache miss path: disk cache, compile, JIT. Blocks; on a compile thread.
  absl::StatusOr<std::shared_ptr<const CompiledModule>> Build(Request& request);
  // The same for CUDA: disk cache, NVRTC (and ptxas with verify_cuda).
  absl::StatusOr<std::shared_ptr<const CompiledModule>> BuildCuda(Request& request);
  // The request's kernels: layouts, array access, adjoint errors, prints;
  // `entries` fills a kernel's forward (adjoint false) or adjoint entry.
  using EntryResolver = absl::FunctionRef<absl::Status(const std::string& name, bool adjoint, CompiledKernel& k)>;
  static absl::StatusOr<std::vector<CompiledKernel>> Kernels(const Request& request, const EntryResolver& entries);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warpd::compiler
