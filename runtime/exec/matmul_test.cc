#include "runtime/exec/matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/objects/array_view.h"
#include "warpd/native/core.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;

// How an operand lies in memory.
enum class Layout {
  kRowMajor,    // a plain array
  kColMajor,    // the transpose of a plain array (Warp's a.transpose())
  kPadded,      // rows of a wider array (a[:, :cols] of a (rows, cols + 3) array)
  kStrided,     // every other column of a wider array: the BLAS cannot address it
  kBroadcast,   // row stride 0: every row is the same memory
};

const char* Name(Layout l) {
  switch (l) {
    case Layout::kRowMajor: return "row";
    case Layout::kColMajor: return "col";
    case Layout::kPadded: return "padded";
    case Layout::kStrided: return "strided";
    case Layout::kBroadcast: return "broadcast";
  }
  return "?";
}

class MatmulTest : public ::testing::Test {
 protected:
  // A view of `rows` x `cols` (times `batch` when batch > 0: a 3-D array)
  // laid out as `layout` over a fresh buffer filled with small random values.
  std::shared_ptr<const Array> Make(ScalarKind kind, int64_t batch, int64_t rows, int64_t cols, Layout layout) {
    const types::TypeRef dtype = types::Scalar(kind);
    const int64_t e = static_cast<int64_t>(types::ScalarSize(kind));
    const int64_t items = std::max<int64_t>(batch, 1);
    int64_t row_stride = cols * e, col_stride = e, item_bytes = rows * cols * e;
    switch (layout) {
      case Layout::kRowMajor: break;
      case Layout::kColMajor: col_stride = rows * e; row_stride = e; break;
      case Layout::kPadded: row_stride = (cols + 3) * e; item_bytes = rows * (cols + 3) * e; break;
      case Layout::kStrided: col_stride = 2 * e; row_stride = 2 * cols * e; item_bytes = rows * cols * 2 * e; break;
      case Layout::kBroadcast: row_stride = 0; item_bytes = cols * e; break;
    }
    const int64_t total = std::max<int64_t>(items * item_bytes, e);
    auto base_layout = MakeArrayLayout(dtype, {total / e});
    EXPECT_TRUE(base_layout.ok()) << base_layout.status();
    auto buffer = pool_.Allocate(base_layout->size_bytes, "test");
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    auto base = std::make_shared<Array>("cpu", *base_layout, *buffer);
    for (int64_t i = 0; i < total / e; ++i) Set(*base, i * e, kind, Random());
    std::vector<int64_t> shape = {rows, cols}, strides = {row_stride, col_stride};
    if (batch > 0) {
      shape.insert(shape.begin(), batch);
      strides.insert(strides.begin(), item_bytes);
    }
    ViewRequest req;
    req.shape = shape;
    req.strides = strides;
    auto placed = MakeViewLayout(*base, req, uint64_t{1} << 40);
    EXPECT_TRUE(placed.ok()) << placed.status();
    return std::make_shared<Array>("cpu", placed->layout, base->buffer(), placed->byte_offset);
  }

  double Random() { return std::uniform_int_distribution<int>(-8, 8)(rng_) * 0.25; }

  static double Get(const Array& x, int64_t offset, ScalarKind kind) {
    const std::byte* p = x.data() + offset;
    switch (kind) {
      case ScalarKind::kFloat16: { wp::half h; std::memcpy(&h, p, 2); return wp::half_to_float(h); }
      case ScalarKind::kFloat32: { float f; std::memcpy(&f, p, 4); return f; }
      default: { double d; std::memcpy(&d, p, 8); return d; }
    }
  }
  static void Set(const Array& x, int64_t offset, ScalarKind kind, double v) {
    std::byte* p = x.data() + offset;
    switch (kind) {
      case ScalarKind::kFloat16: { wp::half h = wp::float_to_half(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      case ScalarKind::kFloat32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      default: std::memcpy(p, &v, 8); break;
    }
  }
  // Element (item, r, c) of a 2-D or 3-D array.
  static int64_t Offset(const Array& x, int64_t item, int64_t r, int64_t c) {
    const int f = x.ndim() - 2;
    return (f ? item * x.strides()[0] : 0) + r * x.strides()[f] + c * x.strides()[f + 1];
  }
  // All elements, item by item, row-major.
  static std::vector<double> Values(const Array& x, ScalarKind kind) {
    const int f = x.ndim() - 2;
    const int64_t items = f ? x.shape()[0] : 1;
    std::vector<double> out;
    for (int64_t i = 0; i < items; ++i) {
      for (int64_t r = 0; r < x.shape()[f]; ++r) {
        for (int64_t c = 0; c < x.shape()[f + 1]; ++c) out.push_back(Get(x, Offset(x, i, r, c), kind));
      }
    }
    return out;
  }

  // alpha * A @ B + beta * C by the naive triple loop, in double, from the
  // values read before the command ran.
  static std::vector<double> Reference(const std::vector<double>& a, const std::vector<double>& b,
                                       const std::vector<double>* c, int64_t items, int64_t m, int64_t k, int64_t n,
                                       double alpha, double beta) {
    std::vector<double> d(items * m * n);
    for (int64_t i = 0; i < items; ++i) {
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t col = 0; col < n; ++col) {
          double sum = 0;
          for (int64_t x = 0; x < k; ++x) sum += a[(i * m + r) * k + x] * b[(i * k + x) * n + col];
          double v = alpha * sum;
          if (c != nullptr && beta != 0) v += beta * (*c)[(i * m + r) * n + col];
          d[(i * m + r) * n + col] = v;
        }
      }
    }
    return d;
  }

