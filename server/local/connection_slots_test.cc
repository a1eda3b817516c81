#include "server/local/connection_slots.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warpd::server {
namespace {

constexpr ConnectionSlots::Limits kLimits{.total = 10, .pending_per_uid = 2, .per_tenant = 4, .per_tenant_uid = 3};

ConnectionSlots::Slot AdmitOk(ConnectionSlots& slots, uid_t uid) {
  absl::StatusOr<ConnectionSlots::Slot> s = slots.Admit(uid);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : ConnectionSlots::Slot();
}

// `n` connections of `uid` authenticated as `tenant`.
std::vector<ConnectionSlots::Slot> Authenticated(ConnectionSlots& slots, uid_t uid, std::string_view tenant, int n) {
  std::vector<ConnectionSlots::Slot> held;
  for (int i = 0; i < n; ++i) {
    held.push_back(AdmitOk(slots, uid));
    EXPECT_TRUE(held.back().Authenticate(tenant).ok()) << tenant << " #" << i;
  }
  return held;
}

TEST(ConnectionSlotsTest, TenantsOfOneUidEachGetTheirOwnSlots) {
  ConnectionSlots slots("command connections", "; use gRPC", kLimits);
  // Tenant a, from uid 1000, takes what one uid of a tenant may (3).
  std::vector<ConnectionSlots::Slot> a = Authenticated(slots, 1000, "a", 3);
  ConnectionSlots::Slot extra = AdmitOk(slots, 1000);
  absl::Status s = extra.Authenticate("a");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "too many command connections for tenant 'a' from uid 1000: 3 are open, the most one uid may hold "
            "within a tenant (4 per tenant, 3 per uid within it); use gRPC");
  // The refused connection is still pending; b, from the same uid, is not
  // held back by a's connections.
  EXPECT_EQ(slots.pending(1000), 1);
  extra.Release();
  std::vector<ConnectionSlots::Slot> b = Authenticated(slots, 1000, "b", 3);
  EXPECT_EQ(slots.tenant("a"), 3);
  EXPECT_EQ(slots.tenant("b"), 3);
  EXPECT_EQ(slots.pending(1000), 0);
  EXPECT_EQ(slots.total(), 6);
}

TEST(ConnectionSlotsTest, ATenantsUidsShareItsBound) {
  ConnectionSlots slots("command connections", "; use gRPC", kLimits);
  std::vector<ConnectionSlots::Slot> a = Authenticated(slots, 1000, "a", 3);
  std::vector<ConnectionSlots::Slot> a2 = Authenticated(slots, 1001, "a", 1);
  ConnectionSlots::Slot extra = AdmitOk(slots, 1002);
  absl::Status s = extra.Authenticate("a");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "too many command connections for tenant 'a': 4 are open, the most one tenant may hold "
            "(4 per tenant, 3 per uid within it); use gRPC");
  // A slot freed is a slot to take.
  a2.clear();
  EXPECT_EQ(slots.tenant("a"), 3);
  EXPECT_TRUE(extra.Authenticate("a").ok());
  EXPECT_EQ(extra.tenant(), "a");
  EXPECT_EQ(extra.Authenticate("a").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ConnectionSlotsTest, AUidHoldsFewUnauthenticatedSlots) {
  ConnectionSlots slots("command connections", "; use gRPC", kLimits);
  ConnectionSlots::Slot p1 = AdmitOk(slots, 1000);
  ConnectionSlots::Slot p2 = AdmitOk(slots, 1000);
  absl::StatusOr<ConnectionSlots::Slot> p3 = slots.Admit(1000);
  ASSERT_FALSE(p3.ok());
  EXPECT_EQ(p3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(p3.status().message(),
            "too many command connections from uid 1000 that have not authenticated yet: 2, the most one uid "
            "may have; use gRPC");
  // Another uid is not held back; an authenticated slot frees its pending one.
  ConnectionSlots::Slot other = AdmitOk(slots, 1001);
  ASSERT_TRUE(p1.Authenticate("a").ok());
  EXPECT_EQ(slots.pending(1000), 1);
  ConnectionSlots::Slot p4 = AdmitOk(slots, 1000);
  EXPECT_EQ(slots.pending(1000), 2);
  EXPECT_EQ(slots.total(), 4);
}

TEST(ConnectionSlotsTest, TheTotalBoundsEveryone) {
  ConnectionSlots slots("command connections", "; use gRPC", kLimits);
  std::vector<ConnectionSlots::Slot> held;
  for (uid_t uid = 1; held.size() < 10; ++uid) {
    held.push_back(AdmitOk(slots, uid));
    ASSERT_TRUE(held.back().Authenticate("t" + std::to_string(uid)).ok());
  }
  absl::StatusOr<ConnectionSlots::Slot> s = slots.Admit(99);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "too many command connections: 10 are open, the most the daemon serves at once; use gRPC");
  // Moved slots release once; released slots are free again.
  ConnectionSlots::Slot moved = std::move(held.back());
  held.pop_back();
  EXPECT_EQ(slots.total(), 10);
  moved = ConnectionSlots::Slot();
  EXPECT_EQ(slots.total(), 9);
  EXPECT_EQ(slots.tenant("t10"), 0);
  held.clear();
  EXPECT_EQ(slots.total(), 0);
  EXPECT_TRUE(slots.Admit(99).ok());
}

}  // namespace
}  // namespace warpd::server
