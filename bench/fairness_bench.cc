// warpd benchmark: how long one tenant's small launch takes while another
// tenant floods the executor, measured side by side in one run.
//
// Runs the daemon's execution path without gRPC or the compiler: a
// StreamScheduler sized like the daemon's, the CPU device, and commands that
// run a busy loop through CpuDevice::ParallelFor as a kernel launch does.
//   victim: one stream (its own group) submits one small launch, then
//           synchronizes; the latency is submit -> synchronize returned.
//   flood:  --flood-streams streams, each kept at 4 queued big launches, in
//           one group (one tenant with many streams) or each in its own
//           group (many tenants).
// Reported: the victim's median and p90 latency alone and under each flood,
// with the fair scheduler (what the daemon runs) and with the scheduler set
// up like the executor before fair scheduling (a fixed pool, no per-group
// thread cap, a turn drains the whole queue). A sample that takes longer than
// --starve-ms counts as starved.
//
// Usage: warpd-bench-fairness [--samples N] [--flood-streams N]
//        [--executor-threads N] [--cpu-threads N] [--starve-ms N]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {
namespace {

std::atomic<uint64_t> g_sink{0};

// A launch of `ids` threads, each running `iters` dependent multiply-adds.
class BusyLaunch final : public Command {
 public:
  BusyLaunch(CpuDevice* cpu, int64_t ids, int iters) : cpu_(cpu), ids_(ids), iters_(iters) {}
  absl::Status Execute(Device&) override {
    cpu_->ParallelFor(ids_, [this](int64_t begin, int64_t end) {
      float acc = 0;
      for (int64_t i = begin; i < end; ++i) {
        float x = static_cast<float>(i);
        for (int k = 0; k < iters_; ++k) x = x * 0.999999f + 0.5f;
        acc += x;
      }
      g_sink.fetch_add(static_cast<uint64_t>(acc) & 1, std::memory_order_relaxed);
    });
    return absl::OkStatus();
  }
  std::string Describe() const override { return "busy"; }

 private:
  CpuDevice* const cpu_;
  const int64_t ids_;
  const int iters_;
};

struct Config {
  int samples = 40;
  int flood_streams = 8;
  int executor_threads = std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
  int cpu_threads = 0;  // all cores
  int starve_ms = 2000;
  int64_t small_ids = 4096, big_ids = int64_t{1} << 20;
  int small_iters = 64, big_iters = 64;
};

struct Result {
  double median_ms = 0, p90_ms = 0;
  int starved = 0;
};

std::vector<std::unique_ptr<Command>> One(CpuDevice* cpu, int64_t ids, int iters) {
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(std::make_unique<BusyLaunch>(cpu, ids, iters));
  return batch;
}

// Victim latencies, with a flood running when `flood_streams` > 0, its
// streams in one group or each in its own.
Result Measure(const Config& c, CpuDevice* cpu, StreamScheduler::Options options, int flood_streams,
               bool group_per_stream) {
  StreamScheduler scheduler(std::move(options));
  auto victim = Stream::Create(cpu, scheduler.CreateGroup("victim"));
  std::vector<std::shared_ptr<Stream>> flood;
  auto flood_group = scheduler.CreateGroup("flood");
  for (int i = 0; i < flood_streams; ++i) {
    flood.push_back(Stream::Create(cpu, group_per_stream ? scheduler.CreateGroup("flood") : flood_group));
  }
  std::atomic<bool> stop{false};
  auto feed = [&] {
    while (!stop.load()) {
      for (auto& s : flood) {
        while (s->queued() < 4) (void)s->Submit(One(cpu, c.big_ids, c.big_iters));
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
  };
  std::thread feeder(feed);
  if (flood_streams > 0) absl::SleepFor(absl::Milliseconds(200));  // let the flood fill the executor
  std::vector<double> ms;
  Result r;
  for (int i = 0; i < c.samples; ++i) {
    const absl::Time t0 = absl::Now();
    (void)victim->Submit(One(cpu, c.small_ids, c.small_iters));
    auto done = std::make_shared<absl::Notification>();
    victim->SynchronizeAsync([done](absl::Status) { done->Notify(); });
    if (!done->WaitForNotificationWithTimeout(absl::Milliseconds(c.starve_ms))) {
      ++r.starved;
      ms.push_back(c.starve_ms);
      // Wait it out without new flood work, then restart the feeder.
      stop = true;
      done->WaitForNotification();
      if (r.starved >= 3) break;  // the point is made; do not spend minutes
      feeder.join();
      stop = false;
      feeder = std::thread(feed);
      continue;
    }
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
    absl::SleepFor(absl::Milliseconds(2));
  }
  stop = true;
  feeder.join();
  for (auto& s : flood) s->Cancel();
  victim->Cancel();
  std::sort(ms.begin(), ms.end());
  r.median_ms = ms[ms.size() / 2];
  r.p90_ms = ms[std::min(ms.size() - 1, ms.size() * 9 / 10)];
  return r;
}

int Main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--samples")) c.samples = std::max(v, 3);
    else if (!std::strcmp(argv[i], "--flood-streams")) c.flood_streams = std::max(v, 1);
    else if (!std::strcmp(argv[i], "--executor-threads")) c.executor_threads = std::max(v, 1);
    else if (!std::strcmp(argv[i], "--cpu-threads")) c.cpu_threads = v;
    else if (!std::strcmp(argv[i], "--starve-ms")) c.starve_ms = std::max(v, 10);
    else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  CpuDevice cpu(c.cpu_threads);
  StreamScheduler::Options fair{.threads = c.executor_threads};
  StreamScheduler::Options before{.threads = c.executor_threads,
                                  .max_threads = c.executor_threads,
                                  .max_threads_per_group = c.executor_threads,
                                  .slice = absl::Hours(1)};
  // One big launch alone, to show the scale of the flood's commands.
  {
    const absl::Time t0 = absl::Now();
    BusyLaunch(&cpu, c.big_ids, c.big_iters).Execute(cpu).IgnoreError();
    std::printf("one flood launch alone: %.1f ms; CPU device %d workers, executor %d threads, %d flood streams\n",
                absl::ToDoubleMilliseconds(absl::Now() - t0), cpu.num_threads(), c.executor_threads,
                c.flood_streams);
  }
  const Result alone = Measure(c, &cpu, fair, 0, false);
  const Result one = Measure(c, &cpu, fair, c.flood_streams, false);
  const Result many = Measure(c, &cpu, fair, c.flood_streams, true);
  const Result one_before = Measure(c, &cpu, before, c.flood_streams, false);
  const Result many_before = Measure(c, &cpu, before, c.flood_streams, true);
  auto row = [&](const char* name, const Result& r) {
    std::printf("%-58s median %8.2f ms  p90 %8.2f ms  ratio %7.1fx%s\n", name, r.median_ms, r.p90_ms,
                r.median_ms / alone.median_ms,
                r.starved ? ("  (" + std::to_string(r.starved) + " samples starved > " +
                             std::to_string(c.starve_ms) + " ms)").c_str()
                          : "");
  };
  std::printf("victim: one launch of %lld threads + synchronize, %d samples\n",
              static_cast<long long>(c.small_ids), c.samples);
  row("alone", alone);
  row("flood of 1 group, fair scheduler", one);
  row("flood of 1 group per stream, fair scheduler", many);
  row("flood of 1 group, as before (fixed pool, no cap, drains)", one_before);
  row("flood of 1 group per stream, as before", many_before);
  return 0;
}

}  // namespace
}  // namespace warpd::runtime

int main(int argc, char** argv) { return warpd::runtime::Main(argc, argv); }