  absl::Status Run(std::shared_ptr<const Array> a, std::shared_ptr<const Array> b, std::shared_ptr<const Array> c,
                   std::shared_ptr<const Array> d, double alpha, double beta, Device* device = nullptr) {
    auto cmd = PrepareMatmul(std::move(a), std::move(b), std::move(c), std::move(d), alpha, beta, "cpu", pool_);
    if (!cmd.ok()) return cmd.status();
    return (*cmd)->Execute(device ? *device : cpu_);
  }

  void Check(ScalarKind kind, int64_t batch, int64_t m, int64_t k, int64_t n, Layout la, Layout lb, Layout lc,
             Layout ld, double alpha, double beta, bool with_c = true) {
    SCOPED_TRACE(testing::Message() << ScalarName(kind) << " batch " << batch << " " << m << "x" << k << "x" << n
                                    << " A " << Name(la) << " B " << Name(lb) << " C " << Name(lc) << " D "
                                    << Name(ld) << " alpha " << alpha << " beta " << beta << " c " << with_c);
    auto a = Make(kind, batch, m, k, la), b = Make(kind, batch, k, n, lb);
    auto c = with_c ? Make(kind, batch, m, n, lc) : nullptr;
    auto d = Make(kind, batch, m, n, ld);
    const auto av = Values(*a, kind), bv = Values(*b, kind);
    const auto cv = c ? Values(*c, kind) : std::vector<double>();
    ASSERT_TRUE(Run(a, b, c, d, alpha, beta).ok());
    const auto want = Reference(av, bv, c ? &cv : nullptr, std::max<int64_t>(batch, 1), m, k, n, alpha, beta);
    const auto got = Values(*d, kind);
    ASSERT_EQ(got.size(), want.size());
    // Products of quarters are exact in every type; sums of up to a few
    // hundred of them too, in float32 and float64. Half rounds the result.
    for (size_t i = 0; i < want.size(); ++i) {
      const double tol = kind == ScalarKind::kFloat16 ? std::abs(want[i]) * 1e-3 + 1e-3 : 1e-9;
      ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
    }
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  CpuDevice cpu_{4};
  std::mt19937 rng_{1234};
};

TEST_F(MatmulTest, ShapesAgainstTripleLoop) {
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 5}, {5, 7, 1}, {1, 9, 1}, {9, 1, 9}, {3, 4, 5}, {64, 33, 17},
                               {300, 70, 220}};  // the last: several tiles
  for (ScalarKind kind : {ScalarKind::kFloat32, ScalarKind::kFloat64}) {
    for (const auto& s : shapes) {
      Check(kind, 0, s[0], s[1], s[2], Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor,
            1.0, 0.0);
      Check(kind, 0, s[0], s[1], s[2], Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor,
            -1.5, 0.5);
    }
  }
}

TEST_F(MatmulTest, EveryLayoutOfEveryOperand) {
  const Layout all[] = {Layout::kRowMajor, Layout::kColMajor, Layout::kPadded, Layout::kStrided};
  for (ScalarKind kind : {ScalarKind::kFloat32, ScalarKind::kFloat64}) {
    for (Layout la : all) {
      for (Layout lb : all) {
        for (Layout ld : all) {
          Check(kind, 0, 6, 5, 7, la, lb, Layout::kStrided, ld, 2.0, -0.5);
          Check(kind, 0, 1, 5, 7, la, lb, Layout::kColMajor, ld, 0.5, 1.0);
          Check(kind, 0, 6, 5, 1, la, lb, Layout::kRowMajor, ld, 1.0, 1.0);
        }
      }
    }
  }
  // A broadcast operand (row stride 0) is packed.
  Check(ScalarKind::kFloat32, 0, 5, 4, 3, Layout::kBroadcast, Layout::kRowMajor, Layout::kBroadcast,
        Layout::kRowMajor, 1.0, 1.0);
}

