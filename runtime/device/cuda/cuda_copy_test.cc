#include "runtime/device/cuda/cuda_copy.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

class CudaCopyTest : public testing::FakeCudaMemoryTest {
 protected:
  CudaStream& stream() { return *stream_; }
};

TEST_F(CudaCopyTest, HostToDeviceToDeviceToHostRoundTrips) {
  std::vector<uint32_t> src(1000);
  std::iota(src.begin(), src.end(), 7u);
  const size_t n = src.size() * sizeof(uint32_t);
  CUdeviceptr a = Alloc(n), b = Alloc(n);
  ASSERT_TRUE(CopyHostToDevice(stream(), a, src.data(), n).ok());
  // Pageable memory is read before the call returns: changing it now
  // changes nothing.
  std::vector<uint32_t> expected = src;
  std::fill(src.begin(), src.end(), 0u);
  ASSERT_TRUE(CopyDeviceToDevice(stream(), b, a, n).ok());
  std::vector<uint32_t> back(src.size());
  // Pageable memory is written before the call returns.
  ASSERT_TRUE(CopyDeviceToHost(stream(), back.data(), b, n).ok());
  EXPECT_EQ(back, expected);
  EXPECT_EQ(fake().pageable_copies(), 2);
  EXPECT_TRUE(CopyHostToDevice(stream(), a, src.data(), 0).ok());
}

TEST_F(CudaCopyTest, FillsUseByteOrWordSetsAndRefuseOtherPatterns) {
  CUdeviceptr d = Alloc(64);
  std::vector<unsigned char> out(64);
  const uint16_t zero16 = 0;
  ASSERT_TRUE(Fill(stream(), d, &zero16, 2, 32).ok());  // D8
  ASSERT_TRUE(CopyDeviceToHost(stream(), out.data(), d, 64).ok());
  EXPECT_EQ(out, std::vector<unsigned char>(64, 0));

  const float one = 1.0f;
  ASSERT_TRUE(Fill(stream(), d, &one, 4, 16).ok());  // D32
  std::vector<float> floats(16);
  ASSERT_TRUE(CopyDeviceToHost(stream(), floats.data(), d, 64).ok());
  EXPECT_EQ(floats, std::vector<float>(16, 1.0f));

  const float same3[3] = {2.0f, 2.0f, 2.0f};  // a vec3 of equal components: D32
  ASSERT_TRUE(Fill(stream(), d, same3, sizeof(same3), 5).ok());
  ASSERT_TRUE(CopyDeviceToHost(stream(), floats.data(), d, 64).ok());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(floats[i], 2.0f) << i;
  EXPECT_EQ(floats[15], 1.0f) << "past the fill";

  const float vec3[3] = {1.0f, 2.0f, 3.0f};
  absl::Status s = Fill(stream(), d, vec3, sizeof(vec3), 5);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_EQ(Fill(stream(), d + 2, &one, 4, 1).code(), absl::StatusCode::kUnimplemented) << "misaligned word";
  EXPECT_EQ(Fill(stream(), d, nullptr, 0, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaCopyTest, ACopyOutsideAnAllocationIsTheDriversInvalidValue) {
  CUdeviceptr d = Alloc(16);
  char host[32] = {};
  absl::Status s = CopyHostToDevice(stream(), d, host, 32);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "cuMemcpyHtoDAsync (cuda:0): FAKE_CUDA_ERROR_1 (fake driver text for 1)");
  EXPECT_FALSE(ctx().poisoned());
}

TEST_F(CudaCopyTest, EventsMeasureTheDeviceTimeOfQueuedWork) {
  // The stand-in's device clock runs 1 ms per 1e6 bytes copied.
  const size_t n = 2'000'000;
  CUdeviceptr a = Alloc(n), b = Alloc(n);
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(ctx());
  absl::StatusOr<CudaEvent> end = CudaEvent::Create(ctx());
  ASSERT_TRUE(start.ok() && end.ok());
  ASSERT_TRUE(start->Record(stream()).ok());
  ASSERT_TRUE(CopyDeviceToDevice(stream(), b, a, n).ok());
  ASSERT_TRUE(end->Record(stream()).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*start, *end);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(absl::ToDoubleMilliseconds(*t), 2.0, 1e-3);
}

}  // namespace
}  // namespace warpd::runtime::cuda
