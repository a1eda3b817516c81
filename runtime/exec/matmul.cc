#include "runtime/exec/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/types/type.h"
#include "warpd/native/core.h"

// OpenBLAS's (exported, for its fork handler): joins its worker threads.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace warpd::runtime {

void StopBlasThreads() {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
}

namespace {

using types::ScalarKind;

// About this many multiply-adds per tile: a few milliseconds of one core, so
// tiles spread over the pool and cancels and time limits are seen soon.
constexpr double kTileMacs = double(1 << 22);
// Tiles are not split below this many rows or columns (BLAS efficiency).
constexpr int64_t kMinTileExtent = 64;
// Rows packed or unpacked per chunk: about this many elements.
constexpr int64_t kPackChunkElements = 1 << 16;

// The library's own threads would oversubscribe the device pool that calls
// it: every call is single-threaded (process-wide; warpd is the only user).
void UseOneBlasThread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

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

// The CPU's GEMM (OpenBLAS) runs on the host threads of the device
// (Device::HostParallelFor) over the arrays' memory in place: that memory is
// host memory on 'cpu', the only device matmul runs on until a CUDA one
// calls cuBLAS, so these addresses are not device-neutral by design.
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

// A row-major contiguous matrix per batch item, back to back, in `buffer`.
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

// How the BLAS addresses a matrix: row-major (consecutive columns adjacent)
// or column-major, with its leading dimension in elements.
struct BlasForm {
  bool col_major = false;
  int ld = 1;
};

// The form of `m` (elements of `elem` bytes) when the BLAS can address it
// in place: element-aligned, one unit stride, the other stride a leading
// dimension of at least the contiguous extent (a dimension of extent 1 has
// any stride). nullopt otherwise: it is packed.
std::optional<BlasForm> FormOf(const MatrixView& m, int64_t elem) {
  if (reinterpret_cast<uintptr_t>(m.base) % elem != 0 || m.batch_stride % elem != 0) return std::nullopt;
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

// The bytes an array's elements span in memory: [first, last).
struct ByteRange {
  uintptr_t first = 0, last = 0;
};

ByteRange RangeOf(const Array& x) {
  if (x.layout().num_elements == 0) return {};
  uintptr_t first = reinterpret_cast<uintptr_t>(x.data());
  uintptr_t span = x.dtype()->size();
  for (int i = 0; i < x.ndim(); ++i) span += static_cast<uintptr_t>((x.shape()[i] - 1) * x.strides()[i]);
  return {first, first + span};
}

bool Overlap(const Array& x, const Array& y) {
  const ByteRange a = RangeOf(x), b = RangeOf(y);
  return a.first < a.last && b.first < b.last && a.first < b.last && b.first < a.last;
}

// The same elements in the same layout (extents of 1 have any stride).
bool SameElements(const Array& x, const Array& y) {
  if (x.data() != y.data() || x.ndim() != y.ndim()) return false;
  for (int i = 0; i < x.ndim(); ++i) {
    if (x.shape()[i] != y.shape()[i]) return false;
    if (x.shape()[i] > 1 && x.strides()[i] != y.strides()[i]) return false;
  }
  return true;
}

// Storage element S <-> compute element T (float for half).
template <typename S, typename T>
T Load(const std::byte* p) {
  S s;
  std::memcpy(&s, p, sizeof(S));
  if constexpr (std::is_same_v<S, wp::half>) {
    return wp::half_to_float(s);
  } else {
    return static_cast<T>(s);
  }
}

template <typename S, typename T>
void Store(std::byte* p, T v) {
  S s;
  if constexpr (std::is_same_v<S, wp::half>) {
    s = wp::float_to_half(v);
  } else {
    s = static_cast<S>(v);
  }
  std::memcpy(p, &s, sizeof(S));
}

void Gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void Gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
          const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// What Prepare decided, for both element types.
struct Plan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  bool has_c = false;   // beta != 0 and c given: the output starts as c
  bool c_is_d = false;  // ... and it already is (in place, or packed into the output temp)
  // The operands as the BLAS reads them (the array, or its packed copy).
  MatrixView a, b, out;
  BlasForm a_form, b_form, out_form;
  // Packing: source views (of the arrays) of operands copied to temporaries.
  std::optional<MatrixView> pack_a, pack_b, pack_c;  // pack_c: c into the output temp
  std::optional<MatrixView> unpack_d;                 // the output temp is copied to d at the end
  std::optional<MatrixView> c_tiles;                  // c copied into d tile by tile (direct d, distinct c)
  int64_t tile_m = 0, tile_n = 0;
};

template <typename S, typename T>
class MatmulCommand final : public Command {
 public:
  MatmulCommand(Plan plan, std::vector<std::shared_ptr<const Array>> arrays,
                std::vector<std::shared_ptr<CpuBuffer>> temps)
      : plan_(plan), arrays_(std::move(arrays)), temps_(std::move(temps)) {}

