#include "common/types/type.h"

#include <gtest/gtest.h>

#include "warpd/native/tuple.h"
#include "warpd/native/vec.h"

namespace warpd::types {
namespace {

TEST(TypeTableTest, NamesSizesAndLayoutsOfEveryFamily) {
  struct Case {
    TypeRef t;
    const char* name;
    const char* cpp;
    uint64_t size;
    uint32_t align;
  } cases[] = {
      {Scalar(ScalarKind::kFloat16), "float16", "wp::half", 2, 2},
      {Vector(3, ScalarKind::kFloat32), "vec3f", "wp::vec_t<3, wp::float32>", 12, 4},
      {Vector(5, ScalarKind::kFloat64), "vector(length=5, dtype=float64)", "wp::vec_t<5, wp::float64>", 40, 8},
      {Matrix(3, 3, ScalarKind::kFloat64), "mat33d", "wp::mat_t<3, 3, wp::float64>", 72, 8},
      {Quat(ScalarKind::kFloat32), "quatf", "wp::quat_t<wp::float32>", 16, 4},
      {Transform(ScalarKind::kFloat16), "transformh", "wp::transform_t<wp::half>", 14, 2},
      {TypeTable::Global().Array(Vector(3, ScalarKind::kFloat32), 2), "array(dtype=vec3f, ndim=2)",
       "wp::array_t<wp::vec_t<3, wp::float32>>", kArrayDescriptorSize, 8},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.t->ToString(), c.name);
    EXPECT_EQ(c.t->CppName(), c.cpp) << c.name;
    EXPECT_EQ(c.t->size(), c.size) << c.name;
    EXPECT_EQ(c.t->align(), c.align) << c.name;
  }
  // Interned: equal types are the same node.
  EXPECT_EQ(Vector(3, ScalarKind::kFloat32), Vector(3, ScalarKind::kFloat32));
  EXPECT_EQ(TypeFromWarpName("vec3"), Vector(3, ScalarKind::kFloat32));
  EXPECT_EQ(TypeFromWarpName("mat22h"), Matrix(2, 2, ScalarKind::kFloat16));
  EXPECT_EQ(TypeFromWarpName("spatial_vectord"), Vector(6, ScalarKind::kFloat64));
  EXPECT_EQ(TypeFromWarpName("vec3q"), nullptr);
}

TEST(TypeTableTest, StructsFollowCLayoutAndLiveInTheirOwnTable) {
  TypeTable local;
  auto inner = local.Struct("Inner_1", "Inner", {{"h", Scalar(ScalarKind::kFloat16)}, {"d", Scalar(ScalarKind::kFloat64)}});
  ASSERT_TRUE(inner.ok()) << inner.status();
  auto outer = local.Struct("Outer_1", "Outer", {{"c", Scalar(ScalarKind::kInt8)}, {"in", *inner}, {"v", Vector(3, ScalarKind::kFloat32)}});
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ((*inner)->members()[1].offset, 8u);
  EXPECT_EQ((*inner)->size(), 16u);
  EXPECT_EQ((*outer)->FindMember("in")->offset, 8u);
  EXPECT_EQ((*outer)->FindMember("v")->offset, 24u);
  EXPECT_EQ((*outer)->size(), 40u);
  EXPECT_TRUE((*outer)->contains_struct());
  EXPECT_FALSE((*outer)->holds_array());
  // The same definition interns to the same node; a different one is an error.
  EXPECT_EQ(*local.Struct("Inner_1", "Inner", {{"h", Scalar(ScalarKind::kFloat16)}, {"d", Scalar(ScalarKind::kFloat64)}}), *inner);
  EXPECT_FALSE(local.Struct("Inner_1", "Inner", {{"h", Scalar(ScalarKind::kFloat32)}}).ok());
  // Another table: another node, the same type.
  TypeTable other;
  auto again = other.Struct("Inner_1", "Inner", {{"h", Scalar(ScalarKind::kFloat16)}, {"d", Scalar(ScalarKind::kFloat64)}});
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, *inner);
  EXPECT_TRUE(SameType(*again, *inner));
  EXPECT_FALSE(SameType(*again, *outer));
}

TEST(TypeTableTest, TuplesAreLocalInternedAndLaidOutLikeTupleH) {
  TypeTable local, other;
  TypeRef f16 = Scalar(ScalarKind::kFloat16), f64 = Scalar(ScalarKind::kFloat64), v3 = Vector(3, ScalarKind::kFloat32);
  auto t = local.Tuple({f16, f64, v3});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->ToString(), "tuple(float16, float64, vec3f)");
  EXPECT_EQ((*t)->CppName(), "wp::tuple_t<wp::half, wp::float64, wp::vec_t<3, wp::float32>>");
  EXPECT_EQ((*t)->length(), 3);
  // The layout of the native template, as this compiler lays it out.
  EXPECT_EQ((*t)->size(), sizeof(wp::tuple_t<wp::half, wp::float64, wp::vec_t<3, wp::float32>>));
  EXPECT_EQ((*t)->align(), alignof(wp::tuple_t<wp::half, wp::float64, wp::vec_t<3, wp::float32>>));
  auto one = local.Tuple({f16});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->size(), sizeof(wp::tuple_t<wp::half>));
  // Interned per table; equal across tables.
  EXPECT_EQ(*local.Tuple({f16, f64, v3}), *t);
  auto t2 = other.Tuple({f16, f64, v3});
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(*t2, *t);
  EXPECT_TRUE(SameType(*t2, *t));
  EXPECT_FALSE(SameType(*one, *t));
  // Clients choose tuples: never in the table every tenant shares.
  EXPECT_EQ(TypeTable::Global().Tuple({f16}).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(local.Tuple({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(local.Tuple(std::vector<TypeRef>(kMaxTupleElements + 1, f16)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(local.Tuple({TypeTable::Global().Array(f16, 1)}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TypeTableTest, HoldsArrayAtAnyDepth) {
  TypeTable local;
  auto with = local.Struct("A_1", "A", {{"n", Scalar(ScalarKind::kInt32)}, {"a", TypeTable::Global().Array(Scalar(ScalarKind::kFloat32), 1)}});
  ASSERT_TRUE(with.ok());
  auto nested = local.Struct("B_1", "B", {{"inner", *with}});
  ASSERT_TRUE(nested.ok());
  EXPECT_TRUE((*with)->holds_array());
  EXPECT_TRUE((*nested)->holds_array());
  EXPECT_EQ((*with)->FindMember("a")->offset, 8u);
  EXPECT_EQ((*with)->size(), 72u);
}

TEST(TypeTableTest, ClientSizedTypesAreChecked) {
  TypeTable& g = TypeTable::Global();
  EXPECT_TRUE(g.CheckedVector(kMaxVectorLength, ScalarKind::kFloat32).ok());
  EXPECT_EQ(g.CheckedVector(kMaxVectorLength + 1, ScalarKind::kFloat32).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(g.CheckedVector(0, ScalarKind::kFloat32).ok());  // v[4:], as in Warp
  EXPECT_EQ(g.CheckedVector(-1, ScalarKind::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(g.CheckedMatrix(0, 0, ScalarKind::kFloat32).ok());  // m[9:]
  EXPECT_EQ(g.CheckedMatrix(-1, 2, ScalarKind::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.CheckedMatrix(64, 64, ScalarKind::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(g.CheckedMatrix(32, 32, ScalarKind::kFloat32).ok());
  EXPECT_EQ(g.CheckedQuat(ScalarKind::kInt32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.CheckedArray(Scalar(ScalarKind::kFloat32), 5).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpd::types
