#include "compiler/backend/cpu_target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include "absl/strings/match.h"
#include "compiler/backend/cpu_jit.h"

namespace warpd::compiler {
namespace {

constexpr char kX86Triple[] = "x86_64-unknown-linux-gnu";

// Feature sets of the x86-64 psABI micro-architecture levels, in LLVM's
// feature names (written out here, not taken from LLVM), plus what LLVM 19's
// host detection reports alongside them (crc32 with SSE4.2, evex512 with
// AVX-512).
const std::initializer_list<const char*> kBaseline = {"cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "x87"};
const std::initializer_list<const char*> kV2 = {"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2",
                                                "ssse3", "crc32"};
const std::initializer_list<const char*> kV3 = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt",
                                                "movbe", "xsave"};
const std::initializer_list<const char*> kV4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",
                                                "evex512"};

HostCpu Host(const std::string& name, std::vector<std::initializer_list<const char*>> levels,
             std::initializer_list<const char*> absent = {}) {
  HostCpu h;
  h.triple = kX86Triple;
  h.name = name;
  for (const auto& level : levels)
    for (const char* f : level) h.features[f] = true;
  for (const char* f : absent) h.features[f] = false;
  return h;
}

bool HasFeature(const CpuTarget& t, const std::string& f) {
  return std::find(t.features.begin(), t.features.end(), f) != t.features.end();
}

class CpuTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The x86 tables are registered only when x86 is the native target.
    if (!absl::StartsWith(DetectHostCpu().triple, "x86_64"))
      GTEST_SKIP() << "x86-64 target selection needs an x86-64 host (LLVM registers only the native target)";
  }
};

struct Case {
  const char* what;
  HostCpu host;
  const char* want_cpu;
};

TEST_F(CpuTargetTest, SelectsTheHostNameOrTheBestLevelItsFeaturesAllow) {
  const Case cases[] = {
      {"known name", Host("znver3", {kBaseline, kV2, kV3}), "znver3"},
      {"known newer name", Host("znver5", {kBaseline, kV2, kV3, kV4}), "znver5"},
      {"known Intel name", Host("skylake-avx512", {kBaseline, kV2, kV3, kV4}), "skylake-avx512"},
      {"unknown name, AVX-512", Host("zen9000", {kBaseline, kV2, kV3, kV4}), "x86-64-v4"},
      {"'generic', AVX-512", Host("generic", {kBaseline, kV2, kV3, kV4}), "x86-64-v4"},
      {"unknown name, AVX2", Host("generic", {kBaseline, kV2, kV3}), "x86-64-v3"},
      {"unknown name, AVX-512 without evex512", Host("generic", {kBaseline, kV2, kV3, kV4}, {"evex512"}),
       "x86-64-v3"},
      {"unknown name, AVX2 but no FMA", Host("generic", {kBaseline, kV2, kV3}, {"fma"}), "x86-64-v2"},
      {"unknown name, SSE4.2", Host("generic", {kBaseline, kV2}), "x86-64-v2"},
      {"unknown name, SSE2 only", Host("generic", {kBaseline}), "x86-64"},
      {"unknown name, no features", Host("generic", {}), "x86-64"},
      {"empty name, AVX2", Host("", {kBaseline, kV2, kV3}), "x86-64-v3"},
      {"empty name, no features", Host("", {}), "x86-64"},
  };
  for (const Case& c : cases) {
    CpuTarget t = SelectCpuTarget(c.host);
    EXPECT_EQ(t.cpu, c.want_cpu) << c.what << ": " << t.reason;
    EXPECT_EQ(t.triple, kX86Triple) << c.what;
    EXPECT_TRUE(IsKnownCpu(t.triple, t.cpu)) << c.what;
    EXPECT_FALSE(t.reason.empty()) << c.what;
    EXPECT_TRUE(std::is_sorted(t.features.begin(), t.features.end())) << c.what;
  }
}

TEST_F(CpuTargetTest, KnownCpuNames) {
  EXPECT_TRUE(IsKnownCpu(kX86Triple, "x86-64"));
  EXPECT_TRUE(IsKnownCpu(kX86Triple, "x86-64-v4"));
  EXPECT_TRUE(IsKnownCpu(kX86Triple, "znver5"));       // LLVM 19 knows Zen 5
  EXPECT_TRUE(IsKnownCpu(kX86Triple, "graniterapids"));
  EXPECT_FALSE(IsKnownCpu(kX86Triple, "generic"));     // the backend has it; clang refuses it
  EXPECT_FALSE(IsKnownCpu(kX86Triple, "zen9000"));
  EXPECT_FALSE(IsKnownCpu(kX86Triple, ""));
}

TEST_F(CpuTargetTest, PassesHostFeaturesAndDropsUnknownOnes) {
  HostCpu h = Host("generic", {kBaseline, kV2, kV3}, {"avx512f"});
  h.features["notafeature"] = true;
  h.features["alsonot"] = false;
  CpuTarget t = SelectCpuTarget(h);
  EXPECT_TRUE(HasFeature(t, "+avx2"));
  EXPECT_TRUE(HasFeature(t, "+fma"));
  EXPECT_TRUE(HasFeature(t, "-avx512f"));
  for (const std::string& f : t.features) {
    EXPECT_EQ(f.find("notafeature"), std::string::npos) << f;
    EXPECT_EQ(f.find("alsonot"), std::string::npos) << f;
  }
  EXPECT_NE(t.reason.find("notafeature"), std::string::npos) << t.reason;
  EXPECT_EQ(t.features.size(), std::size(kBaseline) + std::size(kV2) + std::size(kV3) + 1);
}

