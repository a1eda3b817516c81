// A stream on cuda:0 of the stand-in driver: its queued launches, copies and
// fills run as one batch (stream_batch.cc), issued before the first wait;
// a fault is its command's error, the commands the batch could not take run
// alone in order, and a Cancel stops a batch.
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"
#include "runtime/exec/testing/cuda_commands_fixture.h"
#include "runtime/exec/hash_grid_build.h"
#include "runtime/objects/hash_grid.h"
#include "runtime/objects/object_table.h"
#include "runtime/objects/testing/views.h"

namespace warpd::runtime {
namespace {

class StreamBatchTest : public testing::CudaCommandsTest {
 protected:
  void SetUp() override {
    CudaCommandsTest::SetUp();
    stream_ = Stream::Create(gpu_.get(), group_);
  }
  void TearDown() override {
    stream_.reset();
    CudaCommandsTest::TearDown();
  }
  void Reopen(const CudaDevice::LaunchOptions& launch) {
    stream_.reset();
    OpenGpu(launch);
    stream_ = Stream::Create(gpu_.get(), group_);
  }
  absl::Status SubmitAndWait(std::vector<std::unique_ptr<Command>> commands) {
    const size_t n = commands.size();
    absl::StatusOr<uint64_t> last = stream_->Submit(std::move(commands));
    EXPECT_TRUE(last.ok()) << last.status();
    absl::Status s = stream_->Synchronize();
    EXPECT_EQ(stream_->completed(), stream_->submitted());
    EXPECT_GE(stream_->submitted(), n);
    return s;
  }

  // Runs `commands` on cuda:0 reopened with launch time limit `limit`, the
  // kernel launched after `skip` others held until it is cancelled: their
  // status and how long they took.
  std::pair<absl::Status, absl::Duration> RunWithAHeldKernel(absl::Duration limit, int skip,
                                                             std::vector<std::unique_ptr<Command>> commands) {
    CudaDevice::LaunchOptions launch;
    launch.time_limit = limit;
    Reopen(launch);
    fake().hold_launch_after(skip, 0, offsetof(wp::launch_ctx, cancel));
    const absl::Time start = absl::Now();
    absl::Status s = SubmitAndWait(std::move(commands));
    return {s, absl::Now() - start};
  }

  StreamScheduler scheduler_{{.threads = 1}};
  std::shared_ptr<StreamGroup> group_ = scheduler_.CreateGroup("test");
  std::shared_ptr<Stream> stream_;
};

TEST_F(StreamBatchTest, QueuedCommandsAreIssuedTogetherAndWaitedForOnce) {
  auto a = Make(64), b = Make(64);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Fill(a, 41));
  commands.push_back(Launch(100, 3));
  commands.push_back(Launch(7));
  commands.push_back(Copy(b, a));
  commands.push_back(Fill(a, -2));
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  EXPECT_EQ(fake().launches(), 4);
  // Every kernel was queued before the first one ran: one wait for the batch
  // (one by one, each launch is waited for before the next is issued).
  EXPECT_EQ(fake().max_queued_kernels(), 4);
  EXPECT_EQ(Read(*b), std::vector<int32_t>(64, 41));
  EXPECT_EQ(Read(*a), std::vector<int32_t>(64, -2));
  EXPECT_EQ(fake().live("exec"), 0);  // no CUDA graph for work that runs once
}

TEST_F(StreamBatchTest, ALoneLaunchIsNotABatch) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch(10));
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  EXPECT_EQ(fake().launches(), 1);
  EXPECT_EQ(fake().max_queued_kernels(), 1);
}

// A client's run of identical launches arrives as one repeated launch: its
// runs are issued back to back and waited for once, as a batch's.
TEST_F(StreamBatchTest, ALoneRepeatedLaunchIssuesItsRunsTogether) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch(10, 50));
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  EXPECT_EQ(fake().launches(), 50);
  EXPECT_EQ(fake().max_queued_kernels(), 50);
  // A fault in run 1 of 20 is the command's error.
  std::vector<std::unique_ptr<Command>> again;
  again.push_back(Launch(10, 20));
  FaultNextLaunch(3, 11, 10);
  absl::Status s = SubmitAndWait(std::move(again));
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), ":3: index 11 out of bounds")) << s;
}

