// matmul.h in a daemon built without a host BLAS (WARPD_WITH_BLAS=OFF, the
// lean CUDA-only build of scripts/build-lean.sh): wp.matmul runs on devices
// with a BLAS of their own (matmul_device.h); on the CPU it is refused with
// a clear error rather than computed some slower way.
#include "runtime/exec/matmul.h"

#include "runtime/exec/matmul_device.h"

namespace warpd::runtime {

void StopBlasThreads() {}

absl::StatusOr<std::unique_ptr<Command>> PrepareMatmul(std::shared_ptr<const Array> a, std::shared_ptr<const Array> b,
                                                       std::shared_ptr<const Array> c, std::shared_ptr<const Array> d,
                                                       double alpha, double beta, const std::string& device,
                                                       SegmentPool& pool) {
  if (device != "cpu") return PrepareDeviceMatmul(a, b, c, d, alpha, beta, device);
  return absl::UnimplementedError(
      "wp.matmul: this warpd was built without a BLAS (WARPD_WITH_BLAS=OFF, the lean CUDA-only build)");
}

}  // namespace warpd::runtime
