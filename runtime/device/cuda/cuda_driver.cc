#include "runtime/device/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda/cuda_error.h"

namespace warpd::runtime::cuda {

namespace {

// The CUDA toolkit's stub libcuda (for linking only) answers every call with
// CUDA_ERROR_STUB_LIBRARY: there is no driver.
absl::Status StubLibrary(const std::string& path, std::string_view call) {
  return absl::NotFoundError(absl::StrCat("no NVIDIA driver: ", path,
                                          " is the CUDA toolkit's stub library, not a driver (",
                                          absl::string_view(call.data(), call.size()),
                                          ": CUDA_ERROR_STUB_LIBRARY)"));
}

// Finds entry points by name through whichever cuGetProcAddress the driver
// exports.
class ProcAddress {
 public:
  // FAILED_PRECONDITION when the library exports neither form.
  static absl::StatusOr<ProcAddress> Find(void* library, const std::string& path) {
    ProcAddress p;
    p.v2_ = reinterpret_cast<GetProcAddressV2Fn>(dlsym(library, "cuGetProcAddress_v2"));
    if (p.v2_ == nullptr) p.v1_ = reinterpret_cast<GetProcAddressFn>(dlsym(library, "cuGetProcAddress"));
    if (p.v2_ != nullptr || p.v1_ != nullptr) return p;
    // Older than CUDA 11.3: say which version it is, if it says.
    std::string which = "a driver older than CUDA 11.3";
    using VersionFn = CUresult (*)(int*);
    auto version = reinterpret_cast<VersionFn>(dlsym(library, "cuDriverGetVersion"));
    int v = 0;
    if (version != nullptr && version(&v) == kCudaSuccess && v > 0) {
      which = absl::StrCat("a driver for CUDA ", CudaVersionText(v));
    }
    return absl::FailedPreconditionError(absl::StrCat("the NVIDIA driver is too old: ", path, " is ", which,
                                                      " (no cuGetProcAddress); warpd needs a driver for CUDA ",
                                                      CudaVersionText(kCudaApiVersion), " or newer"));
  }

  // The entry point `name` of the version warpd was written for, or
  // FAILED_PRECONDITION naming it.
  absl::Status Get(const char* name, void** fn, const std::string& path) const {
    *fn = nullptr;
    int symbol_status = 0;
    CUresult r = v2_ != nullptr ? v2_(name, fn, kCudaApiVersion, /*flags=*/0, &symbol_status)
                                : v1_(name, fn, kCudaApiVersion, /*flags=*/0);
    if (r == kCudaSuccess && *fn != nullptr) return absl::OkStatus();
    if (r == kCudaErrorStubLibrary) return StubLibrary(path, "cuGetProcAddress");
    std::string why = symbol_status == 2   ? "the driver has only a version older than that"
                      : symbol_status == 1 ? "the driver does not have it"
                                           : std::string(CudaErrorName(r));
    if (why.empty()) why = absl::StrCat("CUresult ", r);
    return absl::FailedPreconditionError(absl::StrCat(path, " lacks the driver API entry point ", name,
                                                      " of CUDA ", CudaVersionText(kCudaApiVersion), " (",
                                                      why, "); warpd needs a driver for CUDA ",
                                                      CudaVersionText(kCudaApiVersion), " or newer"));
  }

 private:
  GetProcAddressV2Fn v2_ = nullptr;
  GetProcAddressFn v1_ = nullptr;
};

}  // namespace

std::string CudaVersionText(int version) { return absl::StrCat(version / 1000, ".", (version % 1000) / 10); }

const absl::StatusOr<const CudaDriver*>& CudaDriver::Process() {
  // Never destroyed: PrimaryContexts and the driver's own threads may
  // outlive static destruction.
  static const auto* const driver = new absl::StatusOr<const CudaDriver*>(
      []() -> absl::StatusOr<const CudaDriver*> {
        absl::StatusOr<std::unique_ptr<CudaDriver>> loaded = Load(kLibrary);
        if (!loaded.ok()) return loaded.status();
        return loaded->release();
      }());
  return *driver;
}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* err = dlerror();
    return absl::NotFoundError(absl::StrCat("no NVIDIA driver: cannot load ", path, " (", err ? err : "dlopen failed",
                                            ")"));
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver(path));
  if (absl::Status s = driver->Init(library); !s.ok()) return s;
  return driver;
}

absl::Status CudaDriver::Init(void* library) {
  absl::StatusOr<ProcAddress> proc = ProcAddress::Find(library, path_);
  if (!proc.ok()) return proc.status();
  // The version first, so a too-old driver is refused as such rather than
  // for the first entry point it lacks.
  if (absl::Status s = proc->Get("cuDriverGetVersion", reinterpret_cast<void**>(&api_.cuDriverGetVersion), path_);
      !s.ok()) {
    return s;
  }
  if (CUresult r = api_.cuDriverGetVersion(&version_); r != kCudaSuccess) {
    if (r == kCudaErrorStubLibrary) return StubLibrary(path_, "cuDriverGetVersion");
    return CudaError(r, "cuDriverGetVersion", nullptr);
  }
  if (version_ < kCudaApiVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the NVIDIA driver is too old: ", path_, " supports CUDA ", CudaVersionText(version_),
        "; warpd needs a driver for CUDA ", CudaVersionText(kCudaApiVersion), " or newer"));
  }
#define WARPD_CUDA_RESOLVE_ENTRY(name, params)                                                    \
  if (absl::Status s = proc->Get(#name, reinterpret_cast<void**>(&api_.name), path_); !s.ok()) { \
    return s;                                                                                     \
  }
  WARPD_CUDA_DRIVER_ENTRY_POINTS(WARPD_CUDA_RESOLVE_ENTRY)
#undef WARPD_CUDA_RESOLVE_ENTRY

  if (CUresult r = api_.cuInit(0); r != kCudaSuccess) {
    if (r == kCudaErrorStubLibrary) return StubLibrary(path_, "cuInit");
    if (r != kCudaErrorNoDevice) return Check(r, "cuInit");
    no_devices_reason_ = absl::StrCat("the NVIDIA driver (CUDA ", version_text(), ") reports no CUDA device (",
                                      Check(r, "cuInit").message(), ")");
    return absl::OkStatus();
  }
  int count = 0;
  if (absl::Status s = Check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) return s;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<CudaDeviceInfo> d = QueryDevice(api_, i);
    if (!d.ok()) return d.status();
    devices_.push_back(*std::move(d));
  }
  if (devices_.empty()) {
    no_devices_reason_ = absl::StrCat("the NVIDIA driver (CUDA ", version_text(), ") reports no CUDA device");
  }
  return absl::OkStatus();
}

std::string CudaDriver::version_text() const { return CudaVersionText(version_); }

absl::Status CudaDriver::Check(CUresult result, std::string_view call) const {
  return CudaError(result, call, &api_);
}

absl::StatusOr<PrimaryContext> CudaDriver::RetainPrimaryContext(int ordinal) const {
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= devices_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no CUDA device cuda:", ordinal, " (the driver reports ",
                                                   devices_.size(), ")"));
  }
  return PrimaryContext::Retain(api_, devices_[ordinal].device, ordinal);
}

}  // namespace warpd::runtime::cuda
