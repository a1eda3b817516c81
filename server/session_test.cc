// Tests of a session's close listeners: whoever added one can take it back,
// and then the session keeps nothing of it and never calls it (issue 23: a
// HoldSession stream's listener stayed with its session until Close).
#include "server/session.h"

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"

namespace warpd::server {
namespace {

class SessionTest : public ::testing::Test {
 protected:
  SessionTest()
      : scheduler_(runtime::StreamScheduler::Options{.threads = 1}),
        tenant_(std::make_shared<Tenant>("t", 1, TenantLimits{},
                                         runtime::MemoryAccount::Create("the daemon", uint64_t{1} << 30))),
        session_("test", tenant_, scheduler_.CreateGroup("t"), runtime::SegmentPoolOptions{}) {}

  runtime::StreamScheduler scheduler_;  // outlives the session
  std::shared_ptr<Tenant> tenant_;
  Session session_;
};

TEST_F(SessionTest, RemovedCloseListenersAreGoneAndNeverCalled) {
  // As 100,000 HoldSession streams opened and ended on one session do: each
  // adds a listener and removes it when it ends.
  auto held = std::make_shared<int>(0);  // what each listener captures
  int removed_calls = 0;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t id = session_.AddCloseListener([held, &removed_calls] { ++removed_calls; });
    ASSERT_NE(id, 0u);
    session_.RemoveCloseListener(id);
  }
  EXPECT_EQ(session_.close_listener_count(), 0u);
  EXPECT_EQ(held.use_count(), 1);  // no listener's captures are kept

  int kept_calls = 0;
  const uint64_t kept = session_.AddCloseListener([&kept_calls] { ++kept_calls; });
  const uint64_t removed = session_.AddCloseListener([held, &removed_calls] { ++removed_calls; });
  ASSERT_NE(kept, 0u);
  ASSERT_NE(removed, 0u);
  EXPECT_NE(kept, removed);
  EXPECT_EQ(session_.close_listener_count(), 2u);
  session_.RemoveCloseListener(removed);
  session_.RemoveCloseListener(removed);  // again: a no-op
  session_.RemoveCloseListener(0);        // "none": a no-op
  EXPECT_EQ(session_.close_listener_count(), 1u);
  EXPECT_EQ(held.use_count(), 1);

  session_.Close();
  EXPECT_EQ(kept_calls, 1);
  EXPECT_EQ(removed_calls, 0);
  EXPECT_EQ(session_.close_listener_count(), 0u);

  // Closed: nothing is added (0) or called; a late removal is harmless.
  EXPECT_EQ(session_.AddCloseListener([&removed_calls] { ++removed_calls; }), 0u);
  EXPECT_EQ(session_.close_listener_count(), 0u);
  session_.RemoveCloseListener(kept);
  session_.Close();
  EXPECT_EQ(kept_calls, 1);
  EXPECT_EQ(removed_calls, 0);
}

// Arrays whose elements hold descriptors of each other (a launch given
// both makes each hold the other) are a reference cycle: Close breaks it,
// so their memory goes back to the tenant with the session.
TEST_F(SessionTest, CloseFreesDescriptorArraysThatHoldEachOther) {
  auto table = std::make_shared<types::TypeTable>();
  auto s = table->Struct("S_1", "S", {{"a", types::TypeTable::Global().Array(types::Scalar(types::ScalarKind::kFloat32), 1)}});
  ASSERT_TRUE(s.ok()) << s.status();
  auto layout = runtime::MakeArrayLayout(*s, {1000}, table, /*allow_array_members=*/true);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const uint64_t before = tenant_->memory()->used();
  std::weak_ptr<const runtime::Array> wa, wb;
  {
    auto make = [&]() {
      auto buf = session_.private_pool().Allocate(layout->size_bytes, "t");
      EXPECT_TRUE(buf.ok()) << buf.status();
      auto a = std::make_shared<const runtime::Array>("cpu", *layout, *buf);
      session_.TrackHeld(a->held());
      return a;
    };
    std::shared_ptr<const runtime::Array> a = make(), b = make();
    EXPECT_FALSE(a->buffer()->cpu()->BelongsTo(session_.pool()));  // never shared with a client
    const std::shared_ptr<const runtime::Array> both[] = {a, b};
    ASSERT_TRUE(a->held()->Add(both, a.get()).ok());
    ASSERT_TRUE(b->held()->Add(both, b.get()).ok());
    wa = a;
    wb = b;
  }
  EXPECT_FALSE(wa.expired());  // the cycle keeps them
  EXPECT_FALSE(wb.expired());
  EXPECT_GT(tenant_->memory()->used(), before);
  session_.Close();
  EXPECT_TRUE(wa.expired());
  EXPECT_TRUE(wb.expired());
  EXPECT_EQ(tenant_->memory()->used(), before);
}

}  // namespace
}  // namespace warpd::server
