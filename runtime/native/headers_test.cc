// Tests of the runtime/native headers.
//
// 1. STYLE rule 7: every header compiles on its own, i.e. a translation unit
//    that includes just that header compiles
//    - with the host clang, freestanding and without any system header (as the
//      CPU JIT compiles generated code), and
//    - with NVRTC to PTX, which ptxas then assembles for sm_90 (when the CUDA
//      backend is built and NVRTC can be loaded).
//    The headers come from the embedded list (warpd/embedded_headers.h), so a
//    new header is covered as soon as it is embedded; a header in the source
//    directory that is not embedded fails its own test.
// 2. Host numerics of the builtins against references computed here
//    independently: half conversions, integer division, float -> int casts,
//    vector algebra, bounds checks and fault recording, CPU atomics.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/embedded_headers.h"
#include "warpd/native/builtin.h"

#if WARPD_WITH_CUDA
#include "compiler/backend/cuda_nvrtc.h"
#endif

extern char** environ;

namespace {

// --- 1. Each header on its own ----------------------------------------------

std::vector<std::string> EmbeddedPaths() {
  std::vector<std::string> out;
  for (const warpd::native::EmbeddedHeader& h : warpd::native::EmbeddedHeaders()) {
    out.push_back(h.path);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private temporary directory, removed with its files.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    path_ = std::string(base && *base ? base : "/tmp") + "/warpd-headers-XXXXXX";
    if (mkdtemp(path_.data()) == nullptr) path_.clear();
  }
  ~TempDir() {
    if (path_.empty()) return;
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(path_.c_str());
  }
  bool ok() const { return !path_.empty(); }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Runs args[0] (an absolute path) and returns its exit code (-1 if it could not
// run or died), with stdout and stderr captured in *output.
int RunCommand(const std::vector<std::string>& args, TempDir& dir, std::string* output) {
  const std::string log = dir.File("run.log");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    *output = std::string("cannot run ") + args[0] + ": " + std::strerror(err);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *output = ReadFile(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class HeaderAloneTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string TranslationUnit() const { return "#include \"" + GetParam() + "\"\n"; }
};

// As the CPU JIT compiles generated code: freestanding, no libc or libstdc++
// headers on the include path at all, warnings are errors.
TEST_P(HeaderAloneTest, CompilesWithHostClang) {
  ASSERT_STRNE(WARPD_HOST_CLANGXX, "") << "tests.cmake found no host clang++";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string tu = dir.File("tu.cc");
  std::ofstream(tu) << TranslationUnit();
  std::string output;
  int code = RunCommand({WARPD_HOST_CLANGXX, "-std=c++17", "-ffreestanding", "-nostdinc", "-nostdinc++",
                  "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I" WARPD_NATIVE_DIR, "-x",
                  "c++", tu},
                 dir, &output);
  EXPECT_EQ(code, 0) << GetParam() << " does not compile alone with " << WARPD_HOST_CLANGXX
                     << ":\n"
                     << output;
}

TEST_P(HeaderAloneTest, CompilesWithNvrtcAndPtxas) {
#if WARPD_WITH_CUDA
  absl::StatusOr<std::shared_ptr<warpd::compiler::Nvrtc>> nvrtc = warpd::compiler::Nvrtc::Load();
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status().message();  // required with CUDA (CMakeLists.txt)
  std::string name = GetParam();
  std::replace(name.begin(), name.end(), '/', '_');
  absl::StatusOr<std::string> ptx = (*nvrtc)->CompileToPtx(TranslationUnit(), name + ".cu", 90);
  ASSERT_TRUE(ptx.ok()) << GetParam() << " does not compile alone with NVRTC:\n" << ptx.status();
  absl::Status verified = warpd::compiler::VerifyPtx(*ptx, 90);
  EXPECT_TRUE(verified.ok()) << verified;
#else
  GTEST_SKIP() << "built without WARPD_WITH_CUDA";
#endif
}

// The embedded copy is what the JIT compiles; it must be the file on disk.
TEST_P(HeaderAloneTest, EmbeddedCopyMatchesSource) {
  for (const warpd::native::EmbeddedHeader& h : warpd::native::EmbeddedHeaders()) {
    if (GetParam() != h.path) continue;
    EXPECT_EQ(std::string(h.contents, h.size), ReadFile(WARPD_NATIVE_DIR "/" + GetParam()));
    EXPECT_EQ(h.contents[h.size], '\0') << "NVRTC needs NUL-terminated header text";
  }
}

INSTANTIATE_TEST_SUITE_P(Native, HeaderAloneTest, ::testing::ValuesIn(EmbeddedPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The adjoint headers are templates that including them alone does not
// instantiate: adjoint_instantiate.inc calls every adjoint for float32,
// float64 and half, and must compile like a module with a backward pass.
TEST(AdjointInstantiationTest, CompilesWithHostClang) {
  ASSERT_STRNE(WARPD_HOST_CLANGXX, "") << "tests.cmake found no host clang++";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string output;
  int code = RunCommand({WARPD_HOST_CLANGXX, "-std=c++17", "-ffreestanding", "-nostdinc", "-nostdinc++",
                         "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I" WARPD_NATIVE_DIR, "-x", "c++",
                         WARPD_NATIVE_DIR "/adjoint_instantiate.inc"},
                        dir, &output);
  EXPECT_EQ(code, 0) << output;
}

TEST(AdjointInstantiationTest, CompilesWithNvrtcAndPtxas) {
#if WARPD_WITH_CUDA
  absl::StatusOr<std::shared_ptr<warpd::compiler::Nvrtc>> nvrtc = warpd::compiler::Nvrtc::Load();
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status().message();
  const std::string source = ReadFile(WARPD_NATIVE_DIR "/adjoint_instantiate.inc");
  ASSERT_FALSE(source.empty());
  absl::StatusOr<std::string> ptx = (*nvrtc)->CompileToPtx(source, "adjoint_instantiate.cu", 90);
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_NE(ptx->find("adj_vec3_f64"), std::string::npos);
  absl::Status verified = warpd::compiler::VerifyPtx(*ptx, 90);
  EXPECT_TRUE(verified.ok()) << verified;
#else
  GTEST_SKIP() << "built without WARPD_WITH_CUDA";
#endif
}

TEST(NativeHeadersTest, EveryHeaderInTheDirectoryIsEmbedded) {
  const std::vector<std::string> embedded = EmbeddedPaths();
  const std::set<std::string> embedded_set(embedded.begin(), embedded.end());
  EXPECT_EQ(embedded_set.size(), embedded.size()) << "a header is embedded twice";
  int headers = 0;
  for (const std::string sub : {"warpd/native/", "warpd/native/adjoint/"}) {
    DIR* dir = opendir((WARPD_NATIVE_DIR "/" + sub).c_str());
    ASSERT_NE(dir, nullptr) << sub;
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name.size() < 3 || name.compare(name.size() - 2, 2, ".h") != 0) continue;
      ++headers;
      EXPECT_TRUE(embedded_set.count(sub + name))
          << sub << name
          << " is not in WARPD_NATIVE_HEADERS (runtime/native/CMakeLists.txt), so the JIT "
             "cannot include it";
    }
    closedir(dir);
  }
  EXPECT_GT(headers, 0);
  EXPECT_TRUE(embedded_set.count("warpd/native/builtin.h"));
}

// --- 2. Host numerics ----------------------------------------------------------

// Value of IEEE half bits, decoded independently of core.h (exact in double).
double HalfValue(uint16_t bits) {
  const int sign = bits >> 15;
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);
  }
  return sign ? -v : v;
}

// Round-to-nearest-even float -> half by search over the finite halves.
uint16_t HalfReference(float f) {
  if (std::isnan(f)) return 0x7e00;  // any NaN; callers compare NaN-ness
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;  // halfway to 2^16 and beyond: inf
  // Largest h in [0, 0x7bff] with HalfValue(h) <= a; positive halves are ordered by bits.
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (HalfValue(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  uint16_t h = lo;
  const double below = a - HalfValue(h);
  const double above = HalfValue(static_cast<uint16_t>(h + 1)) - a;  // inf above 0x7bff
  if (above < below || (above == below && (h & 1))) ++h;
  return sign | h;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(HalfTest, HalfToFloatIsExactForEveryHalf) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float got = wp::half_to_float(wp::half{static_cast<uint16_t>(b)});
    const double want = HalfValue(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << b;
      EXPECT_EQ(std::signbit(got), (b & 0x8000) != 0) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << "half bits 0x" << std::hex << b;
      ASSERT_EQ(std::signbit(got), (b & 0x8000) != 0) << std::hex << b;  // -0.0 too
    }
  }
}

void ExpectFloatToHalf(float f) {
  const uint16_t got = wp::float_to_half(f).bits;
  const uint16_t want = HalfReference(f);
  if (std::isnan(f)) {
    EXPECT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0) << "NaN -> 0x" << std::hex << got;
    return;
  }
  ASSERT_EQ(got, want) << "float " << f << " (bits 0x" << std::hex << Bits(f) << ")";
}

TEST(HalfTest, FloatToHalfRoundsToNearestEven) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e6f, -1e6f, inf, -inf,
                  std::numeric_limits<float>::quiet_NaN(), 5.9604645e-8f /* 2^-24 */,
                  2.9802322e-8f /* 2^-25: tie, rounds to 0 */, 3.0e-8f, 1e-10f,
                  6.1035156e-5f /* smallest normal */, 6.0975552e-5f /* largest subnormal */,
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}) {
    ExpectFloatToHalf(f);
  }
  // Around every finite half: the value itself, the midpoint to the next one
  // (a tie) and one float ulp either side of the midpoint.
  for (uint32_t b = 0; b < 0x7bff; ++b) {
    const double v = HalfValue(static_cast<uint16_t>(b));
    const float mid = static_cast<float>((v + HalfValue(static_cast<uint16_t>(b + 1))) / 2);
    for (float f : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, inf)}) {
      ExpectFloatToHalf(f);
      ExpectFloatToHalf(-f);
    }
  }
  // A spread of all float bit patterns.
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) ExpectFloatToHalf(FromBits(static_cast<uint32_t>(u)));
}

