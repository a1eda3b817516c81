#include "runtime/device/cuda/cuda_graph.h"

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_copy.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_launch.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/cuda_module.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/test_ptx.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

class CudaGraphTest : public testing::FakeCudaMemoryTest {
 protected:
  void SetUp() override {
    FakeCudaMemoryTest::SetUp();
    ASSERT_NE(module_ = Keep(CudaModule::Load(ctx(), testing::kSaxpyPtx)), nullptr);
  }
  void TearDown() override {
    // The module goes after the work that uses it (unloading under queued launches is undefined).
    if (stream_ != nullptr && !ctx().poisoned()) EXPECT_TRUE(stream_->Synchronize().ok());
    module_.reset();
    FakeCudaMemoryTest::TearDown();
  }
  absl::Status LaunchEmpty() {
    absl::StatusOr<CUfunction> f = module_->Function("wpk_empty_cuda");
    if (!f.ok()) return f.status();
    KernelArgs none;
    return Launch(*stream_, *f, "wpk_empty_cuda", LaunchDims{1, 256}, none);
  }

  std::unique_ptr<CudaModule> module_;
};

TEST_F(CudaGraphTest, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
  CUdeviceptr a = Alloc(64), b = Alloc(64);
  const uint32_t zero = 0, seven = 7;
  ASSERT_TRUE(Fill(*stream_, a, &zero, 4, 16).ok());
  ASSERT_TRUE(Fill(*stream_, b, &zero, 4, 16).ok());
  ASSERT_TRUE(stream_->Synchronize().ok());

  ASSERT_TRUE(CudaGraph::BeginCapture(*stream_).ok());
  ASSERT_TRUE(Fill(*stream_, a, &seven, 4, 16).ok());
  ASSERT_TRUE(LaunchEmpty().ok());
  ASSERT_TRUE(CopyDeviceToDevice(*stream_, b, a, 64).ok());
  absl::StatusOr<CudaGraph> graph = CudaGraph::EndCapture(*stream_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(fake().live("graph"), 0) << "only the executable graph is kept";
  EXPECT_EQ(fake().live("exec"), 1);
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 0);
  std::vector<uint32_t> out(16);
  ASSERT_TRUE(CopyDeviceToHost(*stream_, out.data(), b, 64).ok());
  EXPECT_EQ(out, std::vector<uint32_t>(16, 0)) << "captured, not run";

  ASSERT_TRUE(graph->Launch(*stream_).ok());
  ASSERT_TRUE(graph->Launch(*stream_).ok());
  ASSERT_TRUE(CopyDeviceToHost(*stream_, out.data(), b, 64).ok());
  EXPECT_EQ(out, std::vector<uint32_t>(16, 7));
  EXPECT_EQ(fake().launches(), 2);

  CudaGraph moved = *std::move(graph);
  EXPECT_TRUE(moved.Launch(*stream_).ok());
  EXPECT_EQ(ctx().users(), 4);  // stream, pool, module, graph
}

TEST_F(CudaGraphTest, EventsTimeAGraphLaunch) {
  fake().set_launch_ms(2.0);
  ASSERT_TRUE(CudaGraph::BeginCapture(*stream_).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(LaunchEmpty().ok());
  absl::StatusOr<CudaGraph> graph = CudaGraph::EndCapture(*stream_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(ctx()), end = CudaEvent::Create(ctx());
  ASSERT_TRUE(start.ok() && end.ok());
  ASSERT_TRUE(start->Record(*stream_).ok());
  ASSERT_TRUE(graph->Launch(*stream_).ok());
  ASSERT_TRUE(end->Record(*stream_).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*start, *end);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(absl::ToDoubleMilliseconds(*t), 6.0, 1e-3);
}

TEST_F(CudaGraphTest, SynchronizingACapturingStreamInvalidatesTheCapture) {
  ASSERT_TRUE(CudaGraph::BeginCapture(*stream_).ok());
  ASSERT_TRUE(LaunchEmpty().ok());
  absl::Status sync = stream_->Synchronize();
  EXPECT_EQ(sync.code(), absl::StatusCode::kFailedPrecondition) << sync;  // STREAM_CAPTURE_UNSUPPORTED
  EXPECT_TRUE(Has(sync.message(), "cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_900")) << sync;
  absl::StatusOr<CudaGraph> graph = CudaGraph::EndCapture(*stream_);
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kFailedPrecondition);  // STREAM_CAPTURE_INVALIDATED
  EXPECT_TRUE(Has(graph.status().message(), "cuStreamEndCapture (cuda:0): FAKE_CUDA_ERROR_901")) << graph.status();
  EXPECT_FALSE(ctx().poisoned());
  // The capture is over: the stream runs work again, and ending a capture
  // that is not under way is the driver's invalid value.
  ASSERT_TRUE(LaunchEmpty().ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 1);
  EXPECT_EQ(CudaGraph::EndCapture(*stream_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ctx().users(), 3);
}

TEST_F(CudaGraphTest, ACaptureMayEndOnAnotherThreadWhileOthersUseTheDriver) {
  ASSERT_TRUE(CudaGraph::BeginCapture(*stream_).ok());
  ASSERT_TRUE(LaunchEmpty().ok());
  // Another session's thread loads a module meanwhile (an "unsafe" call
  // under the stricter capture modes).
  std::thread other([&] {
    absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), testing::kSaxpyPtx);
    EXPECT_TRUE(m.ok()) << m.status();
  });
  other.join();
  absl::StatusOr<CudaGraph> graph = absl::InternalError("not ended");
  std::thread ender([&] { graph = CudaGraph::EndCapture(*stream_); });
  ender.join();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(graph->Launch(*stream_).ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 1);
}

TEST_F(CudaGraphTest, AFaultInAGraphPoisonsTheContext) {
  ASSERT_TRUE(CudaGraph::BeginCapture(*stream_).ok());
  ASSERT_TRUE(LaunchEmpty().ok());
  absl::StatusOr<CudaGraph> graph = CudaGraph::EndCapture(*stream_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  fake().fault_next_launch(719);  // CUDA_ERROR_LAUNCH_FAILED
  ASSERT_TRUE(graph->Launch(*stream_).ok());
  EXPECT_EQ(stream_->Synchronize().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(ctx().poisoned());
  absl::Status again = graph->Launch(*stream_);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(again.message(), "FAKE_CUDA_ERROR_719")) << again;
  EXPECT_EQ(CudaGraph::BeginCapture(*stream_).code(), absl::StatusCode::kFailedPrecondition);
  allocated_.clear();
  graph = absl::CancelledError("dropped");
  module_.reset();
  pool_.reset();
  stream_.reset();
  ASSERT_TRUE(ctx().Recover().ok());
  EXPECT_EQ(fake().live("exec"), 0);
}

}  // namespace
}  // namespace warpd::runtime::cuda
