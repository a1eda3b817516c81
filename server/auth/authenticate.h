// warpd server: who is calling: the tenant of a call's bearer token.
//
// Every warpd.v1.Runtime call carries "authorization: Bearer <token>"
// metadata; AuthenticateCall maps it to a tenant, or UNAUTHENTICATED (no
// token, a malformed one, or one no tenant has); CallCredential names the
// token it presented (TenantRegistry::CredentialOf), which OpenSession
// records so that the session closes when a reload revokes that token.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(const TenantRegistry& tenants,
                                                         const grpc::ServerContextBase& ctx);
// The SHA-256 (hex) of the call's bearer token; empty when the call carries
// none, a malformed one, or more than one 'authorization' entry (calls that
// AuthenticateCall refuses).
std::string CallCredential(const grpc::ServerContextBase& ctx);

}  // namespace warpd::server
