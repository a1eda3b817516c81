#include "runtime/objects/array_view.h"

#include <climits>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;

constexpr uint64_t kMaxBytes = uint64_t{1} << 34;

ViewRequest Req(uint64_t offset, absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                types::TypeRef dtype = nullptr) {
  ViewRequest r;
  r.offset_bytes = offset;
  r.shape = shape;
  r.strides = strides;
  r.dtype = dtype;
  return r;
}

class ArrayViewTest : public ::testing::Test {
 protected:
  // A float32 array of shape (3, 4): 48 bytes.
  std::shared_ptr<const Array> Base(std::vector<int64_t> shape = {3, 4},
                                    types::TypeRef dtype = types::Scalar(ScalarKind::kFloat32)) {
    auto layout = MakeArrayLayout(dtype, shape);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = pool_.Allocate(layout->size_bytes, "t");
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cpu", *layout, *buf);
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
};

TEST_F(ArrayViewTest, ColumnOfA2DArray) {
  auto base = Base();
  std::vector<int64_t> shape = {3}, strides = {16};
  auto v = MakeViewLayout(*base, Req(4, shape, strides), kMaxBytes);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->byte_offset, 4u);
  EXPECT_EQ(v->layout.ndim, 1);
  EXPECT_EQ(v->layout.num_elements, 3u);
  EXPECT_EQ(v->layout.size_bytes, 12u);
  EXPECT_FALSE(v->layout.contiguous);
  Array view("cpu", v->layout, base->buffer(), v->byte_offset);
  EXPECT_EQ(view.data(), base->data() + 4);
  EXPECT_EQ(view.TypeName(), "array(dtype=float32, ndim=1)");
}

TEST_F(ArrayViewTest, RowsAreContiguousAndOffsetsCompose) {
  auto base = Base();
  std::vector<int64_t> shape = {2, 4}, strides = {16, 4};
  auto rows = MakeViewLayout(*base, Req(16, shape, strides), kMaxBytes);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->layout.contiguous);
  Array view("cpu", rows->layout, base->buffer(), rows->byte_offset);
  // A view of the view: its row 1 (offset from the view's first element).
  std::vector<int64_t> s1 = {4}, st1 = {4};
  auto row = MakeViewLayout(view, Req(16, s1, st1), kMaxBytes);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->byte_offset, 32u);
  // Past the end from the view's start, though within 48 bytes from the base's.
  auto past = MakeViewLayout(view, Req(20, s1, st1), kMaxBytes);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ArrayViewTest, DtypeReinterpretation) {
  auto base = Base();
  std::vector<int64_t> shape = {3}, strides = {16};
  auto v = MakeViewLayout(*base,
                          Req(0, shape, strides, types::Vector(4, ScalarKind::kFloat32)),
                          kMaxBytes);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->layout.contiguous);
  EXPECT_EQ(v->layout.size_bytes, 48u);
  // A float64 view at a 4-byte offset would be misaligned.
  std::vector<int64_t> s2 = {2}, st2 = {8};
  auto mis = MakeViewLayout(*base, Req(4, s2, st2, types::Scalar(ScalarKind::kFloat64)),
                            kMaxBytes);
  EXPECT_EQ(mis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mis.status().message().find("alignment"), std::string::npos) << mis.status();
}

TEST_F(ArrayViewTest, EmptyViews) {
  auto base = Base();
  std::vector<int64_t> shape = {0}, strides = {4};
  // An empty view may start at the end, not past it.
  EXPECT_TRUE(MakeViewLayout(*base, Req(48, shape, strides), kMaxBytes).ok());
  EXPECT_FALSE(MakeViewLayout(*base, Req(52, shape, strides), kMaxBytes).ok());
  // A zero extent makes the others' product irrelevant.
  std::vector<int64_t> big = {INT32_MAX, INT32_MAX, INT32_MAX, 0}, bst = {4, 4, 4, 4};
  auto e = MakeViewLayout(*base, Req(0, big, bst), kMaxBytes);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->layout.size_bytes, 0u);
}

TEST_F(ArrayViewTest, ZeroStrideBroadcastIsBoundedBySize) {
  auto base = Base();
  std::vector<int64_t> shape = {1000, 4}, strides = {0, 4};
  auto v = MakeViewLayout(*base, Req(0, shape, strides), kMaxBytes);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->layout.size_bytes, 16000u);
  EXPECT_EQ(MakeViewLayout(*base, Req(0, shape, strides), 15999).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Hostile requests: every one is INVALID_ARGUMENT, none reaches outside the buffer.
TEST_F(ArrayViewTest, RejectsHostileRequests) {
  auto base = Base();
  struct Case {
    const char* name;
    uint64_t offset;
    std::vector<int64_t> shape, strides;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no dims", 0, {}, {}, "1 to 4 dimensions"},
      {"five dims", 0, {1, 1, 1, 1, 1}, {4, 4, 4, 4, 4}, "1 to 4 dimensions"},
      {"strides count", 0, {3}, {4, 4}, "needs 1 strides"},
      {"negative extent", 0, {-1}, {4}, "must be in [0,"},
      {"extent past int32", 0, {int64_t{1} << 31}, {0}, "must be in [0,"},
      {"negative stride", 8, {2}, {-4}, "negative"},
      {"misaligned stride", 0, {2}, {6}, "alignment"},
      {"misaligned offset", 2, {2}, {4}, "alignment"},
      {"offset past end", 52, {1}, {4}, "starts past the end"},
      {"offset overflow", UINT64_MAX - 2, {1}, {4}, "starts past the end"},
      {"last element past end", 4, {12}, {4}, "reaches past the end"},
      {"stride past end", 0, {2}, {48}, "reaches past the end"},
      {"reach overflow", 0, {3}, {INT64_MAX - 3}, "reaches past the end"},
      {"reach sum overflow", 0, {2, 2, 2}, {INT64_MAX - 3, INT64_MAX - 3, INT64_MAX - 3}, "reaches past the end"},
      {"element count overflow", 0, {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX}, {0, 0, 0, 0}, "too many elements"},
      {"huge broadcast", 0, {INT32_MAX, INT32_MAX, 4}, {0, 0, 4}, "the largest array allowed"},
  };
  for (const Case& c : cases) {
    auto v = MakeViewLayout(*base, Req(c.offset, c.shape, c.strides), kMaxBytes);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(v.status().message().find(c.message), std::string::npos) << c.name << ": " << v.status();
  }
  // An array dtype (a descriptor in client bytes) is refused.
  std::vector<int64_t> shape = {1}, strides = {64};
  auto arr = MakeViewLayout(*base,
                            Req(0, shape, strides, types::TypeTable::Global().Array(types::Scalar(ScalarKind::kFloat32), 1)),
                            kMaxBytes);
  EXPECT_EQ(arr.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpd::runtime
