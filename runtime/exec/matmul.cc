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
#include "common/status_macros.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/types/type.h"
#include "runtime/exec/matmul_device.h"
#include "runtime/exec/matmul_operands.h"
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
  if (device != "cpu") return PrepareDeviceMatmul(a, b, c, d, alpha, beta, device);
  WARPD_ASSIGN_OR_RETURN(const MatmulShape shape, CheckMatmul(a.get(), b.get(), c.get(), d.get(), beta, device));
  Plan p;
  p.batch = shape.batch;
  p.m = shape.m;
  p.n = shape.n;
  p.k = shape.k;
  p.alpha = alpha;
  p.beta = beta;
  p.has_c = shape.has_c;

  const ScalarKind kind = shape.kind;
  const int64_t elem = shape.elem;
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
  std::optional<BlasForm> af = half ? std::nullopt : FormOf(av, elem, a->address());
  std::optional<BlasForm> bf = half ? std::nullopt : FormOf(bv, elem, b->address());
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
  std::optional<BlasForm> df = half ? std::nullopt : FormOf(dv, elem, d->address());
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
