// warpd server: what the command socket does for a connection: Submit,
// Synchronize, small Downloads and CreateView of one session, exactly as the
// gRPC calls do them (stream_calls.h, transfer.h, view_rpcs.h), without gRPC.
//
// DOWNLOAD's body is a DownloadRequest, its reply one DownloadChunk with all
// the bytes asked for (at most kMaxLocalDownloadBytes; more is
// INVALID_ARGUMENT: use the Download RPC) and the kernel output of the work
// waited for. It waits, like Download, for the session's stream on the
// array's device, and reports its sticky error. The client uses it for
// arrays too small to map (local_map.py), where a gRPC stream's round trips
// were most of a small numpy().
//
// CREATE_VIEW's body is a CreateViewRequest, its reply the
// CreateViewResponse (view_rpcs.h): slicing an array in a client costs one
// frame instead of a gRPC round trip.
//
// HELLO's body is "<bearer token> <session token>": the token must be a
// tenant's and the session that tenant's, else the connection is refused
// with the error the RPCs give. The connection then speaks for that session
// only (the session fields of its requests are ignored), and its slot counts
// against that tenant (Handler::tenant). Every request is
// authenticated again (a tenant removed or a token changed by SIGHUP stops
// it) and runs with the tenant's quotas; a SYNCHRONIZE, or a SUBMIT with
// `synchronize`, waits on the connection's own thread. Replies count in the
// daemon's RPC metrics under the gRPC method names. Thread-safe.
#pragma once

#include "server/daemon_state.h"
#include "server/local/command_socket.h"

namespace warpd::server {

// A reply is one frame: data plus at most the stream's pending output
// (runtime::Stream::kMaxPendingOutput, 1 MiB) stay below kMaxFrame.
inline constexpr uint64_t kMaxLocalDownloadBytes = uint64_t{512} << 10;

// `state` must outlive the returned function and the handlers it makes.
CommandSocket::Open LocalCommands(DaemonState* state);

}  // namespace warpd::server
