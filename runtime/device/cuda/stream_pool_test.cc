#include "runtime/device/cuda/stream_pool.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

class StreamPoolTest : public testing::FakeCudaTest {};

TEST_F(StreamPoolTest, LeasesAreDistinctAndReturnedStreamsAreReused) {
  StreamPool pool(ctx(), /*max_idle=*/2);
  {
    absl::StatusOr<StreamPool::Lease> a = pool.Acquire();
    absl::StatusOr<StreamPool::Lease> b = pool.Acquire();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(a->stream().get(), b->stream().get());  // two operations, two streams
    EXPECT_EQ(pool.created(), 2u);
    EXPECT_EQ(fake().live("stream"), 2);
  }
  EXPECT_EQ(pool.idle(), 2u);
  {
    absl::StatusOr<StreamPool::Lease> again = pool.Acquire();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(pool.created(), 2u);  // an idle one, not a new one
    EXPECT_EQ(pool.idle(), 1u);
    StreamPool::Lease moved = *std::move(again);
    EXPECT_TRUE(moved.stream().Synchronize().ok());
  }
  EXPECT_EQ(pool.idle(), 2u);
}

// A stream's two timing events are made once and kept with it in the pool
// (CudaWorkTimer times every GPU operation with them).
TEST_F(StreamPoolTest, TimingEventsAreMadeOncePerStream) {
  StreamPool pool(ctx(), /*max_idle=*/1);
  CudaEvent* first = nullptr;
  {
    absl::StatusOr<StreamPool::Lease> a = pool.Acquire();
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(fake().live("event"), 0);  // none until asked for
    absl::StatusOr<std::pair<CudaEvent*, CudaEvent*>> events = a->TimingEvents();
    ASSERT_TRUE(events.ok()) << events.status();
    EXPECT_NE(events->first, events->second);
    EXPECT_TRUE(events->first->timing() && events->second->timing());
    first = events->first;
    EXPECT_EQ(fake().live("event"), 2);
  }
  {
    absl::StatusOr<StreamPool::Lease> again = pool.Acquire();
    ASSERT_TRUE(again.ok());
    absl::StatusOr<std::pair<CudaEvent*, CudaEvent*>> events = again->TimingEvents();
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(events->first, first);  // the same stream's same events
    EXPECT_EQ(fake().live("event"), 2);
    absl::StatusOr<StreamPool::Lease> other = pool.Acquire();  // a new stream: no events yet
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(fake().live("event"), 2);
  }
  // The pool keeps one stream: `other`'s, returned first (declared last);
  // `again`'s found the pool full and went, with its events.
  EXPECT_EQ(pool.idle(), 1u);
  EXPECT_EQ(fake().live("event"), 0);
}

TEST_F(StreamPoolTest, AtMostMaxIdleAreKept) {
  StreamPool pool(ctx(), /*max_idle=*/2);
  {
    std::vector<StreamPool::Lease> leases;
    for (int i = 0; i < 5; ++i) {
      absl::StatusOr<StreamPool::Lease> l = pool.Acquire();
      ASSERT_TRUE(l.ok()) << l.status();
      leases.push_back(*std::move(l));
    }
    EXPECT_EQ(fake().live("stream"), 5);
  }
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(fake().live("stream"), 2);  // the other three were destroyed on return
}

TEST_F(StreamPoolTest, ALostContextsStreamsAreDroppedAndItsErrorIsAcquires) {
  StreamPool pool(ctx());
  {
    absl::StatusOr<StreamPool::Lease> l = pool.Acquire();
    ASSERT_TRUE(l.ok());
    fake().fail("cuStreamSynchronize", 700, 0);  // CUDA_ERROR_ILLEGAL_ADDRESS: sticky
    EXPECT_FALSE(l->stream().Synchronize().ok());
    ASSERT_TRUE(ctx().poisoned());
  }
  EXPECT_EQ(pool.idle(), 0u);  // not kept for a context that is to be reset
  absl::StatusOr<StreamPool::Lease> after = pool.Acquire();
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctx().users(), 0);
  EXPECT_TRUE(ctx().Recover().ok());
}

}  // namespace
}  // namespace warpd::runtime::cuda
