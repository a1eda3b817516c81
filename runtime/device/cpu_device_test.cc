// CpuDevice's data movement (device.h): Upload, Download, Copy and Fill over
// contiguous arrays and strided views, checked against an element-by-element
// model of the views; zero sizes; errors as statuses.
#include "runtime/device/cpu_device.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"
#include "runtime/objects/testing/views.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;

class CpuDeviceBytesTest : public ::testing::Test {
 protected:
  // A (6, 10) int32 array holding its byte index in every byte (mod 251).
  std::shared_ptr<const Array> Base(std::vector<int64_t> shape = {6, 10}) {
    auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), shape);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = device_.Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    auto a = std::make_shared<Array>("cpu", *layout, *buf);
    for (uint64_t i = 0; i < a->size_bytes(); ++i) a->data()[i] = std::byte(i % 251);
    return a;
  }

  static std::shared_ptr<const Array> View(const std::shared_ptr<const Array>& base, uint64_t offset,
                                           std::vector<int64_t> shape, std::vector<int64_t> strides) {
    return testing::ViewOf(base, offset, std::move(shape), std::move(strides));
  }

  // The addresses of an array's logical bytes, in order (2-D arrays only).
  static std::vector<std::byte*> LogicalBytes(const Array& a) {
    std::vector<std::byte*> out;
    const ArrayLayout& l = a.layout();
    const int64_t rows = l.ndim == 2 ? l.shape[0] : 1, cols = l.ndim == 2 ? l.shape[1] : l.shape[0];
    const int64_t rs = l.ndim == 2 ? l.strides[0] : 0, cs = l.ndim == 2 ? l.strides[1] : l.strides[0];
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        for (uint64_t b = 0; b < l.dtype->size(); ++b) out.push_back(a.data() + i * rs + j * cs + b);
    return out;
  }

  // The arrays every test runs over: contiguous, a column pair, a strided
  // sub-block, a transposed view.
  std::vector<std::shared_ptr<const Array>> Shapes(const std::shared_ptr<const Array>& base) {
    return {base, View(base, 4, {6, 2}, {40, 4}), View(base, 44, {2, 3}, {80, 12}), View(base, 0, {10, 6}, {4, 40})};
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  CpuDevice device_{2};
};

TEST_F(CpuDeviceBytesTest, UploadAndDownloadRanges) {
  for (int which = 0; which < 4; ++which) {
    auto base = Base();
    auto a = Shapes(base)[which];
    const std::vector<std::byte*> logical = LogicalBytes(*a);
    ASSERT_EQ(logical.size(), a->size_bytes());
    // Every range [begin, end) in steps of 7 bytes, unaligned to elements.
    for (uint64_t begin = 0; begin <= a->size_bytes(); begin += 7) {
      for (uint64_t end = begin; end <= a->size_bytes(); end += 11) {
        std::vector<std::byte> got(end - begin, std::byte{0xEE});
        ASSERT_TRUE(device_.Download(*a, begin, absl::MakeSpan(got)).ok());
        for (uint64_t i = begin; i < end; ++i) ASSERT_EQ(got[i - begin], *logical[i]) << which << " " << i;
      }
    }
    std::vector<std::byte> in(a->size_bytes());
    for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(255 - i % 256);
    const uint64_t split = a->size_bytes() / 3 + 1;
    ASSERT_TRUE(device_.Upload(*a, 0, absl::MakeConstSpan(in).subspan(0, split)).ok());
    ASSERT_TRUE(device_.Upload(*a, split, absl::MakeConstSpan(in).subspan(split)).ok());
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(*logical[i], in[i]) << which << " " << i;
  }
}

TEST_F(CpuDeviceBytesTest, CopiesRangesBetweenStridedViews) {
  for (int d = 0; d < 4; ++d) {
    for (int s = 0; s < 4; ++s) {
      auto dst_base = Base(), src_base = Base();
      // Distinct source bytes, so a misplaced byte shows.
      for (uint64_t i = 0; i < src_base->size_bytes(); ++i) src_base->data()[i] = std::byte(100 + i % 97);
      auto dst = Shapes(dst_base)[d], src = Shapes(src_base)[s];
      const uint64_t n = std::min(dst->size_bytes(), src->size_bytes()) - 8;
      const std::vector<std::byte*> dl = LogicalBytes(*dst), sl = LogicalBytes(*src);
      std::vector<std::byte> before(dl.size());
      for (size_t i = 0; i < dl.size(); ++i) before[i] = *dl[i];
      ASSERT_TRUE(device_.CopyRange(*dst, 3, *src, 5, n).ok());
      for (size_t i = 0; i < dl.size(); ++i) {
        const std::byte want = i >= 3 && i < 3 + n ? *sl[i - 3 + 5] : before[i];
        ASSERT_EQ(*dl[i], want) << d << " " << s << " " << i;
      }
    }
  }
}

