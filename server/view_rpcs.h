// warpd server: CreateView (runtime.proto), answered for the gRPC method
// (view_rpcs.cc) and for the command socket's CREATE_VIEW frame
// (local/local_commands.cc) alike.
//
// Looks `req.base()` up in `session` only (another session's handle is
// NOT_FOUND), checks the view (runtime/objects/array_view.h; at most
// --max-array-bytes), makes it a tenant array (tenant_array.h) and adds it
// to the session's handles. Errors: NOT_FOUND, INVALID_ARGUMENT, the quota's
// or the memory account's RESOURCE_EXHAUSTED, UNAUTHENTICATED when the
// session has closed. Thread-safe.
#pragma once

#include "absl/status/status.h"
#include "server/daemon_state.h"
#include "server/session.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

absl::Status CreateView(DaemonState* state, Session& session, const v1::CreateViewRequest& req,
                        v1::CreateViewResponse* resp);

}  // namespace warpd::server
