#include "server/metrics/registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace warpd::server::metrics {
namespace {

TEST(RegistryTest, EmptyRegistryRendersNothing) {
  Registry registry;
  EXPECT_EQ(registry.Render(), "");
}

TEST(RegistryTest, CounterWithoutLabels) {
  Registry registry;
  Counter& c = registry.AddCounter("warpd_things_total", "Things done.").Get();
  EXPECT_EQ(registry.Render(),
            "# HELP warpd_things_total Things done.\n"
            "# TYPE warpd_things_total counter\n"
            "warpd_things_total 0\n");
  c.Increment();
  c.Increment(41);
  EXPECT_EQ(c.Value(), 42u);
  EXPECT_EQ(registry.Render(),
            "# HELP warpd_things_total Things done.\n"
            "# TYPE warpd_things_total counter\n"
            "warpd_things_total 42\n");
}

TEST(RegistryTest, CounterRendersLargeIntegersExactly) {
  Registry registry;
  registry.AddCounter("big_total", "h").Get().Increment(18446744073709551615u);
  EXPECT_EQ(registry.Render(),
            "# HELP big_total h\n# TYPE big_total counter\nbig_total 18446744073709551615\n");
}

TEST(RegistryTest, LabelledCounterChildrenInOrderOfValues) {
  Registry registry;
  Family<Counter>& rpcs = registry.AddCounter("warpd_rpcs_total", "RPCs.", {"method", "code"});
  // A labelled family with no child yet is left out entirely.
  EXPECT_EQ(registry.Render(), "");
  rpcs.With({"Launch", "OK"}).Increment(3);
  rpcs.With({"Alloc", "OK"}).Increment();
  rpcs.With({"Launch", "NOT_FOUND"}).Increment(2);
  EXPECT_EQ(rpcs.size(), 3u);
  EXPECT_EQ(registry.Render(),
            "# HELP warpd_rpcs_total RPCs.\n"
            "# TYPE warpd_rpcs_total counter\n"
            "warpd_rpcs_total{method=\"Alloc\",code=\"OK\"} 1\n"
            "warpd_rpcs_total{method=\"Launch\",code=\"NOT_FOUND\"} 2\n"
            "warpd_rpcs_total{method=\"Launch\",code=\"OK\"} 3\n");
}

TEST(RegistryTest, WithReturnsTheSameCellForTheSameValues) {
  Registry registry;
  Family<Gauge>& f = registry.AddGauge("g", "h", {"tenant"});
  Gauge* a = &f.With({"alice"});
  EXPECT_EQ(&f.With({"bob"}) == a, false);
  EXPECT_EQ(&f.With({"alice"}), a);
  EXPECT_EQ(f.size(), 2u);
}

TEST(RegistryTest, DoubleCounterIgnoresNegativeAndNaN) {
  Registry registry;
  DoubleCounter& c = registry.AddDoubleCounter("work_seconds_total", "Work.").Get();
  c.Increment(0.25);
  c.Increment(-1);
  c.Increment(std::nan(""));
  c.Increment(1);
  EXPECT_EQ(c.Value(), 1.25);
  EXPECT_EQ(registry.Render(),
            "# HELP work_seconds_total Work.\n"
            "# TYPE work_seconds_total counter\n"
            "work_seconds_total 1.25\n");
}

TEST(RegistryTest, Gauges) {
  Registry registry;
  Gauge& queued = registry.AddGauge("queued", "Queued.").Get();
  queued.Add(5);
  queued.Add(-7);
  Family<DoubleGauge>& temps = registry.AddDoubleGauge("temp", "T.", {"k"});
  temps.With({"a"}).Set(0.1);
  temps.With({"b"}).Set(1e21);
  temps.With({"c"}).Set(std::numeric_limits<double>::infinity());
  temps.With({"d"}).Set(-std::numeric_limits<double>::infinity());
  temps.With({"e"}).Set(std::nan(""));
  temps.With({"f"}).Set(100);
  temps.With({"g"}).Add(-2.5);
  temps.With({"h"}).Set(400000);
  temps.With({"i"}).Set(0.0001);
  temps.With({"j"}).Set(0.00001);
  temps.With({"k"}).Set(1e20);
  temps.With({"l"}).Set(-1.5e-300);
  temps.With({"m"}).Set(123456789.125);
  EXPECT_EQ(registry.Render(),
            "# HELP queued Queued.\n"
            "# TYPE queued gauge\n"
            "queued -2\n"
            "# HELP temp T.\n"
            "# TYPE temp gauge\n"
            "temp{k=\"a\"} 0.1\n"
            "temp{k=\"b\"} 1e+21\n"
            "temp{k=\"c\"} +Inf\n"
            "temp{k=\"d\"} -Inf\n"
            "temp{k=\"e\"} NaN\n"
            "temp{k=\"f\"} 100\n"
            "temp{k=\"g\"} -2.5\n"
            "temp{k=\"h\"} 400000\n"
            "temp{k=\"i\"} 0.0001\n"
            "temp{k=\"j\"} 1e-05\n"
            "temp{k=\"k\"} 100000000000000000000\n"
            "temp{k=\"l\"} -1.5e-300\n"
            "temp{k=\"m\"} 123456789.125\n");
}

TEST(RegistryTest, HistogramWithoutLabels) {
  Registry registry;
  Histogram& h = registry.AddHistogram("lat_seconds", "Latency.", {}, {0.25, 1, 10}).Get();
  h.Observe(0.125);
  h.Observe(0.25);  // le is inclusive
  h.Observe(0.5);
  h.Observe(20);
  EXPECT_EQ(registry.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.25\"} 2\n"
            "lat_seconds_bucket{le=\"1\"} 3\n"
            "lat_seconds_bucket{le=\"10\"} 3\n"
            "lat_seconds_bucket{le=\"+Inf\"} 4\n"
            "lat_seconds_sum 20.875\n"
            "lat_seconds_count 4\n");
}

TEST(RegistryTest, HistogramWithLabelsAndTrailingInfinity) {
  Registry registry;
  Family<Histogram>& f = registry.AddHistogram(
      "compile_seconds", "Compiles.", {"tenant"},
      {0.5, 2, std::numeric_limits<double>::infinity()});
  f.With({"bob"}).Observe(1);
  f.With({"alice"}).Observe(std::nan(""));  // only in +Inf; the sum becomes NaN
  EXPECT_EQ(registry.Render(),
            "# HELP compile_seconds Compiles.\n"
            "# TYPE compile_seconds histogram\n"
            "compile_seconds_bucket{tenant=\"alice\",le=\"0.5\"} 0\n"
            "compile_seconds_bucket{tenant=\"alice\",le=\"2\"} 0\n"
            "compile_seconds_bucket{tenant=\"alice\",le=\"+Inf\"} 1\n"
            "compile_seconds_sum{tenant=\"alice\"} NaN\n"
            "compile_seconds_count{tenant=\"alice\"} 1\n"
            "compile_seconds_bucket{tenant=\"bob\",le=\"0.5\"} 0\n"
            "compile_seconds_bucket{tenant=\"bob\",le=\"2\"} 1\n"
            "compile_seconds_bucket{tenant=\"bob\",le=\"+Inf\"} 1\n"
            "compile_seconds_sum{tenant=\"bob\"} 1\n"
            "compile_seconds_count{tenant=\"bob\"} 1\n");
}

TEST(RegistryTest, HistogramWithNoBoundsHasOnlyInf) {
  Registry registry;
  registry.AddHistogram("h", "", {}, {}).Get().Observe(3);
  // No HELP line for empty help.
  EXPECT_EQ(registry.Render(),
            "# TYPE h histogram\n"
            "h_bucket{le=\"+Inf\"} 1\n"
            "h_sum 3\n"
            "h_count 1\n");
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  Family<Gauge>& f =
      registry.AddGauge("m", "Line one\nback\\slash \"quoted\" stays.", {"tenant"});
  f.With({"a\\b"}).Set(1);
  f.With({"say \"hi\""}).Set(2);
  f.With({"two\nlines"}).Set(3);
  EXPECT_EQ(registry.Render(),
            "# HELP m Line one\\nback\\\\slash \"quoted\" stays.\n"
            "# TYPE m gauge\n"
            "m{tenant=\"a\\\\b\"} 1\n"
            "m{tenant=\"say \\\"hi\\\"\"} 2\n"
            "m{tenant=\"two\\nlines\"} 3\n");
}

TEST(RegistryTest, InvalidUtf8LabelValuesAreReplaced) {
  Registry registry;
  Family<Gauge>& f = registry.AddGauge("m", "h", {"tenant"});
  Gauge& g = f.With({"bad\xff"});
  g.Set(1);
  // The same bytes find the same child.
  EXPECT_EQ(&f.With({"bad\xff"}), &g);
  EXPECT_EQ(registry.Render(), "# HELP m h\n# TYPE m gauge\nm{tenant=\"bad\xEF\xBF\xBD\"} 1\n");
  EXPECT_TRUE(f.Remove({"bad\xff"}));
  EXPECT_EQ(registry.Render(), "");
}

TEST(RegistryTest, FamiliesRenderInOrderOfName) {
  Registry registry;
  registry.AddGauge("b", "B").Get().Set(2);
  registry.AddCounter("a_total", "A").Get().Increment();
  registry.AddGauge("c", "C").Get().Set(3);
  EXPECT_EQ(registry.Render(),
            "# HELP a_total A\n# TYPE a_total counter\na_total 1\n"
            "# HELP b B\n# TYPE b gauge\nb 2\n"
            "# HELP c C\n# TYPE c gauge\nc 3\n");
}

TEST(RegistryTest, RemoveStopsExportingButKeepsTheReferenceValid) {
  Registry registry;
  Family<Counter>& f = registry.AddCounter("launches_total", "L.", {"tenant"});
  Counter& alice = f.With({"alice"});
  f.With({"bob"}).Increment(2);
  alice.Increment(5);
  EXPECT_TRUE(f.Remove({"alice"}));
  EXPECT_FALSE(f.Remove({"alice"}));
  EXPECT_FALSE(f.Remove({"nobody"}));
  alice.Increment();  // still a valid cell, no longer exported
  EXPECT_EQ(alice.Value(), 6u);
  EXPECT_EQ(registry.Render(),
            "# HELP launches_total L.\n# TYPE launches_total counter\n"
            "launches_total{tenant=\"bob\"} 2\n");
  // Coming back starts afresh.
  Counter& again = f.With({"alice"});
  EXPECT_NE(&again, &alice);
  EXPECT_EQ(again.Value(), 0u);
  EXPECT_EQ(registry.Render(),
            "# HELP launches_total L.\n# TYPE launches_total counter\n"
            "launches_total{tenant=\"alice\"} 0\n"
            "launches_total{tenant=\"bob\"} 2\n");
}

TEST(RegistryTest, RemoveOnAFamilyWithoutLabelsDoesNothing) {
  Registry registry;
  Family<Counter>& f = registry.AddCounter("x_total", "X.");
  EXPECT_FALSE(f.Remove({}));
  EXPECT_EQ(registry.Render(), "# HELP x_total X.\n# TYPE x_total counter\nx_total 0\n");
}

TEST(RegistryTest, CollectorsEmitFreshSamplesAtEachScrape) {
  Registry registry;
  const CollectedFamily& in_use =
      registry.AddCollectedGauge("tenant_memory_bytes", "In use.", {"tenant"});
  const CollectedFamily& started = registry.AddCollectedCounter("started_total", "Started.");
  registry.AddCounter("zz_total", "After.").Get().Increment();
  std::vector<std::pair<std::string, double>> tenants = {{"bob", 2048}, {"alice", 1024}};
  registry.AddCollector([&](Emitter& e) {
    for (const auto& [name, bytes] : tenants) e.Emit(in_use, {name}, bytes);
    e.Emit(started, {}, 1);
    e.Emit(started, {}, 7);  // the last value of the same labels wins
  });
  EXPECT_EQ(registry.Render(),
            "# HELP started_total Started.\n# TYPE started_total counter\nstarted_total 7\n"
            "# HELP tenant_memory_bytes In use.\n# TYPE tenant_memory_bytes gauge\n"
            "tenant_memory_bytes{tenant=\"alice\"} 1024\n"
            "tenant_memory_bytes{tenant=\"bob\"} 2048\n"
            "# HELP zz_total After.\n# TYPE zz_total counter\nzz_total 1\n");
  tenants = {{"carol\"", 1.5}};
  EXPECT_EQ(registry.Render(),
            "# HELP started_total Started.\n# TYPE started_total counter\nstarted_total 7\n"
            "# HELP tenant_memory_bytes In use.\n# TYPE tenant_memory_bytes gauge\n"
            "tenant_memory_bytes{tenant=\"carol\\\"\"} 1.5\n"
            "# HELP zz_total After.\n# TYPE zz_total counter\nzz_total 1\n");
  tenants.clear();
  // A collected family with no sample is left out.
  EXPECT_EQ(registry.Render(),
            "# HELP started_total Started.\n# TYPE started_total counter\nstarted_total 7\n"
            "# HELP zz_total After.\n# TYPE zz_total counter\nzz_total 1\n");
}

TEST(RegistryTest, CollectorMayLookUpChildren) {
  Registry registry;
  Family<Gauge>& f = registry.AddGauge("g", "G.", {"k"});
  registry.AddCollector([&](Emitter&) { f.With({"seen"}).Add(1); });
  EXPECT_EQ(registry.Render(), "# HELP g G.\n# TYPE g gauge\ng{k=\"seen\"} 1\n");
  EXPECT_EQ(registry.Render(), "# HELP g G.\n# TYPE g gauge\ng{k=\"seen\"} 2\n");
}

TEST(RegistryTest, ConcurrentUpdatesSumCorrectly) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("c_total", "C.", {"tenant"});
  Family<DoubleCounter>& seconds = registry.AddDoubleCounter("s_total", "S.", {"tenant"});
  Family<Gauge>& gauges = registry.AddGauge("g", "G.", {"tenant"});
  Family<Histogram>& hist = registry.AddHistogram("h", "H.", {"tenant"}, {1, 2});
  constexpr int kThreads = 8;
  constexpr int kIterations = 100000;
  std::vector<std::thread> threads;
  std::atomic<bool> done{false};
  // A scraper racing with the writers must see consistent, parseable text.
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string text = registry.Render();
      EXPECT_TRUE(text.empty() || text.back() == '\n');
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread looks the children up itself, racing on creation.
      Counter& c = counters.With({"shared"});
      DoubleCounter& s = seconds.With({"shared"});
      Gauge& g = gauges.With({"shared"});
      Histogram& h = hist.With({"shared"});
      Counter& own = counters.With({"t" + std::to_string(t)});
      for (int i = 0; i < kIterations; ++i) {
        c.Increment();
        own.Increment();
        s.Increment(0.5);
        g.Add(i % 2 == 0 ? 3 : -1);
        h.Observe(i % 3);  // 0, 1, 2: buckets le=1 gets two thirds
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  scraper.join();
  EXPECT_EQ(counters.With({"shared"}).Value(), uint64_t{kThreads} * kIterations);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(counters.With({"t" + std::to_string(t)}).Value(), uint64_t{kIterations});
  }
  EXPECT_EQ(seconds.With({"shared"}).Value(), 0.5 * kThreads * kIterations);
  EXPECT_EQ(gauges.With({"shared"}).Value(), int64_t{kThreads} * kIterations);
  // Per thread: kIterations values i % 3, so twos in every third.
  uint64_t twos = 0;
  double sum = 0;
  for (int i = 0; i < kIterations; ++i) {
    twos += i % 3 == 2;
    sum += i % 3;
  }
  EXPECT_EQ(hist.With({"shared"}).BucketCounts(),
            (std::vector<uint64_t>{kThreads * (kIterations - twos), kThreads * twos, 0}));
  EXPECT_EQ(hist.With({"shared"}).Sum(), kThreads * sum);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("c_total{tenant=\"shared\"} 800000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_count{tenant=\"shared\"} 800000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("s_total{tenant=\"shared\"} 400000\n"), std::string::npos) << text;
}

