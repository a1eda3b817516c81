// warpd server: turns a SubmitRequest's commands into prepared stream
// commands, resolving handles through the session.
//
// All or nothing: every command is resolved and checked before any is
// queued. Unknown handles (of arrays or modules, including ones freed earlier
// in the same batch) are NOT_FOUND; everything else wrong is
// INVALID_ARGUMENT (see runtime/exec/launch.h and command.h). On success the
// arrays freed by the batch are already gone from the session's table.
// Thread-safe (the session is).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/exec/graph.h"
#include "server/session.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// At most this many commands per Submit.
inline constexpr int kMaxCommandsPerBatch = 1 << 16;

absl::StatusOr<std::vector<std::unique_ptr<runtime::Command>>> PrepareBatch(
    Session& session, const std::string& device,
    const google::protobuf::RepeatedPtrField<v1::Command>& commands);

// A graph of `commands` (launches, copies and fills only, else
// INVALID_ARGUMENT), prepared like a batch; nothing runs. Errors as for
// PrepareBatch.
absl::StatusOr<std::shared_ptr<runtime::Graph>> PrepareGraph(
    Session& session, const std::string& device, const google::protobuf::RepeatedPtrField<v1::Command>& commands);

}  // namespace warpd::server
