/* A stand-in for libcuda.so.1 in tests without a GPU (built by the tests,
 * never installed). It exports cuGetProcAddress_v2 (or, built with
 * FAKE_CUDA_OLD_PROC_ADDRESS, only the CUDA 11.3 cuGetProcAddress) and hands
 * out the entry points runtime/device/cuda/driver_api.h lists. It is a test
 * double for the orchestration around a GPU, not a driver: it runs no
 * kernel.
 *
 * Devices. Behaviour is read from the environment at each call:
 *   WARPD_FAKE_CUDA_DEVICES        number of GPUs (default 2; 0: cuInit says
 *                                  CUDA_ERROR_NO_DEVICE, as the real driver)
 *   WARPD_FAKE_CUDA_VERSION        cuDriverGetVersion (default 13000)
 *   WARPD_FAKE_CUDA_INIT_ERROR     CUresult cuInit returns (default 0)
 *   WARPD_FAKE_CUDA_RETAIN_ERROR   CUresult cuDevicePrimaryCtxRetain returns
 *   WARPD_FAKE_CUDA_MISSING        an entry point cuGetProcAddress lacks
 *   WARPD_FAKE_CUDA_FAULT_LAUNCH   N > 0: the process's N-th kernel launch
 *                                  faults with CUDA_ERROR_ILLEGAL_ADDRESS
 *                                  when its stream runs it (for daemons)
 *   WARPD_FAKE_CUDA_HOLD_LAUNCH    N > 0: the process's N-th kernel launch
 *                                  runs until its cancel flag is set (the
 *                                  int32 at its first parameter + 104, the
 *                                  launch context's `cancel`, launch_abi.md)
 * Device i is "Fake GPU i", sm_90 for even i and sm_86 for odd, 132 or 84
 * SMs, (80 + i) GiB, UUID bytes a0+i 01 02 ... 0f.
 *
 * Execution, modelled after the driver's documented semantics:
 * - Contexts: one primary context per device, reference-counted; a
 *   per-thread stack of current contexts (push/pop/set). Resetting the
 *   primary context, or releasing its last reference, destroys everything
 *   made in it and clears its sticky error; its handle stays the same.
 * - Device memory is host memory (malloc; a CUdeviceptr is the address;
 *   an exportable pool's allocations are ranges of one memory file it maps,
 *   never reused, which cuMemPoolImportFromShareableHandle maps again, so
 *   an imported pointer reads and writes the same bytes),
 *   allocated from stream-ordered pools; a device has 1 GiB unless a test
 *   sets its limit (warpd_fake_cuda_set_memory_limit), and a pool's reserved
 *   bytes count against it (CUDA_ERROR_OUT_OF_MEMORY beyond). Freed memory
 *   stays reserved up to the pool's release threshold until the next stream
 *   or event synchronization trims it. Copies and fills must stay inside one
 *   live allocation (else CUDA_ERROR_INVALID_VALUE).
 * - Streams queue their operations (copies, fills, frees, event records,
 *   waits, kernel launches, graph launches) and execute them in FIFO order:
 *   all of them on cuStreamSynchronize, one per cuStreamQuery or
 *   cuEventQuery (so NOT_READY is observable), up to the record on
 *   cuEventSynchronize; a wait on an event first runs the stream it was
 *   recorded on up to that record. As the driver does, a copy from pageable
 *   host memory reads the source before returning, and a copy to pageable
 *   memory returns only once done; copies to and from cuMemHostAlloc memory
 *   read and write it when the stream executes them.
 * - Events record the device clock when executed; the clock advances by
 *   1 ms per 1e6 copied or filled bytes and by the launch time per kernel
 *   (0.5 ms unless set), so elapsed times are exact.
 * - Modules: PTX text (needs .version <= 9.0 and .target <= the device's
 *   arch; otherwise the JIT error log says why, as ptxas would), or an ELF
 *   image whose string table holds the kernel names. A kernel launch checks
 *   its dimensions, copies its parameters as the PTX declares them and, when
 *   executed, appends them to a launch log tests read; it runs nothing.
 * - Stream capture: operations on a capturing stream go into a graph;
 *   synchronizing or querying it invalidates the capture
 *   (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then END_CAPTURE says
 *   INVALIDATED); a non-relaxed capture must end on the thread that began
 *   it and forbids cuMemHostAlloc/cuMemFreeHost/cuModuleLoadDataEx/
 *   cuModuleUnload (on that thread for THREAD_LOCAL, on every thread for
 *   GLOBAL). A launched graph exec enqueues its operations again.
 * - Errors: a sticky error (illegal address and the others the driver calls
 *   sticky) poisons the context: queued work is dropped and every later call
 *   on it returns the same error until the primary context is reset.
 *   warpd_fake_cuda_fail(call, result, skip) makes the skip+1-th next call
 *   of `call` return `result` (poisoning for a sticky one);
 *   warpd_fake_cuda_fault_next_launch(result) makes the next launched kernel
 *   fail with `result` when the stream executes it, as a kernel that faults;
 *   warpd_fake_cuda_write_on_next_launch(param, deref, offset, bytes, len)
 *   makes it write bytes where a pointer parameter (or a pointer stored
 *   behind it) says, as a kernel would write its fault record or prints;
 *   warpd_fake_cuda_hold_next_launch(param, offset) makes the next launched
 *   kernel run until the int32 at pointer parameter `param` + `offset` is
 *   non-zero, as a kernel polling its cancel flag: its stream's queries
 *   say NOT_READY meanwhile, and a synchronize waits (with the driver
 *   unlocked, so other threads' calls go on).
 * Deliberately stricter than the driver: every call on a context-owned
 * handle or that makes one needs that context current on the calling thread
 * (CUDA_ERROR_INVALID_CONTEXT otherwise), so a missing push shows; unloading
 * a module while a launch of its kernels is queued (undefined in the
 * driver) fails with CUDA_ERROR_ILLEGAL_STATE, and so does a device to
 * device copy between overlapping ranges (undefined in the driver). Not
 * modelled: allocation or free inside a capture (graph memory nodes;
 * CUDA_ERROR_NOT_SUPPORTED), a capture joined by other streams through
 * events (CUDA_ERROR_STREAM_CAPTURE_ISOLATION), the NULL stream
 * (CUDA_ERROR_INVALID_HANDLE), concurrency between streams.
 * Everything is serialized by one mutex; handles are never reused (a
 * destroyed one is found dead: CUDA_ERROR_INVALID_HANDLE). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct {
  unsigned char bytes[16];
} CUuuid;
typedef struct {
  int type;
  int id;
} CUmemLocation;
typedef struct {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  unsigned char reserved[64];
} CUmemPoolProps;

enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  NO_DEVICE = 100,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  INVALID_PTX = 218,
  UNSUPPORTED_PTX_VERSION = 222,
  INVALID_HANDLE = 400,
  ILLEGAL_STATE = 401,
  NOT_FOUND = 500,
  NOT_READY = 600,
  NOT_SUPPORTED = 801,
  CAPTURE_UNSUPPORTED = 900,
  CAPTURE_INVALIDATED = 901,
  CAPTURE_ISOLATION = 905,
  CAPTURED_EVENT = 907,
  CAPTURE_WRONG_THREAD = 908,
  MAX_DEVICES = 8,
};

/* ------------------------------------------------------------------ */
/* State                                                                */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)
#define RETURN(r)  \
  do {             \
    CUresult r_ = (r); \
    UNLOCK();      \
    return r_;     \
  } while (0)

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

static int device_count(void) {
  int n = env_int("WARPD_FAKE_CUDA_DEVICES", 2);
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

/* A primary context; its address is the CUcontext. */
struct CUctx_st {
  int dev;
  int retained;
  CUresult sticky;  /* 0, or the sticky error that poisoned it */
  double clock_ms;  /* the device clock */
};
static struct CUctx_st contexts[MAX_DEVICES];
static size_t memory_limit[MAX_DEVICES];
static atomic_int initialized;
static atomic_int min_version_asked = 1 << 30, max_version_asked;

enum kind { K_STREAM, K_EVENT, K_POOL, K_MODULE, K_FUNCTION, K_GRAPH, K_EXEC, K_HOST, K_DEVICE, NKINDS };
static const char* const kind_names[NKINDS] = {"stream", "event",  "pool", "module", "function",
                                              "graph",  "exec",   "host", "device"};

/* The head of every handle. Shells are never freed, so a destroyed handle
 * stays recognisably dead and memory is never handed out twice as one. */
struct obj {
  int kind;
  int alive;
  struct CUctx_st* ctx;
  struct obj* next_all;
};
static struct obj* all_objs;
static int live[NKINDS];

static void obj_init(struct obj* o, int kind, struct CUctx_st* ctx) {
  o->kind = kind;
  o->alive = 1;
  o->ctx = ctx;
  o->next_all = all_objs;
  all_objs = o;
  live[kind]++;
}
static void obj_kill(struct obj* o) {
  if (o->alive) live[o->kind]--;
  o->alive = 0;
}
/* The live object of `kind` at `h`, or NULL. */
static void* find(const void* h, int kind) {
  if (h == NULL) return NULL;
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if ((const void*)o == h) return o->kind == kind && o->alive ? o : NULL;
  }
  return NULL;
}

enum op_kind { OP_COPY, OP_SET8, OP_SET32, OP_FREE, OP_RECORD, OP_WAIT, OP_KERNEL };

struct event;
struct stream;
struct devmem;
struct function;

struct op {
  int kind;
  void* dst;
  const void* src;
  size_t bytes;        /* copies; fills: element count */
  unsigned value;      /* fills */
  void* owned;         /* a buffer the op frees (a pageable source, kernel parameters) */
  struct devmem* mem;  /* OP_FREE */
  struct event* event; /* OP_RECORD, OP_WAIT */
  unsigned long long record_id;
  struct stream* wait_stream; /* OP_WAIT: where the record was enqueued */
  struct function* function;  /* OP_KERNEL */
  char name[128];
  unsigned dims[7];           /* grid xyz, block xyz, shared bytes */
  size_t param_bytes;
  int param_count;
  CUresult fault;             /* OP_KERNEL: the error it fails with, or 0 */
  int hold_param;             /* OP_KERNEL: runs until the int32 there is non-zero; -1: no hold */
  size_t hold_offset;
  struct op* next;
};

struct graph {
  struct obj h;
  struct op *head, *tail;
};

struct stream {
  struct obj h;
  unsigned flags;
  struct op *head, *tail;
  int queued_copies;
  int queued_kernels;
  int capturing;
  int capture_mode;
  int capture_invalid;
  pthread_t capture_thread;
  struct graph* capture;
};

