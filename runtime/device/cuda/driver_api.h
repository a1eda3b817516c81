// warpd runtime: the CUDA driver API as warpd calls it, declared here.
//
// The daemon builds without CUDA headers and never links libcuda: these are
// the few types and signatures it uses, written from the driver API
// documentation and checked against the toolkit's cuda.h (13.0, for the
// variants of 12.0; the ABI is fixed for the version in kCudaApiVersion).
// Every entry point is listed once in
// WARPD_CUDA_DRIVER_ENTRY_POINTS by its unversioned name and fetched through
// cuGetProcAddress with kCudaApiVersion and CU_GET_PROC_ADDRESS_DEFAULT, so
// the driver hands out the variant of that version, whatever newer versions
// it knows:
//   cuDeviceTotalMem -> _v2, cuDeviceGetUuid -> _v2,
//   cuDevicePrimaryCtxRelease/Reset -> _v2, cuCtxPushCurrent/PopCurrent ->
//   _v2, cuStreamDestroy/cuEventDestroy -> _v2, cuMemcpy{HtoD,DtoH,DtoD}Async
//   -> _v2 (size_t counts, 64-bit CUdeviceptr), cuStreamBeginCapture -> _v2
//   (the 10.1 form with a capture mode), cuEventElapsedTime -> the original
//   (12.8's _v2 has the same signature);
// and, as the flags ask for the default stream semantics, the legacy-stream
// variants rather than the _ptsz/_ptds ones (warpd never uses the NULL
// stream, so the two behave alike for it). cuGraphInstantiate is, from the
// 12.0 headers on, a macro for cuGraphInstantiateWithFlags (the older name
// had error-node and log-buffer parameters); warpd asks for
// cuGraphInstantiateWithFlags, whose one variant has the 12.0 signature.
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
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2: 64 bits on every platform warpd builds for
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUjit_option = int;  // an enum in cuda.h; C enums are int-sized

// CUmemLocation and CUmemPoolProps (the _v1 structs). 12.2 split the first
// 10 reserved bytes into maxSize and usage; zero, they mean what the 12.0
// reserved bytes meant, so warpd writes the 12.0 layout.
struct CUmemLocation {
  int type;  // CUmemLocationType
  int id;
};
struct CUmemPoolProps {
  int allocType;    // CUmemAllocationType
  int handleTypes;  // CUmemAllocationHandleType, a bit mask
  CUmemLocation location;
  void* win32SecurityAttributes;
  unsigned char reserved[64];
};
static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps must match the driver's ABI");

// What cuMemPoolExportPointer writes: an allocation of an exportable pool,
// named for cuMemPoolImportPointer in another process that imported the
// pool (64 opaque bytes).
struct CUmemPoolPtrExportData {
  unsigned char reserved[64];
};

// CUresult values warpd's own code tests for (the error table in
// cuda_error.cc has them all).
inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorNotFound = 500;
inline constexpr CUresult kCudaErrorNotReady = 600;

// Flags and enum values (cuda.h's names in the comments).
inline constexpr unsigned kStreamNonBlocking = 0x1;       // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDefault = 0x0;            // CU_EVENT_DEFAULT
inline constexpr unsigned kEventDisableTiming = 0x2;      // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kMemHostAllocPortable = 0x1;    // CU_MEMHOSTALLOC_PORTABLE
inline constexpr int kMemAllocationTypePinned = 0x1;      // CU_MEM_ALLOCATION_TYPE_PINNED
inline constexpr int kMemHandleTypePosixFd = 0x1;         // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
inline constexpr int kMemLocationTypeDevice = 0x1;        // CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr int kMemPoolAttrReleaseThreshold = 4;    // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (cuuint64_t)
inline constexpr int kMemPoolAttrReservedMemCurrent = 5;  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT (cuuint64_t)
inline constexpr int kMemPoolAttrUsedMemCurrent = 7;      // CU_MEMPOOL_ATTR_USED_MEM_CURRENT (cuuint64_t)
inline constexpr int kStreamCaptureModeGlobal = 0;        // CU_STREAM_CAPTURE_MODE_GLOBAL
inline constexpr int kStreamCaptureModeThreadLocal = 1;   // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
inline constexpr int kStreamCaptureModeRelaxed = 2;       // CU_STREAM_CAPTURE_MODE_RELAXED
// CUjit_option values: the log buffers and their sizes (in: capacity in
// bytes; out: bytes written, NUL included), and verbose logging.
inline constexpr CUjit_option kJitInfoLogBuffer = 3;
inline constexpr CUjit_option kJitInfoLogBufferSizeBytes = 4;
inline constexpr CUjit_option kJitErrorLogBuffer = 5;
inline constexpr CUjit_option kJitErrorLogBufferSizeBytes = 6;
inline constexpr CUjit_option kJitLogVerbose = 12;

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

