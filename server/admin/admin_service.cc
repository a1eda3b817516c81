#include "server/admin/admin_service.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "server/admin/access.h"
#include "server/info_messages.h"
#include "server/tenants/tenant_usage.h"
#include "server/unary_call.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace warpd::server::admin {

using grpc::ByteBuffer;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

namespace {

double SecondsSince(int64_t ns, int64_t now_ns) { return ns >= now_ns ? 0.0 : (now_ns - ns) * 1e-9; }

void FillSessions(const Tenant& tenant,
                  const std::vector<std::pair<std::string, std::shared_ptr<Session>>>& sessions,
                  v1::AdminTenantStatus* out) {
  const int64_t now = absl::GetCurrentTimeNanos();
  for (const auto& [token, session] : sessions) {
    if (session->tenant().get() != &tenant) continue;
    v1::AdminSessionInfo* info = out->add_sessions();
    // Never the token itself: it opens the session.
    info->set_id(HexSha256(token).substr(0, 12));
    info->set_client_name(session->client_name());
    info->set_age_seconds(SecondsSince(session->opened_ns(), now));
    info->set_idle_seconds(SecondsSince(session->last_active_ns(), now));
    info->set_held(session->held());
    uint64_t queued = 0;
    for (const auto& s : session->Streams()) queued += s->queued();
    info->set_queued_commands(queued);
    info->set_arrays(session->arrays().size());
  }
}

}  // namespace

