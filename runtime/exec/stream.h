// warpd runtime: an ordered command stream of one session on one device.
//
// Like a CUDA stream: Submit appends a batch of prepared commands and returns
// at once; the commands run asynchronously, one after another in submission
// order, on the shared stream executor (scheduler.h). The stream belongs to a
// StreamGroup (its tenant): the executor gives it turns of a bounded length
// (one command, or several up to a small time budget), fairly between groups
// by weight, and never runs two turns of one stream at once, which is what
// keeps the order. The first failing command makes its status the stream's
// sticky error: later commands are skipped (dropped, so the arrays they held
// are released) until Synchronize reports the error and clears it.
//
// Batches: on a device that issues work asynchronously (a GPU;
// Device::BatchesWork), the launches, copies and fills queued back to back
// run as one batch (stream_batch.cc; recorded_work.h): issued together,
// waited for once. A kernel's fault there does not stop the commands after
// it in the same batch, which have run (as CUDA streams in Warp); the fault
// is still the stream's error, reported with its command's file and line,
// and the commands queued after the batch are skipped as after any error.
//
// Queue limits: at most `max_queued` commands wait (not counting the running
// one), and, when the stream is given a shared `queue_quota` (its tenant's),
// the commands waiting on all the streams sharing it stay within that
// quota's limit; a Submit that would pass either fails with
// RESOURCE_EXHAUSTED and queues nothing.
//
// Output: the text a command printed (kernel print()/printf(), see
// kernel_output.h) is appended to the stream's pending output when the
// command finishes, so it is in submission order; TakeOutput hands it over.
// At most kMaxPendingOutput bytes wait, charged to the stream's memory
// account when it has one (output_buffer.h): past that bound, or when the
// charge is refused, output is dropped until the next TakeOutput, whose text
// then ends with one note saying how much and why.
//
//   auto stream = Stream::Create(device, scheduler.CreateGroup("alice", 1));
//   WARPD_ASSIGN_OR_RETURN(uint64_t last, stream->Submit(std::move(commands)));
//   absl::Status s = stream->Synchronize();  // e.g. OUT_OF_RANGE from a fault
//
// Waiting: Synchronize and WaitIdle block the caller; SynchronizeAsync and
// WhenIdle never block: their callbacks run at once when the stream is idle,
// else on the executor thread that finishes the stream's last command. Code
// on shared threads (gRPC, RPC pools) must use the callback forms.
//
// Ownership: streams are shared_ptr (the scheduler holds one while the stream
// is queued or running); a stream holds its group. The device and the
// group's scheduler must outlive every stream. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/count_quota.h"
#include "runtime/device/device.h"
#include "runtime/exec/command.h"
#include "runtime/exec/output_buffer.h"
#include "runtime/exec/scheduler.h"

namespace warpd::runtime {

class Stream : public std::enable_shared_from_this<Stream>, public Schedulable {
 public:
  static constexpr size_t kDefaultMaxQueued = size_t{1} << 18;
  static constexpr size_t kMaxPendingOutput = 1 << 20;

  // `group` (not null) is the tenant whose share of the executor the stream
  // runs in. `max_queued` >= 1. `queue_quota` (may be null) counts the
  // commands waiting on this stream together with those of other streams.
  // `memory` (may be null) is charged the output waiting to be read.
  static std::shared_ptr<Stream> Create(Device* device, std::shared_ptr<StreamGroup> group,
                                        size_t max_queued = kDefaultMaxQueued,
                                        std::shared_ptr<CountQuota> queue_quota = nullptr,
                                        std::shared_ptr<MemoryAccount> memory = nullptr);
  ~Stream() override;

  Device* device() const { return device_; }
  StreamGroup& group() const { return *group_; }

  // Queues the batch in order; returns the sequence number of its last
  // command (sequence numbers start at 1; an empty batch returns the last
  // number handed out). RESOURCE_EXHAUSTED, queueing nothing, when the
  // queue would then hold more than max_queued commands.
  // With `run_here`, for a caller about to wait for the batch anyway: when
  // the stream was idle, its first turn runs on the calling thread if the
  // scheduler allows (StreamGroup::TryRunHere), sparing a thread wake; the
  // rest (if any) runs on the executor as usual.
  // With `then`, also registers it as SynchronizeAsync would, in the same
  // step as the batch is queued: before any turn runs (one run here
  // included), so it gets the batch's error even when a Cancel meanwhile
  // clears the stream's. Not called when Submit fails.
  absl::StatusOr<uint64_t> Submit(std::vector<std::unique_ptr<Command>> batch, bool run_here = false,
                                  absl::AnyInvocable<void(absl::Status) &&> then = nullptr);

  // The RESOURCE_EXHAUSTED that Submit would give a batch of `commands` now,
  // or OK. For callers whose preparation of a batch has side effects (the
  // server removes freed handles): check, prepare, then Submit (which checks
  // again; a concurrent Submit may have taken the room meanwhile).
  absl::Status CheckRoom(size_t commands) const;

  // Waits until every submitted command has run (or been skipped), then
  // returns the sticky error, if any, and clears it. Blocks the caller.
  absl::Status Synchronize();

  // Like Synchronize, without blocking: calls `done` with the sticky error
  // (then cleared) once every command submitted so far has run, either at
  // once on this thread or later on the executor thread that drains the
  // stream. `done` must not block, and must not call into this stream except
  // TakeOutput (it runs without the stream's lock).
  void SynchronizeAsync(absl::AnyInvocable<void(absl::Status) &&> done);

