// matmul.h in a daemon built without a BLAS (WARPD_WITH_BLAS=OFF, the lean
// CUDA-only build of scripts/build-lean.sh): wp.matmul is refused with a
// clear error rather than computed some slower way.
#include "runtime/exec/matmul.h"

namespace warpd::runtime {

void StopBlasThreads() {}

absl::StatusOr<std::unique_ptr<Command>> PrepareMatmul(std::shared_ptr<const Array> a, std::shared_ptr<const Array> b,
                                                       std::shared_ptr<const Array> c, std::shared_ptr<const Array> d,
                                                       double alpha, double beta, const std::string& device,
                                                       SegmentPool& pool) {
  return absl::UnimplementedError(
      "wp.matmul: this warpd was built without a BLAS (WARPD_WITH_BLAS=OFF, the lean CUDA-only build)");
}

}  // namespace warpd::runtime
