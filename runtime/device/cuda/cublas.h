// warpd runtime: cuBLAS, loaded with dlopen, for wp.matmul on CUDA devices.
//
//   WARPD_ASSIGN_OR_RETURN(const Cublas* blas, Cublas::Get());
//   WARPD_ASSIGN_OR_RETURN(CublasHandle h, CublasHandle::Create(*blas, ctx));
//   WARPD_RETURN_IF_ERROR(h.GemmStridedBatched(stream, ...));   // queued on `stream`
//
// The library is found once per process: $WARPD_CUBLAS (an operator's path,
// e.g. the test stand-in), then libcublas.so.13 and .12 on the loader's
// path and under /usr/local/cuda/lib64. Without it wp.matmul on a GPU is
// FAILED_PRECONDITION naming what was tried; nothing else needs it. Only the
// entry points below are used: a handle, its stream, and
// cublasGemmStridedBatchedEx (float16 data computed in float32, float32 in
// float32 without TF32, float64 in float64).
//
// Ownership: a handle belongs to one context (it is made with the context
// current) and is destroyed before the context is reset; on a poisoned
// context its destructor leaves it to the reset. Thread-safety: the library
// object is immutable; a handle is used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_stream.h"

namespace warpd::runtime::cuda {

struct CublasApi {
  using Status = int;
  Status (*cublasCreate_v2)(void** handle) = nullptr;
  Status (*cublasDestroy_v2)(void* handle) = nullptr;
  Status (*cublasSetStream_v2)(void* handle, void* stream) = nullptr;
  Status (*cublasGemmStridedBatchedEx)(void* handle, int transa, int transb, int m, int n, int k, const void* alpha,
                                       const void* a, int a_type, int lda, long long stride_a, const void* b,
                                       int b_type, int ldb, long long stride_b, const void* beta, void* c,
                                       int c_type, int ldc, long long stride_c, int batch, int compute_type,
                                       int algo) = nullptr;
};

class Cublas {
 public:
  // The process's library, loaded on the first call.
  static absl::StatusOr<const Cublas*> Get();
  const CublasApi& api() const { return api_; }
  const std::string& path() const { return path_; }

 private:
  Cublas() = default;
  CublasApi api_;
  std::string path_;
};

// The status text of a cublasStatus_t, for messages ("CUBLAS_STATUS_INVALID_VALUE").
std::string CublasStatusName(int status);

enum class GemmDataType { kFloat16, kFloat32, kFloat64 };

class CublasHandle {
 public:
  static absl::StatusOr<CublasHandle> Create(const Cublas& blas, CudaContext& ctx);
  CublasHandle(CublasHandle&& other) noexcept;
  CublasHandle& operator=(CublasHandle&&) = delete;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle();

  // Column-major C <- alpha * op(A) @ op(B) + beta * C over `batch` items,
  // cuBLAS's arguments (strides in elements), queued on `stream`.
  absl::Status GemmStridedBatched(CudaStream& stream, GemmDataType type, bool trans_a, bool trans_b, int m, int n,
                                  int k, double alpha, uint64_t a, int lda, int64_t stride_a, uint64_t b, int ldb,
                                  int64_t stride_b, double beta, uint64_t c, int ldc, int64_t stride_c, int batch);

 private:
  CublasHandle(const Cublas* blas, CudaContext* ctx, void* handle) : blas_(blas), ctx_(ctx), handle_(handle) {}
  const Cublas* blas_;
  CudaContext* ctx_;
  void* handle_;  // null once moved from
};

}  // namespace warpd::runtime::cuda
