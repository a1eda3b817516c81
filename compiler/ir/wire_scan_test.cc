#include "compiler/ir/wire_scan.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/from_proto.h"
#include "compiler/testing/ir_builder.h"

namespace warpd::ir {
namespace {

using namespace warpd::testing;

v1::Module WithStatements(int n) {
  std::vector<v1::Stmt> body;
  for (int i = 0; i < n; ++i) body.push_back(Assign(Name("x"), Int(i)));
  return ModuleOf({Kernel("k", {}, std::move(body))});
}

TEST(WireScanTest, AcceptsWhatModuleFromProtoAccepts) {
  const std::string bytes = WithStatements(100).SerializeAsString();
  EXPECT_TRUE(ScanWireLimits(v1::Module::descriptor(), bytes, Limits()).ok());
  EXPECT_TRUE(ScanWireLimits(v1::Module::descriptor(), "", Limits()).ok());
}

TEST(WireScanTest, CountsNodesBeforeParsing) {
  Limits limits;
  limits.max_nodes = 150;  // 100 statements + 200 expressions
  absl::Status s = ScanWireLimits(v1::Module::descriptor(), WithStatements(100).SerializeAsString(), limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("more than 150 nodes"), std::string::npos) << s;
  limits.max_nodes = 300;
  EXPECT_TRUE(ScanWireLimits(v1::Module::descriptor(), WithStatements(100).SerializeAsString(), limits).ok());
}

TEST(WireScanTest, RejectsDeepNesting) {
  v1::Expr e = Int(1);
  for (int i = 0; i < 300; ++i) e = Bin(v1::BINOP_ADD, std::move(e), Int(1));
  v1::Module m = ModuleOf({Kernel("k", {}, {Assign(Name("x"), std::move(e))})});
  absl::Status s = ScanWireLimits(v1::Module::descriptor(), m.SerializeAsString(), Limits());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("nested deeper"), std::string::npos) << s;
}

TEST(WireScanTest, RejectsMalformedBytes) {
  const std::string good = WithStatements(3).SerializeAsString();
  for (const std::string& bad : {std::string("\xff\xff\xff\xff\x0f garbage"), good.substr(0, good.size() - 3),
                                 std::string("\x12\x05\x0a", 3), std::string("\x0b", 1) /* group */}) {
    EXPECT_EQ(ScanWireLimits(v1::Module::descriptor(), bad, Limits()).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(FromProtoLimitsTest, StatementsPerFunction) {
  Limits limits;
  limits.max_statements = 50;
  EXPECT_TRUE(ModuleFromProto(WithStatements(50), limits).ok());
  auto m = ModuleFromProto(WithStatements(51), limits);
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("function 'k' has more than 50 statements"), std::string::npos) << m.status();
}

}  // namespace
}  // namespace warpd::ir