struct event {
  struct obj h;
  unsigned flags;
  unsigned long long records, done;
  double time_ms;
  struct stream* stream; /* of the last record */
  int captured;          /* last recorded into a capture */
};

struct pool {
  struct obj h;
  int dev;
  int destroyed;
  unsigned long long threshold;
  size_t used, reserved;
  /* Exportable pools (POSIX fd handles) and imported ones: allocations are
   * ranges of one memory file mapped at `base` (so another process that
   * imports the pool maps the same bytes); -1 and NULL otherwise. */
  int fd;
  char* base;
  size_t capacity, bump;
  int imported;
};

struct devmem {
  struct obj h;
  char* p;
  size_t n;
  struct pool* pool;
  int free_queued;
  int in_file;  /* a range of its pool's memory file (not malloc'd) */
  int imported; /* cuMemPoolImportPointer's: freed with cuMemFree, never reused */
};

/* What cuMemPoolExportPointer writes (64 bytes): a magic, the range. */
struct export_data {
  char magic[8];
  unsigned long long offset, bytes;
  unsigned char unused[40];
};
static const char kExportMagic[8] = {'F', 'A', 'K', 'E', 'I', 'P', 'C', '1'};
/* An exportable pool's memory file: sparse, never grown. */
static const size_t kPoolFileBytes = (size_t)4 << 30;

/* Frees device memory: a file range's pages go back to the system, the
 * range is not reused (the fake's pools only grow). */
static void release_devmem(struct devmem* m) {
  if (m->p == NULL) return;
  if (m->imported) return; /* the importer's mapping stays until the pool goes */
  if (!m->in_file) {
    free(m->p);
    return;
  }
  const size_t page = 4096;
  uintptr_t lo = ((uintptr_t)m->p + page - 1) / page * page, hi = ((uintptr_t)m->p + m->n) / page * page;
  if (hi > lo) madvise((void*)lo, hi - lo, MADV_REMOVE);
}

struct host {
  struct obj h;
  char* p;
  size_t n;
};

struct param {
  size_t size, align;
};
struct function {
  struct obj h;
  struct module* module;
  char name[128];
  int param_count; /* -1: unknown (a cubin) */
  struct param params[64];
};

struct module {
  struct obj h;
  char* image; /* PTX text (NUL-terminated) or the ELF bytes */
  size_t size;
  int is_elf;
};

struct exec {
  struct obj h;
  struct op *head, *tail;
};

/* Tests' instruments. */
#define MAX_INJECT 8
static struct {
  char call[64];
  CUresult result;
  int skip;
} injections[MAX_INJECT];
static CUresult fault_next_launch;
static int hold_param = -1; /* warpd_fake_cuda_hold_next_launch */
static size_t hold_offset;
static int hold_skip; /* launches to let go by before the held one */
static double launch_ms = 0.5;
/* What the next kernel "writes" when its stream runs it (it runs no code):
 * `len` bytes at the device address that parameter `param` holds, plus
 * `offset`, or, with deref >= 0, at the address stored `deref` bytes past
 * that one, plus `offset`. */
#define MAX_KERNEL_WRITES 4
static struct {
  int param;
  long deref;
  size_t offset, len;
  unsigned char bytes[256];
  int src_param;  /* >= 0: the bytes are read at that pointer parameter + src_offset */
  size_t src_offset;
  long src_deref; /* >= 0: ... at the address stored src_deref bytes past the parameter's, + src_offset */
} kernel_writes[MAX_KERNEL_WRITES];
static int num_kernel_writes;
static int pageable_copies, peer_copies, max_queued_copies, max_queued_kernels;
#define MAX_LAUNCH_LOG 64
static struct {
  char name[128];
  unsigned dims[7];
  unsigned char params[4096];
  size_t param_bytes;
  int param_count;
} launch_log[MAX_LAUNCH_LOG];
static int launches;
static int global_captures; /* non-relaxed GLOBAL captures under way */

static _Thread_local struct CUctx_st* ctx_stack[32];
static _Thread_local int ctx_depth;
static _Thread_local int thread_captures; /* THREAD_LOCAL/GLOBAL captures begun by this thread */

static struct CUctx_st* current(void) { return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL; }

static int is_sticky(CUresult r) {
  switch (r) {
    case 214: case 220: case 226: case 700: case 702: case 710: case 714: case 715:
    case 716: case 717: case 718: case 719: case 721: case 810: case 911:
      return 1;
    default:
      return 0;
  }
}

/* ------------------------------------------------------------------ */
/* Test-only entry points (not driver API)                              */

int warpd_fake_cuda_retained(int ordinal) {
  if (ordinal < 0 || ordinal >= MAX_DEVICES) return -1;
  LOCK();
  int n = contexts[ordinal].retained;
  UNLOCK();
  return n;
}
int warpd_fake_cuda_min_version_asked(void) { return atomic_load(&min_version_asked); }
int warpd_fake_cuda_max_version_asked(void) { return atomic_load(&max_version_asked); }

/* The skip+1-th next call of `call` returns `result`. */
int warpd_fake_cuda_fail(const char* call, int result, int skip) {
  LOCK();
  for (int i = 0; i < MAX_INJECT; ++i) {
    if (injections[i].call[0] == '\0') {
      snprintf(injections[i].call, sizeof(injections[i].call), "%s", call);
      injections[i].result = result;
      injections[i].skip = skip;
      UNLOCK();
      return 0;
    }
  }
  UNLOCK();
  return -1;
}
/* The next kernel launched writes `bytes` (see kernel_writes) when its
 * stream executes it; 0 on success, -1 when too many or too long. */
int warpd_fake_cuda_write_on_next_launch(int param, long deref, size_t offset, const void* bytes, size_t len) {
  LOCK();
  int ok = num_kernel_writes < MAX_KERNEL_WRITES && len <= sizeof(kernel_writes[0].bytes);
  if (ok) {
    kernel_writes[num_kernel_writes].param = param;
    kernel_writes[num_kernel_writes].deref = deref;
    kernel_writes[num_kernel_writes].offset = offset;
    kernel_writes[num_kernel_writes].len = len;
    memcpy(kernel_writes[num_kernel_writes].bytes, bytes, len);
    kernel_writes[num_kernel_writes].src_param = -1;
    num_kernel_writes++;
  }
  UNLOCK();
  return ok ? 0 : -1;
}
/* The same, copying `len` bytes from the device address pointer parameter
 * `src_param` holds (with src_deref >= 0: the address stored src_deref
 * bytes past it), plus `src_offset`, when the kernel runs. */
int warpd_fake_cuda_copy_deref_on_next_launch(int src_param, long src_deref, size_t src_offset, int param,
                                              size_t offset, size_t len) {
  LOCK();
  int ok = num_kernel_writes < MAX_KERNEL_WRITES && len <= sizeof(kernel_writes[0].bytes);
  if (ok) {
    kernel_writes[num_kernel_writes].param = param;
    kernel_writes[num_kernel_writes].deref = -1;
    kernel_writes[num_kernel_writes].offset = offset;
    kernel_writes[num_kernel_writes].len = len;
    kernel_writes[num_kernel_writes].src_param = src_param;
    kernel_writes[num_kernel_writes].src_offset = src_offset;
    kernel_writes[num_kernel_writes].src_deref = src_deref;
    num_kernel_writes++;
  }
  UNLOCK();
  return ok ? 0 : -1;
}
int warpd_fake_cuda_copy_on_next_launch(int src_param, size_t src_offset, int param, size_t offset, size_t len) {
  return warpd_fake_cuda_copy_deref_on_next_launch(src_param, -1, src_offset, param, offset, len);
}
/* The next kernel launched runs until the int32 at its pointer parameter
 * `param` + `offset` is non-zero. */
void warpd_fake_cuda_hold_next_launch(int param, size_t offset) {
  LOCK();
  hold_param = param;
  hold_offset = offset;
  hold_skip = 0;
  UNLOCK();
}
/* The same for the launch after the next `skip` ones. */
void warpd_fake_cuda_hold_launch_after(int skip, int param, size_t offset) {
  LOCK();
  hold_param = param;
  hold_offset = offset;
  hold_skip = skip;
  UNLOCK();
}
/* The next kernel launched fails with `result` when its stream executes it. */
void warpd_fake_cuda_fault_next_launch(int result) {
  LOCK();
  fault_next_launch = result;
  UNLOCK();
}
void warpd_fake_cuda_set_memory_limit(int dev, size_t bytes) {
  LOCK();
  if (dev >= 0 && dev < MAX_DEVICES) memory_limit[dev] = bytes;
  UNLOCK();
}
void warpd_fake_cuda_set_launch_ms(double ms) {
  LOCK();
  launch_ms = ms;
  UNLOCK();
}
/* Clears injections, statistics, the launch log and the settings above. */
void warpd_fake_cuda_reset_test_state(void) {
  LOCK();
  memset(injections, 0, sizeof(injections));
  fault_next_launch = 0;
  hold_param = -1;
  hold_skip = 0;
  num_kernel_writes = 0;
  launch_ms = 0.5;
  pageable_copies = peer_copies = max_queued_copies = max_queued_kernels = 0;
  launches = 0;
  memset(memory_limit, 0, sizeof(memory_limit));
  UNLOCK();
}
/* Live handles of a kind ("stream", "event", "pool", "module", "function",
 * "graph", "exec", "host", "device": device allocations); -1 for another. */
int warpd_fake_cuda_live(const char* kind) {
  LOCK();
  int n = -1;
  for (int k = 0; k < NKINDS; ++k) {
    if (strcmp(kind, kind_names[k]) == 0) n = live[k];
  }
  UNLOCK();
  return n;
}
int warpd_fake_cuda_context_depth(void) { return ctx_depth; }
CUresult warpd_fake_cuda_sticky(int dev) {
  if (dev < 0 || dev >= MAX_DEVICES) return -1;
  LOCK();
  CUresult r = contexts[dev].sticky;
  UNLOCK();
  return r;
}
/* cuMemcpyPeerAsync calls that queued a copy. */
int warpd_fake_cuda_peer_copies(void) {
  LOCK();
  int n = peer_copies;
  UNLOCK();
  return n;
}

int warpd_fake_cuda_pageable_copies(void) {
  LOCK();
  int n = pageable_copies;
  UNLOCK();
  return n;
}
/* The most copies one stream had queued, not yet executed, at once. */
int warpd_fake_cuda_max_queued_copies(void) {
  LOCK();
  int n = max_queued_copies;
  UNLOCK();
  return n;
}
/* The most kernels one stream had queued, not yet executed, at once. */
int warpd_fake_cuda_max_queued_kernels(void) {
  LOCK();
  int n = max_queued_kernels;
  UNLOCK();
  return n;
}
int warpd_fake_cuda_launches(void) {
  LOCK();
  int n = launches;
  UNLOCK();
  return n;
}
/* The `index`-th executed launch (of the last 64): its name, grid and block
 * dimensions and shared bytes in dims[7], its parameter bytes copied to
 * `params` (up to `capacity`); returns the parameter bytes (-1 if none). */
