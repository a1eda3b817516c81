#include "runtime/objects/array.h"

#include <cstring>

#include "gtest/gtest.h"
#include "runtime/memory/segment_pool.h"
#include "warpd/native/array.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;
using types::TypeRef;

TEST(ArrayLayoutTest, RowMajorStrides) {
  auto l = MakeArrayLayout(types::Scalar(ScalarKind::kFloat32), {2, 3, 4});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->ndim, 3);
  EXPECT_EQ(l->num_elements, 24u);
  EXPECT_EQ(l->size_bytes, 96u);
  EXPECT_EQ(l->strides[0], 48);
  EXPECT_EQ(l->strides[1], 16);
  EXPECT_EQ(l->strides[2], 4);
  EXPECT_EQ(l->strides[3], 0);
}

TEST(ArrayLayoutTest, VectorElements) {
  auto l = MakeArrayLayout(types::Vector(3, ScalarKind::kFloat32), {5});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->size_bytes, 60u);
  EXPECT_EQ(l->strides[0], 12);
}

TEST(ArrayLayoutTest, RejectsBadShapes) {
  const TypeRef f = types::Scalar(ScalarKind::kFloat32);
  EXPECT_EQ(MakeArrayLayout(f, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeArrayLayout(f, {1, 2, 3, 4, 5}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto neg = MakeArrayLayout(f, {3, -1});
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("(3, -1)"), std::string::npos);
  EXPECT_EQ(MakeArrayLayout(f, {int64_t{1} << 31}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // 2^31-1 cubed * 4 bytes overflows 64 bits.
  auto huge = MakeArrayLayout(f, {INT32_MAX, INT32_MAX, INT32_MAX});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeArrayLayout(types::TypeTable::Global().Array(f, 1), {3}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeArrayLayout(types::Void(), {3}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ArrayLayoutTest, ZeroExtentIsEmpty) {
  auto l = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {0, INT32_MAX, INT32_MAX, INT32_MAX});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->size_bytes, 0u);
  EXPECT_EQ(l->num_elements, 0u);
  // Inner strides are the row-major products; 4 * (2^31-1)^2 is past int64,
  // so from there outwards they are 0.
  EXPECT_EQ(l->strides[3], 4);
  EXPECT_EQ(l->strides[2], int64_t{4} * INT32_MAX);
  EXPECT_EQ(l->strides[1], 0);
  EXPECT_EQ(l->strides[0], 0);
  auto small = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {0, 3, 5});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->strides[0], 60);  // representable: the ordinary row-major strides
  EXPECT_EQ(small->strides[1], 20);
}

TEST(ArrayTest, DescriptorMatchesNativeLayout) {
  SegmentPool pool(MemoryAccount::Create("test", 0));
  auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kFloat64), {3, 5});
  ASSERT_TRUE(layout.ok());
  auto buf = pool.Allocate(layout->size_bytes, "t");
  ASSERT_TRUE(buf.ok());
  Array a("cpu", *layout, *buf);
  EXPECT_EQ(a.TypeName(), "array(dtype=float64, ndim=2)");
  EXPECT_TRUE(a.Matches(types::TypeTable::Global().Array(types::Scalar(ScalarKind::kFloat64), 2)));
  EXPECT_FALSE(a.Matches(types::TypeTable::Global().Array(types::Scalar(ScalarKind::kFloat64), 1)));
  EXPECT_FALSE(a.Matches(types::TypeTable::Global().Array(types::Scalar(ScalarKind::kFloat32), 2)));
  alignas(16) unsigned char raw[64];
  std::memset(raw, 0xff, sizeof(raw));
  a.WriteDescriptor(raw);
  wp::array_t<double> d;
  std::memcpy(&d, raw, sizeof(d));
  EXPECT_EQ(reinterpret_cast<std::byte*>(d.data), a.data());
  EXPECT_EQ(d.ndim, 2);
  EXPECT_EQ(d.shape[0], 3);
  EXPECT_EQ(d.shape[1], 5);
  EXPECT_EQ(d.shape[2], 0);
  EXPECT_EQ(d.strides[0], 40);
  EXPECT_EQ(d.strides[1], 8);
  EXPECT_EQ(d.strides[3], 0);
  EXPECT_EQ(d.reserved, 0);
}

TEST(FormatShapeTest, PythonTupleSpelling) {
  EXPECT_EQ(FormatShape({10}), "(10,)");
  EXPECT_EQ(FormatShape({3, 4}), "(3, 4)");
}

}  // namespace
}  // namespace warpd::runtime
