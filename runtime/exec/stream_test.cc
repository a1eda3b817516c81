#include "runtime/exec/stream.h"

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/graph.h"
#include "runtime/exec/launch.h"
#include "runtime/exec/test_kernels.h"
#include "warpd/native/array.h"

namespace warpd::runtime {
namespace {

using abi::CompiledKernel;
using abi::CompiledModule;
using abi::KernelLayout;
using abi::ParamLayout;
using types::ScalarKind;
using types::TypeRef;

const TypeRef kF32 = types::Scalar(ScalarKind::kFloat32);
const TypeRef kF32Array = types::TypeTable::Global().Array(kF32, 1);

using testing::IncArgs;
using testing::IncKernel;

// spin(flag: array(int32)): loops until cancelled, checking at the back-edge.
std::atomic<int> g_spinning{0};
void SpinKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  g_spinning.store(1);
  while (!wp::should_stop(ctx)) std::this_thread::yield();
}

// grid(a: array(float32, ndim=2)) with tid_ndim 2: a[i, j] = i * 100 + j.
void GridKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  const auto* a = static_cast<const wp::array_t<float>*>(args);
  for (int64_t t = begin; t < end; ++t) {
    int32_t c[2];
    wp::tid_coords(ctx->bounds, t, c, 2);
    float* x = wp::address(ctx, *a, 30, c[0], c[1]);
    if (x == nullptr) return;
    *x = static_cast<float>(c[0] * 100 + c[1]);
  }
}

// gate(): waits until the test opens the gate.
std::atomic<int> g_gate_open{0};
void GateKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  while (g_gate_open.load() == 0) std::this_thread::yield();
}

// vec(): a dynamic vector component index 5 into a vec3 at line 7.
void VecFaultKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  (void)wp::record_index_fault(ctx, 7, 0, 5, 3);
}

// sarr(s: S) with struct S { x: float32; a: array(float32) }: s.a[tid] = s.x.
struct SArgs {
  float x;
  wp::array_t<float> a;
};
void StructArrayKernel(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end) {
  const auto* s = static_cast<const SArgs*>(args);
  for (int64_t t = begin; t < end; ++t) {
    float* p = wp::address(ctx, s->a, 41, t);
    if (p == nullptr) return;
    *p = s->x;
  }
}

class FakeModule : public CompiledModule {
 public:
  FakeModule() {
    types_ = std::make_shared<types::TypeTable>();
    auto s = types_->Struct("S_1", "S", {{"x", kF32}, {"a", kF32Array}});
    CompiledKernel sarr;
    sarr.layout.name = "sarr";
    sarr.layout.display_name = "sarr";
    sarr.layout.params = {ParamLayout{"s", *s, 0, 72}};
    sarr.layout.args_size = 72;
    sarr.layout.args_align = 8;
    sarr.layout.file = "/path/s.py";
    sarr.cpu_entry = &StructArrayKernel;
    kernels_.push_back(sarr);

    cache_key_ = "fake";
    CompiledKernel inc;
    inc.layout.name = "inc";
    inc.layout.display_name = "inc";
    inc.layout.params = {ParamLayout{"a", kF32Array, 0, 64}, ParamLayout{"amount", kF32, 64, 4}};
    inc.layout.args_size = 80;
    inc.layout.args_align = 16;
    inc.layout.tid_ndim = 1;
    inc.layout.file = "/path/file.py";
    inc.layout.line = 10;
    inc.cpu_entry = &IncKernel;
    kernels_.push_back(inc);

    CompiledKernel spin;
    spin.layout.name = "spin";
    spin.layout.display_name = "spin";
    spin.layout.file = "/path/file.py";
    spin.cpu_entry = &SpinKernel;
    kernels_.push_back(spin);

    CompiledKernel grid;
    grid.layout.name = "grid";
    grid.layout.display_name = "grid";
    grid.layout.params = {ParamLayout{"a", types::TypeTable::Global().Array(kF32, 2), 0, 64}};
    grid.layout.args_size = 64;
    grid.layout.args_align = 8;
    grid.layout.tid_ndim = 2;
    grid.layout.file = "/path/grid.py";
    grid.cpu_entry = &GridKernel;
    kernels_.push_back(grid);

    CompiledKernel vec;
    vec.layout.name = "vec";
    vec.layout.display_name = "vec";
    vec.layout.file = "/path/vec.py";
    vec.cpu_entry = &VecFaultKernel;
    kernels_.push_back(vec);

    CompiledKernel gate;
    gate.layout.name = "gate";
    gate.layout.display_name = "gate";
    gate.cpu_entry = &GateKernel;
    kernels_.push_back(gate);
  }
};

