#include "runtime/device/cuda_probe.h"

#include <dlfcn.h>

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

namespace {

// The few driver API entry points the probe needs, declared here so the
// build needs no CUDA headers. CUresult 0 is CUDA_SUCCESS.
using CUresult = int;
using CUdevice = int;
using cuInit_t = CUresult (*)(unsigned int);
using cuDriverGetVersion_t = CUresult (*)(int*);
using cuDeviceGetCount_t = CUresult (*)(int*);
using cuDeviceGet_t = CUresult (*)(CUdevice*, int);
using cuDeviceGetName_t = CUresult (*)(char*, int, CUdevice);
using cuDeviceComputeCapability_t = CUresult (*)(int*, int*, CUdevice);
using cuDeviceTotalMem_t = CUresult (*)(size_t*, CUdevice);

template <typename Fn>
Fn Sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

CudaProbeResult Probe() {
  CudaProbeResult r;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    r.unavailable_reason = absl::StrCat("no NVIDIA driver (", err ? err : "libcuda.so.1", ")");
    return r;
  }
  r.driver_loaded = true;
  auto cu_init = Sym<cuInit_t>(lib, "cuInit");
  auto get_version = Sym<cuDriverGetVersion_t>(lib, "cuDriverGetVersion");
  auto get_count = Sym<cuDeviceGetCount_t>(lib, "cuDeviceGetCount");
  auto get_device = Sym<cuDeviceGet_t>(lib, "cuDeviceGet");
  auto get_name = Sym<cuDeviceGetName_t>(lib, "cuDeviceGetName");
  auto get_cc = Sym<cuDeviceComputeCapability_t>(lib, "cuDeviceComputeCapability");
  auto get_mem = Sym<cuDeviceTotalMem_t>(lib, "cuDeviceTotalMem_v2");
  if (!cu_init || !get_count || !get_device || !get_name || !get_cc) {
    r.unavailable_reason = "libcuda.so.1 lacks required driver API entry points";
    return r;
  }
  if (get_version && get_version(&r.driver_version) == 0 && r.driver_version > 0) {
    r.driver_version_text =
        absl::StrCat(r.driver_version / 1000, ".", (r.driver_version % 1000) / 10);
  }
  if (CUresult e = cu_init(0); e != 0) {
    r.unavailable_reason = absl::StrCat("cuInit failed (CUresult ", e, ")");
    return r;
  }
  int count = 0;
  if (CUresult e = get_count(&count); e != 0) {
    r.unavailable_reason = absl::StrCat("cuDeviceGetCount failed (CUresult ", e, ")");
    return r;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (get_device(&dev, i) != 0) continue;
    CudaDeviceProbe d;
    d.ordinal = i;
    char name[256] = {};
    if (get_name(name, sizeof(name) - 1, dev) == 0) d.name = name;
    get_cc(&d.cc_major, &d.cc_minor, dev);
    size_t mem = 0;
    if (get_mem && get_mem(&mem, dev) == 0) d.memory_bytes = mem;
    r.devices.push_back(std::move(d));
  }
  if (r.devices.empty()) r.unavailable_reason = "the NVIDIA driver reports no devices";
  return r;
}

}  // namespace

const CudaProbeResult& ProbeCuda() {
  static const CudaProbeResult* result = new CudaProbeResult(Probe());
  return *result;
}

}  // namespace warpd::runtime