  // Like SynchronizeAsync, but leaves the sticky error in place: calls
  // `done` once every command submitted so far has run. Same rules for
  // `done`.
  void WhenIdle(absl::AnyInvocable<void() &&> done);

  // Returns and clears the output of the commands finished so far (never
  // waits for running ones).
  std::string TakeOutput();

  // Waits until every submitted command has run; leaves the error in place.
  // Blocks the caller.
  void WaitIdle();

  // Drops the queued commands, asks the running one to stop, and waits until
  // it has (never for other streams' turns). For closing a session; the
  // error is cleared. Pending SynchronizeAsync callbacks get the sticky
  // error, or CANCELLED when commands were dropped.
  void Cancel();

  uint64_t completed() const;
  // The sequence number of the last command submitted (0: none yet).
  uint64_t submitted() const;
  // Calls `done` once every command up to `sequence` has run, been skipped
  // or been dropped: at once when they have, else on the thread that
  // completes them (or cancels the stream). `done` must not block, nor call
  // into this stream.
  void WhenReached(uint64_t sequence, absl::AnyInvocable<void() &&> done);
  // Commands waiting to run (not counting a running one), for metrics.
  size_t queued() const;
  size_t max_queued() const { return max_queued_; }

 private:
  Stream(Device* device, std::shared_ptr<StreamGroup> group, size_t max_queued,
         std::shared_ptr<CountQuota> queue_quota, std::shared_ptr<MemoryAccount> memory)
      : device_(device), group_(std::move(group)), max_queued_(max_queued), queue_quota_(std::move(queue_quota)),
        batches_(device->BatchesWork()), output_(kMaxPendingOutput, std::move(memory)) {}

  struct Entry {
    uint64_t sequence;
    std::unique_ptr<Command> command;
    bool ready = false;  // its prerequisite (if any) was found met
  };
  // A callback waiting for the stream to go idle; `clears` when it is a
  // SynchronizeAsync (takes the sticky error).
  struct IdleWaiter {
    bool clears;
    absl::AnyInvocable<void(absl::Status) &&> done;
  };

  bool RunTurn(absl::FunctionRef<bool()> within_slice) override;
  // Runs `first`, just taken from the queue (busy_ set, running_ it), and
  // the ready commands queued behind it as one batch of device work
  // (stream_batch.cc), then what it took but could not batch, one by one.
  // False, with `first` untouched, when nothing is batched: the device does
  // not batch, nothing ready follows, or `first` does not record.
  // `cancels`: cancels_ when the turn took `first`.
  bool RunBatch(Entry& first, uint64_t cancels);
  // Runs a command taken from the queue, or skips it after an error or a
  // Cancel; then counts it completed and drops it.
  void RunTaken(Entry entry, const int32_t& cancel);
  // Counts `sequence` completed with `status` and `output`; the WhenReached
  // callbacks now due, to run once the command is dropped.
  std::vector<absl::AnyInvocable<void() &&>> CompleteLocked(uint64_t sequence, absl::Status status,
                                                            std::string output) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The WhenReached callbacks due now that completed_ advanced.
  std::vector<absl::AnyInvocable<void() &&>> TakeReachedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Called once the prerequisite a parked stream waits for is met.
  void Resume();
  absl::Status CheckRoomLocked(size_t commands) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static absl::Status QueueQuotaError(const absl::Status& refusal);
  void AddIdleWaiter(IdleWaiter waiter);
  // Takes the idle waiters and the status they get (clearing the error when
  // one of them is a SynchronizeAsync).
  std::vector<IdleWaiter> TakeIdleWaitersLocked(absl::Status* status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void RunIdleWaiters(std::vector<IdleWaiter> waiters, const absl::Status& status);
  void ReleaseQueued(size_t commands) {
    if (queue_quota_ != nullptr && commands != 0) queue_quota_->Release(commands);
  }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !busy_ && queue_.empty(); }

  Device* const device_;
  const std::shared_ptr<StreamGroup> group_;
  const size_t max_queued_;
  // Holds queue_.size() units while it is set.
  const std::shared_ptr<CountQuota> queue_quota_;
  const bool batches_;  // device_->BatchesWork()
  mutable absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  // Queued in the scheduler or running a turn (woken once, requeued by the
  // scheduler while a turn reports more work).
  bool scheduled_ ABSL_GUARDED_BY(mu_) = false;
  // A turn has taken a command and not yet dropped it.
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  Command* running_ ABSL_GUARDED_BY(mu_) = nullptr;
  // While a batch runs (instead of running_): its cancel word (relaxed
  // atomics), which Cancel sets.
  int32_t* batch_cancel_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Cancel calls so far.
  uint64_t cancels_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  OutputBuffer output_ ABSL_GUARDED_BY(mu_);
  // Always empty while the stream is idle: they run when it becomes idle.
  std::vector<IdleWaiter> idle_waiters_ ABSL_GUARDED_BY(mu_);
  // WhenReached callbacks by the sequence they wait for.
  std::multimap<uint64_t, absl::AnyInvocable<void() &&>> reach_waiters_ ABSL_GUARDED_BY(mu_);
  // The first queued command waits for another stream (Command::Prerequisite):
  // not scheduled, and not woken by a Submit, until Resume.
  bool parked_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace warpd::runtime
