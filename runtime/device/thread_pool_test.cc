#include "runtime/device/thread_pool.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"

namespace warpd::runtime {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIdOnce) {
  ThreadPool pool(4, "test");
  for (int64_t n : {1, 7, 64, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, 37, [&](int64_t b, int64_t e) {
      ASSERT_LE(e - b, 37);
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPoolTest, ScheduleRunsTasks) {
  ThreadPool pool(3, "test");
  std::atomic<int> sum{0};
  absl::BlockingCounter done(100);
  for (int i = 1; i <= 100; ++i) {
    pool.Schedule([&, i] {
      sum += i;
      done.DecrementCount();
    });
  }
  done.Wait();
  EXPECT_EQ(sum.load(), 5050);
}

TEST(ThreadPoolTest, NestedAndConcurrentParallelForsFinish) {
  ThreadPool pool(2, "test");
  std::atomic<int64_t> total{0};
  absl::BlockingCounter done(4);
  // Tasks on the pool itself call ParallelFor: the callers take part, so
  // this finishes even though every worker is busy.
  for (int t = 0; t < 4; ++t) {
    pool.Schedule([&] {
      pool.ParallelFor(10000, 10, [&](int64_t b, int64_t e) { total += e - b; });
      done.DecrementCount();
    });
  }
  done.Wait();
  EXPECT_EQ(total.load(), 40000);
}

// A small job started while a huge one has every worker still gets
// workers: they take chunks from the active jobs in turn instead of staying
// with the job that came first.
TEST(ThreadPoolTest, SmallJobGetsWorkersBesideAHugeOne) {
  ThreadPool pool(4, "test");
  constexpr int64_t kBigChunks = 20000;
  std::atomic<int64_t> big_done{0};
  std::atomic<bool> stop{false};
  absl::Notification big_started;
  std::thread big([&] {
    pool.ParallelFor(kBigChunks, 1, [&](int64_t, int64_t) {
      if (!stop.load()) absl::SleepFor(absl::Microseconds(200));
      if (big_done.fetch_add(1) == 8) big_started.Notify();
    });
  });
  big_started.WaitForNotification();
  absl::Mutex mu;
  std::set<std::thread::id> helpers;
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(64, 1, [&](int64_t, int64_t) {
    absl::SleepFor(absl::Milliseconds(1));
    if (std::this_thread::get_id() != caller) {
      absl::MutexLock lock(&mu);
      helpers.insert(std::this_thread::get_id());
    }
  });
  const int64_t big_when_small_done = big_done.load();
  stop = true;
  big.join();
  EXPECT_EQ(big_done.load(), kBigChunks);
  EXPECT_LT(big_when_small_done, kBigChunks);
  absl::MutexLock lock(&mu);
  EXPECT_GE(helpers.size(), 2u) << "the small job ran on its caller and " << helpers.size() << " worker(s)";
}

TEST(CpuDeviceTest, DescribesItself) {
  CpuDevice cpu(2);
  EXPECT_EQ(cpu.info().name, "cpu");
  EXPECT_EQ(cpu.info().kind, "cpu");
  EXPECT_FALSE(cpu.info().alias.empty());
  EXPECT_EQ(cpu.info().arch, CpuArch());
  EXPECT_GT(cpu.info().memory_bytes, 0u);
  EXPECT_EQ(cpu.target(), abi::Target::kCpu);
  // Without a pool, Allocate fails cleanly; with one, memory is zeroed and
  // comes from (and is charged to) that pool.
  EXPECT_EQ(cpu.Allocate(16, "t", nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
  SegmentPool pool(MemoryAccount::Create("test", 0));
  auto buf = cpu.Allocate(64, "t", &pool);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_NE((*buf)->host_data(), nullptr);
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ((*buf)->host_data()[i], std::byte{0});
  EXPECT_EQ(pool.stats().blocks_live, 1u);
  EXPECT_GT(pool.account()->used(), 0u);
  std::atomic<int64_t> sum{0};
  cpu.ParallelFor(12345, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), int64_t{12345} * 12344 / 2);
}

}  // namespace
}  // namespace warpd::runtime
