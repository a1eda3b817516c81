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

}  // namespace wp