TEST_F(CpuDeviceBytesTest, ContiguousCopiesMayOverlap) {
  auto a = Base();
  std::vector<std::byte> want(a->data(), a->data() + a->size_bytes());
  std::memmove(want.data() + 4, want.data(), 100);
  ASSERT_TRUE(device_.CopyRange(*a, 4, *a, 0, 100).ok());
  EXPECT_EQ(0, std::memcmp(want.data(), a->data(), want.size()));
}

TEST_F(CpuDeviceBytesTest, FillsWithPatternsOfSeveralSizes) {
  const std::string patterns[] = {std::string(1, '\x5a'), std::string(4, '\0'), "ab", "abcd", "abcdefgh",
                                  "0123456789ab"};
  for (const std::string& pattern : patterns) {
    for (int which = 0; which < 4; ++which) {
      auto a = Shapes(Base())[which];
      const std::vector<std::byte*> logical = LogicalBytes(*a);
      std::vector<std::byte> before(logical.size());
      for (size_t i = 0; i < logical.size(); ++i) before[i] = *logical[i];
      const uint64_t psize = pattern.size();
      // A range starting off the pattern grid, its length whole patterns.
      const uint64_t offset = 4, n = (a->size_bytes() - offset) / psize * psize;
      ASSERT_TRUE(device_.FillRange(*a, offset, n, pattern).ok()) << pattern;
      for (size_t i = 0; i < logical.size(); ++i) {
        const std::byte want =
            i >= offset && i < offset + n ? std::byte(pattern[(i - offset) % psize]) : before[i];
        ASSERT_EQ(*logical[i], want) << pattern << " " << which << " " << i;
      }
    }
  }
}

TEST_F(CpuDeviceBytesTest, ZeroSizes) {
  auto empty = Base({0, 10});
  EXPECT_TRUE(device_.Upload(*empty, 0, {}).ok());
  EXPECT_TRUE(device_.Download(*empty, 0, {}).ok());
  EXPECT_TRUE(device_.CopyRange(*empty, 0, *empty, 0, 0).ok());
  EXPECT_TRUE(device_.FillRange(*empty, 0, 0, "abcd").ok());
  auto a = Base();
  std::vector<std::byte> before(a->data(), a->data() + a->size_bytes());
  EXPECT_TRUE(device_.Upload(*a, a->size_bytes(), {}).ok());
  EXPECT_TRUE(device_.CopyRange(*a, 8, *a, 0, 0).ok());
  EXPECT_TRUE(device_.FillRange(*a, 8, 0, "").ok());
  EXPECT_EQ(0, std::memcmp(before.data(), a->data(), before.size()));
}

TEST_F(CpuDeviceBytesTest, ErrorsAreStatusesAndMoveNothing) {
  auto a = Base();  // 240 bytes
  const std::vector<std::byte> before(a->data(), a->data() + a->size_bytes());
  std::vector<std::byte> buf(16);
  EXPECT_EQ(device_.Download(*a, 230, absl::MakeSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.Upload(*a, 241, absl::MakeConstSpan(buf).subspan(0, 0)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.Upload(*a, 230, absl::MakeConstSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.Upload(*a, ~uint64_t{0} - 4, absl::MakeConstSpan(buf)).code(),
            absl::StatusCode::kOutOfRange);  // the end overflows
  EXPECT_EQ(device_.CopyRange(*a, 0, *a, 200, 41).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.CopyRange(*a, 200, *a, 0, 41).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.FillRange(*a, 0, 244, "abcd").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_.FillRange(*a, 0, 10, "abcd").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device_.FillRange(*a, 0, 8, "").code(), absl::StatusCode::kInvalidArgument);
  auto elsewhere = std::make_shared<Array>("cuda:0", a->layout(), a->buffer());
  EXPECT_EQ(device_.Download(*elsewhere, 0, absl::MakeSpan(buf)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device_.CopyRange(*a, 0, *elsewhere, 0, 4).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(0, std::memcmp(before.data(), a->data(), before.size()));
}

TEST_F(CpuDeviceBytesTest, CancelledCopiesAndFillsStop) {
  // A broadcast view of 100000 single-element runs: long enough to see the flag.
  auto base = Base();
  auto broadcast = View(base, 0, {1000, 100}, {0, 0});
  auto column = View(base, 0, {6}, {40});
  std::atomic<bool> cancel{true};
  EXPECT_EQ(device_.FillRange(*broadcast, 0, broadcast->size_bytes(), "abcd", &cancel).code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(device_.CopyRange(*broadcast, 0, *broadcast, 0, broadcast->size_bytes(), &cancel).code(),
            absl::StatusCode::kCancelled);
  // Short walks finish before they look.
  EXPECT_TRUE(device_.FillRange(*column, 0, column->size_bytes(), "abcd", &cancel).ok());
  std::atomic<bool> go{false};
  EXPECT_TRUE(device_.FillRange(*broadcast, 0, broadcast->size_bytes(), "abcd", &go).ok());
}

}  // namespace
}  // namespace warpd::runtime
