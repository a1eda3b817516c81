#include "runtime/memory/memory_account.h"

#include "runtime/memory/memory_charge.h"

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/human_bytes.h"
#include "runtime/memory/memory_charge.h"

namespace warpd::runtime {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(HumanBytesTest, Spellings) {
  struct Case {
    uint64_t bytes;
    const char* text;
  };
  const Case cases[] = {
      {0, "0 bytes"},
      {1, "1 byte"},
      {1023, "1023 bytes"},
      {1024, "1 KiB"},
      {1536, "1.5 KiB"},
      {600 * kKiB, "600 KiB"},
      {kMiB, "1 MiB"},
      {kMiB - 1, "1 MiB"},  // 1023.999 KiB rounds up a unit, not to "1024 KiB"
      {3435973837, "3.2 GiB"},
      {4 * kGiB, "4 GiB"},
      {uint64_t{5} << 40, "5 TiB"},
      {UINT64_MAX, "16 EiB"},
  };
  for (const Case& c : cases) EXPECT_EQ(HumanBytes(c.bytes), c.text) << c.bytes;
}

TEST(MemoryAccountTest, ChargesEveryLevelAndReleases) {
  auto global = MemoryAccount::Create("the daemon's CPU", 0);
  auto tenant = MemoryAccount::Create("tenant 'alice'", 0, global);
  auto session = MemoryAccount::Create("session", 0, tenant);
  auto other = MemoryAccount::Create("session", 0, tenant);
  EXPECT_EQ(session->parent(), tenant);
  EXPECT_EQ(session->label(), "session");
  ASSERT_TRUE(session->Charge(100).ok());
  ASSERT_TRUE(other->Charge(20).ok());
  EXPECT_EQ(session->used(), 100u);
  EXPECT_EQ(other->used(), 20u);
  EXPECT_EQ(tenant->used(), 120u);
  EXPECT_EQ(global->used(), 120u);
  session->Release(100);
  EXPECT_EQ(session->used(), 0u);
  EXPECT_EQ(tenant->used(), 20u);
  EXPECT_EQ(global->used(), 20u);
  EXPECT_TRUE(session->Charge(0).ok());
  other->Release(20);
  EXPECT_EQ(global->used(), 0u);
}

// peak() is each account's own high-water mark, refused charges excluded.
TEST(MemoryAccountTest, PeakIsTheMostUsedAtOnce) {
  auto tenant = MemoryAccount::Create("tenant 'alice'", 150);
  auto session = MemoryAccount::Create("session on cuda:0", 0, tenant);
  auto other = MemoryAccount::Create("session", 0, tenant);
  EXPECT_EQ(session->peak(), 0u);
  ASSERT_TRUE(session->Charge(100).ok());
  session->Release(60);
  ASSERT_TRUE(session->Charge(30).ok());  // 70 now: below the 100 before
  EXPECT_EQ(session->used(), 70u);
  EXPECT_EQ(session->peak(), 100u);
  ASSERT_TRUE(other->Charge(50).ok());  // the tenant at 120
  EXPECT_FALSE(session->Charge(40).ok());  // refused by the tenant: counts nowhere
  EXPECT_EQ(session->peak(), 100u);
  EXPECT_EQ(other->peak(), 50u);
  EXPECT_EQ(tenant->peak(), 120u);
  session->Release(70);
  other->Release(50);
  EXPECT_EQ(tenant->used(), 0u);
  EXPECT_EQ(tenant->peak(), 120u);
}

TEST(MemoryAccountTest, RefusalNamesTheLevelAndChangesNothing) {
  auto global = MemoryAccount::Create("the daemon's CPU", 8 * kGiB);
  auto alice = MemoryAccount::Create("tenant 'alice'", 4 * kGiB, global);
  auto session = MemoryAccount::Create("session", 0, alice);
  ASSERT_TRUE(session->Charge(3435973837).ok());  // 3.2 GiB
  absl::Status s = session->Charge(3 * kGiB / 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "tenant 'alice' memory limit: 3.2 GiB of 4 GiB in use, 1.5 GiB more requested "
            "(3435973837 + 1610612736 > 4294967296 bytes)");
  // All or nothing: the session (below the refusing level) was not charged.
  EXPECT_EQ(session->used(), 3435973837u);
  EXPECT_EQ(alice->used(), 3435973837u);
  EXPECT_EQ(global->used(), 3435973837u);

  // Refused higher up: the levels below that had room do not keep the bytes.
  auto bob = MemoryAccount::Create("tenant 'bob'", 0, global);
  auto bobs = MemoryAccount::Create("session", 6 * kGiB, bob);
  s = bobs->Charge(5 * kGiB);
  EXPECT_EQ(s.message(),
            "the daemon's CPU memory limit: 3.2 GiB of 8 GiB in use, 5 GiB more requested "
            "(3435973837 + 5368709120 > 8589934592 bytes)");
  EXPECT_EQ(bobs->used(), 0u);
  EXPECT_EQ(bob->used(), 0u);
  EXPECT_EQ(global->used(), 3435973837u);

  // When several levels would refuse, the one nearest the charge is named.
  s = bobs->Charge(7 * kGiB);
  EXPECT_EQ(s.message(),
            "session memory limit: 0 bytes of 6 GiB in use, 7 GiB more requested (0 + 7516192768 > 6442450944 bytes)");
  // Exactly up to the limit is allowed.
  EXPECT_TRUE(bobs->Charge(8 * kGiB - 3435973837).ok());
  EXPECT_EQ(global->used(), 8 * kGiB);
}

TEST(MemoryAccountTest, LimitsChangeAtRunTime) {
  auto global = MemoryAccount::Create("the daemon's CPU", 1000);
  auto session = MemoryAccount::Create("session", 0, global);
  ASSERT_TRUE(session->Charge(800).ok());
  // Lowered below what is in use: nothing is taken back, new charges fail.
  global->set_limit(500);
  EXPECT_EQ(global->limit(), 500u);
  EXPECT_EQ(global->used(), 800u);
  EXPECT_EQ(session->Charge(1).code(), absl::StatusCode::kResourceExhausted);
  session->Release(400);
  EXPECT_TRUE(session->Charge(100).ok());
  EXPECT_EQ(session->Charge(1).code(), absl::StatusCode::kResourceExhausted);
  global->set_limit(0);  // unlimited
  EXPECT_TRUE(session->Charge(1 << 20).ok());
  session->set_limit(10);
  EXPECT_EQ(session->limit(), 10u);
  EXPECT_EQ(session->Charge(1).code(), absl::StatusCode::kResourceExhausted);
}

TEST(MemoryAccountTest, OverflowIsRefused) {
  auto global = MemoryAccount::Create("the daemon's CPU", 0);
  auto session = MemoryAccount::Create("session", 0, global);
  ASSERT_TRUE(session->Charge(UINT64_MAX - 10).ok());
  absl::Status s = session->Charge(20);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(global->used(), UINT64_MAX - 10);
  auto limited = MemoryAccount::Create("session", 100);
  ASSERT_TRUE(limited->Charge(50).ok());
  EXPECT_EQ(limited->Charge(UINT64_MAX).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(limited->used(), 50u);
}

TEST(MemoryAccountTest, ChildOutlivesItsCreatorsReference) {
  std::shared_ptr<MemoryAccount> session;
  {
    auto global = MemoryAccount::Create("the daemon's CPU", 100);
    session = MemoryAccount::Create("session", 0, global);
  }
  ASSERT_NE(session->parent(), nullptr);
  EXPECT_TRUE(session->Charge(100).ok());
  EXPECT_EQ(session->Charge(1).code(), absl::StatusCode::kResourceExhausted);
  session->Release(100);
}

// Many threads charge and release units in two tenants under one global
// limit; a watcher checks that no level ever exceeds its limit, and in the
// end exactly the limits' worth of charges succeeded.
TEST(MemoryAccountTest, ConcurrentChargesNeverOvershoot) {
  constexpr uint64_t kGlobal = 1000, kTenant = 600;
  auto global = MemoryAccount::Create("the daemon's CPU", kGlobal);
  std::shared_ptr<MemoryAccount> tenants[2] = {MemoryAccount::Create("tenant 'a'", kTenant, global),
                                               MemoryAccount::Create("tenant 'b'", kTenant, global)};
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<MemoryAccount>> sessions;
  for (int t = 0; t < kThreads; ++t) sessions.push_back(MemoryAccount::Create("session", 0, tenants[t % 2]));

  std::atomic<bool> stop{false};
  std::atomic<int> violations{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      if (global->used() > kGlobal || tenants[0]->used() > kTenant || tenants[1]->used() > kTenant) ++violations;
    }
  });
  // Phase 1: churn (charge 1..7 units, release some at random).
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<uint64_t> held;
      for (int i = 0; i < 20000; ++i) {
        const uint64_t n = 1 + rng() % 7;
        if (sessions[t]->Charge(n).ok()) held.push_back(n);
        if (!held.empty() && rng() % 2 == 0) {
          sessions[t]->Release(held.back());
          held.pop_back();
        }
      }
      for (uint64_t n : held) sessions[t]->Release(n);
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  EXPECT_EQ(global->used(), 0u);
  EXPECT_EQ(tenants[0]->used(), 0u);
  EXPECT_EQ(tenants[1]->used(), 0u);

