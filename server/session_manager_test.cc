// Tests of SessionManager::CloseRevoked with a real tenants file: after a
// reload, a session lives only while the token that opened it still opens
// its tenant (issue 23: a uid removed from a tenant kept using its sessions).
#include "server/session_manager.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "gtest/gtest.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/memory_account.h"
#include "server/auth/token.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {
namespace {

class SessionManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/warpd-sessions-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/tenants.json";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }

  std::string path_;
  runtime::StreamScheduler scheduler_{runtime::StreamScheduler::Options{.threads = 1}};
};

TEST_F(SessionManagerTest, ReloadClosesTheSessionsOfRevokedTokensOnly) {
  const std::string t1 = *NewToken(), t2 = *NewToken(), tb = *NewToken();
  const std::string a_tokens = R"("token_sha256": [")" + HexSha256(t1) + R"(", ")" + HexSha256(t2) + R"("])";
  const std::string b = R"({"name": "b", "token_sha256": [")" + HexSha256(tb) + R"("]})";
  Write(R"({"tenants": [{"name": "a", )" + a_tokens + R"(, "uids": [1001, 1002]}, )" + b + "]}");
  TenantRegistry::Options options;
  options.tenants_file = path_;
  auto registry = TenantRegistry::Create(options, runtime::MemoryAccount::Create("the daemon", uint64_t{1} << 30));
  ASSERT_TRUE(registry.ok()) << registry.status();
  std::shared_ptr<Tenant> a = (*registry)->Find("a"), tenant_b = (*registry)->Find("b");
  const std::string peer = (*registry)->PeerToken(*a);
  auto accepted = [&](const Tenant& t, std::string_view credential) { return (*registry)->Accepts(t, credential); };

  // Before the manager: its destructor closes the sessions still open,
  // which calls their listeners.
  int peer_closed = 0, t2_closed = 0;
  SessionManager sessions(&scheduler_, runtime::SegmentPoolOptions{});
  auto open = [&](const std::shared_ptr<Tenant>& t, const std::string& token) {
    absl::StatusOr<std::string> s = sessions.Open(t, "test", TenantRegistry::CredentialOf("Bearer " + token));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or("");
  };
  const std::string by_peer = open(a, peer), by_t1 = open(a, t1), by_t2 = open(a, t2), by_b = open(tenant_b, tb);
  ASSERT_NE((*sessions.Get(by_peer, *a))->AddCloseListener([&peer_closed] { ++peer_closed; }), 0u);
  ASSERT_NE((*sessions.Get(by_t2, *a))->AddCloseListener([&t2_closed] { ++t2_closed; }), 0u);

  // A reload that changes nothing a session depends on closes none.
  ASSERT_TRUE((*registry)->Reload().ok());
  EXPECT_TRUE(sessions.CloseRevoked(accepted).empty());
  EXPECT_EQ(sessions.size(), 4u);

  // uid 1002 leaves a (its peer token is replaced) and t1 is dropped: the
  // sessions opened with either close; the one opened with t2 lives on.
  Write(R"({"tenants": [{"name": "a", "token_sha256": [")" + HexSha256(t2) + R"("], "uids": [1001]}, )" + b + "]}");
  auto reloaded = (*registry)->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ASSERT_EQ(reloaded->peer_token_replaced.size(), 1u);
  absl::flat_hash_map<std::string, size_t> closed = sessions.CloseRevoked(accepted);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed["a"], 2u);
  EXPECT_EQ(sessions.size(), 2u);
  EXPECT_EQ(peer_closed, 1);  // closed, so its streams were cancelled and listeners called
  EXPECT_EQ(t2_closed, 0);
  for (const std::string& gone : {by_peer, by_t1}) {
    EXPECT_EQ(sessions.Get(gone, *a).status().code(), absl::StatusCode::kUnauthenticated);
  }
  EXPECT_TRUE(sessions.Get(by_t2, *a).ok());
  EXPECT_TRUE(sessions.Get(by_b, *tenant_b).ok());
  EXPECT_EQ(a->sessions().used(), 1u);  // the closed ones gave their quota back

  // A session opened with the new peer token is accepted by the next check.
  const std::string by_new_peer = open(a, (*registry)->PeerToken(*a));
  EXPECT_TRUE(sessions.CloseRevoked(accepted).empty());
  EXPECT_TRUE(sessions.Get(by_new_peer, *a).ok());
  // A session recorded with no credential never survives a check.
  const std::string anonymous = *sessions.Open(a, "test", "");
  EXPECT_EQ(sessions.CloseRevoked(accepted)["a"], 1u);
  EXPECT_FALSE(sessions.Get(anonymous, *a).ok());
}

}  // namespace
}  // namespace warpd::server
