#include "runtime/memory/segment_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
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
  big.reset();  // its segment is cached: still open, mapped and charged
  EXPECT_EQ(OpenFds() - before, 2);
  EXPECT_EQ(account_->used(), SegmentPool::kMinSegmentBytes + 2 * rounded);
  EXPECT_EQ(pool_.stats().segments, 3u);
  EXPECT_EQ(pool_.stats().cached_segments, 1u);
  EXPECT_EQ(pool_.stats().cached_bytes, rounded);
  EXPECT_EQ(SegmentPool::DropCachedSegments(), 1u);
  EXPECT_EQ(OpenFds() - before, 1);
  EXPECT_EQ(account_->used(), SegmentPool::kMinSegmentBytes + rounded);
  EXPECT_EQ(pool_.stats().segments, 2u);
  EXPECT_EQ(pool_.stats().cached_segments, 0u);
}

void Stamp(const CpuBuffer& b, unsigned char v) { std::memset(b.data(), v, b.size()); }

bool AllEqual(const CpuBuffer& b, unsigned char v) {
  for (uint64_t i = 0; i < b.size(); ++i) {
    if (b.data()[i] != std::byte{v}) return false;
  }
  return true;
}

TEST_F(SegmentPoolTest, AFreedLargeSegmentIsReusedByTheSamePool) {
  const uint64_t size = 3 * kMiB + 5;
  auto first = MustAllocate(pool_, size);
  const int fd = first->fd();
  std::byte* data = first->data();
  Stamp(*first, 0xAB);
  first.reset();
  const uint64_t used = account_->used();

  // Fill::kAny: the same pages, as the earlier block left them.
  auto again = pool_.Allocate(size, "test", Fill::kAny);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->fd(), fd);
  EXPECT_EQ((*again)->data(), data);
  EXPECT_EQ((*again)->size(), size);
  EXPECT_TRUE(AllEqual(**again, 0xAB));
  EXPECT_EQ(account_->used(), used);  // nothing new was charged
  EXPECT_EQ(pool_.stats().cached_segments, 0u);
  EXPECT_EQ(pool_.stats().blocks_live, 1u);
  again->reset();

  // Fill::kZero (the default): the same pages, zeroed.
  auto zeroed = MustAllocate(pool_, size - 100);  // within 1/8 of the segment
  EXPECT_EQ(zeroed->data(), data);
  EXPECT_TRUE(AllZero(*zeroed));
  EXPECT_EQ(pool_.stats().cache_reuses, 2u);
}

TEST_F(SegmentPoolTest, ACachedSegmentOnlyServesBlocksOfAboutItsSize) {
  auto eight = MustAllocate(pool_, 8 * kMiB);
  std::byte* data = eight->data();
  eight.reset();
  // Too small for it (more than 1/8 of it would be wasted), or too large.
  auto four = MustAllocate(pool_, 4 * kMiB);
  auto nine = MustAllocate(pool_, 9 * kMiB);
  EXPECT_NE(four->data(), data);
  EXPECT_NE(nine->data(), data);
  EXPECT_EQ(pool_.stats().cached_segments, 1u);
  auto seven_and_a_half = MustAllocate(pool_, 7 * kMiB + kMiB / 2);
  EXPECT_EQ(seven_and_a_half->data(), data);
  EXPECT_EQ(seven_and_a_half->size(), 7 * kMiB + kMiB / 2);
  EXPECT_EQ(pool_.stats().cached_segments, 0u);
}

TEST_F(SegmentPoolTest, TheCacheKeepsTheNewestSegmentsUpToItsCap) {
  std::vector<std::shared_ptr<CpuBuffer>> blocks;
  std::vector<std::byte*> data;
  for (uint64_t i = 0; i < SegmentPool::kMaxCachedSegments + 2; ++i) {
    blocks.push_back(MustAllocate(pool_, 2 * kMiB));
    data.push_back(blocks.back()->data());
  }
  const int before = OpenFds();
  blocks.clear();  // freed oldest first
  EXPECT_EQ(pool_.stats().cached_segments, SegmentPool::kMaxCachedSegments);
  EXPECT_EQ(pool_.stats().segments, SegmentPool::kMaxCachedSegments);
  EXPECT_EQ(account_->used(), SegmentPool::kMaxCachedSegments * 2 * kMiB);
  EXPECT_EQ(before - OpenFds(), 2);
  // The cache holds the newest segments; allocations take them all back.
  std::set<std::byte*> newest(data.end() - SegmentPool::kMaxCachedSegments, data.end());
  for (uint64_t i = 0; i < SegmentPool::kMaxCachedSegments; ++i) {
    blocks.push_back(MustAllocate(pool_, 2 * kMiB));
    EXPECT_TRUE(newest.count(blocks.back()->data())) << i;
  }
  EXPECT_EQ(pool_.stats().cached_segments, 0u);
}

