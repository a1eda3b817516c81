// Checks warpd's float32 exp on the CPU (runtime/native/warpd/native/exp.h)
// against long double expl for every float of [-104, 89] (outside it the
// result is 0 or inf) and prints the worst error in ulps, with subnormal
// results measured in units of the smallest subnormal. About a minute on 2
// cores:
//   g++ -O2 -march=native -ffp-contract=off -fopenmp -std=c++20 \
//       -Iruntime/native scripts/sweep_fast_exp.cc -o /tmp/sweep_fast_exp -lm
//   /tmp/sweep_fast_exp
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "warpd/native/core.h"
#include "warpd/native/exp.h"

static double UlpError(float got, long double want) {
  if (std::isinf(got) && want > 3.4028234663852886e38L) return 0;  // overflow: inf is right
  const float a = std::fabs(static_cast<float>(want));
  long double u = static_cast<long double>(std::nextafterf(a, INFINITY)) - a;
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / u);
}

int main() {
  double worst = 0;
  float worst_x = 0;
#pragma omp parallel
  {
    double w = 0;
    float wx = 0;
#pragma omp for schedule(dynamic, 65536)
    for (int64_t b = 0; b <= 0xffffffffLL; ++b) {
      const uint32_t bits = static_cast<uint32_t>(b);
      float x;
      std::memcpy(&x, &bits, 4);
      if (!(x >= -104.0f && x <= 89.0f)) continue;
      const double e = UlpError(wp::exp_f32(x), expl(static_cast<long double>(x)));
      if (e > w) {
        w = e;
        wx = x;
      }
    }
#pragma omp critical
    if (w > worst) {
      worst = w;
      worst_x = wx;
    }
  }
  std::printf("every float of [-104, 89]: exp within %.4f ulp (worst at %a)\n", worst, worst_x);
  return 0;
}
