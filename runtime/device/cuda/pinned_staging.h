// warpd runtime: a ring of page-locked host buffers through which large
// uploads and downloads travel in chunks, overlapping the host copy of one
// chunk with the device copy of another.
//
//   absl::StatusOr<std::unique_ptr<PinnedStagingRing>> ring = PinnedStagingRing::Create(ctx, {});
//   (*ring)->Upload(stream, dst, host, n);      // returns once `host` is read
//   (*ring)->Download(stream, host, src, n);    // returns once `host` holds the bytes
//
// Copies from pageable memory cost the driver a staging copy of its own and,
// for downloads, a synchronization per call; copies from page-locked memory
// run at the bus's speed but the memory is costly to lock, so warpd locks a
// few buffers once (cuMemHostAlloc, `chunks` of `chunk_bytes`) and streams
// through them. Upload: for each chunk, wait until its buffer's previous
// device copy has completed (an event per buffer), memcpy the chunk from
// the caller's memory into the buffer, queue cuMemcpyHtoDAsync from it and
// record the buffer's event; the host copy of chunk k+1 overlaps the device
// copy of chunk k. It returns once the caller's memory has been read; the
// device copies may still be in flight, ordered on `stream` before whatever
// is queued there next. Download: queue the device copies of the first
// `chunks` chunks, then for each chunk in order wait for its event, memcpy
// it out and queue the next chunk into the freed buffer; it returns once
// the caller's memory holds every byte (the copies come after the work
// queued on `stream` before the call).
// Errors: the driver's (naming the call and the device); after an error the
// bytes copied so far are unspecified. Every call fails fast once the
// context is poisoned.
//
// Ownership: one ring per device (or per session), not movable; holds a
// ContextUser. Destroying it waits for its buffers' pending copies, then
// frees them (nothing on a poisoned context: the reset frees them).
// Thread-safety: any thread may call; one transfer runs at a time (a mutex
// serializes them).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class PinnedStagingRing {
 public:
  struct Options {
    size_t chunk_bytes = size_t{8} << 20;
    int chunks = 4;  // at least 2 for any overlap
  };

  // cuMemHostAlloc for each buffer, an event for each. INVALID_ARGUMENT for
  // no chunks or empty ones.
  static absl::StatusOr<std::unique_ptr<PinnedStagingRing>> Create(CudaContext& ctx, const Options& options);

  PinnedStagingRing(const PinnedStagingRing&) = delete;
  PinnedStagingRing& operator=(const PinnedStagingRing&) = delete;
  ~PinnedStagingRing();

  // Copies `bytes` at host `src` to device `dst` on `stream` (of this
  // ring's context: INVALID_ARGUMENT otherwise).
  absl::Status Upload(CudaStream& stream, CUdeviceptr dst, const void* src, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Copies `bytes` at device `src` to host `dst` on `stream`.
  absl::Status Download(CudaStream& stream, void* dst, CUdeviceptr src, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  size_t chunk_bytes() const { return chunk_bytes_; }
  int chunks() const { return static_cast<int>(buffers_.size()); }
  CudaContext& context() const { return *user_.context(); }

 private:
  struct Buffer {
    void* host = nullptr;  // page-locked, chunk_bytes_
    CudaEvent done;        // recorded after the buffer's last device copy
    bool pending = false;  // `done` has a record not yet waited for
  };

  PinnedStagingRing(ContextUser user, size_t chunk_bytes) : user_(std::move(user)), chunk_bytes_(chunk_bytes) {}
  // Waits until `b`'s last device copy has completed.
  absl::Status Drain(Buffer& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckStream(const CudaStream& stream) const;

  ContextUser user_;
  const size_t chunk_bytes_;
  absl::Mutex mu_;
  std::vector<Buffer> buffers_;  // fixed after Create; their state under mu_
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::runtime::cuda
