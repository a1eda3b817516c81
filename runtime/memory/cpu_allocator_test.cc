#include "runtime/memory/cpu_allocator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/size_math.h"

namespace warpd::runtime {
namespace {

TEST(CpuAllocatorTest, AllocatesZeroedAlignedMemfd) {
  CpuAllocator alloc({});
  auto buf = alloc.Allocate(1000, "test");
  ASSERT_TRUE(buf.ok()) << buf.status();
  CpuBuffer& b = **buf;
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  for (uint64_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], std::byte{0}) << i;
  // The fd is a real file of the right size and is close-on-exec.
  struct stat st;
  ASSERT_EQ(fstat(b.fd(), &st), 0);
  EXPECT_EQ(st.st_size, 1000);
  EXPECT_TRUE(fcntl(b.fd(), F_GETFD) & FD_CLOEXEC);
  // Writes through the mapping are visible through the fd (MAP_SHARED).
  b.data()[10] = std::byte{42};
  unsigned char c = 0;
  ASSERT_EQ(pread(b.fd(), &c, 1, 10), 1);
  EXPECT_EQ(c, 42);
  EXPECT_EQ(alloc.bytes_in_use(), 1000u);
}

TEST(CpuAllocatorTest, ZeroSizeHasNoMapping) {
  CpuAllocator alloc({});
  auto buf = alloc.Allocate(0, "empty");
  ASSERT_TRUE(buf.ok()) << buf.status();
  EXPECT_EQ((*buf)->size(), 0u);
  EXPECT_EQ((*buf)->data(), nullptr);
  EXPECT_GE((*buf)->fd(), 0);
}

TEST(CpuAllocatorTest, PerAllocationLimit) {
  CpuAllocator alloc({.max_allocation_bytes = 4096, .max_total_bytes = 0});
  EXPECT_TRUE(alloc.Allocate(4096, "ok").ok());
  auto too_big = alloc.Allocate(4097, "big");
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("4097"), absl::string_view::npos);
  auto huge = alloc.Allocate(UINT64_MAX, "huge");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CpuAllocatorTest, TotalLimitIsReleasedWhenBuffersDrop) {
  CpuAllocator alloc({.max_allocation_bytes = 1 << 20, .max_total_bytes = 10000});
  auto a = alloc.Allocate(6000, "a");
  ASSERT_TRUE(a.ok());
  auto b = alloc.Allocate(6000, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(alloc.bytes_in_use(), 6000u);
  a->reset();
  EXPECT_EQ(alloc.bytes_in_use(), 0u);
  EXPECT_TRUE(alloc.Allocate(6000, "b").ok());
  EXPECT_EQ(alloc.bytes_in_use(), 0u);  // the temporary was dropped at once
}

TEST(CpuAllocatorTest, ConcurrentAllocationsRespectTotalLimit) {
  CpuAllocator alloc({.max_allocation_bytes = 1 << 20, .max_total_bytes = 8 * 4096});
  std::vector<std::shared_ptr<CpuBuffer>> kept[4];
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        auto buf = alloc.Allocate(4096, "c");
        if (buf.ok()) kept[t].push_back(*buf);
      }
    });
  }
  for (auto& th : threads) th.join();
  size_t total = 0;
  for (auto& k : kept) total += k.size();
  EXPECT_EQ(total, 8u);
  EXPECT_EQ(alloc.bytes_in_use(), 8u * 4096);
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
