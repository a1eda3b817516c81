#include "runtime/device/cuda/cuda_event.h"

#include <utility>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

class CudaEventTest : public testing::FakeCudaTest {};

TEST_F(CudaEventTest, ANeverRecordedEventIsCompleteButHasNoTime) {
  absl::StatusOr<CudaEvent> a = CudaEvent::Create(ctx());
  absl::StatusOr<CudaEvent> b = CudaEvent::Create(ctx());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->timing());
  EXPECT_TRUE(*a->Query());
  EXPECT_TRUE(a->Synchronize().ok());
  absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*a, *b);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();  // CUDA_ERROR_INVALID_HANDLE
  EXPECT_TRUE(testing::Has(t.status().message(), "cuEventElapsedTime (cuda:0)")) << t.status();
}

TEST_F(CudaEventTest, ElapsedTimeNeedsCompletedTimedRecords) {
  absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(ctx());
  absl::StatusOr<CudaEvent> end = CudaEvent::Create(ctx());
  absl::StatusOr<CudaEvent> untimed = CudaEvent::Create(ctx(), CudaEvent::Timing::kOff);
  ASSERT_TRUE(s.ok() && start.ok() && end.ok() && untimed.ok());
  ASSERT_TRUE(start->Record(*s).ok());
  ASSERT_TRUE(end->Record(*s).ok());
  ASSERT_TRUE(untimed->Record(*s).ok());

  absl::StatusOr<absl::Duration> pending = CudaEvent::Elapsed(*start, *end);
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kUnavailable) << pending.status();  // NOT_READY

  ASSERT_TRUE(end->Synchronize().ok());
  EXPECT_TRUE(*start->Query());
  absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*start, *end);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, absl::ZeroDuration()) << "nothing ran between them";

  absl::StatusOr<absl::Duration> no_timing = CudaEvent::Elapsed(*start, *untimed);
  EXPECT_EQ(no_timing.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s->Synchronize().ok());
}

TEST_F(CudaEventTest, MovesKeepOneHandle) {
  absl::StatusOr<CudaEvent> a = CudaEvent::Create(ctx());
  ASSERT_TRUE(a.ok()) << a.status();
  CUevent handle = a->get();
  CudaEvent b = *std::move(a);
  EXPECT_EQ(b.get(), handle);
  EXPECT_EQ(fake().live("event"), 1);
  absl::StatusOr<CudaEvent> c = CudaEvent::Create(ctx(), CudaEvent::Timing::kOff);
  ASSERT_TRUE(c.ok()) << c.status();
  b = *std::move(c);
  EXPECT_FALSE(b.timing());
  EXPECT_EQ(fake().live("event"), 1);
  EXPECT_EQ(ctx().users(), 1);
}

}  // namespace
}  // namespace warpd::runtime::cuda
