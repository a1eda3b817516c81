/* A stand-in for libcuda.so.1 in tests without a GPU (built by the tests,
 * never installed). It exports cuGetProcAddress_v2 (or, built with
 * FAKE_CUDA_OLD_PROC_ADDRESS, only the CUDA 11.3 cuGetProcAddress) and hands
 * out the entry points runtime/device/cuda/driver_api.h lists. Behaviour is
 * read from the environment at each call:
 *   WARPD_FAKE_CUDA_DEVICES        number of GPUs (default 2; 0: cuInit says
 *                                  CUDA_ERROR_NO_DEVICE, as the real driver)
 *   WARPD_FAKE_CUDA_VERSION        cuDriverGetVersion (default 13000)
 *   WARPD_FAKE_CUDA_INIT_ERROR     CUresult cuInit returns (default 0)
 *   WARPD_FAKE_CUDA_RETAIN_ERROR   CUresult cuDevicePrimaryCtxRetain returns
 *   WARPD_FAKE_CUDA_MISSING        an entry point cuGetProcAddress lacks
 * Device i is "Fake GPU i", sm_90 for even i and sm_86 for odd, 132 or 84
 * SMs, (80 + i) GiB, UUID bytes a0+i 01 02 ... 0f. Tests read the primary
 * context reference counts and the API versions asked for through the
 * warpd_fake_cuda_* functions. Not a driver: it runs nothing. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct {
  unsigned char bytes[16];
} CUuuid;

enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  NOT_INITIALIZED = 3,
  NOT_SUPPORTED = 801,
  NO_DEVICE = 100,
  INVALID_DEVICE = 101,
  NOT_FOUND = 500,
  MAX_DEVICES = 8,
};

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

static int device_count(void) {
  int n = env_int("WARPD_FAKE_CUDA_DEVICES", 2);
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

static atomic_int initialized;
static atomic_int retained[MAX_DEVICES];
static atomic_int min_version_asked = 1 << 30, max_version_asked;
static char contexts[MAX_DEVICES];  /* their addresses are the CUcontexts */

int warpd_fake_cuda_retained(int ordinal) {
  return ordinal >= 0 && ordinal < MAX_DEVICES ? atomic_load(&retained[ordinal]) : -1;
}
int warpd_fake_cuda_min_version_asked(void) { return atomic_load(&min_version_asked); }
int warpd_fake_cuda_max_version_asked(void) { return atomic_load(&max_version_asked); }

static CUresult check_device(CUdevice dev) {
  if (!atomic_load(&initialized)) return NOT_INITIALIZED;
  return dev >= 0 && dev < device_count() ? SUCCESS : INVALID_DEVICE;
}

static CUresult fake_cuGetErrorName(CUresult error, const char** str) {
  static _Thread_local char buf[64];
  if (error < 0 || error > 999) {
    *str = NULL;
    return INVALID_VALUE;
  }
  snprintf(buf, sizeof(buf), "FAKE_CUDA_ERROR_%d", error);
  *str = buf;
  return SUCCESS;
}

static CUresult fake_cuGetErrorString(CUresult error, const char** str) {
  static _Thread_local char buf[64];
  if (error < 0 || error > 999) {
    *str = NULL;
    return INVALID_VALUE;
  }
  snprintf(buf, sizeof(buf), "fake driver text for %d", error);
  *str = buf;
  return SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int* version) {
  *version = env_int("WARPD_FAKE_CUDA_VERSION", 13000);
  return SUCCESS;
}

static CUresult fake_cuInit(unsigned int flags) {
  int err = env_int("WARPD_FAKE_CUDA_INIT_ERROR", 0);
  if (flags != 0) return INVALID_VALUE;
  if (err != 0) return err;
  if (device_count() == 0) return NO_DEVICE;
  atomic_store(&initialized, 1);
  return SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int* count) {
  if (!atomic_load(&initialized)) return NOT_INITIALIZED;
  *count = device_count();
  return SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice* dev, int ordinal) {
  CUresult r = check_device(ordinal);
  if (r == SUCCESS) *dev = ordinal;
  return r;
}

static CUresult fake_cuDeviceGetName(char* name, int len, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r == SUCCESS) snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return r;
}

