// warpd server: who is calling: the tenant of a call's bearer token.
//
// Every warpd.v1.Runtime call carries "authorization: Bearer <token>"
// metadata; AuthenticateCall maps it to a tenant, or UNAUTHENTICATED (no
// token, a malformed one, or one no tenant has). Thread-safe.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(const TenantRegistry& tenants,
                                                         const grpc::ServerContextBase& ctx);

}  // namespace warpd::server
