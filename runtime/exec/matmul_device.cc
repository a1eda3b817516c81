#include "runtime/exec/matmul_device.h"

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/abi/compiled_module.h"
#include "common/status_macros.h"
#include "runtime/device/device.h"
#include "runtime/exec/matmul_operands.h"

namespace warpd::runtime {

namespace {

class DeviceMatmul final : public Command {
 public:
  DeviceMatmul(GemmSpec spec, std::vector<std::shared_ptr<const Array>> arrays, std::shared_ptr<const Array> copy_c)
      : spec_(spec), arrays_(std::move(arrays)), copy_c_(std::move(copy_c)) {}

  absl::Status Execute(Device& device) override {
    if (copy_c_ != nullptr) WARPD_RETURN_IF_ERROR(device.CopyRange(*arrays_[2], 0, *copy_c_, 0, copy_c_->size_bytes()));
    WARPD_RETURN_IF_ERROR(device.Gemm(spec_, &cancel_));
    const int32_t cancel = __atomic_load_n(&cancel_, __ATOMIC_RELAXED);
    if (cancel == abi::kCancelTimeout) {
      return absl::DeadlineExceededError(absl::StrCat("matmul ran longer than this server's launch time limit of ",
                                                      absl::FormatDuration(device.launch_time_limit())));
    }
    if (cancel != 0) return absl::CancelledError("matmul was cancelled");
    return absl::OkStatus();
  }
  void Cancel() override { __atomic_store_n(&cancel_, abi::kCancelShutdown, __ATOMIC_RELAXED); }
  void Rearm() override { __atomic_store_n(&cancel_, 0, __ATOMIC_RELAXED); }
  std::string Describe() const override { return "matmul"; }

 private:
  const GemmSpec spec_;
  const std::vector<std::shared_ptr<const Array>> arrays_;  // a, b, d (and c)
  const std::shared_ptr<const Array> copy_c_;             // copied into d first
  int32_t cancel_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareDeviceMatmul(std::shared_ptr<const Array> a,
                                                             std::shared_ptr<const Array> b,
                                                             std::shared_ptr<const Array> c,
                                                             std::shared_ptr<const Array> d, double alpha,
                                                             double beta, const std::string& device) {
  WARPD_ASSIGN_OR_RETURN(const MatmulShape shape, CheckMatmul(a.get(), b.get(), c.get(), d.get(), beta, device));
  for (int64_t extent : {shape.batch, shape.m, shape.n, shape.k}) {
    if (extent > INT_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("matmul on '", device, "': an extent of ", extent, " is past the BLAS's 32-bit sizes"));
    }
  }
  GemmSpec spec;
  spec.type = shape.kind == types::ScalarKind::kFloat16   ? GemmSpec::Type::kFloat16
              : shape.kind == types::ScalarKind::kFloat32 ? GemmSpec::Type::kFloat32
                                                          : GemmSpec::Type::kFloat64;
  spec.batch = shape.batch;
  spec.m = shape.m;
  spec.n = shape.n;
  spec.k = shape.k;
  spec.alpha = alpha;
  spec.beta = shape.has_c ? beta : 0.0;
  auto operand = [&](const Array& x, const char* name) -> absl::StatusOr<GemmOperand> {
    const MatrixView v = ViewOf(x);
    // An empty matrix is never read (an empty d: nothing to do; an empty
    // a or b: k is 0, d <- beta * c): any form the BLAS accepts.
    if (v.rows == 0 || v.cols == 0) return GemmOperand{x.address(), false, std::max<int64_t>(1, v.cols), 0};
    std::optional<BlasForm> form = FormOf(v, shape.elem, x.address());
    if (!form) {
      return absl::UnimplementedError(absl::StrCat("matmul on '", device, "': operand ", name,
                                                   " is a strided view the device's BLAS cannot read in place; pass "
                                                   "a contiguous copy (.contiguous())"));
    }
    return GemmOperand{x.address(), form->col_major, form->ld, v.batch_stride / shape.elem};
  };
  WARPD_ASSIGN_OR_RETURN(spec.a, operand(*a, "A"));
  WARPD_ASSIGN_OR_RETURN(spec.b, operand(*b, "B"));
  WARPD_ASSIGN_OR_RETURN(spec.d, operand(*d, "D"));
  if (shape.batch > 1 && spec.d.batch_stride == 0 && shape.m > 0 && shape.n > 0) {
    return absl::UnimplementedError(absl::StrCat("matmul on '", device,
                                                 "': D is one matrix repeated over the batch (a stride of 0); its "
                                                 "items would be written at once"));
  }
  if (Overlap(*d, *a) || Overlap(*d, *b)) {
    return absl::UnimplementedError(absl::StrCat(
        "matmul on '", device, "': D shares memory with A or B; write the product to another array"));
  }
  std::shared_ptr<const Array> copy_c;
  if (shape.has_c && !SameElements(*c, *d)) {
    if (Overlap(*c, *d)) {
      return absl::UnimplementedError(absl::StrCat("matmul on '", device,
                                                   "': C and D overlap without being the same elements"));
    }
    copy_c = c;
  }
  std::vector<std::shared_ptr<const Array>> arrays = {std::move(a), std::move(b), std::move(d)};
  if (c != nullptr) arrays.push_back(std::move(c));
  return std::make_unique<DeviceMatmul>(spec, std::move(arrays), std::move(copy_c));
}

}  // namespace warpd::runtime
