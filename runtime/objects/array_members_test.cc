#include "runtime/objects/array_members.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"
#include "warpd/native/array.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;
using types::TypeRef;

// struct Inner { arr2: array(int32, ndim=2) }
// struct S { a: int32; arr: array(float32); b: float32; nested: Inner }
class ArrayMembersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inner = table_->Struct("Inner_1", "Inner", {{"arr2", types::TypeTable::Global().Array(i32_, 2)}});
    ASSERT_TRUE(inner.ok()) << inner.status();
    auto s = table_->Struct("S_1", "S",
                            {{"a", i32_}, {"arr", types::TypeTable::Global().Array(f32_, 1)}, {"b", f32_},
                             {"nested", *inner}});
    ASSERT_TRUE(s.ok()) << s.status();
    s_ = *s;
    for (const types::Member& m : s_->members()) offsets_[m.name] = m.offset;
    inner_arr_ = offsets_["nested"] + (*inner)->members()[0].offset;
  }

  std::shared_ptr<const Array> Make(TypeRef dtype, std::vector<int64_t> shape, bool members = false) {
    auto layout = MakeArrayLayout(dtype, shape, dtype->contains_struct() ? table_ : nullptr, members);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = pool_.Allocate(layout->size_bytes, "t");
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cpu", *layout, *buf);
  }

  std::shared_ptr<types::TypeTable> table_ = std::make_shared<types::TypeTable>();
  TypeRef f32_ = types::Scalar(ScalarKind::kFloat32);
  TypeRef i32_ = types::Scalar(ScalarKind::kInt32);
  TypeRef s_ = nullptr;
  absl::flat_hash_map<std::string, uint64_t> offsets_;
  uint64_t inner_arr_ = 0;
  SegmentPool pool_{MemoryAccount::Create("test", 0)};
};