long warpd_fake_cuda_launch(int index, char* name, size_t name_len, unsigned* dims, void* params,
                            size_t capacity) {
  LOCK();
  if (index < 0 || index >= launches || index < launches - MAX_LAUNCH_LOG) {
    UNLOCK();
    return -1;
  }
  int i = index % MAX_LAUNCH_LOG;
  if (name != NULL) snprintf(name, name_len, "%s", launch_log[i].name);
  if (dims != NULL) memcpy(dims, launch_log[i].dims, sizeof(launch_log[i].dims));
  size_t n = launch_log[i].param_bytes;
  if (params != NULL) memcpy(params, launch_log[i].params, n < capacity ? n : capacity);
  UNLOCK();
  return (long)n;
}

/* ------------------------------------------------------------------ */
/* Internals (mutex held)                                               */

static size_t limit_of(int dev) { return memory_limit[dev] != 0 ? memory_limit[dev] : (size_t)1 << 30; }

static size_t device_reserved(int dev) {
  size_t n = 0;
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind == K_POOL) {
      struct pool* p = (struct pool*)o;
      if (p->dev == dev && (p->h.alive || p->destroyed)) n += p->reserved;
    }
  }
  return n;
}

static void free_op(struct op* op) {
  free(op->owned);
  free(op);
}

static void free_ops(struct op* op) {
  while (op != NULL) {
    struct op* next = op->next;
    free_op(op);
    op = next;
  }
}

/* Drops every queued operation of the context's streams. */
static void drop_queues(struct CUctx_st* ctx) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind != K_STREAM || o->ctx != ctx) continue;
    struct stream* s = (struct stream*)o;
    free_ops(s->head);
    s->head = s->tail = NULL;
    s->queued_copies = 0;
    s->queued_kernels = 0;
  }
}

static void poison(struct CUctx_st* ctx, CUresult r) {
  if (ctx == NULL || ctx->sticky != 0) return;
  ctx->sticky = r;
  drop_queues(ctx);
}

/* An injected failure for `call`, or 0; a sticky one poisons `ctx`. */
static CUresult injected(const char* call, struct CUctx_st* ctx) {
  for (int i = 0; i < MAX_INJECT; ++i) {
    if (injections[i].call[0] == '\0' || strcmp(injections[i].call, call) != 0) continue;
    if (injections[i].skip-- > 0) continue;
    CUresult r = injections[i].result;
    injections[i].call[0] = '\0';
    if (is_sticky(r)) poison(ctx, r);
    return r;
  }
  return SUCCESS;
}

/* Everything made in the context goes; its sticky error is cleared. */
static void destroy_context_state(struct CUctx_st* ctx) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->ctx != ctx) continue;
    switch (o->kind) {
      case K_STREAM: {
        struct stream* s = (struct stream*)o;
        free_ops(s->head);
        s->head = s->tail = NULL;
        if (s->capturing && s->capture_mode == 0) global_captures--;
        s->capturing = 0;
        break;
      }
      case K_GRAPH: {
        struct graph* g = (struct graph*)o;
        free_ops(g->head);
        g->head = g->tail = NULL;
        break;
      }
      case K_EXEC: {
        struct exec* e = (struct exec*)o;
        free_ops(e->head);
        e->head = e->tail = NULL;
        break;
      }
      case K_DEVICE: {
        struct devmem* m = (struct devmem*)o;
        if (m->h.alive) release_devmem(m);
        m->p = NULL;
        break;
      }
      case K_HOST: {
        struct host* hm = (struct host*)o;
        if (hm->h.alive) free(hm->p);
        hm->p = NULL;
        break;
      }
      case K_MODULE: {
        struct module* m = (struct module*)o;
        if (m->h.alive) free(m->image);
        m->image = NULL;
        break;
      }
      case K_POOL: {
        struct pool* p = (struct pool*)o;
        p->used = p->reserved = 0;
        p->destroyed = 0;
        break;
      }
      default:
        break;
    }
    obj_kill(o);
  }
  ctx->sticky = 0;
}

/* The current context, usable: INVALID_CONTEXT without one, its sticky
 * error once poisoned. */
static CUresult need_ctx(struct CUctx_st** out) {
  struct CUctx_st* ctx = current();
  *out = ctx;
  if (ctx == NULL || ctx->retained <= 0) return INVALID_CONTEXT;
  return ctx->sticky;
}

/* The handle's context must be the current one and usable. */
static CUresult need_owner(const struct obj* o) {
  struct CUctx_st* ctx = NULL;
  CUresult r = need_ctx(&ctx);
  if (r != SUCCESS) return r;
  return o->ctx == ctx ? SUCCESS : INVALID_CONTEXT;
}

/* The live allocation holding [p, p + n), or NULL. */
static struct devmem* find_range(CUdeviceptr p, size_t n) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind != K_DEVICE || !o->alive) continue;
    struct devmem* m = (struct devmem*)o;
    uintptr_t base = (uintptr_t)m->p;
    if (p >= base && p - base <= m->n && n <= m->n - (p - base) && !m->free_queued) return m;
  }
  return NULL;
}

static int is_pinned(const void* p, size_t n) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind != K_HOST || !o->alive) continue;
    struct host* h = (struct host*)o;
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)h->p;
    if (a >= base && a - base <= h->n && n <= h->n - (a - base)) return 1;
  }
  return 0;
}

static void trim(struct pool* p) {
  size_t keep = p->used > p->threshold ? p->used : (size_t)p->threshold;
  if (p->reserved > keep) p->reserved = keep;
  if (p->destroyed && p->used == 0) p->reserved = 0;
}

/* What a synchronization does to the pools: trim them to their thresholds. */
static void trim_pools(struct CUctx_st* ctx) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind == K_POOL && (o->alive || ((struct pool*)o)->destroyed) && o->ctx == ctx) trim((struct pool*)o);
  }
}

/* The writes tests asked of the next kernel (warpd_fake_cuda_write_on_next_launch),
 * each only where device memory is. */
/* The device address pointer parameter `p` of `op` holds; 0 when `p` is
 * not an 8-byte parameter. */
static CUdeviceptr pointer_param(const struct op* op, int p) {
  const struct function* f = op->function;
  if (p < 0 || p >= f->param_count || f->params[p].size != 8) return 0;
  size_t at = 0;
  for (int i = 0; i < p; ++i) {
    at = (at + f->params[i].align - 1) / f->params[i].align * f->params[i].align + f->params[i].size;
  }
  at = (at + f->params[p].align - 1) / f->params[p].align * f->params[p].align;
  CUdeviceptr v;
  memcpy(&v, (const char*)op->owned + at, 8);
  return v;
}

static void kernel_effects(struct op* op) {
  for (int w = 0; w < num_kernel_writes; ++w) {
    CUdeviceptr base = pointer_param(op, kernel_writes[w].param);
    if (base == 0) continue;
    if (kernel_writes[w].src_param >= 0) {
      CUdeviceptr src = pointer_param(op, kernel_writes[w].src_param);
      if (kernel_writes[w].src_deref >= 0) {
        if (find_range(src + (CUdeviceptr)kernel_writes[w].src_deref, 8) == NULL) continue;
        memcpy(&src, (const char*)(uintptr_t)(src + (CUdeviceptr)kernel_writes[w].src_deref), 8);
      }
      src += kernel_writes[w].src_offset;
      if (find_range(src, kernel_writes[w].len) == NULL) continue;
      memcpy(kernel_writes[w].bytes, (const void*)(uintptr_t)src, kernel_writes[w].len);
    }
    if (kernel_writes[w].deref >= 0) {
      if (find_range(base + (CUdeviceptr)kernel_writes[w].deref, 8) == NULL) continue;
      memcpy(&base, (const char*)(uintptr_t)(base + (CUdeviceptr)kernel_writes[w].deref), 8);
    }
    const CUdeviceptr dst = base + kernel_writes[w].offset;
    if (find_range(dst, kernel_writes[w].len) == NULL) continue;
    memcpy((void*)(uintptr_t)dst, kernel_writes[w].bytes, kernel_writes[w].len);
  }
  num_kernel_writes = 0;
}

static void execute(struct CUctx_st* ctx, struct op* op) {
  switch (op->kind) {
    case OP_COPY:
      memmove(op->dst, op->src, op->bytes);
      ctx->clock_ms += (double)op->bytes * 1e-6;
      break;
    case OP_SET8:
      memset(op->dst, (int)(op->value & 0xff), op->bytes);
      ctx->clock_ms += (double)op->bytes * 1e-6;
      break;
    case OP_SET32:
      for (size_t i = 0; i < op->bytes; ++i) memcpy((char*)op->dst + 4 * i, &op->value, 4);
      ctx->clock_ms += (double)op->bytes * 4e-6;
      break;
    case OP_FREE: {
      struct devmem* m = op->mem;
      struct pool* p = m->pool;
      release_devmem(m);
      m->p = NULL;
      obj_kill(&m->h);
      p->used -= m->n;
      if (p->destroyed && p->used == 0) {
        p->reserved = 0;
        if (p->fd >= 0) { /* its last allocation: the memory file goes */
          munmap(p->base, p->capacity);
          close(p->fd);
          p->base = NULL;
          p->fd = -1;
        }
      }
      break;
    }
    case OP_RECORD:
      if (op->record_id > op->event->done) op->event->done = op->record_id;
      op->event->time_ms = ctx->clock_ms;
      break;
    case OP_WAIT:
      break;
    case OP_KERNEL: {
      ctx->clock_ms += launch_ms;
      int i = launches % MAX_LAUNCH_LOG;
      snprintf(launch_log[i].name, sizeof(launch_log[i].name), "%s", op->name);
      memcpy(launch_log[i].dims, op->dims, sizeof(op->dims));
      size_t n = op->param_bytes < sizeof(launch_log[i].params) ? op->param_bytes : sizeof(launch_log[i].params);
      if (n > 0) memcpy(launch_log[i].params, op->owned, n);
      launch_log[i].param_bytes = op->param_bytes;
      launch_log[i].param_count = op->param_count;
      launches++;
      kernel_effects(op);
      break;
    }
  }
}

