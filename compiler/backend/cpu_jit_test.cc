#include "compiler/backend/cpu_jit.h"

#include <gtest/gtest.h>

#include "warpd/embedded_headers.h"

namespace warpd::compiler {
namespace {

TEST(CpuJitTest, CompilesLoadsAndRuns) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  const char* src = R"(
    #include "warpd/native/builtin.h"
    extern "C" float wp_test_f(float x) { return wp::sqrt(x) + wp::sin(0.0f) + wp::exp(0.0f); }
  )";
  auto obj = (*jit)->CompileToObject(src, "t");
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->substr(0, 4), "\x7f" "ELF");
  auto mod = (*jit)->Load(*obj, "t");
  ASSERT_TRUE(mod.ok()) << mod.status();
  auto sym = (*mod)->Lookup("wp_test_f");
  ASSERT_TRUE(sym.ok()) << sym.status();
  auto f = reinterpret_cast<float (*)(float)>(*sym);
  EXPECT_FLOAT_EQ(f(16.0f), 5.0f);
  EXPECT_EQ((*mod)->Lookup("missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(CpuJitTest, SameSymbolInTwoModules) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok());
  auto a = (*jit)->Load(*(*jit)->CompileToObject("extern \"C\" int g() { return 1; }", "a"), "a");
  auto b = (*jit)->Load(*(*jit)->CompileToObject("extern \"C\" int g() { return 2; }", "b"), "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(reinterpret_cast<int (*)()>(*(*a)->Lookup("g"))(), 1);
  EXPECT_EQ(reinterpret_cast<int (*)()>(*(*b)->Lookup("g"))(), 2);
}

TEST(CpuJitTest, CompileErrorIsInternalWithDiagnostics) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok());
  auto obj = (*jit)->CompileToObject("int f() { return undefined_thing; }", "bad");
  ASSERT_FALSE(obj.ok());
  EXPECT_EQ(obj.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(obj.status().message().find("undefined_thing"), std::string::npos) << obj.status();
}

TEST(CpuJitTest, NoSystemHeadersReachable) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok());
  auto obj = (*jit)->CompileToObject("#include <cmath>\n", "sys");
  EXPECT_FALSE(obj.ok());
}

// STYLE rule 7, clang side: every embedded header compiles alone in the JIT.
TEST(CpuJitTest, EveryNativeHeaderCompilesAlone) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok());
  for (const auto& h : native::EmbeddedHeaders()) {
    std::string src = std::string("#include \"") + h.path + "\"\n";
    auto obj = (*jit)->CompileToObject(src, "alone");
    EXPECT_TRUE(obj.ok()) << h.path << ": " << obj.status();
  }
}

}  // namespace
}  // namespace warpd::compiler
