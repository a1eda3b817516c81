// CudaDevice::Gemm: a batched GEMM through cuBLAS (cuda/cublas.h), on one
// of the device's pooled streams, waited for like a kernel.
//
// cuBLAS is column-major. A row-major d is a column-major d^T, and
// d^T = b^T a^T: the call swaps the operands and each row-major operand
// is read as the column-major transpose it already is in memory (no
// transpose flag), a column-major one with the flag. A column-major d takes
// the operands in order, the flags the other way round.
//
// A cuBLAS call cannot be stopped once queued, so the work goes in chunks
// of at most LaunchOptions::gemm_chunk_macs multiply-adds (whole batch items, or bands of d's
// rows of one item), each waited for before the next is queued: a cancel
// or the time limit stops the GEMM between chunks, and the chunk running
// then ends well within the cancel grace on any GPU. The handle is locked
// only while a chunk is queued, so GEMMs of several sessions overlap.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/abi/compiled_module.h"
#include "common/status_macros.h"
#include "runtime/device/cuda_device.h"
#include "runtime/device/cuda_work_timer.h"

namespace warpd::runtime {

namespace {

int64_t ElementBytes(GemmSpec::Type t) {
  return t == GemmSpec::Type::kFloat16 ? 2 : t == GemmSpec::Type::kFloat32 ? 4 : 8;
}

// `x` advanced by `rows` rows (of a or d) and `items` batch items, in bytes.
GemmOperand Advance(GemmOperand x, int64_t rows, int64_t items, int64_t elem) {
  x.address += static_cast<uint64_t>((rows * (x.col_major ? 1 : x.ld) + items * x.batch_stride) * elem);
  return x;
}

}  // namespace

absl::Status CudaDevice::Gemm(const GemmSpec& spec, int32_t* cancel) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  if (spec.batch == 0 || spec.m == 0 || spec.n == 0) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(const cuda::Cublas* library, cuda::Cublas::Get());
  {
    absl::MutexLock lock(&blas_mu_);
    if (blas_ == nullptr) {
      WARPD_ASSIGN_OR_RETURN(cuda::CublasHandle handle, cuda::CublasHandle::Create(*library, m->context()));
      blas_ = std::make_unique<cuda::CublasHandle>(std::move(handle));
    }
  }
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  cuda::CudaStream& stream = lease.stream();
  const cuda::GemmDataType type = spec.type == GemmSpec::Type::kFloat16   ? cuda::GemmDataType::kFloat16
                                  : spec.type == GemmSpec::Type::kFloat32 ? cuda::GemmDataType::kFloat32
                                                                          : cuda::GemmDataType::kFloat64;
  const int64_t elem = ElementBytes(spec.type);
  // Chunks: whole batch items while one item is small, else bands of rows.
  const double kChunkMacs = std::max(1.0, launch_.gemm_chunk_macs);
  const double item_macs = double(spec.m) * double(spec.n) * double(std::max<int64_t>(1, spec.k));
  const int64_t items_per_chunk =
      item_macs >= kChunkMacs ? 1 : std::min<int64_t>(spec.batch, std::max<int64_t>(1, int64_t(kChunkMacs / item_macs)));
  const int64_t rows_per_chunk =
      item_macs <= kChunkMacs
          ? spec.m
          : std::max<int64_t>(1, int64_t(kChunkMacs / (double(spec.n) * double(std::max<int64_t>(1, spec.k)))));
  const absl::Duration limit = launch_.time_limit;
  const absl::Time deadline = limit > absl::ZeroDuration() ? absl::Now() + limit : absl::InfiniteFuture();
  const std::string what = absl::StrCat("matmul (", spec.m, " x ", spec.k, " @ ", spec.k, " x ", spec.n, ")");
  for (int64_t item = 0; item < spec.batch; item += items_per_chunk) {
    const int64_t items = std::min(items_per_chunk, spec.batch - item);
    for (int64_t row = 0; row < spec.m; row += rows_per_chunk) {
      if (__atomic_load_n(cancel, __ATOMIC_RELAXED) != 0) return absl::OkStatus();  // the caller reports it
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        __atomic_store_n(cancel, abi::kCancelTimeout, __ATOMIC_RELAXED);
        return absl::OkStatus();
      }
      const int rows = static_cast<int>(std::min(rows_per_chunk, spec.m - row));
      const GemmOperand a = Advance(spec.a, row, item, elem), b = Advance(spec.b, 0, item, elem),
                        d = Advance(spec.d, row, item, elem);
      const int n = static_cast<int>(spec.n), k = static_cast<int>(spec.k), batch = static_cast<int>(items);
      absl::Status queued;
      CudaWorkTimer timer(lease);  // the scheduler charges the matmul's device time
      {
        absl::MutexLock lock(&blas_mu_);
        if (blas_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(info_.name, " was reset"));
        queued = !d.col_major
                     ? blas_->GemmStridedBatched(stream, type, b.col_major, a.col_major, n, rows, k, spec.alpha,
                                                 b.address, static_cast<int>(b.ld), b.batch_stride, a.address,
                                                 static_cast<int>(a.ld), a.batch_stride, spec.beta, d.address,
                                                 static_cast<int>(d.ld), d.batch_stride, batch)
                     : blas_->GemmStridedBatched(stream, type, !a.col_major, !b.col_major, rows, n, k, spec.alpha,
                                                 a.address, static_cast<int>(a.ld), a.batch_stride, b.address,
                                                 static_cast<int>(b.ld), b.batch_stride, spec.beta, d.address,
                                                 static_cast<int>(d.ld), d.batch_stride, batch);
      }
      WARPD_RETURN_IF_ERROR(queued);
      timer.Issued();
      WARPD_RETURN_IF_ERROR(AwaitWork(*m, stream, cancel, {}, limit > absl::ZeroDuration() ? left : limit, what));
      timer.Done();
    }
  }
  return absl::OkStatus();
}

}  // namespace warpd::runtime
