#include "runtime/memory/segment_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/size_math.h"

namespace warpd::runtime {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t Page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

int OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

bool AllZero(const CpuBuffer& b) {
  for (uint64_t i = 0; i < b.size(); ++i) {
    if (b.data()[i] != std::byte{0}) return false;
  }
  return true;
}

std::shared_ptr<CpuBuffer> MustAllocate(SegmentPool& pool, uint64_t size) {
  auto b = pool.Allocate(size, "test");
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : nullptr;
}

class SegmentPoolTest : public ::testing::Test {
 protected:
  std::shared_ptr<MemoryAccount> account_ = MemoryAccount::Create("session", 0);
  SegmentPool pool_{account_};
};

TEST_F(SegmentPoolTest, BlocksAreZeroedAlignedAndMemfdBacked) {
  auto b = MustAllocate(pool_, 1000);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->size(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
  EXPECT_TRUE(AllZero(*b));
  // The fd is a real close-on-exec file holding the block at offset().
  struct stat st;
  ASSERT_EQ(fstat(b->fd(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_size), b->offset() + b->size());
  EXPECT_TRUE(fcntl(b->fd(), F_GETFD) & FD_CLOEXEC);
  auto c = MustAllocate(pool_, 100);
  EXPECT_EQ(c->fd(), b->fd());  // tiny blocks share the segment
  EXPECT_NE(c->offset(), b->offset());
  // Writes through the mapping are visible through the fd (MAP_SHARED).
  c->data()[10] = std::byte{42};
  unsigned char got = 0;
  ASSERT_EQ(pread(c->fd(), &got, 1, static_cast<off_t>(c->offset() + 10)), 1);
  EXPECT_EQ(got, 42);
  const SegmentPoolStats s = pool_.stats();
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(s.committed_bytes, SegmentPool::kMinSegmentBytes);
  EXPECT_EQ(s.blocks_live, 2u);
  EXPECT_EQ(s.block_bytes, 1024u + 128u);
  EXPECT_EQ(account_->used(), SegmentPool::kMinSegmentBytes);  // whole segments are charged
}

TEST_F(SegmentPoolTest, ZeroSizeHasNoMemory) {
  auto b = MustAllocate(pool_, 0);
  EXPECT_EQ(b->size(), 0u);
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->fd(), -1);
  EXPECT_EQ(pool_.stats().segments, 0u);
  EXPECT_EQ(pool_.stats().blocks_live, 0u);
  EXPECT_EQ(account_->used(), 0u);
}

TEST_F(SegmentPoolTest, AlignmentOfEverySize) {
  std::vector<std::shared_ptr<CpuBuffer>> blocks;
  for (uint64_t size = 1; size <= 300; ++size) blocks.push_back(MustAllocate(pool_, size));
  for (uint64_t size : {kMiB - 64, kMiB - 63, kMiB, kMiB + 1, 3 * kMiB + 5}) blocks.push_back(MustAllocate(pool_, size));
  std::set<std::byte*> starts;
  for (const auto& b : blocks) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u) << b->size();
    EXPECT_EQ(b->offset() % 64, 0u);
    EXPECT_TRUE(starts.insert(b->data()).second);
    if (b->size() >= SegmentPool::kLargeBlockBytes - 63) {  // rounds up to 1 MiB: a segment of its own
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Page(), 0u) << b->size();
      EXPECT_EQ(b->offset(), 0u);
    }
  }
}

TEST_F(SegmentPoolTest, ReusedRangesStartZeroed) {
  auto keep = MustAllocate(pool_, 64);  // keeps the segment alive
  auto a = MustAllocate(pool_, 3000);
  std::byte* where = a->data();
  std::memset(a->data(), 0xab, a->size());
  a.reset();
  auto b = MustAllocate(pool_, 3000);
  EXPECT_EQ(b->data(), where);  // the same range came back...
  EXPECT_TRUE(AllZero(*b));     // ...zeroed
  EXPECT_EQ(pool_.stats().segments, 1u);
  // A smaller block in a dirty range: also zero, and so is the rest.
  std::memset(b->data(), 0xcd, b->size());
  b.reset();
  auto c = MustAllocate(pool_, 1000);
  auto d = MustAllocate(pool_, 1900);
  EXPECT_TRUE(AllZero(*c));
  EXPECT_TRUE(AllZero(*d));
}

TEST_F(SegmentPoolTest, FreeRangesCoalesce) {
  auto a = MustAllocate(pool_, 1024);
  auto b = MustAllocate(pool_, 1024);
  auto c = MustAllocate(pool_, 1024);
  auto keep = MustAllocate(pool_, 1024);
  ASSERT_EQ(b->data(), a->data() + 1024);
  ASSERT_EQ(c->data(), b->data() + 1024);
  std::byte* start = a->data();
  a.reset();
  c.reset();
  b.reset();  // joins both neighbours
  // 3 KiB fits exactly in the joined range, so best fit takes it rather than
  // the segment's larger free tail.
  auto big = MustAllocate(pool_, 3 * 1024);
  EXPECT_EQ(big->data(), start);
  EXPECT_TRUE(AllZero(*big));
  // The tail was not split: the next block follows `keep`.
  auto after = MustAllocate(pool_, 64);
  EXPECT_EQ(after->data(), keep->data() + 1024);
  EXPECT_EQ(pool_.stats().segments, 1u);
}