struct NameCase {
  const char* name;
  bool metric_ok;
  bool label_ok;
};

TEST(RegistryTest, NameValidation) {
  const NameCase cases[] = {
      {"warpd_up", true, true},     {"_x", true, true},          {"a:b", true, false},
      {":a", true, false},          {"a1", true, true},          {"1a", false, false},
      {"", false, false},           {"a-b", false, false},       {"a b", false, false},
      {"__name__", true, false},    {"_", true, true},           {"é", false, false},
      {"le", true, true},           {"A_Z_09", true, true},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(IsValidMetricName(c.name), c.metric_ok) << c.name;
    EXPECT_EQ(IsValidLabelName(c.name), c.label_ok) << c.name;
  }
}

TEST(RegistryTest, SanitizeUtf8) {
  const std::pair<std::string, std::string> cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"caf\xC3\xA9", "caf\xC3\xA9"},                  // é
      {"\xE2\x82\xAC", "\xE2\x82\xAC"},                // €
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},        // U+1F600
      {"\xff", "\xEF\xBF\xBD"},                        // never valid
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},        // overlong '/'
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // surrogate U+D800
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // > U+10FFFF
      {"ab\xE2\x82", "ab\xEF\xBF\xBD\xEF\xBF\xBD"},    // truncated
      {std::string("a\0b", 3), std::string("a\0b", 3)},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(SanitizeUtf8(in), want) << in;
}

