/* A stand-in for libcuda.so.1, for the GPU check runner's self-test on a
 * machine without a GPU (scripts/gpu-prepare.sh). It is NOT a CUDA driver
 * and proves nothing about a GPU: it lets scripts/gpu_check.py run its whole
 * path (device query, module load with log buffers, allocations, argument
 * blocks, launch_ctx, launches, copies, comparisons) so that the one run on a
 * lent GPU machine is not spent on a bug in the runner.
 *
 * Device memory is host memory (a device pointer is the host address), and
 * it is checked: copies and frees must stay inside one allocation, a launch's
 * context and by-address argument block must be device (or host-mapped)
 * memory. A module is the PTX text; cuModuleGetFunction finds `.entry NAME(`
 * in it and reads its parameter declarations, and a launch copies the
 * parameter bytes as the PTX declares them and runs the kernel's CPU entry
 * (wpk_K_cpu, from the same generated source, compiled into the shared
 * library named by $FAKE_CUDA_KERNELS) on its own thread over
 * [0, launch_ctx.bounds.size), so cuStreamQuery sees it running and a
 * host-mapped cancel flag stops it. $FAKE_CUDA_FAIL_LOAD makes every module
 * load fail with a message in the JIT error log buffer.
 *
 * Only what the runner calls exists; everything is serialized by one mutex
 * except the kernels themselves. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct FakeContext* CUcontext;
typedef struct FakeModule* CUmodule;
typedef struct FakeFunction* CUfunction;
typedef struct FakeStream* CUstream;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kInvalidPtx = 218,
  kInvalidHandle = 400,
  kNotFound = 500,
  kNotReady = 600,
};

struct FakeContext {
  int unused;
};
struct FakeModule {
  char* ptx;
  void* kernels;
};
#define kMaxParams 8
struct FakeFunction {
  struct FakeModule* module;
  void (*cpu_entry)(void* ctx, const void* args, int64_t begin, int64_t end);
  int params;
  unsigned long long param_bytes[kMaxParams];
  int param_is_u64[kMaxParams];
};
struct FakeStream {
  int unused;
};

struct Allocation {
  uintptr_t base;
  size_t size;
  int host;  /* cuMemHostAlloc */
  unsigned flags;
  struct Allocation* next;
};

struct Job {
  pthread_t thread;
  struct FakeStream* stream;
  struct FakeFunction* fn;
  void* ctx;
  void* args;
  void* param_copy;
  int done;  /* atomic */
  struct Job* next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static struct FakeContext g_primary;
static CUcontext g_current;
static struct Allocation* g_allocations;
static struct Job* g_jobs;

static void Note(const char* what) { fprintf(stderr, "fake libcuda: %s\n", what); }

static struct Allocation* FindAllocation(uintptr_t p, size_t n) {
  for (struct Allocation* a = g_allocations; a; a = a->next)
    if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
  return NULL;
}

/* Waits for and forgets the jobs of `stream` (NULL: all). Called with g_mu
 * held; the kernels do not take it. */
static void JoinJobs(struct FakeStream* stream) {
  struct Job** link = &g_jobs;
  while (*link) {
    struct Job* j = *link;
    if (stream && j->stream != stream) {
      link = &j->next;
      continue;
    }
    pthread_join(j->thread, NULL);
    *link = j->next;
    free(j->param_copy);
    free(j);
  }
}

static CUresult Ready(int need_context) {
  if (!g_initialized) return kNotInitialized;
  if (need_context && g_current == NULL) return kInvalidContext;
  return kSuccess;
}

CUresult cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  g_initialized = 1;
  return kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = 13000;
  return kSuccess;
}

CUresult cuDeviceGetCount(int* count) {
  if (Ready(0)) return Ready(0);
  *count = 1;
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (Ready(0)) return Ready(0);
  if (ordinal != 0) return kInvalidDevice;
  *device = 0;
  return kSuccess;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (Ready(0)) return Ready(0);
  if (device != 0) return kInvalidDevice;
  if (!name || len <= 0) return kInvalidValue;
  snprintf(name, (size_t)len, "warpd fake CUDA driver (kernels run on the CPU)");
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (Ready(0)) return Ready(0);
  if (device != 0) return kInvalidDevice;
  switch (attribute) {
    case 75: *value = 9; return kSuccess;   /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = 0; return kSuccess;   /* COMPUTE_CAPABILITY_MINOR */
    case 16: *value = 1; return kSuccess;   /* MULTIPROCESSOR_COUNT */
    case 1: *value = 1024; return kSuccess; /* MAX_THREADS_PER_BLOCK */
    default: return kInvalidValue;
  }
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (Ready(0)) return Ready(0);
  if (device != 0) return kInvalidDevice;
  *bytes = (size_t)1 << 30;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (Ready(0)) return Ready(0);
  if (device != 0) return kInvalidDevice;
  *ctx = &g_primary;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  if (Ready(0)) return Ready(0);
  return device == 0 ? kSuccess : kInvalidDevice;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (Ready(0)) return Ready(0);
  if (ctx != NULL && ctx != &g_primary) return kInvalidContext;
  g_current = ctx;
  return kSuccess;
}

