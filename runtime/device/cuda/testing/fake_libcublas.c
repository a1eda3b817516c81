/* A stand-in for cuBLAS in tests without a GPU (runtime/device/cuda/cublas.h):
 * the stand-in driver's device memory is host memory, so a GEMM is computed
 * here, on the host, in double precision, and rounded to the operands' type.
 * It first synchronizes the stream (through the stand-in driver, found as
 * $WARPD_FAKE_LIBCUDA or the libcuda.so.1 already loaded), so the copies
 * and fills queued before it have landed; it returns once it is done, which
 * a real cuBLAS does not, harmlessly. Test-only.
 *
 * $WARPD_FAKE_CUBLAS_FAIL=<status> makes every GEMM fail with that status. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef CUresult (*GetProc)(const char*, void**, int, uint64_t, int*);
typedef CUresult (*StreamSync)(void*);

struct handle {
  void* stream;
};

static int gemms;
int warpd_fake_cublas_gemms(void) { return gemms; }

int cublasCreate_v2(struct handle** out) {
  *out = calloc(1, sizeof(struct handle));
  return *out ? 0 : 3; /* CUBLAS_STATUS_ALLOC_FAILED */
}

int cublasDestroy_v2(struct handle* h) {
  free(h);
  return 0;
}

int cublasSetStream_v2(struct handle* h, void* stream) {
  if (h == NULL) return 1; /* NOT_INITIALIZED */
  h->stream = stream;
  return 0;
}

static StreamSync stream_sync(void) {
  const char* path = getenv("WARPD_FAKE_LIBCUDA");
  void* lib = dlopen(path != NULL && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) return NULL;
  GetProc get = (GetProc)dlsym(lib, "cuGetProcAddress_v2");
  void* fn = NULL;
  int status = 0;
  if (get == NULL || get("cuStreamSynchronize", &fn, 12000, 0, &status) != 0) return NULL;
  return (StreamSync)fn;
}

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalize */
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t float_to_half(float f) { /* round to nearest even; no NaN payloads */
  uint32_t bits;
  memcpy(&bits, &f, 4);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const int32_t exp = (int32_t)((bits >> 23) & 0xffu) - 127 + 15;
  uint32_t man = bits & 0x7fffffu;
  if (((bits >> 23) & 0xffu) == 0xffu) return sign | 0x7c00u | (man ? 0x200u : 0);
  if (exp >= 31) return sign | 0x7c00u;
  if (exp <= 0) {
    if (exp < -10) return sign;
    man |= 0x800000u;
    const uint32_t shift = (uint32_t)(14 - exp);
    uint32_t h = man >> shift;
    const uint32_t rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return sign | (uint16_t)h;
  }
  uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
  const uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return sign | (uint16_t)h;
}

static double load(const void* p, long long i, int type) {
  if (type == 1) return ((const double*)p)[i];
  if (type == 2) return half_to_float(((const uint16_t*)p)[i]);
  return ((const float*)p)[i];
}

static void store(void* p, long long i, int type, double v) {
  if (type == 1) {
    ((double*)p)[i] = v;
  } else if (type == 2) {
    ((uint16_t*)p)[i] = float_to_half((float)v);
  } else {
    ((float*)p)[i] = (float)v;
  }
}

int cublasGemmStridedBatchedEx(struct handle* h, int transa, int transb, int m, int n, int k, const void* alpha,
                               const void* a, int a_type, int lda, long long stride_a, const void* b, int b_type,
                               int ldb, long long stride_b, const void* beta, void* c, int c_type, int ldc,
                               long long stride_c, int batch, int compute_type, int algo) {
  (void)algo;
  if (h == NULL) return 1;
  const char* fail = getenv("WARPD_FAKE_CUBLAS_FAIL");
  if (fail != NULL && *fail) return atoi(fail);
  if (a_type != b_type || a_type != c_type || (a_type != 0 && a_type != 1 && a_type != 2)) return 15;
  if ((a_type == 1) != (compute_type == 70) || (a_type != 1 && compute_type != 68)) return 15;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || ldc < (m > 1 ? m : 1)) return 7; /* INVALID_VALUE */
  if (lda < ((transa ? k : m) > 1 ? (transa ? k : m) : 1) || ldb < ((transb ? n : k) > 1 ? (transb ? n : k) : 1)) {
    return 7;
  }
  StreamSync sync = stream_sync();
  if (sync == NULL || sync(h->stream) != 0) return 13; /* EXECUTION_FAILED */
  const double al = a_type == 1 ? *(const double*)alpha : *(const float*)alpha;
  const double be = a_type == 1 ? *(const double*)beta : *(const float*)beta;
  for (int item = 0; item < batch; ++item) {
    const long long ao = item * stride_a, bo = item * stride_b, co = item * stride_c;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double sum = 0.0;
        for (int p = 0; p < k; ++p) {
          const double x = load(a, ao + (transa ? p + (long long)i * lda : i + (long long)p * lda), a_type);
          const double y = load(b, bo + (transb ? j + (long long)p * ldb : p + (long long)j * ldb), b_type);
          sum += x * y;
        }
        const long long at = co + i + (long long)j * ldc;
        store(c, at, c_type, al * sum + (be != 0.0 ? be * load(c, at, c_type) : 0.0));
      }
    }
  }
  gemms++;
  return 0;
}
