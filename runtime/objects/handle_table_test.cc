#include "runtime/objects/handle_table.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace warpd::runtime {
namespace {

TEST(HandleTableTest, InsertGetRemove) {
  HandleTable<std::string> table("array");
  auto h = table.Insert(std::make_shared<std::string>("hello"));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_NE(*h, 0u);
  auto got = table.Get(*h);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(**got, "hello");
  EXPECT_EQ(table.size(), 1u);
  auto removed = table.Remove(*h);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(**removed, "hello");
  auto again = table.Get(*h);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table.Remove(*h).status().code(), absl::StatusCode::kNotFound);
}

TEST(HandleTableTest, HandleOfAnotherTableIsNotFoundWithSameMessage) {
  HandleTable<int> session_a("array"), session_b("array");
  auto h = session_a.Insert(std::make_shared<int>(7));
  ASSERT_TRUE(h.ok());
  auto foreign = session_b.Get(*h);
  ASSERT_EQ(foreign.status().code(), absl::StatusCode::kNotFound);
  // Indistinguishable from a handle that never existed.
  const uint64_t made_up = *h ^ 1;
  auto missing = session_a.Get(made_up);
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(foreign.status().message()).substr(0, 13), "array handle ");
  EXPECT_EQ(foreign.status().message().size(), missing.status().message().size());
  EXPECT_NE(foreign.status().message().find(absl::StrFormat("%016x", *h)), std::string::npos);
}

TEST(HandleTableTest, HandlesAreDistinctAndSpreadOverAllBits) {
  HandleTable<int> table("module");
  std::set<uint64_t> seen;
  uint64_t ored = 0;
  for (int i = 0; i < 1000; ++i) {
    auto h = table.Insert(std::make_shared<int>(i));
    ASSERT_TRUE(h.ok());
    seen.insert(*h);
    ored |= *h;
  }
  EXPECT_EQ(seen.size(), 1000u);
  // Random 64-bit values: with 1000 samples every bit is set somewhere.
  EXPECT_EQ(ored, ~uint64_t{0});
  // Not sequential.
  auto it = seen.begin();
  uint64_t first = *it++;
  EXPECT_NE(*it, first + 1);
}

TEST(HandleTableTest, ClearReturnsObjectsAndLimitHolds) {
  HandleTable<int> table("array", 2);
  auto obj = std::make_shared<int>(1);
  ASSERT_TRUE(table.Insert(obj).ok());
  ASSERT_TRUE(table.Insert(obj).ok());
  auto third = table.Insert(obj);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(obj.use_count(), 3);
  auto cleared = table.Clear();
  EXPECT_EQ(cleared.size(), 2u);
  EXPECT_EQ(table.size(), 0u);
  cleared.clear();
  EXPECT_EQ(obj.use_count(), 1);
}

TEST(HandleTableTest, InsertAsTakesTheCallersHandleOnce) {
  HandleTable<int> table("object", 2);
  ASSERT_TRUE(table.InsertAs(0x1234, std::make_shared<int>(1)).ok());
  EXPECT_EQ(**table.Get(0x1234), 1);
  absl::Status again = table.InsertAs(0x1234, std::make_shared<int>(2));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("object handle 0x0000000000001234 is already in use"), std::string::npos) << again;
  EXPECT_EQ(**table.Get(0x1234), 1);  // the first keeps it
  EXPECT_EQ(table.InsertAs(0, std::make_shared<int>(3)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(table.Insert(std::make_shared<int>(4)).ok());
  EXPECT_EQ(table.InsertAs(0x99, std::make_shared<int>(5)).code(), absl::StatusCode::kResourceExhausted);
}

TEST(SecureRandomTest, HexTokenHasRightLengthAndDiffers) {
  auto a = SecureRandomHex(16);
  auto b = SecureRandomHex(16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace warpd::runtime