  absl::Status Execute(Device& device) override {
    const Plan& p = plan_;
    if (p.m == 0 || p.n == 0 || p.batch == 0) return absl::OkStatus();
    const absl::Duration limit = device.launch_time_limit();
    deadline_ = limit > absl::ZeroDuration() ? absl::Now() + limit : absl::InfiniteFuture();
    timed_out_.store(false, std::memory_order_relaxed);

    if (p.pack_a) Copy(device, *p.pack_a, p.a, /*to_storage=*/false);
    if (p.pack_b) Copy(device, *p.pack_b, p.b, false);
    if (p.pack_c) Copy(device, *p.pack_c, p.out, false);
    if (absl::Status s = Stopped(limit); !s.ok()) return s;

    const int64_t tiles_m = (p.m + p.tile_m - 1) / p.tile_m;
    const int64_t tiles_n = (p.n + p.tile_n - 1) / p.tile_n;
    device.HostParallelFor(p.batch * tiles_m * tiles_n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end && !ShouldStop(); ++t) {
        const int64_t item = t / (tiles_m * tiles_n);
        const int64_t rest = t % (tiles_m * tiles_n);
        const int64_t r0 = rest / tiles_n * p.tile_m, c0 = rest % tiles_n * p.tile_n;
        Tile(item, r0, std::min(p.m, r0 + p.tile_m), c0, std::min(p.n, c0 + p.tile_n));
      }
    });
    if (absl::Status s = Stopped(limit); !s.ok()) return s;