CUresult cuCtxSynchronize(void) {
  if (Ready(1)) return Ready(1);
  pthread_mutex_lock(&g_mu);
  JoinJobs(NULL);
  pthread_mutex_unlock(&g_mu);
  return kSuccess;
}

static CUresult Allocate(uintptr_t* out, size_t n, int host, unsigned flags) {
  if (Ready(1)) return Ready(1);
  if (n == 0 || !out) return kInvalidValue;
  void* p = malloc(n);
  struct Allocation* a = malloc(sizeof(*a));
  if (!p || !a) {
    free(p);
    free(a);
    return kOutOfMemory;
  }
  memset(p, 0xCD, n); /* device memory is not zeroed */
  a->base = (uintptr_t)p;
  a->size = n;
  a->host = host;
  a->flags = flags;
  pthread_mutex_lock(&g_mu);
  a->next = g_allocations;
  g_allocations = a;
  pthread_mutex_unlock(&g_mu);
  *out = (uintptr_t)p;
  return kSuccess;
}

static CUresult Free(uintptr_t p, int host) {
  if (Ready(1)) return Ready(1);
  pthread_mutex_lock(&g_mu);
  JoinJobs(NULL);
  for (struct Allocation** link = &g_allocations; *link; link = &(*link)->next) {
    struct Allocation* a = *link;
    if (a->base == p && a->host == host) {
      *link = a->next;
      pthread_mutex_unlock(&g_mu);
      free((void*)a->base);
      free(a);
      return kSuccess;
    }
  }
  pthread_mutex_unlock(&g_mu);
  Note("free of an address that is not an allocation's start");
  return kInvalidValue;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  uintptr_t p = 0;
  CUresult r = Allocate(&p, bytes, 0, 0);
  if (r == kSuccess) *dptr = p;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) { return Free((uintptr_t)dptr, 0); }

CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned flags) {
  uintptr_t p = 0;
  CUresult r = Allocate(&p, bytes, 1, flags);
  if (r == kSuccess) *pp = (void*)p;
  return r;
}

CUresult cuMemFreeHost(void* p) { return Free((uintptr_t)p, 1); }

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned flags) {
  if (Ready(1)) return Ready(1);
  if (flags != 0) return kInvalidValue;
  pthread_mutex_lock(&g_mu);
  struct Allocation* a = FindAllocation((uintptr_t)p, 1);
  const int mapped = a && a->host && (a->flags & 0x02); /* CU_MEMHOSTALLOC_DEVICEMAP */
  pthread_mutex_unlock(&g_mu);
  if (!mapped) {
    Note("cuMemHostGetDevicePointer of memory not allocated with CU_MEMHOSTALLOC_DEVICEMAP");
    return kInvalidValue;
  }
  *dptr = (uintptr_t)p;
  return kSuccess;
}

static CUresult Copy(void* dst, const void* src, size_t n, uintptr_t device, size_t device_n) {
  if (Ready(1)) return Ready(1);
  pthread_mutex_lock(&g_mu);
  JoinJobs(NULL); /* the legacy default stream waits for earlier work */
  struct Allocation* a = FindAllocation(device, device_n);
  pthread_mutex_unlock(&g_mu);
  if (!a || (a->host && !(a->flags & 0x02))) {
    Note("copy outside device memory");
    return kInvalidValue;
  }
  memcpy(dst, src, n);
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return Copy((void*)(uintptr_t)dst, src, n, (uintptr_t)dst, n);
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return Copy(dst, (const void*)(uintptr_t)src, n, (uintptr_t)src, n);
}

