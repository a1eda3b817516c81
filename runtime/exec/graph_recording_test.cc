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
#include "runtime/exec/graph.h"
#include "runtime/exec/testing/cuda_commands_fixture.h"
#include "runtime/objects/testing/views.h"

namespace warpd::runtime {
namespace {

class GraphRecordingTest : public testing::CudaCommandsTest {
 protected:
  std::unique_ptr<Command> Launch(const std::string& kernel, int64_t n, uint32_t repeat = 1) {
    return CudaCommandsTest::Launch(n, repeat, kernel);
  }
  std::shared_ptr<Graph> MakeGraph(std::vector<std::unique_ptr<Command>> commands) {
    absl::StatusOr<std::shared_ptr<Graph>> g = Graph::Create("cuda:0", std::move(commands));
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *g : nullptr;
  }
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
  FaultNextLaunch(7, 12, 10);
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
