// warpd runtime: a captured graph of commands, replayed as one command.
//
// Like a CUDA graph: the client captures a sequence of launches, copies and
// fills (wp.capture_begin/capture_end); the server prepares them once, with
// every handle resolved and every argument block built, into a Graph. A
// replay is then a single stream command (MakeReplay) that runs the prepared
// commands in order, stopping at the first error, which becomes the
// stream's sticky error like any command's. Nothing is resolved, validated
// or allocated per replay (beyond a print buffer for kernels that print).
//
//   WARPD_ASSIGN_OR_RETURN(auto graph, Graph::Create("cpu", std::move(commands)));
//   stream->Submit({graph->MakeReplay(), graph->MakeReplay()});  // runs it twice
//
// A device that records work (runtime/device/recorded_work.h: a GPU, into
// a CUDA graph) gets the commands recorded at the first replay and each
// replay run as one unit; a graph with a command that cannot be recorded
// (a kernel that prints, a nested graph, a strided copy, ...) replays
// command by command there too.
//
// Ownership: a graph owns its commands, which hold their arrays and modules,
// so freeing an array's handle does not free memory a graph still uses. A
// replay command holds its graph. Thread-safe: replays of one graph
// serialize (a session's graph runs on its one stream per device anyway).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/count_quota.h"
#include "runtime/device/recorded_work.h"
#include "runtime/exec/command.h"

namespace warpd::runtime {

class Graph : public std::enable_shared_from_this<Graph> {
 public:
  // At most this many commands per graph.
  static constexpr size_t kMaxCommands = size_t{1} << 16;
  // At most this many graphs inside one another (a graph holding a
  // capture_while whose body holds a capture_if, ...: conditional.h), so a
  // replay's recursion stays shallow.
  static constexpr int kMaxDepth = 8;

  // `commands` were prepared for `device` and must be re-runnable (launches,
  // copies, fills; not frees). INVALID_ARGUMENT when empty, too many, or
  // nesting graphs deeper than kMaxDepth.
  // `hold` (the owner's quota units for these commands) is released when
  // the graph is destroyed.
  static absl::StatusOr<std::shared_ptr<Graph>> Create(std::string device,
                                                       std::vector<std::unique_ptr<Command>> commands,
                                                       QuotaHold hold = {});

  const std::string& device() const { return device_; }
  size_t size() const { return commands_.size(); }
  // 1 + the deepest graph its commands run.
  int depth() const { return depth_; }

  // A command that runs the whole graph once.
  std::unique_ptr<Command> MakeReplay();

  // The graph object and its command list; the commands count their own
  // (Command::HeldBytes, charged by whoever prepared them).
  uint64_t HeldBytes() const { return sizeof(*this) + commands_.capacity() * sizeof(commands_[0]); }

 private:
  class Replay;
  Graph(std::string device, std::vector<std::unique_ptr<Command>> commands, QuotaHold hold)
      : device_(std::move(device)), hold_(std::move(hold)), commands_(std::move(commands)) {}

  const std::string device_;
  // Declared before commands_, so it is released after they are destroyed.
  const QuotaHold hold_;
  const std::vector<std::unique_ptr<Command>> commands_;
  // Kernel launches one replay runs (Command::Launches of the commands).
  const uint64_t launches_ = [this] {
    uint64_t n = 0;
    for (const auto& c : commands_) n += c->Launches();
    return n;
  }();
  const int depth_ = [this] {
    int d = 0;
    for (const auto& c : commands_) d = std::max(d, c->GraphDepth());
    return d + 1;
  }();
  // Records the commands on `device` (once: after it, recorded_ is set or
  // the graph replays command by command for good).
  void TryRecord(Device& device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run_mu_);

  // Held by a running replay: the commands keep per-run state.
  absl::Mutex run_mu_;
  bool record_tried_ ABSL_GUARDED_BY(run_mu_) = false;
  std::unique_ptr<RecordedWork> recorded_ ABSL_GUARDED_BY(run_mu_);
  // The contexts each command's recorded kernels report (Command::Record).
  std::vector<size_t> recorded_kernels_ ABSL_GUARDED_BY(run_mu_);
};

}  // namespace warpd::runtime
