// Fair sharing of the stream executor between groups: properties that hold
// whatever the machine's load (gates and a fake clock, not timings).
#include "runtime/exec/scheduler.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {
namespace {

// A command that calls a function.
class FnCommand final : public Command {
 public:
  explicit FnCommand(std::function<absl::Status()> fn) : fn_(std::move(fn)) {}
  absl::Status Execute(Device&) override { return fn_(); }
  std::string Describe() const override { return "test"; }

 private:
  std::function<absl::Status()> fn_;
};

std::vector<std::unique_ptr<Command>> Batch(int n, const std::function<absl::Status(int)>& fn) {
  std::vector<std::unique_ptr<Command>> batch;
  for (int i = 0; i < n; ++i) batch.push_back(std::make_unique<FnCommand>([fn, i] { return fn(i); }));
  return batch;
}

// The order in which commands started, as labels.
class StartLog {
 public:
  void Add(std::string label) {
    absl::MutexLock lock(&mu_);
    log_.push_back(std::move(label));
  }
  std::vector<std::string> Get() {
    absl::MutexLock lock(&mu_);
    return log_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
};

class SchedulerTest : public ::testing::Test {
 protected:
  // One executor thread and 1 ms turns on a clock that moves only by Tick
  // commands (1 ms each): every turn is one command, so the order in which
  // commands run is the scheduler's choice alone.
  StreamScheduler::Options FakeClockOptions() {
    return {.threads = 1,
            .max_threads = 1,
            .slice = absl::Milliseconds(1),
            .clock = [this] { return absl::UnixEpoch() + absl::Nanoseconds(fake_ns_.load()); }};
  }
  std::function<absl::Status(int)> Tick(StartLog* log, std::string label) {
    return [this, log, label](int) {
      log->Add(label);
      fake_ns_ += 1000000;
      return absl::OkStatus();
    };
  }
  // A stream of `group` whose one command holds its executor thread until
  // `gate` opens; returns once the command runs.
  std::shared_ptr<Stream> Hold(const std::shared_ptr<StreamGroup>& group, absl::Notification* gate) {
    // Shared: the command may still be inside Notify when Hold returns.
    auto started = std::make_shared<absl::Notification>();
    auto stream = Stream::Create(&cpu_, group);
    EXPECT_TRUE(stream
                    ->Submit(Batch(1,
                                   [started, gate](int) {
                                     started->Notify();
                                     gate->WaitForNotification();
                                     return absl::OkStatus();
                                   }))
                    .ok());
    started->WaitForNotification();
    return stream;
  }

