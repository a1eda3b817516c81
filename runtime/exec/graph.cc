#include "runtime/exec/graph.h"

#include <optional>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "warpd/native/launch.h"
#include "runtime/exec/output_buffer.h"

namespace warpd::runtime {

class Graph::Replay final : public Command {
 public:
  explicit Replay(std::shared_ptr<Graph> graph) : graph_(std::move(graph)) {}

  absl::Status Execute(Device& device) override {
    absl::MutexLock run(&graph_->run_mu_);
    if (!graph_->record_tried_) graph_->TryRecord(device);
    if (graph_->recorded_ != nullptr) return RunRecorded(device);
    for (const std::unique_ptr<Command>& command : graph_->commands_) {
      {
        absl::MutexLock lock(&mu_);
        if (cancelled_) return absl::CancelledError("graph replay was cancelled");
        running_ = command.get();
        // Under the lock: a Cancel from now on reaches this command.
        command->Rearm();
      }
      absl::Status status = command->Execute(device);
      output_.Append(command->TakeOutput());
      {
        absl::MutexLock lock(&mu_);
        running_ = nullptr;
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (running_ != nullptr) running_->Cancel();
    __atomic_store_n(&cancel_word_, abi::kCancelShutdown, __ATOMIC_RELAXED);
  }

  std::string TakeOutput() override {
    return output_.Take(" of a graph replay", absl::StrCat("its commands printed more than ", kMaxReplayOutput,
                                                           " bytes"));
  }

  // One run of the recorded work, then each command's outcome from the
  // contexts of its kernels, the first failure first.
  absl::Status RunRecorded(Device& device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_->run_mu_) {
    for (const std::unique_ptr<Command>& command : graph_->commands_) command->Rearm();
    std::vector<wp::launch_ctx> ctxs(graph_->recorded_->kernels());
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return absl::CancelledError("graph replay was cancelled");
    }
    std::optional<absl::ReaderMutexLock> objects_in_use;  // as a batch's (stream_batch.cc)
    for (const std::unique_ptr<Command>& command : graph_->commands_) {
      if (absl::Mutex* lock = command->ObjectLock(); lock != nullptr) {
        objects_in_use.emplace(lock);
        break;
      }
    }
    const absl::Status ran = graph_->recorded_->Run(absl::MakeSpan(ctxs), &cancel_word_);
    if (!ran.ok() && !absl::IsDeadlineExceeded(ran) && !absl::IsCancelled(ran)) return ran;
    // A kernel's fault first (a stopped run filled the contexts too).
    size_t at = 0;
    for (size_t i = 0; i < graph_->commands_.size(); ++i) {
      const size_t n = graph_->recorded_kernels_[i];
      WARPD_RETURN_IF_ERROR(graph_->commands_[i]->Replayed(device, absl::MakeConstSpan(ctxs).subspan(at, n)));
      at += n;
    }
    return ran;
  }

  // The replay command itself; its graph is charged apart.
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this); }

  std::string Describe() const override { return absl::StrCat("graph replay (", graph_->size(), " commands)"); }

  uint64_t Launches() const override { return graph_->launches_; }
  int GraphDepth() const override { return graph_->depth_; }

 private:
  const std::shared_ptr<Graph> graph_;
  // Text printed by one replay's commands (each bounds its own); kept like
  // a stream's pending output, at most this much.
  static constexpr size_t kMaxReplayOutput = size_t{1} << 20;
  OutputBuffer output_{kMaxReplayOutput};
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // What a recorded run reads (relaxed atomics): abi::kCancelShutdown once
  // cancelled.
  int32_t cancel_word_ = 0;
  Command* running_ ABSL_GUARDED_BY(mu_) = nullptr;
};

absl::StatusOr<std::shared_ptr<Graph>> Graph::Create(std::string device,
                                                     std::vector<std::unique_ptr<Command>> commands,
                                                     QuotaHold hold) {
  if (commands.empty()) return absl::InvalidArgumentError("a graph needs at least one captured command");
  if (commands.size() > kMaxCommands) {
    return absl::InvalidArgumentError(
        absl::StrCat("a graph holds at most ", kMaxCommands, " commands, got ", commands.size()));
  }
  std::shared_ptr<Graph> graph(new Graph(std::move(device), std::move(commands), std::move(hold)));
  if (graph->depth_ > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("graphs nest at most ", kMaxDepth,
                                                   " deep (capture_if/capture_while bodies), this one ",
                                                   graph->depth_));
  }
  return graph;
}

void Graph::TryRecord(Device& device) {
  record_tried_ = true;
  absl::StatusOr<std::unique_ptr<WorkRecorder>> recorder = device.RecordWork();
  if (!recorder.ok()) return;
  std::vector<size_t> kernels;
  kernels.reserve(commands_.size());
  for (const std::unique_ptr<Command>& command : commands_) {
    absl::StatusOr<size_t> n = command->Record(**recorder);
    if (!n.ok()) return;
    kernels.push_back(*n);
  }
  // Whatever stops the recording (work it cannot take, the device's memory
  // or capture failing), the commands still replay one by one, each
  // reporting its own error if the device has one.
  absl::StatusOr<std::unique_ptr<RecordedWork>> work = (*recorder)->Finish();
  if (!work.ok()) return;
  recorded_ = *std::move(work);
  recorded_kernels_ = std::move(kernels);
}

std::unique_ptr<Command> Graph::MakeReplay() { return std::make_unique<Replay>(shared_from_this()); }

}  // namespace warpd::runtime
