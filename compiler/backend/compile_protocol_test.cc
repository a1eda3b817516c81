#include "compiler/backend/compile_protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warpd::compiler {
namespace {

TEST(CompileProtocolTest, RequestRoundTrip) {
  CompileRequest r;
  r.target.triple = "x86_64-pc-linux-gnu";
  r.target.cpu = "znver3";
  r.target.features = {"+avx2", "-avx512f"};
  r.unit_name = "module_0123";
  r.source = std::string("#include \"warpd/native/builtin.h\"\n\0x", 36);
  auto back = DecodeCompileRequest(EncodeCompileRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->target.Description(), r.target.Description());
  EXPECT_EQ(back->unit_name, r.unit_name);
  EXPECT_EQ(back->source, r.source);
}

TEST(CompileProtocolTest, ReplyCarriesTheObjectOrTheErrorAndTheLogs) {
  std::vector<WorkerLog> logs = {{3, "precompiled header: none for x"}, {1, "built"}};
  std::vector<WorkerLog> got;
  auto object = DecodeCompileReply(EncodeCompileReply(std::string("\x7f" "ELF\0\1", 6), logs), &got);
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(*object, std::string("\x7f" "ELF\0\1", 6));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].level, 3);
  EXPECT_EQ(got[0].text, "precompiled header: none for x");
  EXPECT_EQ(got[1].level, 1);

  got.clear();
  auto error = DecodeCompileReply(EncodeCompileReply(absl::InternalError("clang said no")), &got);
  EXPECT_EQ(error.status(), absl::InternalError("clang said no"));
  EXPECT_TRUE(got.empty());
}

TEST(CompileProtocolTest, LogsAreBounded) {
  std::vector<WorkerLog> logs(kMaxWorkerLogs + 5, WorkerLog{2, std::string(kMaxWorkerLogBytes + 100, 'x')});
  std::vector<WorkerLog> got;
  ASSERT_TRUE(DecodeCompileReply(EncodeCompileReply(std::string("o"), logs), &got).ok());
  ASSERT_EQ(got.size(), kMaxWorkerLogs);
  EXPECT_EQ(got[0].text.size(), kMaxWorkerLogBytes);
}

TEST(CompileProtocolTest, MalformedRepliesAreInternal) {
  const std::string good = EncodeCompileReply(std::string("obj"), {{2, "hello"}});
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_EQ(DecodeCompileReply(good.substr(0, cut)).status().code(), absl::StatusCode::kInternal) << cut;
  EXPECT_EQ(DecodeCompileReply(good + "x").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeCompileRequest("garbage").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpd::compiler