ServerUnaryReactor* AdminService::GetStatus(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<v1::AdminStatusRequest, v1::AdminStatus>(
      state_, ctx, in, out, "Admin.GetStatus", Run::kInline, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Tenant>> tenants,
                               VisibleTenants(state_->tenants(), call->tenant, call->request.tenant()));
        v1::AdminStatus& r = call->response;
        r.set_version(kVersion);
        r.set_caller(call->tenant->name());
        r.set_caller_admin(call->tenant->admin());
        r.set_draining(drain_.started());
        r.set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
        r.set_tenants_file(!state_->tenants().default_mode());
        for (const auto& d : state_->devices().all()) FillDeviceInfo(*d, r.add_devices());
        if (call->tenant->admin()) {  // daemon-wide totals sum every tenant's
          r.set_memory_used_bytes(state_->memory()->used());
          r.set_memory_limit_bytes(state_->memory()->limit());
          r.set_sessions_open(state_->sessions().size());
          r.set_sessions_limit(state_->sessions().max_sessions());
        }
        const auto sessions = state_->sessions().Snapshot();
        for (const auto& t : tenants) {
          v1::AdminTenantStatus* ts = r.add_tenants();
          ts->set_name(t->name());
          ts->set_admin(t->admin());
          ts->set_weight(t->weight());
          FillUsage(*t, ts->mutable_usage());
          FillSessions(*t, sessions, ts);
          ts->set_persistent_arrays(state_->persistent().List(t->name()).size());
          const TenantRegistry::Access access = state_->tenants().AccessOf(*t);
          ts->set_token_hashes(static_cast<uint32_t>(access.token_hashes));
          for (uint32_t uid : access.uids) ts->add_uids(uid);
        }
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::ListPersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                 ByteBuffer* out) {
  return Respond<v1::AdminListPersistentRequest, v1::AdminListPersistentResponse>(
      state_, ctx, in, out, "Admin.ListPersistent", Run::kInline, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Tenant>> tenants,
                               VisibleTenants(state_->tenants(), call->tenant, call->request.tenant()));
        for (const auto& t : tenants) {
          for (const PersistentStore::Entry& e : state_->persistent().List(t->name())) {
            v1::AdminPersistentArray* a = call->response.add_arrays();
            a->set_tenant(t->name());
            FillPersistentInfo(e.name, *e.array, e.durable, a->mutable_info());
          }
        }
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::InspectPersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                    ByteBuffer* out) {
  return Respond<v1::AdminPersistentRequest, v1::AdminPersistentArray>(
      state_, ctx, in, out, "Admin.InspectPersistent", Run::kInline, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> t,
                               TargetTenant(state_->tenants(), call->tenant, call->request.tenant()));
        WARPD_RETURN_IF_ERROR(PersistentStore::CheckName(call->request.name()));
        WARPD_ASSIGN_OR_RETURN(PersistentStore::Entry e, state_->persistent().Get(t->name(), call->request.name()));
        call->response.set_tenant(t->name());
        FillPersistentInfo(e.name, *e.array, e.durable, call->response.mutable_info());
        for (int64_t s : e.array->strides()) call->response.add_strides(s);
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::FreePersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                 ByteBuffer* out) {
  // Removes a durable array's file: on the pool.
  return Respond<v1::AdminPersistentRequest, v1::AdminFreePersistentResponse>(
      state_, ctx, in, out, "Admin.FreePersistent", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> t,
                               TargetTenant(state_->tenants(), call->tenant, call->request.tenant()));
        WARPD_RETURN_IF_ERROR(PersistentStore::CheckName(call->request.name()));
        WARPD_RETURN_IF_ERROR(state_->persistent().Delete(t->name(), call->request.name()));
        if (t != call->tenant) {
          spdlog::info("{} freed persistent array '{}' of {}", call->tenant->label(), call->request.name(),
                       t->label());
        }
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::GetCacheStats(CallbackServerContext* ctx, const ByteBuffer* in,
                                                ByteBuffer* out) {
  return Respond<v1::AdminCacheStatsRequest, v1::AdminCacheStats>(
      state_, ctx, in, out, "Admin.GetCacheStats", Run::kInline, [this](auto* call) -> absl::Status {
        if (state_->compiler() == nullptr) return absl::UnavailableError("this server has no kernel compiler");
        const compiler::DiskCache::Stats s = state_->compiler()->cache_stats();
        call->response.set_dir(state_->compiler()->cache_dir());
        call->response.set_bytes(s.bytes);
        call->response.set_entries(s.entries);
        call->response.set_max_bytes(s.max_bytes);
        call->response.set_evictions(s.evictions);
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::ClearCache(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<v1::AdminClearCacheRequest, v1::AdminClearCacheResponse>(
      state_, ctx, in, out, "Admin.ClearCache", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_RETURN_IF_ERROR(RequireAdmin(*call->tenant, "clearing the kernel cache"));
        if (state_->compiler() == nullptr) return absl::UnavailableError("this server has no kernel compiler");
        WARPD_ASSIGN_OR_RETURN(uint64_t removed, state_->compiler()->ClearCache());
        call->response.set_entries_removed(removed);
        spdlog::info("{}: kernel cache cleared: {} entries removed", call->tenant->label(), removed);
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::ReloadTenants(CallbackServerContext* ctx, const ByteBuffer* in,
                                                ByteBuffer* out) {
  // Reads the file and may close sessions: on the pool.
  return Respond<v1::AdminReloadTenantsRequest, v1::AdminReloadTenantsResponse>(
      state_, ctx, in, out, "Admin.ReloadTenants", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_RETURN_IF_ERROR(RequireAdmin(*call->tenant, "reloading the tenants file"));
        if (state_->tenants().default_mode()) {
          return absl::FailedPreconditionError("this daemon has no tenants file (--tenants) to reload");
        }
        spdlog::info("{}: reloading the tenants file", call->tenant->label());
        WARPD_RETURN_IF_ERROR(state_->ReloadTenants());
        for (const auto& t : state_->tenants().All()) call->response.add_tenants(t->name());
        return absl::OkStatus();
      });
}

ServerUnaryReactor* AdminService::Drain(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  ServerUnaryReactor* reactor = ctx->DefaultReactor();
  using Call = UnaryCall<v1::AdminDrainRequest, v1::AdminDrainResponse>;
  Call* call = Call::Start(state_, ctx, reactor, in, out, "Admin.Drain");
  if (call == nullptr) return reactor;
  if (absl::Status s = RequireAdmin(*call->tenant, "draining the daemon"); !s.ok()) {
    call->Finish(std::move(s));
    return reactor;
  }
  const double seconds = call->request.timeout_seconds();
  if (!std::isfinite(seconds) || seconds < 0 || seconds > absl::ToDoubleSeconds(kMaxDrainWait)) {
    call->Finish(absl::InvalidArgumentError(
        absl::StrCat("the drain timeout is 0 (the default, ", absl::FormatDuration(kDefaultDrainWait), ") to ",
                     absl::FormatDuration(kMaxDrainWait), " seconds")));
    return reactor;
  }
  const absl::Duration timeout = seconds == 0 ? kDefaultDrainWait : absl::Seconds(seconds);
  spdlog::info("{} asked the daemon to drain", call->tenant->label());
  absl::Status started = drain_.Start(timeout, [call](admin::Drain::Result r) {
    call->response.set_idle(r.idle);
    call->response.set_waited_seconds(absl::ToDoubleSeconds(r.waited));
    call->response.set_sessions(r.sessions);
    call->Finish(absl::OkStatus());
  });
  if (!started.ok()) call->Finish(std::move(started));
  return reactor;
}

}  // namespace warpd::server::admin
