// warpd device runtime: array descriptors and bounds-checked element access.
//
// array_t<T> is the 64-byte descriptor the runtime writes into a kernel's
// argument block for every array parameter (docs/launch_abi.md):
//   offset 0  T* data; 8 int32 shape[4]; 24 int32 ndim; 28 reserved;
//   32 int64 strides[4] (bytes).
// address() returns a pointer to an element, or null after recording the
// launch's first fault; generated code then stops the thread.
#pragma once

#include "warpd/native/launch.h"
#include "warpd/native/scalar.h"

namespace wp {

template <typename T>
struct array_t {
  T* data;
  int32 shape[4];
  int32 ndim;
  int32 reserved;
  int64 strides[4];
};

static_assert(sizeof(array_t<float32>) == 64, "array descriptor layout");

// The reserved word of a view taken in a kernel (a[i], a[1:3, j]) of a
// descriptor with flags `r`. Views carry no flags, but a view of an
// argument's own gradient (bit 2, set by the runtime in an adjoint block)
// stays one and consumes on a store (bit 0) even under retain_grad: Warp
// 1.19's in-kernel views drop the array's retain_grad flag. (docs/launch_abi.md)
WP_FUNC int32 view_reserved(int32 r) {
  return (r & 4) != 0 ? (4 | 1) : 0;
}

template <typename T>
WP_FUNC void record_oob(launch_ctx* ctx, const array_t<T>& a, int32 line, int32 dim, int64 index) {
  if (record_index_fault(ctx, line, dim, index, a.shape[dim])) {
    ctx->fault.array_ndim = a.ndim;
    for (int d = 0; d < 4; ++d) ctx->fault.shape[d] = d < a.ndim ? a.shape[d] : 0;
  }
}

// Index values arrive as int64 so every integer index type checks the same way;
// the unsigned compare also rejects negative indices.
template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const array_t<T>& a, int32 line, int64 i) {
  if (WP_UNLIKELY((uint64)i >= (uint64)a.shape[0])) {
    record_oob(ctx, a, line, 0, i);
    return nullptr;
  }
  return (T*)((char*)a.data + i * a.strides[0]);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const array_t<T>& a, int32 line, int64 i, int64 j) {
  if (WP_UNLIKELY((uint64)i >= (uint64)a.shape[0])) {
    record_oob(ctx, a, line, 0, i);
    return nullptr;
  }
  if (WP_UNLIKELY((uint64)j >= (uint64)a.shape[1])) {
    record_oob(ctx, a, line, 1, j);
    return nullptr;
  }
  return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1]);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const array_t<T>& a, int32 line, int64 i, int64 j, int64 k) {
  const int64 idx[3] = {i, j, k};
  for (int d = 0; d < 3; ++d) {
    if (WP_UNLIKELY((uint64)idx[d] >= (uint64)a.shape[d])) {
      record_oob(ctx, a, line, d, idx[d]);
      return nullptr;
    }
  }
  return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2]);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const array_t<T>& a, int32 line, int64 i, int64 j, int64 k,
                   int64 l) {
  const int64 idx[4] = {i, j, k, l};
  for (int d = 0; d < 4; ++d) {
    if (WP_UNLIKELY((uint64)idx[d] >= (uint64)a.shape[d])) {
      record_oob(ctx, a, line, d, idx[d]);
      return nullptr;
    }
  }
  return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2] +
              l * a.strides[3]);
}

// Whether a 1-D array's elements are back to back (a view with a step is not).
template <typename T>
WP_FUNC bool contiguous(const array_t<T>& a) {
  return a.strides[0] == (int64)sizeof(T);
}

// The shortest of some array lengths.
template <int N>
WP_FUNC int64 min_length(const int32 (&lengths)[N]) {
  int64 m = lengths[0];
  for (int i = 1; i < N; ++i) m = lengths[i] < m ? lengths[i] : m;
  return m;
}

// Element i of a contiguous 1-D array, unchecked: for accesses indexed by
// the thread id in a block of ids the kernel's entry has checked against
// the array's length at once (compiler/codegen/thread_index.h).
template <typename T>
WP_FUNC T* element_in_block(const array_t<T>& a, int64 i) {
  return a.data + i;
}

// A slice a[i] (a[i, j], a[i, j, k]) of an array with more dimensions: a
// view of the remaining ones, sharing the data. Returns false after recording
// the fault when an index is out of range.
template <typename T>
WP_FUNC bool subview_n(launch_ctx* ctx, const array_t<T>& a, int32 line, const int64* idx, int n,
                       array_t<T>* out) {
  char* data = (char*)a.data;
  for (int d = 0; d < n; ++d) {
    if (WP_UNLIKELY((uint64)idx[d] >= (uint64)a.shape[d])) {
      record_oob(ctx, a, line, d, idx[d]);
      return false;
    }
    data += idx[d] * a.strides[d];
  }
  out->data = (T*)data;
  out->ndim = a.ndim - n;
  out->reserved = view_reserved(a.reserved);
  for (int d = 0; d < 4; ++d) {
    out->shape[d] = d + n < 4 ? a.shape[d + n] : 0;
    out->strides[d] = d + n < 4 ? a.strides[d + n] : 0;
  }
  return true;
}