TEST(HalfTest, CastGoesThroughFloat32) {
  EXPECT_EQ(wp::cast<wp::half>(1.5).bits, 0x3e00);
  EXPECT_EQ(wp::cast<wp::half>(2).bits, 0x4000);
  EXPECT_EQ(wp::cast<wp::int32>(wp::half{0xc500}), -5);  // -5.0
  EXPECT_EQ(wp::cast<wp::float64>(wp::half{0x3555}), HalfValue(0x3555));
}

// Integer division: C semantics (truncation), except b == 0 -> 0 and
// MIN / -1 wraps (and MIN % -1 == 0), where C++ has undefined behaviour.
template <typename T>
void CheckDivModExhaustive8() {
  for (int a = std::numeric_limits<T>::min(); a <= std::numeric_limits<T>::max(); ++a) {
    for (int b = std::numeric_limits<T>::min(); b <= std::numeric_limits<T>::max(); ++b) {
      int q = b == 0 ? 0 : a / b;  // exact in int
      int r = b == 0 ? 0 : a % b;
      const T wq = static_cast<T>(q);  // wraps -128 / -1 = 128 to -128
      ASSERT_EQ(wp::div(static_cast<T>(a), static_cast<T>(b)), wq) << a << " / " << b;
      ASSERT_EQ(wp::mod(static_cast<T>(a), static_cast<T>(b)), static_cast<T>(r)) << a << " % " << b;
    }
  }
}