TEST_F(SegmentPoolTest, TenThousandTinyBlocksUseFewFds) {
  const int before = OpenFds();
  ASSERT_GT(before, 0);
  std::vector<std::shared_ptr<CpuBuffer>> blocks;
  for (int i = 0; i < 10000; ++i) {
    blocks.push_back(MustAllocate(pool_, 4 + i % 60));
    blocks.back()->data()[0] = std::byte{1};
  }
  const int during = OpenFds();
  const SegmentPoolStats s = pool_.stats();
  // 10,000 blocks of 64 bytes: segments of 64, 64, 128, 256 and 512 KiB.
  EXPECT_EQ(s.segments, 5u);
  EXPECT_EQ(s.committed_bytes, 1024 * kKiB);
  EXPECT_EQ(s.blocks_live, 10000u);
  EXPECT_EQ(during - before, 5);
  EXPECT_EQ(account_->used(), s.committed_bytes);
  blocks.clear();
  EXPECT_EQ(OpenFds(), before);
  EXPECT_EQ(pool_.stats().segments, 0u);
  EXPECT_EQ(pool_.stats().committed_bytes, 0u);
  EXPECT_EQ(pool_.stats().blocks_live, 0u);
  EXPECT_EQ(pool_.stats().block_bytes, 0u);
  EXPECT_EQ(account_->used(), 0u);
}

TEST_F(SegmentPoolTest, SharedSegmentsGrowGeometricallyUpToTheCap) {
  std::vector<std::shared_ptr<CpuBuffer>> blocks;
  for (int i = 0; i < 40; ++i) blocks.push_back(MustAllocate(pool_, 512 * kKiB));
  // 64 KiB segments cannot take them: each new segment is as large as all
  // before it (at least the block, at most 4 MiB).
  const SegmentPoolStats s = pool_.stats();
  EXPECT_EQ(s.block_bytes, 40 * 512 * kKiB);
  EXPECT_LT(s.committed_bytes - s.block_bytes, SegmentPool::kMaxSharedSegmentBytes);
  EXPECT_LE(s.segments, 8u);
}

TEST_F(SegmentPoolTest, LargeBlocksGetASegmentOfTheirOwn) {
  auto small = MustAllocate(pool_, 100);
  const int before = OpenFds();
  auto big = MustAllocate(pool_, 2 * kMiB + 1);
  auto big2 = MustAllocate(pool_, 2 * kMiB + 1);
  EXPECT_EQ(OpenFds() - before, 2);
  EXPECT_NE(big->fd(), small->fd());
  EXPECT_NE(big->fd(), big2->fd());
  EXPECT_EQ(big->offset(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big->data()) % Page(), 0u);
  struct stat st;
  ASSERT_EQ(fstat(big->fd(), &st), 0);
  const uint64_t rounded = *CheckedAlignUp(2 * kMiB + 1, Page());
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), rounded);
  EXPECT_TRUE(AllZero(*big));
  EXPECT_EQ(pool_.stats().segments, 3u);
  EXPECT_EQ(account_->used(), SegmentPool::kMinSegmentBytes + 2 * rounded);
  big.reset();
  EXPECT_EQ(OpenFds() - before, 1);
  EXPECT_EQ(account_->used(), SegmentPool::kMinSegmentBytes + rounded);
  EXPECT_EQ(pool_.stats().segments, 2u);
}

TEST(SegmentPoolLimitsTest, PerAllocationLimit) {
  auto account = MemoryAccount::Create("session", 0);
  SegmentPool pool(account, {.max_allocation_bytes = 64 * kMiB});
  EXPECT_TRUE(pool.Allocate(64 * kMiB, "ok").ok());
  auto too_big = pool.Allocate(uint64_t{4} << 30, "big");
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(too_big.status().message(),
            "array of 4 GiB (4294967296 bytes) exceeds the per-array limit of 64 MiB "
            "(67108864 bytes; --max-array-bytes)");
  EXPECT_EQ(pool.Allocate(UINT64_MAX, "huge").status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(account->used(), 0u);  // nothing was charged for refused blocks

  SegmentPool unlimited(account, {.max_allocation_bytes = UINT64_MAX});
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - 4096, (uint64_t{1} << 62) + 1}) {
    auto r = unlimited.Allocate(size, "huge");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << size << " " << r.status();
  }
  EXPECT_EQ(account->used(), 0u);
}

