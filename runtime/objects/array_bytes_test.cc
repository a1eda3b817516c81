#include "runtime/objects/array_bytes.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array_view.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;

// Views of one int32 array of 4*5*6*7 elements holding 0, 1, 2, ..., each
// checked against an element-by-element walk of its strides.
class ArrayBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {4, 5, 6, 7});
    ASSERT_TRUE(layout.ok());
    auto buf = pool_.Allocate(layout->size_bytes, "t");
    ASSERT_TRUE(buf.ok());
    base_ = std::make_shared<Array>("cpu", *layout, *buf);
    Reset();
  }

  void Reset() {
    auto* p = reinterpret_cast<int32_t*>(base_->data());
    for (uint64_t i = 0; i < base_->layout().num_elements; ++i) p[i] = static_cast<int32_t>(i);
  }

  std::shared_ptr<const Array> View(uint64_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides,
                                    types::TypeRef dtype = nullptr) {
    ViewRequest request;
    request.offset_bytes = offset;
    request.shape = shape;
    request.strides = strides;
    request.dtype = dtype;
    auto v = MakeViewLayout(*base_, request, uint64_t{1} << 30);
    EXPECT_TRUE(v.ok()) << v.status();
    return std::make_shared<Array>("cpu", v->layout, base_->buffer(), v->byte_offset);
  }

  // The addresses of a view's elements in row-major order.
  static std::vector<std::byte*> Elements(const Array& a) {
    std::vector<std::byte*> out;
    const ArrayLayout& l = a.layout();
    int64_t ext[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 0};
    for (int d = 0; d < l.ndim; ++d) {
      ext[d] = l.shape[d];
      st[d] = l.strides[d];
    }
    for (int64_t i = 0; i < ext[0]; ++i)
      for (int64_t j = 0; j < ext[1]; ++j)
        for (int64_t k = 0; k < ext[2]; ++k)
          for (int64_t m = 0; m < ext[3]; ++m)
            out.push_back(a.data() + i * st[0] + j * st[1] + k * st[2] + m * st[3]);
    return out;
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  std::shared_ptr<const Array> base_;
};

struct ViewCase {
  const char* name;
  uint64_t offset;
  std::vector<int64_t> shape, strides;
};

// Element strides of the (4, 5, 6, 7) base: 840, 168, 28, 4 bytes.
const std::vector<ViewCase>& Cases() {
  static const std::vector<ViewCase> cases = {
      {"whole", 0, {4, 5, 6, 7}, {840, 168, 28, 4}},
      {"row", 840, {5, 6, 7}, {168, 28, 4}},
      {"rows 1:3", 840, {2, 5, 6, 7}, {840, 168, 28, 4}},
      {"last axis column", 8, {4, 5, 6}, {840, 168, 28}},
      {"inner slice", 4, {4, 5, 6, 3}, {840, 168, 28, 4}},
      {"step 2", 0, {2, 5, 3, 4}, {1680, 168, 56, 8}},
      {"transposed", 0, {7, 6, 5, 4}, {4, 28, 168, 840}},
      {"partly transposed", 0, {4, 6, 5, 7}, {840, 28, 168, 4}},
      {"broadcast", 4, {3, 10}, {0, 4}},
      {"flat", 0, {840}, {4}},
      {"extent-1 dims with odd strides", 28, {1, 6, 1}, {4000, 4, 12}},
  };
  return cases;
}

TEST_F(ArrayBytesTest, ReadGathersInRowMajorOrder) {
  for (const ViewCase& c : Cases()) {
    auto v = View(c.offset, c.shape, c.strides);
    std::vector<std::byte*> elems = Elements(*v);
    ASSERT_EQ(elems.size() * 4, v->size_bytes()) << c.name;
    std::vector<int32_t> want;
    for (std::byte* p : elems) want.push_back(*reinterpret_cast<int32_t*>(p));
    std::vector<int32_t> got(elems.size());
    ReadArrayBytes(*v, 0, v->size_bytes(), reinterpret_cast<std::byte*>(got.data()));
    EXPECT_EQ(got, want) << c.name;
    // Every sub-range, including ones that start and end inside an element.
    std::mt19937 rng(7);
    const auto* want_bytes = reinterpret_cast<const std::byte*>(want.data());
    for (int t = 0; t < 50; ++t) {
      uint64_t a = rng() % (v->size_bytes() + 1), b = rng() % (v->size_bytes() + 1);
      if (a > b) std::swap(a, b);
      std::vector<std::byte> part(b - a);
      ReadArrayBytes(*v, a, b - a, part.data());
      if (b > a) EXPECT_EQ(std::memcmp(part.data(), want_bytes + a, b - a), 0) << c.name << " [" << a << ", " << b << ")";
    }
  }
}

