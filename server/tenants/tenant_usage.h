// warpd server: a tenant's use of its quotas, as warpd.v1.Usage (GetUsage,
// and the Admin service's status).
// Thread-safe (reads the tenant's counters).
#pragma once

#include "server/tenants/tenant.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

void FillUsage(Tenant& tenant, v1::Usage* usage);

}  // namespace warpd::server
