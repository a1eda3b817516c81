// warpd server: who may map which array: the share socket's answer.
//
// A request names a bearer token, a session token and an array handle. The
// token must be a tenant's, the session that tenant's, the handle one of the
// session's CPU arrays, and the array's memory must come from that
// session's own pool (an array made persistent and adopted by another
// session is not mapped: its segment may hold the first session's arrays).
// Anything else is the same error the RPCs give. Thread-safe.
#pragma once

#include "server/local/share_socket.h"
#include "server/session_manager.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {

// Both must outlive the returned function.
ShareSocket::Answer ShareArrays(const TenantRegistry& tenants, const SessionManager& sessions);

}  // namespace warpd::server
