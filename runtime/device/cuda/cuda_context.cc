#include "runtime/device/cuda/cuda_context.h"

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda/cuda_error.h"

namespace warpd::runtime::cuda {

ContextUser& ContextUser::operator=(ContextUser&& other) noexcept {
  if (this != &other) {
    Reset();
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void ContextUser::Reset() {
  if (CudaContext* c = std::exchange(context_, nullptr)) c->RemoveUser();
}

ScopedCurrent::~ScopedCurrent() {
  if (api_ == nullptr) return;
  // Fails only if someone else popped our context: nothing to undo then.
  CUcontext popped = nullptr;
  api_->cuCtxPopCurrent(&popped);
}

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(const CudaDriver& driver, int ordinal) {
  absl::StatusOr<PrimaryContext> primary = driver.RetainPrimaryContext(ordinal);
  if (!primary.ok()) return primary.status();
  return std::unique_ptr<CudaContext>(new CudaContext(driver, ordinal, *std::move(primary)));
}

CudaContext::CudaContext(const CudaDriver& driver, int ordinal, PrimaryContext primary)
    : driver_(&driver),
      api_(&driver.api()),
      ordinal_(ordinal),
      name_(absl::StrCat("cuda:", ordinal)),
      primary_(std::move(primary)) {}

absl::Status CudaContext::PoisonedStatus() const {
  return absl::FailedPreconditionError(absl::StrCat(
      name_, " cannot run work: its CUDA context was lost to an earlier error and is reset only once every "
             "session using it has ended; the first error was: ",
      first_error_));
}

absl::Status CudaContext::Usable() const {
  absl::MutexLock lock(&mu_);
  return poisoned_ ? PoisonedStatus() : absl::OkStatus();
}

bool CudaContext::poisoned() const {
  absl::MutexLock lock(&mu_);
  return poisoned_;
}

absl::Status CudaContext::Check(CUresult result, std::string_view call) {
  if (result == kCudaSuccess) return absl::OkStatus();
  absl::Status s = CudaError(result, absl::StrCat(absl::string_view(call.data(), call.size()), " (", name_, ")"), api_);
  if (IsContextLost(result)) {
    absl::MutexLock lock(&mu_);
    if (!poisoned_) {
      poisoned_ = true;
      first_error_ = std::string(s.message());
    }
  }
  return s;
}

void CudaContext::MarkLost(std::string_view why) {
  absl::MutexLock lock(&mu_);
  if (!poisoned_) {
    poisoned_ = true;
    first_error_ = std::string(why);
  }
}

absl::StatusOr<ContextUser> CudaContext::AddUser() {
  absl::MutexLock lock(&mu_);
  if (poisoned_) return PoisonedStatus();
  ++users_;
  return ContextUser(this);
}

void CudaContext::RemoveUser() {
  absl::MutexLock lock(&mu_);
  --users_;
}

int CudaContext::users() const {
  absl::MutexLock lock(&mu_);
  return users_;
}

CUcontext CudaContext::handle() const {
  absl::MutexLock lock(&mu_);
  return primary_.get();
}

absl::StatusOr<ScopedCurrent> CudaContext::MakeCurrent() {
  CUcontext context;
  {
    absl::MutexLock lock(&mu_);
    if (poisoned_) return PoisonedStatus();
    context = primary_.get();
  }
  if (absl::Status s = Check(api_->cuCtxPushCurrent(context), "cuCtxPushCurrent"); !s.ok()) return s;
  return ScopedCurrent(api_);
}

absl::Status CudaContext::Recover() {
  absl::MutexLock lock(&mu_);
  if (!poisoned_) return absl::OkStatus();
  if (users_ > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reset ", name_, "'s CUDA context yet: ", users_,
                     " objects made in it (streams, events, pools, modules, staging buffers, graphs) still exist"));
  }
  const CUdevice device = driver_->devices()[ordinal_].device;
  if (CUresult r = api_->cuDevicePrimaryCtxReset(device); r != kCudaSuccess) {
    return CudaError(r, absl::StrCat("cuDevicePrimaryCtxReset (", name_, ")"), api_);
  }
  // A fresh reference, and with it the handle the driver now has.
  primary_.Release().IgnoreError();
  absl::StatusOr<PrimaryContext> primary = driver_->RetainPrimaryContext(ordinal_);
  if (!primary.ok()) return primary.status();
  primary_ = *std::move(primary);
  poisoned_ = false;
  first_error_.clear();
  ++resets_;
  return absl::OkStatus();
}

int CudaContext::resets() const {
  absl::MutexLock lock(&mu_);
  return resets_;
}

}  // namespace warpd::runtime::cuda
