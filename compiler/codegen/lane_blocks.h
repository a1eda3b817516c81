// warpd codegen: whether a kernel's fast blocks (thread_index.h) can run
// their thread ids kLanes at a time through a lane-blocked copy of the body,
// which clang vectorizes across thread ids even when the body holds a loop.
//
// clang's loop vectorizer handles innermost loops: a loop over thread ids
// whose body holds a loop (a per-thread recurrence, an integration over
// steps) is not vectorized. LLVM's outer-loop path
// (-enable-vplan-native-path) miscompiled plain fast-block kernels in LLVM 19
// (every element of a counting kernel wrong), so warpd does the outer-loop
// vectorization in the source instead (codegen.cc, `wpb_K_lanes`):
//   - every variable but a parameter becomes an array of kLanes values;
//   - each stretch of the body's top-level instructions between its loops
//     becomes one loop over the lanes;
//   - each loop runs its iterations, with the stop check per iteration,
//     around a loop over the lanes.
// clang's ordinary vectorizer then vectorizes every lane loop. Each lane
// runs the scalar body's operations in the scalar body's order, so results
// equal the precise path's bit for bit, except where threads race: a
// thread-indexed access may also index element 0 (thread_index.h), and
// threads that read and write one element race in Warp's model too; lanes
// may then order those accesses differently than one id at a time would.
//
// That is valid when:
//   - every loop is a `for ... in range(...)` directly in the kernel's body
//     (not inside an `if` or another loop), whose start and stop are
//     constants or integer parameters the kernel never writes and whose step
//     is a nonzero constant, so all lanes run the same iterations;
//   - nothing leaves early (break, continue, return, while loops);
//   - memory is touched only through the thread-indexed accesses, so lanes
//     never see each other's writes (racing threads aside), and nothing
//     has a side effect whose order is visible (print, atomics, user
//     function calls, local arrays, other array accesses).
// And the lane arrays must fit in kMaxLaneBytes of stack: a kernel with
// many large variables runs one id at a time (a client's kernel must never
// overflow a worker's stack).
// Kernels without loops are left to the ordinary vectorizer (their fast
// block is already an innermost loop), unless they call float32 sin or cos
// outside any `if` (below).
//
// float32 sin and cos (runtime/native/warpd/native/trig.h) have a fast float
// path for |x| <= 65536 and a table path for the rest; a vectorized loop
// that calls them computes both for every lane. So in the lane-blocked body
// a call outside any `if` ends the lane loop and runs as
// wp::sincos_lanes (the float path for all lanes, the table path only when
// some lane needs it), and a sin and a cos of the same variable with nothing
// writing it in between run as one call (sharing the reduction).
//
//   if (RunsLaneBlocked(kernel, FindThreadIndexed(kernel))) ...
#pragma once

#include <cstdint>

#include "compiler/codegen/thread_index.h"
#include "compiler/tir/tir.h"

namespace warpd::codegen {

// Thread ids per lane-blocked call (a divisor of the 256-id block): enough
// independent lanes that out-of-order execution hides a long dependency
// chain in the loop (a sin/cos recurrence), few enough that the lane arrays
// stay in L1.
inline constexpr int kLanes = 64;
// The most stack the lane arrays of one kernel may take.
inline constexpr uint64_t kMaxLaneBytes = uint64_t{128} << 10;

bool RunsLaneBlocked(const tir::Function& kernel, const ThreadIndexed& fast);

// Whether a kernel's adjoint (adjoint.h) runs kLanes thread ids at a time
// too: its forward body runs lane-blocked and it writes no parameter (whose
// copy the lanes share). Judged on the TIR before tir::MakeReadsExplicit.
// The lanes take the thread-indexed accesses unchecked and run only in
// blocks within those arrays and their gradients (adjoint.cc, fast_end).
bool AdjointRunsLaneBlocked(const tir::Function& kernel);

// What a lane-blocked body runs a builtin call as: kSin or kCos for a float32
// sin or cos of a float32 variable that is not a parameter (a lane array);
// kNone for anything else.
enum class LaneMath { kNone, kSin, kCos };
LaneMath LaneMathOf(const tir::Function& kernel, const tir::Builtin& call);

}  // namespace warpd::codegen
