#include "server/tenants/tenant_usage.h"

namespace warpd::server {

void FillUsage(Tenant& t, v1::Usage* usage) {
  usage->set_tenant(t.name());
  const TenantLimits limits = t.limits();
  auto add = [&](const char* resource, uint64_t used, uint64_t limit) {
    v1::Quota* q = usage->add_quotas();
    q->set_resource(resource);
    q->set_used(used);
    q->set_limit(limit);
  };
  add("memory_bytes", t.memory()->used(), limits.memory_bytes);
  add("arrays", t.arrays().used(), limits.arrays);
  add("sessions", t.sessions().used(), limits.sessions);
  add("compiles", t.compiles_running(), limits.compiles);
  add("queued_commands", t.queued_commands()->used(), limits.queued_commands);
  add("graph_commands", t.graph_commands()->used(), limits.graph_commands);
}

}  // namespace warpd::server
