#include "runtime/device/cuda/cublas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace warpd::runtime::cuda {

namespace {

// cublas_api.h and library_types.h.
constexpr int kOpN = 0, kOpT = 1;
constexpr int kR16F = 2, kR32F = 0, kR64F = 1;
constexpr int kCompute32F = 68, kCompute64F = 70;
constexpr int kGemmDefault = -1;

absl::Status BlasError(int status, const char* call, const CudaContext& ctx) {
  return absl::InternalError(absl::StrCat(call, " (", ctx.name(), "): ", CublasStatusName(status)));
}

}  // namespace

std::string CublasStatusName(int status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return absl::StrCat("cublas status ", status);
  }
}

absl::StatusOr<const Cublas*> Cublas::Get() {
  static const absl::StatusOr<const Cublas*> loaded = []() -> absl::StatusOr<const Cublas*> {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("WARPD_CUBLAS"); env != nullptr && *env != '\0') candidates.push_back(env);
    for (const char* name : {"libcublas.so.13", "libcublas.so.12"}) candidates.push_back(name);
    for (const char* name : {"/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12"}) {
      candidates.push_back(name);
    }
    std::vector<std::string> tried;
    for (const std::string& path : candidates) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        const char* why = dlerror();
        tried.push_back(absl::StrCat(path, " (", why ? why : "dlopen failed", ")"));
        continue;
      }
      auto* blas = new Cublas();
      blas->path_ = path;
      bool complete = true;
      auto get = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (fn == nullptr) complete = false;
      };
      get(blas->api_.cublasCreate_v2, "cublasCreate_v2");
      get(blas->api_.cublasDestroy_v2, "cublasDestroy_v2");
      get(blas->api_.cublasSetStream_v2, "cublasSetStream_v2");
      get(blas->api_.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
      if (!complete) {
        tried.push_back(absl::StrCat(path, " (lacks an entry point warpd uses)"));
        delete blas;
        dlclose(lib);
        continue;
      }
      return blas;  // kept for the process's life
    }
    return absl::FailedPreconditionError(
        absl::StrCat("wp.matmul on a GPU needs cuBLAS, which this machine lacks: tried ", absl::StrJoin(tried, "; ")));
  }();
  return loaded;
}

absl::StatusOr<CublasHandle> CublasHandle::Create(const Cublas& blas, CudaContext& ctx) {
  WARPD_ASSIGN_OR_RETURN(ScopedCurrent current, ctx.MakeCurrent());
  void* handle = nullptr;
  if (int s = blas.api().cublasCreate_v2(&handle); s != 0) return BlasError(s, "cublasCreate", ctx);
  return CublasHandle(&blas, &ctx, handle);
}

CublasHandle::CublasHandle(CublasHandle&& other) noexcept
    : blas_(other.blas_), ctx_(other.ctx_), handle_(std::exchange(other.handle_, nullptr)) {}

CublasHandle::~CublasHandle() {
  if (handle_ == nullptr || ctx_->poisoned()) return;  // a reset frees what it holds
  absl::StatusOr<ScopedCurrent> current = ctx_->MakeCurrent();
  if (current.ok()) blas_->api().cublasDestroy_v2(handle_);
}

absl::Status CublasHandle::GemmStridedBatched(CudaStream& stream, GemmDataType type, bool trans_a, bool trans_b,
                                              int m, int n, int k, double alpha, uint64_t a, int lda,
                                              int64_t stride_a, uint64_t b, int ldb, int64_t stride_b, double beta,
                                              uint64_t c, int ldc, int64_t stride_c, int batch) {
  WARPD_ASSIGN_OR_RETURN(ScopedCurrent current, ctx_->MakeCurrent());
  if (int s = blas_->api().cublasSetStream_v2(handle_, stream.get()); s != 0) {
    return BlasError(s, "cublasSetStream", *ctx_);
  }
  const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  const bool wide = type == GemmDataType::kFloat64;
  const int data = type == GemmDataType::kFloat16 ? kR16F : wide ? kR64F : kR32F;
  const void* alpha_p = wide ? static_cast<const void*>(&alpha) : &alpha32;
  const void* beta_p = wide ? static_cast<const void*>(&beta) : &beta32;
  const int s = blas_->api().cublasGemmStridedBatchedEx(
      handle_, trans_a ? kOpT : kOpN, trans_b ? kOpT : kOpN, m, n, k, alpha_p, reinterpret_cast<const void*>(a), data,
      lda, stride_a, reinterpret_cast<const void*>(b), data, ldb, stride_b, beta_p, reinterpret_cast<void*>(c), data,
      ldc, stride_c, batch, wide ? kCompute64F : kCompute32F, kGemmDefault);
  if (s != 0) return BlasError(s, "cublasGemmStridedBatchedEx", *ctx_);
  return absl::OkStatus();
}

}  // namespace warpd::runtime::cuda