std::string F32Bytes(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

class StreamTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Array> MakeArray(TypeRef dtype, std::vector<int64_t> shape) {
    auto layout = MakeArrayLayout(dtype, shape);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = pool_.Allocate(layout->size_bytes, "test");
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cpu", *layout, *buf);
  }
  std::vector<float> Read(const Array& a) {
    std::vector<float> out(a.size_bytes() / 4);
    std::memcpy(out.data(), a.data(), a.size_bytes());
    return out;
  }
  absl::StatusOr<std::unique_ptr<Command>> Launch(const std::string& kernel,
                                                  std::vector<int64_t> dims,
                                                  std::vector<LaunchArgValue> args) {
    return PrepareLaunch(module_, kernel, dims, std::move(args), "cpu");
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  CpuDevice cpu_{4};
  StreamScheduler scheduler_{{.threads = 2}};
  std::shared_ptr<StreamGroup> group_ = scheduler_.CreateGroup("test");
  std::shared_ptr<const CompiledModule> module_ = std::make_shared<FakeModule>();
};

TEST_F(StreamTest, LaunchFillCopyRunInOrder) {
  auto a = MakeArray(kF32, {1000});
  auto b = MakeArray(kF32, {1000});
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*PrepareFill(a, F32Bytes(1.5f), "cpu"));
  batch.push_back(*Launch("inc", {1000}, {a, F32Bytes(2.0f)}));
  batch.push_back(*PrepareCopy(b, a, "cpu"));
  batch.push_back(*Launch("inc", {1000}, {b, F32Bytes(10.0f)}));
  EXPECT_EQ(*stream->Submit(std::move(batch)), 4u);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(stream->completed(), 4u);
  std::vector<float> va = Read(*a), vb = Read(*b);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(va[i], 3.5f) << i;
    ASSERT_EQ(vb[i], 13.5f) << i;
  }
}

// A repeated launch runs that many times in a row (each run sees the
// previous one's writes) and is one command of the stream.
TEST_F(StreamTest, RepeatedLaunchRunsEveryTime) {
  auto a = MakeArray(kF32, {100});
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*PrepareLaunch(module_, "inc", {100}, {a, F32Bytes(1.5f)}, "cpu", nullptr, 7));
  batch.push_back(*PrepareLaunch(module_, "inc", {100}, {a, F32Bytes(0.25f)}, "cpu", nullptr, 0));  // once
  // The launches metric counts every run (Command::Launches).
  EXPECT_EQ(batch[0]->Launches(), 7u);
  EXPECT_EQ(batch[1]->Launches(), 1u);
  EXPECT_EQ(*stream->Submit(std::move(batch)), 2u);
  ASSERT_TRUE(stream->Synchronize().ok());
  for (float v : Read(*a)) ASSERT_EQ(v, 7 * 1.5f + 0.25f);
  auto too_many = PrepareLaunch(module_, "inc", {100}, {a, F32Bytes(1.0f)}, "cpu", nullptr, kMaxLaunchRepeat + 1);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
}

// The first failing run stops the remaining ones.
TEST_F(StreamTest, RepeatedLaunchStopsAtTheFirstFault) {
  auto a = MakeArray(kF32, {10});
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*PrepareLaunch(module_, "inc", {11}, {a, F32Bytes(1.0f)}, "cpu", nullptr, 5));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  EXPECT_EQ(stream->Synchronize().code(), absl::StatusCode::kOutOfRange);
  // One run at most reached each in-bounds element (threads may run
  // alongside the faulting one, or be stopped before starting).
  for (float v : Read(*a)) EXPECT_LE(v, 1.0f);
}

