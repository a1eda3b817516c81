// warpd runtime: the CUDA driver API as warpd calls it, declared here.
//
// The daemon builds without CUDA headers and never links libcuda: these are
// the few types and signatures it uses, copied from the driver API
// documentation (their ABI is fixed for the version in kCudaApiVersion).
// Every entry point is listed once in WARPD_CUDA_DRIVER_ENTRY_POINTS and
// fetched through cuGetProcAddress with kCudaApiVersion, so the driver hands
// out the variant of that version (cuDeviceTotalMem -> cuDeviceTotalMem_v2,
// cuDeviceGetUuid -> cuDeviceGetUuid_v2, cuDevicePrimaryCtxRelease ->
// cuDevicePrimaryCtxRelease_v2), whatever newer versions the driver knows.
// A later step adds its entry points (memory, modules, launches) to the list.
#pragma once

#include <cstddef>
#include <cstdint>

namespace warpd::runtime::cuda {

// The API version these declarations were written for (CUDA 12.0); also the
// oldest driver warpd accepts (cuDriverGetVersion's encoding: 1000 * major +
// 10 * minor).
inline constexpr int kCudaApiVersion = 12000;

using CUresult = int;  // CUDA_SUCCESS is 0; cuda_error.h names the others
using CUdevice = int;
using CUcontext = struct CUctx_st*;
struct CUuuid {
  unsigned char bytes[16];
};

// CUresult values warpd's own code tests for (the error table in
// cuda_error.cc has them all).
inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorNotFound = 500;

// CUdevice_attribute values.
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;

// cuGetProcAddress: the 12.0 form (cuGetProcAddress_v2, with the symbol's
// status) and the 11.3 one (cuGetProcAddress) older drivers export.
// flags 0 is CU_GET_PROC_ADDRESS_DEFAULT; status 0 is
// CU_GET_PROC_ADDRESS_SUCCESS, 1 SYMBOL_NOT_FOUND, 2 VERSION_NOT_SUFFICIENT.
using GetProcAddressV2Fn = CUresult (*)(const char* symbol, void** pfn, int cuda_version, uint64_t flags,
                                        int* symbol_status);
using GetProcAddressFn = CUresult (*)(const char* symbol, void** pfn, int cuda_version, uint64_t flags);

// X(name, parameter list): every driver entry point warpd uses, by its
// unversioned name.
#define WARPD_CUDA_DRIVER_ENTRY_POINTS(X)                  \
  X(cuGetErrorName, (CUresult, const char**))              \
  X(cuGetErrorString, (CUresult, const char**))            \
  X(cuDriverGetVersion, (int*))                            \
  X(cuInit, (unsigned int))                                \
  X(cuDeviceGetCount, (int*))                              \
  X(cuDeviceGet, (CUdevice*, int))                         \
  X(cuDeviceGetName, (char*, int, CUdevice))               \
  X(cuDeviceGetUuid, (CUuuid*, CUdevice))                  \
  X(cuDeviceGetAttribute, (int*, int, CUdevice))           \
  X(cuDeviceTotalMem, (size_t*, CUdevice))                 \
  X(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))      \
  X(cuDevicePrimaryCtxRelease, (CUdevice))

// The resolved entry points: all set once a CudaDriver exists.
struct DriverApi {
#define WARPD_CUDA_DECLARE_ENTRY(name, params) CUresult(*name) params = nullptr;
  WARPD_CUDA_DRIVER_ENTRY_POINTS(WARPD_CUDA_DECLARE_ENTRY)
#undef WARPD_CUDA_DECLARE_ENTRY
};

}  // namespace warpd::runtime::cuda
