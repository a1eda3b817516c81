// Checks the float path of warpd's float32 sin and cos on the CPU
// (runtime/native/warpd/native/trig.h) against long double sinl/cosl for
// every float x with |x| <= wp::kFastTrigLimit, both signs, and prints the
// worst error in ulps (trig.h states the bound; scalar_math_test samples
// the same range in CI). About 2 minutes on 2 cores:
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
  #pragma omp parallel for reduction(max:ms,mc) schedule(dynamic, 65536)
  for (uint32_t b = 0; b <= lim; ++b) {
    float x; memcpy(&x, &b, 4);
    for (float y : {x, -x}) {
      auto d = wp::trig_detail::reduce_f(y);
      double es = ulp_err(wp::trig_detail::sin_fast(d), sinl((long double)y));
      double ec = ulp_err(wp::trig_detail::cos_fast(d), cosl((long double)y));
      if (es > ms) ms = es;
      if (ec > mc) mc = ec;
    }
  }
  printf("every float |x| <= %g: sin %.4f ulp, cos %.4f ulp\n", limit, ms, mc);
}