TEST_F(ArrayBytesTest, WriteScattersAndTouchesNothingElse) {
  for (const ViewCase& c : Cases()) {
    if (c.strides[0] == 0) continue;  // overlapping elements: the last write wins
    Reset();
    auto v = View(c.offset, c.shape, c.strides);
    std::vector<std::byte*> elems = Elements(*v);
    std::vector<int32_t> values(elems.size());
    for (size_t i = 0; i < values.size(); ++i) values[i] = -1 - static_cast<int32_t>(i);
    // In two pieces split inside an element.
    const uint64_t split = values.size() > 1 ? 6 : 2;
    const auto* in = reinterpret_cast<const std::byte*>(values.data());
    WriteArrayBytes(*v, 0, in, split);
    WriteArrayBytes(*v, split, in + split, v->size_bytes() - split);
    std::vector<int32_t> expect(base_->layout().num_elements);
    for (size_t i = 0; i < expect.size(); ++i) expect[i] = static_cast<int32_t>(i);
    for (size_t i = 0; i < elems.size(); ++i) {
      expect[(elems[i] - base_->data()) / 4] = values[i];
    }
    const auto* now = reinterpret_cast<const int32_t*>(base_->data());
    EXPECT_EQ(std::vector<int32_t>(now, now + expect.size()), expect) << c.name;
  }
}

TEST_F(ArrayBytesTest, FillWritesEveryElementOnly) {
  for (const ViewCase& c : Cases()) {
    Reset();
    auto v = View(c.offset, c.shape, c.strides);
    const int32_t value = 0x01020304;
    FillArrayElements(*v, std::string_view(reinterpret_cast<const char*>(&value), 4));
    std::vector<int32_t> expect(base_->layout().num_elements);
    for (size_t i = 0; i < expect.size(); ++i) expect[i] = static_cast<int32_t>(i);
    for (std::byte* p : Elements(*v)) expect[(p - base_->data()) / 4] = value;
    const auto* now = reinterpret_cast<const int32_t*>(base_->data());
    EXPECT_EQ(std::vector<int32_t>(now, now + expect.size()), expect) << c.name;
  }
}

TEST_F(ArrayBytesTest, CopyBetweenStridedViews) {
  // The transpose of the (0, :, :, 0) plane into the (1, :, :, 1) plane's transpose, and back.
  auto src = View(0, {5, 6}, {168, 28});
  auto dst = View(840 + 4, {5, 6}, {168, 28});
  auto dst_t = View(840 + 4, {6, 5}, {28, 168});
  auto src_t = View(0, {6, 5}, {28, 168});
  CopyArrayElements(*dst_t, *src_t);
  std::vector<int32_t> a(30), b(30);
  ReadArrayBytes(*src, 0, 120, reinterpret_cast<std::byte*>(a.data()));
  ReadArrayBytes(*dst, 0, 120, reinterpret_cast<std::byte*>(b.data()));
  EXPECT_EQ(a, b);
  // A contiguous destination from a strided source, and the reverse.
  auto flat = View(3000, {30}, {4});
  CopyArrayElements(*flat, *src_t);
  std::vector<int32_t> c(30), d(30);
  ReadArrayBytes(*flat, 0, 120, reinterpret_cast<std::byte*>(c.data()));
  ReadArrayBytes(*src_t, 0, 120, reinterpret_cast<std::byte*>(d.data()));
  EXPECT_EQ(c, d);
  Reset();
  auto col = View(8, {30}, {28});
  CopyArrayElements(*col, *flat);
  ReadArrayBytes(*col, 0, 120, reinterpret_cast<std::byte*>(c.data()));
  for (int i = 0; i < 30; ++i) EXPECT_EQ(c[i], 750 + i);
}

TEST_F(ArrayBytesTest, StridedCopiesAndFillsStopWhenCancelled) {
  // 100,000 single-element runs (a zero stride): checked every few thousand.
  auto broadcast = View(4, {100000}, {0});
  auto column = View(8, {120}, {28});
  std::atomic<bool> cancel{true};
  EXPECT_FALSE(FillArrayElements(*broadcast, "abcd", &cancel));
  EXPECT_FALSE(CopyArrayElements(*View(0, {100000}, {0}), *broadcast, &cancel));
  // Fewer runs than one check: done before the flag is looked at.
  EXPECT_TRUE(FillArrayElements(*column, "abcd", &cancel));
  // Contiguous arrays are one memory operation.
  EXPECT_TRUE(CopyArrayElements(*View(0, {100}, {4}), *View(400, {100}, {4}), &cancel));
  std::atomic<bool> go{false};
  EXPECT_TRUE(FillArrayElements(*broadcast, "abcd", &go));
  EXPECT_EQ(std::memcmp(base_->data() + 4, "abcd", 4), 0);
}

TEST_F(ArrayBytesTest, EmptyViewsDoNothing) {
  auto v = View(base_->size_bytes(), {0, 3}, {12, 4});
  FillArrayElements(*v, "abcd");
  CopyArrayElements(*v, *v);
  ReadArrayBytes(*v, 0, 0, nullptr);
  EXPECT_EQ(*reinterpret_cast<int32_t*>(base_->data() + 4), 1);
}

}  // namespace
}  // namespace warpd::runtime
