#include "server/auth/authenticate.h"

#include <string_view>

namespace warpd::server {

namespace {

// The call's one 'authorization' metadata value: empty when there is none,
// an error when there are several.
absl::StatusOr<std::string_view> Authorization(const grpc::ServerContextBase& ctx) {
  const auto& metadata = ctx.client_metadata();
  const auto range = metadata.equal_range("authorization");
  if (range.first == range.second) return std::string_view();
  if (std::next(range.first) != range.second) {
    return absl::UnauthenticatedError("the call carries more than one 'authorization' metadata entry");
  }
  const grpc::string_ref value = range.first->second;
  return std::string_view(value.data(), value.size());
}

}  // namespace

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(const TenantRegistry& tenants,
                                                         const grpc::ServerContextBase& ctx) {
  absl::StatusOr<std::string_view> authorization = Authorization(ctx);
  if (!authorization.ok()) return authorization.status();
  return tenants.Authenticate(*authorization);
}

std::string CallCredential(const grpc::ServerContextBase& ctx) {
  absl::StatusOr<std::string_view> authorization = Authorization(ctx);
  return authorization.ok() ? TenantRegistry::CredentialOf(*authorization) : std::string();
}

}  // namespace warpd::server
