#include "runtime/device/cuda/cuda_device_info.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/device/cuda/cuda_error.h"

namespace warpd::runtime::cuda {

std::string CudaDeviceInfo::arch() const { return absl::StrCat("sm_", cc_major, cc_minor); }

std::string FormatGpuUuid(const CUuuid& uuid) {
  const unsigned char* b = uuid.bytes;
  return absl::StrFormat("GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                         b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

absl::StatusOr<CudaDeviceInfo> QueryDevice(const DriverApi& api, int ordinal) {
  CudaDeviceInfo d;
  d.ordinal = ordinal;
  auto check = [&api, ordinal](CUresult r, const char* call) {
    return CudaError(r, absl::StrCat(call, " (cuda:", ordinal, ")"), &api);
  };
  if (absl::Status s = check(api.cuDeviceGet(&d.device, ordinal), "cuDeviceGet"); !s.ok()) return s;
  char name[256] = {};
  if (absl::Status s = check(api.cuDeviceGetName(name, sizeof(name) - 1, d.device), "cuDeviceGetName"); !s.ok()) {
    return s;
  }
  d.name = name;
  CUuuid uuid = {};
  if (absl::Status s = check(api.cuDeviceGetUuid(&uuid, d.device), "cuDeviceGetUuid"); !s.ok()) return s;
  d.uuid = FormatGpuUuid(uuid);
  const struct {
    int attribute;
    int* out;
    const char* what;
  } attributes[] = {
      {kAttrComputeCapabilityMajor, &d.cc_major, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)"},
      {kAttrComputeCapabilityMinor, &d.cc_minor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)"},
      {kAttrMultiprocessorCount, &d.sm_count, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"},
  };
  for (const auto& a : attributes) {
    if (absl::Status s = check(api.cuDeviceGetAttribute(a.out, a.attribute, d.device), a.what); !s.ok()) return s;
  }
  size_t bytes = 0;
  if (absl::Status s = check(api.cuDeviceTotalMem(&bytes, d.device), "cuDeviceTotalMem"); !s.ok()) return s;
  d.memory_bytes = bytes;
  return d;
}

}  // namespace warpd::runtime::cuda