TEST_F(StreamTest, FaultIsStickyUntilSynchronize) {
  auto a = MakeArray(kF32, {10});
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("inc", {11}, {a, F32Bytes(1.0f)}));   // thread 10 is out of bounds
  batch.push_back(*PrepareFill(a, F32Bytes(7.0f), "cpu"));       // skipped
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  absl::Status s = stream->Synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(),
            "kernel 'inc' at /path/file.py:12: index 10 out of bounds for dimension 0 "
            "(shape (10,))");
  // Threads 0..9 ran before or alongside the fault; the fill did not run.
  for (float v : Read(*a)) EXPECT_TRUE(v == 1.0f || v == 0.0f);
  EXPECT_NE(Read(*a)[0], 7.0f);
  // Reported once, then the stream works again.
  EXPECT_TRUE(stream->Synchronize().ok());
  std::vector<std::unique_ptr<Command>> again;
  again.push_back(*PrepareFill(a, F32Bytes(7.0f), "cpu"));
  ASSERT_TRUE(stream->Submit(std::move(again)).ok());
  EXPECT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Read(*a)[9], 7.0f);
}

TEST_F(StreamTest, TwoDimensionalLaunch) {
  auto a = MakeArray(kF32, {3, 4});
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("grid", {3, 4}, {a}));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  std::vector<float> v = Read(*a);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[5], 101.0f);
  EXPECT_EQ(v[11], 203.0f);
  // Two-dimensional fault: dims larger than the array.
  std::vector<std::unique_ptr<Command>> bad;
  bad.push_back(*Launch("grid", {3, 5}, {a}));
  ASSERT_TRUE(stream->Submit(std::move(bad)).ok());
  absl::Status s = stream->Synchronize();
  EXPECT_EQ(s.message(),
            "kernel 'grid' at /path/grid.py:30: index 4 out of bounds for dimension 1 "
            "(shape (3, 4))");
}

TEST_F(StreamTest, FreeQueuedAfterLaunchKeepsMemoryAlive) {
  auto stream = Stream::Create(&cpu_, group_);
  auto a = MakeArray(kF32, {100000});
  std::weak_ptr<const Array> weak = a;
  std::vector<std::unique_ptr<Command>> batch;
  for (int i = 0; i < 20; ++i) batch.push_back(*Launch("inc", {100000}, {a, F32Bytes(1.0f)}));
  auto keep = a;  // read the result after the stream is done
  batch.push_back(*PrepareFree(a, "cpu"));
  a.reset();  // the session's handle is gone; only commands hold the array
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Read(*keep)[99999], 20.0f);
  keep.reset();
  EXPECT_TRUE(weak.expired());  // the free command released the last reference
}

TEST_F(StreamTest, CancelStopsRunningKernelAndDropsQueue) {
  auto stream = Stream::Create(&cpu_, group_);
  auto a = MakeArray(kF32, {4});
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("spin", {1}, {}));
  batch.push_back(*PrepareFill(a, F32Bytes(5.0f), "cpu"));
  g_spinning = 0;
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  while (g_spinning.load() == 0) std::this_thread::yield();
  stream->Cancel();
  EXPECT_EQ(Read(*a)[0], 0.0f);
  EXPECT_TRUE(stream->Synchronize().ok());
}

// Submit's `then` is registered with the batch, so it gets the cancelled
// kernel's error, which a wait registered after the Cancel no longer sees
// (the command socket runs a batch's turn on its own thread and waits after).
TEST_F(StreamTest, SubmitThenGetsTheErrorThatCancelClears) {
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("spin", {1}, {}));
  g_spinning = 0;
  absl::Notification called;
  absl::Status got;
  ASSERT_TRUE(stream->Submit(std::move(batch), /*run_here=*/false, [&](absl::Status s) {
                      got = std::move(s);
                      called.Notify();
                    }).ok());
  while (g_spinning.load() == 0) std::this_thread::yield();
  stream->Cancel();
  ASSERT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(got.code(), absl::StatusCode::kCancelled) << got;
  EXPECT_NE(got.message().find("cancelled"), std::string::npos) << got;
  EXPECT_TRUE(stream->Synchronize().ok());
  // An empty batch on an idle stream: `then` runs at once with the sticky error (none).
  bool now = false;
  ASSERT_TRUE(stream->Submit({}, false, [&](absl::Status s) { now = s.ok(); }).ok());
  EXPECT_TRUE(now);
}

