#include "server/auth/authenticate.h"

#include <string_view>

namespace warpd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(const TenantRegistry& tenants,
                                                         const grpc::ServerContextBase& ctx) {
  const auto& metadata = ctx.client_metadata();
  const auto range = metadata.equal_range("authorization");
  if (range.first == range.second) return tenants.Authenticate({});
  if (std::next(range.first) != range.second) {
    return absl::UnauthenticatedError("the call carries more than one 'authorization' metadata entry");
  }
  const grpc::string_ref value = range.first->second;
  return tenants.Authenticate(std::string_view(value.data(), value.size()));
}

}  // namespace warpd::server