    if (p.unpack_d) Copy(device, p.out, *p.unpack_d, /*to_storage=*/true);
    return Stopped(limit);
  }

  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override { return "matmul"; }
  // Its temporaries were allocated from the session's pool, which charged them.
  uint64_t HeldBytes() const override {
    return kBaseBytes + sizeof(*this) + (arrays_.capacity() + temps_.capacity()) * 16;
  }

 private:
  bool ShouldStop() {
    if (cancel_.load(std::memory_order_relaxed) || timed_out_.load(std::memory_order_relaxed)) return true;
    if (absl::Now() > deadline_) {
      timed_out_.store(true, std::memory_order_relaxed);
      return true;
    }
    return false;
  }

  absl::Status Stopped(absl::Duration limit) const {
    if (timed_out_.load(std::memory_order_relaxed)) {
      return absl::DeadlineExceededError(absl::StrCat("matmul ran longer than this server's launch time limit of ",
                                                      absl::FormatDuration(limit), " and was stopped"));
    }
    if (cancel_.load(std::memory_order_relaxed)) return absl::CancelledError("matmul was cancelled");
    return absl::OkStatus();
  }

  // Every element of `from` -> `to` (same extents and batch): storage to a
  // compute-type temporary, or (to_storage) a temporary back to storage.
  void Copy(Device& device, const MatrixView& from, const MatrixView& to, bool to_storage) {
    const Plan& p = plan_;
    const int64_t rows = p.batch * from.rows;
    const int64_t grain = std::max<int64_t>(1, kPackChunkElements / std::max<int64_t>(1, from.cols));
    device.HostParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      if (ShouldStop()) return;
      for (int64_t row = begin; row < end; ++row) {
        const int64_t item = row / from.rows, r = row % from.rows;
        for (int64_t c = 0; c < from.cols; ++c) {
          if (to_storage) {
            Store<S, T>(to.At(item, r, c), Load<T, T>(from.At(item, r, c)));
          } else {
            Store<T, T>(to.At(item, r, c), Load<S, T>(from.At(item, r, c)));
          }
        }
      }
    });
  }

  // Output rows [r0, r1) and columns [c0, c1) of batch item `item`.
  void Tile(int64_t item, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const Plan& p = plan_;
    if (p.c_tiles) {  // direct output, distinct c: the tile starts as c's
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          std::memcpy(p.out.At(item, r, c), p.c_tiles->At(item, r, c), sizeof(T));
        }
      }
    }
    const T beta = p.has_c ? static_cast<T>(p.beta) : T(0);
    if (p.k == 0) {  // no products: out <- beta * c (BLAS would want leading dimensions >= 1)
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          std::byte* o = p.out.At(item, r, c);
          Store<T, T>(o, p.has_c ? beta * Load<T, T>(o) : T(0));
        }
      }
      return;
    }
    const bool col = p.out_form.col_major;
    const CBLAS_ORDER order = col ? CblasColMajor : CblasRowMajor;
    const CBLAS_TRANSPOSE ta = p.a_form.col_major == col ? CblasNoTrans : CblasTrans;
    const CBLAS_TRANSPOSE tb = p.b_form.col_major == col ? CblasNoTrans : CblasTrans;
    Gemm(order, ta, tb, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0), static_cast<int>(p.k),
         static_cast<T>(p.alpha), reinterpret_cast<const T*>(p.a.At(item, r0, 0)), p.a_form.ld,
         reinterpret_cast<const T*>(p.b.At(item, 0, c0)), p.b_form.ld, beta,
         reinterpret_cast<T*>(p.out.At(item, r0, c0)), p.out_form.ld);
  }

  const Plan plan_;
  const std::vector<std::shared_ptr<const Array>> arrays_;  // keeps the operands alive
  const std::vector<std::shared_ptr<CpuBuffer>> temps_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> timed_out_{false};
  absl::Time deadline_ = absl::InfiniteFuture();
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareMatmul(std::shared_ptr<const Array> a,
                                                       std::shared_ptr<const Array> b,
                                                       std::shared_ptr<const Array> c,
                                                       std::shared_ptr<const Array> d, double alpha, double beta,
                                                       const std::string& device, SegmentPool& pool) {
  if (a == nullptr || b == nullptr || d == nullptr) return absl::InvalidArgumentError("matmul: a, b and d are required");
  const std::pair<const char*, const Array*> operands[] = {{"A", a.get()}, {"B", b.get()}, {"C", c.get()}, {"D", d.get()}};
  for (const auto& [name, x] : operands) {
    if (x == nullptr) continue;
    if (absl::Status s = CheckArrayDevice(*x, device, absl::StrCat("matmul operand ", name)); !s.ok()) return s;
    if (x->size_bytes() > 0 && x->data() == nullptr) {  // the BLAS runs on the host
      return absl::UnimplementedError(
          absl::StrCat("matmul on '", device, "' is not implemented: operand ", name, " is device memory"));
    }
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
  Plan p;
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
  p.alpha = alpha;
  p.beta = beta;
  p.has_c = c != nullptr && beta != 0.0;

  const ScalarKind kind = dtype->scalar();
  const int64_t elem = static_cast<int64_t>(dtype->size());
  const bool half = kind == ScalarKind::kFloat16;
  const int64_t celem = half ? 4 : elem;  // the compute type's size

  UseOneBlasThread();
  std::vector<std::shared_ptr<CpuBuffer>> temps;
  auto temp = [&](int64_t rows, int64_t cols, const char* what) -> absl::StatusOr<MatrixView> {
    const uint64_t bytes = static_cast<uint64_t>(p.batch) * static_cast<uint64_t>(rows) *
                           static_cast<uint64_t>(cols) * static_cast<uint64_t>(celem);
    auto buffer = pool.Allocate(bytes, what, Fill::kAny);
    if (!buffer.ok()) {
      return absl::Status(buffer.status().code(),
                          absl::StrCat("matmul: a temporary copy of ", what, ": ", buffer.status().message()));
    }
    temps.push_back(*buffer);
    return PackedView((*buffer)->data(), rows, cols, celem);
  };

  // Inputs: in place when the BLAS can read them, else packed.
  const MatrixView av = ViewOf(*a), bv = ViewOf(*b), dv = ViewOf(*d);
  std::optional<BlasForm> af = half ? std::nullopt : FormOf(av, elem);
  std::optional<BlasForm> bf = half ? std::nullopt : FormOf(bv, elem);
  p.a = av;
  p.b = bv;
  if (!af && p.k > 0) {
    auto v = temp(p.m, p.k, "A");
    if (!v.ok()) return v.status();
    p.pack_a = av;
    p.a = *v;
    af = BlasForm{false, static_cast<int>(std::max<int64_t>(1, p.k))};
  }
  if (!bf && p.k > 0) {
    auto v = temp(p.k, p.n, "B");
    if (!v.ok()) return v.status();
    p.pack_b = bv;
    p.b = *v;
    bf = BlasForm{false, static_cast<int>(std::max<int64_t>(1, p.n))};
  }
  p.a_form = af.value_or(BlasForm{});
  p.b_form = bf.value_or(BlasForm{});

  // The output: d itself when the BLAS can write it and writing it cannot
  // change an operand still to be read; else a temporary copied to d last.
  const bool c_same = c != nullptr && SameElements(*c, *d);
  std::optional<BlasForm> df = half ? std::nullopt : FormOf(dv, elem);
  const bool clobbers = Overlap(*d, *a) || Overlap(*d, *b) || (p.has_c && !c_same && Overlap(*d, *c));
  if (df && !clobbers) {
    p.out = dv;
    p.out_form = *df;
    if (p.has_c && !c_same) p.c_tiles = ViewOf(*c);
  } else {
    auto v = temp(p.m, p.n, "D");
    if (!v.ok()) return v.status();
    p.out = *v;
    p.out_form = BlasForm{false, static_cast<int>(std::max<int64_t>(1, p.n))};
    p.unpack_d = dv;
    if (p.has_c) p.pack_c = ViewOf(*c);
  }

  // Tiles of about kTileMacs multiply-adds, halving the longer side.
  p.tile_m = std::max<int64_t>(1, p.m);
  p.tile_n = std::max<int64_t>(1, p.n);
  while (double(p.tile_m) * double(p.tile_n) * double(std::max<int64_t>(1, p.k)) > kTileMacs &&
         (p.tile_m > kMinTileExtent || p.tile_n > kMinTileExtent)) {
    if (p.tile_m >= p.tile_n) {
      p.tile_m = (p.tile_m + 1) / 2;
    } else {
      p.tile_n = (p.tile_n + 1) / 2;
    }
  }

  std::vector<std::shared_ptr<const Array>> arrays = {std::move(a), std::move(b), std::move(d)};
  if (c != nullptr) arrays.push_back(std::move(c));
  switch (kind) {
    case ScalarKind::kFloat16:
      return std::make_unique<MatmulCommand<wp::half, float>>(p, std::move(arrays), std::move(temps));
    case ScalarKind::kFloat32:
      return std::make_unique<MatmulCommand<float, float>>(p, std::move(arrays), std::move(temps));
    default:
      return std::make_unique<MatmulCommand<double, double>>(p, std::move(arrays), std::move(temps));
  }
}

}  // namespace warpd::runtime
