// warpd server: who may do what in warpd.v1.Admin (warpctl).
//
// The caller is the tenant of its bearer token (auth/authenticate.h): the
// same proof as for every Runtime call, so a caller without a token, or
// with an unknown one, never gets here. An admin is a tenant the operator
// marked so: without a tenants file the daemon's own user (its only tenant:
// the login socket gives its token to that uid only, the token file is
// 0600), with one a tenant with "admin": true. Any tenant may read its own
// status, usage, sessions and persistent arrays and free its own persistent
// arrays; only an admin may read another tenant's, or act on the whole
// daemon (clear the kernel cache, reload the tenants file, drain).
// A non-admin that names another tenant gets PERMISSION_DENIED whether or
// not that tenant exists, so names cannot be probed.
// Thread-safe (pure functions over the registry).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/tenants/tenant.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server::admin {

// OK for an admin; else PERMISSION_DENIED naming `action` and the rule.
absl::Status RequireAdmin(const Tenant& caller, std::string_view action);

// The tenants a request about `requested` (empty: every tenant the caller
// may see) covers: an admin gets all of them, or the one it names (NOT_FOUND
// when there is none); another caller gets its own tenant, and
// PERMISSION_DENIED when it names any other.
absl::StatusOr<std::vector<std::shared_ptr<Tenant>>> VisibleTenants(const TenantRegistry& tenants,
                                                                    const std::shared_ptr<Tenant>& caller,
                                                                    std::string_view requested);

// The one tenant a request about `requested` (empty: the caller's) acts on,
// by the same rules.
absl::StatusOr<std::shared_ptr<Tenant>> TargetTenant(const TenantRegistry& tenants,
                                                     const std::shared_ptr<Tenant>& caller,
                                                     std::string_view requested);

}  // namespace warpd::server::admin
