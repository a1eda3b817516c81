#include "runtime/device/cuda/pinned_staging.h"

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

constexpr size_t kChunk = 4096;

class CudaPinnedStagingTest : public testing::FakeCudaMemoryTest {
 protected:
  std::unique_ptr<PinnedStagingRing> MakeRing(int chunks = 3) {
    return Keep(PinnedStagingRing::Create(ctx(), {kChunk, chunks}));
  }
  static std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + i / 4096);
    return v;
  }
};

TEST_F(CudaPinnedStagingTest, UploadAndDownloadGoInOverlappedPinnedChunks) {
  std::unique_ptr<PinnedStagingRing> ring = MakeRing();
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->chunks(), 3);
  EXPECT_EQ(ring->chunk_bytes(), kChunk);
  EXPECT_EQ(fake().live("host"), 3);
  const size_t n = 10 * kChunk + 123;  // 11 chunks, the last short
  const std::vector<uint8_t> data = Bytes(n, 1);
  CUdeviceptr d = Alloc(n);

  ASSERT_TRUE(ring->Upload(*stream_, d, data.data(), n).ok());
  EXPECT_GE(fake().max_queued_copies(), 2) << "chunks in flight together";
  EXPECT_EQ(fake().pageable_copies(), 0) << "every device copy from pinned memory";

  std::vector<uint8_t> back(n);
  ASSERT_TRUE(ring->Download(*stream_, back.data(), d, n).ok());
  EXPECT_EQ(back, data) << "the download comes after the upload in stream order";
  EXPECT_EQ(fake().pageable_copies(), 0);

  // A transfer smaller than a chunk, and one of nothing.
  std::vector<uint8_t> small = Bytes(100, 9);
  ASSERT_TRUE(ring->Upload(*stream_, d + 5, small.data(), small.size()).ok());
  std::vector<uint8_t> small_back(100);
  ASSERT_TRUE(ring->Download(*stream_, small_back.data(), d + 5, 100).ok());
  EXPECT_EQ(small_back, small);
  EXPECT_TRUE(ring->Upload(*stream_, d, data.data(), 0).ok());
  EXPECT_TRUE(ring->Download(*stream_, back.data(), d, 0).ok());
}

TEST_F(CudaPinnedStagingTest, UploadReturnsOnceTheSourceIsReadWithCopiesStillInFlight) {
  std::unique_ptr<PinnedStagingRing> ring = MakeRing(4);
  ASSERT_NE(ring, nullptr);
  const size_t n = 3 * kChunk;
  std::vector<uint8_t> data = Bytes(n, 3);
  const std::vector<uint8_t> expected = data;
  CUdeviceptr d = Alloc(n);
  ASSERT_TRUE(ring->Upload(*stream_, d, data.data(), n).ok());
  absl::StatusOr<bool> done = stream_->Query();
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_FALSE(*done) << "the device copies are queued, not waited for";
  std::fill(data.begin(), data.end(), 0);  // the caller's memory is free again
  std::vector<uint8_t> back(n);
  ASSERT_TRUE(ring->Download(*stream_, back.data(), d, n).ok());
  EXPECT_EQ(back, expected);
}

TEST_F(CudaPinnedStagingTest, DestroyingTheRingWaitsForItsCopies) {
  const size_t n = 5 * kChunk;
  const std::vector<uint8_t> data = Bytes(n, 5);
  CUdeviceptr d = Alloc(n);
  {
    std::unique_ptr<PinnedStagingRing> ring = MakeRing();
    ASSERT_NE(ring, nullptr);
    ASSERT_TRUE(ring->Upload(*stream_, d, data.data(), n).ok());
  }
  EXPECT_EQ(fake().live("host"), 0);
  std::vector<uint8_t> back(n);
  std::unique_ptr<PinnedStagingRing> ring = MakeRing();
  ASSERT_NE(ring, nullptr);
  ASSERT_TRUE(ring->Download(*stream_, back.data(), d, n).ok());
  EXPECT_EQ(back, data);
}

TEST_F(CudaPinnedStagingTest, ErrorsNameTheCallAndLeaveTheRingUsable) {
  std::unique_ptr<PinnedStagingRing> ring = MakeRing();
  ASSERT_NE(ring, nullptr);
  const size_t n = 6 * kChunk;
  const std::vector<uint8_t> data = Bytes(n, 7);
  CUdeviceptr d = Alloc(n);
  fake().fail("cuMemcpyHtoDAsync", 1, 2);
  absl::Status s = ring->Upload(*stream_, d, data.data(), n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "cuMemcpyHtoDAsync (cuda:0): FAKE_CUDA_ERROR_1 (fake driver text for 1)");
  ASSERT_TRUE(ring->Upload(*stream_, d, data.data(), n).ok());
  std::vector<uint8_t> back(n);
  ASSERT_TRUE(ring->Download(*stream_, back.data(), d, n).ok());
  EXPECT_EQ(back, data);

  absl::StatusOr<std::unique_ptr<CudaContext>> gpu1 = CudaContext::Create(testing::FakeDriver(), 1);
  ASSERT_TRUE(gpu1.ok());
  absl::StatusOr<CudaStream> other = CudaStream::Create(**gpu1);
  ASSERT_TRUE(other.ok());
  s = ring->Upload(*other, d, data.data(), n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "PinnedStagingRing: a stream of cuda:1 for cuda:0's ring");
}

TEST_F(CudaPinnedStagingTest, CreationFailuresLeaveNothingBehind) {
  EXPECT_EQ(PinnedStagingRing::Create(ctx(), {kChunk, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PinnedStagingRing::Create(ctx(), {0, 2}).status().code(), absl::StatusCode::kInvalidArgument);
  fake().fail("cuMemHostAlloc", 2, 1);  // the second buffer
  absl::StatusOr<std::unique_ptr<PinnedStagingRing>> r = PinnedStagingRing::Create(ctx(), {kChunk, 3});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Has(r.status().message(), "cuMemHostAlloc (cuda:0)")) << r.status();
  EXPECT_EQ(fake().live("host"), 0);
  EXPECT_EQ(fake().live("event"), 0);
  EXPECT_EQ(ctx().users(), 2);  // the fixture's stream and pool
}

}  // namespace
}  // namespace warpd::runtime::cuda