TEST(ScalarTest, DivModExhaustiveOn8Bit) {
  CheckDivModExhaustive8<wp::int8>();
  CheckDivModExhaustive8<wp::uint8>();
}

TEST(ScalarTest, DivModEdgeCases) {
  EXPECT_EQ(wp::div(INT_MIN, -1), INT_MIN);
  EXPECT_EQ(wp::mod(INT_MIN, -1), 0);
  EXPECT_EQ(wp::div(LLONG_MIN, -1LL), LLONG_MIN);
  EXPECT_EQ(wp::mod(LLONG_MIN, -1LL), 0);
  EXPECT_EQ(wp::div(wp::int16(-32768), wp::int16(-1)), wp::int16(-32768));
  for (int a : {0, 1, -1, 7, -7, INT_MAX, INT_MIN}) {
    EXPECT_EQ(wp::div(a, 0), 0) << a;
    EXPECT_EQ(wp::mod(a, 0), 0) << a;
    EXPECT_EQ(wp::div(static_cast<wp::int64>(a), wp::int64(0)), 0) << a;
    EXPECT_EQ(wp::mod(static_cast<wp::uint32>(a), wp::uint32(0)), 0u) << a;
    EXPECT_EQ(wp::div(static_cast<wp::uint64>(a), wp::uint64(0)), 0u) << a;
  }
  EXPECT_EQ(wp::div(-7, 2), -3);
  EXPECT_EQ(wp::mod(-7, 2), -1);
  EXPECT_EQ(wp::div(7, -2), -3);
  EXPECT_EQ(wp::mod(7, -2), 1);
  EXPECT_EQ(wp::div(wp::uint32(7), wp::uint32(0xffffffffu)), 0u);  // unsigned: no -1 special case
  EXPECT_EQ(wp::mod(wp::uint32(7), wp::uint32(0xffffffffu)), 7u);
  EXPECT_EQ(wp::abs(INT_MIN), INT_MIN);  // wraps, no UB
  EXPECT_EQ(wp::neg(INT_MIN), INT_MIN);
  EXPECT_EQ(wp::add(INT_MAX, 1), INT_MIN);
  EXPECT_EQ(wp::mul(65536, 65536), 0);
}