/* Whether `op` is a held kernel whose flag is still zero (it "runs"). */
static int held(const struct op* op) {
  if (op == NULL || op->kind != OP_KERNEL || op->hold_param < 0) return 0;
  const CUdeviceptr at = pointer_param(op, op->hold_param) + op->hold_offset;
  if (find_range(at, 4) == NULL) return 1; /* nothing there can ever release it */
  int32_t flag;
  memcpy(&flag, (const void*)(uintptr_t)at, 4);
  return flag == 0;
}

static CUresult run_head(struct stream* s);

/* Runs `s` until `e` has executed record `id` (or `s` is empty). */
static CUresult run_until_record(struct stream* s, struct event* e, unsigned long long id) {
  while (e->done < id && s->head != NULL) {
    while (held(s->head)) {
      UNLOCK();
      usleep(1000);
      LOCK();
    }
    if (s->head == NULL) break;
    CUresult r = run_head(s);
    if (r != SUCCESS) return r;
  }
  return SUCCESS;
}

/* Executes the first queued operation of `s` (a held kernel stays queued). */
static CUresult run_head(struct stream* s) {
  struct CUctx_st* ctx = s->h.ctx;
  if (ctx->sticky) return ctx->sticky;
  struct op* op = s->head;
  if (held(op)) return SUCCESS;
  if (op->kind == OP_WAIT && op->wait_stream != s) {
    /* The recording stream runs first, up to the record (enqueued before
     * this wait, so this ends). */
    CUresult r = run_until_record(op->wait_stream, op->event, op->record_id);
    if (r != SUCCESS) return r;
    if (s->head != op) return ctx->sticky; /* dropped meanwhile */
  }
  s->head = op->next;
  if (s->head == NULL) s->tail = NULL;
  if (op->kind == OP_COPY) s->queued_copies--;
  if (op->kind == OP_KERNEL) s->queued_kernels--;
  if (op->kind == OP_KERNEL && op->fault != 0) {
    CUresult fault = op->fault;
    free_op(op);
    poison(ctx, fault);
    return fault;
  }
  execute(ctx, op);
  free_op(op);
  return SUCCESS;
}

static CUresult drain(struct stream* s) {
  while (s->head != NULL) {
    while (held(s->head)) { /* as a running kernel: others may go on meanwhile */
      UNLOCK();
      usleep(1000);
      LOCK();
    }
    if (s->head == NULL) break;
    CUresult r = run_head(s);
    if (r != SUCCESS) return r;
  }
  return s->h.ctx->sticky;
}

static struct op* new_op(int kind) {
  struct op* op = calloc(1, sizeof(struct op));
  if (op != NULL) op->kind = kind;
  return op;
}

static void append(struct op** head, struct op** tail, struct op* op) {
  op->next = NULL;
  if (*tail != NULL) {
    (*tail)->next = op;
  } else {
    *head = op;
  }
  *tail = op;
}

/* Queues `op` on `s`, or adds it to the capture under way. */
static void enqueue(struct stream* s, struct op* op) {
  if (s->capturing) {
    append(&s->capture->head, &s->capture->tail, op);
    return;
  }
  append(&s->head, &s->tail, op);
  if (op->kind == OP_COPY && ++s->queued_copies > max_queued_copies) max_queued_copies = s->queued_copies;
  if (op->kind == OP_KERNEL && ++s->queued_kernels > max_queued_kernels) max_queued_kernels = s->queued_kernels;
}

static struct op* clone_op(const struct op* op) {
  struct op* c = new_op(op->kind);
  if (c == NULL) return NULL;
  *c = *op;
  c->next = NULL;
  c->owned = NULL;
  if (op->owned != NULL) {
    size_t n = op->kind == OP_KERNEL ? op->param_bytes : op->bytes;
    c->owned = malloc(n > 0 ? n : 1);
    if (c->owned != NULL) memcpy(c->owned, op->owned, n);
    if (op->kind == OP_COPY) c->src = c->owned;
  }
  return c;
}

/* A usable stream of the current context. */
static CUresult need_stream(void* h, struct stream** out) {
  *out = find(h, K_STREAM);
  if (h == NULL) return INVALID_HANDLE; /* the NULL stream is not modelled */
  if (*out == NULL) return INVALID_HANDLE;
  return need_owner(&(*out)->h);
}

/* For the calls a non-relaxed capture forbids. */
static CUresult capture_forbids(void) {
  return thread_captures > 0 || global_captures > 0 ? CAPTURE_UNSUPPORTED : SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Devices                                                              */

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
  for (int i = 0; i < MAX_DEVICES; ++i) contexts[i].dev = i;
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

static int cc_major(CUdevice dev) { return dev % 2 == 0 ? 9 : 8; }
static int cc_minor(CUdevice dev) { return dev % 2 == 0 ? 0 : 6; }

static CUresult fake_cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  switch (attribute) {
    case 16: *value = dev % 2 == 0 ? 132 : 84; return SUCCESS;   /* MULTIPROCESSOR_COUNT */
    case 75: *value = cc_major(dev); return SUCCESS;             /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = cc_minor(dev); return SUCCESS;             /* COMPUTE_CAPABILITY_MINOR */
    default: return INVALID_VALUE;
  }
}

static CUresult fake_cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  CUresult r = check_device(dev);
  if (r == SUCCESS) *bytes = (size_t)(80 + dev) << 30;
  return r;
}

/* ------------------------------------------------------------------ */
/* Contexts                                                             */