/* Option numbers of CUjit_option. */
enum { kInfoLog = 3, kInfoLogSize = 4, kErrorLog = 5, kErrorLogSize = 6 };

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned n, int* options, void** values) {
  if (Ready(1)) return Ready(1);
  if (!module || !image || (n && (!options || !values))) return kInvalidValue;
  char* error_log = NULL;
  size_t error_size = 0;
  int error_size_index = -1;
  char* info_log = NULL;
  size_t info_size = 0;
  for (unsigned i = 0; i < n; ++i) {
    switch (options[i]) {
      case kInfoLog: info_log = values[i]; break;
      case kInfoLogSize: info_size = (size_t)(uintptr_t)values[i]; break;
      case kErrorLog: error_log = values[i]; break;
      case kErrorLogSize: error_size = (size_t)(uintptr_t)values[i]; error_size_index = (int)i; break;
      default: break;
    }
  }
  const char* text = image;
  if (getenv("FAKE_CUDA_FAIL_LOAD") || !strstr(text, ".entry ") || !strstr(text, ".target sm_")) {
    const char* why = getenv("FAKE_CUDA_FAIL_LOAD") ? "ptxas fatal   : fake rejection (FAKE_CUDA_FAIL_LOAD is set)"
                                                    : "ptxas fatal   : not PTX with an entry";
    if (error_log && error_size) {
      snprintf(error_log, error_size, "%s", why);
      if (error_size_index >= 0) values[error_size_index] = (void*)(uintptr_t)(strlen(error_log) + 1);
    }
    return kInvalidPtx;
  }
  const char* lib = getenv("FAKE_CUDA_KERNELS");
  void* kernels = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!kernels) {
    if (error_log && error_size)
      snprintf(error_log, error_size, "fake: cannot open $FAKE_CUDA_KERNELS (%s): %s", lib ? lib : "unset",
               lib ? dlerror() : "");
    return kInvalidImage;
  }
  struct FakeModule* m = calloc(1, sizeof(*m));
  m->ptx = strdup(text);
  m->kernels = kernels;
  if (info_log && info_size) snprintf(info_log, info_size, "fake: module of %zu bytes of PTX", strlen(text));
  *module = m;
  return kSuccess;
}

CUresult cuModuleUnload(CUmodule module) {
  if (Ready(1)) return Ready(1);
  if (!module) return kInvalidHandle;
  free(module->ptx);
  free(module);
  return kSuccess;
}

/* Reads `.entry NAME( .param ..., .param ... )`. */
static int ParseParams(const char* ptx, const char* name, struct FakeFunction* f) {
  char head[512];
  snprintf(head, sizeof(head), ".entry %s(", name);
  const char* at = strstr(ptx, head);
  if (!at) return 0;
  at += strlen(head);
  const char* end = strchr(at, ')');
  if (!end) return 0;
  f->params = 0;
  while (at < end && f->params < kMaxParams) {
    const char* decl = strstr(at, ".param");
    if (!decl || decl >= end) break;
    const char* stop = memchr(decl, ',', (size_t)(end - decl));
    if (!stop) stop = end;
    char buf[512];
    size_t len = (size_t)(stop - decl) < sizeof(buf) - 1 ? (size_t)(stop - decl) : sizeof(buf) - 1;
    memcpy(buf, decl, len);
    buf[len] = 0;
    const char* bracket = strchr(buf, '[');
    if (strstr(buf, ".u64") && !bracket) {
      f->param_bytes[f->params] = 8;
      f->param_is_u64[f->params] = 1;
    } else if (strstr(buf, ".b8") && bracket) {
      f->param_bytes[f->params] = strtoull(bracket + 1, NULL, 10);
      f->param_is_u64[f->params] = 0;
    } else {
      Note("unsupported PTX parameter declaration");
      return 0;
    }
    f->params++;
    at = stop + 1;
  }
  return 1;
}

CUresult cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  if (Ready(1)) return Ready(1);
  if (!module || !fn || !name) return kInvalidValue;
  struct FakeFunction* f = calloc(1, sizeof(*f));
  if (!ParseParams(module->ptx, name, f)) {
    free(f);
    return kNotFound;
  }
  size_t len = strlen(name);
  char cpu[512];
  if (len < 5 || len > 400 || strcmp(name + len - 5, "_cuda") != 0) {
    free(f);
    return kNotFound;
  }
  snprintf(cpu, sizeof(cpu), "%.*s_cpu", (int)(len - 5), name);
  f->cpu_entry = (void (*)(void*, const void*, int64_t, int64_t))dlsym(module->kernels, cpu);
  if (!f->cpu_entry) {
    Note("the kernel library has no CPU entry for this kernel");
    free(f);
    return kNotFound;
  }
  f->module = module;
  *fn = f;
  return kSuccess;
}

CUresult cuFuncGetAttribute(int* value, int attribute, CUfunction fn) {
  if (Ready(1)) return Ready(1);
  if (!fn || !value) return kInvalidHandle;
  switch (attribute) {
    case 0: *value = 1024; return kSuccess; /* MAX_THREADS_PER_BLOCK */
    case 3: *value = 0; return kSuccess;    /* LOCAL_SIZE_BYTES */
    case 4: *value = 0; return kSuccess;    /* NUM_REGS */
    default: return kInvalidValue;
  }
}

