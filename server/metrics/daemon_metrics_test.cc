#include "server/metrics/daemon_metrics.h"

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace warpd::server::metrics {
namespace {

using Clock = DaemonMetrics::Clock;

struct FakeClock {
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
  std::function<Clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

TEST(DaemonMetricsTest, FreshDaemonExportsBuildInfoAndUptime) {
  FakeClock clock;
  DaemonMetrics metrics("0.1.0", clock.Fn());
  clock.now += std::chrono::milliseconds(1500);
  EXPECT_EQ(metrics.Render(),
            "# HELP warpd_build_info The daemon's version; always 1.\n"
            "# TYPE warpd_build_info gauge\n"
            "warpd_build_info{version=\"0.1.0\"} 1\n"
            "# HELP warpd_uptime_seconds Seconds since the daemon started.\n"
            "# TYPE warpd_uptime_seconds gauge\n"
            "warpd_uptime_seconds 1.5\n");
}

TEST(DaemonMetricsTest, RendersEveryFamily) {
  FakeClock clock;
  DaemonMetrics metrics("1.2.3", clock.Fn());
  clock.now += std::chrono::milliseconds(90500);
  metrics.SetTenantUsageSource([] {
    return std::vector<TenantUsage>{{"alice", 1048576, 4294967296, 2, 3, 1}, {"bob", 0, 0, 0, 0, 0}};
  });
  TenantMetrics alice = metrics.ForTenant("alice");
  alice.launches.Increment(10);
  alice.launch_faults.Increment(1);
  alice.launches_cancelled.Increment(2);
  alice.compiles_ok.Increment(4);
  alice.compiles_failed.Increment(1);
  alice.compile_seconds.Observe(0.5);
  alice.compile_seconds.Observe(3);
  alice.module_cache_hits.Increment(7);
  alice.module_cache_misses.Increment(5);
  alice.kernel_cache_unsaved.Increment(3);
  metrics.SetKernelCacheSource([] { return KernelCacheUsage{123456, 2147483648, 9}; });
  // The same cells again.
  EXPECT_EQ(&metrics.ForTenant("alice").launches, &alice.launches);
  metrics.Rpc("LoadModule", absl::StatusCode::kOk).Increment(5);
  metrics.Rpc("LoadModule", absl::StatusCode::kInvalidArgument).Increment();
  metrics.Rpc("Submit", absl::StatusCode::kOk).Increment(12);

  EXPECT_EQ(metrics.Render(),
            "# HELP warpd_arrays_live Arrays allocated and not yet freed.\n"
            "# TYPE warpd_arrays_live gauge\n"
            "warpd_arrays_live{tenant=\"alice\"} 3\n"
            "warpd_arrays_live{tenant=\"bob\"} 0\n"
            "# HELP warpd_build_info The daemon's version; always 1.\n"
            "# TYPE warpd_build_info gauge\n"
            "warpd_build_info{version=\"1.2.3\"} 1\n"
            "# HELP warpd_compile_duration_seconds Wall time of module compiles, ok or not.\n"
            "# TYPE warpd_compile_duration_seconds histogram\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"0.05\"} 0\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"0.1\"} 0\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"0.25\"} 0\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"0.5\"} 1\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"1\"} 1\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"2.5\"} 1\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"5\"} 2\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"10\"} 2\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"30\"} 2\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"60\"} 2\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"120\"} 2\n"
            "warpd_compile_duration_seconds_bucket{tenant=\"alice\",le=\"+Inf\"} 2\n"
            "warpd_compile_duration_seconds_sum{tenant=\"alice\"} 3.5\n"
            "warpd_compile_duration_seconds_count{tenant=\"alice\"} 2\n"
            "# HELP warpd_compiles_total Module compiles (module cache misses that ran the "
            "compiler) by result: ok or error.\n"
            "# TYPE warpd_compiles_total counter\n"
            "warpd_compiles_total{tenant=\"alice\",result=\"error\"} 1\n"
            "warpd_compiles_total{tenant=\"alice\",result=\"ok\"} 4\n"
            "# HELP warpd_kernel_cache_bytes Bytes of the entry files in the disk kernel cache.\n"
            "# TYPE warpd_kernel_cache_bytes gauge\n"
            "warpd_kernel_cache_bytes 123456\n"
            "# HELP warpd_kernel_cache_evictions_total Disk kernel cache entries deleted, least recently "
            "used first, to stay under the limit.\n"
            "# TYPE warpd_kernel_cache_evictions_total counter\n"
            "warpd_kernel_cache_evictions_total 9\n"
            "# HELP warpd_kernel_cache_limit_bytes The disk kernel cache's size limit (--cache-max; no "
            "sample: none).\n"
            "# TYPE warpd_kernel_cache_limit_bytes gauge\n"
            "warpd_kernel_cache_limit_bytes 2147483648\n"
            "# HELP warpd_kernel_cache_unsaved_total Modules the tenant compiled that were not saved to "
            "the disk kernel cache: its cache_bytes_per_hour budget was spent.\n"
            "# TYPE warpd_kernel_cache_unsaved_total counter\n"
            "warpd_kernel_cache_unsaved_total{tenant=\"alice\"} 3\n"
            "# HELP warpd_launch_faults_total Kernel launches that faulted (bad access, trap, "
            "timeout).\n"
            "# TYPE warpd_launch_faults_total counter\n"
            "warpd_launch_faults_total{tenant=\"alice\"} 1\n"
            "# HELP warpd_launches_cancelled_total Kernel launches cancelled before they "
            "finished.\n"
            "# TYPE warpd_launches_cancelled_total counter\n"
            "warpd_launches_cancelled_total{tenant=\"alice\"} 2\n"
            "# HELP warpd_launches_total Kernel launches run.\n"
            "# TYPE warpd_launches_total counter\n"
            "warpd_launches_total{tenant=\"alice\"} 10\n"
            "# HELP warpd_module_cache_hits_total LoadModule calls served from the module cache "
            "(memory or disk).\n"
            "# TYPE warpd_module_cache_hits_total counter\n"
            "warpd_module_cache_hits_total{tenant=\"alice\"} 7\n"
            "# HELP warpd_module_cache_misses_total LoadModule calls that needed a compile.\n"
            "# TYPE warpd_module_cache_misses_total counter\n"
            "warpd_module_cache_misses_total{tenant=\"alice\"} 5\n"
            "# HELP warpd_queued_commands Commands waiting in the tenant's streams (not counting running "
            "ones).\n"
            "# TYPE warpd_queued_commands gauge\n"
            "warpd_queued_commands{tenant=\"alice\"} 1\n"
            "warpd_queued_commands{tenant=\"bob\"} 0\n"
            "# HELP warpd_rpcs_total RPCs finished, by method and status code.\n"
            "# TYPE warpd_rpcs_total counter\n"
            "warpd_rpcs_total{method=\"LoadModule\",code=\"INVALID_ARGUMENT\"} 1\n"
            "warpd_rpcs_total{method=\"LoadModule\",code=\"OK\"} 5\n"
            "warpd_rpcs_total{method=\"Submit\",code=\"OK\"} 12\n"
            "# HELP warpd_sessions_open Sessions open.\n"
            "# TYPE warpd_sessions_open gauge\n"
            "warpd_sessions_open{tenant=\"alice\"} 2\n"
            "warpd_sessions_open{tenant=\"bob\"} 0\n"
            "# HELP warpd_tenant_memory_bytes Bytes of array memory the tenant holds.\n"
            "# TYPE warpd_tenant_memory_bytes gauge\n"
            "warpd_tenant_memory_bytes{tenant=\"alice\"} 1048576\n"
            "warpd_tenant_memory_bytes{tenant=\"bob\"} 0\n"
            "# HELP warpd_tenant_memory_limit_bytes The tenant's memory quota in bytes (no "
            "sample: unlimited).\n"
            "# TYPE warpd_tenant_memory_limit_bytes gauge\n"
            "warpd_tenant_memory_limit_bytes{tenant=\"alice\"} 4294967296\n"
            "# HELP warpd_uptime_seconds Seconds since the daemon started.\n"
            "# TYPE warpd_uptime_seconds gauge\n"
            "warpd_uptime_seconds 90.5\n");
}

TEST(DaemonMetricsTest, KernelCacheSourceCanBeRemovedAndAnUnlimitedCacheHasNoLimitSample) {
  FakeClock clock;
  DaemonMetrics metrics("1.2.3", clock.Fn());
  metrics.SetKernelCacheSource([] { return KernelCacheUsage{4096, 0, 0}; });
  std::string text = metrics.Render();
  EXPECT_TRUE(absl::StrContains(text, "warpd_kernel_cache_bytes 4096\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "warpd_kernel_cache_evictions_total 0\n")) << text;
  EXPECT_FALSE(absl::StrContains(text, "warpd_kernel_cache_limit_bytes")) << text;
  metrics.SetKernelCacheSource(nullptr);
  text = metrics.Render();
  EXPECT_FALSE(absl::StrContains(text, "warpd_kernel_cache")) << text;
}

TEST(DaemonMetricsTest, RemoveTenantDropsItsSeries) {
  FakeClock clock;
  DaemonMetrics metrics("1.2.3", clock.Fn());
  TenantMetrics alice = metrics.ForTenant("alice");
  TenantMetrics bob = metrics.ForTenant("bob");
  alice.launches.Increment();
  bob.launches.Increment(2);
  metrics.RemoveTenant("alice");
  alice.launches.Increment();  // still valid, no longer exported
  const std::string text = metrics.Render();
  EXPECT_FALSE(absl::StrContains(text, "alice")) << text;
  EXPECT_TRUE(absl::StrContains(text, "warpd_launches_total{tenant=\"bob\"} 2\n")) << text;
  EXPECT_TRUE(absl::StrContains(
      text, "warpd_compile_duration_seconds_count{tenant=\"bob\"} 0\n")) << text;
  // Back again: new cells from zero.
  EXPECT_EQ(metrics.ForTenant("alice").launches.Value(), 0u);
}

TEST(DaemonMetricsTest, UsageSourceCanBeReplacedAndRemoved) {
  FakeClock clock;
  DaemonMetrics metrics("1.2.3", clock.Fn());
  metrics.SetTenantUsageSource([] { return std::vector<TenantUsage>{{"a", 1, 2, 3, 4}}; });
  EXPECT_TRUE(absl::StrContains(metrics.Render(), "warpd_tenant_memory_bytes{tenant=\"a\"} 1\n"));
  // A tenant the source no longer lists is gone from the next scrape.
  metrics.SetTenantUsageSource([] { return std::vector<TenantUsage>{{"b", 3, 0, 1, 0}}; });
  std::string text = metrics.Render();
  EXPECT_FALSE(absl::StrContains(text, "tenant=\"a\"")) << text;
  EXPECT_TRUE(absl::StrContains(text, "warpd_tenant_memory_bytes{tenant=\"b\"} 3\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "warpd_sessions_open{tenant=\"b\"} 1\n")) << text;
  EXPECT_FALSE(absl::StrContains(text, "warpd_tenant_memory_limit_bytes")) << text;
  metrics.SetTenantUsageSource(nullptr);
  text = metrics.Render();
  EXPECT_FALSE(absl::StrContains(text, "tenant=")) << text;
}

// Prometheus naming: the warpd_ prefix, counters end in _total, units in
// the names that have them, and every family has help text.
TEST(DaemonMetricsTest, NamesFollowPrometheusConventions) {
  FakeClock clock;
  DaemonMetrics metrics("1.2.3", clock.Fn());
  metrics.SetTenantUsageSource([] { return std::vector<TenantUsage>{{"t", 1, 2, 3, 4}}; });
  metrics.SetKernelCacheSource([] { return KernelCacheUsage{1, 2, 3}; });
  metrics.ForTenant("t");
  metrics.Rpc("M", absl::StatusCode::kOk);
  std::set<std::string> helped;
  int families = 0;
  for (absl::string_view line : absl::StrSplit(metrics.Render(), '\n', absl::SkipEmpty())) {
    const std::vector<std::string> words = absl::StrSplit(line, ' ');
    if (words[0] == "#" && words[1] == "HELP") helped.insert(words[2]);
    if (words[0] != "#" || words[1] != "TYPE") continue;
    ++families;
    const std::string& name = words[2];
    EXPECT_TRUE(absl::StartsWith(name, "warpd_")) << name;
    EXPECT_TRUE(helped.count(name)) << name;
    EXPECT_EQ(words[3] == "counter", absl::EndsWith(name, "_total")) << name;
    if (absl::StrContains(name, "memory")) EXPECT_TRUE(absl::EndsWith(name, "_bytes")) << name;
    if (absl::StrContains(name, "duration") || absl::StrContains(name, "uptime")) {
      EXPECT_TRUE(absl::EndsWith(name, "_seconds")) << name;
    }
  }
  EXPECT_EQ(families, 19);
}

}  // namespace
}  // namespace warpd::server::metrics
