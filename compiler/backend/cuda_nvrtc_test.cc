#include "compiler/backend/cuda_nvrtc.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace warpd::compiler {
namespace {

// A hand-written kernel in the shape codegen emits: one argument struct, a
// per-thread body that stops at the first fault, and the CUDA entry point with
// a grid-stride loop (runtime/native/warpd/native/launch.h documents the ABI).
constexpr char kKernel[] = R"cuda(
#include "warpd/native/builtin.h"

struct wpa_x {
  wp::array_t<wp::float32> x;
  wp::array_t<wp::vec3f> v;
  wp::array_t<wp::int32> counts;
  wp::array_t<wp::vec3f> sum;
  wp::array_t<wp::float32> out;  // 2-D
  wp::array_t<wp::float64> acc;
  wp::int32 divisor;
  wp::float32 scale;
};

static __device__ void wpk_x_body(wp::launch_ctx* ctx, const wpa_x& args, wp::int64 linear) {
  wp::int32 tid[1];
  wp::tid_coords(ctx->bounds, linear, tid, 1);
  wp::float32* px = wp::address(ctx, args.x, 3, tid[0]);
  if (!px) return;
  wp::vec3f* pv = wp::address(ctx, args.v, 4, tid[0]);
  if (!pv) return;
  wp::vec3f a = *pv;
  wp::vec3f b = wp::vec3f{{*px, 1.0f, args.scale}};
  wp::vec3f n = wp::normalize(wp::cross(a, b));
  wp::float32 d = wp::add(wp::dot(n, a), wp::length(b));
  wp::int32 q = wp::div(wp::cast<wp::int32>(wp::mul(d, 100.0f)), args.divisor);
  wp::int32 r = wp::mod(q, args.divisor);
  for (wp::int32 i = 0; i < r; i = wp::add(i, 1)) {
    if (wp::should_stop(ctx)) return;  // loop back-edge check
    wp::int32* pc = wp::address(ctx, args.counts, 9, (wp::int64)i);
    if (!pc) return;
    wp::atomic_add(pc, 1);
  }
  wp::vec3f* ps = wp::address(ctx, args.sum, 13, 0);
  if (!ps) return;
  wp::atomic_add_n<wp::float32, 3>(ps, wp::mul(n, args.scale));
  wp::float32* po = wp::address(ctx, args.out, 16, tid[0], wp::cast<wp::int64>(r));
  if (!po) return;
  wp::atomic_add(po, d);
  wp::half h = wp::cast<wp::half>(d);
  *po = wp::add(*po, wp::cast<wp::float32>(h));
  wp::float64* pa = wp::address(ctx, args.acc, 20, 0);
  if (!pa) return;
  wp::atomic_add(pa, wp::cast<wp::float64>(wp::sin(d)));
}

extern "C" __global__ void wpk_x_cuda(wp::launch_ctx* ctx, wpa_x args) {
  const wp::int64 size = ctx->bounds.size;
  const wp::int64 stride = (wp::int64)gridDim.x * blockDim.x;
  for (wp::int64 i = (wp::int64)blockIdx.x * blockDim.x + threadIdx.x; i < size; i += stride) {
    if (wp::faulted(ctx)) return;
    wpk_x_body(ctx, args, i);
  }
}
)cuda";

constexpr int kArch = 90;

// Fails the calling test when NVRTC cannot be loaded: a build with CUDA
// requires the toolkit's NVRTC (CMakeLists.txt), so this is never skipped.
#define REQUIRE_NVRTC(var)                                                     \
  absl::StatusOr<std::shared_ptr<Nvrtc>> var##_or = Nvrtc::Load();             \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status().message();                   \
  const Nvrtc& var = **var##_or;                                               \
  (void)var

TEST(NvrtcTest, LoadReportsVersionAndArchs) {
  REQUIRE_NVRTC(nvrtc);
  EXPECT_TRUE(std::regex_match(nvrtc.version(), std::regex(R"(\d+\.\d+)"))) << nvrtc.version();
  EXPECT_FALSE(nvrtc.library().empty());
  const std::vector<int>& archs = nvrtc.supported_archs();
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  EXPECT_TRUE(std::binary_search(archs.begin(), archs.end(), kArch));
  std::printf("NVRTC %s from %s\n", nvrtc.version().c_str(), nvrtc.library().c_str());
}