TEST_F(MatmulTest, Float16GoesThroughFloat32) {
  for (Layout l : {Layout::kRowMajor, Layout::kColMajor, Layout::kStrided}) {
    Check(ScalarKind::kFloat16, 0, 8, 16, 4, l, Layout::kRowMajor, l, Layout::kRowMajor, 1.0, 1.0);
    Check(ScalarKind::kFloat16, 2, 3, 5, 2, Layout::kRowMajor, l, Layout::kRowMajor, l, 0.5, 0.0);
  }
}

TEST_F(MatmulTest, BatchesAndNoC) {
  for (ScalarKind kind : {ScalarKind::kFloat32, ScalarKind::kFloat64}) {
    Check(kind, 4, 16, 32, 8, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, 1.0, 1.0);
    Check(kind, 3, 2, 3, 4, Layout::kColMajor, Layout::kStrided, Layout::kPadded, Layout::kColMajor, 1.0, 2.0);
    Check(kind, 5, 4, 3, 2, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, 1.0, 1.0,
          /*with_c=*/false);
  }
}

TEST_F(MatmulTest, EmptyInnerDimensionGivesBetaC) {
  Check(ScalarKind::kFloat32, 0, 3, 0, 4, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor,
        Layout::kRowMajor, 1.0, 2.0);
  Check(ScalarKind::kFloat64, 0, 3, 0, 4, Layout::kRowMajor, Layout::kRowMajor, Layout::kStrided, Layout::kColMajor,
        1.0, 0.0);
  // Empty outputs do nothing.
  Check(ScalarKind::kFloat32, 0, 0, 3, 4, Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor,
        Layout::kRowMajor, 1.0, 1.0);
}

TEST_F(MatmulTest, InPlaceAccumulateIntoC) {
  // d is c: d <- alpha * a @ b + beta * d (the tape's adj_a += adj_d @ b^T).
  for (Layout l : {Layout::kRowMajor, Layout::kColMajor, Layout::kStrided}) {
    auto a = Make(ScalarKind::kFloat64, 0, 4, 3, Layout::kRowMajor);
    auto b = Make(ScalarKind::kFloat64, 0, 3, 5, Layout::kColMajor);
    auto d = Make(ScalarKind::kFloat64, 0, 4, 5, l);
    const auto av = Values(*a, ScalarKind::kFloat64), bv = Values(*b, ScalarKind::kFloat64);
    const auto dv = Values(*d, ScalarKind::kFloat64);
    ASSERT_TRUE(Run(a, b, d, d, 0.5, 1.0).ok());
    EXPECT_EQ(Values(*d, ScalarKind::kFloat64), Reference(av, bv, &dv, 1, 4, 3, 5, 0.5, 1.0)) << Name(l);
  }
}

TEST_F(MatmulTest, OutputOverlappingAnOperandReadsItFirst) {
  // d is a itself (square): the product must use a's values from before.
  auto a = Make(ScalarKind::kFloat32, 0, 6, 6, Layout::kRowMajor);
  auto b = Make(ScalarKind::kFloat32, 0, 6, 6, Layout::kRowMajor);
  const auto av = Values(*a, ScalarKind::kFloat32), bv = Values(*b, ScalarKind::kFloat32);
  ASSERT_TRUE(Run(a, b, nullptr, a, 1.0, 0.0).ok());
  EXPECT_EQ(Values(*a, ScalarKind::kFloat32), Reference(av, bv, nullptr, 1, 6, 6, 6, 1.0, 0.0));
  // d is b's transpose view: same memory, another layout.
  auto x = Make(ScalarKind::kFloat64, 0, 5, 5, Layout::kRowMajor);
  auto y = Make(ScalarKind::kFloat64, 0, 5, 5, Layout::kRowMajor);
  std::vector<int64_t> shape = {5, 5}, strides = {8, 40};
  ViewRequest req;
  req.shape = shape;
  req.strides = strides;
  auto placed = MakeViewLayout(*y, req, 1 << 20);
  ASSERT_TRUE(placed.ok());
  auto yt = std::make_shared<Array>("cpu", placed->layout, y->buffer(), placed->byte_offset);
  const auto xv = Values(*x, ScalarKind::kFloat64), yv = Values(*y, ScalarKind::kFloat64);
  const auto ytv = Values(*yt, ScalarKind::kFloat64);
  ASSERT_TRUE(Run(x, y, yt, yt, 2.0, 1.0).ok());  // c is d (yt): in place, but d overlaps b (y)
  EXPECT_EQ(Values(*yt, ScalarKind::kFloat64), Reference(xv, yv, &ytv, 1, 5, 5, 5, 2.0, 1.0));
}

