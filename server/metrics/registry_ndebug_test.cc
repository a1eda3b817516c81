// Built with NDEBUG (and its own copy of registry.cc): programming errors in
// declaring or using metrics are logged and left out of the output, and the
// caller still gets a cell it can update.
#include <cmath>

#include "gtest/gtest.h"
#include "server/metrics/registry.h"

#ifndef NDEBUG
#error "registry_ndebug_test must be built with NDEBUG"
#endif

namespace warpd::server::metrics {
namespace {

TEST(RegistryNdebugTest, InvalidFamiliesAreLeftOut) {
  Registry registry;
  registry.AddCounter("bad-name", "h").Get().Increment();
  registry.AddCounter("bad_label_total", "h", {"__x"}).With({"v"}).Increment();
  registry.AddHistogram("bad_le", "h", {"le"}, {1}).With({"v"}).Observe(1);
  registry.AddGauge("good", "h").Get().Set(1);
  registry.AddGauge("good", "again").Get().Set(2);  // duplicate: the first stays
  registry.AddGauge("lat_count", "h").Get().Set(3);
  registry.AddHistogram("lat", "h", {}, {1}).Get().Observe(1);  // clashes with lat_count
  EXPECT_EQ(registry.Render(),
            "# HELP good h\n# TYPE good gauge\ngood 1\n"
            "# HELP lat_count h\n# TYPE lat_count gauge\nlat_count 3\n");
}

TEST(RegistryNdebugTest, UnsortedBoundsLeaveOutTheFamilyButItStillWorks) {
  Registry registry;
  Histogram& h = registry.AddHistogram("h", "h", {}, {2, 1, NAN, 2}).Get();
  h.Observe(1.5);
  EXPECT_EQ(h.bounds(), (std::vector<double>{1, 2}));
  EXPECT_EQ(h.BucketCounts(), (std::vector<uint64_t>{0, 1, 0}));
  EXPECT_EQ(registry.Render(), "");
}

TEST(RegistryNdebugTest, WrongLabelCountsGoToAnUnexportedCell) {
  Registry registry;
  Family<Counter>& f = registry.AddCounter("c_total", "h", {"a"});
  f.With({"x", "y"}).Increment();
  f.With({}).Increment();
  f.Get().Increment();
  EXPECT_FALSE(f.Remove({"x", "y"}));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(registry.Render(), "");

  const CollectedFamily& g = registry.AddCollectedGauge("g", "h", {"a"});
  Registry other;
  const CollectedFamily& foreign = other.AddCollectedGauge("foreign", "h");
  registry.AddCollector([&](Emitter& e) {
    e.Emit(g, {}, 1);
    e.Emit(foreign, {}, 1);
    e.Emit(g, {"ok"}, 2);
  });
  EXPECT_EQ(registry.Render(), "# HELP g h\n# TYPE g gauge\ng{a=\"ok\"} 2\n");
}

TEST(RegistryNdebugTest, BadExponentialBucketsAreEmpty) {
  EXPECT_TRUE(ExponentialBuckets(1, 0.5, 3).empty());
}

}  // namespace
}  // namespace warpd::server::metrics