  CpuDevice cpu_{1};
  std::atomic<int64_t> fake_ns_{0};
};

// A tenant with 8 streams of commands that never finish on their own holds
// at most its share of threads; another tenant's command runs to completion
// meanwhile.
TEST_F(SchedulerTest, FloodHoldsAtMostItsThreadsAndVictimStillRuns) {
  StreamScheduler scheduler({.threads = 3});
  ASSERT_EQ(scheduler.max_threads_per_group(), 2);
  auto flood = scheduler.CreateGroup("flood");
  auto victim = scheduler.CreateGroup("victim");
  absl::Notification gate;
  std::atomic<int> running{0}, most{0}, started{0};
  std::vector<std::shared_ptr<Stream>> streams;
  for (int s = 0; s < 8; ++s) {
    streams.push_back(Stream::Create(&cpu_, flood));
    ASSERT_TRUE(streams.back()
                    ->Submit(Batch(5,
                                   [&](int) {
                                     const int now = ++running;
                                     int m = most.load();
                                     while (now > m && !most.compare_exchange_weak(m, now)) {
                                     }
                                     ++started;
                                     gate.WaitForNotification();
                                     --running;
                                     return absl::OkStatus();
                                   }))
                    .ok());
  }
  while (started.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  auto v = Stream::Create(&cpu_, victim);
  bool ran = false;
  ASSERT_TRUE(v->Submit(Batch(1, [&](int) {
                 ran = true;
                 return absl::OkStatus();
               }))
                  .ok());
  EXPECT_TRUE(v->Synchronize().ok());  // while the flood's gate is closed
  EXPECT_TRUE(ran);
  EXPECT_EQ(started.load(), 2);
  EXPECT_EQ(scheduler.Usage(*flood).running, 2);
  EXPECT_EQ(scheduler.Usage(*flood).queued, 6);
  gate.Notify();
  for (auto& s : streams) EXPECT_TRUE(s->Synchronize().ok());
  EXPECT_EQ(started.load(), 40);
  EXPECT_EQ(most.load(), 2);
}

// With a single executor thread (and no extra ones) the cap cannot help;
// virtual time does: the victim's command is the next to start after the
// flood's running one.
TEST_F(SchedulerTest, VictimStartsNextOnASingleThread) {
  // A zero slice: one command per turn, however quickly it ran.
  StreamScheduler scheduler({.threads = 1, .max_threads = 1, .slice = absl::ZeroDuration()});
  auto flood = scheduler.CreateGroup("flood");
  auto victim = scheduler.CreateGroup("victim");
  StartLog log;
  absl::Notification first_started, gate;
  std::vector<std::shared_ptr<Stream>> streams;
  for (int s = 0; s < 8; ++s) {
    streams.push_back(Stream::Create(&cpu_, flood));
    ASSERT_TRUE(streams.back()
                    ->Submit(Batch(10,
                                   [&, s](int i) {
                                     log.Add("flood");
                                     if (s == 0 && i == 0) {
                                       first_started.Notify();
                                       gate.WaitForNotification();
                                     } else {
                                       absl::SleepFor(absl::Microseconds(200));
                                     }
                                     return absl::OkStatus();
                                   }))
                    .ok());
  }
  first_started.WaitForNotification();
  auto v = Stream::Create(&cpu_, victim);
  ASSERT_TRUE(v->Submit(Batch(1, [&](int) {
                 log.Add("victim");
                 return absl::OkStatus();
               }))
                  .ok());
  gate.Notify();
  EXPECT_TRUE(v->Synchronize().ok());
  for (auto& s : streams) EXPECT_TRUE(s->Synchronize().ok());
  std::vector<std::string> order = log.Get();
  ASSERT_EQ(order.size(), 81u);
  EXPECT_EQ(order[1], "victim");
}

// When as many groups as there are threads hold them with long commands, an
// extra thread starts for a group that waits; it ends once idle.
TEST_F(SchedulerTest, ExtraThreadWhenLongTurnsHoldEveryThread) {
  StreamScheduler scheduler({.threads = 2, .max_threads = 3, .grow_after = absl::Milliseconds(1)});
  absl::Notification gate;
  std::atomic<int> started{0};
  std::vector<std::shared_ptr<Stream>> flood;
  for (const char* name : {"a", "b"}) {
    flood.push_back(Stream::Create(&cpu_, scheduler.CreateGroup(name)));
    ASSERT_TRUE(flood.back()
                    ->Submit(Batch(2,
                                   [&](int) {
                                     ++started;
                                     gate.WaitForNotification();
                                     return absl::OkStatus();
                                   }))
                    .ok());
  }
  while (started.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  auto victim = Stream::Create(&cpu_, scheduler.CreateGroup("victim"));
  ASSERT_TRUE(victim->Submit(Batch(1, [](int) { return absl::OkStatus(); })).ok());
  EXPECT_TRUE(victim->Synchronize().ok());  // while both gates are closed
  EXPECT_EQ(scheduler.threads(), 3);
  // At the maximum: one more waiting group waits for a turn to end.
  auto late = Stream::Create(&cpu_, scheduler.CreateGroup("late"));
  std::atomic<int> late_ran{0};
  // Hold the third thread too.
  auto holder = Stream::Create(&cpu_, scheduler.CreateGroup("holder"));
  ASSERT_TRUE(holder->Submit(Batch(1, [&](int) {
                       ++started;
                       gate.WaitForNotification();
                       return absl::OkStatus();
                     }))
                  .ok());
  while (started.load() < 3) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(late->Submit(Batch(1, [&](int) {
                     ++late_ran;
                     return absl::OkStatus();
                   }))
                  .ok());
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(late_ran.load(), 0);
  EXPECT_EQ(scheduler.threads(), 3);
  gate.Notify();
  EXPECT_TRUE(late->Synchronize().ok());
  for (auto& s : flood) EXPECT_TRUE(s->Synchronize().ok());
  EXPECT_TRUE(holder->Synchronize().ok());
  // The extra thread ends after a second without work.
  for (int i = 0; i < 100 && scheduler.threads() > 2; ++i) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(scheduler.threads(), 2);
}

// Commands of one stream start in submission order and never overlap, with
// many streams of several groups on several threads.
TEST_F(SchedulerTest, PerStreamOrderIsKept) {
  StreamScheduler scheduler({.threads = 4, .slice = absl::Microseconds(50)});
  constexpr int kStreams = 12, kCommands = 300;
  std::vector<std::shared_ptr<StreamGroup>> groups = {
      scheduler.CreateGroup("a", 1), scheduler.CreateGroup("b", 2), scheduler.CreateGroup("c", 5)};
  struct PerStream {
    std::atomic<int> next{0}, in_flight{0}, errors{0};
  };
  std::vector<PerStream> state(kStreams);
  std::vector<std::shared_ptr<Stream>> streams;
  for (int s = 0; s < kStreams; ++s) streams.push_back(Stream::Create(&cpu_, groups[s % 3]));
  // Several batches per stream, interleaved between streams.
  for (int part = 0; part < 3; ++part) {
    for (int s = 0; s < kStreams; ++s) {
      ASSERT_TRUE(streams[s]
                      ->Submit(Batch(kCommands / 3,
                                     [&, s, part](int i) {
                                       PerStream& p = state[s];
                                       if (p.in_flight.fetch_add(1) != 0) ++p.errors;
                                       if (p.next.load() != part * (kCommands / 3) + i) ++p.errors;
                                       p.next.store(part * (kCommands / 3) + i + 1);
                                       if (i % 7 == 0) std::this_thread::yield();
                                       p.in_flight.fetch_sub(1);
                                       return absl::OkStatus();
                                     }))
                      .ok());
    }
  }
  for (auto& s : streams) EXPECT_TRUE(s->Synchronize().ok());
  for (int s = 0; s < kStreams; ++s) {
    EXPECT_EQ(state[s].next.load(), kCommands) << "stream " << s;
    EXPECT_EQ(state[s].errors.load(), 0) << "stream " << s;
    EXPECT_EQ(streams[s]->completed(), static_cast<uint64_t>(kCommands));
  }
}

// Two busy groups with weights 1 and 3 share one thread 1:3 (each command
// takes one millisecond of a fake clock, the slice is one millisecond, so
// every turn is one command). Within a group, streams take turns.
TEST_F(SchedulerTest, WeightsShareTimeProportionally) {
  StreamScheduler scheduler(FakeClockOptions());
  auto blocker = scheduler.CreateGroup("blocker");
  auto light = scheduler.CreateGroup("light", 1);
  auto heavy = scheduler.CreateGroup("heavy", 3);
  // Hold the only thread until everything is queued.
  absl::Notification gate;
  auto b = Hold(blocker, &gate);
  StartLog log;
  std::vector<std::shared_ptr<Stream>> streams;
  for (auto [group, name] : {std::pair{light, "L"}, std::pair{heavy, "H"}}) {
    for (int s = 0; s < 2; ++s) {
      streams.push_back(Stream::Create(&cpu_, group));
      const std::string label = std::string(name) + std::to_string(s);
      ASSERT_TRUE(streams.back()
                      ->Submit(Batch(100, Tick(&log, label)))
                      .ok());
    }
  }
  gate.Notify();
  for (auto& s : streams) EXPECT_TRUE(s->Synchronize().ok());
  std::vector<std::string> order = log.Get();
  ASSERT_EQ(order.size(), 400u);
  // While both groups are busy (the light one runs out after ~267 commands).
  int light_n = 0, heavy_n = 0, h0 = 0, l0 = 0;
  for (int i = 0; i < 200; ++i) {
    if (order[i][0] == 'L') {
      ++light_n;
      l0 += order[i] == "L0";
    } else {
      ++heavy_n;
      h0 += order[i] == "H0";
    }
  }
  EXPECT_NEAR(heavy_n, 150, 3);
  EXPECT_NEAR(light_n, 50, 3);
  EXPECT_NEAR(h0, heavy_n / 2, 1);
  EXPECT_NEAR(l0, light_n / 2, 1);
  EXPECT_EQ(scheduler.Usage(*heavy).busy, absl::Milliseconds(200));
  EXPECT_EQ(scheduler.Usage(*heavy).turns, 200u);
}

// A group that was idle does not bank credit: after a long idle spell it
// shares the thread with a busy group by weight, it does not monopolize it.
TEST_F(SchedulerTest, IdleGroupDoesNotBankCredit) {
  StreamScheduler scheduler(FakeClockOptions());
  auto busy = scheduler.CreateGroup("busy");
  auto late = scheduler.CreateGroup("late");
  StartLog log;
  absl::Notification late_started, gate;
  auto s1 = Stream::Create(&cpu_, busy);
  // 100 ms of the busy group's work, then a command that waits for the late
  // group to be queued.
  ASSERT_TRUE(s1->Submit(Batch(101,
                               [&](int i) {
                                 if (i == 100) {
                                   late_started.Notify();
                                   gate.WaitForNotification();
                                 }
                                 return Tick(&log, "B")(i);
                               }))
                  .ok());
  ASSERT_TRUE(s1->Submit(Batch(50, Tick(&log, "B"))).ok());
  late_started.WaitForNotification();
  auto s2 = Stream::Create(&cpu_, late);
  ASSERT_TRUE(s2->Submit(Batch(50, Tick(&log, "L"))).ok());
  gate.Notify();
  EXPECT_TRUE(s1->Synchronize().ok());
  EXPECT_TRUE(s2->Synchronize().ok());
  std::vector<std::string> order = log.Get();
  ASSERT_EQ(order.size(), 201u);
  // The 40 commands after the late group arrived alternate.
  int late_n = 0;
  for (int i = 101; i < 141; ++i) late_n += order[i] == "L";
  EXPECT_NEAR(late_n, 20, 2);
}

TEST_F(SchedulerTest, QueueLimitRejectsWholeBatch) {
  StreamScheduler scheduler({.threads = 2});
  auto stream = Stream::Create(&cpu_, scheduler.CreateGroup("g"), 4);
  absl::Notification started, gate;
  std::atomic<int> ran{0};
  ASSERT_TRUE(stream->Submit(Batch(1, [&](int) {
                       started.Notify();
                       gate.WaitForNotification();
                       return absl::OkStatus();
                     }))
                  .ok());
  started.WaitForNotification();
  auto count = [&](int) {
    ++ran;
    return absl::OkStatus();
  };
  ASSERT_TRUE(stream->Submit(Batch(3, count)).ok());
  absl::StatusOr<uint64_t> over = stream->Submit(Batch(2, count));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "too much queued work: the stream on cpu has 3 commands queued, and 2 more would pass its "
            "limit of 4 (synchronize first, or submit fewer commands at a time)");
  EXPECT_EQ(stream->queued(), 3u);
  absl::StatusOr<uint64_t> last = stream->Submit(Batch(1, count));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 5u);  // the rejected batch took no sequence numbers
  EXPECT_EQ(stream->queued(), 4u);
  gate.Notify();
  EXPECT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(ran.load(), 4);
  EXPECT_EQ(stream->queued(), 0u);
}

// Two streams sharing a tenant's queue quota: together they queue at most its
// limit; running, skipping and cancelling give the room back.
TEST_F(SchedulerTest, SharedQueueQuotaSpansStreams) {
  StreamScheduler scheduler({.threads = 2});
  auto group = scheduler.CreateGroup("g");
  auto quota = std::make_shared<CountQuota>("tenant 't'", "queued commands", 5);
  auto a = Stream::Create(&cpu_, group, Stream::kDefaultMaxQueued, quota);
  auto b = Stream::Create(&cpu_, group, Stream::kDefaultMaxQueued, quota);
  absl::Notification started, gate;
  std::atomic<int> ran{0};
  auto hold = [&](int) {
    started.Notify();
    gate.WaitForNotification();
    return absl::OkStatus();
  };
  auto count = [&](int) {
    ++ran;
    return absl::OkStatus();
  };
  // The running command does not count.
  ASSERT_TRUE(a->Submit(Batch(1, hold)).ok());
  started.WaitForNotification();
  EXPECT_EQ(quota->used(), 0u);
  ASSERT_TRUE(a->Submit(Batch(3, count)).ok());
  // b's stream is idle, but the tenant has 3 of 5 queued: 3 more do not fit.
  EXPECT_TRUE(b->CheckRoom(2).ok());
  EXPECT_EQ(b->CheckRoom(3).code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<uint64_t> over = b->Submit(Batch(3, count));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "too much queued work: tenant 't' queued commands limit: 3 of 5 in use, 3 more requested "
            "(synchronize first, or submit fewer commands at a time)");
  EXPECT_EQ(quota->used(), 3u);
  // Filling the quota from a leaves no room for b.
  ASSERT_TRUE(a->Submit(Batch(2, count)).ok());
  EXPECT_EQ(quota->used(), 5u);
  EXPECT_EQ(b->Submit(Batch(1, count)).status().code(), absl::StatusCode::kResourceExhausted);
  gate.Notify();
  EXPECT_TRUE(a->Synchronize().ok());
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(quota->used(), 0u);
  // Cancel returns the room of the commands it drops.
  absl::Notification started2, gate2;
  ASSERT_TRUE(b->Submit(Batch(1, [&](int) {
                   started2.Notify();
                   gate2.WaitForNotification();
                   return absl::OkStatus();
                 }))
                  .ok());
  started2.WaitForNotification();
  ASSERT_TRUE(b->Submit(Batch(4, count)).ok());
  EXPECT_EQ(quota->used(), 4u);
  std::thread opener([&] {
    absl::SleepFor(absl::Milliseconds(20));
    gate2.Notify();
  });
  b->Cancel();
  opener.join();
  EXPECT_EQ(quota->used(), 0u);
  EXPECT_EQ(ran.load(), 5);
  // A raised limit applies at once.
  quota->set_limit(10);
  EXPECT_TRUE(a->CheckRoom(10).ok());
}

// SetWeight changes the share from then on.
TEST_F(SchedulerTest, SetWeightChangesTheShare) {
  StreamScheduler scheduler(FakeClockOptions());
  auto blocker = scheduler.CreateGroup("blocker");
  auto light = scheduler.CreateGroup("light", 1);
  auto heavy = scheduler.CreateGroup("heavy", 1);
  heavy->SetWeight(4);
  EXPECT_EQ(heavy->weight(), 4);
  light->SetWeight(0);  // clamped
  EXPECT_EQ(light->weight(), 1);
  absl::Notification gate;
  auto b = Hold(blocker, &gate);
  StartLog log;
  auto l = Stream::Create(&cpu_, light);
  auto h = Stream::Create(&cpu_, heavy);
  for (auto [stream, name] : {std::pair{l, "L"}, std::pair{h, "H"}}) {
    ASSERT_TRUE(stream->Submit(Batch(100, Tick(&log, name))).ok());
  }
  gate.Notify();
  EXPECT_TRUE(l->Synchronize().ok());
  EXPECT_TRUE(h->Synchronize().ok());
  std::vector<std::string> order = log.Get();
  ASSERT_EQ(order.size(), 200u);
  int heavy_n = 0;
  for (int i = 0; i < 100; ++i) heavy_n += order[i] == "H";
  EXPECT_NEAR(heavy_n, 80, 3);
}

TEST_F(SchedulerTest, WhenIdleLeavesTheErrorInPlace) {
  StreamScheduler scheduler({.threads = 2});
  auto stream = Stream::Create(&cpu_, scheduler.CreateGroup("g"));
  bool called = false;
  stream->WhenIdle([&] { called = true; });  // idle: at once, on this thread
  EXPECT_TRUE(called);
  absl::Notification started, gate, idle;
  ASSERT_TRUE(stream->Submit(Batch(2, [&](int i) {
                       if (i == 0) {
                         started.Notify();
                         gate.WaitForNotification();
                       }
                       return i == 1 ? absl::InternalError("boom") : absl::OkStatus();
                     }))
                  .ok());
  started.WaitForNotification();
  stream->WhenIdle([&] { idle.Notify(); });
  EXPECT_FALSE(idle.HasBeenNotified());
  gate.Notify();
  idle.WaitForNotification();
  EXPECT_EQ(stream->completed(), 2u);
  EXPECT_EQ(stream->Synchronize().message(), "boom");
  EXPECT_TRUE(stream->Synchronize().ok());
}

// Cancelling a stream that waits behind its group's other streams (the
// group is at its thread cap) returns without waiting for them.
TEST_F(SchedulerTest, CancelDoesNotWaitForTheGroupsOtherStreams) {
  StreamScheduler scheduler({.threads = 2});
  auto group = scheduler.CreateGroup("g");
  auto s1 = Stream::Create(&cpu_, group);
  auto s2 = Stream::Create(&cpu_, group);
  absl::Notification started, gate;
  ASSERT_TRUE(s1->Submit(Batch(1, [&](int) {
                   started.Notify();
                   gate.WaitForNotification();
                   return absl::OkStatus();
                 }))
                  .ok());
  started.WaitForNotification();
  std::atomic<int> ran{0};
  ASSERT_TRUE(s2->Submit(Batch(3, [&](int) {
                   ++ran;
                   return absl::OkStatus();
                 }))
                  .ok());
  absl::Status reported;
  bool called = false;
  s2->SynchronizeAsync([&](absl::Status s) {
    reported = s;
    called = true;
  });
  s2->Cancel();  // s1's command still holds the group's only thread
  EXPECT_TRUE(called);
  EXPECT_EQ(reported.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(s2->completed(), 3u);
  gate.Notify();
  EXPECT_TRUE(s1->Synchronize().ok());
  EXPECT_TRUE(s2->Synchronize().ok());
  EXPECT_EQ(ran.load(), 0);
  // The stream still works after a cancel.
  ASSERT_TRUE(s2->Submit(Batch(1, [&](int) {
                   ++ran;
                   return absl::OkStatus();
                 }))
                  .ok());
  EXPECT_TRUE(s2->Synchronize().ok());
  EXPECT_EQ(ran.load(), 1);
}

TEST_F(SchedulerTest, WeightsAreClampedAndThreadsCapped) {
  StreamScheduler one({.threads = 1});
  EXPECT_EQ(one.max_threads_per_group(), 1);
  StreamScheduler four({.threads = 4, .max_threads_per_group = 9});
  EXPECT_EQ(four.max_threads_per_group(), 4);
  EXPECT_EQ(four.CreateGroup("a", 0)->weight(), 1);
  EXPECT_EQ(four.CreateGroup("b", 1 << 30)->weight(), StreamScheduler::kMaxWeight);
}

// Waits until every executor thread of `scheduler` waits for work.
void AwaitIdle(const StreamScheduler& scheduler) {
  while (scheduler.idle_threads() < scheduler.threads()) absl::SleepFor(absl::Milliseconds(1));
}

// A batch submitted with run_here to an idle stream while executor threads
// are idle runs on the submitting thread, charged to its group as a turn.
TEST_F(SchedulerTest, RunHereRunsTheTurnOnTheCallersThread) {
  StreamScheduler scheduler({.threads = 2});
  auto group = scheduler.CreateGroup("local");
  auto stream = Stream::Create(&cpu_, group);
  AwaitIdle(scheduler);
  std::vector<std::thread::id> ran;
  absl::Mutex mu;
  auto record = [&](int) {
    absl::MutexLock lock(&mu);
    ran.push_back(std::this_thread::get_id());
    return absl::OkStatus();
  };
  ASSERT_TRUE(stream->Submit(Batch(3, record), /*run_here=*/true).ok());
  // Already done when Submit returns.
  EXPECT_EQ(stream->completed(), 3u);
  ASSERT_EQ(ran.size(), 3u);
  for (const auto& id : ran) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(scheduler.Usage(*group).turns, 1u);
  EXPECT_TRUE(stream->Synchronize().ok());
  // Without run_here: an executor thread.
  ran.clear();
  ASSERT_TRUE(stream->Submit(Batch(1, record)).ok());
  EXPECT_TRUE(stream->Synchronize().ok());
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_NE(ran[0], std::this_thread::get_id());
}

// run_here never jumps the executor: a group at its thread limit waits for
// its thread, and work that waits for a turn anywhere goes first.
TEST_F(SchedulerTest, RunHereRespectsTheGroupLimitAndWaitingWork) {
  StreamScheduler scheduler({.threads = 2, .max_threads = 2, .max_threads_per_group = 1});
  auto a = scheduler.CreateGroup("a");
  auto b = scheduler.CreateGroup("b");
  AwaitIdle(scheduler);
  absl::Notification gate;
  auto held = Hold(a, &gate);  // a holds its one thread; one thread is idle
  std::atomic<bool> a_here{false}, b_here{false};
  const auto caller = std::this_thread::get_id();
  auto a2 = Stream::Create(&cpu_, a);
  ASSERT_TRUE(a2->Submit(Batch(1,
                               [&](int) {
                                 a_here = std::this_thread::get_id() == caller;
                                 return absl::OkStatus();
                               }),
                         /*run_here=*/true)
                  .ok());
  EXPECT_EQ(a2->completed(), 0u);  // queued behind a's limit, not run here
  auto b1 = Stream::Create(&cpu_, b);
  // a2 waits for a turn: b may not run here ahead of it (it queues, and the
  // idle thread, which a may not use, runs it).
  ASSERT_TRUE(b1->Submit(Batch(1,
                               [&](int) {
                                 b_here = std::this_thread::get_id() == caller;
                                 return absl::OkStatus();
                               }),
                         /*run_here=*/true)
                  .ok());
  EXPECT_TRUE(b1->Synchronize().ok());
  EXPECT_FALSE(b_here.load());
  gate.Notify();
  EXPECT_TRUE(a2->Synchronize().ok());
  EXPECT_FALSE(a_here.load());
  EXPECT_TRUE(held->Synchronize().ok());
}

// What the turn run here leaves when its slice ends goes to the executor,
// in order.
TEST_F(SchedulerTest, RunHereLeavesTheRestToTheExecutor) {
  StreamScheduler scheduler(FakeClockOptions());
  auto group = scheduler.CreateGroup("local");
  auto stream = Stream::Create(&cpu_, group);
  AwaitIdle(scheduler);
  StartLog log;
  std::vector<bool> here;
  absl::Mutex mu;
  const auto caller = std::this_thread::get_id();
  auto tick = Tick(&log, "t");
  ASSERT_TRUE(stream
                  ->Submit(Batch(3,
                                 [&](int i) {
                                   {
                                     absl::MutexLock lock(&mu);
                                     here.push_back(std::this_thread::get_id() == caller);
                                   }
                                   log.Add(std::to_string(i));
                                   return tick(i);
                                 }),
                           /*run_here=*/true)
                  .ok());
  EXPECT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(here, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(log.Get(), (std::vector<std::string>{"0", "t", "1", "t", "2", "t"}));
  // The last turn is charged just after the stream went idle.
  for (int i = 0; i < 1000 && scheduler.Usage(*group).turns < 3; ++i) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(scheduler.Usage(*group).turns, 3u);
}

}  // namespace
}  // namespace warpd::runtime
