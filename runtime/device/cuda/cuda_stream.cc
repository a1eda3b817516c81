#include "runtime/device/cuda/cuda_stream.h"

#include <utility>

#include "runtime/device/cuda/cuda_event.h"

namespace warpd::runtime::cuda {

absl::StatusOr<CudaStream> CudaStream::Create(CudaContext& ctx) {
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  CUstream stream = nullptr;
  if (absl::Status s =
          ctx.Call("cuStreamCreate", [&] { return ctx.api().cuStreamCreate(&stream, kStreamNonBlocking); });
      !s.ok()) {
    return s;
  }
  return CudaStream(*std::move(user), stream);
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : user_(std::move(other.user_)), stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    Destroy();
    user_ = std::move(other.user_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() { Destroy(); }

void CudaStream::Destroy() {
  CUstream stream = std::exchange(stream_, nullptr);
  if (stream == nullptr) return;
  CudaContext& ctx = context();
  if (!ctx.poisoned()) ctx.Call("cuStreamDestroy", [&] { return ctx.api().cuStreamDestroy(stream); }).IgnoreError();
  user_.Reset();
}

absl::Status CudaStream::Synchronize() {
  CudaContext& ctx = context();
  return ctx.Call("cuStreamSynchronize", [&] { return ctx.api().cuStreamSynchronize(stream_); });
}

absl::StatusOr<bool> CudaStream::Query() {
  CudaContext& ctx = context();
  bool done = true;
  absl::Status s = ctx.Call("cuStreamQuery", [&] {
    CUresult r = ctx.api().cuStreamQuery(stream_);
    if (r != kCudaErrorNotReady) return r;
    done = false;
    return kCudaSuccess;
  });
  if (!s.ok()) return s;
  return done;
}

absl::Status CudaStream::WaitEvent(const CudaEvent& event) {
  CudaContext& ctx = context();
  return ctx.Call("cuStreamWaitEvent", [&] { return ctx.api().cuStreamWaitEvent(stream_, event.get(), 0); });
}

}  // namespace warpd::runtime::cuda