TEST(NvrtcTest, LoadFromMissingLibrariesNamesEveryCandidate) {
  absl::StatusOr<std::shared_ptr<Nvrtc>> nvrtc =
      Nvrtc::LoadFrom({"/nonexistent/libnvrtc.so.99", "libc.so.6"});
  ASSERT_FALSE(nvrtc.ok());
  EXPECT_EQ(nvrtc.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(nvrtc.status().message());
  EXPECT_TRUE(absl::StartsWith(message, "NVRTC not found: tried ")) << message;
  EXPECT_TRUE(absl::StrContains(message, "/nonexistent/libnvrtc.so.99")) << message;
  // libc opens but is not NVRTC.
  EXPECT_TRUE(absl::StrContains(message, "libc.so.6 (no symbol nvrtc")) << message;
}

TEST(NvrtcTest, KernelCompilesToPtxThatPtxasAccepts) {
  REQUIRE_NVRTC(nvrtc);
  absl::StatusOr<std::string> ptx = nvrtc.CompileToPtx(kKernel, "wpk_x.cu", kArch);
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_TRUE(absl::StrContains(*ptx, ".entry wpk_x_cuda")) << *ptx;
  EXPECT_TRUE(absl::StrContains(*ptx, ".target sm_90")) << *ptx;
  EXPECT_EQ(ptx->find('\0'), std::string::npos);
  // The float and vector atomics lowered to hardware atomics, not CAS loops.
  EXPECT_TRUE(absl::StrContains(*ptx, ".add.f32")) << *ptx;
  EXPECT_TRUE(absl::StrContains(*ptx, ".add.f64")) << *ptx;

  absl::Status verified = VerifyPtx(*ptx, kArch);
  EXPECT_TRUE(verified.ok()) << verified;  // ptxas is required with CUDA (CMakeLists.txt)
}

TEST(NvrtcTest, CompileTime) {
  REQUIRE_NVRTC(nvrtc);
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<std::string> ptx = nvrtc.CompileToPtx(kKernel, "wpk_x.cu", kArch);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    ASSERT_TRUE(ptx.ok()) << ptx.status();
  }
  const double first = ms[0];
  std::vector<double> warm(ms.begin() + 1, ms.end());
  std::sort(warm.begin(), warm.end());
  std::printf("NVRTC compile of wpk_x: first %.1f ms, then median %.1f ms (min %.1f)\n", first,
              warm[warm.size() / 2], warm[0]);
  RecordProperty("first_compile_ms", static_cast<int>(first));
  RecordProperty("warm_compile_ms", static_cast<int>(warm[warm.size() / 2]));
}

TEST(NvrtcTest, BrokenSourceIsInternalWithTheLog) {
  REQUIRE_NVRTC(nvrtc);
  constexpr char kBroken[] = R"cuda(
#include "warpd/native/builtin.h"
extern "C" __global__ void wpk_broken_cuda(wp::launch_ctx* ctx) {
  wp::float32 y = wp::no_such_builtin(1.0f);
}
)cuda";
  absl::StatusOr<std::string> ptx = nvrtc.CompileToPtx(kBroken, "broken.cu", kArch);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.status().code(), absl::StatusCode::kInternal);
  const std::string message(ptx.status().message());
  EXPECT_TRUE(absl::StrContains(message, "broken.cu(4)")) << message;  // file(line) from the log
  EXPECT_TRUE(absl::StrContains(message, "no_such_builtin")) << message;
  EXPECT_TRUE(absl::StrContains(message, "compute_90")) << message;
}

TEST(NvrtcTest, UnsupportedArchIsInvalidArgument) {
  REQUIRE_NVRTC(nvrtc);
  absl::StatusOr<std::string> ptx = nvrtc.CompileToPtx(kKernel, "wpk_x.cu", 12);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.status().code(), absl::StatusCode::kInvalidArgument) << ptx.status();
  EXPECT_TRUE(absl::StrContains(ptx.status().message(), "compute_12")) << ptx.status();
}

TEST(NvrtcTest, ConcurrentCompilesAgree) {
  REQUIRE_NVRTC(nvrtc);
  constexpr int kThreads = 4;
  std::vector<absl::StatusOr<std::string>> results(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { results[t] = nvrtc.CompileToPtx(kKernel, "wpk_x.cu", kArch); });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(results[t].ok()) << results[t].status();
    EXPECT_EQ(*results[t], *results[0]);
  }
}

TEST(VerifyPtxTest, BadPtxIsInternalWithPtxasOutput) {
  REQUIRE_NVRTC(nvrtc);
  constexpr char kBadPtx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry bad() {\n  mov.u32 %r1, 1;\n  ret;\n}\n";  // %r1 is undeclared
  absl::Status status = VerifyPtx(kBadPtx, kArch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "-arch=sm_90")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "%r1")) << status;  // ptxas's own words
}

TEST(VerifyPtxTest, ExplicitPtxasThatDoesNotExistIsFailedPrecondition) {
  ::setenv("WARPD_PTXAS", "/nonexistent/ptxas", 1);
  absl::Status status = VerifyPtx(".version 8.0\n", kArch);
  ::unsetenv("WARPD_PTXAS");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "/nonexistent/ptxas")) << status;
}

}  // namespace
}  // namespace warpd::compiler
