// CudaDevice::Gemm: a batched GEMM through cuBLAS (cuda/cublas.h), on one
// of the device's pooled streams, waited for like a kernel.
//
// cuBLAS is column-major. A row-major d is a column-major d^T, and
// d^T = b^T a^T: the call swaps the operands and each row-major operand
// is read as the column-major transpose it already is in memory (no
// transpose flag), a column-major one with the flag. A column-major d takes
// the operands in order, the flags the other way round.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "runtime/device/cuda_device.h"

namespace warpd::runtime {

absl::Status CudaDevice::Gemm(const GemmSpec& spec, int32_t* cancel) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  if (spec.batch == 0 || spec.m == 0 || spec.n == 0) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(const cuda::Cublas* library, cuda::Cublas::Get());
  absl::MutexLock lock(&blas_mu_);
  if (blas_ == nullptr) {
    WARPD_ASSIGN_OR_RETURN(cuda::CublasHandle handle, cuda::CublasHandle::Create(*library, m->context()));
    blas_ = std::make_unique<cuda::CublasHandle>(std::move(handle));
  }
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  cuda::CudaStream& stream = lease.stream();
  const cuda::GemmDataType type = spec.type == GemmSpec::Type::kFloat16   ? cuda::GemmDataType::kFloat16
                                  : spec.type == GemmSpec::Type::kFloat32 ? cuda::GemmDataType::kFloat32
                                                                          : cuda::GemmDataType::kFloat64;
  const GemmOperand &a = spec.a, &b = spec.b, &d = spec.d;
  const int m_ = static_cast<int>(spec.m), n_ = static_cast<int>(spec.n), k_ = static_cast<int>(spec.k);
  const int batch = static_cast<int>(spec.batch);
  absl::Status queued =
      !d.col_major
          ? blas_->GemmStridedBatched(stream, type, b.col_major, a.col_major, n_, m_, k_, spec.alpha, b.address,
                                      static_cast<int>(b.ld), b.batch_stride, a.address, static_cast<int>(a.ld),
                                      a.batch_stride, spec.beta, d.address, static_cast<int>(d.ld), d.batch_stride,
                                      batch)
          : blas_->GemmStridedBatched(stream, type, !a.col_major, !b.col_major, m_, n_, k_, spec.alpha, a.address,
                                      static_cast<int>(a.ld), a.batch_stride, b.address, static_cast<int>(b.ld),
                                      b.batch_stride, spec.beta, d.address, static_cast<int>(d.ld), d.batch_stride,
                                      batch);
  WARPD_RETURN_IF_ERROR(queued);
  return AwaitWork(*m, stream, cancel, {}, launch_.time_limit,
                   absl::StrCat("matmul (", spec.m, " x ", spec.k, " @ ", spec.k, " x ", spec.n, ")"));
}

}  // namespace warpd::runtime