TEST(RegistryTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.01, 2, 4), (std::vector<double>{0.01, 0.02, 0.04, 0.08}));
  EXPECT_EQ(ExponentialBuckets(1, 10, 1), (std::vector<double>{1}));
}

#ifndef NDEBUG
// Programming errors abort loudly (the project's builds keep assertions).
TEST(RegistryDeathTest, ProgrammingErrorsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto duplicate = [] {
    Registry r;
    r.AddGauge("dup", "h");
    r.AddCounter("dup", "h");
  };
  const auto histogram_then_clash = [] {
    Registry r;
    r.AddHistogram("lat", "h", {}, {1});
    r.AddGauge("lat_count", "h");
  };
  const auto clash_then_histogram = [] {
    Registry r;
    r.AddGauge("lat_sum", "h");
    r.AddHistogram("lat", "h", {}, {1});
  };
  const auto other_registry = [] {
    Registry a, b;
    const CollectedFamily& f = a.AddCollectedGauge("g", "h");
    b.AddCollector([&](Emitter& e) { e.Emit(f, {}, 1); });
    b.Render();
  };
  EXPECT_DEATH(Registry().AddCounter("bad-name", "h"), "invalid metric name 'bad-name'");
  EXPECT_DEATH(Registry().AddCounter("ok_total", "h", {"__x"}), "invalid label name '__x'");
  EXPECT_DEATH(Registry().AddCounter("ok_total", "h", {"a", "a"}), "label 'a' given twice");
  EXPECT_DEATH(duplicate(), "metric dup is registered twice");
  EXPECT_DEATH(histogram_then_clash(), "'lat_count' is already used by metric lat");
  EXPECT_DEATH(clash_then_histogram(), "'lat_sum' is already used by metric lat_sum");
  EXPECT_DEATH(Registry().AddHistogram("h", "h", {"le"}, {1}), "'le' is reserved");
  EXPECT_DEATH(Registry().AddHistogram("h", "h", {}, {2, 1}), "strictly increasing");
  EXPECT_DEATH(Registry().AddCounter("c_total", "h", {"a"}).With({"x", "y"}),
               "has 1 label\\(s\\), given 2 value\\(s\\)");
  EXPECT_DEATH(Registry().AddCounter("c_total", "h", {"a"}).Get(),
               "has 1 label\\(s\\), given 0 value\\(s\\)");
  EXPECT_DEATH(other_registry(), "of another registry");
  EXPECT_DEATH(ExponentialBuckets(0, 2, 3), "need start > 0");
}
#endif

}  // namespace
}  // namespace warpd::server::metrics
