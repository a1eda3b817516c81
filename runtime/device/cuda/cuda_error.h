// warpd runtime: the one place a CUresult becomes an absl::Status.
//
//   CUresult r = api.cuDevicePrimaryCtxRetain(&ctx, dev);
//   if (r != kCudaSuccess) return CudaError(r, "cuDevicePrimaryCtxRetain", &api);
//
// The message names the call, the driver's error name and its text
// ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"), from
// cuGetErrorName/cuGetErrorString when `api` is given and the driver knows
// the code, else from warpd's own table. Status codes by what the caller can
// do: out of memory and launch resources -> RESOURCE_EXHAUSTED, bad values
// and handles -> INVALID_ARGUMENT, no device or a driver that is shutting
// down -> UNAVAILABLE, wrong state (not initialised, no context, capture
// misuse, unsupported PTX) -> FAILED_PRECONDITION, timeouts ->
// DEADLINE_EXCEEDED, unsupported -> UNIMPLEMENTED, not permitted ->
// PERMISSION_DENIED. A sticky error (illegal address, a device-side assert,
// an uncorrectable ECC error, ...: the driver's "any further CUDA work will
// return the same error") is ABORTED and its message says that the device's
// CUDA context is lost (IsContextLost). A code the table lacks is UNKNOWN.
// Thread-safe: reads only constant tables and the driver's static strings.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

// OkStatus for kCudaSuccess; else the error described above. `api` may be
// null (no driver loaded: the names come from warpd's table).
absl::Status CudaError(CUresult result, std::string_view call, const DriverApi* api);

// The status code CudaError gives `result`.
absl::StatusCode CudaStatusCode(CUresult result);

// Whether `result` leaves the context unusable: every later call on it fails
// with the same error, until the primary context is reset.
bool IsContextLost(CUresult result);

// "CUDA_ERROR_OUT_OF_MEMORY"; "" for a code warpd does not know.
std::string_view CudaErrorName(CUresult result);

}  // namespace warpd::runtime::cuda
