// Test-only: hand-written kernels that follow the launch ABI the way generated
// code does, for tests of the runtime and the server without the compiler.
#pragma once

#include <cstdint>

#include "warpd/native/array.h"

namespace warpd::runtime::testing {

// inc(a: array(float32), amount: float32): a[tid] += amount, reporting an
// out-of-bounds index at "line 12" the way generated code does.
struct IncArgs {
  wp::array_t<float> a;
  float amount;
};

inline void IncKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  const auto* p = static_cast<const IncArgs*>(args);
  for (int64_t i = begin; i < end; ++i) {
    float* x = wp::address(ctx, p->a, 12, i);
    if (x == nullptr) return;
    *x += p->amount;
  }
}

}  // namespace warpd::runtime::testing
