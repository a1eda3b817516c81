// warpd device runtime: the launch ABI shared by generated code and the runtime.
//
// A kernel's CPU entry point is
//   extern "C" void wpk_<kernel>_cpu(wp::launch_ctx* ctx, const void* args,
//                                    wp::int64 begin, wp::int64 end);
// and runs the threads with linear ids [begin, end). Its CUDA entry point is
//   extern "C" __global__ void wpk_<kernel>_cuda(wp::launch_ctx* ctx, wpa_<kernel> args);
// with a grid-stride loop over all ids. `args` is the kernel's argument block
// (docs/launch_abi.md). The runtime owns ctx; kernels write only ctx->fault
// and print records through ctx->output (print.h), and read the launching
// session's objects through ctx->objects (objects.h).
#pragma once

#include "warpd/native/core.h"

namespace wp {

// The launch grid: up to 4 dimensions, row-major thread ids.
struct launch_bounds {
  int32 shape[4];
  int32 ndim;
  int32 reserved;
  int64 size;  // product of shape
};

enum fault_kind : int32 {
  FAULT_NONE = 0,
  FAULT_INDEX_OUT_OF_BOUNDS = 1,
  FAULT_CANCELLED = 2,
  // A backward pass met a loop that ran more iterations than its adjoint
  // keeps the starting values of, where those values decide the gradient
  // (compiler/codegen/adjoint.cc): `index` iterations, `extent` kept.
  FAULT_ADJOINT_LOOP = 3,
  // An object query (objects.h) named an id that is not an object of the
  // expected kind in the launch's object table: `index` holds the id's
  // bits, `dim` the kind the query expected, `extent` the kind the id has
  // there (OBJECT_NONE: not in the table: made up, freed, or another
  // session's).
  FAULT_UNKNOWN_OBJECT = 4,
  // An object query's index (hash_grid_point_id's, a BVH query's root, a
  // mesh's face or vertex index) outside the object's `extent` elements;
  // `dim` holds the object's kind (or OBJECT_MESH_FACES/_SLOTS below).
  FAULT_OBJECT_INDEX = 5,
};

// The kinds of server-side objects kernels query by id.
enum object_kind : int32 {
  OBJECT_NONE = 0,
  OBJECT_HASH_GRID = 1,  // data: a hash_grid_t (hash_grid.h)
  OBJECT_BVH = 2,        // data: a bvh_t (bvh.h)
  OBJECT_MESH = 3,       // data: a mesh_t (mesh.h)
  OBJECT_VOLUME = 4,     // data: a volume_t (volume.h)
};

// FAULT_OBJECT_INDEX's `dim` for a mesh's face index (extent: its triangles)
// and for a slot of its flattened indices (extent: 3 * triangles); plain
// OBJECT_MESH is for a vertex index (extent: its points or velocities).
constexpr int32 OBJECT_MESH_FACES = 0x100 | OBJECT_MESH;
constexpr int32 OBJECT_MESH_SLOTS = 0x200 | OBJECT_MESH;

// One entry of a launch's object table: one live object of the launching
// session on the launch's device. The runtime sorts the entries by id.
struct object_entry {
  uint64 id;         // the object's handle: what kernels hold as a uint64
  int32 kind;        // object_kind
  int32 reserved;
  const void* data;  // the object's descriptor, of the type its kind names
};

// The first fault of a launch. `flag` is claimed with an atomic compare-and-swap
// so exactly one thread writes the rest; other threads see flag != 0 and stop.
struct fault_info {
  int32 flag;
  int32 kind;   // fault_kind
  int32 line;   // user source line of the faulting statement
  int32 dim;    // which index was out of range
  int64 index;  // the index value
  int64 extent; // the array's extent in that dimension
  int32 array_ndim;
  int32 reserved;
  int64 shape[4];
};

// The launch's output buffer for print()/printf() records (print.h). The
// runtime owns `data` and sets data and capacity (a multiple of 8; 0 and null
// when the kernel cannot print); kernels only reserve records with atomic
// adds on `used` and count them in `committed` once written. Records fill
// [0, committed) back to back; a record that does not fit is not written,
// and `dropped` counts it.
struct print_buffer {
  uint8* data;
  uint64 capacity;
  uint64 used;       // bytes reserved; may pass capacity (those records are dropped)
  uint64 committed;  // bytes of records completely written
  uint64 dropped;    // records that did not fit
};

// One record: this header, then the call's values back to back (`size`
// includes the header and is rounded up to a multiple of 8).
struct print_record_header {
  uint32 site;  // the print call site, an index into the module's print table
  uint32 size;
  int64 tid;    // linear thread id of the printing thread
};

struct launch_ctx {
  launch_bounds bounds;
  fault_info fault;
  int32 cancel;  // set by the runtime to stop a launch; checked at loop back-edges
  int32 reserved;
  print_buffer output;
  // The launch's object table (objects.h): `num_objects` entries sorted by
  // id, owned by the runtime for the launch's duration; null and 0 when the
  // session has no objects on this device.
  const object_entry* objects;
  int64 num_objects;
};

static_assert(sizeof(launch_bounds) == 32, "launch_bounds layout");
static_assert(sizeof(fault_info) == 72, "fault_info layout");
static_assert(sizeof(print_buffer) == 40, "print_buffer layout");
static_assert(sizeof(print_record_header) == 16, "print_record_header layout");
static_assert(sizeof(object_entry) == 24, "object_entry layout");
static_assert(sizeof(launch_ctx) == 168, "launch_ctx layout");
// No padding: output at 112, objects at 152 (docs/launch_abi.md).
static_assert(sizeof(launch_bounds) + sizeof(fault_info) + 2 * sizeof(int32) == 112, "launch_ctx output offset");
static_assert(112 + sizeof(print_buffer) == 152, "launch_ctx objects offset");

WP_FUNC bool claim_fault(launch_ctx* ctx) {
#if WP_CUDA
  return atomicCAS(&ctx->fault.flag, 0, 1) == 0;
#else
  int32 expected = 0;
  return __atomic_compare_exchange_n(&ctx->fault.flag, &expected, 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
#endif
}

WP_FUNC bool faulted(const launch_ctx* ctx) {
#if WP_CUDA
  return *(volatile const int32*)&ctx->fault.flag != 0;
#else
  return __atomic_load_n(&ctx->fault.flag, __ATOMIC_RELAXED) != 0;
#endif
}

// Iterations of `for (v = lo; step > 0 ? v < hi : v > hi; v += step)`
// without overflow (step 0: none); the fast blocks' unpolled loops
// (compiler/codegen/block_loops.h) count with it.
WP_FUNC uint64 loop_trips(int64 lo, int64 hi, int64 step) {
  if (step > 0) return hi > lo ? ((uint64)hi - (uint64)lo - 1) / (uint64)step + 1 : 0;
  if (step < 0) return lo > hi ? ((uint64)lo - (uint64)hi - 1) / (0 - (uint64)step) + 1 : 0;
  return 0;
}

// reversed(range(lo, hi, step)) as a loop of the form above: the same
// values, last first (Python's order). An empty range stays empty.
WP_FUNC int64 reversed_range_start(int64 lo, int64 hi, int64 step) {
  const uint64 n = loop_trips(lo, hi, step);
  return n ? (int64)((uint64)lo + (n - 1) * (uint64)step) : lo;
}
WP_FUNC int64 reversed_range_stop(int64 lo, int64 hi, int64 step) {
  if (loop_trips(lo, hi, step) == 0) return lo;
  return step > 0 ? lo - 1 : lo + 1;  // just past lo, which is in the range
}
WP_FUNC int64 reversed_range_step(int64 step) { return (int64)(0 - (uint64)step); }

// Checked at loop back-edges: a fault elsewhere or a cancel stops this thread.
WP_FUNC bool should_stop(const launch_ctx* ctx) {
#if WP_CUDA
  return *(volatile const int32*)&ctx->cancel != 0 || faulted(ctx);
#else
  return __atomic_load_n(&ctx->cancel, __ATOMIC_RELAXED) != 0 || faulted(ctx);
#endif
}

#if WP_CUDA
// A CUDA entry's grid-stride loop: body(t) for each of this thread's ids.
// Every thread polls for a fault or cancel at its first id and then every
// 32 ids, not per id: a poll is two loads of words that every thread of the
// launch reads, which the L2 cache serves one warp at a time (per id, the
// likely bound of a memory-bound kernel: saxpy reached a tenth of an H200's
// bandwidth). The launch size is read once, through the read-only cache
// (nothing writes the context's bounds while the kernel runs).
template <typename Body>
__device__ __forceinline__ void grid_stride(const launch_ctx* ctx, Body body) {
  const int64 n = __ldg(&ctx->bounds.size);
  const int64 stride = (int64)blockDim.x * gridDim.x;
  int32 k = 0;
  for (int64 t = (int64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride, ++k) {
    if ((k & 31) == 0 && WP_UNLIKELY(should_stop(ctx))) return;
    body(t);
  }
}
#endif

// Records an out-of-range index as the launch's fault; true when this call
// claimed the fault (it was the first).
WP_FUNC bool record_index_fault(launch_ctx* ctx, int32 line, int32 dim, int64 index, int64 extent) {
  if (!claim_fault(ctx)) return false;
  ctx->fault.kind = FAULT_INDEX_OUT_OF_BOUNDS;
  ctx->fault.line = line;
  ctx->fault.dim = dim;
  ctx->fault.index = index;
  ctx->fault.extent = extent;
  ctx->fault.array_ndim = 0;
  return true;
}

// Records FAULT_ADJOINT_LOOP for the loop at `line`.
WP_FUNC bool record_adjoint_loop_fault(launch_ctx* ctx, int32 line, int64 iterations, int64 kept) {
  if (!claim_fault(ctx)) return false;
  ctx->fault.kind = FAULT_ADJOINT_LOOP;
  ctx->fault.line = line;
  ctx->fault.dim = 0;
  ctx->fault.index = iterations;
  ctx->fault.extent = kept;
  ctx->fault.array_ndim = 0;
  return true;
}

// Thread coordinates of linear id `linear` in the launch grid.
WP_FUNC void tid_coords(const launch_bounds& b, int64 linear, int32* out, int32 n) {
  for (int32 d = n - 1; d >= 0; --d) {
    int32 extent = d < b.ndim ? b.shape[d] : 1;
    out[d] = (int32)(linear % extent);
    linear /= extent;
  }
}

}  // namespace wp