static CUresult fake_cuDevicePrimaryCtxRetain(struct CUctx_st** ctx, CUdevice dev) {
  CUresult r = check_device(dev);
  int err = env_int("WARPD_FAKE_CUDA_RETAIN_ERROR", 0);
  if (r != SUCCESS) return r;
  if (err != 0) return err;
  LOCK();
  contexts[dev].retained++;
  *ctx = &contexts[dev];
  RETURN(SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  LOCK();
  if (contexts[dev].retained <= 0) RETURN(INVALID_CONTEXT); /* released more than retained */
  if (--contexts[dev].retained == 0) destroy_context_state(&contexts[dev]);
  RETURN(SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  CUresult r = check_device(dev);
  if (r != SUCCESS) return r;
  LOCK();
  if ((r = injected("cuDevicePrimaryCtxReset", NULL)) != SUCCESS) RETURN(r);
  destroy_context_state(&contexts[dev]);
  RETURN(SUCCESS);
}

static CUresult fake_cuCtxPushCurrent_v2(struct CUctx_st* ctx) {
  LOCK();
  CUresult r = injected("cuCtxPushCurrent", ctx);
  if (r != SUCCESS) RETURN(r);
  if (ctx < &contexts[0] || ctx >= &contexts[MAX_DEVICES] || ctx->retained <= 0) RETURN(INVALID_CONTEXT);
  if (ctx_depth == (int)(sizeof(ctx_stack) / sizeof(ctx_stack[0]))) RETURN(INVALID_VALUE);
  ctx_stack[ctx_depth++] = ctx;
  RETURN(SUCCESS);
}

static CUresult fake_cuCtxPopCurrent_v2(struct CUctx_st** out) {
  LOCK();
  if (ctx_depth == 0) RETURN(INVALID_CONTEXT);
  struct CUctx_st* ctx = ctx_stack[--ctx_depth];
  if (out != NULL) *out = ctx;
  RETURN(SUCCESS);
}

static CUresult fake_cuCtxSetCurrent(struct CUctx_st* ctx) {
  LOCK();
  if (ctx == NULL) {
    if (ctx_depth > 0) ctx_depth--;
    RETURN(SUCCESS);
  }
  if (ctx < &contexts[0] || ctx >= &contexts[MAX_DEVICES] || ctx->retained <= 0) RETURN(INVALID_CONTEXT);
  if (ctx_depth == 0) ctx_depth = 1;
  ctx_stack[ctx_depth - 1] = ctx;
  RETURN(SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Streams and events                                                   */

static CUresult fake_cuStreamCreate(struct stream** out, unsigned int flags) {
  LOCK();
  struct CUctx_st* ctx;
  CUresult r = need_ctx(&ctx);
  if (r == SUCCESS) r = injected("cuStreamCreate", ctx);
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || (flags & ~1u) != 0) RETURN(INVALID_VALUE);
  struct stream* s = calloc(1, sizeof(struct stream));
  if (s == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&s->h, K_STREAM, ctx);
  s->flags = flags;
  *out = s;
  RETURN(SUCCESS);
}

static CUresult fake_cuStreamDestroy_v2(struct stream* h) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (s != NULL && r == s->h.ctx->sticky && r != SUCCESS) {
    /* A poisoned context: the stream goes, its work is lost. */
    obj_kill(&s->h);
    RETURN(r);
  }
  if (r == SUCCESS) r = injected("cuStreamDestroy", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (s->capturing) RETURN(CAPTURE_UNSUPPORTED);
  /* The driver lets queued work finish after the call returns. */
  r = drain(s);
  obj_kill(&s->h);
  RETURN(r);
}

static CUresult fake_cuStreamSynchronize(struct stream* h) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (r == SUCCESS) r = injected("cuStreamSynchronize", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (s->capturing) {
    s->capture_invalid = 1;
    RETURN(CAPTURE_UNSUPPORTED);
  }
  r = drain(s);
  if (r == SUCCESS) trim_pools(s->h.ctx);
  RETURN(r);
}

static CUresult fake_cuStreamQuery(struct stream* h) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (r == SUCCESS) r = injected("cuStreamQuery", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (s->capturing) {
    s->capture_invalid = 1;
    RETURN(CAPTURE_UNSUPPORTED);
  }
  if (s->head != NULL && (r = run_head(s)) != SUCCESS) RETURN(r);
  RETURN(s->head != NULL ? NOT_READY : SUCCESS);
}

static CUresult fake_cuStreamWaitEvent(struct stream* h, struct event* ev, unsigned int flags) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (r == SUCCESS) r = injected("cuStreamWaitEvent", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  struct event* e = find(ev, K_EVENT);
  if (e == NULL) RETURN(INVALID_HANDLE);
  if (e->h.ctx != s->h.ctx || flags != 0) RETURN(INVALID_VALUE);
  if (s->capturing) {
    /* Only an event recorded earlier in this same capture: a no-op. */
    if (e->captured && e->stream == s) RETURN(SUCCESS);
    s->capture_invalid = 1;
    RETURN(CAPTURE_ISOLATION);
  }
  if (e->captured) RETURN(CAPTURE_ISOLATION); /* joining a capture is not modelled */
  if (e->records == 0 || e->done >= e->records) RETURN(SUCCESS);
  struct op* op = new_op(OP_WAIT);
  if (op == NULL) RETURN(OUT_OF_MEMORY);
  op->event = e;
  op->record_id = e->records;
  op->wait_stream = e->stream;
  enqueue(s, op);
  RETURN(SUCCESS);
}

static CUresult fake_cuEventCreate(struct event** out, unsigned int flags) {
  LOCK();
  struct CUctx_st* ctx;
  CUresult r = need_ctx(&ctx);
  if (r == SUCCESS) r = injected("cuEventCreate", ctx);
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || (flags & ~7u) != 0 || ((flags & 4u) && !(flags & 2u))) RETURN(INVALID_VALUE);
  struct event* e = calloc(1, sizeof(struct event));
  if (e == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&e->h, K_EVENT, ctx);
  e->flags = flags;
  *out = e;
  RETURN(SUCCESS);
}

static CUresult fake_cuEventDestroy_v2(struct event* h) {
  LOCK();
  struct event* e = find(h, K_EVENT);
  if (e == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&e->h);
  if (r == SUCCESS) r = injected("cuEventDestroy", e->h.ctx);
  /* A pending record still completes (the shell stays); on a poisoned
   * context the event goes with the error. */
  if (r == SUCCESS || r == e->h.ctx->sticky) obj_kill(&e->h);
  RETURN(r);
}

static CUresult fake_cuEventRecord(struct event* h, struct stream* sh) {
  LOCK();
  struct event* e = find(h, K_EVENT);
  if (e == NULL) RETURN(INVALID_HANDLE);
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuEventRecord", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (e->h.ctx != s->h.ctx) RETURN(INVALID_HANDLE);
  struct op* op = new_op(OP_RECORD);
  if (op == NULL) RETURN(OUT_OF_MEMORY);
  op->event = e;
  e->stream = s;
  e->captured = s->capturing;
  if (!s->capturing) op->record_id = ++e->records;
  enqueue(s, op);
  RETURN(SUCCESS);
}

static CUresult fake_cuEventSynchronize(struct event* h) {
  LOCK();
  struct event* e = find(h, K_EVENT);
  if (e == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&e->h);
  if (r == SUCCESS) r = injected("cuEventSynchronize", e->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (e->captured) RETURN(CAPTURED_EVENT);
  if (e->done < e->records && (r = run_until_record(e->stream, e, e->records)) != SUCCESS) RETURN(r);
  trim_pools(e->h.ctx);
  RETURN(SUCCESS);
}

static CUresult fake_cuEventQuery(struct event* h) {
  LOCK();
  struct event* e = find(h, K_EVENT);
  if (e == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&e->h);
  if (r == SUCCESS) r = injected("cuEventQuery", e->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (e->captured) RETURN(CAPTURED_EVENT);
  if (e->done < e->records && e->stream->head != NULL && (r = run_head(e->stream)) != SUCCESS) RETURN(r);
  RETURN(e->done >= e->records ? SUCCESS : NOT_READY);
}

static CUresult fake_cuEventElapsedTime(float* ms, struct event* start, struct event* end) {
  LOCK();
  struct event* a = find(start, K_EVENT);
  struct event* b = find(end, K_EVENT);
  if (a == NULL || b == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&a->h);
  if (r == SUCCESS) r = need_owner(&b->h);
  if (r == SUCCESS) r = injected("cuEventElapsedTime", a->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (ms == NULL) RETURN(INVALID_VALUE);
  if ((a->flags & 2u) || (b->flags & 2u) || a->records == 0 || b->records == 0) RETURN(INVALID_HANDLE);
  if (a->captured || b->captured) RETURN(CAPTURED_EVENT);
  if (a->done < a->records || b->done < b->records) RETURN(NOT_READY);
  *ms = (float)(b->time_ms - a->time_ms);
  RETURN(SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

static CUresult fake_cuMemPoolCreate(struct pool** out, const CUmemPoolProps* props) {
  LOCK();
  if (out == NULL || props == NULL) RETURN(INVALID_VALUE);
  int dev = props->location.id;
  CUresult r = check_device(dev);
  if (r != SUCCESS) RETURN(r == INVALID_DEVICE ? INVALID_VALUE : r);
  struct CUctx_st* ctx = &contexts[dev];
  if (ctx->retained <= 0) RETURN(INVALID_CONTEXT);
  if (ctx->sticky) RETURN(ctx->sticky);
  if ((r = injected("cuMemPoolCreate", ctx)) != SUCCESS) RETURN(r);
  if (props->allocType != 1 || props->location.type != 1 || (props->handleTypes & ~0xf) != 0 ||
      props->win32SecurityAttributes != NULL) {
    RETURN(INVALID_VALUE);
  }
  for (size_t i = 0; i < sizeof(props->reserved); ++i) {
    if (props->reserved[i] != 0) RETURN(INVALID_VALUE);
  }
  if ((props->handleTypes & ~1) != 0) RETURN(NOT_SUPPORTED); /* only POSIX fds here */
  struct pool* p = calloc(1, sizeof(struct pool));
  if (p == NULL) RETURN(OUT_OF_MEMORY);
  p->fd = -1;
  if (props->handleTypes & 1) {
    p->fd = memfd_create("fake-cuda-pool", MFD_CLOEXEC);
    if (p->fd < 0 || ftruncate(p->fd, (off_t)kPoolFileBytes) != 0) {
      if (p->fd >= 0) close(p->fd);
      free(p);
      RETURN(OUT_OF_MEMORY);
    }
    p->base = mmap(NULL, kPoolFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, 0);
    if (p->base == MAP_FAILED) {
      close(p->fd);
      free(p);
      RETURN(OUT_OF_MEMORY);
    }
    p->capacity = kPoolFileBytes;
  }
  obj_init(&p->h, K_POOL, ctx);
  p->dev = dev;
  *out = p;
  RETURN(SUCCESS);
}

static CUresult fake_cuMemPoolDestroy(struct pool* h) {
  LOCK();
  struct pool* p = find(h, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  CUresult r = p->h.ctx->sticky;
  if (r == SUCCESS) r = injected("cuMemPoolDestroy", p->h.ctx);
  if (r != SUCCESS && r != p->h.ctx->sticky) RETURN(r);
  /* Outstanding allocations keep their memory until freed (an exportable
   * pool's file stays mapped for them). An imported pool unmaps its file:
   * its pointers go with it. */
  obj_kill(&p->h);
  p->destroyed = 1;
  if (p->imported) {
    for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
      struct devmem* m = (struct devmem*)o;
      if (o->kind == K_DEVICE && o->alive && m->pool == p) {
        m->p = NULL;
        obj_kill(o);
      }
    }
    munmap(p->base, p->capacity);
    p->base = NULL;
  } else if (p->fd >= 0 && p->used == 0) {
    munmap(p->base, p->capacity);
    close(p->fd);
    p->base = NULL;
    p->fd = -1;
  }
  trim(p);
  RETURN(r);
}

static CUresult fake_cuMemPoolSetAttribute(struct pool* h, int attr, void* value) {
  LOCK();
  struct pool* p = find(h, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  if (p->h.ctx->sticky) RETURN(p->h.ctx->sticky);
  CUresult r = injected("cuMemPoolSetAttribute", p->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (value == NULL) RETURN(INVALID_VALUE);
  switch (attr) {
    case 1: case 2: case 3: RETURN(SUCCESS); /* the reuse policies: accepted, not modelled */
    case 4: p->threshold = *(unsigned long long*)value; RETURN(SUCCESS);
    default: RETURN(INVALID_VALUE);
  }
}

static CUresult fake_cuMemPoolGetAttribute(struct pool* h, int attr, void* value) {
  LOCK();
  struct pool* p = find(h, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  if (p->h.ctx->sticky) RETURN(p->h.ctx->sticky);
  if (value == NULL) RETURN(INVALID_VALUE);
  unsigned long long* v = value;
  switch (attr) {
    case 4: *v = p->threshold; RETURN(SUCCESS);
    case 5: *v = p->reserved; RETURN(SUCCESS);
    case 7: *v = p->used; RETURN(SUCCESS);
    default: RETURN(INVALID_VALUE);
  }
}

static CUresult fake_cuMemAllocFromPoolAsync(CUdeviceptr* out, size_t bytes, struct pool* ph, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemAllocFromPoolAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  struct pool* p = find(ph, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  if (out == NULL || bytes == 0 || p->h.ctx != s->h.ctx || p->imported) RETURN(INVALID_VALUE);
  if (s->capturing) RETURN(NOT_SUPPORTED);
  size_t used = p->used + bytes;
  if (used > p->reserved) {
    size_t growth = used - p->reserved;
    if (device_reserved(p->dev) + growth > limit_of(p->dev)) {
      /* Before failing, the pool gives back what it holds unused. */
      p->reserved = p->used;
      if (device_reserved(p->dev) + bytes > limit_of(p->dev)) RETURN(OUT_OF_MEMORY);
    }
  }
  struct devmem* m = calloc(1, sizeof(struct devmem));
  char* mem = NULL;
  if (p->fd >= 0) {
    size_t rounded = (bytes + 511) / 512 * 512;
    if (m != NULL && rounded <= p->capacity - p->bump) {
      mem = p->base + p->bump;
      p->bump += rounded;
      m->in_file = 1;
    }
  } else {
    mem = malloc(bytes);
  }
  if (m == NULL || mem == NULL) {
    free(m);
    if (p->fd < 0) free(mem);
    RETURN(OUT_OF_MEMORY);
  }
  memset(mem, 0xcd, bytes); /* like fresh device memory: not zeroed */
  obj_init(&m->h, K_DEVICE, s->h.ctx);
  m->p = mem;
  m->n = bytes;
  m->pool = p;
  p->used = used;
  if (p->reserved < used) p->reserved = used;
  *out = (CUdeviceptr)(uintptr_t)mem;
  RETURN(SUCCESS);
}

static CUresult fake_cuMemFreeAsync(CUdeviceptr ptr, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemFreeAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  struct devmem* m = NULL;
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind == K_DEVICE && o->alive && (uintptr_t)((struct devmem*)o)->p == ptr) m = (struct devmem*)o;
  }
  if (m == NULL || m->free_queued || m->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  if (s->capturing) RETURN(NOT_SUPPORTED);
  struct op* op = new_op(OP_FREE);
  if (op == NULL) RETURN(OUT_OF_MEMORY);
  op->mem = m;
  m->free_queued = 1;
  enqueue(s, op);
  RETURN(SUCCESS);
}

/* CUDA IPC: an exportable pool's memory file, an allocation's range in it,
 * and their import by another process (which maps the same file). */
static CUresult fake_cuMemPoolExportToShareableHandle(void* handle_out, struct pool* h, int type,
                                                     unsigned long long flags) {
  LOCK();
  struct pool* p = find(h, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  if (p->h.ctx->sticky) RETURN(p->h.ctx->sticky);
  CUresult r = injected("cuMemPoolExportToShareableHandle", p->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (handle_out == NULL || flags != 0 || type != 1 || p->fd < 0 || p->imported) RETURN(INVALID_VALUE);
  int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) RETURN(OUT_OF_MEMORY);
  *(int*)handle_out = fd;
  RETURN(SUCCESS);
}

static struct devmem* live_devmem_at(CUdeviceptr ptr) {
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    struct devmem* m = (struct devmem*)o;
    if (o->kind == K_DEVICE && o->alive && !m->free_queued && (uintptr_t)m->p == ptr) return m;
  }
  return NULL;
}

static CUresult fake_cuMemPoolExportPointer(struct export_data* out, CUdeviceptr ptr) {
  LOCK();
  struct devmem* m = live_devmem_at(ptr);
  if (out == NULL || m == NULL || !m->in_file || m->imported) RETURN(INVALID_VALUE);
  if (m->h.ctx->sticky) RETURN(m->h.ctx->sticky);
  memset(out, 0, sizeof(*out));
  memcpy(out->magic, kExportMagic, sizeof(kExportMagic));
  out->offset = (unsigned long long)(m->p - m->pool->base);
  out->bytes = m->n;
  RETURN(SUCCESS);
}

static CUresult fake_cuMemPoolImportFromShareableHandle(struct pool** out, void* handle, int type,
                                                       unsigned long long flags) {
  LOCK();
  struct CUctx_st* ctx = current();
  if (ctx == NULL) RETURN(INVALID_CONTEXT);
  if (ctx->sticky) RETURN(ctx->sticky);
  if (out == NULL || type != 1 || flags != 0) RETURN(INVALID_VALUE);
  int fd = (int)(intptr_t)handle;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size != kPoolFileBytes) RETURN(INVALID_VALUE);
  struct pool* p = calloc(1, sizeof(struct pool));
  if (p == NULL) RETURN(OUT_OF_MEMORY);
  p->base = mmap(NULL, kPoolFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p->base == MAP_FAILED) {
    free(p);
    RETURN(INVALID_VALUE);
  }
  p->fd = -1; /* the caller keeps (and closes) its fd */
  p->capacity = kPoolFileBytes;
  p->imported = 1;
  obj_init(&p->h, K_POOL, ctx);
  p->dev = (int)(ctx - contexts);
  *out = p;
  RETURN(SUCCESS);
}

static CUresult fake_cuMemPoolImportPointer(CUdeviceptr* out, struct pool* h, const struct export_data* data) {
  LOCK();
  struct pool* p = find(h, K_POOL);
  if (p == NULL) RETURN(INVALID_HANDLE);
  if (p->h.ctx->sticky) RETURN(p->h.ctx->sticky);
  if (out == NULL || data == NULL || !p->imported || memcmp(data->magic, kExportMagic, sizeof(kExportMagic)) != 0 ||
      data->bytes == 0 || data->offset > p->capacity || data->bytes > p->capacity - data->offset) {
    RETURN(INVALID_VALUE);
  }
  struct devmem* m = calloc(1, sizeof(struct devmem));
  if (m == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&m->h, K_DEVICE, p->h.ctx);
  m->p = p->base + data->offset;
  m->n = (size_t)data->bytes;
  m->pool = p;
  m->in_file = 1;
  m->imported = 1;
  *out = (CUdeviceptr)(uintptr_t)m->p;
  RETURN(SUCCESS);
}

/* The synchronous copy to host (a client reading a CUDA tensor it was
 * handed): at once, from inside one live allocation of the current
 * context (the NULL stream's ordering is not modelled). */
static CUresult fake_cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  LOCK();
  struct CUctx_st* ctx = current();
  if (ctx == NULL) RETURN(INVALID_CONTEXT);
  if (ctx->sticky) RETURN(ctx->sticky);
  CUresult r = injected("cuMemcpyDtoH", ctx);
  if (r != SUCCESS) RETURN(r);
  if (n == 0) RETURN(SUCCESS);
  struct devmem* m = find_range(src, n);
  if (dst == NULL || m == NULL || m->h.ctx != ctx) RETURN(INVALID_VALUE);
  memcpy(dst, (const void*)(uintptr_t)src, n);
  RETURN(SUCCESS);
}

/* Only imported pointers here (warpd allocates from pools). */
static CUresult fake_cuMemFree(CUdeviceptr ptr) {
  LOCK();
  struct devmem* m = live_devmem_at(ptr);
  if (m == NULL || !m->imported) RETURN(INVALID_VALUE);
  m->p = NULL;
  obj_kill(&m->h);
  RETURN(SUCCESS);
}

/* Queues a copy; `pageable_src`: read the source now; `pageable_dst`: return
 * only once done. */
static CUresult copy(struct stream* s, void* dst, const void* src, size_t n, int pageable_src, int pageable_dst) {
  struct op* op = new_op(OP_COPY);
  if (op == NULL) return OUT_OF_MEMORY;
  op->dst = dst;
  op->src = src;
  op->bytes = n;
  if (pageable_src || pageable_dst) pageable_copies++;
  if (pageable_src && !s->capturing) {
    op->owned = malloc(n > 0 ? n : 1);
    if (op->owned == NULL) {
      free(op);
      return OUT_OF_MEMORY;
    }
    memcpy(op->owned, src, n);
    op->src = op->owned;
  }
  enqueue(s, op);
  if (pageable_dst && !s->capturing) {
    while (s->head != NULL) {
      int last = s->head == op;
      CUresult r = run_head(s);
      if (r != SUCCESS) return r;
      if (last) break;
    }
  }
  return SUCCESS;
}

static CUresult fake_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemcpyHtoDAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (n == 0) RETURN(SUCCESS);
  struct devmem* m = find_range(dst, n);
  if (m == NULL || src == NULL || m->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  RETURN(copy(s, (void*)(uintptr_t)dst, src, n, !is_pinned(src, n), 0));
}

static CUresult fake_cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemcpyDtoHAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (n == 0) RETURN(SUCCESS);
  struct devmem* m = find_range(src, n);
  if (m == NULL || dst == NULL || m->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  RETURN(copy(s, dst, (const void*)(uintptr_t)src, n, 0, !is_pinned(dst, n)));
}

static CUresult fake_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemcpyDtoDAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (n == 0) RETURN(SUCCESS);
  struct devmem* a = find_range(dst, n);
  struct devmem* b = find_range(src, n);
  if (a == NULL || b == NULL || a->h.ctx != s->h.ctx || b->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  if (dst < src + n && src < dst + n) RETURN(ILLEGAL_STATE);
  RETURN(copy(s, (void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n, 0, 0));
}

/* Between two devices' memory: each range inside a live allocation of its
 * own context; the stream is either context's. */
static CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, struct CUctx_st* dst_ctx, CUdeviceptr src,
                                       struct CUctx_st* src_ctx, size_t n, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuMemcpyPeerAsync", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (dst_ctx < contexts || dst_ctx >= contexts + MAX_DEVICES || src_ctx < contexts ||
      src_ctx >= contexts + MAX_DEVICES || dst_ctx->retained <= 0 || src_ctx->retained <= 0) {
    RETURN(INVALID_CONTEXT);
  }
  if (s->h.ctx != dst_ctx && s->h.ctx != src_ctx) RETURN(INVALID_VALUE);
  if (src_ctx->sticky) RETURN(src_ctx->sticky);
  if (n == 0) RETURN(SUCCESS);
  struct devmem* a = find_range(dst, n);
  struct devmem* b = find_range(src, n);
  if (a == NULL || b == NULL || a->h.ctx != dst_ctx || b->h.ctx != src_ctx) RETURN(INVALID_VALUE);
  if (s->capturing) RETURN(NOT_SUPPORTED);
  peer_copies++;
  RETURN(copy(s, (void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n, 0, 0));
}

static CUresult fill(CUdeviceptr dst, unsigned value, size_t count, size_t width, struct stream* sh, const char* call) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected(call, s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (count == 0) RETURN(SUCCESS);
  if (count > SIZE_MAX / width || dst % width != 0) RETURN(INVALID_VALUE);
  struct devmem* m = find_range(dst, count * width);
  if (m == NULL || m->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  struct op* op = new_op(width == 1 ? OP_SET8 : OP_SET32);
  if (op == NULL) RETURN(OUT_OF_MEMORY);
  op->dst = (void*)(uintptr_t)dst;
  op->bytes = count;
  op->value = value;
  enqueue(s, op);
  RETURN(SUCCESS);
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, struct stream* s) {
  return fill(dst, value, n, 1, s, "cuMemsetD8Async");
}

static CUresult fake_cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, struct stream* s) {
  return fill(dst, value, n, 4, s, "cuMemsetD32Async");
}

static CUresult fake_cuMemHostAlloc(void** out, size_t bytes, unsigned int flags) {
  LOCK();
  struct CUctx_st* ctx;
  CUresult r = need_ctx(&ctx);
  if (r == SUCCESS) r = injected("cuMemHostAlloc", ctx);
  if (r == SUCCESS) r = capture_forbids();
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || bytes == 0 || (flags & ~7u) != 0) RETURN(INVALID_VALUE);
  struct host* h = calloc(1, sizeof(struct host));
  char* mem = malloc(bytes);
  if (h == NULL || mem == NULL) {
    free(h);
    free(mem);
    RETURN(OUT_OF_MEMORY);
  }
  obj_init(&h->h, K_HOST, ctx);
  h->p = mem;
  h->n = bytes;
  *out = mem;
  RETURN(SUCCESS);
}

static CUresult fake_cuMemFreeHost(void* p) {
  LOCK();
  struct host* h = NULL;
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind == K_HOST && o->alive && ((struct host*)o)->p == p) h = (struct host*)o;
  }
  if (h == NULL) RETURN(INVALID_VALUE);
  CUresult r = need_owner(&h->h);
  if (r == SUCCESS) r = injected("cuMemFreeHost", h->h.ctx);
  if (r == SUCCESS) r = capture_forbids();
  if (r != SUCCESS && r != h->h.ctx->sticky) RETURN(r);
  free(h->p);
  h->p = NULL;
  obj_kill(&h->h);
  RETURN(r);
}

/* ------------------------------------------------------------------ */
/* Modules and launches                                                 */

static int write_log(void* buffer, size_t capacity, const char* text) {
  if (buffer == NULL || capacity == 0) return 0;
  snprintf(buffer, capacity, "%s", text);
  size_t n = strlen(buffer) + 1;
  return (int)n;
}

/* Writes `text` to the JIT log buffers the options name, and the bytes
 * written back into their size options, as the driver does. */
static void jit_logs(unsigned n, const int* options, void** values, const char* error, const char* info) {
  void* error_buf = NULL;
  void* info_buf = NULL;
  size_t error_cap = 0, info_cap = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 5) error_buf = values[i];
    if (options[i] == 6) error_cap = (size_t)(uintptr_t)values[i];
    if (options[i] == 3) info_buf = values[i];
    if (options[i] == 4) info_cap = (size_t)(uintptr_t)values[i];
  }
  int error_n = write_log(error_buf, error_cap, error);
  int info_n = write_log(info_buf, info_cap, info);
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 6) values[i] = (void*)(uintptr_t)error_n;
    if (options[i] == 4) values[i] = (void*)(uintptr_t)info_n;
  }
}

/* The line (1-based) of `at` in `text`. */
static int line_of(const char* text, const char* at) {
  int line = 1;
  for (const char* p = text; p < at; ++p) line += *p == '\n';
  return line;
}

/* Checks PTX as ptxas would the few things the fake knows: a .version the
 * driver's JIT accepts (ISA 9.0, CUDA 13.0) and a .target the device has. */
static CUresult check_ptx(const char* ptx, int dev, char* log, size_t cap) {
  const char* v = strstr(ptx, ".version");
  const char* t = strstr(ptx, ".target");
  int major = 0, minor = 0, sm = 0;
  if (v == NULL || sscanf(v, ".version %d.%d", &major, &minor) != 2) {
    snprintf(log, cap, "ptxas application ptx input, line 1; fatal   : Missing .version directive at start of file");
    return INVALID_PTX;
  }
  if (major * 10 + minor > 90) {
    snprintf(log, cap,
             "ptxas application ptx input, line %d; fatal   : Unsupported .version %d.%d; current version is '9.0'",
             line_of(ptx, v), major, minor);
    return UNSUPPORTED_PTX_VERSION;
  }
  if (t == NULL || sscanf(t, ".target sm_%d", &sm) != 1) {
    snprintf(log, cap, "ptxas application ptx input, line %d; fatal   : Missing .target directive", line_of(ptx, v));
    return INVALID_PTX;
  }
  if (sm > cc_major(dev) * 10 + cc_minor(dev)) {
    snprintf(log, cap,
             "ptxas application ptx input, line %d; error   : SM version specified by .target is higher than default "
             "SM version assumed",
             line_of(ptx, t));
    return INVALID_PTX;
  }
  return SUCCESS;
}

static CUresult fake_cuModuleLoadDataEx(struct module** out, const void* image, unsigned int n, int* options,
                                        void** values) {
  LOCK();
  struct CUctx_st* ctx;
  CUresult r = need_ctx(&ctx);
  if (r == SUCCESS) r = injected("cuModuleLoadDataEx", ctx);
  if (r == SUCCESS) r = capture_forbids();
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || image == NULL || (n > 0 && (options == NULL || values == NULL))) RETURN(INVALID_VALUE);
  const unsigned char* bytes = image;
  int is_elf = memcmp(bytes, "\x7f" "ELF", 4) == 0;
  size_t size = 0;
  char log[512] = "";
  if (is_elf) {
    /* ELF64: the image ends after its section or program header table. */
    uint64_t shoff, phoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    memcpy(&phoff, bytes + 32, 8);
    memcpy(&shoff, bytes + 40, 8);
    memcpy(&phentsize, bytes + 54, 2);
    memcpy(&phnum, bytes + 56, 2);
    memcpy(&shentsize, bytes + 58, 2);
    memcpy(&shnum, bytes + 60, 2);
    size_t a = (size_t)(shoff + (uint64_t)shentsize * shnum), b = (size_t)(phoff + (uint64_t)phentsize * phnum);
    size = a > b ? a : b;
    if (bytes[4] != 2 || size < 64) {
      jit_logs(n, options, values, "not a 64-bit ELF image", "");
      RETURN(INVALID_IMAGE);
    }
  } else {
    size = strlen(image) + 1;
    r = check_ptx(image, ctx->dev, log, sizeof(log));
    if (r != SUCCESS) {
      jit_logs(n, options, values, log, "");
      RETURN(r);
    }
  }
  struct module* m = calloc(1, sizeof(struct module));
  char* copy_of = malloc(size);
  if (m == NULL || copy_of == NULL) {
    free(m);
    free(copy_of);
    RETURN(OUT_OF_MEMORY);
  }
  memcpy(copy_of, image, size);
  obj_init(&m->h, K_MODULE, ctx);
  m->image = copy_of;
  m->size = size;
  m->is_elf = is_elf;
  snprintf(log, sizeof(log), "fake JIT: module loaded for sm_%d%d", cc_major(ctx->dev), cc_minor(ctx->dev));
  jit_logs(n, options, values, "", log);
  *out = m;
  RETURN(SUCCESS);
}

