#include "runtime/device/cuda/primary_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda/cuda_error.h"

namespace warpd::runtime::cuda {

absl::StatusOr<PrimaryContext> PrimaryContext::Retain(const DriverApi& api, CUdevice device, int ordinal) {
  CUcontext context = nullptr;
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&context, device); r != kCudaSuccess) {
    return CudaError(r, absl::StrCat("cuDevicePrimaryCtxRetain (cuda:", ordinal, ")"), &api);
  }
  return PrimaryContext(&api, device, ordinal, context);
}

PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      device_(other.device_),
      ordinal_(other.ordinal_),
      context_(std::exchange(other.context_, nullptr)) {}

PrimaryContext& PrimaryContext::operator=(PrimaryContext&& other) noexcept {
  if (this != &other) {
    Release().IgnoreError();
    api_ = std::exchange(other.api_, nullptr);
    device_ = other.device_;
    ordinal_ = other.ordinal_;
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

PrimaryContext::~PrimaryContext() { Release().IgnoreError(); }

absl::Status PrimaryContext::Release() {
  const DriverApi* api = std::exchange(api_, nullptr);
  context_ = nullptr;
  if (api == nullptr) return absl::OkStatus();
  return CudaError(api->cuDevicePrimaryCtxRelease(device_),
                   absl::StrCat("cuDevicePrimaryCtxRelease (cuda:", ordinal_, ")"), api);
}

}  // namespace warpd::runtime::cuda
