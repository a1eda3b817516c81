// warpd runtime: a retained primary context of one GPU (RAII).
//
// The driver keeps one primary context per device, reference-counted: a
// PrimaryContext holds one reference from Retain until Release or its
// destruction, so the context lives while anything in warpd uses it and the
// driver frees it after the last handle goes. Move-only. The DriverApi it
// was retained through must outlive it (the process's CudaDriver lives as
// long as the process). Not thread-safe itself; distinct handles (of the
// same device too) may be used from any threads, as the driver's reference
// count is.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class PrimaryContext {
 public:
  // cuDevicePrimaryCtxRetain; the error names the call and `ordinal`.
  static absl::StatusOr<PrimaryContext> Retain(const DriverApi& api, CUdevice device, int ordinal);

  PrimaryContext(PrimaryContext&& other) noexcept;
  PrimaryContext& operator=(PrimaryContext&& other) noexcept;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  // Releases the reference if still held; an error then is dropped (call
  // Release to see it).
  ~PrimaryContext();

  // cuDevicePrimaryCtxRelease. Afterwards the handle holds nothing
  // (get() is null) whatever the result; releasing twice is OK.
  absl::Status Release();

  CUcontext get() const { return context_; }
  int ordinal() const { return ordinal_; }

 private:
  PrimaryContext(const DriverApi* api, CUdevice device, int ordinal, CUcontext context)
      : api_(api), device_(device), ordinal_(ordinal), context_(context) {}

  const DriverApi* api_ = nullptr;  // null once released or moved from
  CUdevice device_ = 0;
  int ordinal_ = 0;
  CUcontext context_ = nullptr;
};

}  // namespace warpd::runtime::cuda