static CUresult fake_cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = (unsigned char)i;
  uuid->bytes[0] = (unsigned char)(0xa0 + dev);
  return SUCCESS;
}

/* The pre-11.4 form: without MIG awareness. Returns all zeros, so a caller
 * that asked for the wrong version sees it. */
static CUresult fake_cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r == SUCCESS) memset(uuid->bytes, 0, sizeof(uuid->bytes));
  return r;
}

static CUresult fake_cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  switch (attribute) {
    case 16: *value = dev % 2 == 0 ? 132 : 84; return SUCCESS;   /* MULTIPROCESSOR_COUNT */
    case 75: *value = dev % 2 == 0 ? 9 : 8; return SUCCESS;      /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = dev % 2 == 0 ? 0 : 6; return SUCCESS;      /* COMPUTE_CAPABILITY_MINOR */
    default: return INVALID_VALUE;
  }
}

static CUresult fake_cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r == SUCCESS) *bytes = (size_t)(80 + dev) << 30;
  return r;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  CUresult r = check_device(dev);
  int err = env_int("WARPD_FAKE_CUDA_RETAIN_ERROR", 0);
  if (r != SUCCESS) return r;
  if (err != 0) return err;
  atomic_fetch_add(&retained[dev], 1);
  *ctx = (CUcontext)(void*)&contexts[dev];
  return SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  if (atomic_fetch_sub(&retained[dev], 1) <= 0) {
    atomic_fetch_add(&retained[dev], 1);
    return 201; /* CUDA_ERROR_INVALID_CONTEXT: released more than retained */
  }
  return SUCCESS;
}

struct entry {
  const char* name;
  int since;  /* the CUDA version of this variant */
  void* fn;
};

/* Newest variant first within one name. */
static const struct entry entries[] = {
    {"cuGetErrorName", 6000, (void*)fake_cuGetErrorName},
    {"cuGetErrorString", 6000, (void*)fake_cuGetErrorString},
    {"cuDriverGetVersion", 2020, (void*)fake_cuDriverGetVersion},
    {"cuInit", 2000, (void*)fake_cuInit},
    {"cuDeviceGetCount", 2000, (void*)fake_cuDeviceGetCount},
    {"cuDeviceGet", 2000, (void*)fake_cuDeviceGet},
    {"cuDeviceGetName", 2000, (void*)fake_cuDeviceGetName},
    {"cuDeviceGetUuid", 11040, (void*)fake_cuDeviceGetUuid_v2},
    {"cuDeviceGetUuid", 9020, (void*)fake_cuDeviceGetUuid},
    {"cuDeviceGetAttribute", 2000, (void*)fake_cuDeviceGetAttribute},
    {"cuDeviceTotalMem", 3020, (void*)fake_cuDeviceTotalMem_v2},
    {"cuDevicePrimaryCtxRetain", 7000, (void*)fake_cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", 11000, (void*)fake_cuDevicePrimaryCtxRelease_v2},
};

static CUresult lookup(const char* symbol, void** pfn, int version, int* status) {
  const char* missing = getenv("WARPD_FAKE_CUDA_MISSING");
  int found_older = 0;
  int v;
  *pfn = NULL;
  while ((v = atomic_load(&min_version_asked)) > version &&
         !atomic_compare_exchange_weak(&min_version_asked, &v, version)) {
  }
  while ((v = atomic_load(&max_version_asked)) < version &&
         !atomic_compare_exchange_weak(&max_version_asked, &v, version)) {
  }
  if (missing == NULL || strcmp(missing, symbol) != 0) {
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
      if (strcmp(entries[i].name, symbol) != 0) continue;
      if (entries[i].since <= version) {
        *pfn = entries[i].fn;
        if (status) *status = 0;
        return SUCCESS;
      }
      found_older = 1;
    }
  }
  if (status) *status = found_older ? 2 : 1;
  return NOT_FOUND;
}

#ifdef FAKE_CUDA_OLD_PROC_ADDRESS
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  (void)flags;
  return lookup(symbol, pfn, version, NULL);
}
#else
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  (void)flags;
  return lookup(symbol, pfn, version, status);
}
#endif
