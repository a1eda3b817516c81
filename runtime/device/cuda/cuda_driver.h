// warpd runtime: the NVIDIA driver (libcuda), loaded at run time.
//
//   absl::StatusOr<const CudaDriver*> driver = CudaDriver::Process();
//   if (!driver.ok()) -> CUDA is disabled; the status says why
//   for (const CudaDeviceInfo& d : (*driver)->devices()) ...
//   absl::StatusOr<PrimaryContext> ctx = (*driver)->RetainPrimaryContext(0);
//
// libcuda.so.1 is dlopen'ed, never linked, so warpd builds and runs where
// there is no driver. Every entry point (driver_api.h) comes through
// cuGetProcAddress_v2 (cuGetProcAddress on drivers before 12.0) asked for
// kCudaApiVersion, then cuInit(0); the devices are queried once. Loading
// fails with:
//   NOT_FOUND            no driver library (dlopen's reason), or the CUDA
//                        toolkit's stub libcuda (CUDA_ERROR_STUB_LIBRARY);
//   FAILED_PRECONDITION  a driver older than kCudaApiVersion (its version
//                        and the one needed), or one lacking an entry point;
//   CudaError's status   cuInit failed (other than "no device").
// A driver that loads but has no device (cuInit's CUDA_ERROR_NO_DEVICE, or a
// device count of 0) is a CudaDriver with no devices and a reason.
// A device the driver cannot describe fails the load (the status names it).
//
// Thread-safety: the process's driver is loaded once, on the first call of
// Process() (concurrent first calls wait for it), and never unloaded; a
// CudaDriver is immutable after loading, so every method may be called from
// any thread. The library handle stays open for the life of the process
// (unloading libcuda under running driver threads is unsafe), also for
// drivers made with Load().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_device_info.h"
#include "runtime/device/cuda/driver_api.h"
#include "runtime/device/cuda/primary_context.h"

namespace warpd::runtime::cuda {

class CudaDriver {
 public:
  static constexpr const char* kLibrary = "libcuda.so.1";

  // The process's driver: kLibrary, loaded on the first call. The daemon and
  // its tools use only this.
  static const absl::StatusOr<const CudaDriver*>& Process();

  // A driver from the library at `path`, for tests (a stand-in library) and
  // tools; each call makes a new CudaDriver.
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load(const std::string& path);

  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // cuDriverGetVersion: 12040 for CUDA 12.4.
  int version() const { return version_; }
  // "12.4"
  std::string version_text() const;
  // The library it was loaded from.
  const std::string& path() const { return path_; }

  // By ordinal: devices()[n] is cuda:n.
  const std::vector<CudaDeviceInfo>& devices() const { return devices_; }
  // Why devices() is empty; "" when it is not.
  const std::string& no_devices_reason() const { return no_devices_reason_; }

  // Retains cuda:`ordinal`'s primary context. INVALID_ARGUMENT for an
  // ordinal that is not a device; the driver's error as CudaError.
  absl::StatusOr<PrimaryContext> RetainPrimaryContext(int ordinal) const;

  // The resolved entry points, for the parts of the CUDA device built on
  // this one; with Check for their results.
  const DriverApi& api() const { return api_; }
  absl::Status Check(CUresult result, std::string_view call) const;

 private:
  explicit CudaDriver(std::string path) : path_(std::move(path)) {}
  absl::Status Init(void* library);

  const std::string path_;
  DriverApi api_;
  int version_ = 0;
  std::vector<CudaDeviceInfo> devices_;
  std::string no_devices_reason_;
};

// "12.4" for 12040: cuDriverGetVersion's encoding (1000 * major + 10 * minor).
std::string CudaVersionText(int version);

}  // namespace warpd::runtime::cuda
