// warpd compiler: how each function uses its array parameters (read,
// overwritten by plain stores, or accumulated into by atomic add/sub),
// through array locals, subviews and calls.
//
// Clients use a kernel's answer (LoadModule's ParamInfo.access) to diagnose
// Warp's documented autodiff pitfall: a taped launch that overwrites an array
// an earlier taped launch read (its backward pass then sees the new values).
// Conservative: an access through a struct member or a descriptor stored in
// an array is not attributed to a parameter. Thread-safe (pure function).
#pragma once

#include <cstdint>
#include <vector>

#include "common/abi/compiled_module.h"
#include "compiler/tir/tir.h"

namespace warpd::tir {

enum ArrayAccessBits : uint8_t {
  kAccessRead = 1,
  kAccessWritten = 2,      // a plain store (or an atomic other than add/sub)
  kAccessAccumulated = 4,  // atomic_add / atomic_sub (linear: safe on a tape)
  // Set by the compiler for backward modules' kernels, not by
  // AnalyzeArrayAccess: only the thread's own element is accessed
  // (codegen/thread_index.h, FindThreadExclusive), so the runtime may let
  // the adjoint accumulate into its gradient without atomics.
  kAccessExclusive = abi::kAccessExclusive,
};

// Per function of `m` (Module::functions order), per parameter: the bits
// above (0 for parameters that are not arrays, and for generic templates).
std::vector<std::vector<uint8_t>> AnalyzeArrayAccess(const Module& m);

}  // namespace warpd::tir
