#include "server/self_test.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/device/cpu_device.h"

namespace warpd::server {
namespace {

struct Fixture {
  std::shared_ptr<runtime::MemoryAccount> memory = runtime::MemoryAccount::Create("self-test", 0);
  runtime::SegmentPool pool{memory};
  runtime::CpuDevice cpu{2, absl::ZeroDuration()};
};

std::unique_ptr<compiler::Compiler> MakeCompiler(const std::string& forced_target = "") {
  compiler::Compiler::Options options;
  options.forced_cpu_target = forced_target;
  auto c = compiler::Compiler::Create(options);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

TEST(SelfTest, PassesOnTheHostTarget) {
  Fixture f;
  auto compiler = MakeCompiler();
  ASSERT_NE(compiler, nullptr);
  EXPECT_TRUE(RunSelfTest(*compiler, f.cpu, f.pool).ok());
  // The arrays it used are gone again.
  EXPECT_EQ(f.pool.stats().blocks_live, 0u);
  EXPECT_EQ(f.memory->used(), 0u);
}

TEST(SelfTest, RejectedTargetNamesTheHostTheTargetAndTheCompilerError) {
  Fixture f;
  auto compiler = MakeCompiler("no-such-cpu:+sse2");
  ASSERT_NE(compiler, nullptr);
  absl::Status s = RunSelfTest(*compiler, f.cpu, f.pool);
  ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  const std::string msg(s.message());
  EXPECT_NE(msg.find("CPU '" + compiler->host_cpu().name + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(compiler->host_cpu().triple), std::string::npos) << msg;
  EXPECT_NE(msg.find("compiling for no-such-cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown target CPU 'no-such-cpu'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace warpd::server
