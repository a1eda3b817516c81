/* Native reference loops for bench/run.py (see bench/native.py).
 *
 * The same math as the kernels in bench/kernels.py, on plain float buffers,
 * all cores through OpenMP. Built at run time twice from this one file:
 *   -DBENCH_SIMD  gcc -O3 -march=native -fopenmp -fno-math-errno
 *                 -fno-builtin-sinf -fno-builtin-cosf: loops are
 *                 vectorized (#pragma omp simd) and sinf/cosf go to glibc's
 *                 vector math library (libmvec; not builtins, so that gcc
 *                 does not fuse them into sincosf, which has no vector form);
 *   (plain)       gcc -O3 -march=native -fopenmp: scalar libm calls.
 * Every function takes its length as a long and returns nothing. */
#include <math.h>

#ifdef BENCH_SIMD
/* glibc's <math.h> declares the libmvec variants only under -ffast-math;
 * this declares them for sinf and cosf alone, so that nothing else of
 * -ffast-math changes the results. */
__attribute__((simd("notinbranch"))) float sinf(float);
__attribute__((simd("notinbranch"))) float cosf(float);
#define BENCH_LOOP _Pragma("omp parallel for simd schedule(static)")
#define BENCH_INNER _Pragma("omp simd")
#else
#define BENCH_LOOP _Pragma("omp parallel for schedule(static)")
#define BENCH_INNER
#endif

void bench_saxpy(long n, float a, const float* x, float* y) {
  BENCH_LOOP
  for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

/* c[i] = dot(a[i], b[i]) + length(a[i]); a and b are n x 3, row-major. */
void bench_vec3(long n, const float* a, const float* b, float* c) {
  BENCH_LOOP
  for (long i = 0; i < n; ++i) {
    float ax = a[3 * i], ay = a[3 * i + 1], az = a[3 * i + 2];
    c[i] = ax * b[3 * i] + ay * b[3 * i + 1] + az * b[3 * i + 2] + sqrtf(ax * ax + ay * ay + az * az);
  }
}

/* Each element: iters times v = sin(v) * 0.5 + cos(v) * 0.25. Blocks of
 * elements, iterations outside: the inner loop over a block is the one that
 * is vectorized (gcc does not vectorize an outer loop around this one). */
void bench_sincos(long n, int iters, float* x) {
  enum { kBlock = 1024 };
#pragma omp parallel for schedule(static)
  for (long base = 0; base < n; base += kBlock) {
    long m = n - base < kBlock ? n - base : kBlock;
    float* v = x + base;
    for (int k = 0; k < iters; ++k) {
      BENCH_INNER
      for (long i = 0; i < m; ++i) v[i] = sinf(v[i]) * 0.5f + cosf(v[i]) * 0.25f;
    }
  }
}