TEST_F(MatmulTest, CapturedCommandRunsAgainWithNewValues) {
  auto a = Make(ScalarKind::kFloat32, 0, 3, 3, Layout::kRowMajor);
  auto b = Make(ScalarKind::kFloat32, 0, 3, 3, Layout::kRowMajor);
  auto d = Make(ScalarKind::kFloat32, 0, 3, 3, Layout::kRowMajor);
  auto cmd = PrepareMatmul(a, b, nullptr, d, 1.0, 0.0, "cpu", pool_);
  ASSERT_TRUE(cmd.ok());
  ASSERT_TRUE((*cmd)->Execute(cpu_).ok());
  for (int64_t i = 0; i < 9; ++i) Set(*a, i * 4, ScalarKind::kFloat32, i == 0 || i == 4 || i == 8 ? 1.0 : 0.0);
  (*cmd)->Rearm();
  ASSERT_TRUE((*cmd)->Execute(cpu_).ok());
  EXPECT_EQ(Values(*d, ScalarKind::kFloat32), Values(*b, ScalarKind::kFloat32));  // I @ b
}

TEST_F(MatmulTest, CancelAndTimeLimitStopIt) {
  auto a = Make(ScalarKind::kFloat32, 0, 256, 256, Layout::kRowMajor);
  auto b = Make(ScalarKind::kFloat32, 0, 256, 256, Layout::kRowMajor);
  auto d = Make(ScalarKind::kFloat32, 0, 256, 256, Layout::kRowMajor);
  auto cmd = PrepareMatmul(a, b, nullptr, d, 1.0, 0.0, "cpu", pool_);
  ASSERT_TRUE(cmd.ok());
  (*cmd)->Cancel();
  EXPECT_EQ((*cmd)->Execute(cpu_).code(), absl::StatusCode::kCancelled);
  (*cmd)->Rearm();
  EXPECT_TRUE((*cmd)->Execute(cpu_).ok());
  CpuDevice limited(2, absl::Nanoseconds(1));
  absl::Status s = (*cmd)->Execute(limited);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("launch time limit"), std::string::npos) << s;
}

TEST_F(MatmulTest, BadOperandsAreInvalidArgument) {
  auto f32 = [&](int64_t r, int64_t c) { return Make(ScalarKind::kFloat32, 0, r, c, Layout::kRowMajor); };
  auto expect_invalid = [&](absl::Status s, const char* words) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(words), std::string::npos) << s;
  };
  expect_invalid(Run(f32(2, 3), f32(4, 5), nullptr, f32(2, 5), 1, 0), "invalid shapes");
  expect_invalid(Run(f32(2, 3), f32(3, 5), f32(2, 4), f32(2, 5), 1, 1), "invalid shapes");
  expect_invalid(Run(f32(2, 3), f32(3, 5), nullptr, f32(5, 2), 1, 0), "invalid shapes");
  auto f64 = Make(ScalarKind::kFloat64, 0, 3, 5, Layout::kRowMajor);
  expect_invalid(Run(f32(2, 3), f64, nullptr, f32(2, 5), 1, 0), "one dtype");
  auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {2, 2});
  ASSERT_TRUE(layout.ok());
  auto ints = std::make_shared<Array>("cpu", *layout, *pool_.Allocate(layout->size_bytes, "test"));
  expect_invalid(Run(ints, ints, nullptr, ints, 1, 0), "unsupported dtype");
  auto batch = Make(ScalarKind::kFloat32, 2, 2, 2, Layout::kRowMajor);
  expect_invalid(Run(batch, f32(2, 2), nullptr, f32(2, 2), 1, 0), "2-D");
  auto batch3 = Make(ScalarKind::kFloat32, 3, 2, 2, Layout::kRowMajor);
  expect_invalid(Run(batch, batch3, nullptr, batch, 1, 0), "invalid shapes");
  auto vec_layout = MakeArrayLayout(types::Scalar(ScalarKind::kFloat32), {4});
  auto vec = std::make_shared<Array>("cpu", *vec_layout, *pool_.Allocate(16, "test"));
  expect_invalid(Run(vec, vec, nullptr, vec, 1, 0), "2-D");
  auto other = std::make_shared<Array>("cuda:0", *vec_layout, *pool_.Allocate(16, "test"));
  expect_invalid(Run(f32(1, 1), f32(1, 1), nullptr, other, 1, 0), "device");
}

}  // namespace
}  // namespace warpd::runtime
