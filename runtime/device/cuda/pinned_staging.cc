#include "runtime/device/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda/cuda_copy.h"

namespace warpd::runtime::cuda {

absl::StatusOr<std::unique_ptr<PinnedStagingRing>> PinnedStagingRing::Create(CudaContext& ctx,
                                                                             const Options& options) {
  if (options.chunks < 1 || options.chunk_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("PinnedStagingRing: ", options.chunks, " chunks of ",
                                                   options.chunk_bytes, " bytes"));
  }
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  std::unique_ptr<PinnedStagingRing> ring(new PinnedStagingRing(*std::move(user), options.chunk_bytes));
  for (int i = 0; i < options.chunks; ++i) {
    // The event first: a buffer in the ring always has both.
    absl::StatusOr<CudaEvent> done = CudaEvent::Create(ctx, CudaEvent::Timing::kOff);
    if (!done.ok()) return done.status();
    void* host = nullptr;
    if (absl::Status s = ctx.Call("cuMemHostAlloc",
                                  [&] { return ctx.api().cuMemHostAlloc(&host, options.chunk_bytes, 0); });
        !s.ok()) {
      return s;
    }
    ring->buffers_.push_back(Buffer{host, *std::move(done), false});
  }
  return ring;
}

PinnedStagingRing::~PinnedStagingRing() {
  CudaContext& ctx = context();
  absl::MutexLock lock(&mu_);
  for (Buffer& b : buffers_) {
    if (ctx.poisoned()) break;
    // The device may still read or write the buffer.
    Drain(b).IgnoreError();
    if (!ctx.poisoned()) ctx.Call("cuMemFreeHost", [&] { return ctx.api().cuMemFreeHost(b.host); }).IgnoreError();
  }
  buffers_.clear();
}

absl::Status PinnedStagingRing::Drain(Buffer& b) {
  if (!b.pending) return absl::OkStatus();
  if (absl::Status s = b.done.Synchronize(); !s.ok()) return s;
  b.pending = false;
  return absl::OkStatus();
}

absl::Status PinnedStagingRing::CheckStream(const CudaStream& stream) const {
  if (&stream.context() == &context()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("PinnedStagingRing: a stream of ", stream.context().name(),
                                                 " for ", context().name(), "'s ring"));
}

absl::Status PinnedStagingRing::Upload(CudaStream& stream, CUdeviceptr dst, const void* src, size_t bytes) {
  if (absl::Status s = CheckStream(stream); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  const auto* from = static_cast<const char*>(src);
  for (size_t offset = 0; offset < bytes; offset += chunk_bytes_) {
    const size_t n = std::min(chunk_bytes_, bytes - offset);
    Buffer& b = buffers_[next_];
    next_ = (next_ + 1) % buffers_.size();
    if (absl::Status s = Drain(b); !s.ok()) return s;
    std::memcpy(b.host, from + offset, n);
    if (absl::Status s = CopyHostToDevice(stream, dst + offset, b.host, n); !s.ok()) return s;
    if (absl::Status s = b.done.Record(stream); !s.ok()) return s;
    b.pending = true;
  }
  return absl::OkStatus();
}

absl::Status PinnedStagingRing::Download(CudaStream& stream, void* dst, CUdeviceptr src, size_t bytes) {
  if (absl::Status s = CheckStream(stream); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto* to = static_cast<char*>(dst);
  const size_t total = (bytes + chunk_bytes_ - 1) / chunk_bytes_;
  const size_t depth = std::min(total, buffers_.size());
  // Chunk k travels through buffer (first + k) % size.
  const size_t first = next_;
  auto buffer_of = [&](size_t k) -> Buffer& { return buffers_[(first + k) % buffers_.size()]; };
  auto queue = [&](size_t k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    Buffer& b = buffer_of(k);
    if (absl::Status s = Drain(b); !s.ok()) return s;
    const size_t offset = k * chunk_bytes_;
    if (absl::Status s = CopyDeviceToHost(stream, b.host, src + offset, std::min(chunk_bytes_, bytes - offset));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = b.done.Record(stream); !s.ok()) return s;
    b.pending = true;
    return absl::OkStatus();
  };
  for (size_t k = 0; k < depth; ++k) {
    if (absl::Status s = queue(k); !s.ok()) return s;
  }
  for (size_t k = 0; k < total; ++k) {
    Buffer& b = buffer_of(k);
    if (absl::Status s = Drain(b); !s.ok()) return s;
    const size_t offset = k * chunk_bytes_;
    std::memcpy(to + offset, b.host, std::min(chunk_bytes_, bytes - offset));
    if (k + depth < total) {
      if (absl::Status s = queue(k + depth); !s.ok()) return s;
    }
  }
  next_ = (first + total) % buffers_.size();
  return absl::OkStatus();
}

}  // namespace warpd::runtime::cuda