TEST_F(StreamBatchTest, AFaultIsItsCommandsErrorAndTheCommandsAfterTheBatchAreSkipped) {
  auto a = Make(12), b = Make(12);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Fill(a, 1));
  commands.push_back(Launch(10));
  commands.push_back(Launch(20));
  commands.push_back(Fill(a, 3));
  // A strided copy is not batched: it would run after the batch, which failed.
  commands.push_back(Copy(testing::ViewOf(b, 0, {6}, {8}), testing::ViewOf(a, 0, {6}, {4})));
  FaultNextLaunch(7, 12, 10);
  absl::Status s = SubmitAndWait(std::move(commands));
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "kernel 'none' at")) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), ":7: index 12 out of bounds for dimension 0 (shape (10,))")) << s;
  // In the batch, the commands after the fault ran (as on a CUDA stream);
  // the copy after it was skipped.
  EXPECT_EQ(fake().launches(), 2);
  EXPECT_EQ(Read(*a), std::vector<int32_t>(12, 3));
  EXPECT_EQ(Read(*b), std::vector<int32_t>(12, 0));
  // The error was reported and cleared: the stream runs again.
  std::vector<std::unique_ptr<Command>> again;
  again.push_back(Fill(b, 8));
  again.push_back(Launch(4));
  ASSERT_TRUE(SubmitAndWait(std::move(again)).ok());
  EXPECT_EQ(Read(*b), std::vector<int32_t>(12, 8));
}

// A launch whose session has objects on the GPU is batched with its table,
// which the kernel reads on the device: here the stand-in's kernel reports
// the table's first id as an unknown object, read through ctx->objects.
TEST_F(StreamBatchTest, ALaunchsObjectTableTravelsInTheBatch) {
  auto grid = HashGrid::CreateMirrored(*gpu_, "cuda:0", {4, 4, 4}, types::ScalarKind::kFloat32, pool_, pool_);
  ASSERT_TRUE(grid.ok()) << grid.status();
  std::shared_ptr<const ObjectTable> table = ObjectTable::Empty()->With(0xABCDEF12345, *grid);
  std::vector<std::unique_ptr<Command>> commands;
  absl::StatusOr<std::unique_ptr<Command>> with_objects =
      PrepareLaunch(module_, "none", {8}, {}, "cuda:0", nullptr, 1, nullptr, nullptr, table);
  ASSERT_TRUE(with_objects.ok()) << with_objects.status();
  commands.push_back(*std::move(with_objects));
  commands.push_back(Launch(7));
  wp::fault_info fault{};
  fault.flag = 1;
  fault.kind = wp::FAULT_UNKNOWN_OBJECT;
  fault.line = 5;
  fault.dim = wp::OBJECT_MESH;
  fault.extent = wp::OBJECT_NONE;
  ASSERT_EQ(fake().write_on_next_launch(0, -1, offsetof(wp::launch_ctx, fault), &fault, sizeof(fault)), 0);
  ASSERT_EQ(fake().copy_deref_on_next_launch(0, offsetof(wp::launch_ctx, objects), offsetof(wp::object_entry, id), 0,
                                             offsetof(wp::launch_ctx, fault.index), 8),
            0);
  absl::Status s = SubmitAndWait(std::move(commands));
  EXPECT_EQ(fake().max_queued_kernels(), 2);  // one batch
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), ":5: unknown mesh id 0x00000abcdef12345")) << s;
}

// Fair share charges device time (device_time.h): the stand-in's kernels
// take 150 ms each on its device clock and a few microseconds of wall time,
// and a group's turns are charged the former, alone or batched.
TEST_F(StreamBatchTest, TurnsAreChargedTheDeviceTimeOfTheirGpuWork) {
  fake().set_launch_ms(150.0);
  const absl::Time start = absl::Now();
  std::vector<std::unique_ptr<Command>> alone;
  alone.push_back(Launch(10));
  ASSERT_TRUE(SubmitAndWait(std::move(alone)).ok());
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(Launch(10));
  batch.push_back(Launch(20, 2));
  ASSERT_TRUE(SubmitAndWait(std::move(batch)).ok());
  const absl::Duration wall = absl::Now() - start;
  // A turn is charged when it ends, which may be just after its work reported done.
  absl::Duration busy = scheduler_.Usage(*group_).busy;
  for (int i = 0; i < 500 && busy < absl::Milliseconds(599); ++i) {
    absl::SleepFor(absl::Milliseconds(2));
    busy = scheduler_.Usage(*group_).busy;
  }
  // 4 kernel runs of 150 ms each on the device clock.
  EXPECT_GE(busy, absl::Milliseconds(599)) << busy << " of device time, wall " << wall;
  EXPECT_LT(busy, absl::Milliseconds(600) + absl::Now() - start) << busy;
  if (wall < absl::Milliseconds(600)) {
    EXPECT_GT(busy, wall);  // not the wall time the waits took
  }
}

