#include "server/daemon_state.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string_view>
#include <thread>

#include <pwd.h>
#include <unistd.h>

#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda_device.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/self_test.h"
#include "server/tenant_array.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

int HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

// The memory this process may use: physical memory, or less when a cgroup
// (a container's memory limit, cgroup v2) says so.
uint64_t AvailableMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  uint64_t limit = 0;
  if (cgroup >> limit && limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;  // "max" does not parse
  return bytes;
}

// --max-memory, or half of the memory this process may use: a tenant asking
// for more gets RESOURCE_EXHAUSTED instead of getting the daemon OOM-killed.
uint64_t MemoryLimit(const Flags& flags) {
  if (flags.max_memory_bytes != 0) return flags.max_memory_bytes;
  return AvailableMemory() / 2;  // 0 (unlimited) only if the size is unknown
}

// `name` in the directory of the running executable.
std::string BesideThisBinary(const std::string& name) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return name;
  std::string self(buf, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + name;
}

std::string UserName(uid_t uid) {
  char buf[4096];
  passwd pw, *found = nullptr;
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) return found->pw_name;
  return "local";
}

}  // namespace

TenantLimits DaemonState::BuiltinTenantLimits(const Flags& flags) {
  TenantLimits limits;
  limits.memory_bytes = 0;  // the daemon's --max-memory bounds every tenant
  limits.arrays = uint64_t{1} << 20;
  limits.sessions = std::min<uint64_t>(256, flags.max_sessions);
  limits.queued_commands = uint64_t{1} << 20;
  limits.graph_commands = uint64_t{1} << 18;
  limits.compiles = static_cast<uint64_t>(std::max(1, flags.compile_workers));
  // A tenant may replace at most an eighth of the disk kernel cache per
  // hour, so entries others used in the last hours survive its compiles.
  // Without a tenants file the one user competes only with itself: no
  // budget (nor without a cache limit).
  limits.cache_bytes_per_hour = flags.tenants_file.empty() ? 0 : flags.cache_max_bytes / 8;
  return limits;
}

TenantRegistry::Options DaemonState::TenantOptions(const Flags& flags) {
  TenantRegistry::Options options;
  options.tenants_file = flags.tenants_file;
  options.default_limits = BuiltinTenantLimits(flags);
  options.owner_uid = static_cast<uint32_t>(geteuid());
  options.owner_name = UserName(geteuid());
  return options;
}

std::shared_ptr<runtime::MemoryAccount> DaemonState::GlobalMemory(const Flags& flags) {
  return runtime::MemoryAccount::Create("the daemon's CPU", MemoryLimit(flags));
}

