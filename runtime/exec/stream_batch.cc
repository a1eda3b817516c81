// Stream batches: a stream's queued launches, copies and fills run on a
// device that issues work asynchronously (Device::BatchesWork: a GPU) as one
// unit (Device::BatchWork, recorded_work.h), issued back to back and waited
// for once, instead of one round trip to the device per command.
//
// A batch starts with the command the turn took and takes the commands
// queued behind it while they are ready (no wait for another stream), the
// stream has no error, and each records (a kernel that prints, a strided
// copy, a fill memset cannot write do not: they run alone, after the
// batch). Up to kMaxBatch commands, so a turn stays bounded; a lone command
// is a plain Execute, but for a repeated launch, whose runs are issued back
// to back. Each kernel keeps the launch time limit of its own per run
// (CudaDevice::AwaitWork's marks). Each command's outcome comes from the contexts its kernels
// ended with (Command::Replayed), in order: the first failure is the
// stream's error. The commands after a failing one in the same batch have
// run; those queued after the batch are skipped as after any error.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/abi/compiled_module.h"
#include "runtime/device/recorded_work.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {

namespace {

// The most commands one batch takes; the turn then goes on as usual.
constexpr size_t kMaxBatch = 512;

}  // namespace

bool Stream::RunBatch(Entry& first, uint64_t cancels) {
  // A batch of one command is a plain Execute, unless it launches a kernel
  // repeatedly (a client's run of identical launches): its runs are issued
  // back to back with one wait, as a batch's.
  const bool repeated = first.command->Launches() > 1;
  {
    absl::MutexLock lock(&mu_);
    if (!error_.ok() || (!repeated && (queue_.empty() || queue_.front().command->prerequisite() != nullptr))) {
      return false;
    }
  }
  absl::StatusOr<std::unique_ptr<WorkRecorder>> recorder = device_->BatchWork();
  if (!recorder.ok()) return false;
  // Recording copies what it needs and changes nothing in the command.
  absl::StatusOr<size_t> first_kernels = first.command->Record(**recorder);
  if (!first_kernels.ok()) return false;
  int32_t cancel = 0;
  {
    absl::MutexLock lock(&mu_);
    // A Cancel since the turn took `first` reached it through running_ (and
    // dropped the queue): it runs, and stops, on its own.
    if (cancels_ != cancels) return false;
    running_ = nullptr;
    batch_cancel_ = &cancel;
  }
  std::vector<Entry> batch;
  std::vector<size_t> kernels;
  batch.push_back(std::move(first));
  kernels.push_back(*first_kernels);
  std::vector<Entry> alone;  // taken from the queue, not recorded: run after the batch
  while (batch.size() < kMaxBatch) {
    Entry next;
    {
      absl::MutexLock lock(&mu_);
      if (queue_.empty() || !error_.ok() || __atomic_load_n(&cancel, __ATOMIC_RELAXED) != 0 ||
          queue_.front().command->prerequisite() != nullptr) {
        break;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      ReleaseQueued(1);
    }
    absl::StatusOr<size_t> n = next.command->Record(**recorder);
    if (!n.ok()) {  // it recorded nothing (recorded_work.h)
      alone.push_back(std::move(next));
      break;
    }
    batch.push_back(std::move(next));
    kernels.push_back(*n);
  }

  // One command recorded (the next one did not record): it runs on its own,
  // unless it is a repeated launch.
  absl::StatusOr<std::unique_ptr<RecordedWork>> work = batch.size() > 1 || repeated
                                                           ? (*recorder)->Finish()
                                                           : absl::UnimplementedError("a batch of one command");
  recorder->reset();
  if (!work.ok()) {
    // The device could not take the batch as a whole (its memory for the
    // contexts, ...): one by one, with their own errors.
    for (Entry& e : batch) RunTaken(std::move(e), cancel);
  } else {
    absl::Status status;
    if (__atomic_load_n(&cancel, __ATOMIC_RELAXED) != 0) {
      status = absl::CancelledError("the stream was cancelled before its batch ran");
    } else {
      // Zeroed: no fault and no cancel where Run leaves a context unset.
      std::vector<wp::launch_ctx> ctxs((*work)->kernels());
      // The session's objects unchanged while its launches may query them
      // (one lock per session, so the first launch's stands for all).
      std::optional<absl::ReaderMutexLock> objects_in_use;
      for (const Entry& e : batch) {
        if (absl::Mutex* lock = e.command->ObjectLock(); lock != nullptr) {
          objects_in_use.emplace(lock);
          break;
        }
      }
      const absl::Status ran = (*work)->Run(absl::MakeSpan(ctxs), &cancel);
      // A kernel's fault first (a stopped or failed run filled the contexts
      // of what it issued), then the run's own error.
      size_t at = 0;
      for (size_t i = 0; i < batch.size() && status.ok(); ++i) {
        status = batch[i].command->Replayed(*device_, absl::MakeConstSpan(ctxs).subspan(at, kernels[i]));
        at += kernels[i];
      }
      if (status.ok()) status = ran;
    }
    work->reset();
    std::vector<absl::AnyInvocable<void() &&>> reached;
    {
      absl::MutexLock lock(&mu_);
      reached = CompleteLocked(batch.back().sequence, std::move(status), {});
    }
    // Dropped before the stream can count as idle (see RunTurn).
    batch.clear();
    for (auto& r : reached) std::move(r)();
  }
  for (Entry& e : alone) RunTaken(std::move(e), cancel);
  absl::MutexLock lock(&mu_);
  batch_cancel_ = nullptr;  // until here a Cancel reaches what the batch took
  return true;
}

void Stream::RunTaken(Entry entry, const int32_t& cancel) {
  bool skip;
  {
    absl::MutexLock lock(&mu_);
    // After a Cancel (which set `cancel`, the batch's word) the stream's
    // queue was dropped: so is what the batch took.
    skip = !error_.ok() || __atomic_load_n(&cancel, __ATOMIC_RELAXED) != 0;
    if (!skip) running_ = entry.command.get();
  }
  absl::Status status;
  std::string output;
  if (!skip) {
    status = entry.command->Execute(*device_);
    output = entry.command->TakeOutput();
  }
  std::vector<absl::AnyInvocable<void() &&>> reached;
  {
    absl::MutexLock lock(&mu_);
    reached = CompleteLocked(entry.sequence, std::move(status), std::move(output));
  }
  entry.command.reset();
  for (auto& r : reached) std::move(r)();
}

}  // namespace warpd::runtime
