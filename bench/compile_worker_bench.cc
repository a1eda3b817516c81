// What running clang in a compile worker costs: the same cold compile (a
// one-kernel module's generated source, fresh each time so no cache helps)
// in this process and through a CompilePool, interleaved, medians side by
// side. Usage: build/bin/warpd-bench-compile [trials]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/backend/clang_compile.h"
#include "compiler/backend/compile_pool.h"

namespace {

// Shaped like codegen's output for an axpy kernel (docs/launch_abi.md).
std::string Source(int k) {
  return absl::StrCat(R"(
#include "warpd/native/builtin.h"
struct wpa_axpy { wp::array_t<wp::float32> p_x; wp::array_t<wp::float32> p_y; wp::float32 p_a; };
static WP_DEVICE_FUNC void wpb_axpy(wp::launch_ctx* ctx, const wpa_axpy& args, wp::int64 _tid) {
  wp::int32 i = (wp::int32)_tid;
  wp::float32* xp = wp::address(ctx, args.p_x, 3, (wp::int64)i); if (!xp) return;
  wp::float32* yp = wp::address(ctx, args.p_y, 3, (wp::int64)i); if (!yp) return;
  *yp = wp::add(wp::mul(args.p_a, *xp), *yp) + )", k, R"(.0f;
}
extern "C" void wpk_axpy_cpu(wp::launch_ctx* ctx, const void* args, wp::int64 begin, wp::int64 end) {
  for (wp::int64 t = begin; t < end; ++t) wpb_axpy(ctx, *(const wpa_axpy*)args, t);
}
)");
}

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace warpd::compiler;
  const int trials = argc > 1 ? std::atoi(argv[1]) : 15;
  std::string self = argv[0];
  CompilePool::Options options;
  options.worker_path = self.substr(0, self.rfind('/') + 1) + "warpd-compile-worker";
  options.workers = 1;
  auto pool = CompilePool::Create(options);
  if (!pool.ok()) {
    std::fprintf(stderr, "%s\n", std::string(pool.status().message()).c_str());
    return 1;
  }
  const CpuTarget target = SelectCpuTarget(DetectHostCpu());
  // Warm both sides once (first-use costs are not per compile).
  (void)CompileCppToObject(target, Source(-1), "warm");
  (void)(*pool)->Compile(target, Source(-2), "warm", "warm-up");
  std::vector<double> in_process, worker;
  for (int k = 0; k < trials; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    if (!CompileCppToObject(target, Source(2 * k), "bench").ok()) return 1;
    in_process.push_back(Ms(t0));
    t0 = std::chrono::steady_clock::now();
    if (!(*pool)->Compile(target, Source(2 * k + 1), "bench", "bench").ok()) return 1;
    worker.push_back(Ms(t0));
  }
  const double a = Median(in_process), b = Median(worker);
  std::printf("cold compile, in process          %8.2f ms\n", a);
  std::printf("cold compile, in a compile worker %8.2f ms  (%+.2f ms, %.2fx)\n", b, b - a, b / a);
  return 0;
}
