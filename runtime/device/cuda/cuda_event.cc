#include "runtime/device/cuda/cuda_event.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda/cuda_stream.h"

namespace warpd::runtime::cuda {

absl::StatusOr<CudaEvent> CudaEvent::Create(CudaContext& ctx, Timing timing) {
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  CUevent event = nullptr;
  const unsigned flags = timing == Timing::kOn ? kEventDefault : kEventDisableTiming;
  if (absl::Status s = ctx.Call("cuEventCreate", [&] { return ctx.api().cuEventCreate(&event, flags); }); !s.ok()) {
    return s;
  }
  return CudaEvent(*std::move(user), event, timing);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept
    : user_(std::move(other.user_)), event_(std::exchange(other.event_, nullptr)), timing_(other.timing_) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    Destroy();
    user_ = std::move(other.user_);
    event_ = std::exchange(other.event_, nullptr);
    timing_ = other.timing_;
  }
  return *this;
}

CudaEvent::~CudaEvent() { Destroy(); }

void CudaEvent::Destroy() {
  CUevent event = std::exchange(event_, nullptr);
  if (event == nullptr) return;
  CudaContext& ctx = context();
  if (!ctx.poisoned()) ctx.Call("cuEventDestroy", [&] { return ctx.api().cuEventDestroy(event); }).IgnoreError();
  user_.Reset();
}

absl::Status CudaEvent::Record(CudaStream& stream) {
  CudaContext& ctx = context();
  return ctx.Call("cuEventRecord", [&] { return ctx.api().cuEventRecord(event_, stream.get()); });
}

absl::Status CudaEvent::Synchronize() {
  CudaContext& ctx = context();
  return ctx.Call("cuEventSynchronize", [&] { return ctx.api().cuEventSynchronize(event_); });
}

absl::StatusOr<bool> CudaEvent::Query() {
  CudaContext& ctx = context();
  bool done = true;
  absl::Status s = ctx.Call("cuEventQuery", [&] {
    CUresult r = ctx.api().cuEventQuery(event_);
    if (r != kCudaErrorNotReady) return r;
    done = false;
    return kCudaSuccess;
  });
  if (!s.ok()) return s;
  return done;
}

absl::StatusOr<absl::Duration> CudaEvent::Elapsed(const CudaEvent& start, const CudaEvent& end) {
  if (!start.timing() || !end.timing()) {
    return absl::FailedPreconditionError("CudaEvent::Elapsed: both events must be made with Timing::kOn");
  }
  CudaContext& ctx = start.context();
  float ms = 0;
  absl::Status s =
      ctx.Call("cuEventElapsedTime", [&] { return ctx.api().cuEventElapsedTime(&ms, start.event_, end.event_); });
  if (!s.ok()) return s;
  return absl::Microseconds(static_cast<double>(ms) * 1000.0);
}

}  // namespace warpd::runtime::cuda
