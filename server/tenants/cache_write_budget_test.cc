#include "server/tenants/cache_write_budget.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/tenants/tenant.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {
namespace {

TEST(CacheWriteBudgetTest, RefillsAtTheHourlyRateUpToOneHour) {
  absl::Time now = absl::FromUnixSeconds(1000000);
  CacheWriteBudget budget(1000, [&] { return now; });
  EXPECT_EQ(budget.available(), 1000u);
  EXPECT_TRUE(budget.TryCharge(600));
  EXPECT_FALSE(budget.TryCharge(600));  // refused: nothing taken
  EXPECT_EQ(budget.available(), 400u);
  now += absl::Minutes(18);  // 0.3 h: 300 more
  EXPECT_EQ(budget.available(), 700u);
  EXPECT_TRUE(budget.TryCharge(600));
  EXPECT_EQ(budget.available(), 100u);
  now += absl::Hours(10);  // at most one hour's budget is kept
  EXPECT_EQ(budget.available(), 1000u);
  EXPECT_FALSE(budget.TryCharge(1001));  // larger than the bucket: never fits
  EXPECT_TRUE(budget.TryCharge(1000));
  EXPECT_FALSE(budget.TryCharge(1));
}

TEST(CacheWriteBudgetTest, ZeroIsNoLimitAndTheRateMayChange) {
  absl::Time now = absl::FromUnixSeconds(1000000);
  CacheWriteBudget budget(0, [&] { return now; });
  EXPECT_TRUE(budget.TryCharge(uint64_t{1} << 40));
  budget.set_bytes_per_hour(500);  // from no limit: starts full
  EXPECT_EQ(budget.available(), 500u);
  EXPECT_TRUE(budget.TryCharge(100));
  budget.set_bytes_per_hour(200);  // lower: holds at most the new hour's budget
  EXPECT_EQ(budget.available(), 200u);
  budget.set_bytes_per_hour(2000);  // higher: refills from here, faster
  EXPECT_EQ(budget.available(), 200u);
  now += absl::Minutes(30);
  EXPECT_EQ(budget.available(), 1200u);
  budget.set_bytes_per_hour(0);
  EXPECT_TRUE(budget.TryCharge(uint64_t{1} << 40));
}

TEST(TenantCacheWriteTest, BudgetBoundsWhatATenantSavesAndFollowsReloads) {
  TenantLimits limits;
  limits.cache_bytes_per_hour = 10000;
  Tenant tenant("t", 1, limits, runtime::MemoryAccount::Create("the daemon", 0));
  EXPECT_EQ(tenant.limits().cache_bytes_per_hour, 10000u);
  int saved = 0;
  for (int i = 0; i < 10; ++i) saved += tenant.ChargeCacheWrite(3000);
  EXPECT_EQ(saved, 3);  // 9000 of 10000; the rest are served from memory only
  limits.cache_bytes_per_hour = 20000;
  tenant.Update(1, limits);
  EXPECT_EQ(tenant.limits().cache_bytes_per_hour, 20000u);
  EXPECT_TRUE(tenant.ChargeCacheWrite(1000));   // what was left
  EXPECT_FALSE(tenant.ChargeCacheWrite(1000));  // refilling takes time
  limits.cache_bytes_per_hour = 0;
  tenant.Update(1, limits);
  EXPECT_TRUE(tenant.ChargeCacheWrite(uint64_t{1} << 40));
}

class TenantsFileCacheLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/warpd-cache-limit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/tenants.json";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  absl::StatusOr<std::unique_ptr<TenantRegistry>> Load(const std::string& text) {
    std::ofstream(path_) << text;
    TenantRegistry::Options o;
    o.tenants_file = path_;
    o.default_limits.cache_bytes_per_hour = 256u << 20;  // the built-in default in this test
    return TenantRegistry::Create(o, runtime::MemoryAccount::Create("the daemon", 0));
  }
  std::string path_;
};

TEST_F(TenantsFileCacheLimitTest, ParsedLikeOtherByteSizes) {
  auto r = Load(R"({"default_limits": {"cache_bytes_per_hour": "64K"}, "tenants": [
      {"name": "a"}, {"name": "b", "limits": {"cache_bytes_per_hour": "1G"}}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Find("a")->limits().cache_bytes_per_hour, 64u << 10);
  EXPECT_EQ((*r)->Find("b")->limits().cache_bytes_per_hour, 1u << 30);
  r = Load(R"({"tenants": [{"name": "a"}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Find("a")->limits().cache_bytes_per_hour, 256u << 20);

  r = Load(R"({"tenants": [{"name": "a", "limits": {"cache_bytes_per_hour": "lots"}}]})");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("tenant 'a': limits.cache_bytes_per_hour: bad byte size 'lots'"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace warpd::server