TEST_F(ArrayMembersTest, ForEachArrayMemberFindsNestedSlots) {
  std::vector<uint64_t> found;
  ASSERT_TRUE(ForEachArrayMember(s_, 100, [&](TypeRef, uint64_t off) {
                found.push_back(off);
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(found, (std::vector<uint64_t>{100 + offsets_["arr"], 100 + inner_arr_}));
}

TEST_F(ArrayMembersTest, BindWritesDescriptorsOfTheLookedUpArrays) {
  auto floats = Make(f32_, {7});
  auto ints = Make(i32_, {2, 3});
  std::vector<std::byte> value(s_->size(), std::byte{0});
  const uint64_t h1 = 11, h2 = 22;
  std::memcpy(value.data() + offsets_["arr"], &h1, 8);
  std::memcpy(value.data() + inner_arr_, &h2, 8);
  int32_t a = 5;
  std::memcpy(value.data() + offsets_["a"], &a, 4);
  auto lookup_fn = [&](uint64_t h) -> absl::StatusOr<std::shared_ptr<const Array>> {
    if (h == h1) return floats;
    if (h == h2) return ints;
    return absl::NotFoundError("unknown array handle");
  };
  std::vector<std::shared_ptr<const Array>> bound;
  auto what = [] { return std::string("v"); };
  ASSERT_TRUE(BindArrayMembers(s_, value.data(), lookup_fn, "cpu", &bound, what).ok());
  ASSERT_EQ(bound.size(), 2u);
  wp::array_t<float> d1;
  std::memcpy(&d1, value.data() + offsets_["arr"], sizeof(d1));
  EXPECT_EQ(reinterpret_cast<std::byte*>(d1.data), floats->data());
  EXPECT_EQ(d1.shape[0], 7);
  wp::array_t<int> d2;
  std::memcpy(&d2, value.data() + inner_arr_, sizeof(d2));
  EXPECT_EQ(reinterpret_cast<std::byte*>(d2.data), ints->data());
  EXPECT_EQ(d2.ndim, 2);
  EXPECT_EQ(d2.shape[1], 3);
  int32_t a_after = 0;
  std::memcpy(&a_after, value.data() + offsets_["a"], 4);
  EXPECT_EQ(a_after, 5);  // other members untouched

  // Wrong type, unknown handle, wrong device: errors naming the value.
  std::memcpy(value.data() + offsets_["arr"], &h2, 8);
  auto wrong = BindArrayMembers(s_, value.data(), lookup_fn, "cpu", &bound, what);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("array(dtype=float32, ndim=1)"), std::string::npos) << wrong.message();
  const uint64_t h3 = 33;
  std::memcpy(value.data() + offsets_["arr"], &h3, 8);
  EXPECT_EQ(BindArrayMembers(s_, value.data(), lookup_fn, "cpu", &bound, what).code(), absl::StatusCode::kNotFound);
  std::memcpy(value.data() + offsets_["arr"], &h1, 8);
  EXPECT_EQ(BindArrayMembers(s_, value.data(), lookup_fn, "cuda:0", &bound, what).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ArrayMembersTest, ZeroHandleIsAnEmptyDescriptor) {
  std::vector<std::byte> value(s_->size(), std::byte{0x5a});
  std::memset(value.data() + offsets_["arr"], 0, 8);
  std::memset(value.data() + inner_arr_, 0, 8);
  std::vector<std::shared_ptr<const Array>> bound;
  auto lookup_fn = [](uint64_t) -> absl::StatusOr<std::shared_ptr<const Array>> { return absl::NotFoundError("x"); };
  ASSERT_TRUE(BindArrayMembers(s_, value.data(), lookup_fn, "cpu", &bound, [] { return std::string("v"); }).ok());
  EXPECT_TRUE(bound.empty());
  for (uint64_t off : {offsets_["arr"], inner_arr_}) {
    for (uint64_t i = 0; i < types::kArrayDescriptorSize; ++i) EXPECT_EQ(value[off + i], std::byte{0}) << off + i;
  }
}

TEST_F(ArrayMembersTest, RevealGivesBackTheHandlesBindTook) {
  auto floats = Make(f32_, {7});
  auto ints = Make(i32_, {2, 3});
  auto other = Make(f32_, {7});  // same type and shape, other memory
  const uint64_t elem = s_->size();
  // Three elements as a client writes them: handles, 0 for none.
  std::vector<std::byte> values(3 * elem, std::byte{0});
  const uint64_t h1 = 11, h2 = 22, h3 = 33;
  auto put = [&](uint64_t e, uint64_t off, uint64_t h) { std::memcpy(values.data() + e * elem + off, &h, 8); };
  put(0, offsets_["arr"], h1);
  put(0, inner_arr_, h2);
  put(1, offsets_["arr"], h3);
  int32_t a = 5;
  std::memcpy(values.data() + elem + offsets_["a"], &a, 4);
  const std::vector<std::byte> sent = values;
  auto lookup_fn = [&](uint64_t h) -> absl::StatusOr<std::shared_ptr<const Array>> {
    if (h == h1) return floats;
    if (h == h2) return ints;
    if (h == h3) return other;
    return absl::NotFoundError("unknown array handle");
  };
  std::vector<std::shared_ptr<const Array>> bound;
  for (uint64_t e = 0; e < 3; ++e) {
    ASSERT_TRUE(BindArrayMembers(s_, values.data() + e * elem, lookup_fn, "cpu", &bound, [] {
                  return std::string("v");
                }).ok());
  }
  // A descriptor never goes out: each comes back as its array's handle.
  std::vector<std::byte> out = values;
  RevealArrayMembers(s_, out.data(), 3, {{floats, h1}, {ints, h2}, {other, h3}});
  EXPECT_EQ(out, sent);
  // An array the client has no handle of any more reads as 0 (None); a
  // garbled descriptor matches nothing.
  out = values;
  std::memset(out.data() + inner_arr_ + 8, 0x5a, 4);  // ints' shape[0]
  RevealArrayMembers(s_, out.data(), 3, {{floats, h1}, {ints, h2}});
  std::vector<std::byte> want = sent;
  std::memset(want.data() + inner_arr_, 0, 8);
  std::memset(want.data() + elem + offsets_["arr"], 0, 8);
  EXPECT_EQ(out, want);
}

TEST_F(ArrayMembersTest, DtypesHoldingArraysNeedPermission) {
  auto refused = MakeArrayLayout(s_, {4}, table_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("member 'arr'"), std::string::npos) << refused.status();
  EXPECT_TRUE(MakeArrayLayout(s_, {4}, table_, /*allow_array_members=*/true).ok());
}

TEST_F(ArrayMembersTest, ViewsKeepTheDtypeAndTheElementGrid) {
  auto base = Make(s_, {6}, true);
  const int64_t elem = static_cast<int64_t>(s_->size());
  ViewRequest ok;
  ok.offset_bytes = 2 * elem;
  std::vector<int64_t> shape{2}, strides{2 * elem};
  ok.shape = shape;
  ok.strides = strides;
  auto v = MakeViewLayout(*base, ok, uint64_t{1} << 30);
  ASSERT_TRUE(v.ok()) << v.status();
  Array view("cpu", v->layout, base->buffer(), v->byte_offset, base->held());
  EXPECT_EQ(view.held(), base->held());

  ViewRequest off = ok;
  off.offset_bytes = 8;  // aligned, but inside an element
  EXPECT_EQ(MakeViewLayout(*base, off, uint64_t{1} << 30).status().code(), absl::StatusCode::kInvalidArgument);
  ViewRequest stride = ok;
  std::vector<int64_t> half{elem / 2};
  stride.strides = half;
  EXPECT_EQ(MakeViewLayout(*base, stride, uint64_t{1} << 30).status().code(), absl::StatusCode::kInvalidArgument);
  ViewRequest retyped = ok;
  retyped.dtype = types::Scalar(ScalarKind::kUInt64);
  std::vector<int64_t> bytes_shape{elem / 8}, bytes_strides{8};
  retyped.shape = bytes_shape;
  retyped.strides = bytes_strides;
  auto r = MakeViewLayout(*base, retyped, uint64_t{1} << 30);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cannot change its dtype"), std::string::npos) << r.status();
  // And an ordinary array cannot be viewed as one holding arrays.
  auto plain = Make(types::Scalar(ScalarKind::kUInt8), {4 * elem});
  ViewRequest forged;
  forged.dtype = s_;
  forged.dtype_table = table_;
  std::vector<int64_t> one{1}, es{elem};
  forged.shape = one;
  forged.strides = es;
  EXPECT_EQ(MakeViewLayout(*plain, forged, uint64_t{1} << 30).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ArrayMembersTest, IndexedArraySlotsGetDataIndicesAndShape) {
  const TypeRef it = types::TypeTable::Global().Array(f32_, 2, /*indexed=*/true);
  EXPECT_TRUE(it->is_indexed_array());
  EXPECT_EQ(it->size(), types::kIndexedArrayDescriptorSize);
  EXPECT_EQ(it->ToString(), "indexedarray(dtype=float32, ndim=2)");
  EXPECT_FALSE(types::SameType(it, types::TypeTable::Global().Array(f32_, 2)));
  auto data = Make(f32_, {5, 7});
  auto index = Make(i32_, {3});
  auto floats = Make(f32_, {3});
  absl::flat_hash_map<uint64_t, std::shared_ptr<const Array>> handles = {{1, data}, {2, index}, {3, floats}};
  auto lookup_fn = [&](uint64_t h) -> absl::StatusOr<std::shared_ptr<const Array>> {
    auto found = handles.find(h);
    if (found == handles.end()) return absl::NotFoundError("unknown array handle");
    return found->second;
  };
  auto what = [] { return std::string("arg"); };
  auto slot_with = [](uint64_t d, uint64_t i0, uint64_t i1) {
    std::vector<std::byte> slot(112, std::byte{0xab});  // garbage the daemon must overwrite
    std::memcpy(slot.data(), &d, 8);
    std::memcpy(slot.data() + 64, &i0, 8);
    std::memcpy(slot.data() + 72, &i1, 8);
    return slot;
  };
  std::vector<std::shared_ptr<const Array>> bound;
  std::vector<std::byte> slot = slot_with(1, 0, 2);  // dimension 1 indexed
  ASSERT_TRUE(BindArraySlot(it, slot.data(), lookup_fn, "cpu", &bound, what).ok());
  wp::indexedarray_t<float> ia;
  std::memcpy(&ia, slot.data(), sizeof(ia));
  EXPECT_EQ(reinterpret_cast<std::byte*>(ia.data.data), data->data());
  EXPECT_EQ(ia.indices[0], nullptr);
  EXPECT_EQ(reinterpret_cast<std::byte*>(ia.indices[1]), index->data());
  EXPECT_EQ(ia.indices[2], nullptr);
  EXPECT_EQ(ia.indices[3], nullptr);
  EXPECT_EQ(ia.shape[0], 5);  // data's extent
  EXPECT_EQ(ia.shape[1], 3);  // the index array's length
  EXPECT_EQ(ia.shape[2], 0);
  EXPECT_EQ(bound.size(), 2u);

  slot = slot_with(1, 3, 0);  // a float32 index array
  EXPECT_EQ(BindArraySlot(it, slot.data(), lookup_fn, "cpu", &bound, what).code(), absl::StatusCode::kInvalidArgument);
  slot = slot_with(2, 0, 0);  // data of another type
  EXPECT_EQ(BindArraySlot(it, slot.data(), lookup_fn, "cpu", &bound, what).code(), absl::StatusCode::kInvalidArgument);
  slot = slot_with(9, 0, 0);
  EXPECT_EQ(BindArraySlot(it, slot.data(), lookup_fn, "cpu", &bound, what).code(), absl::StatusCode::kNotFound);
  slot = slot_with(0, 2, 2);  // no data: an empty descriptor, whatever else the slot says
  ASSERT_TRUE(BindArraySlot(it, slot.data(), lookup_fn, "cpu", &bound, what).ok());
  for (std::byte b : slot) EXPECT_EQ(b, std::byte{0});
}

TEST_F(ArrayMembersTest, HeldArraysSkipsItselfAndFollowsWhatOthersHold) {
  auto a = Make(s_, {2}, true);
  auto b = Make(s_, {2}, true);
  auto x = Make(f32_, {3});
  auto y = Make(f32_, {3});
  ASSERT_NE(a->held(), nullptr);
  EXPECT_EQ(x->held(), nullptr);
  ASSERT_TRUE(b->held()->Add({&y, 1}, b.get()).ok());
  const std::shared_ptr<const Array> some[] = {a, x, b, x};
  ASSERT_TRUE(a->held()->Add(some, a.get()).ok());
  // a holds x, b and what b holds (y); never itself; x once.
  std::vector<std::shared_ptr<const Array>> held = a->held()->Snapshot();
  EXPECT_EQ(held.size(), 3u);
  auto has = [&](const std::shared_ptr<const Array>& p) {
    return std::find(held.begin(), held.end(), p) != held.end();
  };
  EXPECT_TRUE(has(x) && has(b) && has(y));
  EXPECT_FALSE(has(a));
  // A held array stays alive after every other reference goes, until Clear.
  std::weak_ptr<const Array> wy = y;
  y.reset();
  b->held()->Clear();
  held.clear();
  EXPECT_FALSE(wy.expired());  // a still holds it
  a->held()->Clear();
  EXPECT_TRUE(wy.expired());
}

// Held entries are charged to the account given (the session's): a launch
// that would make a descriptor array hold more than fits is refused whole.
TEST_F(ArrayMembersTest, HeldEntriesAreChargedAndReleased) {
  auto account = MemoryAccount::Create("session", 3 * HeldArrays::kEntryBytes);
  auto held = std::make_shared<HeldArrays>(account);
  auto x = Make(f32_, {1}), y = Make(f32_, {1}), z = Make(f32_, {1}), w = Make(f32_, {1});
  const std::shared_ptr<const Array> two[] = {x, y, x};
  ASSERT_TRUE(held->Add(two, nullptr).ok());
  EXPECT_EQ(account->used(), 2 * HeldArrays::kEntryBytes);  // x once
  const std::shared_ptr<const Array> three[] = {x, z, w};   // two new: 4 > 3
  absl::Status s = held->Add(three, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(held->size(), 2u);  // nothing of the refused call was added
  EXPECT_EQ(account->used(), 2 * HeldArrays::kEntryBytes);
  held->Clear();
  EXPECT_EQ(account->used(), 0u);
  ASSERT_TRUE(held->Add(three, nullptr).ok());
  held.reset();  // destroyed: its charge goes too
  EXPECT_EQ(account->used(), 0u);
}

}  // namespace
}  // namespace warpd::runtime