// a[1:3, j, ::-1]: n index positions; kinds[k] 1 takes (start, stop, step)
// from `v` with Python's rules (INT64_MIN: a missing bound, the end the step
// starts or stops at; negative bounds count from the end, then clamp; a zero
// step is a fault), 0 takes one integer index (negative: from the end; bounds checked). A slice keeps
// its dimension with stride * step (negative for a negative step); an index
// drops it; positions past n keep theirs. False after recording a fault.
template <typename T>
WP_FUNC bool slice_view(launch_ctx* ctx, const array_t<T>& a, int32 line, const int64* v, const int32* kinds, int n,
                        array_t<T>* out) {
  char* data = (char*)a.data;
  int p = 0, od = 0;
  int32 shape[4] = {0, 0, 0, 0};
  int64 strides[4] = {0, 0, 0, 0};
  for (int d = 0; d < a.ndim; ++d) {
    const int64 extent = a.shape[d];
    if (d >= n) {
      shape[od] = a.shape[d];
      strides[od++] = a.strides[d];
      continue;
    }
    if (kinds[d] == 0) {  // an index beside slices counts from the end when negative, as in Python
      const int64 i = v[p] < 0 ? v[p] + extent : v[p];
      ++p;
      if (WP_UNLIKELY((uint64)i >= (uint64)extent)) {
        record_oob(ctx, a, line, d, i);
        return false;
      }
      data += i * a.strides[d];
      continue;
    }
    int64 start = v[p], stop = v[p + 1];
    const int64 step = v[p + 2];
    p += 3;
    if (WP_UNLIKELY(step == 0)) {
      record_oob(ctx, a, line, d, step);
      return false;
    }
    const int64 kMissing = (int64)(((uint64)1) << 63);
    // Clamped to [0, extent] for a positive step, [-1, extent - 1] for a negative one.
    const int64 lo = step > 0 ? 0 : -1, hi = step > 0 ? extent : extent - 1;
    if (start == kMissing) {
      start = step > 0 ? 0 : extent - 1;
    } else {
      if (start < 0) start += extent;
      start = start < lo ? lo : (start > hi ? hi : start);
    }
    if (stop == kMissing) {
      stop = step > 0 ? extent : -1;
    } else {
      if (stop < 0) stop += extent;
      stop = stop < lo ? lo : (stop > hi ? hi : stop);
    }
    // start and stop are within [-1, extent]: the differences cannot overflow,
    // and neither can the count for any step (INT64_MIN included).
    int64 len = 0;
    if (step > 0 && stop > start) len = (stop - start - 1) / step + 1;
    if (step < 0 && start > stop) len = step == kMissing ? 1 : (start - stop - 1) / (0 - step) + 1;
    data += (len > 0 ? start : 0) * a.strides[d];
    shape[od] = (int32)len;
    // |step| < extent when more than one element is taken: the product is within the array.
    strides[od++] = len > 1 ? a.strides[d] * step : a.strides[d];
  }
  out->data = (T*)data;
  out->ndim = od;
  out->reserved = view_reserved(a.reserved);
  for (int d = 0; d < 4; ++d) {
    out->shape[d] = shape[d];
    out->strides[d] = strides[d];
  }
  return true;
}

// a[i], a[i, j], a[i, j, k] with fewer indices than dimensions, of an
// array_t or (below) an indexedarray_t: subview_n of that type.
template <typename A>
WP_FUNC bool subview(launch_ctx* ctx, const A& a, int32 line, int64 i, A* out) {
  const int64 idx[1] = {i};
  return subview_n(ctx, a, line, idx, 1, out);
}

template <typename A>
WP_FUNC bool subview(launch_ctx* ctx, const A& a, int32 line, int64 i, int64 j, A* out) {
  const int64 idx[2] = {i, j};
  return subview_n(ctx, a, line, idx, 2, out);
}

template <typename A>
WP_FUNC bool subview(launch_ctx* ctx, const A& a, int32 line, int64 i, int64 j, int64 k, A* out) {
  const int64 idx[3] = {i, j, k};
  return subview_n(ctx, a, line, idx, 3, out);
}

