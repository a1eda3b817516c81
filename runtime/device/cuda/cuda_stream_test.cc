#include "runtime/device/cuda/cuda_stream.h"

#include <utility>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

class CudaStreamTest : public testing::FakeCudaTest {};

TEST_F(CudaStreamTest, MadeAndDestroyedWithItsOwnerAndCountedAsAUser) {
  {
    absl::StatusOr<CudaStream> a = CudaStream::Create(ctx());
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_NE(a->get(), nullptr);
    EXPECT_EQ(&a->context(), &ctx());
    EXPECT_EQ(fake().live("stream"), 1);
    EXPECT_EQ(ctx().users(), 1);
    CudaStream b = *std::move(a);
    EXPECT_EQ(fake().live("stream"), 1);
    absl::StatusOr<CudaStream> c = CudaStream::Create(ctx());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(ctx().users(), 2);
    b = *std::move(c);  // the first stream goes
    EXPECT_EQ(fake().live("stream"), 1);
    EXPECT_EQ(ctx().users(), 1);
    EXPECT_TRUE(b.Synchronize().ok());
  }
  EXPECT_EQ(fake().live("stream"), 0);
  EXPECT_EQ(ctx().users(), 0);
}

TEST_F(CudaStreamTest, WorkRunsInOrderAndQuerySeesItPending) {
  absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<bool> idle = s->Query();
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_TRUE(*idle);

  std::vector<CudaEvent> events;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<CudaEvent> e = CudaEvent::Create(ctx());
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->Record(*s).ok());
    events.push_back(*std::move(e));
  }
  // The stand-in's GPU makes one step per query.
  absl::StatusOr<bool> q = s->Query();
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_FALSE(*q);
  EXPECT_TRUE(*events[0].Query());
  EXPECT_FALSE(*events[2].Query()) << "in order: the third record after the second";
  EXPECT_TRUE(*events[1].Query());
  ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_TRUE(*events[2].Query());
  EXPECT_TRUE(*s->Query());
}

TEST_F(CudaStreamTest, AStreamWaitsForAnotherStreamsEvent) {
  absl::StatusOr<CudaStream> producer = CudaStream::Create(ctx());
  absl::StatusOr<CudaStream> consumer = CudaStream::Create(ctx());
  absl::StatusOr<CudaEvent> before = CudaEvent::Create(ctx(), CudaEvent::Timing::kOff);
  absl::StatusOr<CudaEvent> ready = CudaEvent::Create(ctx(), CudaEvent::Timing::kOff);
  absl::StatusOr<CudaEvent> after = CudaEvent::Create(ctx(), CudaEvent::Timing::kOff);
  ASSERT_TRUE(producer.ok() && consumer.ok() && before.ok() && ready.ok() && after.ok());
  EXPECT_FALSE(before->timing());

  // Waiting for an event never recorded waits for nothing.
  ASSERT_TRUE(consumer->WaitEvent(*ready).ok());
  EXPECT_TRUE(*consumer->Query());

  ASSERT_TRUE(before->Record(*producer).ok());
  ASSERT_TRUE(ready->Record(*producer).ok());
  ASSERT_TRUE(consumer->WaitEvent(*ready).ok());
  ASSERT_TRUE(after->Record(*consumer).ok());
  // The consumer's work completes only after the producer's up to `ready`.
  ASSERT_TRUE(consumer->Synchronize().ok());
  EXPECT_TRUE(*before->Query());
  EXPECT_TRUE(*ready->Query());
  EXPECT_TRUE(*after->Query());
  EXPECT_TRUE(producer->Synchronize().ok());
}

TEST_F(CudaStreamTest, ErrorsNameTheCallAndTheDevice) {
  absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
  ASSERT_TRUE(s.ok()) << s.status();
  fake().fail("cuStreamQuery", 400, 0);
  absl::StatusOr<bool> q = s->Query();
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(), "cuStreamQuery (cuda:0): FAKE_CUDA_ERROR_400 (fake driver text for 400)");
  EXPECT_FALSE(ctx().poisoned());

  fake().fail("cuStreamCreate", 2, 0);
  absl::StatusOr<CudaStream> t = CudaStream::Create(ctx());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ctx().users(), 1) << "a failed creation holds no user";
}

TEST_F(CudaStreamTest, AStickyErrorPoisonsAndEveryLaterCallFailsFast) {
  {
    absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
    absl::StatusOr<CudaEvent> e = CudaEvent::Create(ctx());
    ASSERT_TRUE(s.ok() && e.ok());
    ASSERT_TRUE(e->Record(*s).ok());
    fake().fail("cuStreamSynchronize", 700, 0);
    absl::Status sync = s->Synchronize();
    EXPECT_EQ(sync.code(), absl::StatusCode::kAborted);
    EXPECT_TRUE(Has(sync.message(), "cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_700")) << sync;

    for (absl::Status later : {s->Query().status(), s->WaitEvent(*e), e->Record(*s), e->Synchronize(),
                               CudaStream::Create(ctx()).status(), CudaEvent::Create(ctx()).status()}) {
      EXPECT_EQ(later.code(), absl::StatusCode::kFailedPrecondition) << later;
      EXPECT_TRUE(Has(later.message(), "first error was: cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_700"))
          << later;
    }
    EXPECT_EQ(fake().context_depth(), 0);
  }
  // Their destructors left the driver alone; the reset frees them.
  EXPECT_EQ(fake().live("stream"), 1);
  ASSERT_TRUE(ctx().Recover().ok());
  EXPECT_EQ(fake().live("stream"), 0);
  EXPECT_EQ(fake().live("event"), 0);
  absl::StatusOr<CudaStream> fresh = CudaStream::Create(ctx());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_TRUE(fresh->Synchronize().ok());
}

}  // namespace
}  // namespace warpd::runtime::cuda
