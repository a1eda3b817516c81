// warpd runtime: wp.matmul's operands, for both of its implementations (the
// host's BLAS in matmul.cc, a device's in matmul_device.cc): the checks of
// their devices, dtypes and shapes, each operand as a strided matrix view,
// the form a BLAS can address it in, and whether two operands share memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/types/type.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

// What CheckMatmul found: one float dtype, `batch` items (1 for 2-D
// operands) of a (m, k) @ b (k, n), and whether c is read (given, beta != 0).
struct MatmulShape {
  types::ScalarKind kind = types::ScalarKind::kFloat32;
  int64_t elem = 4;  // bytes per element
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool has_c = false;
};

// INVALID_ARGUMENT for missing a, b or d, an operand on another device than
// `device`, dtypes other than one of float16/32/64 for all, or shapes that
// do not multiply (2-D, or 3-D batches of one count).
absl::StatusOr<MatmulShape> CheckMatmul(const Array* a, const Array* b, const Array* c, const Array* d, double beta,
                                        const std::string& device);

// One matrix operand, as bytes: element (r, c) of batch item i lies at
// base + i * batch_stride + r * row_stride + c * col_stride.
struct MatrixView {
  std::byte* base = nullptr;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
  int64_t rows = 0, cols = 0;

  std::byte* At(int64_t item, int64_t r, int64_t c) const {
    return base + item * batch_stride + r * row_stride + c * col_stride;
  }
};

// The last two dimensions of `x` as a matrix (the first, of a 3-D array,
// as batch items); `base` is its host data (null for device memory).
MatrixView ViewOf(const Array& x);

// A row-major contiguous matrix per batch item, back to back, in `buffer`.
MatrixView PackedView(std::byte* buffer, int64_t rows, int64_t cols, int64_t elem);

// How a BLAS addresses a matrix: row-major (consecutive columns adjacent)
// or column-major, with its leading dimension in elements.
struct BlasForm {
  bool col_major = false;
  int ld = 1;
};

// The form of `m` (elements of `elem` bytes, element 0 at address `base`)
// when a BLAS can address it in place: element-aligned, one unit stride,
// the other stride a leading dimension of at least the contiguous extent
// (a dimension of extent 1 has any stride). nullopt otherwise.
std::optional<BlasForm> FormOf(const MatrixView& m, int64_t elem, uint64_t base);

// Whether the bytes two arrays' elements span overlap (conservative: two
// interleaved views count as overlapping).
bool Overlap(const Array& x, const Array& y);
// The same elements in the same layout (extents of 1 have any stride).
bool SameElements(const Array& x, const Array& y);

}  // namespace warpd::runtime
