// warpd runtime: captured graphs run on a condition (Warp's wp.capture_if
// and wp.capture_while), as one stream command.
//
// The condition is the first element of an int32 array, read when the
// command runs (so a kernel or fill queued before it decides): nonzero runs
// `then_graph`, zero `else_graph` (either may be absent: nothing runs). A
// loop replays `then_graph` while the element is nonzero, reading it again
// before each iteration; the graph's own commands are what change it.
//
//   WARPD_ASSIGN_OR_RETURN(auto cmd, PrepareConditional(counter, body, nullptr, /*loop=*/true, "cpu"));
//   stream->Submit({std::move(cmd)});  // while counter[0]: replay body
//
// A loop stops with DEADLINE_EXCEEDED once it has run longer than the
// device's launch time limit (when it has one): a body that never clears
// its condition must not keep the stream forever. It stops with CANCELLED
// when the stream cancels it, and at the first failing command of a
// replay, whose error it returns. May itself be captured into a graph:
// graph.h bounds how deep graphs nest (Graph::kMaxDepth).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/exec/graph.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

// INVALID_ARGUMENT unless `condition` is an int32 array of at least one
// element on `device` and each graph given was captured on `device`; a loop
// needs `then_graph`.
absl::StatusOr<std::unique_ptr<Command>> PrepareConditional(std::shared_ptr<const Array> condition,
                                                            std::shared_ptr<Graph> then_graph,
                                                            std::shared_ptr<Graph> else_graph, bool loop,
                                                            const std::string& device);

}  // namespace warpd::runtime