TEST_F(CpuTargetTest, DescriptionsDifferBetweenTargets) {
  // Cache keys include Description(): no object built for one target may be
  // found under another's key.
  CpuTarget v3 = SelectCpuTarget(Host("generic", {kBaseline, kV2, kV3}));
  CpuTarget v4 = SelectCpuTarget(Host("generic", {kBaseline, kV2, kV3, kV4}));
  CpuTarget named = SelectCpuTarget(Host("haswell", {kBaseline, kV2, kV3}));
  EXPECT_NE(v3.Description(), v4.Description());
  EXPECT_NE(v3.Description(), named.Description());
  EXPECT_NE(absl::StrCat(v3.Description()).find("cpu=x86-64-v3"), std::string::npos);
  auto a = CpuJit::Create(v3);
  auto b = CpuJit::Create(named);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->TargetDescription(), (*b)->TargetDescription());
}

// Every selected target is one clang accepts: each compiles a kernel-like
// function using the embedded headers (compiling needs no host support).
TEST_F(CpuTargetTest, ClangCompilesForEverySelectedTarget) {
  const HostCpu hosts[] = {Host("zen9000", {kBaseline, kV2, kV3, kV4}), Host("generic", {kBaseline, kV2, kV3}),
                           Host("generic", {kBaseline, kV2}), Host("", {}), Host("znver4", {kBaseline, kV2, kV3, kV4})};
  for (const HostCpu& h : hosts) {
    CpuTarget t = SelectCpuTarget(h);
    auto jit = CpuJit::Create(t);
    ASSERT_TRUE(jit.ok()) << jit.status();
    auto obj = (*jit)->CompileToObject(R"(
      #include "warpd/native/builtin.h"
      extern "C" float wp_dot4(const float* a, const float* b) {
        float s = 0.0f;
        for (int i = 0; i < 64; ++i) s += a[i] * b[i];
        return wp::sqrt(s);
      })", "target");
    EXPECT_TRUE(obj.ok()) << t.cpu << ": " << obj.status();
  }
}

// The host with its name replaced by one LLVM does not know (what a CPU newer
// than the toolchain looks like): the fallback target compiles, and the
// object runs here, because its features are the host's own.
TEST_F(CpuTargetTest, UnknownHostNameFallsBackAndRuns) {
  HostCpu h = DetectHostCpu();
  const std::string real_name = h.name;
  h.name = "zen9000";
  CpuTarget t = SelectCpuTarget(h);
  EXPECT_TRUE(absl::StartsWith(t.cpu, "x86-64")) << t.cpu;
  EXPECT_NE(t.reason.find("unknown"), std::string::npos) << t.reason;
  auto jit = CpuJit::Create(t);
  ASSERT_TRUE(jit.ok()) << jit.status();
  auto obj = (*jit)->CompileToObject(R"(
    #include "warpd/native/builtin.h"
    extern "C" double wp_sum(const double* x, int n) {
      double s = 0.0;
      for (int i = 0; i < n; ++i) s += wp::sqrt(x[i]);
      return s;
    })", "fallback");
  ASSERT_TRUE(obj.ok()) << obj.status();
  auto mod = (*jit)->Load(*obj, "fallback");
  ASSERT_TRUE(mod.ok()) << mod.status();
  auto sym = (*mod)->Lookup("wp_sum");
  ASSERT_TRUE(sym.ok()) << sym.status();
  std::vector<double> x(1000);
  double want = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = double(i * i);
    want += double(i);
  }
  auto fn = reinterpret_cast<double (*)(const double*, int)>(*sym);
  EXPECT_DOUBLE_EQ(fn(x.data(), int(x.size())), want);
  // And the real host, which this LLVM knows, keeps its own name.
  EXPECT_EQ(SelectCpuTarget(DetectHostCpu()).cpu, IsKnownCpu(h.triple, real_name) ? real_name : t.cpu);
}

TEST(ForcedCpuTargetTest, TakenAsGiven) {
  CpuTarget t = ParseForcedCpuTarget(kX86Triple, "not-a-cpu:+sse2,-avx");
  EXPECT_EQ(t.cpu, "not-a-cpu");
  EXPECT_EQ(t.features, (std::vector<std::string>{"+sse2", "-avx"}));
  EXPECT_EQ(ParseForcedCpuTarget(kX86Triple, "x86-64").features.size(), 0u);
  // Clang rejects it: the compile error names the CPU.
  auto jit = CpuJit::Create(ParseForcedCpuTarget(DetectHostCpu().triple, "not-a-cpu"));
  ASSERT_TRUE(jit.ok());
  auto obj = (*jit)->CompileToObject("extern \"C\" int f() { return 1; }", "bad");
  ASSERT_FALSE(obj.ok());
  EXPECT_NE(obj.status().message().find("not-a-cpu"), std::string::npos) << obj.status();
}

}  // namespace
}  // namespace warpd::compiler
