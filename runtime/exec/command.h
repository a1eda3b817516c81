// warpd runtime: commands of a device stream: launch, copy, fill, free.
//
// A Command is made by a Prepare* function (here and in launch.h), which
// checks everything that can be checked before running: types, shapes,
// sizes, argument layout. Execution can then fail only for reasons found while
// running (a kernel fault, a cancel), which become the stream's sticky error.
//
// Ownership: a command holds shared_ptrs to the arrays (and module) it uses,
// so they stay alive while it is queued or running, whatever happens to their
// handles. The memory a command itself keeps (HeldBytes) is charged by whoever
// accepts it from a client (server/submit.cc) and attached to the command
// (AttachCharge), so it is released when the command is destroyed: after it
// ran, when it is dropped from a queue, or with its graph. Thread-compatible: a stream runs one command at a time; Cancel()
// may be called from another thread while Execute() runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/device/device.h"
#include "runtime/memory/memory_charge.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

class Stream;
class WorkRecorder;  // runtime/device/recorded_work.h

class Command {
 public:
  virtual ~Command() = default;
  // What must have run before this command may start: commands of another
  // stream of the session, up to a sequence number (a wait, as CUDA's
  // cuStreamWaitEvent). The stream does not run it, nor anything after it,
  // until then, and holds no thread meanwhile (stream.h).
  struct Prerequisite {
    std::weak_ptr<Stream> stream;  // gone: nothing to wait for
    uint64_t sequence = 0;
  };
  virtual const Prerequisite* prerequisite() const { return nullptr; }
  // Runs the command on `device` (the stream's device).
  virtual absl::Status Execute(Device& device) = 0;
  // Asks a running Execute to stop early (it then returns CANCELLED).
  // Commands that finish quickly ignore it.
  virtual void Cancel() {}
  // Clears what one Execute left behind (a fault, a cancel), so the command
  // can run again: a graph (graph.h) runs its commands once per replay.
  // Not concurrent with Execute or Cancel.
  virtual void Rearm() {}
  // Records the command's device work into `recorder`, to be replayed as
  // one unit with the rest of its graph (runtime/device/recorded_work.h),
  // and returns how many kernels it recorded; UNIMPLEMENTED (the default)
  // when it cannot be recorded: the graph then replays command by command.
  virtual absl::StatusOr<size_t> Record(WorkRecorder& recorder);
  // After a recorded replay on `device`: what Execute would have returned,
  // given the contexts its recorded kernels ended with (as many as Record
  // recorded, in order). Rearm runs before each replay as before Execute.
  virtual absl::Status Replayed(Device& /*device*/, absl::Span<const wp::launch_ctx> /*ctxs*/) {
    return absl::OkStatus();
  }
  // The text the command printed (kernel print()/printf() output, already
  // formatted and bounded; kernel_output.h), taken once after Execute.
  virtual std::string TakeOutput() { return {}; }
  // "launch inc", "copy", for logs.
  virtual std::string Describe() const = 0;
  // Kernel launches one Execute runs (a repeated launch: its runs; a graph
  // replay: the graph's launches), for the launches metric.
  virtual uint64_t Launches() const { return 0; }
  // The use lock of the objects a launch may query (ObjectTable::use_lock),
  // which a batch or a recorded replay holds shared while it runs; null
  // for commands without objects.
  virtual absl::Mutex* ObjectLock() const { return nullptr; }
  // How deep the graphs this command runs nest (a replay or a conditional:
  // its graphs'; graph.h bounds it); 0 for a command that runs no graph.
  virtual int GraphDepth() const { return 0; }

  // Bytes the command keeps while it exists and is not running: the object,
  // its queue or graph slot, what it owns (an argument block, a fill
  // value); not the arrays and modules it shares, which are charged where
  // they were made. What a running command allocates is bounded separately
  // (kernel_output.h).
  virtual uint64_t HeldBytes() const { return kBaseBytes; }
  // A small command's cost: the object, its unique_ptr slot and queue entry,
  // allocator overhead.
  static constexpr uint64_t kBaseBytes = 256;

  // Keeps `charge` (HeldBytes charged to the session) until the command is
  // destroyed.
  void AttachCharge(MemoryCharge charge) { charge_ = std::move(charge); }

 private:
  MemoryCharge charge_;
};

// dst <- src. Both on `device`, of one element size and the same shape, any
// strides (array_bytes.h); INVALID_ARGUMENT otherwise. On a GPU's stream,
// one side may instead be a contiguous CPU array (not of structs holding
// arrays): its host memory is uploaded or downloaded by the GPU device, in
// the GPU stream's order (the CPU stream's queued work is not waited for).
// Between two GPUs, the copy runs on the stream of either (`device`), moving
// the other's array through its device, which `devices` finds (without
// `devices`: INVALID_ARGUMENT); the bytes go through host memory in pieces
// of kPeerCopyPieceBytes (one piece when either side is strided, charged as
// the command's held bytes). The other device's queued work is not waited
// for: the caller orders the copy after it (the client queues a WaitStream).
using DeviceLookup = absl::FunctionRef<absl::StatusOr<Device*>(const std::string&)>;
inline constexpr uint64_t kPeerCopyPieceBytes = uint64_t{16} << 20;
absl::StatusOr<std::unique_ptr<Command>> PrepareCopy(std::shared_ptr<const Array> dst,
                                                     std::shared_ptr<const Array> src,
                                                     const std::string& device,
                                                     const DeviceLookup* devices = nullptr);

// Every element of `array` <- `value` (one element's bytes; its size must be
// the element size). A struct holding arrays names them by handle, resolved
// with `lookup` (array_members.h; INVALID_ARGUMENT without one).
absl::StatusOr<std::unique_ptr<Command>> PrepareFill(std::shared_ptr<const Array> array,
                                                     std::string value,
                                                     const std::string& device, const ArrayLookup* lookup = nullptr);

// Drops the stream's reference to `array` in stream order: the memory is
// released once no earlier command still uses it.
absl::StatusOr<std::unique_ptr<Command>> PrepareFree(std::shared_ptr<const Array> array,
                                                     const std::string& device);

// INVALID_ARGUMENT unless `array` lives on `device`. `what` names it in the
// message ("copy destination", "argument 'a' of kernel 'inc'").
absl::Status CheckArrayDevice(const Array& array, const std::string& device,
                              const std::string& what);

}  // namespace warpd::runtime
