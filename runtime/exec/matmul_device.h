// warpd runtime: wp.matmul on a device with a BLAS of its own (a GPU's
// cuBLAS: Device::Gemm), for arrays whose memory the host cannot address.
//
// The operands are passed as they lie: each of a, b and d must be a matrix
// (or batch) a BLAS addresses in place (one unit stride, the other a
// leading dimension), and d must not share memory with a or b; anything
// else is UNIMPLEMENTED, saying to pass a contiguous copy. c is read in
// place when it is d itself, else copied into d first (c overlapping d
// otherwise: UNIMPLEMENTED). The checks of CheckMatmul, then one
// Device::Gemm per run; a cancel or the launch time limit ends the wait as
// for a kernel. Not recorded into a device graph (a graph replays it on its
// own: graph.h).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

absl::StatusOr<std::unique_ptr<Command>> PrepareDeviceMatmul(std::shared_ptr<const Array> a,
                                                             std::shared_ptr<const Array> b,
                                                             std::shared_ptr<const Array> c,
                                                             std::shared_ptr<const Array> d, double alpha,
                                                             double beta, const std::string& device);

}  // namespace warpd::runtime
