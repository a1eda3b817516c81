#include "runtime/exec/stream.h"

#include <algorithm>
#include <string>
#include <utility>

namespace warpd::runtime {

std::shared_ptr<Stream> Stream::Create(Device* device, ThreadPool* executor) {
  return std::shared_ptr<Stream>(new Stream(device, executor));
}

// A scheduled drain holds a reference, so none is running when this runs.
Stream::~Stream() = default;

uint64_t Stream::Submit(std::vector<std::unique_ptr<Command>> batch) {
  bool start = false;
  uint64_t last;
  {
    absl::MutexLock lock(&mu_);
    for (auto& c : batch) queue_.push_back(Entry{next_sequence_++, std::move(c)});
    last = next_sequence_ - 1;
    if (!draining_ && !queue_.empty()) {
      draining_ = true;
      start = true;
    }
  }
  if (start) executor_->Schedule([self = shared_from_this()] { self->Drain(); });
  return last;
}

void Stream::Drain() {
  for (;;) {
    Entry entry;
    bool skip;
    {
      absl::ReleasableMutexLock lock(&mu_);
      if (queue_.empty()) {
        draining_ = false;
        if (idle_waiters_.empty()) return;
        // Every waiter registered before now sees the same (cleared) error.
        auto waiters = std::move(idle_waiters_);
        idle_waiters_.clear();
        absl::Status error = std::exchange(error_, absl::OkStatus());
        lock.Release();
        for (auto& w : waiters) std::move(w)(error);
        return;
      }
      entry = std::move(queue_.front());
      queue_.pop_front();
      skip = !error_.ok();
      if (skip) {
        completed_ = std::max(completed_, entry.sequence);
      } else {
        running_ = entry.command.get();
      }
    }
    if (!skip) {
      absl::Status status = entry.command->Execute(*device_);
      std::string output = entry.command->TakeOutput();
      absl::MutexLock lock(&mu_);
      AppendOutput(std::move(output));
      running_ = nullptr;
      completed_ = std::max(completed_, entry.sequence);
      if (!status.ok() && error_.ok()) error_ = std::move(status);
    }
    // Dropping the command releases its arrays and module (maybe unmapping
    // memory), so it happens outside the lock.
    entry.command.reset();
  }
}

void Stream::AppendOutput(std::string text) {
  if (text.empty()) return;
  // Once something was dropped, later output is dropped too, so the note at
  // the end of the text stands where the gap is.
  if (output_dropped_ > 0 || output_.size() + text.size() > kMaxPendingOutput) {
    output_dropped_ += text.size();
    return;
  }
  if (output_.empty()) {
    output_ = std::move(text);
  } else {
    output_ += text;
  }
}

std::string Stream::TakeOutput() {
  absl::MutexLock lock(&mu_);
  std::string out = std::exchange(output_, std::string());
  if (output_dropped_ > 0) {
    out += "[warpd: " + std::to_string(output_dropped_) +
           " bytes of kernel output dropped: more than " + std::to_string(kMaxPendingOutput) +
           " bytes were waiting to be read]\n";
    output_dropped_ = 0;
  }
  return out;
}

absl::Status Stream::Synchronize() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Stream::Idle));
  return std::exchange(error_, absl::OkStatus());
}

void Stream::SynchronizeAsync(absl::AnyInvocable<void(absl::Status) &&> done) {
  absl::Status error;
  {
    absl::MutexLock lock(&mu_);
    if (!Idle()) {
      idle_waiters_.push_back(std::move(done));
      return;
    }
    error = std::exchange(error_, absl::OkStatus());
  }
  std::move(done)(std::move(error));
}

void Stream::WaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Stream::Idle));
}

void Stream::Cancel() {
  std::deque<Entry> dropped;
  {
    absl::MutexLock lock(&mu_);
    dropped.swap(queue_);
    if (!dropped.empty()) completed_ = dropped.back().sequence;
    if (running_ != nullptr) running_->Cancel();
    mu_.Await(absl::Condition(this, &Stream::Idle));
    error_ = absl::OkStatus();
    output_.clear();
    output_dropped_ = 0;
  }
  dropped.clear();  // outside the lock, see Drain
}

uint64_t Stream::completed() const {
  absl::MutexLock lock(&mu_);
  return completed_;
}

}  // namespace warpd::runtime