absl::StatusOr<std::unique_ptr<DaemonState>> DaemonState::Create(const Flags& flags) {
  std::shared_ptr<runtime::MemoryAccount> memory = GlobalMemory(flags);
  absl::StatusOr<std::unique_ptr<TenantRegistry>> tenants = TenantRegistry::Create(TenantOptions(flags), memory);
  if (!tenants.ok()) return tenants.status();
  compiler::Compiler::Options options;
  options.cache_dir = flags.cache_dir;
  options.cache_max_bytes = flags.cache_max_bytes;
  options.verify_cuda = flags.verify_cuda;
  options.forced_cpu_target = flags.test_cpu_target;
  options.compile_worker = flags.compile_worker.empty() ? BesideThisBinary("warpd-compile-worker") : flags.compile_worker;
  options.compile_workers = flags.compile_workers;
  options.compile_timeout = flags.compile_timeout;
  options.compile_memory_bytes = flags.compile_memory_bytes;
  options.precompiled_header = flags.compile_pch;
  absl::StatusOr<std::unique_ptr<compiler::Compiler>> compiler =
      compiler::Compiler::Create(options);
  if (!compiler.ok()) return compiler.status();
  const compiler::CpuTarget& target = (*compiler)->cpu_target();
  const bool cpu_kernels = (*compiler)->has_cpu_jit();
  if (cpu_kernels) {
    spdlog::info("CPU kernels: compiling for {} on {}: {}", target.Summary(), target.triple, target.reason);
    spdlog::debug("CPU target: {}", target.Description());
  } else {
    spdlog::warn("CPU kernels: none: {}", target.reason);
  }
  auto state = std::make_unique<DaemonState>(flags, *std::move(compiler), *std::move(tenants), std::move(memory));
  state->LoadPersistent();
  if (!cpu_kernels) return state;  // nothing to self-test on the CPU
  // A daemon that cannot compile must not report healthy and fail every launch.
  absl::StatusOr<runtime::Device*> cpu = state->devices().Find("cpu");
  if (!cpu.ok()) return cpu.status();
  const auto t0 = std::chrono::steady_clock::now();
  runtime::SegmentPool self_test_memory(runtime::MemoryAccount::Create("self-test", 0, state->memory()),
                                        runtime::SegmentPoolOptions{flags.max_array_bytes});
  if (absl::Status s = RunSelfTest(*state->compiler(), **cpu, self_test_memory); !s.ok()) return s;
  spdlog::debug("self-test passed in {:.1f} ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return state;
}

DaemonState::DaemonState(const Flags& flags, std::unique_ptr<compiler::Compiler> compiler,
                         std::unique_ptr<TenantRegistry> tenants, std::shared_ptr<runtime::MemoryAccount> memory)
    : flags_(flags),
      metrics_(kVersion),
      memory_(memory ? std::move(memory) : GlobalMemory(flags)),
      tenants_(tenants ? std::move(tenants) : *TenantRegistry::Create(TenantOptions(flags), memory_)),
      compiler_(std::move(compiler)),
      // One turn per busy stream; kernels themselves run on the CPU device's
      // own pool, so this needs few threads. One group (tenant) holds at
      // most all but one, so another always finds a thread. Extra threads
      // start only for turns held 50 ms (long kernels): on a loaded machine
      // ordinary 1 ms turns often last several ms of wall time, and growing
      // for them would only add threads and undo the weights.
      stream_executor_(runtime::StreamScheduler::Options{.threads = std::max(4, HardwareThreads()),
                                                         .grow_after = absl::Milliseconds(50)}),
      sessions_(&stream_executor_, runtime::SegmentPoolOptions{flags.max_array_bytes}, flags.max_sessions,
                flags.session_grace),
      persistent_(flags.state_dir, PersistentStore::Limits{}, &devices_),
      // RPC work that may block briefly (allocation, a module's front half;
      // compiles wait on the compiler's compile threads).
      rpc_pool_(std::max(8, 2 * HardwareThreads()), "warpd-rpc") {
  spdlog::info("CPU array memory limit: {:.1f} GiB ({}; --max-memory)",
               static_cast<double>(memory_->limit()) / (1 << 30),
               flags.max_memory_bytes != 0 ? "set" : "half of the memory this daemon may use");
  metrics_.SetTenantUsageSource([this] {
    std::vector<metrics::TenantUsage> out;
    for (const auto& t : tenants_->All()) {
      if (t->removed()) continue;
      out.push_back({t->name(), t->memory()->used(), t->memory()->limit(), t->sessions().used(), t->arrays().used(),
                     t->queued_commands()->used()});
    }
    return out;
  });
  metrics_.SetKernelCacheSource([this] {
    if (compiler_ == nullptr) return metrics::KernelCacheUsage{};
    const compiler::DiskCache::Stats s = compiler_->cache_stats();
    return metrics::KernelCacheUsage{s.bytes, s.max_bytes, s.evictions};
  });
  devices_.Add(std::make_unique<runtime::CpuDevice>(flags.cpu_threads, flags.kernel_timeout));
  AddCudaDevices();
}

void DaemonState::AddCudaDevices() {
  const absl::StatusOr<const runtime::cuda::CudaDriver*>& driver = runtime::cuda::CudaDriver::Process();
  if (!driver.ok()) {
    spdlog::info("CUDA disabled: {}; serving the CPU device", std::string(driver.status().message()));
    return;
  }
  const runtime::cuda::CudaDriver& cuda = **driver;
  cuda_driver_ = cuda.version_text();
  if (cuda.devices().empty()) {
    spdlog::info("CUDA disabled: {}; serving the CPU device", cuda.no_devices_reason());
    return;
  }
  for (const runtime::cuda::CudaDeviceInfo& d : cuda.devices()) {
    const std::string what = fmt::format("cuda:{} is {} ({}, {} SMs, {:.1f} GiB, {}), driver for CUDA {}", d.ordinal,
                                         d.name, d.arch(), d.sm_count,
                                         static_cast<double>(d.memory_bytes) / (1 << 30), d.uuid, cuda.version_text());
    // The lean build (no CPU JIT) exists to run on GPUs: it needs no flag.
    if (flags_.cuda_execution || (compiler_ != nullptr && !compiler_->has_cpu_jit())) {
      absl::StatusOr<std::unique_ptr<runtime::CudaDevice>> opened =
          runtime::CudaDevice::Open(cuda, d, runtime::cuda::CudaMemory::Options{},
                                    runtime::CudaDevice::LaunchOptions{.time_limit = flags_.kernel_timeout});
      if (opened.ok()) {
        spdlog::warn("CUDA: {}; runs arrays and kernels (--cuda-execution: experimental)", what);
        devices_.Add(*std::move(opened));
        continue;
      }
      spdlog::error("CUDA: {}; cannot be opened: {}; listed only", what, std::string(opened.status().message()));
    } else {
      spdlog::info("CUDA: {}; listed but it runs no work (without --cuda-execution, experimental): arrays and "
                   "launches run on the CPU device",
                   what);
    }
    devices_.Add(std::make_unique<runtime::CudaDevice>(d));
  }
}

absl::Status DaemonState::ReloadTenants() {
  absl::MutexLock reload(&reload_mu_);
  const std::vector<std::shared_ptr<Tenant>> before = tenants_->All();
  WARPD_ASSIGN_OR_RETURN(TenantRegistry::ReloadResult reloaded, tenants_->Reload());
  sessions_.RefreshWeights();
  // Sessions live only while the token that opened them opens their tenant.
  absl::flat_hash_map<std::string, size_t> closed = sessions_.CloseRevoked(
      [this](const Tenant& tenant, std::string_view credential) { return tenants_->Accepts(tenant, credential); });
  for (const auto& t : reloaded.peer_token_replaced) {
    auto it = closed.find(t->name());
    const size_t n = it == closed.end() ? 0 : it->second;
    if (it != closed.end()) closed.erase(it);
    spdlog::info("{}: a uid was removed, so its login token was replaced (the old one is refused from now on); "
                 "{} session(s) closed whose token is no longer accepted", t->label(), n);
  }
  for (const auto& [name, n] : closed) {
    spdlog::info("tenant '{}': {} session(s) closed: the token that opened them is no longer accepted", name, n);
  }
  for (const auto& t : before) {
    if (t->removed()) metrics_.RemoveTenant(t->name());
  }
  return absl::OkStatus();
}

void DaemonState::LoadPersistent() {
  absl::Status s = persistent_.LoadAll([this](const std::string& tenant_name, const runtime::ArrayLayout& layout,
                                               const std::string& device_name)
                                           -> absl::StatusOr<std::shared_ptr<const runtime::Array>> {
    std::shared_ptr<Tenant> tenant = tenants_->Find(tenant_name);
    if (tenant == nullptr) return absl::NotFoundError(absl::StrCat("no tenant '", tenant_name, "' any more"));
    WARPD_ASSIGN_OR_RETURN(runtime::Device * device, devices_.FindUsable(device_name));
    // A pool of its own (blocks outlive their pool), charged to the tenant.
    runtime::SegmentPool pool(runtime::MemoryAccount::Create("persistent", 0, tenant->memory()),
                              runtime::SegmentPoolOptions{flags_.max_array_bytes});
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Buffer> buffer,
                           device->Allocate(layout.size_bytes, "persistent", &pool));
    return MakeTenantArray(tenant, pool, device->name(), layout, std::move(buffer));
  });
  if (!s.ok()) spdlog::warn("persistent arrays in {} not loaded: {}", flags_.state_dir, std::string(s.message()));
}

}  // namespace warpd::server
