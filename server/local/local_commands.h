// warpd server: what the command socket does for a connection: Submit and
// Synchronize of one session, exactly as the gRPC calls do them
// (stream_calls.h), without gRPC.
//
// HELLO's body is "<bearer token> <session token>": the token must be a
// tenant's and the session that tenant's, else the connection is refused
// with the error the RPCs give. The connection then speaks for that session
// only: the session fields of its requests are ignored. Every request is
// authenticated again (a tenant removed or a token changed by SIGHUP stops
// it) and runs with the tenant's quotas; a SYNCHRONIZE, or a SUBMIT with
// `synchronize`, waits on the connection's own thread. Replies count in the
// daemon's RPC metrics under the gRPC method names. Thread-safe.
#pragma once

#include "server/daemon_state.h"
#include "server/local/command_socket.h"

namespace warpd::server {

// `state` must outlive the returned function and the handlers it makes.
CommandSocket::Open LocalCommands(DaemonState* state);

}  // namespace warpd::server
