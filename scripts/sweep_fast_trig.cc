// Checks the float path of warpd's float32 sin and cos on the CPU
// (runtime/native/warpd/native/trig.h) against long double sinl/cosl for
// every float x with |x| <= wp::kFastTrigLimit, both signs, and prints the
// worst error in ulps (trig.h states the bound; scalar_math_test samples
// the same range in CI); and that sincos_lanes' small-argument shortcut gives
// the full reduction's bits for every float it takes (exit status 1 if not). About 2 minutes on 2 cores:
//   g++ -O2 -march=native -ffp-contract=off -fopenmp -std=c++20 \
//       -Iruntime/native scripts/sweep_fast_trig.cc -o /tmp/sweep_fast_trig -lm
//   /tmp/sweep_fast_trig
// (-march=native: the float path needs FMA; -ffp-contract=off as warpd's
// JIT compiles it.)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <initializer_list>
#include "warpd/native/core.h"
#include "warpd/native/trig.h"
static double ulp_err(float got, long double want) {
  float a = std::fabs((float)want);
  long double u = (long double)std::nextafterf(a, INFINITY) - a;
  return (double)(std::fabs((long double)got - want) / u);
}
int main() {
  uint32_t lim; float limit = wp::kFastTrigLimit; memcpy(&lim, &limit, 4);
  double ms = 0, mc = 0;
  unsigned long long small_mismatches = 0;
  #pragma omp parallel for reduction(max:ms,mc) reduction(+:small_mismatches) schedule(dynamic, 65536)
  for (uint32_t b = 0; b <= lim; ++b) {
    float x; memcpy(&x, &b, 4);
    for (float y : {x, -x}) {
      auto d = wp::trig_detail::reduce_f(y);
      double es = ulp_err(wp::trig_detail::sin_fast(d), sinl((long double)y));
      double ec = ulp_err(wp::trig_detail::cos_fast(d), cosl((long double)y));
      if (es > ms) ms = es;
      if (ec > mc) mc = ec;
      if (std::fabs(y) <= wp::trig_detail::kSmallTrigLimit) {
        // The small-argument shortcut of sincos_lanes: the same bits.
        auto e = wp::trig_detail::reduce_small_f(y);
        float a = wp::trig_detail::sin_fast(d), b = wp::trig_detail::sin_fast(e);
        float a2 = wp::trig_detail::cos_fast(d), b2 = wp::trig_detail::cos_fast(e);
        if (memcmp(&a, &b, 4) != 0 || memcmp(&a2, &b2, 4) != 0) small_mismatches++;
      }
    }
  }
  printf("every float |x| <= %g: sin %.4f ulp, cos %.4f ulp\n", limit, ms, mc);
  printf("small-argument shortcut (|x| <= %g): %llu floats differ from the full reduction\n",
         wp::trig_detail::kSmallTrigLimit, small_mismatches);
  return small_mismatches != 0;
}