TEST_F(SegmentPoolTest, ABlockKeptFromReuseReleasesItsSegment) {
  auto block = MustAllocate(pool_, 2 * kMiB);
  const uint64_t serial = block->segment_serial();
  EXPECT_GT(serial, 0u);
  block->KeepFromReuse();
  block.reset();
  EXPECT_EQ(pool_.stats().cached_segments, 0u);
  EXPECT_EQ(account_->used(), 0u);
  auto next = pool_.Allocate(2 * kMiB, "test", Fill::kAny);
  ASSERT_TRUE(next.ok());
  EXPECT_GT((*next)->segment_serial(), serial);  // serials are never reused
  EXPECT_TRUE(AllZero(**next));
}

TEST(SegmentPoolCacheTest, NeverReusedByAnotherPool) {
  auto account = MemoryAccount::Create("daemon", 0);
  SegmentPool a(MemoryAccount::Create("a", 0, account)), b(MemoryAccount::Create("b", 0, account));
  auto block = a.Allocate(2 * kMiB, "a");
  ASSERT_TRUE(block.ok());
  Stamp(**block, 0x5A);
  struct stat st_a;
  ASSERT_EQ(fstat((*block)->fd(), &st_a), 0);
  block->reset();
  auto other = b.Allocate(2 * kMiB, "b", Fill::kAny);
  ASSERT_TRUE(other.ok());
  struct stat st_b;
  ASSERT_EQ(fstat((*other)->fd(), &st_b), 0);
  EXPECT_NE(st_a.st_ino, st_b.st_ino);
  EXPECT_TRUE(AllZero(**other));
  EXPECT_EQ(a.stats().cached_segments, 1u);
  EXPECT_EQ(b.stats().cache_reuses, 0u);
}

