#include "server/tenants/tenant_registry.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "common/sha256.h"
#include "server/auth/token.h"

namespace warpd::server {
namespace {

class TenantRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/warpd-tenants-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/tenants.json";
    global_ = runtime::MemoryAccount::Create("the daemon", 1 << 30);
    defaults_.sessions = 8;
    defaults_.compiles = 2;
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  absl::StatusOr<std::unique_ptr<TenantRegistry>> Load() {
    TenantRegistry::Options o;
    o.tenants_file = path_;
    o.default_limits = defaults_;
    return TenantRegistry::Create(o, global_);
  }

  std::string path_;
  std::shared_ptr<runtime::MemoryAccount> global_;
  TenantLimits defaults_;
};

TEST_F(TenantRegistryTest, DefaultModeServesTheOwnerOnly) {
  TenantRegistry::Options o;
  o.owner_uid = 1234;
  o.owner_name = "alice";
  o.default_limits = defaults_;
  auto r = TenantRegistry::Create(o, global_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->All().size(), 1u);
  std::shared_ptr<Tenant> owner = (*r)->ForUid(1234);
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->name(), "alice");
  EXPECT_EQ((*r)->ForUid(1235), nullptr);
  const std::string token = (*r)->PeerToken(*owner);
  auto who = (*r)->Authenticate("Bearer " + token);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->get(), owner.get());
  EXPECT_EQ((*r)->Authenticate("Bearer nope").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*r)->Authenticate("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(owner->limits().sessions, 8u);
}

TEST_F(TenantRegistryTest, TokensMapToTheirTenantAndReloadKeepsIdentity) {
  const std::string ta = *NewToken(), tb = *NewToken();
  Write(R"({"default_limits": {"memory": "64M"}, "tenants": [
    {"name": "a", "token_sha256": [")" + HexSha256(ta) + R"("], "uids": [1001], "weight": 3},
    {"name": "b", "tokenSha256": [")" + HexSha256(tb) + R"("], "limits": {"memory": "1G", "sessions": 2}}]})");
  auto r = Load();
  ASSERT_TRUE(r.ok()) << r.status();
  auto a = (*r)->Authenticate("Bearer " + ta);
  auto b = (*r)->Authenticate("Bearer " + tb);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->name(), "a");
  EXPECT_EQ((*a)->weight(), 3u);
  EXPECT_EQ((*a)->limits().memory_bytes, 64u << 20);
  EXPECT_EQ((*a)->limits().sessions, 8u);  // the built-in default
  EXPECT_EQ((*b)->limits().memory_bytes, 1u << 30);
  EXPECT_EQ((*b)->limits().sessions, 2u);
  EXPECT_EQ((*r)->ForUid(1001).get(), a->get());
  // Each tenant's peer token works too, and only for it.
  auto peer = (*r)->Authenticate("Bearer " + (*r)->PeerToken(**b));
  ASSERT_TRUE(peer.ok());
  EXPECT_EQ(peer->get(), b->get());

  // Reload: a's limits change in place, b is dropped, c appears.
  const std::string tc = *NewToken();
  Write(R"({"tenants": [{"name": "a", "token_sha256": [")" + HexSha256(ta) +
        R"("], "limits": {"sessions": 5}}, {"name": "c", "token_sha256": [")" + HexSha256(tc) + R"("]}]})");
  ASSERT_TRUE((*r)->Reload().ok());
  auto a2 = (*r)->Authenticate("Bearer " + ta);
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a2->get(), a->get());
  EXPECT_EQ((*a)->limits().sessions, 5u);
  EXPECT_EQ((*a)->weight(), 1u);
  EXPECT_TRUE((*b)->removed());
  EXPECT_EQ((*r)->Authenticate("Bearer " + tb).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE((*r)->Authenticate("Bearer " + tc).ok());

  // A broken file keeps the running config.
  Write("{not json");
  EXPECT_FALSE((*r)->Reload().ok());
  EXPECT_TRUE((*r)->Authenticate("Bearer " + ta).ok());
}

