// warpd server: HoldSession: a client holds its session's lease by keeping
// one server-streaming call open.
//
// The call is authenticated and its session resolved like any other; the
// server then writes one LeaseEvent (the grace period) and keeps the call
// open. While it is open the session does not lapse (Session::AddHolder).
// It ends when the client cancels it or its connection drops (a killed
// client's socket closes; HTTP/2 keepalive finds peers that vanished), which
// starts the grace period, or when the session closes, which finishes the
// call with OK. The reactor deletes itself when gRPC is done with it, and
// takes its close listener off the session then, so a session that outlives
// many streams keeps none of theirs; the listener holds only a shared handle
// that outlives the reactor (Close may be calling it as the stream ends).
#pragma once

#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/daemon_state.h"

namespace warpd::server {

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartHoldSession(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request);

}  // namespace warpd::server
