#include "runtime/device/cuda/cuda_memory_pool.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

constexpr uint64_t kMiB = uint64_t{1} << 20;

class CudaMemoryPoolTest : public testing::FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    ASSERT_NE(stream_ = Keep(CudaStream::Create(ctx())), nullptr);
  }
  void TearDown() override {
    stream_.reset();
    FakeCudaTest::TearDown();
  }
  std::unique_ptr<CudaMemoryPool> MakePool(CudaMemoryPool::Options o = {}) {
    return Keep(CudaMemoryPool::Create(ctx(), o));
  }
  CudaStream& stream() { return *stream_; }

  std::unique_ptr<CudaStream> stream_;
};

TEST_F(CudaMemoryPoolTest, AllocationsAndFreesAreStreamOrderedAndCounted) {
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(pool->exportable());
  EXPECT_EQ(ctx().users(), 2);  // the stream and the pool

  absl::StatusOr<CUdeviceptr> a = pool->Allocate(kMiB, stream());
  absl::StatusOr<CUdeviceptr> b = pool->Allocate(3 * kMiB, stream());
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_NE(*a, 0u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(pool->bytes_in_use(), 4 * kMiB);
  EXPECT_EQ(pool->peak_bytes(), 4 * kMiB);
  EXPECT_EQ(pool->allocations(), 2u);
  EXPECT_EQ(fake().live("device"), 2);

  ASSERT_TRUE(pool->Free(*b, stream()).ok());
  EXPECT_EQ(pool->bytes_in_use(), kMiB) << "a free counts at once";
  EXPECT_EQ(pool->peak_bytes(), 4 * kMiB);
  EXPECT_EQ(fake().live("device"), 2) << "the memory goes in stream order";
  ASSERT_TRUE(stream().Synchronize().ok());
  EXPECT_EQ(fake().live("device"), 1);

  absl::Status twice = pool->Free(*b, stream());
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(twice.message(), "is not an allocation of cuda:0's pool")) << twice;

  // Nothing for nothing.
  absl::StatusOr<CUdeviceptr> none = pool->Allocate(0, stream());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
  EXPECT_TRUE(pool->Free(0, stream()).ok());

  ASSERT_TRUE(pool->Free(*a, stream()).ok());
  ASSERT_TRUE(stream().Synchronize().ok());
  EXPECT_EQ(pool->bytes_in_use(), 0u);
  EXPECT_EQ(pool->allocations(), 0u);
}

TEST_F(CudaMemoryPoolTest, TheQuotaIsRefusedClearlyWithoutAskingTheDriver) {
  CudaMemoryPool::Options o;
  o.quota_bytes = 16 * 1024;
  std::unique_ptr<CudaMemoryPool> pool = MakePool(o);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->quota(), 16u * 1024);
  absl::StatusOr<CUdeviceptr> a = pool->Allocate(12 * 1024, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<CUdeviceptr> b = pool->Allocate(8 * 1024, stream());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b.status().message(),
            "cuda:0 memory quota exceeded: 8192 bytes requested with 12288 of 16384 bytes in use");
  EXPECT_EQ(fake().live("device"), 1);
  EXPECT_EQ(pool->bytes_in_use(), 12u * 1024);
  absl::StatusOr<CUdeviceptr> huge = pool->Allocate(uint64_t{1} << 62, stream());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);

  pool->SetQuota(0);  // none
  absl::StatusOr<CUdeviceptr> c = pool->Allocate(8 * 1024, stream());
  ASSERT_TRUE(c.ok()) << c.status();
  pool->SetQuota(4 * 1024);  // below what is in use: refuses new allocations only
  EXPECT_EQ(pool->Allocate(1, stream()).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(pool->Free(*a, stream()).ok());
  EXPECT_TRUE(pool->Free(*c, stream()).ok());
  EXPECT_TRUE(pool->Allocate(4 * 1024, stream()).ok());
  // (The pool's last allocation is left to the reset that dropping the
  // context does: see TearDown.)
  ASSERT_TRUE(stream().Synchronize().ok());
  pool.reset();
  stream_.reset();
  ctx_.reset();
}

TEST_F(CudaMemoryPoolTest, TheDriversOutOfMemoryNamesTheRequest) {
  fake().set_memory_limit(0, 2 * kMiB);
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<CUdeviceptr> a = pool->Allocate(kMiB, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<CUdeviceptr> b = pool->Allocate(2 * kMiB, stream());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Has(b.status().message(), "cuMemAllocFromPoolAsync (cuda:0): FAKE_CUDA_ERROR_2")) << b.status();
  EXPECT_TRUE(Has(b.status().message(), "allocating 2097152 bytes with 1048576 in use in cuda:0's pool"))
      << b.status();
  EXPECT_EQ(pool->bytes_in_use(), kMiB);
  EXPECT_FALSE(ctx().poisoned());
  ASSERT_TRUE(pool->Free(*a, stream()).ok());
  // Once the first is freed (in stream order) the second fits.
  absl::StatusOr<CUdeviceptr> c = pool->Allocate(2 * kMiB, stream());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << "the free has not run yet";
  ASSERT_TRUE(stream().Synchronize().ok());
  c = pool->Allocate(2 * kMiB, stream());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(pool->Free(*c, stream()).ok());
  ASSERT_TRUE(stream().Synchronize().ok());
}

