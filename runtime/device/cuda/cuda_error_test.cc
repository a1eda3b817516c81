#include "runtime/device/cuda/cuda_error.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace warpd::runtime::cuda {
namespace {

using Code = absl::StatusCode;

// Every mapping warpd relies on: the callers of later steps branch on these
// codes (out of memory, a lost context, no device).
struct Case {
  CUresult result;
  const char* name;
  Code code;
  bool context_lost;
};

constexpr Case kCases[] = {
    {1, "CUDA_ERROR_INVALID_VALUE", Code::kInvalidArgument, false},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", Code::kResourceExhausted, false},
    {3, "CUDA_ERROR_NOT_INITIALIZED", Code::kFailedPrecondition, false},
    {4, "CUDA_ERROR_DEINITIALIZED", Code::kUnavailable, false},
    {34, "CUDA_ERROR_STUB_LIBRARY", Code::kUnavailable, false},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", Code::kFailedPrecondition, false},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", Code::kUnavailable, false},
    {100, "CUDA_ERROR_NO_DEVICE", Code::kUnavailable, false},
    {101, "CUDA_ERROR_INVALID_DEVICE", Code::kInvalidArgument, false},
    {200, "CUDA_ERROR_INVALID_IMAGE", Code::kInvalidArgument, false},
    {201, "CUDA_ERROR_INVALID_CONTEXT", Code::kFailedPrecondition, false},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", Code::kFailedPrecondition, false},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", Code::kAborted, true},
    {218, "CUDA_ERROR_INVALID_PTX", Code::kInvalidArgument, false},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", Code::kAborted, true},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", Code::kFailedPrecondition, false},
    {226, "CUDA_ERROR_CONTAINED", Code::kAborted, true},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", Code::kNotFound, false},
    {400, "CUDA_ERROR_INVALID_HANDLE", Code::kInvalidArgument, false},
    {500, "CUDA_ERROR_NOT_FOUND", Code::kNotFound, false},
    {600, "CUDA_ERROR_NOT_READY", Code::kUnavailable, false},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", Code::kAborted, true},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", Code::kResourceExhausted, false},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", Code::kAborted, true},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", Code::kFailedPrecondition, false},
    {710, "CUDA_ERROR_ASSERT", Code::kAborted, true},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", Code::kAborted, true},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", Code::kAborted, true},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", Code::kAborted, true},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", Code::kAborted, true},
    {718, "CUDA_ERROR_INVALID_PC", Code::kAborted, true},
    {719, "CUDA_ERROR_LAUNCH_FAILED", Code::kAborted, true},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", Code::kInvalidArgument, false},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", Code::kAborted, true},
    {800, "CUDA_ERROR_NOT_PERMITTED", Code::kPermissionDenied, false},
    {801, "CUDA_ERROR_NOT_SUPPORTED", Code::kUnimplemented, false},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", Code::kUnavailable, false},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Code::kFailedPrecondition, false},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", Code::kResourceExhausted, false},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", Code::kAborted, true},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", Code::kFailedPrecondition, false},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", Code::kFailedPrecondition, false},
    {909, "CUDA_ERROR_TIMEOUT", Code::kDeadlineExceeded, false},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", Code::kAborted, true},
    {999, "CUDA_ERROR_UNKNOWN", Code::kUnknown, false},
};

TEST(CudaErrorTest, SuccessIsOk) {
  EXPECT_TRUE(CudaError(kCudaSuccess, "cuInit", nullptr).ok());
  EXPECT_EQ(CudaStatusCode(kCudaSuccess), Code::kOk);
  EXPECT_FALSE(IsContextLost(kCudaSuccess));
}

TEST(CudaErrorTest, EveryMappingWarpdReliesOn) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    absl::Status s = CudaError(c.result, "cuSomething", nullptr);
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(CudaStatusCode(c.result), c.code);
    EXPECT_EQ(IsContextLost(c.result), c.context_lost);
    EXPECT_EQ(CudaErrorName(c.result), c.name);
    // Without a driver the name comes from warpd's own table.
    EXPECT_EQ(s.message().substr(0, 13 + std::string(c.name).size()), absl::StrCat("cuSomething: ", c.name));
    EXPECT_EQ(s.message().find("context is lost") != std::string::npos, c.context_lost) << s.message();
  }
}

TEST(CudaErrorTest, EveryCodeOfTheDriverApiHasAName) {
  // The CUresult values of the CUDA 13.0 driver API.
  const CUresult all[] = {0,   1,   2,   3,   4,   5,   6,   7,   8,   34,  36,  46,  100, 101, 102, 200, 201,
                          202, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220,
                          221, 222, 223, 224, 225, 226, 300, 301, 302, 303, 304, 400, 401, 402, 500, 600, 700,
                          701, 702, 703, 704, 705, 708, 709, 710, 711, 712, 713, 714, 715, 716, 717, 718, 719,
                          720, 721, 800, 801, 802, 803, 804, 805, 806, 807, 808, 809, 810, 811, 812, 900, 901,
                          902, 903, 904, 905, 906, 907, 908, 909, 910, 911, 912, 913, 914, 915, 916, 999};
  for (CUresult r : all) {
    EXPECT_FALSE(CudaErrorName(r).empty()) << r;
    if (r != kCudaSuccess && r != 999) EXPECT_NE(CudaStatusCode(r), Code::kUnknown) << r;
  }
}

TEST(CudaErrorTest, UnknownCodeIsUnknownAndSaysSo) {
  absl::Status s = CudaError(12345, "cuFuture", nullptr);
  EXPECT_EQ(s.code(), Code::kUnknown);
  EXPECT_EQ(s.message(), "cuFuture: CUresult 12345, unknown to this warpd");
  EXPECT_FALSE(IsContextLost(12345));
}

// The driver's name and text win over warpd's table when it has them.
CUresult FakeName(CUresult r, const char** s) {
  *s = r == 2 ? "DRIVER_OOM" : nullptr;
  return r == 2 ? kCudaSuccess : 1;
}
CUresult FakeText(CUresult r, const char** s) {
  *s = "the driver's words";
  return kCudaSuccess;
}

TEST(CudaErrorTest, UsesTheDriversNameAndText) {
  DriverApi api;
  api.cuGetErrorName = FakeName;
  api.cuGetErrorString = FakeText;
  absl::Status s = CudaError(2, "cuMemAlloc", &api);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.message(), "cuMemAlloc: DRIVER_OOM (the driver's words)");
  // The driver does not know the name: warpd's table gives it.
  s = CudaError(700, "cuStreamSynchronize", &api);
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(s.message().rfind("cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (the driver's words); the device's "
                              "CUDA context is lost",
                              0),
            0u)
      << s.message();
}

}  // namespace
}  // namespace warpd::runtime::cuda
