#include "runtime/device/cuda/cuda_error.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace warpd::runtime::cuda {

namespace {

using Code = absl::StatusCode;

struct ErrorEntry {
  CUresult result;
  const char* name;
  Code code;
  bool context_lost = false;
};

// Every CUresult of the CUDA 13.0 driver API (values from its documentation).
constexpr ErrorEntry kErrors[] = {
    {0, "CUDA_SUCCESS", Code::kOk},
    {1, "CUDA_ERROR_INVALID_VALUE", Code::kInvalidArgument},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", Code::kResourceExhausted},
    {3, "CUDA_ERROR_NOT_INITIALIZED", Code::kFailedPrecondition},
    {4, "CUDA_ERROR_DEINITIALIZED", Code::kUnavailable},
    {5, "CUDA_ERROR_PROFILER_DISABLED", Code::kFailedPrecondition},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", Code::kFailedPrecondition},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", Code::kFailedPrecondition},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", Code::kFailedPrecondition},
    {34, "CUDA_ERROR_STUB_LIBRARY", Code::kUnavailable},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", Code::kFailedPrecondition},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", Code::kUnavailable},
    {100, "CUDA_ERROR_NO_DEVICE", Code::kUnavailable},
    {101, "CUDA_ERROR_INVALID_DEVICE", Code::kInvalidArgument},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", Code::kPermissionDenied},
    {200, "CUDA_ERROR_INVALID_IMAGE", Code::kInvalidArgument},
    {201, "CUDA_ERROR_INVALID_CONTEXT", Code::kFailedPrecondition},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", Code::kFailedPrecondition},
    {205, "CUDA_ERROR_MAP_FAILED", Code::kInternal},
    {206, "CUDA_ERROR_UNMAP_FAILED", Code::kInternal},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", Code::kFailedPrecondition},
    {208, "CUDA_ERROR_ALREADY_MAPPED", Code::kFailedPrecondition},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", Code::kFailedPrecondition},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", Code::kFailedPrecondition},
    {211, "CUDA_ERROR_NOT_MAPPED", Code::kFailedPrecondition},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", Code::kFailedPrecondition},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", Code::kFailedPrecondition},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", Code::kAborted, true},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", Code::kInvalidArgument},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", Code::kFailedPrecondition},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", Code::kUnimplemented},
    {218, "CUDA_ERROR_INVALID_PTX", Code::kInvalidArgument},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", Code::kFailedPrecondition},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", Code::kAborted, true},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", Code::kFailedPrecondition},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", Code::kFailedPrecondition},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", Code::kFailedPrecondition},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", Code::kUnimplemented},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", Code::kInvalidArgument},
    {226, "CUDA_ERROR_CONTAINED", Code::kAborted, true},
    {300, "CUDA_ERROR_INVALID_SOURCE", Code::kInvalidArgument},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", Code::kNotFound},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", Code::kNotFound},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", Code::kInternal},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", Code::kInternal},
    {400, "CUDA_ERROR_INVALID_HANDLE", Code::kInvalidArgument},
    {401, "CUDA_ERROR_ILLEGAL_STATE", Code::kFailedPrecondition},
    {402, "CUDA_ERROR_LOSSY_QUERY", Code::kFailedPrecondition},
    {500, "CUDA_ERROR_NOT_FOUND", Code::kNotFound},
    {600, "CUDA_ERROR_NOT_READY", Code::kUnavailable},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", Code::kAborted, true},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", Code::kResourceExhausted},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", Code::kAborted, true},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", Code::kInvalidArgument},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", Code::kFailedPrecondition},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", Code::kFailedPrecondition},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", Code::kFailedPrecondition},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", Code::kFailedPrecondition},
    {710, "CUDA_ERROR_ASSERT", Code::kAborted, true},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", Code::kResourceExhausted},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", Code::kAlreadyExists},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", Code::kFailedPrecondition},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", Code::kAborted, true},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", Code::kAborted, true},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", Code::kAborted, true},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", Code::kAborted, true},
    {718, "CUDA_ERROR_INVALID_PC", Code::kAborted, true},
    {719, "CUDA_ERROR_LAUNCH_FAILED", Code::kAborted, true},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", Code::kInvalidArgument},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", Code::kAborted, true},
    {800, "CUDA_ERROR_NOT_PERMITTED", Code::kPermissionDenied},
    {801, "CUDA_ERROR_NOT_SUPPORTED", Code::kUnimplemented},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", Code::kUnavailable},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Code::kFailedPrecondition},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", Code::kFailedPrecondition},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", Code::kUnavailable},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", Code::kUnavailable},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", Code::kUnavailable},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", Code::kResourceExhausted},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", Code::kResourceExhausted},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", Code::kAborted, true},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", Code::kUnimplemented},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH", Code::kFailedPrecondition},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", Code::kFailedPrecondition},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", Code::kFailedPrecondition},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", Code::kFailedPrecondition},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", Code::kFailedPrecondition},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", Code::kFailedPrecondition},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", Code::kFailedPrecondition},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", Code::kFailedPrecondition},
    {907, "CUDA_ERROR_CAPTURED_EVENT", Code::kFailedPrecondition},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", Code::kFailedPrecondition},
    {909, "CUDA_ERROR_TIMEOUT", Code::kDeadlineExceeded},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", Code::kFailedPrecondition},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", Code::kAborted, true},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", Code::kInvalidArgument},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", Code::kFailedPrecondition},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", Code::kInvalidArgument},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", Code::kInvalidArgument},
    {916, "CUDA_ERROR_KEY_ROTATION", Code::kInternal},
    {999, "CUDA_ERROR_UNKNOWN", Code::kUnknown},
};

const ErrorEntry* Find(CUresult result) {
  for (const ErrorEntry& e : kErrors) {
    if (e.result == result) return &e;
  }
  return nullptr;
}

// The driver's own string for `result`, or null (the driver does not know
// the code, or there is no driver).
const char* DriverString(CUresult (*fn)(CUresult, const char**), CUresult result) {
  const char* s = nullptr;
  if (fn == nullptr || fn(result, &s) != kCudaSuccess) return nullptr;
  return s != nullptr && *s != '\0' ? s : nullptr;
}

}  // namespace

std::string_view CudaErrorName(CUresult result) {
  const ErrorEntry* e = Find(result);
  return e == nullptr ? std::string_view() : e->name;
}

absl::StatusCode CudaStatusCode(CUresult result) {
  const ErrorEntry* e = Find(result);
  return e == nullptr ? Code::kUnknown : e->code;
}

bool IsContextLost(CUresult result) {
  const ErrorEntry* e = Find(result);
  return e != nullptr && e->context_lost;
}

absl::Status CudaError(CUresult result, std::string_view call, const DriverApi* api) {
  if (result == kCudaSuccess) return absl::OkStatus();
  const char* driver_name = api ? DriverString(api->cuGetErrorName, result) : nullptr;
  const char* driver_text = api ? DriverString(api->cuGetErrorString, result) : nullptr;
  std::string name = driver_name != nullptr ? std::string(driver_name) : std::string(CudaErrorName(result));
  if (name.empty()) name = absl::StrCat("CUresult ", result, ", unknown to this warpd");
  std::string message = absl::StrCat(absl::string_view(call.data(), call.size()), ": ", name);
  if (driver_text != nullptr) absl::StrAppend(&message, " (", driver_text, ")");
  if (IsContextLost(result)) {
    absl::StrAppend(&message,
                    "; the device's CUDA context is lost: every later call on it fails the same way until "
                    "its primary context is reset");
  }
  return absl::Status(CudaStatusCode(result), message);
}

}  // namespace warpd::runtime::cuda
