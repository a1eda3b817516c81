// warpd runtime: stream capture into a CUDA graph, replayed by one launch.
//
//   CudaGraph::BeginCapture(stream);                 // wp.capture_begin
//   ... queue launches, copies, fills, event records on `stream` ...
//   absl::StatusOr<CudaGraph> g = CudaGraph::EndCapture(stream);   // wp.capture_end
//   g->Launch(stream);                               // wp.capture_launch, any number of times
//
// While a stream captures, the work queued on it is recorded, not run
// (cuStreamBeginCapture); EndCapture takes the recorded graph
// (cuStreamEndCapture), instantiates it (cuGraphInstantiateWithFlags) and
// drops the template, keeping only the executable graph, which Launch
// queues as one unit (cuGraphLaunch). Capture runs in
// CU_STREAM_CAPTURE_MODE_RELAXED: in a daemon, capture_begin and
// capture_end are separate requests that may run on different threads, and
// other sessions' threads keep calling the driver meanwhile; the stricter
// modes would refuse the one and fail the others' "unsafe" calls. What a
// capture must not contain is still refused by the driver: synchronizing or
// querying the capturing stream fails (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
// and invalidates the capture, which EndCapture then reports
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, FAILED_PRECONDITION); the capture
// has ended either way. Every call fails fast once the context is poisoned.
//
// Ownership: move-only; holds a ContextUser (the CudaContext outlives it
// and is not reset while it exists); the memory and modules its work uses
// must outlive its launches. Destroying it destroys the executable graph
// (cuGraphExecDestroy; launches already queued still run; nothing on a
// poisoned context). Thread-safety: Launch as the stream's calls; one
// capture per stream at a time is the caller's to arrange.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class CudaGraph {
 public:
  // Starts capturing `stream`'s work (the driver refuses a stream that is
  // capturing already).
  static absl::Status BeginCapture(CudaStream& stream);
  // Ends `stream`'s capture and instantiates what it recorded.
  static absl::StatusOr<CudaGraph> EndCapture(CudaStream& stream);

  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  // Queues the whole graph on `stream` (of the same context).
  absl::Status Launch(CudaStream& stream);

  CUgraphExec get() const { return exec_; }
  CudaContext& context() const { return *user_.context(); }

 private:
  CudaGraph(ContextUser user, CUgraphExec exec) : user_(std::move(user)), exec_(exec) {}
  void Destroy();

  ContextUser user_;
  CUgraphExec exec_ = nullptr;  // null once moved from
};

}  // namespace warpd::runtime::cuda
