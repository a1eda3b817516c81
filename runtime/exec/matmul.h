// warpd runtime: the stream command behind wp.matmul: d <- alpha * (a @ b)
// + beta * c, computed by the BLAS (OpenBLAS) on the device's host threads;
// on a device whose memory the host cannot address (a GPU), by the
// device's own BLAS instead (matmul_device.h).
//
// Shapes: a (M, K), b (K, N), c and d (M, N); or 3-D batches (B, M, K), ...
// of one batch count B, one GEMM per batch item (Warp's batched_matmul).
// One dtype for all four: float32, float64, or float16 (converted to and
// computed in float32, rounded to half when written). Any strides: an
// operand the BLAS can address (one unit stride, the other a leading
// dimension) is passed as it lies, with a transpose when it is column-major;
// any other is packed into a row-major temporary first. `c` may be null
// (d <- alpha * (a @ b)); beta = 0 never reads c, as in BLAS.
//
// Aliasing: d may be c itself (the same elements in the same layout: an
// in-place d <- alpha * (a @ b) + beta * d). When d shares memory with a or
// b, or with c otherwise, the product goes to a temporary that is copied to
// d after every read of the operands, so the result is as if the operands
// were read first. Overlap is judged by each operand's byte range in its
// buffer (conservative: two interleaved views count as overlapping).
//
// Threads: the work is split into tiles of the output (rows and columns of
// each batch item, a few million multiply-adds each) that run on
// Device::HostParallelFor; each BLAS call is single-threaded (the library's
// own threads are switched off once, process-wide, before the first call),
// so a matmul never uses more threads than the device's pool and shares it
// fairly with launches. Between tiles it stops on Cancel() (CANCELLED) and
// once it has run longer than the device's launch time limit
// (DEADLINE_EXCEEDED), like a kernel launch; the output is then partly
// written.
//
// PrepareMatmul checks everything (INVALID_ARGUMENT: shapes, dtypes, devices,
// extents beyond the BLAS's 32-bit sizes) and allocates the temporaries
// from `pool` (the session's: RESOURCE_EXHAUSTED when they do not fit), so
// running can fail only by cancel or timeout. The command holds the arrays
// and temporaries until it is destroyed; it may be captured in a graph and
// replayed (each replay reads the operands' current values).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

// Stops the BLAS library's own worker threads and keeps its calls on the
// calling thread. OpenBLAS starts its threads when it is loaded, before
// main() blocks the signals the daemon takes with sigwait, so a SIGTERM could
// land in one of them and kill the process by the default action; the
// daemon calls this right after blocking them (threads BLAS starts later
// inherit the mask). Matmul tiles run on the device's pool anyway.
void StopBlasThreads();

absl::StatusOr<std::unique_ptr<Command>> PrepareMatmul(std::shared_ptr<const Array> a,
                                                       std::shared_ptr<const Array> b,
                                                       std::shared_ptr<const Array> c,
                                                       std::shared_ptr<const Array> d, double alpha, double beta,
                                                       const std::string& device, SegmentPool& pool);

}  // namespace warpd::runtime
