// ObjectTable (the launch's object table) and the native lookup kernels use
// (runtime/native/warpd/native/objects.h): found, wrong kind, absent ids
// (made up, removed, another table's), and the fault an unknown id records.
#include "runtime/objects/object_table.h"

#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "warpd/native/objects.h"

namespace warpd::runtime {
namespace {

// A stand-in object with a recognisable descriptor.
class FakeObject final : public GeometryObject {
 public:
  FakeObject(wp::object_kind kind, int tag) : GeometryObject(kind, "cpu"), tag_(tag) {}
  const void* descriptor() const override { return &tag_; }
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  int tag() const { return tag_; }

 private:
  const int tag_;
};

wp::launch_ctx CtxWith(const ObjectTable& t) {
  wp::launch_ctx ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  ctx.objects = t.entries();
  ctx.num_objects = static_cast<wp::int64>(t.size());
  return ctx;
}

TEST(ObjectTableTest, WithKeepsEntriesSortedAndWithoutDropsThem) {
  std::mt19937_64 rng(7);
  std::shared_ptr<const ObjectTable> t = ObjectTable::Empty();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 50; ++i) {
    ids.push_back(rng() | 1);
    t = t->With(ids.back(), std::make_shared<FakeObject>(wp::OBJECT_HASH_GRID, i));
  }
  ASSERT_EQ(t->size(), 50u);
  for (size_t i = 1; i < t->size(); ++i) EXPECT_LT(t->entries()[i - 1].id, t->entries()[i].id);
  for (int i = 0; i < 50; ++i) {
    auto o = std::static_pointer_cast<const FakeObject>(t->Find(ids[static_cast<size_t>(i)]));
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->tag(), i);
  }
  std::shared_ptr<const ObjectTable> fewer = t->Without({ids[3], ids[10], 12345});
  EXPECT_EQ(fewer->size(), 48u);
  EXPECT_EQ(fewer->Find(ids[3]), nullptr);
  EXPECT_EQ(fewer->Find(ids[10]), nullptr);
  EXPECT_NE(fewer->Find(ids[4]), nullptr);
  EXPECT_EQ(t->size(), 50u);  // the old table is unchanged (launches still hold it)
  EXPECT_TRUE(t->Without(ids)->empty());
  EXPECT_EQ(t->Without(ids)->entries(), nullptr);
}

TEST(ObjectTableTest, NativeLookupResolvesOnlyTheTablesObjectsOfTheRightKind) {
  auto a = std::make_shared<FakeObject>(wp::OBJECT_HASH_GRID, 1);
  auto b = std::make_shared<FakeObject>(static_cast<wp::object_kind>(2), 2);
  std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(0x1000, a)->With(0x10, b);
  wp::launch_ctx ctx = CtxWith(*t);
  int32_t found = -1;
  EXPECT_EQ(wp::find_object(&ctx, 0x1000, wp::OBJECT_HASH_GRID, &found), a->descriptor());
  EXPECT_EQ(found, wp::OBJECT_HASH_GRID);
  // The right id, the wrong kind: null, and the kind it has.
  EXPECT_EQ(wp::find_object(&ctx, 0x10, wp::OBJECT_HASH_GRID, &found), nullptr);
  EXPECT_EQ(found, 2);
  // Ids that are not there: between, below and above the entries, 0, all ones.
  for (uint64_t id : {uint64_t{0x11}, uint64_t{0}, uint64_t{0x1001}, ~uint64_t{0}, uint64_t{0x0f}}) {
    EXPECT_EQ(wp::find_object(&ctx, id, wp::OBJECT_HASH_GRID, &found), nullptr) << id;
    EXPECT_EQ(found, wp::OBJECT_NONE);
  }
  // A removed object is gone from the new table.
  std::shared_ptr<const ObjectTable> after = t->Without({0x1000});
  wp::launch_ctx ctx2 = CtxWith(*after);
  EXPECT_EQ(wp::find_object(&ctx2, 0x1000, wp::OBJECT_HASH_GRID, &found), nullptr);
  // No table at all (a launch of a session without objects).
  wp::launch_ctx none;
  std::memset(&none, 0, sizeof(none));
  EXPECT_EQ(wp::find_object(&none, 0x1000, wp::OBJECT_HASH_GRID, &found), nullptr);
}

TEST(ObjectTableTest, AnUnknownIdRecordsTheFirstFaultWithIdAndLine) {
  auto a = std::make_shared<FakeObject>(wp::OBJECT_HASH_GRID, 1);
  std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(0xabc, a);
  wp::launch_ctx ctx = CtxWith(*t);
  EXPECT_EQ(wp::resolve_object(&ctx, 12, 0xabc, wp::OBJECT_HASH_GRID), a->descriptor());
  EXPECT_EQ(ctx.fault.flag, 0);
  const uint64_t forged = 0xfedcba9876543210ull;
  EXPECT_EQ(wp::resolve_object(&ctx, 34, forged, wp::OBJECT_HASH_GRID), nullptr);
  EXPECT_EQ(ctx.fault.flag, 1);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
  EXPECT_EQ(ctx.fault.line, 34);
  EXPECT_EQ(static_cast<uint64_t>(ctx.fault.index), forged);
  EXPECT_EQ(ctx.fault.dim, wp::OBJECT_HASH_GRID);
  EXPECT_EQ(ctx.fault.extent, wp::OBJECT_NONE);
  // The first fault stays.
  EXPECT_EQ(wp::resolve_object(&ctx, 56, 0x1, wp::OBJECT_HASH_GRID), nullptr);
  EXPECT_EQ(ctx.fault.line, 34);
}

}  // namespace
}  // namespace warpd::runtime