// A build of an object waits for the launches that may query it, and those
// wait for a build (GeometryObject::use_lock): here the test holds the lock
// as the other side would.
TEST_F(StreamBatchTest, ObjectBuildsAndTheLaunchesThatQueryObjectsExcludeEachOther) {
  auto grid = HashGrid::CreateMirrored(*gpu_, "cuda:0", {4, 4, 4}, types::ScalarKind::kFloat32, pool_, pool_);
  ASSERT_TRUE(grid.ok()) << grid.status();
  std::shared_ptr<const ObjectTable> table = ObjectTable::Empty()->With(0x77, *grid);
  EXPECT_EQ(table->use_lock(), (*grid)->use_lock());
  auto wait_a_little = [&] { absl::SleepFor(absl::Milliseconds(60)); };

  // A launch with the table waits while a build holds the lock.
  std::vector<std::unique_ptr<Command>> launch;
  auto with_objects = PrepareLaunch(module_, "none", {8}, {}, "cuda:0", nullptr, 1, nullptr, nullptr, table);
  ASSERT_TRUE(with_objects.ok()) << with_objects.status();
  launch.push_back(*std::move(with_objects));
  {
    absl::MutexLock building((*grid)->use_lock());
    EXPECT_TRUE(stream_->Submit(std::move(launch)).ok());
    wait_a_little();
    EXPECT_EQ(fake().launches(), 0);
  }
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 1);

  // A build waits while a launch holds it shared.
  auto points = Make(30, types::ScalarKind::kFloat32);
  auto vec_layout = MakeArrayLayout(types::Vector(3, types::ScalarKind::kFloat32), {10});
  ASSERT_TRUE(vec_layout.ok());
  auto as_vec3 = std::make_shared<Array>("cuda:0", *vec_layout, points->buffer());
  auto build = PrepareHashGridBuild(*grid, as_vec3, nullptr, 1.0, "cuda:0", pool_, &pool_);
  ASSERT_TRUE(build.ok()) << build.status();
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(*std::move(build));
  {
    absl::ReaderMutexLock querying((*grid)->use_lock());
    EXPECT_TRUE(stream_->Submit(std::move(commands)).ok());
    wait_a_little();
    EXPECT_LT(stream_->completed(), stream_->submitted());
  }
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(static_cast<const wp::hash_grid_t*>((*grid)->descriptor())->num_points, 10);
}

TEST_F(StreamBatchTest, CommandsABatchCannotTakeRunAloneInOrder) {
  auto a = Make(12), b = Make(12);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Fill(a, 5));
  commands.push_back(Launch(3));
  commands.push_back(Copy(testing::ViewOf(b, 0, {6}, {8}), testing::ViewOf(a, 0, {6}, {4})));  // alone
  commands.push_back(Fill(a, 7));
  commands.push_back(Launch(3));
  commands.push_back(Copy(testing::ViewOf(b, 4, {6}, {8}), testing::ViewOf(a, 0, {6}, {4})));  // alone
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  EXPECT_EQ(Read(*b), (std::vector<int32_t>{5, 7, 5, 7, 5, 7, 5, 7, 5, 7, 5, 7}));
  EXPECT_EQ(Read(*a), std::vector<int32_t>(12, 7));
  EXPECT_EQ(fake().launches(), 2);
}

TEST_F(StreamBatchTest, AFillMemsetCannotWriteRunsAlone) {
  auto a = Make(5, types::ScalarKind::kInt64), b = Make(8);
  const int64_t value = (int64_t{1} << 32) | 2;  // two different 4-byte words
  std::string pattern(reinterpret_cast<const char*>(&value), sizeof(value));
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch(4));
  commands.push_back(FillBytes(a, pattern));  // alone: a fill kernel's job
  commands.push_back(Fill(b, 3));
  commands.push_back(Launch(4));
  commands.push_back(Launch(4));
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  std::vector<int64_t> got(5);
  ASSERT_TRUE(gpu_->Download(*a, 0, absl::MakeSpan(reinterpret_cast<std::byte*>(got.data()), 40)).ok());
  EXPECT_EQ(got, std::vector<int64_t>(5, value));
  EXPECT_EQ(Read(*b), std::vector<int32_t>(8, 3));
  EXPECT_EQ(fake().launches(), 3);
  EXPECT_EQ(fake().max_queued_kernels(), 2);  // the last two, as one batch
}