static CUresult fake_cuModuleUnload(struct module* h) {
  LOCK();
  struct module* m = find(h, K_MODULE);
  if (m == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&m->h);
  if (r == SUCCESS) r = injected("cuModuleUnload", m->h.ctx);
  if (r == SUCCESS) r = capture_forbids();
  if (r != SUCCESS && r != m->h.ctx->sticky) RETURN(r);
  if (r == SUCCESS) {
    /* Undefined in the driver: refused here, so tests catch it. */
    for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
      if (o->kind != K_STREAM || !o->alive) continue;
      for (struct op* op = ((struct stream*)o)->head; op != NULL; op = op->next) {
        if (op->kind == OP_KERNEL && op->function->module == m) RETURN(ILLEGAL_STATE);
      }
    }
  }
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    if (o->kind == K_FUNCTION && o->alive && ((struct function*)o)->module == m) obj_kill(o);
  }
  free(m->image);
  m->image = NULL;
  obj_kill(&m->h);
  RETURN(r);
}

/* Reads the parameter list after ".entry NAME(" in PTX: each ".param" with
 * its type (or .b8 array) gives a size and alignment. */
static int parse_params(const char* p, struct function* f) {
  int count = 0;
  const char* end = strchr(p, ')');
  if (end == NULL) return -1;
  while ((p = strstr(p, ".param")) != NULL && p < end && count < 64) {
    p += 6;
    size_t align = 0, size = 0;
    const char* comma = strchr(p, ',');
    const char* stop = comma != NULL && comma < end ? comma : end;
    const char* a = strstr(p, ".align");
    if (a != NULL && a < stop) align = (size_t)strtoul(a + 6, NULL, 10);
    const char* ty = p;
    while ((ty = strchr(ty, '.')) != NULL && ty < stop) {
      ty++;
      if (strncmp(ty, "align", 5) == 0 || strncmp(ty, "ptr", 3) == 0 || strncmp(ty, "global", 6) == 0) continue;
      int bits = atoi(ty + 1);
      if (bits > 0 && strchr("usfb", *ty) != NULL) {
        size = (size_t)bits / 8;
        break;
      }
    }
    if (size == 0) return -1;
    size_t element = size;
    const char* bracket = strchr(p, '[');
    if (bracket != NULL && bracket < stop) size *= (size_t)strtoul(bracket + 1, NULL, 10);
    if (size == 0) return -1;
    f->params[count].size = size;
    f->params[count].align = align != 0 ? align : element;
    count++;
    p = stop;
  }
  return count;
}