  // Phase 2: everybody charges single units until refused many times in a
  // row; the sum of successes is exactly what the limits allow.
  std::atomic<uint64_t> granted[2] = {0, 0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (sessions[t]->Charge(1).ok()) granted[t % 2]++;
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  watcher.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(granted[0] + granted[1], kGlobal);
  EXPECT_LE(granted[0].load(), kTenant);
  EXPECT_LE(granted[1].load(), kTenant);
  EXPECT_EQ(global->used(), kGlobal);
  EXPECT_EQ(tenants[0]->used(), granted[0].load());
  EXPECT_EQ(tenants[1]->used(), granted[1].load());
  uint64_t by_session = 0;
  for (auto& s : sessions) by_session += s->used();
  EXPECT_EQ(by_session, kGlobal);
}

TEST(MemoryChargeTest, HoldsItsBytesUntilDestroyedOrReset) {
  auto tenant = MemoryAccount::Create("tenant 't'", 100);
  auto session = MemoryAccount::Create("session", 0, tenant);
  {
    absl::StatusOr<MemoryCharge> a = MemoryCharge::Take(session, 60);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(tenant->used(), 60u);
    absl::StatusOr<MemoryCharge> b = MemoryCharge::Take(session, 50);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(b.status().message().find("tenant 't' memory limit"), std::string::npos) << b.status();
    EXPECT_EQ(tenant->used(), 60u);
    MemoryCharge moved = *std::move(a);
    MemoryCharge assigned;
    assigned = std::move(moved);
    EXPECT_EQ(moved.bytes(), 0u);
    EXPECT_EQ(assigned.bytes(), 60u);
    EXPECT_EQ(session->used(), 60u);
    assigned.Reset();
    EXPECT_EQ(session->used(), 0u);
    absl::StatusOr<MemoryCharge> c = MemoryCharge::Take(session, 40);
    ASSERT_TRUE(c.ok());
  }
  EXPECT_EQ(tenant->used(), 0u);
}

TEST(MemoryChargeTest, WithChargeReleasesAfterTheLastCopy) {
  auto account = MemoryAccount::Create("session", 0);
  auto object = std::make_shared<int>(7);
  std::weak_ptr<int> watch = object;
  std::shared_ptr<int> held = WithCharge(std::move(object), *MemoryCharge::Take(account, 10));
  EXPECT_EQ(*held, 7);
  std::shared_ptr<int> copy = held;
  held.reset();
  EXPECT_EQ(account->used(), 10u);  // a copy (a queued command's) still holds it
  EXPECT_FALSE(watch.expired());
  copy.reset();
  EXPECT_EQ(account->used(), 0u);
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace warpd::runtime