TEST(SegmentPoolLimitsTest, AccountLimitsNameTheLevel) {
  auto global = MemoryAccount::Create("the daemon's CPU", kMiB);
  auto session_a = MemoryAccount::Create("session", 0, global);
  auto session_b = MemoryAccount::Create("session", 0, global);
  SegmentPool a(session_a), b(session_b);
  auto first = a.Allocate(600 * kKiB, "array");  // a shared segment of exactly 600 KiB
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(global->used(), 600 * kKiB);
  auto second = b.Allocate(600 * kKiB, "array");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(second.status().message(),
            "the daemon's CPU memory limit: 600 KiB of 1 MiB in use, 600 KiB more requested "
            "(614400 + 614400 > 1048576 bytes)");
  EXPECT_EQ(b.stats().segments, 0u);
  first->reset();  // the segment goes with its last block...
  EXPECT_EQ(global->used(), 0u);
  EXPECT_TRUE(b.Allocate(600 * kKiB, "array").ok());  // ...so its bytes are back

  auto limited = MemoryAccount::Create("session", 100 * kKiB, global);
  SegmentPool c(limited);
  auto small = c.Allocate(10, "array");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(c.Allocate(200 * kKiB, "array").status().message(),
            "session memory limit: 64 KiB of 100 KiB in use, 200 KiB more requested "
            "(65536 + 204800 > 102400 bytes)");
  EXPECT_EQ(c.stats().segments, 1u);
}

TEST(SegmentPoolLifetimeTest, BlocksOutliveThePool) {
  auto account = MemoryAccount::Create("session", 0);
  const int before = OpenFds();
  std::vector<std::shared_ptr<CpuBuffer>> kept;
  {
    SegmentPool pool(account);
    for (int i = 0; i < 10; ++i) kept.push_back(*pool.Allocate(100, "t"));
    kept.push_back(*pool.Allocate(3 * kMiB, "t"));
    auto dropped = *pool.Allocate(100, "t");
  }  // the pool goes first
  EXPECT_GT(account->used(), 0u);
  for (auto& b : kept) {
    EXPECT_TRUE(AllZero(*b));
    std::memset(b->data(), 0x5a, b->size());
  }
  // Freeing in any order after the pool is gone is safe and returns everything.
  kept.erase(kept.begin() + 3);
  kept.pop_back();
  EXPECT_GT(account->used(), 0u);
  kept.clear();
  EXPECT_EQ(account->used(), 0u);
  EXPECT_EQ(OpenFds(), before);
}

// Threads allocate and free blocks of random sizes (some large) from one
// pool. Each block must start zeroed; each thread stamps its blocks and
// checks the stamp before freeing, so overlapping blocks would show.
TEST(SegmentPoolConcurrencyTest, ConcurrentAllocateAndFree) {
  auto account = MemoryAccount::Create("session", 0);
  SegmentPool pool(account);
  constexpr int kThreads = 4;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      std::vector<std::shared_ptr<CpuBuffer>> held;
      const std::byte stamp{static_cast<unsigned char>(0x10 + t)};
      auto check_and_free = [&](size_t i) {
        const CpuBuffer& b = *held[i];
        for (uint64_t k = 0; k < b.size(); k += 1 + b.size() / 64) {
          if (b.data()[k] != stamp) {
            ++errors;
            break;
          }
        }
        if (b.size() > 0 && b.data()[b.size() - 1] != stamp) ++errors;
        held[i] = held.back();
        held.pop_back();
      };
      for (int i = 0; i < 3000; ++i) {
        const uint64_t size = rng() % 50 == 0 ? kMiB + rng() % kMiB : rng() % 5000;
        auto b = pool.Allocate(size, "t");
        if (!b.ok()) {
          ++errors;
          continue;
        }
        if (!AllZero(**b)) ++errors;
        if (size > 0) std::memset((*b)->data(), static_cast<int>(stamp), size);
        held.push_back(*std::move(b));
        if (held.size() > 200 || rng() % 3 == 0) check_and_free(rng() % held.size());
      }
      while (!held.empty()) check_and_free(held.size() - 1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  const SegmentPoolStats s = pool.stats();
  EXPECT_EQ(s.segments, 0u);
  EXPECT_EQ(s.committed_bytes, 0u);
  EXPECT_EQ(s.blocks_live, 0u);
  EXPECT_EQ(s.block_bytes, 0u);
  EXPECT_EQ(account->used(), 0u);
}

TEST(SizeMathTest, DetectsOverflow) {
  EXPECT_EQ(CheckedMul(1u << 20, 1u << 20), uint64_t{1} << 40);
  EXPECT_FALSE(CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32).has_value());
  EXPECT_FALSE(CheckedAdd(UINT64_MAX, 1).has_value());
  EXPECT_EQ(CheckedAlignUp(65, 64), 128u);
  EXPECT_EQ(CheckedAlignUp(64, 64), 64u);
  EXPECT_FALSE(CheckedAlignUp(UINT64_MAX - 2, 64).has_value());
}

}  // namespace
}  // namespace warpd::runtime
