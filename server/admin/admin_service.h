// warpd server: the warpd.v1.Admin gRPC service (admin.proto), which
// warpctl speaks: status, persistent arrays, kernel cache, tenants reload,
// drain. Who may call what: access.h. It reuses what the Runtime service
// and the daemon already do (tenant usage, the persistent store, the
// compiler's cache, DaemonState::ReloadTenants, the session manager);
// drain.h holds the drain.
// Methods are registered raw and answered through UnaryCall (unary_call.h),
// like warpd.v1.Runtime's: the caller's bearer token is authenticated, the
// request parsed by the daemon (INVALID_ARGUMENT when it does not parse).
// Thread-safe. `state` must outlive the service; the gRPC server must be
// shut down before the service is destroyed, and Stop() called before the
// server shuts down (it ends a drain's wait).
#pragma once

#include <functional>

#include "absl/time/time.h"
#include "server/admin/drain.h"
#include "server/daemon_state.h"

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Woverloaded-virtual"
#include "warpd/v1/admin.grpc.pb.h"
#pragma clang diagnostic pop

namespace warpd::server::admin {

using RawAdminService = v1::Admin::WithRawCallbackMethod_GetStatus<v1::Admin::WithRawCallbackMethod_ListPersistent<
    v1::Admin::WithRawCallbackMethod_InspectPersistent<v1::Admin::WithRawCallbackMethod_FreePersistent<
        v1::Admin::WithRawCallbackMethod_GetCacheStats<v1::Admin::WithRawCallbackMethod_ClearCache<
            v1::Admin::WithRawCallbackMethod_ReloadTenants<v1::Admin::WithRawCallbackMethod_Drain<
                v1::Admin::Service>>>>>>>>;

class AdminService final : public RawAdminService {
 public:
  // `exit` ends the daemon after a drain (main.cc: SIGTERM to itself).
  AdminService(DaemonState* state, std::function<void()> exit)
      : state_(state), drain_(&state->sessions(), std::move(exit)) {}

  // The daemon is shutting down: a drain's wait ends now.
  void Stop() { drain_.Stop(); }
  bool draining() const { return drain_.started(); }

#define WARPD_RAW_UNARY(Method)                                                                       \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request, \
                                   grpc::ByteBuffer* response) override
  WARPD_RAW_UNARY(GetStatus);
  WARPD_RAW_UNARY(ListPersistent);
  WARPD_RAW_UNARY(InspectPersistent);
  WARPD_RAW_UNARY(FreePersistent);
  WARPD_RAW_UNARY(GetCacheStats);
  WARPD_RAW_UNARY(ClearCache);
  WARPD_RAW_UNARY(ReloadTenants);
  WARPD_RAW_UNARY(Drain);
#undef WARPD_RAW_UNARY

  // The longest drain wait a request may ask for, and the default.
  static constexpr absl::Duration kMaxDrainWait = absl::Hours(1);
  static constexpr absl::Duration kDefaultDrainWait = absl::Seconds(60);

 private:
  DaemonState* const state_;
  const absl::Time started_ = absl::Now();
  admin::Drain drain_;
};

}  // namespace warpd::server::admin