TEST(ScalarTest, FloatToIntCastsClampAndMapNanToZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(wp::cast<wp::int32>(nan), 0);
  EXPECT_EQ(wp::cast<wp::int32>(inf), INT_MAX);
  EXPECT_EQ(wp::cast<wp::int32>(-inf), INT_MIN);
  EXPECT_EQ(wp::cast<wp::int32>(3e9f), INT_MAX);
  EXPECT_EQ(wp::cast<wp::int32>(-3e9f), INT_MIN);
  EXPECT_EQ(wp::cast<wp::int32>(2147483520.0f), 2147483520);  // largest float < 2^31
  EXPECT_EQ(wp::cast<wp::int32>(-2.7f), -2);                   // truncation
  EXPECT_EQ(wp::cast<wp::int32>(2147483647.0), INT_MAX);       // double, exact
  EXPECT_EQ(wp::cast<wp::int32>(2147483646.5), 2147483646);
  EXPECT_EQ(wp::cast<wp::uint32>(-1.5f), 0u);
  EXPECT_EQ(wp::cast<wp::uint32>(5e9), 4294967295u);
  EXPECT_EQ(wp::cast<wp::uint8>(300.0f), 255);
  EXPECT_EQ(wp::cast<wp::uint8>(-3.0f), 0);
  EXPECT_EQ(wp::cast<wp::int8>(-200.0), -128);
  EXPECT_EQ(wp::cast<wp::int16>(40000.0f), 32767);
  EXPECT_EQ(wp::cast<wp::uint16>(nan), 0);
  EXPECT_EQ(wp::cast<wp::int64>(1e19f), LLONG_MAX);
  EXPECT_EQ(wp::cast<wp::int64>(-1e19), LLONG_MIN);
  EXPECT_EQ(wp::cast<wp::int64>(static_cast<double>(std::nan(""))), 0);
  EXPECT_EQ(wp::cast<wp::uint64>(1.8e19), 18000000000000000000ull);
  EXPECT_EQ(wp::cast<wp::uint64>(2e19f), ULLONG_MAX);
  EXPECT_EQ(wp::cast<wp::uint64>(-inf), 0u);
}

wp::vec3f V(float x, float y, float z) { return wp::vec3f{{x, y, z}}; }