// Warp's lower_bound: the first index in [begin, end - 1] whose element is
// not less than `value`, by binary search over a sorted 1-D array; as in Warp
// 1.19 the search stops at end - 1, so a value above every element gives
// end - 1 (not end), and an empty range gives begin. begin and end are
// clamped to the array, so a bad range cannot read outside it.
template <typename T>
WP_FUNC int32 lower_bound(launch_ctx*, const array_t<T>& a, int32 begin, int32 end, T value) {
  int32 lo = begin < 0 ? 0 : begin;
  int32 hi = (end > a.shape[0] ? a.shape[0] : end) - 1;
  while (lo < hi) {
    int32 mid = lo + (hi - lo) / 2;
    if (lt(*(const T*)((const char*)a.data + (int64)mid * a.strides[0]), value)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename T>
WP_FUNC int32 lower_bound(launch_ctx* ctx, const array_t<T>& a, T value) {
  return lower_bound(ctx, a, 0, a.shape[0], value);
}

// wp.zeros(shape, dtype) in a kernel: zeroes `data` (the function's own
// storage for it) and describes it as a contiguous row-major array.
template <typename T, int N>
WP_FUNC array_t<T> local_array(T (&data)[N], int32 ndim, int32 s0, int32 s1, int32 s2, int32 s3) {
  for (int i = 0; i < N; ++i) data[i] = T{};
  array_t<T> a;
  a.data = data;
  a.shape[0] = s0;
  a.shape[1] = s1;
  a.shape[2] = s2;
  a.shape[3] = s3;
  a.ndim = ndim;
  a.reserved = 0;
  int64 stride = (int64)sizeof(T);
  for (int d = 3; d >= 0; --d) {
    a.strides[d] = d < ndim ? stride : 0;
    if (d < ndim) stride *= a.shape[d];
  }
  return a;
}

// Warp's indexedarray: element (i, j, ...) is data[idx0[i], j, ...] for a
// dimension d with an index array (indices[d], int32), else data's own
// index. 112 bytes, as Warp's: the data descriptor, int32* indices[4],
// int32 shape[4] (shape[d]: the index array's length, or data's extent).
// The runtime writes it (docs/launch_abi.md) from arrays it checked; the
// index values are data a kernel or client wrote, so each picked index is
// bounds-checked against data's extent like any other.
template <typename T>
struct indexedarray_t {
  array_t<T> data;
  int32* indices[4];
  int32 shape[4];
};

static_assert(sizeof(indexedarray_t<float32>) == 112, "indexedarray descriptor layout");

template <typename T>
WP_FUNC void record_oob(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int32 dim, int64 index) {
  if (record_index_fault(ctx, line, dim, index, a.shape[dim])) {
    ctx->fault.array_ndim = a.data.ndim;
    for (int d = 0; d < 4; ++d) ctx->fault.shape[d] = d < a.data.ndim ? a.shape[d] : 0;
  }
}

// Maps index `i` of dimension `d` through its index array; false after
// recording the fault when `i` is outside the indexedarray's extent.
template <typename T>
WP_FUNC bool indexed_dim(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int d, int64 i, int64* out) {
  if (WP_UNLIKELY((uint64)i >= (uint64)a.shape[d])) {
    record_oob(ctx, a, line, d, i);
    return false;
  }
  *out = a.indices[d] != nullptr ? (int64)a.indices[d][i] : i;
  return true;
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int64 i) {
  int64 x;
  if (!indexed_dim(ctx, a, line, 0, i, &x)) return nullptr;
  return address(ctx, a.data, line, x);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int64 i, int64 j) {
  int64 x, y;
  if (!indexed_dim(ctx, a, line, 0, i, &x) || !indexed_dim(ctx, a, line, 1, j, &y)) return nullptr;
  return address(ctx, a.data, line, x, y);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int64 i, int64 j, int64 k) {
  int64 x, y, z;
  if (!indexed_dim(ctx, a, line, 0, i, &x) || !indexed_dim(ctx, a, line, 1, j, &y) ||
      !indexed_dim(ctx, a, line, 2, k, &z)) {
    return nullptr;
  }
  return address(ctx, a.data, line, x, y, z);
}

template <typename T>
WP_FUNC T* address(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, int64 i, int64 j, int64 k, int64 l) {
  int64 x, y, z, w;
  if (!indexed_dim(ctx, a, line, 0, i, &x) || !indexed_dim(ctx, a, line, 1, j, &y) ||
      !indexed_dim(ctx, a, line, 2, k, &z) || !indexed_dim(ctx, a, line, 3, l, &w)) {
    return nullptr;
  }
  return address(ctx, a.data, line, x, y, z, w);
}

// a[i] (a[i, j], a[i, j, k]) of an indexedarray with more dimensions: the
// indexedarray of the remaining ones (Warp's view): data is viewed at the
// picked indices, the remaining dimensions keep their index arrays.
template <typename T>
WP_FUNC bool subview_n(launch_ctx* ctx, const indexedarray_t<T>& a, int32 line, const int64* idx, int n,
                       indexedarray_t<T>* out) {
  int64 picked[4];
  for (int d = 0; d < n; ++d) {
    if (!indexed_dim(ctx, a, line, d, idx[d], &picked[d])) return false;
  }
  if (!subview_n(ctx, a.data, line, picked, n, &out->data)) return false;
  for (int d = 0; d < 4; ++d) {
    out->indices[d] = d + n < 4 ? a.indices[d + n] : nullptr;
    out->shape[d] = d + n < 4 ? a.shape[d + n] : 0;
  }
  return true;
}

}  // namespace wp
