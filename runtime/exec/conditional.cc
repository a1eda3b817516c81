#include "runtime/exec/conditional.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "runtime/exec/output_buffer.h"

namespace warpd::runtime {
namespace {

class ConditionalCommand final : public Command {
 public:
  ConditionalCommand(std::shared_ptr<const Array> condition, std::shared_ptr<Graph> then_graph,
                     std::shared_ptr<Graph> else_graph, bool loop)
      : condition_(std::move(condition)),
        then_(std::move(then_graph)),
        else_(std::move(else_graph)),
        loop_(loop) {}

  absl::Status Execute(Device& device) override {
    const absl::Duration limit = device.launch_time_limit();
    const absl::Time start = absl::Now();
    for (uint64_t iteration = 0;; ++iteration) {
      // Element 0 (PrepareConditional checked it exists): the commands before
      // this one have finished, so it holds what they left.
      int32_t value = 0;
      if (absl::Status s =
              device.Download(*condition_, 0, absl::MakeSpan(reinterpret_cast<std::byte*>(&value), sizeof(value)));
          !s.ok()) {
        return s;
      }
      Graph* graph = value != 0 ? then_.get() : else_.get();
      if (graph == nullptr) return absl::OkStatus();
      std::unique_ptr<Command> replay = graph->MakeReplay();
      {
        absl::MutexLock lock(&mu_);
        if (cancelled_) return absl::CancelledError(absl::StrCat(Describe(), " was cancelled"));
        running_ = replay.get();
      }
      absl::Status status = replay->Execute(device);
      output_.Append(replay->TakeOutput());
      {
        absl::MutexLock lock(&mu_);
        running_ = nullptr;
      }
      if (!status.ok()) return status;
      if (!loop_) return absl::OkStatus();
      if (limit > absl::ZeroDuration() && absl::Now() - start > limit) {
        return absl::DeadlineExceededError(absl::StrCat(
            "a capture_while loop ran ", iteration + 1, " iterations, longer than this server's launch time limit of ",
            absl::FormatDuration(limit), ", and was stopped: its body must set the condition's first element to 0"));
      }
    }
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (running_ != nullptr) running_->Cancel();
  }

  void Rearm() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = false;
  }

  std::string TakeOutput() override {
    return output_.Take(absl::StrCat(" of a ", loop_ ? "capture_while" : "capture_if"),
                        absl::StrCat("its graphs printed more than ", kMaxOutput, " bytes"));
  }

  std::string Describe() const override {
    return loop_ ? absl::StrCat("capture_while (", then_->size(), " commands)") : std::string("capture_if");
  }

  uint64_t Launches() const override { return 0; }  // counted by the replays it runs
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this); }
  int GraphDepth() const override {
    return std::max(then_ ? then_->depth() : 0, else_ ? else_->depth() : 0);
  }

 private:
  static constexpr size_t kMaxOutput = size_t{1} << 20;
  const std::shared_ptr<const Array> condition_;
  const std::shared_ptr<Graph> then_, else_;
  const bool loop_;
  OutputBuffer output_{kMaxOutput};
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Command* running_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareConditional(std::shared_ptr<const Array> condition,
                                                            std::shared_ptr<Graph> then_graph,
                                                            std::shared_ptr<Graph> else_graph, bool loop,
                                                            const std::string& device) {
  const char* what = loop ? "capture_while" : "capture_if";
  if (condition->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the condition array is on '", condition->device(), "', not '", device, "'"));
  }
  const types::TypeRef dtype = condition->dtype();
  if (!dtype->is_scalar() || dtype->scalar() != types::ScalarKind::kInt32 || condition->size_bytes() < 4) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the condition must be an int32 array of at least one "
                                                   "element, got ", condition->TypeName(), " of ",
                                                   condition->size_bytes(), " bytes"));
  }
  if (loop && then_graph == nullptr) return absl::InvalidArgumentError("capture_while needs a body graph");
  for (const auto* g : {&then_graph, &else_graph}) {
    if (*g != nullptr && (*g)->device() != device) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": a graph captured on '", (*g)->device(), "' cannot run on '", device, "'"));
    }
  }
  return std::make_unique<ConditionalCommand>(std::move(condition), std::move(then_graph), std::move(else_graph),
                                              loop);
}

}  // namespace warpd::runtime