TEST(VecTest, CrossDotNormalizeMatchBruteForce) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  for (int n = 0; n < 1000; ++n) {
    const wp::vec3f a = V(u(rng), u(rng), u(rng));
    const wp::vec3f b = V(u(rng), u(rng), u(rng));
    // cross_i = sum_jk eps_ijk a_j b_k, in double.
    double want[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 3; ++k) {
          const int eps = (i == j || j == k || i == k) ? 0 : ((j - i + 3) % 3 == 1 ? 1 : -1);
          want[i] += eps * static_cast<double>(a.c[j]) * b.c[k];
        }
      }
    }
    const wp::vec3f c = wp::cross(a, b);
    double dot = 0, norm2 = 0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(c.c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << n << " " << i;
      dot += static_cast<double>(a.c[i]) * b.c[i];
      norm2 += static_cast<double>(a.c[i]) * a.c[i];
    }
    EXPECT_NEAR(wp::dot(a, b), dot, 1e-4 * (1 + std::fabs(dot)));
    EXPECT_NEAR(wp::length(a), std::sqrt(norm2), 1e-5 * std::sqrt(norm2));
    const wp::vec3f na = wp::normalize(a);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(na.c[i], a.c[i] / std::sqrt(norm2), 1e-6);
    EXPECT_NEAR(wp::dot(c, a), 0.0, 1e-3 * (1 + norm2));  // perpendicular
  }
  EXPECT_TRUE(wp::eq(wp::cross(V(1, 0, 0), V(0, 1, 0)), V(0, 0, 1)));
  EXPECT_TRUE(wp::eq(wp::normalize(V(0, 0, 0)), V(0, 0, 0)));  // zero stays zero, not NaN
  EXPECT_TRUE(wp::eq(wp::normalize(V(0, 3, 4)), V(0, 0.6f, 0.8f)));
}

wp::launch_ctx ZeroCtx() {
  wp::launch_ctx ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  return ctx;
}

TEST(ArrayTest, AddressChecksBoundsAndRecordsTheFirstFault) {
  float data[3][4] = {};
  wp::array_t<float> a{};
  a.data = &data[0][0];
  a.ndim = 2;
  a.shape[0] = 3;
  a.shape[1] = 4;
  a.strides[0] = 4 * sizeof(float);
  a.strides[1] = sizeof(float);
  wp::launch_ctx ctx = ZeroCtx();

  EXPECT_EQ(wp::address(&ctx, a, 10, 2, 3), &data[2][3]);
  EXPECT_EQ(wp::address(&ctx, a, 10, 0, 0), &data[0][0]);
  EXPECT_FALSE(wp::faulted(&ctx));

  EXPECT_EQ(wp::address(&ctx, a, 17, 1, -1), nullptr);  // negative index
  EXPECT_TRUE(wp::faulted(&ctx));
  EXPECT_TRUE(wp::should_stop(&ctx));
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_INDEX_OUT_OF_BOUNDS);
  EXPECT_EQ(ctx.fault.line, 17);
  EXPECT_EQ(ctx.fault.dim, 1);
  EXPECT_EQ(ctx.fault.index, -1);
  EXPECT_EQ(ctx.fault.extent, 4);
  EXPECT_EQ(ctx.fault.array_ndim, 2);
  EXPECT_EQ(ctx.fault.shape[0], 3);
  EXPECT_EQ(ctx.fault.shape[1], 4);
  EXPECT_EQ(ctx.fault.shape[2], 0);

  // A later fault returns null too but leaves the first one in place.
  EXPECT_EQ(wp::address(&ctx, a, 99, 3, 0), nullptr);
  EXPECT_EQ(ctx.fault.line, 17);
  EXPECT_EQ(ctx.fault.dim, 1);

  wp::launch_ctx ctx2 = ZeroCtx();
  EXPECT_EQ(wp::address(&ctx2, a, 5, INT64_MAX, 0), nullptr);  // huge index: no overflow
  EXPECT_EQ(ctx2.fault.index, INT64_MAX);
  EXPECT_EQ(ctx2.fault.dim, 0);

  wp::launch_ctx ctx3 = ZeroCtx();
  ctx3.cancel = 1;
  EXPECT_TRUE(wp::should_stop(&ctx3));
  EXPECT_FALSE(wp::faulted(&ctx3));
}