static CUresult fake_cuModuleGetFunction(struct function** out, struct module* h, const char* name) {
  LOCK();
  struct module* m = find(h, K_MODULE);
  if (m == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&m->h);
  if (r == SUCCESS) r = injected("cuModuleGetFunction", m->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || name == NULL || strlen(name) >= sizeof(((struct function*)0)->name)) RETURN(INVALID_VALUE);
  size_t len = strlen(name);
  int params = -1;
  struct function tmp;
  if (m->is_elf) {
    int found = 0;
    for (size_t i = 1; i + len < m->size && !found; ++i) {
      found = m->image[i - 1] == '\0' && memcmp(m->image + i, name, len) == 0 && m->image[i + len] == '\0';
    }
    if (!found) RETURN(NOT_FOUND);
  } else {
    const char* p = m->image;
    const char* at = NULL;
    while ((p = strstr(p, ".entry")) != NULL) {
      p += 6;
      while (*p == ' ' || *p == '\t') p++;
      if (strncmp(p, name, len) == 0 && (p[len] == '(' || p[len] == ' ' || p[len] == '\n')) {
        at = p + len;
        break;
      }
    }
    if (at == NULL) RETURN(NOT_FOUND);
    at = strchr(at, '(');
    params = at != NULL ? parse_params(at, &tmp) : 0;
    if (params < 0) RETURN(INVALID_PTX);
  }
  /* One handle per (module, name), as the driver's. */
  for (struct obj* o = all_objs; o != NULL; o = o->next_all) {
    struct function* f = (struct function*)o;
    if (o->kind == K_FUNCTION && o->alive && f->module == m && strcmp(f->name, name) == 0) {
      *out = f;
      RETURN(SUCCESS);
    }
  }
  struct function* f = calloc(1, sizeof(struct function));
  if (f == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&f->h, K_FUNCTION, m->h.ctx);
  f->module = m;
  snprintf(f->name, sizeof(f->name), "%s", name);
  f->param_count = params;
  if (params > 0) memcpy(f->params, tmp.params, sizeof(struct param) * (size_t)params);
  *out = f;
  RETURN(SUCCESS);
}

