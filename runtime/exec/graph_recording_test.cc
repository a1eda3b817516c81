// A graph of commands on cuda:0 of the stand-in driver: recorded into one
// CUDA graph at its first replay (recorded_work.h), each replay then one
// graph launch whose kernels' faults come back as the failing command's
// error; a graph that cannot be recorded replays command by command.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/launch_module.h"
#include "runtime/device/cuda_device.h"
#include "runtime/exec/command.h"
#include "runtime/exec/graph.h"
#include "runtime/exec/launch.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"
#include "runtime/objects/testing/views.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {
namespace {

using cuda::testing::FakeDriver;

class GraphRecordingTest : public cuda::testing::FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    absl::StatusOr<std::unique_ptr<CudaDevice>> d = CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], {});
    ASSERT_TRUE(d.ok()) << d.status();
    gpu_ = *std::move(d);
  }
  void TearDown() override {
    gpu_.reset();
    FakeCudaTest::TearDown();
  }

  std::shared_ptr<const Array> Make(int64_t n) {
    auto layout = MakeArrayLayout(types::Scalar(types::ScalarKind::kInt32), {n});
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = gpu_->Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cuda:0", *layout, *buf);
  }
  std::vector<int32_t> Read(const Array& a) {
    std::vector<int32_t> v(a.size_bytes() / 4);
    EXPECT_TRUE(gpu_->Download(a, 0, absl::MakeSpan(reinterpret_cast<std::byte*>(v.data()), a.size_bytes())).ok());
    return v;
  }
  static std::string Word(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
  std::unique_ptr<Command> Launch(const std::string& kernel, int64_t n, uint32_t repeat = 1) {
    absl::StatusOr<std::unique_ptr<Command>> c =
        PrepareLaunch(module_, kernel, {n}, {}, "cuda:0", nullptr, repeat);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<Command> Fill(std::shared_ptr<const Array> a, int32_t v) {
    absl::StatusOr<std::unique_ptr<Command>> c = PrepareFill(std::move(a), Word(v), "cuda:0");
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<Command> Copy(std::shared_ptr<const Array> dst, std::shared_ptr<const Array> src) {
    absl::StatusOr<std::unique_ptr<Command>> c = PrepareCopy(std::move(dst), std::move(src), "cuda:0");
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::shared_ptr<Graph> MakeGraph(std::vector<std::unique_ptr<Command>> commands) {
    absl::StatusOr<std::shared_ptr<Graph>> g = Graph::Create("cuda:0", std::move(commands));
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *g : nullptr;
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  std::unique_ptr<CudaDevice> gpu_;
  std::shared_ptr<const abi::CompiledModule> module_ = std::make_shared<cuda::testing::LaunchTestModule>("graph");
};

TEST_F(GraphRecordingTest, ReplaysAreOneGraphLaunchWithTheCommandsEffects) {
  auto a = Make(64), b = Make(64);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Fill(a, 41));
  commands.push_back(Launch("none", 100, 3));
  commands.push_back(Copy(b, a));
  commands.push_back(Fill(a, -2));
  std::shared_ptr<Graph> graph = MakeGraph(std::move(commands));
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(fake().live("exec"), 0);  // recorded at the first replay
  for (int replay = 1; replay <= 3; ++replay) {
    ASSERT_TRUE(graph->MakeReplay()->Execute(*gpu_).ok());
    EXPECT_EQ(fake().live("exec"), 1);
    EXPECT_EQ(fake().launches(), 3 * replay);
    EXPECT_EQ(Read(*b), std::vector<int32_t>(64, 41));
    EXPECT_EQ(Read(*a), std::vector<int32_t>(64, -2));
  }
  graph.reset();
  EXPECT_EQ(fake().live("exec"), 0);
}

TEST_F(GraphRecordingTest, AKernelsFaultIsItsCommandsErrorInEachReplay) {
  auto a = Make(8);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Fill(a, 1));
  commands.push_back(Launch("none", 10));
  commands.push_back(Launch("none", 20));
  std::shared_ptr<Graph> graph = MakeGraph(std::move(commands));
  ASSERT_NE(graph, nullptr);
  ASSERT_TRUE(graph->MakeReplay()->Execute(*gpu_).ok());
  // The first kernel of the next replay records an index fault at line 7.
  wp::fault_info fault{};
  fault.flag = 1;
  fault.kind = wp::FAULT_INDEX_OUT_OF_BOUNDS;
  fault.line = 7;
  fault.index = 12;
  fault.dim = 0;
  fault.array_ndim = 1;
  fault.shape[0] = 10;
  ASSERT_EQ(fake().write_on_next_launch(0, -1, offsetof(wp::launch_ctx, fault), &fault, sizeof(fault)), 0);
  absl::Status s = graph->MakeReplay()->Execute(*gpu_);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "kernel 'none' at")) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), ":7: index 12 out of bounds for dimension 0 (shape (10,))")) << s;
  // The next replay starts clean.
  EXPECT_TRUE(graph->MakeReplay()->Execute(*gpu_).ok());
  EXPECT_EQ(fake().live("exec"), 1);
}

TEST_F(GraphRecordingTest, AGraphThatCannotBeRecordedReplaysCommandByCommand) {
  auto a = Make(12), b = Make(12);
  ASSERT_TRUE(gpu_->FillRange(*a, 0, a->size_bytes(), Word(5)).ok());
  // Every other element: a strided view, which a recording does not take.
  auto every_other = testing::ViewOf(b, 0, {6}, {8});
  auto first_half = testing::ViewOf(a, 0, {6}, {4});
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch("none", 4));
  commands.push_back(Copy(every_other, first_half));
  std::shared_ptr<Graph> graph = MakeGraph(std::move(commands));
  ASSERT_NE(graph, nullptr);
  for (int replay = 1; replay <= 2; ++replay) {
    ASSERT_TRUE(graph->MakeReplay()->Execute(*gpu_).ok());
    EXPECT_EQ(fake().live("exec"), 0);
    EXPECT_EQ(fake().launches(), replay);
  }
  EXPECT_EQ(Read(*b), (std::vector<int32_t>{5, 0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 0}));
}

TEST_F(GraphRecordingTest, ACancelledReplayStops) {
  std::vector<std::unique_ptr<Command>> commands;
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));  // captured held: it waits for a cancel
  commands.push_back(Launch("none", 4));
  std::shared_ptr<Graph> graph = MakeGraph(std::move(commands));
  ASSERT_NE(graph, nullptr);
  std::unique_ptr<Command> replay = graph->MakeReplay();
  absl::Status s;
  std::thread runner([&] { s = replay->Execute(*gpu_); });
  absl::SleepFor(absl::Milliseconds(30));
  replay->Cancel();
  runner.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_TRUE(gpu_->healthy());
}

}  // namespace
}  // namespace warpd::runtime