TEST(SegmentPoolCacheTest, ARefusedChargeDropsEveryCacheAndSucceeds) {
  auto global = MemoryAccount::Create("the daemon's CPU", 8 * kMiB);
  SegmentPool a(MemoryAccount::Create("a", 0, global)), b(MemoryAccount::Create("b", 0, global));
  ASSERT_TRUE(a.Allocate(6 * kMiB, "a").ok());  // freed at once: cached
  EXPECT_EQ(global->used(), 6 * kMiB);
  auto four = b.Allocate(4 * kMiB, "b");
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(a.stats().cached_segments, 0u);
  EXPECT_EQ(global->used(), 4 * kMiB);
  // A charge refused with nothing cached still fails, naming the level.
  auto too_much = a.Allocate(6 * kMiB, "a");
  EXPECT_EQ(too_much.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(global->used(), 4 * kMiB);
}

TEST(SegmentPoolCacheTest, ARefusedNonSegmentChargeAlsoDropsTheCaches) {
  auto global = MemoryAccount::Create("the daemon's CPU", 8 * kMiB);
  SegmentPool a(MemoryAccount::Create("a", 0, global)), b(MemoryAccount::Create("b", 0, global));
  ASSERT_TRUE(a.Allocate(6 * kMiB, "a").ok());  // freed at once: cached
  {
    absl::StatusOr<MemoryCharge> args = b.Charge(3 * kMiB);  // fits only once a's cache is gone
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_EQ(args->bytes(), 3 * kMiB);
    EXPECT_EQ(a.stats().cached_segments, 0u);
    EXPECT_EQ(global->used(), 3 * kMiB);
    EXPECT_EQ(b.account()->used(), 3 * kMiB);
    absl::StatusOr<MemoryCharge> more = b.Charge(6 * kMiB);
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(more.status().message().find("the daemon's CPU memory limit"), std::string::npos)
        << more.status();
  }
  EXPECT_EQ(global->used(), 0u);  // the charge went with its MemoryCharge
}

TEST(SegmentPoolCacheTest, CachedSegmentsExpireAndGoWithTheirPool) {
  auto account = MemoryAccount::Create("daemon", 0);
  SegmentPool quick(MemoryAccount::Create("quick", 0, account),
                    {.segment_cache_lifetime = absl::Milliseconds(20)});
  ASSERT_TRUE(quick.Allocate(2 * kMiB, "q").ok());
  EXPECT_EQ(quick.stats().cached_segments, 1u);
  absl::SleepFor(absl::Milliseconds(60));
  {
    // Any pool's large allocation expires every pool's old segments.
    SegmentPool other(MemoryAccount::Create("other", 0, account));
    ASSERT_TRUE(other.Allocate(3 * kMiB, "o").ok());
    EXPECT_EQ(quick.stats().cached_segments, 0u);
    EXPECT_EQ(other.stats().cached_segments, 1u);
    EXPECT_EQ(account->used(), 3 * kMiB);
  }  // a destroyed pool releases its cache
  EXPECT_EQ(account->used(), 0u);

  SegmentPool never(account, {.segment_cache_lifetime = absl::ZeroDuration()});
  ASSERT_TRUE(never.Allocate(2 * kMiB, "n").ok());
  EXPECT_EQ(never.stats().cached_segments, 0u);
  EXPECT_EQ(account->used(), 0u);
}

TEST(HugePagesTest, ParsesTheBracketedMode) {
  EXPECT_EQ(ParseShmemHugePages("always within_size advise [never] deny force\n"), ShmemHugePages::kNone);
  EXPECT_EQ(ParseShmemHugePages("always within_size [advise] never deny force\n"), ShmemHugePages::kOnAdvice);
  EXPECT_EQ(ParseShmemHugePages("[always] within_size advise never deny force"), ShmemHugePages::kAlways);
  EXPECT_EQ(ParseShmemHugePages("always [within_size] advise never"), ShmemHugePages::kAlways);
  EXPECT_EQ(ParseShmemHugePages("always advise never deny [force]"), ShmemHugePages::kAlways);
  EXPECT_EQ(ParseShmemHugePages("always advise never [deny] force"), ShmemHugePages::kNone);
  EXPECT_EQ(ParseShmemHugePages(""), ShmemHugePages::kNone);
  EXPECT_EQ(ParseShmemHugePages("[advise"), ShmemHugePages::kNone);
  EXPECT_EQ(ParseShmemHugePages("advise"), ShmemHugePages::kNone);  // no mode marked
  const uint64_t huge = HugePageBytes();
  EXPECT_GE(huge, Page());
  EXPECT_EQ(huge & (huge - 1), 0u);
}

// The VmFlags line of the mapping of this process that holds `p`
// (/proc/self/smaps); empty when none does.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space && line.find(':') > space) {
      uint64_t lo = 0, hi = 0;
      inside = absl::SimpleHexAtoi(line.substr(0, dash), &lo) &&
               absl::SimpleHexAtoi(line.substr(dash + 1, space - dash - 1), &hi) && lo <= addr && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// Whether this kernel takes MADV_HUGEPAGE at all (it has transparent huge
// pages); without it the hint fails and no mapping is marked.
bool KernelTakesHugePageAdvice() {
  const size_t len = 4 << 20;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const bool ok = madvise(p, len, MADV_HUGEPAGE) == 0;
  munmap(p, len);
  return ok;
}

bool AdvisedHuge(const void* p) {
  for (absl::string_view flag : absl::StrSplit(VmFlagsOf(p), ' ')) {
    if (flag == "hg") return true;
  }
  return false;
}

// Whatever the host's mode, a large block is committed and zeroed; the
// mapping asks for huge pages unless the mode is kNone, and under kOnAdvice
// the pages are committed through that mapping. (Whether the kernel then
// gives huge pages is the host's setting; the test checks what warpd asks.)
TEST(SegmentPoolHugePagesTest, LargeSegmentsAskForHugePagesUnlessTheHostGivesNone) {
  const uint64_t size = 2 * HugePageBytes();
  for (ShmemHugePages mode : {ShmemHugePages::kNone, ShmemHugePages::kOnAdvice, ShmemHugePages::kAlways}) {
    SCOPED_TRACE(static_cast<int>(mode));
    SegmentPoolOptions options;
    options.huge_pages = mode;
    options.segment_cache_lifetime = absl::ZeroDuration();
    SegmentPool pool(MemoryAccount::Create("session", 0), options);
    auto big = MustAllocate(pool, size);
    auto small = MustAllocate(pool, 1000);
    ASSERT_NE(big, nullptr);
    ASSERT_NE(small, nullptr);
    ASSERT_FALSE(VmFlagsOf(big->data()).empty());
    EXPECT_EQ(AdvisedHuge(big->data()), mode != ShmemHugePages::kNone && KernelTakesHugePageAdvice());
    EXPECT_FALSE(AdvisedHuge(small->data()));  // a shared segment under the huge page size
    struct stat st;
    ASSERT_EQ(fstat(big->fd(), &st), 0);
    EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, size);  // committed before Allocate returned
    EXPECT_TRUE(AllZero(*big));
    std::memset(big->data(), 0x5a, size);
    EXPECT_EQ(big->data()[size - 1], std::byte{0x5a});
  }
}

TEST(SegmentPoolLimitsTest, PerAllocationLimit) {
  auto account = MemoryAccount::Create("session", 0);
  SegmentPool pool(account, {.max_allocation_bytes = 64 * kMiB});
  EXPECT_TRUE(pool.Allocate(64 * kMiB, "ok").ok());
  EXPECT_EQ(SegmentPool::DropCachedSegments(), 1u);
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
        const Fill fill = rng() % 2 == 0 ? Fill::kZero : Fill::kAny;
        auto b = pool.Allocate(size, "t", fill);
        if (!b.ok()) {
          ++errors;
          continue;
        }
        // kAny may get a segment this thread or another stamped.
        if (fill == Fill::kZero && !AllZero(**b)) ++errors;
        if (size > 0) std::memset((*b)->data(), static_cast<int>(stamp), size);
        held.push_back(*std::move(b));
        if (held.size() > 200 || rng() % 3 == 0) check_and_free(rng() % held.size());
      }
      while (!held.empty()) check_and_free(held.size() - 1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  SegmentPoolStats s = pool.stats();
  EXPECT_GT(s.cache_reuses, 0u);
  EXPECT_EQ(s.segments, s.cached_segments);
  EXPECT_EQ(s.committed_bytes, s.cached_bytes);
  EXPECT_EQ(account->used(), s.cached_bytes);
  SegmentPool::DropCachedSegments();
  s = pool.stats();
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