// X(name, parameter list): every driver entry point warpd uses, by the
// name it is asked for (see above for the variants that name resolves to).
#define WARPD_CUDA_DRIVER_ENTRY_POINTS(X)                                                            \
  X(cuGetErrorName, (CUresult, const char**))                                                        \
  X(cuGetErrorString, (CUresult, const char**))                                                      \
  X(cuDriverGetVersion, (int*))                                                                      \
  X(cuInit, (unsigned int))                                                                          \
  X(cuDeviceGetCount, (int*))                                                                        \
  X(cuDeviceGet, (CUdevice*, int))                                                                   \
  X(cuDeviceGetName, (char*, int, CUdevice))                                                         \
  X(cuDeviceGetUuid, (CUuuid*, CUdevice))                                                            \
  X(cuDeviceGetAttribute, (int*, int, CUdevice))                                                     \
  X(cuDeviceTotalMem, (size_t*, CUdevice))                                                           \
  X(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))                                                \
  X(cuDevicePrimaryCtxRelease, (CUdevice))                                                           \
  X(cuDevicePrimaryCtxReset, (CUdevice))                                                             \
  X(cuCtxPushCurrent, (CUcontext))                                                                   \
  X(cuCtxPopCurrent, (CUcontext*))                                                                   \
  X(cuCtxSetCurrent, (CUcontext))                                                                    \
  X(cuStreamCreate, (CUstream*, unsigned int))                                                       \
  X(cuStreamDestroy, (CUstream))                                                                     \
  X(cuStreamSynchronize, (CUstream))                                                                 \
  X(cuStreamQuery, (CUstream))                                                                       \
  X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                                            \
  X(cuEventCreate, (CUevent*, unsigned int))                                                         \
  X(cuEventDestroy, (CUevent))                                                                       \
  X(cuEventRecord, (CUevent, CUstream))                                                              \
  X(cuEventSynchronize, (CUevent))                                                                   \
  X(cuEventQuery, (CUevent))                                                                         \
  X(cuEventElapsedTime, (float*, CUevent, CUevent))                                                  \
  X(cuMemPoolCreate, (CUmemoryPool*, const CUmemPoolProps*))                                         \
  X(cuMemPoolDestroy, (CUmemoryPool))                                                                \
  X(cuMemPoolSetAttribute, (CUmemoryPool, int, void*))                                               \
  X(cuMemPoolGetAttribute, (CUmemoryPool, int, void*))                                               \
  X(cuMemPoolExportToShareableHandle, (void*, CUmemoryPool, int, unsigned long long))                \
  X(cuMemPoolExportPointer, (CUmemPoolPtrExportData*, CUdeviceptr))                                  \
  X(cuMemAllocFromPoolAsync, (CUdeviceptr*, size_t, CUmemoryPool, CUstream))                         \
  X(cuMemFreeAsync, (CUdeviceptr, CUstream))                                                         \
  X(cuMemcpyHtoDAsync, (CUdeviceptr, const void*, size_t, CUstream))                                 \
  X(cuMemcpyDtoHAsync, (void*, CUdeviceptr, size_t, CUstream))                                       \
  X(cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                 \
  X(cuMemcpyPeerAsync, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))          \
  X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                                 \
  X(cuMemsetD32Async, (CUdeviceptr, unsigned int, size_t, CUstream))                                 \
  X(cuMemHostAlloc, (void**, size_t, unsigned int))                                                  \
  X(cuMemFreeHost, (void*))                                                                          \
  X(cuModuleLoadDataEx, (CUmodule*, const void*, unsigned int, CUjit_option*, void**))               \
  X(cuModuleUnload, (CUmodule))                                                                      \
  X(cuModuleGetFunction, (CUfunction*, CUmodule, const char*))                                       \
  X(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, \
                     unsigned int, unsigned int, CUstream, void**, void**))                          \
  X(cuStreamBeginCapture, (CUstream, int))                                                           \
  X(cuStreamEndCapture, (CUstream, CUgraph*))                                                        \
  X(cuGraphInstantiateWithFlags, (CUgraphExec*, CUgraph, unsigned long long))                        \
  X(cuGraphLaunch, (CUgraphExec, CUstream))                                                          \
  X(cuGraphExecDestroy, (CUgraphExec))                                                               \
  X(cuGraphDestroy, (CUgraph))

// The resolved entry points: all set once a CudaDriver exists.
struct DriverApi {
#define WARPD_CUDA_DECLARE_ENTRY(name, params) CUresult(*name) params = nullptr;
  WARPD_CUDA_DRIVER_ENTRY_POINTS(WARPD_CUDA_DECLARE_ENTRY)
#undef WARPD_CUDA_DECLARE_ENTRY
};

}  // namespace warpd::runtime::cuda
