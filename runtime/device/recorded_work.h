// warpd runtime: device work recorded once and replayed as one unit.
//
// A graph of commands (exec/graph.h) replays the same launches, copies and
// fills each time. A device that can take such a sequence as a whole (a
// CUDA graph: stream capture, then one cuGraphLaunch per replay) records it
// once through a WorkRecorder (Device::RecordWork) and replays it with
// RecordedWork::Run: one submission and one wait per replay instead of one
// per command. Devices without it (the CPU, whose per-command replay costs
// nothing to speak of) answer UNIMPLEMENTED, and so does a recorder for work
// it cannot take (a kernel that prints or queries objects, a strided copy,
// a fill pattern memset cannot write); the graph then replays command by
// command, with the same results.
//
// A stream's queued commands on such a device run the same way, once
// (Device::BatchWork; exec/stream_batch.cc): the launches, copies and fills
// queued back to back are recorded into a batch whose Run issues them all
// and waits once, instead of one round trip to the device per command.
//
// What a recorded replay (or batch) does differently: its kernels run without a host
// round trip between them, so a kernel that faults does not stop the ones
// after it in that replay (as on CUDA in Warp); the replay reports the
// first fault in recording order, and the stream stops there as after any
// failed command. The launch time limit holds for the whole replay rather
// than for each kernel.
//
//   WARPD_ASSIGN_OR_RETURN(std::unique_ptr<WorkRecorder> rec, device.RecordWork());
//   rec->Kernel(module, kernel, ctx, args, Device::Pass::kForward, 1);
//   rec->Copy(dst, 0, src, 0, n);
//   WARPD_ASSIGN_OR_RETURN(std::unique_ptr<RecordedWork> work, rec->Finish());
//   std::vector<wp::launch_ctx> ctxs(work->kernels());
//   WARPD_RETURN_IF_ERROR(work->Run(absl::MakeSpan(ctxs), &cancel));  // each replay
//
// Ownership: the recorder copies what it is given (contexts, argument
// blocks, patterns) and holds the modules it loaded; it does not hold the
// arrays whose addresses it records: the caller (the graph, whose commands
// hold them) keeps them alive as long as the RecordedWork. Thread-safety:
// one thread at a time per object (a graph's replays are serialized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/abi/compiled_module.h"
#include "runtime/device/device.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {

class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  // Kernel() calls recorded: the contexts each Run reports.
  virtual size_t kernels() const = 0;
  // Runs the work once and returns when all of it has finished, with each
  // recorded kernel's context as it ended in `ctxs` (kernels() of them, in
  // recording order): its fault, as the kernel left it (cancel words are
  // cleared). `*cancel` (relaxed atomics) non-zero asks the running kernels
  // to stop; once the device's launch time limit has passed (for the whole
  // run), Run sets it to abi::kCancelTimeout itself. A stopped run fills
  // `ctxs` and returns DEADLINE_EXCEEDED (the time limit) or CANCELLED,
  // naming the graph's kernels; a fault found in `ctxs` comes first for the
  // caller. Other errors: the device's (a lost context: UNAVAILABLE), with
  // `ctxs` unset.
  virtual absl::Status Run(absl::Span<wp::launch_ctx> ctxs, int32_t* cancel) = 0;
};

// Each call records all of its work or, failing, none of it: a caller may
// go on recording after a refusal, or Finish what it has.
class WorkRecorder {
 public:
  virtual ~WorkRecorder() = default;
  // `runs` launches in a row of `kernel` (of `module`, compiled for the
  // device) with launch context `ctx` (its bounds; its fault and cancel are
  // reset at each replay; no print buffer) and argument block `args` (an adjoint's: both blocks, as
  // Device::RunKernel), reported as one context: the runs share it, so once
  // one faults the later ones stop at once, as a repeated launch does.
  // UNIMPLEMENTED for a kernel that prints or queries objects.
  virtual absl::Status Kernel(std::shared_ptr<const abi::CompiledModule> module, const abi::CompiledKernel& kernel,
                              const wp::launch_ctx& ctx, const void* args, Device::Pass pass, uint32_t runs,
                              const Device::LaunchShape& shape = {}) = 0;
  // Logical bytes, as Device::CopyRange and FillRange; UNIMPLEMENTED for a
  // strided array or (copies) overlapping ranges, or (fills) a pattern the
  // device cannot write without a kernel.
  virtual absl::Status Copy(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset,
                            uint64_t n) = 0;
  virtual absl::Status Fill(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern) = 0;
  // Ends the recording: the work ready to run, or why it cannot be
  // (UNIMPLEMENTED for work found unrecordable only now).
  virtual absl::StatusOr<std::unique_ptr<RecordedWork>> Finish() = 0;
};

}  // namespace warpd::runtime