// Issue 23: a uid removed from a tenant must lose the login (peer) token it
// was given, so a reload that takes a uid away replaces the token.
TEST_F(TenantRegistryTest, PeerTokenIsReplacedWhenAUidLeavesItsTenant) {
  const std::string ta = *NewToken();
  const std::string ha = HexSha256(ta);
  auto file = [&](const std::string& a_uids, const std::string& b_uids) {
    Write(R"({"tenants": [{"name": "a", "token_sha256": [")" + ha + R"("], "uids": [)" + a_uids +
          R"(]}, {"name": "b", "uids": [)" + b_uids + "]}]}");
  };
  file("1001, 1002", "2001");
  auto r = Load();
  ASSERT_TRUE(r.ok()) << r.status();
  std::shared_ptr<Tenant> a = (*r)->Find("a"), b = (*r)->Find("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::string peer1 = (*r)->PeerToken(*a), peer_b = (*r)->PeerToken(*b);
  ASSERT_EQ(peer1.size(), 64u);
  EXPECT_TRUE((*r)->Accepts(*a, TenantRegistry::CredentialOf("Bearer " + peer1)));
  EXPECT_FALSE((*r)->Accepts(*b, TenantRegistry::CredentialOf("Bearer " + peer1)));  // another tenant's

  // Same uids, or only more of them: the token stays.
  auto reloaded = (*r)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(reloaded->peer_token_replaced.empty());
  EXPECT_EQ((*r)->PeerToken(*a), peer1);
  file("1001, 1002, 1003", "2001");
  reloaded = (*r)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(reloaded->peer_token_replaced.empty());
  EXPECT_EQ((*r)->PeerToken(*a), peer1);

  // 1002 leaves a: a new token for a; the old one is refused from now on.
  file("1001, 1003", "2001");
  reloaded = (*r)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ASSERT_EQ(reloaded->peer_token_replaced.size(), 1u);
  EXPECT_EQ(reloaded->peer_token_replaced[0].get(), a.get());
  const std::string peer2 = (*r)->PeerToken(*a);
  EXPECT_EQ(peer2.size(), 64u);
  EXPECT_NE(peer2, peer1);
  absl::StatusOr<std::shared_ptr<Tenant>> old = (*r)->Authenticate("Bearer " + peer1);
  EXPECT_EQ(old.status().code(), absl::StatusCode::kUnauthenticated) << old.status();
  EXPECT_FALSE((*r)->Accepts(*a, TenantRegistry::CredentialOf("Bearer " + peer1)));
  auto now = (*r)->Authenticate("Bearer " + peer2);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->get(), a.get());
  EXPECT_TRUE((*r)->Accepts(*a, TenantRegistry::CredentialOf("Bearer " + peer2)));
  EXPECT_EQ((*r)->ForUid(1002), nullptr);
  // The file's token and the other tenant's peer token are untouched.
  EXPECT_TRUE((*r)->Accepts(*a, ha));
  EXPECT_EQ((*r)->PeerToken(*b), peer_b);

  // A uid moved from b to a: b lost it (new token), a only gained one.
  file("1001, 1003, 2001", "");
  reloaded = (*r)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ASSERT_EQ(reloaded->peer_token_replaced.size(), 1u);
  EXPECT_EQ(reloaded->peer_token_replaced[0].get(), b.get());
  EXPECT_EQ((*r)->PeerToken(*a), peer2);
  EXPECT_NE((*r)->PeerToken(*b), peer_b);
  EXPECT_EQ((*r)->Authenticate("Bearer " + peer_b).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*r)->ForUid(2001).get(), a.get());

  // A token_sha256 dropped from the file stops being accepted too.
  Write(R"({"tenants": [{"name": "a", "uids": [1001, 1003, 2001]}, {"name": "b"}]})");
  reloaded = (*r)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(reloaded->peer_token_replaced.empty());
  EXPECT_FALSE((*r)->Accepts(*a, ha));
  EXPECT_EQ((*r)->Authenticate("Bearer " + ta).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(TenantRegistry::CredentialOf("Bearer " + ta), ha);
  EXPECT_EQ(TenantRegistry::CredentialOf(""), "");
  EXPECT_FALSE((*r)->Accepts(*a, ""));
}

TEST_F(TenantRegistryTest, RejectsBadFiles) {
  const std::string h = HexSha256("x");
  struct Case {
    std::string text, error;
  } cases[] = {
      {R"({"tenants": []})", "names no tenants"},
      {R"({"tenants": [{"name": "../evil"}]})", "tenant name"},
      {R"({"tenants": [{"name": "a"}, {"name": "a"}]})", "named twice"},
      {R"({"tenants": [{"name": "a", "token_sha256": ["abc"]}]})", "64 lower-case hex"},
      {R"({"tenants": [{"name": "a", "token_sha256": [")" + h + R"("]}, {"name": "b", "token_sha256": [")" + h +
           R"("]}]})",
       "also belongs to tenant 'a'"},
      {R"({"tenants": [{"name": "a", "uids": [5]}, {"name": "b", "uids": [5]}]})", "uid 5 also belongs"},
      {R"({"tenants": [{"name": "a", "weight": 1000}]})", "weight"},
      {R"({"tenants": [{"name": "a", "limits": {"memory": "lots"}}]})", "limits.memory"},
      {R"({"tenants": [{"name": "a", "colour": "red"}]})", "colour"},
  };
  for (const Case& c : cases) {
    Write(c.text);
    auto r = Load();
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status() << " for " << c.text;
  }
}

TEST(TenantTest, QuotasAndCompileQueue) {
  auto global = runtime::MemoryAccount::Create("the daemon", 100);
  TenantLimits limits;
  limits.memory_bytes = 60;
  limits.sessions = 2;
  limits.compiles = 1;
  Tenant t("a", 1, limits, global);
  EXPECT_TRUE(t.sessions().Acquire().ok());
  EXPECT_TRUE(t.sessions().Acquire().ok());
  absl::Status third = t.sessions().Acquire();
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.message().find("tenant 'a' sessions limit: 2 of 2 in use"), std::string::npos) << third;
  t.sessions().Release();
  EXPECT_TRUE(t.sessions().Acquire().ok());

  EXPECT_TRUE(t.memory()->Charge(50).ok());
  EXPECT_EQ(t.memory()->Charge(20).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(global->used(), 50u);

  // One compile runs; the next waits until it is done.
  int started = 0;
  ASSERT_TRUE(t.StartCompile([&] { ++started; }).ok());
  ASSERT_TRUE(t.StartCompile([&] { ++started; }).ok());
  EXPECT_EQ(started, 1);
  EXPECT_EQ(t.compiles_waiting(), 1u);
  t.CompileDone();
  EXPECT_EQ(started, 2);
  EXPECT_EQ(t.compiles_running(), 1u);
  t.CompileDone();
  EXPECT_EQ(t.compiles_running(), 0u);
  // Raising the limit starts waiters.
  ASSERT_TRUE(t.StartCompile([&] { ++started; }).ok());
  ASSERT_TRUE(t.StartCompile([&] { ++started; }).ok());
  EXPECT_EQ(started, 3);
  limits.compiles = 2;
  t.Update(1, limits);
  EXPECT_EQ(started, 4);
}

}  // namespace
}  // namespace warpd::server
