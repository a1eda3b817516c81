// warpd server: the work of Submit and Synchronize, shared by the gRPC
// service (runtime_service.cc) and the local command socket
// (local/local_commands.cc), so both transports validate, queue, wait and
// count alike.
//
// Nothing here blocks: waiting is a callback (SynchronizeStreams). Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/exec/stream.h"
#include "server/daemon_state.h"
#include "server/tenants/tenant.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// Validates and queues the request's batch (all or nothing: submit.h); sets
// the response's sequence and returns the stream the batch went to.
// Ignores `synchronize` (the caller waits). `run_here` and `then`:
// Stream::Submit's, for callers on a thread of their own that will wait for
// the batch (`then` gets its status even if the session closes meanwhile).
absl::StatusOr<std::shared_ptr<runtime::Stream>> SubmitBatch(
    DaemonState* state, const Tenant& tenant, const v1::SubmitRequest& req, v1::SubmitResponse* resp,
    bool run_here = false, absl::AnyInvocable<void(absl::Status) &&> then = nullptr);

// The streams a Synchronize request waits for: the named device's, or all
// of the session's (none when the session has not used the device).
absl::StatusOr<std::vector<std::shared_ptr<runtime::Stream>>> StreamsToSynchronize(
    DaemonState* state, const Tenant& tenant, const v1::SynchronizeRequest& req);

// A Synchronize's read_times: INVALID_ARGUMENT for more than 64 slots or a
// slot past the session's (checked before anything waits); then, once the
// wait is over, the slots' times into `resp` (zero for a slot never stamped).
absl::Status CheckReadTimes(const v1::SynchronizeRequest& req);
absl::Status ReadTimes(DaemonState* state, const Tenant& tenant, const v1::SynchronizeRequest& req,
                       v1::SynchronizeResponse* resp);

// Calls `done` once every one of `streams` has drained, with the first
// sticky error among them (every stream's error is cleared), at once on
// this thread when all are idle or there are none, else on the executor
// thread that drains the last one. `done` must not block.
void SynchronizeStreams(const std::vector<std::shared_ptr<runtime::Stream>>& streams,
                        absl::AnyInvocable<void(absl::Status) &&> done);

// The kernel output waiting on `streams`, taken, one stream after another.
std::string TakeOutput(const std::vector<std::shared_ptr<runtime::Stream>>& streams);

// Counts a stream's sticky error as it is reported: a kernel fault, or a
// launch stopped (timed out or cancelled). OK counts nothing.
void CountStreamError(DaemonState* state, const Tenant& tenant, const absl::Status& s);

}  // namespace warpd::server
