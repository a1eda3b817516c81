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

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/device/device.h"
#include "runtime/exec/graph.h"
#include "server/session.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// At most this many commands per Submit.
inline constexpr int kMaxCommandsPerBatch = 1 << 16;

// CreateTree commands make their objects as they are prepared (so later
// commands of the batch find them), and nothing to run: on failure they
// are removed again; on success their ids go to `created` (if not null),
// for the caller to remove should queueing the batch fail.
// `stream` is the one the batch goes to (a WaitStream command must name
// another one). `devices` finds the device a copy from another GPU reads
// from (null: such copies are refused).
absl::StatusOr<std::vector<std::unique_ptr<runtime::Command>>> PrepareBatch(
    Session& session, runtime::Device& device,
    const google::protobuf::RepeatedPtrField<v1::Command>& commands, std::vector<uint64_t>* created = nullptr,
    const runtime::Stream* stream = nullptr, const runtime::DeviceLookup* devices = nullptr);

// A graph of `commands` (launches, copies and fills only, else
// INVALID_ARGUMENT), prepared like a batch; nothing runs. Errors as for
// PrepareBatch.
absl::StatusOr<std::shared_ptr<runtime::Graph>> PrepareGraph(
    Session& session, const std::string& device, const google::protobuf::RepeatedPtrField<v1::Command>& commands);

}  // namespace warpd::server