TEST(LaunchTest, TidCoordsAreRowMajor) {
  wp::launch_bounds b{};
  b.ndim = 3;
  b.shape[0] = 2;
  b.shape[1] = 3;
  b.shape[2] = 5;
  b.size = 30;
  for (int64_t linear = 0; linear < 30; ++linear) {
    wp::int32 t[3];
    wp::tid_coords(b, linear, t, 3);
    EXPECT_EQ(t[0], linear / 15);
    EXPECT_EQ(t[1], (linear / 5) % 3);
    EXPECT_EQ(t[2], linear % 5);
  }
}

TEST(AtomicTest, ConcurrentAddsAreNotLost) {
  float f = 0;
  wp::int64 i = 0;
  double d = 0;
  wp::vec3f v = V(0, 0, 0);
  constexpr int kThreads = 4, kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int n = 0; n < kAdds; ++n) {
        wp::atomic_add(&f, 1.0f);
        wp::atomic_add(&i, wp::int64(3));
        wp::atomic_add(&d, 0.5);
        wp::atomic_add_n<float, 3>(&v, V(1, 2, -1));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(f, kThreads * kAdds);  // exact: small integers in float
  EXPECT_EQ(i, 3 * kThreads * kAdds);
  EXPECT_EQ(d, 0.5 * kThreads * kAdds);
  EXPECT_TRUE(wp::eq(v, V(kThreads * kAdds, 2 * kThreads * kAdds, -kThreads * kAdds)));
  EXPECT_EQ(wp::atomic_add(&f, 2.0f), kThreads * kAdds);  // returns the old value
}

// Every operation under contention, against what a serial run gives.
TEST(AtomicTest, EveryOperationIsAtomicAndReturnsTheOldValue) {
  constexpr int kThreads = 4, kOps = 5000;
  wp::int32 mn = 1 << 30, mx = -(1 << 30);
  float fmn = 1e30f, fmx = -1e30f;
  double dsub = 0;
  wp::uint32 bits_or = 0, bits_and = ~0u, bits_xor = 0;
  wp::uint64 cas_counter = 0;
  wp::half h = wp::float_to_half(0.0f);
  wp::int64 exch = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kOps; ++n) {
        int k = t * kOps + n;  // every value in [0, kThreads * kOps) once
        wp::atomic_min(&mn, k);
        wp::atomic_max(&mx, k);
        wp::atomic_min(&fmn, float(k) * 0.5f);
        wp::atomic_max(&fmx, float(k) * 0.5f);
        wp::atomic_sub(&dsub, 0.25);
        wp::atomic_or(&bits_or, 1u << (k % 32));
        wp::atomic_and(&bits_and, ~(1u << (k % 31)));
        wp::atomic_xor(&bits_xor, 1u << (k % 2));
        wp::atomic_exch(&exch, wp::int64(k));
        // An increment by compare-and-swap retries until it lands.
        for (wp::uint64 seen = cas_counter;;) {
          wp::uint64 old = wp::atomic_cas(&cas_counter, seen, seen + 1);
          if (old == seen) break;
          seen = old;
        }
        if (n < 256) wp::atomic_add(&h, wp::float_to_half(1.0f));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mn, 0);
  EXPECT_EQ(mx, kThreads * kOps - 1);
  EXPECT_EQ(fmn, 0.0f);
  EXPECT_EQ(fmx, float(kThreads * kOps - 1) * 0.5f);
  EXPECT_EQ(dsub, -0.25 * kThreads * kOps);
  EXPECT_EQ(bits_or, ~0u);
  EXPECT_EQ(bits_and, 1u << 31);
  EXPECT_EQ(bits_xor, 0u);  // each bit flipped an even number of times
  EXPECT_GE(exch, 0);
  EXPECT_LT(exch, kThreads * kOps);
  EXPECT_EQ(cas_counter, wp::uint64(kThreads) * kOps);
  EXPECT_EQ(wp::half_to_float(h), 256.0f * kThreads);  // exact in float16
  // Old values come back; cas stores only on a match.
  wp::int32 x = 5;
  EXPECT_EQ(wp::atomic_max(&x, 9), 5);
  EXPECT_EQ(wp::atomic_cas(&x, 8, 1), 9);
  EXPECT_EQ(x, 9);
  EXPECT_EQ(wp::atomic_cas(&x, 9, 1), 9);
  EXPECT_EQ(x, 1);
}

}  // namespace