CUresult cuStreamCreate(CUstream* stream, unsigned flags) {
  if (Ready(1)) return Ready(1);
  if (!stream || flags > 1) return kInvalidValue;
  *stream = calloc(1, sizeof(struct FakeStream));
  return kSuccess;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  if (Ready(1)) return Ready(1);
  if (!stream) return kInvalidHandle;
  pthread_mutex_lock(&g_mu);
  JoinJobs(stream);
  pthread_mutex_unlock(&g_mu);
  free(stream);
  return kSuccess;
}

CUresult cuStreamQuery(CUstream stream) {
  if (Ready(1)) return Ready(1);
  CUresult r = kSuccess;
  pthread_mutex_lock(&g_mu);
  for (struct Job* j = g_jobs; j; j = j->next)
    if ((stream == NULL || j->stream == stream) && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)) r = kNotReady;
  pthread_mutex_unlock(&g_mu);
  return r;
}

CUresult cuStreamSynchronize(CUstream stream) {
  if (Ready(1)) return Ready(1);
  pthread_mutex_lock(&g_mu);
  JoinJobs(stream);
  pthread_mutex_unlock(&g_mu);
  return kSuccess;
}

static void* RunJob(void* arg) {
  struct Job* j = arg;
  int64_t size;
  memcpy(&size, (const char*)j->ctx + 24, sizeof(size)); /* launch_ctx.bounds.size */
  j->fn->cpu_entry(j->ctx, j->args, 0, size);
  __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared_bytes, CUstream stream, void** params, void** extra) {
  if (Ready(1)) return Ready(1);
  if (!fn) return kInvalidHandle;
  if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024 || shared_bytes > 48 * 1024 ||
      !params || extra) {
    Note("bad launch configuration or parameters");
    return kInvalidValue;
  }
  /* An adjoint entry by value takes both blocks, (ctx, args, adj): copied
     side by side they are the CPU entry's doubled block. */
  if (fn->params < 2 || fn->params > 3 || !fn->param_is_u64[0] || (fn->params == 3 && fn->param_is_u64[1])) {
    Note("a warpd CUDA entry takes (launch_ctx*, block or block*) or (launch_ctx*, block, adjoint block)");
    return kInvalidValue;
  }
  size_t total = 0;
  for (int i = 0; i < fn->params; ++i) total += fn->param_bytes[i];
  char* copy = malloc(total);
  size_t at = 0;
  for (int i = 0; i < fn->params; ++i) {
    if (!params[i]) {
      free(copy);
      return kInvalidValue;
    }
    memcpy(copy + at, params[i], fn->param_bytes[i]);
    at += fn->param_bytes[i];
  }
  uint64_t ctx_address;
  memcpy(&ctx_address, copy, 8);
  pthread_mutex_lock(&g_mu);
  struct Allocation* ctx_alloc = FindAllocation((uintptr_t)ctx_address, 168); /* sizeof(wp::launch_ctx) */
  int ok = ctx_alloc && (!ctx_alloc->host || (ctx_alloc->flags & 0x02));
  void* args = copy + 8;
  if (ok && fn->param_is_u64[1]) { /* the block by address: it must be device memory */
    uint64_t args_address;
    memcpy(&args_address, copy + 8, 8);
    struct Allocation* a = FindAllocation((uintptr_t)args_address, 1);
    ok = a && !a->host;
    args = (void*)(uintptr_t)args_address;
  }
  if (!ok) {
    pthread_mutex_unlock(&g_mu);
    free(copy);
    Note("launch_ctx or argument block address is not device memory");
    return kInvalidValue;
  }
  struct Job* j = calloc(1, sizeof(*j));
  j->stream = stream;
  j->fn = fn;
  j->ctx = (void*)(uintptr_t)ctx_address;
  j->args = args;
  j->param_copy = copy;
  if (pthread_create(&j->thread, NULL, RunJob, j) != 0) {
    pthread_mutex_unlock(&g_mu);
    free(copy);
    free(j);
    return kOutOfMemory;
  }
  j->next = g_jobs;
  g_jobs = j;
  pthread_mutex_unlock(&g_mu);
  return kSuccess;
}

static const struct {
  CUresult code;
  const char* name;
  const char* text;
} kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kInvalidPtx, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
};

CUresult cuGetErrorName(CUresult error, const char** name) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i) {
    if (kErrors[i].code == error) {
      *name = kErrors[i].name;
      return kSuccess;
    }
  }
  *name = NULL;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i) {
    if (kErrors[i].code == error) {
      *text = kErrors[i].text;
      return kSuccess;
    }
  }
  *text = NULL;
  return kInvalidValue;
}
