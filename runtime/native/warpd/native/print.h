// warpd device runtime: print(), wp.printf() and wp.expect_near() in kernels.
//
// Kernels do not format text. A print call appends one record to the launch's
// output buffer (launch_ctx::output, launch.h): the call site's number in the
// module's print table, the thread id and the values' bytes. The server
// formats the records after the launch (runtime/exec/kernel_output.h), so
// format strings never reach device code. Generated code calls
//
//   wp::print_record<SITE, PAYLOAD>(ctx, _tid, v0, v1, ...);
//
// where PAYLOAD is the sum of the values' sizes as the server computed them;
// the static_assert below makes a disagreement a compile error.
//
// Safety: a record is reserved with one atomic add on `used`, written only if
// it lies entirely inside [0, capacity), and counted in `committed` when
// complete; one that does not fit is dropped (counted in `dropped`). A buffer
// with no data (capacity 0) drops everything. Records never overlap and no
// thread writes outside the buffer, whatever the kernel does.
#pragma once

#include "warpd/native/launch.h"
#include "warpd/native/vec.h"

namespace wp {

WP_FUNC uint64 print_atomic_add(uint64* p, uint64 v) {
#if WP_CUDA
  return atomicAdd((unsigned long long*)p, (unsigned long long)v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

WP_FUNC uint64 print_atomic_load(const uint64* p) {
#if WP_CUDA
  return *(volatile const uint64*)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

// Bytes of a record with `payload` bytes of values.
WP_FUNC uint64 print_record_size(uint32 payload) {
  return ((uint64)sizeof(print_record_header) + (uint64)payload + 7u) & ~(uint64)7u;
}

// Reserves a record of site `site` with `payload` bytes of values and writes
// its header; returns where the values go, or null when the record does not
// fit (then it is counted as dropped).
WP_FUNC uint8* print_begin(launch_ctx* ctx, uint32 site, uint32 payload, int64 tid) {
  print_buffer& b = ctx->output;
  const uint64 size = print_record_size(payload);
  // Once the buffer is full, skip the contended add.
  if (b.data == nullptr || print_atomic_load(&b.used) >= b.capacity) {
    print_atomic_add(&b.dropped, 1);
    return nullptr;
  }
  const uint64 at = print_atomic_add(&b.used, size);
  if (at > b.capacity || size > b.capacity - at) {
    print_atomic_add(&b.dropped, 1);
    return nullptr;
  }
  print_record_header* h = (print_record_header*)(b.data + at);
  h->site = site;
  h->size = (uint32)size;
  h->tid = tid;
  return b.data + at + sizeof(print_record_header);
}

// Marks a record begun with print_begin as completely written.
WP_FUNC void print_end(launch_ctx* ctx, uint32 payload) {
#if WP_CUDA
  __threadfence();
#endif
  print_atomic_add(&ctx->output.committed, print_record_size(payload));
}

template <typename T>
WP_FUNC void print_put(uint8* p, uint32& offset, const T& v) {
  const uint8* s = (const uint8*)&v;
  for (uint32 i = 0; i < (uint32)sizeof(T); ++i) p[offset + i] = s[i];
  offset += (uint32)sizeof(T);
}

// One print call: a record of site Site holding `values` back to back.
template <uint32 Site, uint32 Payload, typename... Ts>
WP_FUNC void print_record(launch_ctx* ctx, int64 tid, const Ts&... values) {
  static_assert(Payload == (0u + ... + (uint32)sizeof(Ts)),
                "print record layout: the values' sizes differ from the server's (docs/launch_abi.md)");
  uint8* p = print_begin(ctx, Site, Payload, tid);
  if (p == nullptr) return;
  uint32 offset = 0;
  (print_put(p, offset, values), ...);
  (void)offset;
  print_end(ctx, Payload);
}

// An array is printed as its extents.
template <int N>
struct print_dims {
  int32 d[N];
};

template <int N, typename A>
WP_FUNC print_dims<N> print_shape(const A& a) {
  print_dims<N> r;
  for (int i = 0; i < N; ++i) r.d[i] = a.shape[i];
  return r;
}

// wp.expect_near(actual, expected, tolerance): the largest absolute
// difference, and whether it exceeds the tolerance (a NaN difference does
// not, as in Warp).
template <typename T>
WP_FUNC T expect_near_diff(T actual, T expected) {
  return abs(sub(actual, expected));
}

template <int N, typename T>
WP_FUNC T expect_near_diff(const vec_t<N, T>& actual, const vec_t<N, T>& expected) {
  T d = expect_near_diff(actual.c[0], expected.c[0]);
  for (int i = 1; i < N; ++i) {
    const T di = expect_near_diff(actual.c[i], expected.c[i]);
    if (gt(di, d)) d = di;
  }
  return d;
}

template <typename T>
WP_FUNC bool expect_near_failed(T diff, T tolerance) {
  return gt(diff, tolerance);
}

}  // namespace wp