static CUresult fake_cuLaunchKernel(struct function* fh, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, unsigned shared, struct stream* sh, void** params,
                                    void** extra) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuLaunchKernel", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  struct function* f = find(fh, K_FUNCTION);
  if (f == NULL) RETURN(INVALID_HANDLE);
  if (f->h.ctx != s->h.ctx) RETURN(INVALID_CONTEXT);
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gx > 0x7fffffffu || gy > 65535 ||
      gz > 65535 || bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024 || shared > 48 * 1024) {
    RETURN(INVALID_VALUE);
  }
  if (extra != NULL) RETURN(NOT_SUPPORTED); /* the packed-buffer form is not modelled */
  if (f->param_count > 0 && params == NULL) RETURN(INVALID_VALUE);
  struct op* op = new_op(OP_KERNEL);
  if (op == NULL) RETURN(OUT_OF_MEMORY);
  /* The parameters are read now: the caller's values may go once this
   * returns. Laid out as a kernel sees its parameter space. */
  size_t total = 0;
  for (int i = 0; i < f->param_count; ++i) {
    total = (total + f->params[i].align - 1) / f->params[i].align * f->params[i].align + f->params[i].size;
  }
  op->owned = calloc(1, total > 0 ? total : 1);
  if (op->owned == NULL) {
    free(op);
    RETURN(OUT_OF_MEMORY);
  }
  size_t at = 0;
  for (int i = 0; i < f->param_count; ++i) {
    at = (at + f->params[i].align - 1) / f->params[i].align * f->params[i].align;
    if (params[i] == NULL) {
      free_op(op);
      RETURN(INVALID_VALUE);
    }
    memcpy((char*)op->owned + at, params[i], f->params[i].size);
    at += f->params[i].size;
  }
  op->param_bytes = total;
  op->param_count = f->param_count;
  op->function = f;
  snprintf(op->name, sizeof(op->name), "%s", f->name);
  unsigned dims[7] = {gx, gy, gz, bx, by, bz, shared};
  memcpy(op->dims, dims, sizeof(dims));
  op->fault = fault_next_launch;
  fault_next_launch = 0;
  op->hold_param = -1;
  if (hold_param >= 0 && hold_skip > 0) {
    hold_skip--;
  } else if (hold_param >= 0) {
    op->hold_param = hold_param;
    op->hold_offset = hold_offset;
    hold_param = -1;
  }
  static int launched;
  if (++launched == env_int("WARPD_FAKE_CUDA_FAULT_LAUNCH", 0)) op->fault = 700; /* CUDA_ERROR_ILLEGAL_ADDRESS */
  if (launched == env_int("WARPD_FAKE_CUDA_HOLD_LAUNCH", 0)) {
    op->hold_param = 0;
    op->hold_offset = 104;
  }
  enqueue(s, op);
  RETURN(SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Capture and graphs                                                   */

static CUresult fake_cuStreamBeginCapture_v2(struct stream* h, int mode) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (r == SUCCESS) r = injected("cuStreamBeginCapture", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (mode < 0 || mode > 2) RETURN(INVALID_VALUE);
  if (s->capturing) RETURN(ILLEGAL_STATE);
  struct graph* g = calloc(1, sizeof(struct graph));
  if (g == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&g->h, K_GRAPH, s->h.ctx);
  s->capturing = 1;
  s->capture_mode = mode;
  s->capture_invalid = 0;
  s->capture_thread = pthread_self();
  s->capture = g;
  if (mode == 0) global_captures++;
  if (mode != 2) thread_captures++;
  RETURN(SUCCESS);
}

static CUresult fake_cuStreamEndCapture(struct stream* h, struct graph** out) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(h, &s);
  if (r == SUCCESS) r = injected("cuStreamEndCapture", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || !s->capturing) RETURN(INVALID_VALUE);
  if (s->capture_mode != 2 && !pthread_equal(s->capture_thread, pthread_self())) RETURN(CAPTURE_WRONG_THREAD);
  s->capturing = 0;
  if (s->capture_mode == 0) global_captures--;
  if (s->capture_mode != 2) thread_captures--;
  struct graph* g = s->capture;
  s->capture = NULL;
  if (s->capture_invalid) {
    free_ops(g->head);
    g->head = g->tail = NULL;
    obj_kill(&g->h);
    *out = NULL;
    RETURN(CAPTURE_INVALIDATED);
  }
  *out = g;
  RETURN(SUCCESS);
}

static CUresult fake_cuGraphInstantiateWithFlags(struct exec** out, struct graph* gh, unsigned long long flags) {
  LOCK();
  struct graph* g = find(gh, K_GRAPH);
  if (g == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&g->h);
  if (r == SUCCESS) r = injected("cuGraphInstantiate", g->h.ctx);
  if (r != SUCCESS) RETURN(r);
  if (out == NULL || (flags & ~0xfull) != 0) RETURN(INVALID_VALUE);
  struct exec* e = calloc(1, sizeof(struct exec));
  if (e == NULL) RETURN(OUT_OF_MEMORY);
  obj_init(&e->h, K_EXEC, g->h.ctx);
  for (struct op* op = g->head; op != NULL; op = op->next) {
    struct op* c = clone_op(op);
    if (c == NULL) RETURN(OUT_OF_MEMORY);
    append(&e->head, &e->tail, c);
  }
  *out = e;
  RETURN(SUCCESS);
}

static CUresult fake_cuGraphLaunch(struct exec* eh, struct stream* sh) {
  LOCK();
  struct stream* s;
  CUresult r = need_stream(sh, &s);
  if (r == SUCCESS) r = injected("cuGraphLaunch", s->h.ctx);
  if (r != SUCCESS) RETURN(r);
  struct exec* e = find(eh, K_EXEC);
  if (e == NULL) RETURN(INVALID_HANDLE);
  if (e->h.ctx != s->h.ctx) RETURN(INVALID_VALUE);
  for (struct op* op = e->head; op != NULL; op = op->next) {
    struct op* c = clone_op(op);
    if (c == NULL) RETURN(OUT_OF_MEMORY);
    if (c->kind == OP_RECORD && !s->capturing) {
      c->record_id = ++c->event->records;
      c->event->stream = s;
      c->event->captured = 0;
    }
    if (c->kind == OP_KERNEL && fault_next_launch != 0) {
      c->fault = fault_next_launch;
      fault_next_launch = 0;
    }
    enqueue(s, c);
  }
  RETURN(SUCCESS);
}

static CUresult fake_cuGraphExecDestroy(struct exec* h) {
  LOCK();
  struct exec* e = find(h, K_EXEC);
  if (e == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&e->h);
  if (r == SUCCESS) r = injected("cuGraphExecDestroy", e->h.ctx);
  if (r != SUCCESS && r != e->h.ctx->sticky) RETURN(r);
  free_ops(e->head);
  e->head = e->tail = NULL;
  obj_kill(&e->h);
  RETURN(r);
}

static CUresult fake_cuGraphDestroy(struct graph* h) {
  LOCK();
  struct graph* g = find(h, K_GRAPH);
  if (g == NULL) RETURN(INVALID_HANDLE);
  CUresult r = need_owner(&g->h);
  if (r == SUCCESS) r = injected("cuGraphDestroy", g->h.ctx);
  if (r != SUCCESS && r != g->h.ctx->sticky) RETURN(r);
  free_ops(g->head);
  g->head = g->tail = NULL;
  obj_kill(&g->h);
  RETURN(r);
}

/* ------------------------------------------------------------------ */
/* cuGetProcAddress                                                     */

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
    {"cuDevicePrimaryCtxReset", 11000, (void*)fake_cuDevicePrimaryCtxReset_v2},
    {"cuCtxPushCurrent", 4000, (void*)fake_cuCtxPushCurrent_v2},
    {"cuCtxPopCurrent", 4000, (void*)fake_cuCtxPopCurrent_v2},
    {"cuCtxSetCurrent", 4000, (void*)fake_cuCtxSetCurrent},
    {"cuStreamCreate", 2000, (void*)fake_cuStreamCreate},
    {"cuStreamDestroy", 4000, (void*)fake_cuStreamDestroy_v2},
    {"cuStreamSynchronize", 2000, (void*)fake_cuStreamSynchronize},
    {"cuStreamQuery", 2000, (void*)fake_cuStreamQuery},
    {"cuStreamWaitEvent", 3020, (void*)fake_cuStreamWaitEvent},
    {"cuEventCreate", 2000, (void*)fake_cuEventCreate},
    {"cuEventDestroy", 4000, (void*)fake_cuEventDestroy_v2},
    {"cuEventRecord", 2000, (void*)fake_cuEventRecord},
    {"cuEventSynchronize", 2000, (void*)fake_cuEventSynchronize},
    {"cuEventQuery", 2000, (void*)fake_cuEventQuery},
    {"cuEventElapsedTime", 2000, (void*)fake_cuEventElapsedTime},
    {"cuMemPoolCreate", 11020, (void*)fake_cuMemPoolCreate},
    {"cuMemPoolDestroy", 11020, (void*)fake_cuMemPoolDestroy},
    {"cuMemPoolSetAttribute", 11020, (void*)fake_cuMemPoolSetAttribute},
    {"cuMemPoolGetAttribute", 11020, (void*)fake_cuMemPoolGetAttribute},
    {"cuMemPoolExportToShareableHandle", 11020, (void*)fake_cuMemPoolExportToShareableHandle},
    {"cuMemPoolExportPointer", 11020, (void*)fake_cuMemPoolExportPointer},
    {"cuMemPoolImportFromShareableHandle", 11020, (void*)fake_cuMemPoolImportFromShareableHandle},
    {"cuMemPoolImportPointer", 11020, (void*)fake_cuMemPoolImportPointer},
    {"cuMemFree", 3020, (void*)fake_cuMemFree},
    {"cuMemcpyDtoH", 3020, (void*)fake_cuMemcpyDtoH_v2},
    {"cuMemAllocFromPoolAsync", 11020, (void*)fake_cuMemAllocFromPoolAsync},
    {"cuMemFreeAsync", 11020, (void*)fake_cuMemFreeAsync},
    {"cuMemcpyHtoDAsync", 3020, (void*)fake_cuMemcpyHtoDAsync_v2},
    {"cuMemcpyDtoHAsync", 3020, (void*)fake_cuMemcpyDtoHAsync_v2},
    {"cuMemcpyDtoDAsync", 3020, (void*)fake_cuMemcpyDtoDAsync_v2},
    {"cuMemcpyPeerAsync", 4000, (void*)fake_cuMemcpyPeerAsync},
    {"cuMemsetD8Async", 3020, (void*)fake_cuMemsetD8Async},
    {"cuMemsetD32Async", 3020, (void*)fake_cuMemsetD32Async},
    {"cuMemHostAlloc", 2020, (void*)fake_cuMemHostAlloc},
    {"cuMemFreeHost", 2000, (void*)fake_cuMemFreeHost},
    {"cuModuleLoadDataEx", 2010, (void*)fake_cuModuleLoadDataEx},
    {"cuModuleUnload", 2000, (void*)fake_cuModuleUnload},
    {"cuModuleGetFunction", 2000, (void*)fake_cuModuleGetFunction},
    {"cuLaunchKernel", 4000, (void*)fake_cuLaunchKernel},
    {"cuStreamBeginCapture", 10010, (void*)fake_cuStreamBeginCapture_v2},
    {"cuStreamEndCapture", 10000, (void*)fake_cuStreamEndCapture},
    {"cuGraphInstantiateWithFlags", 11040, (void*)fake_cuGraphInstantiateWithFlags},
    {"cuGraphLaunch", 10000, (void*)fake_cuGraphLaunch},
    {"cuGraphExecDestroy", 10000, (void*)fake_cuGraphExecDestroy},
    {"cuGraphDestroy", 10000, (void*)fake_cuGraphDestroy},
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
