// warpd server: who may map which array: the share socket's answer.
//
// A request names a bearer token, a session token and an array handle. The
// token must be a tenant's, the session that tenant's, the handle one of the
// session's CPU arrays, and the array's memory must come from that
// session's own pool (an array made persistent and adopted by another
// session is not mapped: its segment may hold the first session's arrays).
// A GPU array must be a plain array from the session's own exportable pool
// on that device (Device::ExportMemory): its pool's fd and the
// allocation's export data go to the client (CUDA IPC), with the view's
// place in the allocation. Anything else is the same error the RPCs give.
// Thread-safe.
#pragma once

#include "runtime/device/device_registry.h"
#include "server/local/share_socket.h"
#include "server/session_manager.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {

// Both must outlive the returned function.
ShareSocket::Answer ShareArrays(const TenantRegistry& tenants, const SessionManager& sessions,
                                const runtime::DeviceRegistry& devices);

}  // namespace warpd::server
