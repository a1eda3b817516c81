#include "server/metrics/daemon_metrics.h"

#include <utility>

namespace warpd::server::metrics {
namespace {

constexpr char kOk[] = "ok";
constexpr char kError[] = "error";

}  // namespace

const std::vector<double>& DaemonMetrics::CompileSecondsBounds() {
  // From a cached-PCH compile of a small module (~50 ms) to the default
  // --compile-timeout (60 s) and past it.
  static const std::vector<double> bounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return bounds;
}

DaemonMetrics::DaemonMetrics(std::string_view version, std::function<Clock::time_point()> now)
    : tenant_memory_bytes(registry.AddCollectedGauge(
          "warpd_tenant_memory_bytes", "Bytes of array memory the tenant holds.", {"tenant"})),
      tenant_memory_limit_bytes(registry.AddCollectedGauge(
          "warpd_tenant_memory_limit_bytes",
          "The tenant's memory quota in bytes (no sample: unlimited).", {"tenant"})),
      sessions_open(
          registry.AddCollectedGauge("warpd_sessions_open", "Sessions open.", {"tenant"})),
      arrays_live(registry.AddCollectedGauge(
          "warpd_arrays_live", "Arrays allocated and not yet freed.", {"tenant"})),
      queued_commands(registry.AddCollectedGauge(
          "warpd_queued_commands", "Commands waiting in the tenant's streams (not counting running ones).",
          {"tenant"})),
      launches(registry.AddCounter("warpd_launches_total", "Kernel launches run.", {"tenant"})),
      launch_faults(registry.AddCounter(
          "warpd_launch_faults_total",
          "Kernel launches that faulted (bad access, trap, timeout).", {"tenant"})),
      launches_cancelled(registry.AddCounter("warpd_launches_cancelled_total",
                                             "Kernel launches cancelled before they finished.",
                                             {"tenant"})),
      compiles(registry.AddCounter("warpd_compiles_total",
                                   "Module compiles (module cache misses that ran the compiler) "
                                   "by result: ok or error.",
                                   {"tenant", "result"})),
      compile_seconds(registry.AddHistogram("warpd_compile_duration_seconds",
                                            "Wall time of module compiles, ok or not.",
                                            {"tenant"}, CompileSecondsBounds())),
      module_cache_hits(registry.AddCounter(
          "warpd_module_cache_hits_total",
          "LoadModule calls served from the module cache (memory or disk).", {"tenant"})),
      module_cache_misses(registry.AddCounter("warpd_module_cache_misses_total",
                                              "LoadModule calls that needed a compile.",
                                              {"tenant"})),
      kernel_cache_unsaved(registry.AddCounter(
          "warpd_kernel_cache_unsaved_total",
          "Modules the tenant compiled that were not saved to the disk kernel cache: its "
          "cache_bytes_per_hour budget was spent.",
          {"tenant"})),
      kernel_cache_bytes(registry.AddCollectedGauge("warpd_kernel_cache_bytes",
                                                    "Bytes of the entry files in the disk kernel cache.")),
      kernel_cache_limit_bytes(registry.AddCollectedGauge(
          "warpd_kernel_cache_limit_bytes", "The disk kernel cache's size limit (--cache-max; no sample: none).")),
      kernel_cache_evictions(registry.AddCollectedCounter(
          "warpd_kernel_cache_evictions_total",
          "Disk kernel cache entries deleted, least recently used first, to stay under the limit.")),
      rpcs(registry.AddCounter("warpd_rpcs_total", "RPCs finished, by method and status code.",
                               {"method", "code"})),
      uptime_seconds(
          registry.AddCollectedGauge("warpd_uptime_seconds", "Seconds since the daemon started.")),
      build_info(registry.AddGauge("warpd_build_info", "The daemon's version; always 1.",
                                   {"version"})),
      now_(std::move(now)),
      start_(now_()) {
  build_info.With({std::string(version)}).Set(1);
  registry.AddCollector([this](Emitter& emitter) { Collect(emitter); });
}

TenantMetrics DaemonMetrics::ForTenant(std::string_view tenant) {
  const LabelValues t{std::string(tenant)};
  return TenantMetrics{
      .launches = launches.With(t),
      .launch_faults = launch_faults.With(t),
      .launches_cancelled = launches_cancelled.With(t),
      .compiles_ok = compiles.With({t[0], kOk}),
      .compiles_failed = compiles.With({t[0], kError}),
      .compile_seconds = compile_seconds.With(t),
      .module_cache_hits = module_cache_hits.With(t),
      .module_cache_misses = module_cache_misses.With(t),
      .kernel_cache_unsaved = kernel_cache_unsaved.With(t),
  };
}

Counter& DaemonMetrics::Rpc(std::string_view method, absl::StatusCode code) {
  return rpcs.With({std::string(method), absl::StatusCodeToString(code)});
}

void DaemonMetrics::RemoveTenant(std::string_view tenant) {
  const LabelValues t{std::string(tenant)};
  launches.Remove(t);
  launch_faults.Remove(t);
  launches_cancelled.Remove(t);
  compiles.Remove({t[0], kOk});
  compiles.Remove({t[0], kError});
  compile_seconds.Remove(t);
  module_cache_hits.Remove(t);
  module_cache_misses.Remove(t);
  kernel_cache_unsaved.Remove(t);
}

void DaemonMetrics::SetKernelCacheSource(std::function<KernelCacheUsage()> source) {
  std::shared_ptr<const std::function<KernelCacheUsage()>> shared;
  if (source) shared = std::make_shared<const std::function<KernelCacheUsage()>>(std::move(source));
  absl::MutexLock lock(&mu_);
  kernel_cache_source_ = std::move(shared);
}

void DaemonMetrics::SetTenantUsageSource(std::function<std::vector<TenantUsage>()> source) {
  std::shared_ptr<const std::function<std::vector<TenantUsage>()>> shared;
  if (source) {
    shared = std::make_shared<const std::function<std::vector<TenantUsage>()>>(std::move(source));
  }
  absl::MutexLock lock(&mu_);
  usage_source_ = std::move(shared);
}

void DaemonMetrics::Collect(Emitter& emitter) const {
  emitter.Emit(uptime_seconds, {},
               std::chrono::duration<double>(now_() - start_).count());
  std::shared_ptr<const std::function<std::vector<TenantUsage>()>> source;
  std::shared_ptr<const std::function<KernelCacheUsage()>> kernel_cache;
  {
    absl::MutexLock lock(&mu_);
    source = usage_source_;
    kernel_cache = kernel_cache_source_;
  }
  if (kernel_cache != nullptr) {
    const KernelCacheUsage k = (*kernel_cache)();
    emitter.Emit(kernel_cache_bytes, {}, static_cast<double>(k.bytes));
    if (k.limit_bytes != 0) emitter.Emit(kernel_cache_limit_bytes, {}, static_cast<double>(k.limit_bytes));
    emitter.Emit(kernel_cache_evictions, {}, static_cast<double>(k.evictions));
  }
  if (source == nullptr) return;
  for (const TenantUsage& u : (*source)()) {
    const LabelValues t{u.tenant};
    emitter.Emit(tenant_memory_bytes, t, static_cast<double>(u.memory_bytes));
    if (u.memory_limit_bytes != 0) {
      emitter.Emit(tenant_memory_limit_bytes, t, static_cast<double>(u.memory_limit_bytes));
    }
    emitter.Emit(sessions_open, t, static_cast<double>(u.sessions));
    emitter.Emit(arrays_live, t, static_cast<double>(u.arrays));
    emitter.Emit(queued_commands, t, static_cast<double>(u.queued_commands));
  }
}

}  // namespace warpd::server::metrics
