#include "runtime/exec/matmul_operands.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/exec/command.h"

namespace warpd::runtime {

using types::ScalarKind;

absl::StatusOr<MatmulShape> CheckMatmul(const Array* a, const Array* b, const Array* c, const Array* d, double beta,
                                        const std::string& device) {
  if (a == nullptr || b == nullptr || d == nullptr) return absl::InvalidArgumentError("matmul: a, b and d are required");
  const std::pair<const char*, const Array*> operands[] = {{"A", a}, {"B", b}, {"C", c}, {"D", d}};
  for (const auto& [name, x] : operands) {
    if (x == nullptr) continue;
    if (absl::Status s = CheckArrayDevice(*x, device, absl::StrCat("matmul operand ", name)); !s.ok()) return s;
  }
  // dtypes: one float scalar type for all.
  types::TypeRef dtype = a->dtype();
  if (!dtype->is_scalar() || !(dtype->scalar() == ScalarKind::kFloat16 || dtype->scalar() == ScalarKind::kFloat32 ||
                               dtype->scalar() == ScalarKind::kFloat64)) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: unsupported dtype ", dtype->ToString(),
                                                   " (float16, float32 and float64 arrays only)"));
  }
  for (const auto& [name, x] : operands) {
    if (x != nullptr && !types::SameType(x->dtype(), dtype)) {
      return absl::InvalidArgumentError(absl::StrCat("matmul: A, B, C and D must have one dtype: A is ",
                                                     dtype->ToString(), ", ", name, " is ", x->dtype()->ToString()));
    }
  }
  // Shapes.
  const int ndim = a->ndim();
  const std::string shapes = absl::StrCat("A = ", FormatShape(a->shape()), " B = ", FormatShape(b->shape()),
                                          c ? absl::StrCat(" C = ", FormatShape(c->shape())) : std::string(),
                                          " D = ", FormatShape(d->shape()));
  if ((ndim != 2 && ndim != 3) || b->ndim() != ndim || d->ndim() != ndim || (c && c->ndim() != ndim)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul: the matrices must all be 2-D (or all 3-D batches): ", shapes));
  }
  MatmulShape p;
  p.kind = dtype->scalar();
  p.elem = static_cast<int64_t>(dtype->size());
  p.batch = ndim == 3 ? a->shape()[0] : 1;
  p.m = a->shape()[ndim - 2];
  p.k = a->shape()[ndim - 1];
  p.n = b->shape()[ndim - 1];
  auto expect = [&](const Array& x, int64_t rows, int64_t cols) {
    if (ndim == 3 && x.shape()[0] != p.batch) return false;
    return x.shape()[ndim - 2] == rows && x.shape()[ndim - 1] == cols;
  };
  if (!expect(*b, p.k, p.n) || !expect(*d, p.m, p.n) || (c && !expect(*c, p.m, p.n))) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: invalid shapes for matrices: ", shapes));
  }
  p.has_c = c != nullptr && beta != 0.0;
  return p;
}

MatrixView ViewOf(const Array& x) {
  MatrixView v;
  v.base = x.data();
  const int first = x.ndim() - 2;  // 0 for a matrix, 1 for a batch
  v.batch_stride = first == 1 ? x.strides()[0] : 0;
  v.row_stride = x.strides()[first];
  v.col_stride = x.strides()[first + 1];
  v.rows = x.shape()[first];
  v.cols = x.shape()[first + 1];
  return v;
}

MatrixView PackedView(std::byte* buffer, int64_t rows, int64_t cols, int64_t elem) {
  MatrixView v;
  v.base = buffer;
  v.col_stride = elem;
  v.row_stride = cols * elem;
  v.batch_stride = rows * cols * elem;
  v.rows = rows;
  v.cols = cols;
  return v;
}

std::optional<BlasForm> FormOf(const MatrixView& m, int64_t elem, uint64_t base) {
  if (base % static_cast<uint64_t>(elem) != 0 || m.batch_stride % elem != 0) return std::nullopt;
  auto leading = [&](int64_t stride, int64_t extent) -> std::optional<int> {
    if (stride % elem != 0) return std::nullopt;
    const int64_t ld = stride / elem;
    if (ld < std::max<int64_t>(1, extent) || ld > INT_MAX) return std::nullopt;
    return static_cast<int>(ld);
  };
  if (m.col_stride == elem || m.cols <= 1) {
    if (m.rows <= 1) return BlasForm{false, static_cast<int>(std::max<int64_t>(1, m.cols))};
    if (auto ld = leading(m.row_stride, m.cols)) return BlasForm{false, *ld};
  }
  if (m.row_stride == elem || m.rows <= 1) {
    if (m.cols <= 1) return BlasForm{true, static_cast<int>(std::max<int64_t>(1, m.rows))};
    if (auto ld = leading(m.col_stride, m.rows)) return BlasForm{true, *ld};
  }
  return std::nullopt;
}

namespace {

// The bytes an array's elements span in memory: [first, last).
struct ByteRange {
  uintptr_t first = 0, last = 0;
};

ByteRange RangeOf(const Array& x) {
  if (x.layout().num_elements == 0) return {};
  uintptr_t first = static_cast<uintptr_t>(x.address());
  uintptr_t span = x.dtype()->size();
  for (int i = 0; i < x.ndim(); ++i) span += static_cast<uintptr_t>((x.shape()[i] - 1) * x.strides()[i]);
  return {first, first + span};
}

}  // namespace

bool Overlap(const Array& x, const Array& y) {
  const ByteRange a = RangeOf(x), b = RangeOf(y);
  return a.first < a.last && b.first < b.last && a.first < b.last && b.first < a.last;
}

bool SameElements(const Array& x, const Array& y) {
  if (x.address() != y.address() || x.ndim() != y.ndim()) return false;
  for (int i = 0; i < x.ndim(); ++i) {
    if (x.shape()[i] != y.shape()[i]) return false;
    if (x.shape()[i] > 1 && x.strides()[i] != y.strides()[i]) return false;
  }
  return true;
}

}  // namespace warpd::runtime
