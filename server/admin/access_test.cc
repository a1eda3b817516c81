// Tests of who may do what in warpd.v1.Admin (access.h), with tenants read
// from a real tenants file and in the default (this user only) mode.
#include "server/admin/access.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"

namespace warpd::server::admin {
namespace {

class AccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/warpd-access-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/tenants.json";
    Write(R"({"tenants": [{"name": "ops", "admin": true, "uids": [4001]},
                          {"name": "alice", "uids": [4002]}, {"name": "bob", "uids": [4003]}]})");
    TenantRegistry::Options o;
    o.tenants_file = path_;
    auto r = TenantRegistry::Create(o, runtime::MemoryAccount::Create("the daemon", 1 << 30));
    ASSERT_TRUE(r.ok()) << r.status();
    registry_ = *std::move(r);
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::vector<std::string> Names(const std::vector<std::shared_ptr<Tenant>>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(t->name());
    return out;
  }

  std::string path_;
  std::unique_ptr<TenantRegistry> registry_;
};

TEST_F(AccessTest, AdminSeesEveryTenantAUserOnlyItself) {
  auto ops = registry_->Find("ops"), alice = registry_->Find("alice");
  EXPECT_TRUE(ops->admin());
  EXPECT_FALSE(alice->admin());
  EXPECT_EQ(Names(*VisibleTenants(*registry_, ops, "")), (std::vector<std::string>{"alice", "bob", "ops"}));
  EXPECT_EQ(Names(*VisibleTenants(*registry_, ops, "bob")), (std::vector<std::string>{"bob"}));
  EXPECT_EQ(Names(*VisibleTenants(*registry_, alice, "")), (std::vector<std::string>{"alice"}));
  EXPECT_EQ(Names(*VisibleTenants(*registry_, alice, "alice")), (std::vector<std::string>{"alice"}));
  // Another tenant, existing or not: the same refusal, so names cannot be probed.
  for (const char* other : {"bob", "ops", "nobody", "bad name!"}) {
    auto v = VisibleTenants(*registry_, alice, other);
    ASSERT_FALSE(v.ok()) << other;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kPermissionDenied) << other;
    EXPECT_NE(v.status().message().find("only its own"), std::string_view::npos) << v.status();
  }
  EXPECT_EQ(VisibleTenants(*registry_, ops, "nobody").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(VisibleTenants(*registry_, ops, "bad name!").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*TargetTenant(*registry_, alice, "")).get(), alice.get());
  EXPECT_EQ((*TargetTenant(*registry_, ops, "alice")).get(), alice.get());
}

TEST_F(AccessTest, AdminActionsNeedAnAdminTenantAndFollowReloads) {
  auto ops = registry_->Find("ops"), alice = registry_->Find("alice");
  EXPECT_TRUE(RequireAdmin(*ops, "draining the daemon").ok());
  absl::Status s = RequireAdmin(*alice, "draining the daemon");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("draining the daemon needs an admin tenant; tenant 'alice' is not one"),
            std::string_view::npos)
      << s;
  // The flag moves with the file.
  Write(R"({"tenants": [{"name": "ops", "uids": [4001]}, {"name": "alice", "admin": true, "uids": [4002]}]})");
  ASSERT_TRUE(registry_->Reload().ok());
  EXPECT_FALSE(ops->admin());
  EXPECT_TRUE(alice->admin());
  EXPECT_EQ(RequireAdmin(*ops, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(RequireAdmin(*alice, "x").ok());
}

TEST_F(AccessTest, AccessOfCountsFileTokensAndUids) {
  Write(R"({"tenants": [{"name": "ops", "admin": true, "uids": [4001, 4000],
            "token_sha256": [")" + std::string(64, 'a') + R"(", ")" + std::string(64, 'b') + R"("]}]})");
  ASSERT_TRUE(registry_->Reload().ok());
  const TenantRegistry::Access a = registry_->AccessOf(*registry_->Find("ops"));
  EXPECT_EQ(a.token_hashes, 2u);  // not the login token
  EXPECT_EQ(a.uids, (std::vector<uint32_t>{4000, 4001}));
}

TEST(AccessDefaultMode, TheDaemonsOwnUserIsTheAdmin) {
  TenantRegistry::Options o;
  o.owner_uid = getuid();
  o.owner_name = "me";
  auto r = TenantRegistry::Create(o, runtime::MemoryAccount::Create("the daemon", 1 << 30));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->All().size(), 1u);
  EXPECT_TRUE((*r)->All().front()->admin());
  EXPECT_TRUE(RequireAdmin(*(*r)->All().front(), "x").ok());
}

}  // namespace
}  // namespace warpd::server::admin
