// warpd runtime: an ordered command stream of one session on one device.
//
// Like a CUDA stream: Submit appends a batch of prepared commands and returns
// at once; the commands run asynchronously, one after another in submission
// order, on a shared executor pool (at most one drain of a stream runs at a
// time, which is what keeps the order). The first failing command makes its
// status the stream's sticky error: later commands are skipped (dropped, so
// the arrays they held are released) until Synchronize reports the error and
// clears it.
//
// Output: the text a command printed (kernel print()/printf(), see
// kernel_output.h) is appended to the stream's pending output when the
// command finishes, so it is in submission order; TakeOutput hands it over.
// At most kMaxPendingOutput bytes wait: past that, output is dropped until
// the next TakeOutput, whose text then ends with one note saying how much.
//
//   auto stream = Stream::Create(device, executor);
//   stream->Submit(std::move(commands));
//   absl::Status s = stream->Synchronize();  // e.g. OUT_OF_RANGE from a fault
//
// Ownership: streams are shared_ptr (a queued drain holds one); the device
// and executor must outlive every stream. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/device.h"
#include "runtime/device/thread_pool.h"
#include "runtime/exec/command.h"

namespace warpd::runtime {

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  static std::shared_ptr<Stream> Create(Device* device, ThreadPool* executor);
  ~Stream();

  Device* device() const { return device_; }

  // Queues the batch in order; returns the sequence number of its last
  // command (sequence numbers start at 1; an empty batch returns the last
  // number handed out).
  uint64_t Submit(std::vector<std::unique_ptr<Command>> batch);

  // Waits until every submitted command has run (or been skipped), then
  // returns the sticky error, if any, and clears it.
  absl::Status Synchronize();

  // Like Synchronize, without blocking: calls `done` with the sticky error
  // (then cleared) once every command submitted so far has run, either at
  // once on this thread or later on the thread that drains the stream.
  // `done` must not block, and must not call into this stream except
  // TakeOutput (it runs without the stream's lock).
  void SynchronizeAsync(absl::AnyInvocable<void(absl::Status) &&> done);

  // Returns and clears the output of the commands finished so far (never
  // waits for running ones).
  std::string TakeOutput();

  // Waits until every submitted command has run; leaves the error in place.
  void WaitIdle();

  // Drops the queued commands, asks the running one to stop, and waits until
  // the stream is idle. For closing a session; the error is cleared.
  void Cancel();

  uint64_t completed() const;

  static constexpr size_t kMaxPendingOutput = 1 << 20;

 private:
  Stream(Device* device, ThreadPool* executor) : device_(device), executor_(executor) {}
  void Drain();
  void AppendOutput(std::string text) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !draining_ && queue_.empty(); }

  struct Entry {
    uint64_t sequence;
    std::unique_ptr<Command> command;
  };

  Device* const device_;
  ThreadPool* const executor_;
  mutable absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  Command* running_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  std::string output_ ABSL_GUARDED_BY(mu_);
  uint64_t output_dropped_ ABSL_GUARDED_BY(mu_) = 0;  // bytes, since the last TakeOutput
  // SynchronizeAsync callbacks waiting for the stream to go idle.
  std::vector<absl::AnyInvocable<void(absl::Status) &&>> idle_waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::runtime