// Each kernel of a batch has the launch time limit of its own: the limit
// starts over as the kernel before it completes, and the kernel past it is
// named with its file and line, as its own launch would be.
TEST_F(StreamBatchTest, EachKernelOfABatchHasTheTimeLimit) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch(4));
  commands.push_back(Launch(4));
  commands.push_back(Launch(4));
  // The second kernel never ends by itself.
  auto [s, took] = RunWithAHeldKernel(absl::Milliseconds(200), 1, std::move(commands));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "kernel 'none' (")) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "launch time limit of 200ms")) << s;
  EXPECT_GE(took, absl::Milliseconds(200));
  EXPECT_TRUE(gpu_->healthy());
}

// Each run of a repeated launch has the time limit of its own, as one by
// one: a run that never ends is stopped a limit after the run before it
// ended, not a limit times the runs.
TEST_F(StreamBatchTest, EachRunOfARepeatedLaunchHasTheTimeLimit) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(Launch(4, 40));
  // The third run never ends by itself.
  auto [s, took] = RunWithAHeldKernel(absl::Milliseconds(100), 2, std::move(commands));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "launch time limit of 100ms")) << s;
  EXPECT_GE(took, absl::Milliseconds(100));
  EXPECT_LT(took, absl::Seconds(2)) << "the batch's budget was the runs' sum (4 s)";
  EXPECT_TRUE(gpu_->healthy());
}

// A launch's shape (wp.launch block_dim, max_blocks) reaches the GPU's grid,
// batched or alone; more than 1024 threads per block is refused.
TEST_F(StreamBatchTest, ALaunchsShapeIsItsGrid) {
  auto shaped = [&](int64_t n, LaunchShape shape) {
    auto c = PrepareLaunch(module_, "none", {n}, {}, "cuda:0", nullptr, 1, nullptr, nullptr, nullptr, shape);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  };
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(shaped(1000, {128, 2}));
  commands.push_back(shaped(1000, {}));
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  commands.clear();
  commands.push_back(shaped(100, {32, 0}));  // alone
  ASSERT_TRUE(SubmitAndWait(std::move(commands)).ok());
  ASSERT_EQ(fake().launches(), 3);
  auto dims = [&](int i) {
    char name[64];
    unsigned d[7] = {};
    std::vector<std::byte> params(4096);
    EXPECT_GE(fake().launch(i, name, sizeof(name), d, params.data(), params.size()), 0);
    return std::pair<unsigned, unsigned>(d[0], d[3]);
  };
  EXPECT_EQ(dims(0), std::make_pair(2u, 128u));
  EXPECT_EQ(dims(1), std::make_pair(4u, 256u));
  EXPECT_EQ(dims(2), std::make_pair(4u, 32u));
  auto too_wide = PrepareLaunch(module_, "none", {10}, {}, "cuda:0", nullptr, 1, nullptr, nullptr, nullptr, {2048, 0});
  EXPECT_EQ(too_wide.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(cuda::testing::Has(too_wide.status().message(), "block_dim 2048")) << too_wide.status();
}

TEST_F(StreamBatchTest, CancelStopsABatch) {
  auto a = Make(4);
  std::vector<std::unique_ptr<Command>> commands;
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));  // runs until its context is cancelled
  commands.push_back(Launch(4));
  commands.push_back(Launch(4));
  commands.push_back(Fill(a, 6));
  ASSERT_TRUE(stream_->Submit(std::move(commands)).ok());
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(fake().max_queued_kernels(), 2);  // the batch is running: both issued
  stream_->Cancel();  // returns once the batch stopped
  EXPECT_EQ(stream_->completed(), stream_->submitted());
  EXPECT_TRUE(gpu_->healthy());
  // The stream goes on.
  std::vector<std::unique_ptr<Command>> again;
  again.push_back(Fill(a, 9));
  again.push_back(Launch(4));
  ASSERT_TRUE(SubmitAndWait(std::move(again)).ok());
  EXPECT_EQ(Read(*a), std::vector<int32_t>(4, 9));
}

}  // namespace
}  // namespace warpd::runtime