// A graph's commands run only when it is replayed, in order, once per replay.
TEST_F(StreamTest, GraphReplaysRunTheCapturedCommandsEachTime) {
  auto a = MakeArray(kF32, {1000});
  auto b = MakeArray(kF32, {1000});
  std::vector<std::unique_ptr<Command>> captured;
  captured.push_back(*Launch("inc", {1000}, {a, F32Bytes(1.0f)}));
  captured.push_back(*PrepareCopy(b, a, "cpu"));
  captured.push_back(*Launch("inc", {1000}, {b, F32Bytes(0.5f)}));
  auto graph = Graph::Create("cpu", std::move(captured));
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ((*graph)->size(), 3u);
  auto stream = Stream::Create(&cpu_, group_);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Read(*a)[0], 0.0f);  // capturing ran nothing
  std::vector<std::unique_ptr<Command>> batch;
  for (int i = 0; i < 3; ++i) batch.push_back((*graph)->MakeReplay());
  // A replay counts as the graph's launches (two; the copy is not one).
  EXPECT_EQ(batch[0]->Launches(), 2u);
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  std::vector<float> va = Read(*a), vb = Read(*b);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(va[i], 3.0f) << i;
    ASSERT_EQ(vb[i], 3.5f) << i;  // copied from a after its third increment
  }
  EXPECT_EQ(Graph::Create("cpu", {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A graph holds its owner's quota units until the graph (and every replay
// command holding it) is gone; a graph that is refused gives them back.
TEST_F(StreamTest, GraphHoldsItsQuotaUntilDestroyed) {
  auto quota = std::make_shared<CountQuota>("tenant 't'", "graph commands", 5);
  auto a = MakeArray(kF32, {4});
  std::vector<std::unique_ptr<Command>> captured;
  for (int i = 0; i < 3; ++i) captured.push_back(*PrepareFill(a, F32Bytes(1.0f), "cpu"));
  auto hold = QuotaHold::Take(quota, captured.size());
  ASSERT_TRUE(hold.ok());
  auto graph = Graph::Create("cpu", std::move(captured), *std::move(hold));
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ(quota->used(), 3u);
  EXPECT_EQ(QuotaHold::Take(quota, 3).status().code(), absl::StatusCode::kResourceExhausted);
  std::unique_ptr<Command> replay = (*graph)->MakeReplay();
  graph->reset();
  EXPECT_EQ(quota->used(), 3u);  // the replay still holds the graph
  replay.reset();
  EXPECT_EQ(quota->used(), 0u);
  auto refused = Graph::Create("cpu", {}, *QuotaHold::Take(quota, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(quota->used(), 0u);
}

// A fault in a replay stops it and is the stream's sticky error; the next
// replay starts clean and faults (or not) on its own.
TEST_F(StreamTest, GraphReplayFaultsAreReportedPerReplay) {
  auto a = MakeArray(kF32, {10});
  std::vector<std::unique_ptr<Command>> captured;
  captured.push_back(*PrepareFill(a, F32Bytes(2.0f), "cpu"));
  captured.push_back(*Launch("inc", {11}, {a, F32Bytes(1.0f)}));  // thread 10 is out of bounds
  captured.push_back(*PrepareFill(a, F32Bytes(9.0f), "cpu"));     // not reached
  auto graph = *Graph::Create("cpu", std::move(captured));
  auto stream = Stream::Create(&cpu_, group_);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Command>> batch;
    batch.push_back(graph->MakeReplay());
    ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
    absl::Status s = stream->Synchronize();
    EXPECT_EQ(s.message(),
              "kernel 'inc' at /path/file.py:12: index 10 out of bounds for dimension 0 (shape (10,))")
        << round;
    EXPECT_NE(Read(*a)[0], 9.0f);
  }
  std::vector<std::unique_ptr<Command>> good;
  good.push_back(*Launch("inc", {10}, {a, F32Bytes(1.0f)}));
  auto ok_graph = *Graph::Create("cpu", std::move(good));
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(ok_graph->MakeReplay());
  batch.push_back(ok_graph->MakeReplay());
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  EXPECT_TRUE(stream->Synchronize().ok());
}

// Cancelling the stream stops a replay in its running kernel; the graph can
// be replayed again afterwards.
TEST_F(StreamTest, CancelStopsAGraphReplay) {
  auto a = MakeArray(kF32, {4});
  std::vector<std::unique_ptr<Command>> captured;
  captured.push_back(*Launch("spin", {1}, {}));
  captured.push_back(*PrepareFill(a, F32Bytes(5.0f), "cpu"));
  auto graph = *Graph::Create("cpu", std::move(captured));
  auto stream = Stream::Create(&cpu_, group_);
  // Twice: rearmed, the spin runs again (until cancelled again).
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Command>> batch;
    batch.push_back(graph->MakeReplay());
    g_spinning = 0;
    ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
    while (g_spinning.load() == 0) std::this_thread::yield();
    stream->Cancel();
    EXPECT_EQ(Read(*a)[0], 0.0f);
    EXPECT_TRUE(stream->Synchronize().ok());
  }
}

TEST_F(StreamTest, ValidationNamesKernelAndParameter) {
  auto a = MakeArray(kF32, {10});
  auto i32 = MakeArray(types::Scalar(ScalarKind::kInt32), {10});
  auto two_d = MakeArray(kF32, {2, 5});
  struct Case {
    std::string kernel;
    std::vector<int64_t> dims;
    std::vector<LaunchArgValue> args;
    absl::StatusCode code;
    std::string message;
  } cases[] = {
      {"nope", {1}, {}, absl::StatusCode::kNotFound,
       "module has no kernel 'nope' (kernels: sarr, inc, spin, grid, vec, gate)"},
      {"inc", {10}, {a}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc' takes 2 arguments (a, amount), got 1"},
      {"inc", {10}, {a, std::string("12345678")}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': argument 'amount' of type float32 takes 4 bytes, got 8"},
      {"inc", {10}, {i32, F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': argument 'a' expects array(dtype=float32, ndim=1), got "
       "array(dtype=int32, ndim=1)"},
      {"inc", {10}, {two_d, F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': argument 'a' expects array(dtype=float32, ndim=1), got "
       "array(dtype=float32, ndim=2)"},
      {"inc", {10}, {F32Bytes(1), F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': argument 'a' expects array(dtype=float32, ndim=1), got a value, not an "
       "array"},
      {"inc", {10}, {a, a}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': argument 'amount' expects a value of type float32, got an array"},
      {"inc", {}, {a, F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': launch dim must have 1 to 4 dimensions, got 0"},
      {"inc", {1, 1, 1, 1, 1}, {a, F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': launch dim must have 1 to 4 dimensions, got 5"},
      {"inc", {4, -1}, {a, F32Bytes(1)}, absl::StatusCode::kInvalidArgument,
       "kernel 'inc': launch dim (4, -1): dimension 1 must be in [0, 2147483647]"},
      {"grid", {12}, {two_d}, absl::StatusCode::kInvalidArgument,
       "kernel 'grid' unpacks wp.tid() into 2 indices, but is launched with 1-dimensional dim "
       "(12,)"},
  };
  for (auto& c : cases) {
    auto r = Launch(c.kernel, c.dims, c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), c.code) << c.message;
    EXPECT_EQ(r.status().message(), c.message);
  }
  // Launch dims of 2^31-1 in all four dims overflow int64 thread counts? No:
  // (2^31)^4 = 2^124 overflows, so it is rejected.
  auto huge = Launch("inc", {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX}, {a, F32Bytes(1)});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StreamTest, VectorIndexFault) {
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("vec", {1}, {}));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  EXPECT_EQ(stream->Synchronize().message(),
            "kernel 'vec' at /path/vec.py:7: index 5 out of bounds for a vector of length 3");
}

TEST_F(StreamTest, SynchronizeAsyncReportsOnceWhenIdle) {
  auto a = MakeArray(kF32, {10});
  auto stream = Stream::Create(&cpu_, group_);
  // Idle: the callback runs at once.
  bool called = false;
  stream->SynchronizeAsync([&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    called = true;
  });
  EXPECT_TRUE(called);
  // Busy: a kernel held at a gate, then a fault; both waiters see the
  // fault, once.
  g_gate_open = 0;
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*Launch("gate", {1}, {}));
  batch.push_back(*Launch("inc", {11}, {a, F32Bytes(1.0f)}));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  absl::Notification n1, n2;
  absl::Status s1, s2;
  stream->SynchronizeAsync([&](absl::Status s) { s1 = s; n1.Notify(); });
  stream->SynchronizeAsync([&](absl::Status s) { s2 = s; n2.Notify(); });
  EXPECT_FALSE(n1.HasBeenNotified());
  g_gate_open = 1;
  n1.WaitForNotification();
  n2.WaitForNotification();
  EXPECT_EQ(s1.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(s2.code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(stream->Synchronize().ok());  // cleared
}

TEST_F(StreamTest, StructArgumentsResolveTheirArrayMembers) {
  static_assert(offsetof(SArgs, a) == 8 && sizeof(SArgs) == 72, "the layout the fake kernel declares");
  auto a = MakeArray(kF32, {6});
  auto i32 = MakeArray(types::Scalar(ScalarKind::kInt32), {6});
  auto lookup_fn = [&](uint64_t h) -> absl::StatusOr<std::shared_ptr<const Array>> {
    if (h == 7) return a;
    if (h == 8) return i32;
    return absl::NotFoundError("no array with handle " + std::to_string(h));
  };
  ArrayLookup lookup(lookup_fn);
  auto bytes = [](float x, uint64_t handle) {
    std::string b(72, '\xff');  // the slot's other 56 bytes are ignored
    std::memcpy(b.data(), &x, 4);
    std::memcpy(b.data() + 8, &handle, 8);
    return b;
  };
  auto cmd = PrepareLaunch(module_, "sarr", {6}, {bytes(2.5f, 7)}, "cpu", &lookup);
  ASSERT_TRUE(cmd.ok()) << cmd.status();
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*std::move(cmd));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Read(*a), std::vector<float>(6, 2.5f));

  auto wrong = PrepareLaunch(module_, "sarr", {6}, {bytes(1.0f, 8)}, "cpu", &lookup);
  EXPECT_EQ(wrong.status().message(),
            "kernel 'sarr': argument 's': a member expects array(dtype=float32, ndim=1), got "
            "array(dtype=int32, ndim=1)");
  EXPECT_EQ(PrepareLaunch(module_, "sarr", {6}, {bytes(1.0f, 99)}, "cpu", &lookup).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(PrepareLaunch(module_, "sarr", {6}, {bytes(1.0f, 7)}, "cpu").status().code(),
            absl::StatusCode::kInvalidArgument);
  // Handle 0: no array; the kernel's first access faults instead of reading
  // whatever pointer the client put in the slot.
  auto none = PrepareLaunch(module_, "sarr", {1}, {bytes(1.0f, 0)}, "cpu", &lookup);
  ASSERT_TRUE(none.ok()) << none.status();
  batch.clear();
  batch.push_back(*std::move(none));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  EXPECT_EQ(stream->Synchronize().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(StreamTest, CopyAndFillValidation) {
  auto a = MakeArray(kF32, {10});
  auto b = MakeArray(kF32, {11});
  auto c = MakeArray(types::Scalar(ScalarKind::kFloat64), {10});
  EXPECT_EQ(PrepareCopy(a, b, "cpu").status().message(),
            "copy: shape mismatch: destination is (10,), source is (11,)");
  EXPECT_EQ(PrepareCopy(a, c, "cpu").status().message(),
            "copy: element size mismatch: destination is float32 (4 bytes), source is float64 (8 bytes)");
  // As in Warp, element types of one size copy their bytes.
  EXPECT_TRUE(PrepareCopy(a, MakeArray(types::Scalar(ScalarKind::kInt32), {10}), "cpu").ok());
  EXPECT_EQ(PrepareFill(a, "ab", "cpu").status().message(),
            "fill: value has 2 bytes, but an element of float32 has 4");
  EXPECT_EQ(PrepareFill(a, F32Bytes(1), "cuda:0").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StreamTest, FillVectorElements) {
  auto v = MakeArray(types::Vector(3, ScalarKind::kFloat32), {5});
  float value[3] = {1.0f, 2.0f, 3.0f};
  auto stream = Stream::Create(&cpu_, group_);
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(*PrepareFill(v, std::string(reinterpret_cast<char*>(value), 12), "cpu"));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  std::vector<float> out = Read(*v);
  ASSERT_EQ(out.size(), 15u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(out[3 * i], 1.0f);
    EXPECT_EQ(out[3 * i + 1], 2.0f);
    EXPECT_EQ(out[3 * i + 2], 3.0f);
  }
}

}  // namespace
}  // namespace warpd::runtime
