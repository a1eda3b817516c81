#include "server/admin/access.h"

#include "absl/strings/str_cat.h"

namespace warpd::server::admin {

absl::Status RequireAdmin(const Tenant& caller, std::string_view action) {
  if (caller.admin()) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      std::string(action), " needs an admin tenant; ", caller.label(),
      " is not one (the daemon's own user is the admin without a tenants file; with one, a tenant "
      "with \"admin\": true)"));
}

absl::StatusOr<std::shared_ptr<Tenant>> TargetTenant(const TenantRegistry& tenants,
                                                     const std::shared_ptr<Tenant>& caller,
                                                     std::string_view requested) {
  if (requested.empty() || requested == caller->name()) return caller;
  if (!caller->admin()) {
    return absl::PermissionDeniedError(
        absl::StrCat(caller->label(), " may see only its own objects and status, not another tenant's "
                                      "(that needs an admin tenant)"));
  }
  if (absl::Status s = TenantRegistry::CheckTenantName(requested); !s.ok()) return s;
  std::shared_ptr<Tenant> t = tenants.Find(requested);
  if (t == nullptr) {
    // A valid name (checked above): safe to quote.
    return absl::NotFoundError(absl::StrCat("no tenant named '", std::string(requested), "'"));
  }
  return t;
}

absl::StatusOr<std::vector<std::shared_ptr<Tenant>>> VisibleTenants(const TenantRegistry& tenants,
                                                                    const std::shared_ptr<Tenant>& caller,
                                                                    std::string_view requested) {
  if (requested.empty() && caller->admin()) return tenants.All();
  absl::StatusOr<std::shared_ptr<Tenant>> t = TargetTenant(tenants, caller, requested);
  if (!t.ok()) return t.status();
  return std::vector<std::shared_ptr<Tenant>>{*std::move(t)};
}

}  // namespace warpd::server::admin