TEST_F(CudaMemoryPoolTest, TheReleaseThresholdKeepsFreedMemoryReserved) {
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<CUdeviceptr> a = pool->Allocate(kMiB, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*pool->ReservedBytes(), kMiB);
  ASSERT_TRUE(pool->Free(*a, stream()).ok());
  ASSERT_TRUE(stream().Synchronize().ok());
  EXPECT_EQ(*pool->ReservedBytes(), 0u) << "threshold 0: given back at the synchronization";

  ASSERT_TRUE(pool->SetReleaseThreshold(4 * kMiB).ok());
  a = pool->Allocate(kMiB, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(pool->Free(*a, stream()).ok());
  ASSERT_TRUE(stream().Synchronize().ok());
  EXPECT_EQ(*pool->ReservedBytes(), kMiB) << "kept, below the threshold";

  CudaMemoryPool::Options o;
  o.release_threshold = 2 * kMiB;
  std::unique_ptr<CudaMemoryPool> other = MakePool(o);
  ASSERT_NE(other, nullptr);
  absl::StatusOr<CUdeviceptr> b = other->Allocate(3 * kMiB, stream());
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(other->Free(*b, stream()).ok());
  ASSERT_TRUE(stream().Synchronize().ok());
  EXPECT_EQ(*other->ReservedBytes(), 2 * kMiB) << "trimmed to the threshold";
}

TEST_F(CudaMemoryPoolTest, WithoutIpcSupportThePoolIsNotExportable) {
  fake().fail("cuMemPoolCreate", 801, 0);  // CUDA_ERROR_NOT_SUPPORTED
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  EXPECT_FALSE(pool->exportable());
  absl::StatusOr<CUdeviceptr> a = pool->Allocate(64, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(pool->Free(*a, stream()).ok());

  fake().fail("cuMemPoolCreate", 2, 0);
  absl::StatusOr<std::unique_ptr<CudaMemoryPool>> failed = CudaMemoryPool::Create(ctx(), {});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ctx().users(), 2);
  ASSERT_TRUE(stream().Synchronize().ok());
}

TEST_F(CudaMemoryPoolTest, AStreamOfAnotherDeviceIsRefused) {
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<std::unique_ptr<CudaContext>> gpu1 = CudaContext::Create(testing::FakeDriver(), 1);
  ASSERT_TRUE(gpu1.ok()) << gpu1.status();
  {
    absl::StatusOr<CudaStream> s1 = CudaStream::Create(**gpu1);
    ASSERT_TRUE(s1.ok()) << s1.status();
    absl::StatusOr<CUdeviceptr> a = pool->Allocate(64, *s1);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(a.status().message(), "CudaMemoryPool::Allocate: a stream of cuda:1 for cuda:0's pool");
  }
}

TEST_F(CudaMemoryPoolTest, APoisonedContextRefusesAllocations) {
  std::unique_ptr<CudaMemoryPool> pool = MakePool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<CUdeviceptr> a = pool->Allocate(64, stream());
  ASSERT_TRUE(a.ok()) << a.status();
  fake().fail("cuStreamSynchronize", 700, 0);
  EXPECT_EQ(stream().Synchronize().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(pool->Allocate(64, stream()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool->Free(*a, stream()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool->bytes_in_use(), 0u) << "a poisoned context's memory goes with its reset";
  pool.reset();
  stream_.reset();
  ASSERT_TRUE(ctx().Recover().ok());
  EXPECT_EQ(fake().live("device"), 0);
  EXPECT_EQ(fake().live("pool"), 0);
}

TEST_F(CudaMemoryPoolTest, ConcurrentAllocationsNeverPassTheQuota) {
  CudaMemoryPool::Options o;
  o.quota_bytes = 64 * 1024;
  std::unique_ptr<CudaMemoryPool> pool = MakePool(o);
  ASSERT_NE(pool, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
      if (!s.ok()) {
        ++errors;
        return;
      }
      for (int i = 0; i < 100; ++i) {
        absl::StatusOr<CUdeviceptr> p = pool->Allocate(8 * 1024, *s);
        if (!p.ok()) {
          if (p.status().code() != absl::StatusCode::kResourceExhausted) ++errors;
          continue;
        }
        if (pool->bytes_in_use() > o.quota_bytes) ++errors;
        if (!pool->Free(*p, *s).ok()) ++errors;
      }
      if (!s->Synchronize().ok()) ++errors;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_LE(pool->peak_bytes(), o.quota_bytes);
  EXPECT_EQ(pool->bytes_in_use(), 0u);
}

}  // namespace
}  // namespace warpd::runtime::cuda
