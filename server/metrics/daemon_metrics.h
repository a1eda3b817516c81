// warpd server: the daemon's metrics, one registry with every family.
//
// DaemonState holds one DaemonMetrics; the RPC layer, sessions, the stream
// executor and the compiler update its cells, and MetricsHttpServer serves
// Render(). Exported (all names warpd_..., see daemon_metrics.cc for help):
//
//   per tenant (label tenant)
//     warpd_tenant_memory_bytes               gauge      read at scrape time
//     warpd_tenant_memory_limit_bytes         gauge      read at scrape time
//     warpd_sessions_open                     gauge      read at scrape time
//     warpd_arrays_live                       gauge      read at scrape time
//     warpd_queued_commands                   gauge      read at scrape time
//     warpd_launches_total                    counter
//     warpd_launch_faults_total               counter
//     warpd_launches_cancelled_total          counter
//     warpd_compiles_total{tenant,result}     counter    result "ok" | "error"
//     warpd_compile_duration_seconds          histogram  every compile, ok or not
//     warpd_module_cache_hits_total           counter
//     warpd_module_cache_misses_total         counter
//     warpd_kernel_cache_unsaved_total        counter    compiled, not saved to disk
//                                                        (cache_bytes_per_hour spent)
//   per RPC
//     warpd_rpcs_total{method,code}           counter    code "OK", "NOT_FOUND", ...; unary
//                                                        RPCs, Upload and Download (not the
//                                                        session-long HoldSession stream)
//   kernel cache on disk (compiler/cache/disk_cache.h)
//     warpd_kernel_cache_bytes                gauge      read at scrape time
//     warpd_kernel_cache_limit_bytes          gauge      read at scrape time (no sample: no limit)
//     warpd_kernel_cache_evictions_total      counter    read at scrape time
//   process
//     warpd_uptime_seconds                    gauge      read at scrape time
//     warpd_build_info{version}               gauge      always 1
//
// What the tenants' accounts already count (memory, sessions, arrays, queued
// commands) is
// read when scraped from a usage source (SetTenantUsageSource), so nothing
// is counted twice and a tenant that is gone simply stops appearing. The
// rest are cells the daemon updates as things happen. Hot paths should not
// look cells up per event (that takes a lock): take a tenant's cells once
// with ForTenant() and keep the TenantMetrics beside the tenant; for RPCs,
// cache Rpc() per (method, code) or accept one short lock per call.
// Everything stays valid for the DaemonMetrics' lifetime, also after
// RemoveTenant.
//
// Thread-safe. The usage source runs on the scraping thread; whatever it
// reads must outlive the last Render() (stop the HTTP server first).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/registry.h"

namespace warpd::server::metrics {

// One tenant's use as its account reports it when scraped.
struct TenantUsage {
  std::string tenant;
  uint64_t memory_bytes = 0;
  uint64_t memory_limit_bytes = 0;  // 0: no limit (then no limit sample)
  uint64_t sessions = 0;
  uint64_t arrays = 0;
  uint64_t queued_commands = 0;
};

// The disk kernel cache as the compiler reports it when scraped.
struct KernelCacheUsage {
  uint64_t bytes = 0;
  uint64_t limit_bytes = 0;  // 0: no limit (then no limit sample)
  uint64_t evictions = 0;
};

// One tenant's cells, looked up once.
struct TenantMetrics {
  Counter& launches;
  Counter& launch_faults;
  Counter& launches_cancelled;
  Counter& compiles_ok;
  Counter& compiles_failed;
  Histogram& compile_seconds;
  Counter& module_cache_hits;
  Counter& module_cache_misses;
  Counter& kernel_cache_unsaved;
};

class DaemonMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  // `version`: the daemon's (kVersion). Uptime counts from construction;
  // `now` is for tests.
  explicit DaemonMetrics(std::string_view version,
                         std::function<Clock::time_point()> now = &Clock::now);
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // The tenant's cells (made at zero on first use). Takes locks: cache it.
  TenantMetrics ForTenant(std::string_view tenant);

  // The counter of RPC `method` ("LoadModule") ending with `code`. Takes a
  // lock.
  Counter& Rpc(std::string_view method, absl::StatusCode code);

  // Stops exporting the tenant's cells (a tenant dropped on config reload);
  // its usage series go when the usage source stops listing it. Cells
  // already taken stay valid but are no longer exported.
  void RemoveTenant(std::string_view tenant);

  // Where warpd_tenant_memory_bytes, _memory_limit_bytes, warpd_sessions_open,
  // warpd_arrays_live and warpd_queued_commands come from: called at each scrape, one entry per
  // tenant to export. Replaces the previous source; an empty function
  // removes it.
  void SetTenantUsageSource(std::function<std::vector<TenantUsage>()> source)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Where warpd_kernel_cache_* come from: called at each scrape. Replaces
  // the previous source; an empty function removes it (no samples).
  void SetKernelCacheSource(std::function<KernelCacheUsage()> source) ABSL_LOCKS_EXCLUDED(mu_);

  // The text exposition format (for MetricsHttpServer).
  std::string Render() const { return registry.Render(); }

  // Bounds of warpd_compile_duration_seconds, in seconds.
  static const std::vector<double>& CompileSecondsBounds();

  // Everything below is owned by `registry` (declared first).
  Registry registry;

  const CollectedFamily& tenant_memory_bytes;
  const CollectedFamily& tenant_memory_limit_bytes;
  const CollectedFamily& sessions_open;
  const CollectedFamily& arrays_live;
  const CollectedFamily& queued_commands;
  Family<Counter>& launches;
  Family<Counter>& launch_faults;
  Family<Counter>& launches_cancelled;
  Family<Counter>& compiles;  // labels tenant, result
  Family<Histogram>& compile_seconds;
  Family<Counter>& module_cache_hits;
  Family<Counter>& module_cache_misses;
  Family<Counter>& kernel_cache_unsaved;
  const CollectedFamily& kernel_cache_bytes;
  const CollectedFamily& kernel_cache_limit_bytes;
  const CollectedFamily& kernel_cache_evictions;
  Family<Counter>& rpcs;  // labels method, code
  const CollectedFamily& uptime_seconds;
  Family<Gauge>& build_info;  // label version

 private:
  void Collect(Emitter& emitter) const ABSL_LOCKS_EXCLUDED(mu_);

  const std::function<Clock::time_point()> now_;
  const Clock::time_point start_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const std::function<std::vector<TenantUsage>()>> usage_source_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::function<KernelCacheUsage()>> kernel_cache_source_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server::metrics
