#include "runtime/device/cuda/cuda_context.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

class CudaContextTest : public testing::FakeCudaTest {
 protected:
  // A raw stream of the context, made and destroyed through Call.
  CUstream MakeStream() {
    CUstream s = nullptr;
    EXPECT_TRUE(ctx().Call("cuStreamCreate", [&] { return api().cuStreamCreate(&s, kStreamNonBlocking); }).ok());
    return s;
  }
};

TEST_F(CudaContextTest, CallRunsWithTheContextCurrentAndNamesTheDevice) {
  EXPECT_EQ(ctx().name(), "cuda:0");
  EXPECT_EQ(ctx().ordinal(), 0);
  EXPECT_NE(ctx().handle(), nullptr);
  int depth = -1;
  CUcontext current = nullptr;
  ASSERT_TRUE(ctx()
                  .Call("probe",
                        [&] {
                          depth = fake().context_depth();
                          CUresult r = api().cuCtxPopCurrent(&current);
                          api().cuCtxPushCurrent(current);
                          return r;
                        })
                  .ok());
  EXPECT_EQ(depth, 1);
  EXPECT_EQ(current, ctx().handle());
  EXPECT_EQ(fake().context_depth(), 0);

  // Without the push the stand-in (like the driver) has no context.
  CUstream raw = nullptr;
  EXPECT_EQ(api().cuStreamCreate(&raw, 0), 201);

  fake().fail("cuStreamCreate", 1, 0);
  absl::Status s = ctx().Call("cuStreamCreate", [&] { return api().cuStreamCreate(&raw, 0); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "cuStreamCreate (cuda:0): FAKE_CUDA_ERROR_1 (fake driver text for 1)");
  EXPECT_EQ(fake().context_depth(), 0);
  EXPECT_FALSE(ctx().poisoned());
}

TEST_F(CudaContextTest, OutOfMemoryIsNotSticky) {
  absl::Status s = ctx().Call("cuMemAllocFromPoolAsync", [] { return 2; });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(ctx().poisoned());
  EXPECT_TRUE(ctx().Usable().ok());
}

TEST_F(CudaContextTest, StickyErrorPoisonsAndLaterCallsFailFastNamingTheFirst) {
  absl::Status first = ctx().Call("cuStreamSynchronize", [] { return 700; });  // CUDA_ERROR_ILLEGAL_ADDRESS
  EXPECT_EQ(first.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(Has(first.message(), "context is lost")) << first.message();
  EXPECT_TRUE(ctx().poisoned());

  // A second sticky error does not replace the first.
  EXPECT_EQ(ctx().Check(719, "cuEventSynchronize").code(), absl::StatusCode::kAborted);

  int calls = 0;
  absl::Status later = ctx().Call("cuStreamQuery", [&] {
    ++calls;
    return 0;
  });
  EXPECT_EQ(calls, 0) << "a poisoned context must not call the driver";
  EXPECT_EQ(later.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(later.message(), "cuda:0 cannot run work")) << later.message();
  EXPECT_TRUE(Has(later.message(), "cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_700")) << later.message();
  EXPECT_FALSE(Has(later.message(), "719")) << later.message();
  EXPECT_EQ(ctx().Usable(), later);
  EXPECT_EQ(ctx().AddUser().status(), later);
  EXPECT_EQ(ctx().MakeCurrent().status(), later);
  EXPECT_EQ(fake().context_depth(), 0);
  // Nothing was reported to the driver, so nothing needs resetting there;
  // Recover resets all the same.
  EXPECT_TRUE(ctx().Recover().ok());
  EXPECT_FALSE(ctx().poisoned());
}

TEST_F(CudaContextTest, RecoverResetsOnlyOnceNoUserHoldsTheContext) {
  EXPECT_TRUE(ctx().Recover().ok());  // healthy: nothing to do
  EXPECT_EQ(ctx().resets(), 0);

  absl::StatusOr<ContextUser> user = ctx().AddUser();
  ASSERT_TRUE(user.ok()) << user.status();
  EXPECT_EQ(ctx().users(), 1);
  CUstream s = MakeStream();
  ASSERT_NE(s, nullptr);

  // The driver reports an illegal address on the next synchronization; from
  // then on it fails every call on the context, and so does warpd, fast.
  fake().fail("cuStreamSynchronize", 700, 0);
  absl::Status sync = ctx().Call("cuStreamSynchronize", [&] { return api().cuStreamSynchronize(s); });
  EXPECT_EQ(sync.code(), absl::StatusCode::kAborted) << sync;
  EXPECT_EQ(fake().sticky(0), 700);
  EXPECT_TRUE(ctx().poisoned());

  absl::Status refused = ctx().Recover();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(refused.message(), "cannot reset cuda:0's CUDA context yet: 1 objects")) << refused.message();
  EXPECT_EQ(fake().sticky(0), 700) << "reset while in use";

  // The stream's owner drops it (a destructor skips the driver: the reset
  // frees it), and its user with it.
  user->Reset();
  EXPECT_EQ(ctx().users(), 0);
  ASSERT_TRUE(ctx().Recover().ok());
  EXPECT_EQ(ctx().resets(), 1);
  EXPECT_FALSE(ctx().poisoned());
  EXPECT_EQ(fake().sticky(0), 0);
  EXPECT_EQ(fake().live("stream"), 0) << "the reset destroys what was made in the context";
  EXPECT_EQ(fake().retained(0), 1) << "one reference, retained afresh";
  EXPECT_NE(ctx().handle(), nullptr);

  // Usable again.
  absl::StatusOr<ContextUser> again = ctx().AddUser();
  ASSERT_TRUE(again.ok()) << again.status();
  CUstream t = MakeStream();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(ctx().Call("cuStreamSynchronize", [&] { return api().cuStreamSynchronize(t); }).ok());
  EXPECT_TRUE(ctx().Call("cuStreamDestroy", [&] { return api().cuStreamDestroy(t); }).ok());
}

TEST_F(CudaContextTest, AFailedResetLeavesTheContextPoisonedAndMayBeRetried) {
  ctx().Check(716, "cuLaunchKernel").IgnoreError();  // CUDA_ERROR_MISALIGNED_ADDRESS
  fake().fail("cuDevicePrimaryCtxReset", 999, 0);
  absl::Status s = ctx().Recover();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE(Has(s.message(), "cuDevicePrimaryCtxReset (cuda:0)")) << s.message();
  EXPECT_TRUE(ctx().poisoned());
  EXPECT_EQ(ctx().resets(), 0);
  EXPECT_TRUE(ctx().Recover().ok());
  EXPECT_FALSE(ctx().poisoned());
  EXPECT_EQ(ctx().resets(), 1);
}

TEST_F(CudaContextTest, UsersAndCallsFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<ContextUser> user = ctx().AddUser();
        if (!user.ok()) ++failures;
        CUstream s = nullptr;
        if (!ctx().Call("cuStreamCreate", [&] { return api().cuStreamCreate(&s, 0); }).ok()) ++failures;
        if (!ctx().Call("cuStreamDestroy", [&] { return api().cuStreamDestroy(s); }).ok()) ++failures;
        if (fake().context_depth() != 0) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ctx().users(), 0);
}

}  // namespace
}  // namespace warpd::runtime::cuda
