#include "server/lease.h"

#include <memory>

#include "absl/synchronization/mutex.h"
#include "common/log_text.h"
#include "common/status_macros.h"
#include "server/auth/authenticate.h"
#include "server/grpc_status.h"
#include "server/logging.h"
#include "server/raw_messages.h"
#include "spdlog/spdlog.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

namespace {

class HoldReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  HoldReactor(DaemonState* state, grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request)
      : link_(std::make_shared<Link>()) {
    {
      absl::MutexLock lock(&link_->mu);
      link_->reactor = this;
    }
    absl::Status s = Begin(state, *ctx, *request);
    if (!s.ok()) {
      // The tenant is not known here: all callers share one limit.
      LogLimited(spdlog::level::debug, "HoldSession callers", "failed calls", "HoldSession: {}", LogStatus(s));
      End(ToGrpcStatus(s));
    }
  }

  // The stream stays open until a finish; one asked for while the first
  // event was being written happens now.
  void OnWriteDone(bool) override {
    grpc::Status status;
    {
      absl::MutexLock lock(&link_->mu);
      link_->writing = false;
      if (!link_->finish_pending) return;
      status = link_->pending;
    }
    Finish(status);
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  void OnDone() override {
    {
      absl::MutexLock lock(&link_->mu);
      link_->reactor = nullptr;
    }
    if (session_) {
      // The session may live on: the stream's listener must not stay with it.
      session_->RemoveCloseListener(close_listener_);
      session_->RemoveHolder();
    }
    delete this;
  }

 private:
  // Shared with the session's close listener, which may run after the
  // reactor is gone: it finishes the call only while `reactor` is set.
  struct Link {
    absl::Mutex mu;
    HoldReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;
    bool finished ABSL_GUARDED_BY(mu) = false;
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool finish_pending ABSL_GUARDED_BY(mu) = false;
    grpc::Status pending ABSL_GUARDED_BY(mu);

    // Finishes the call once: now, or after the write in flight. Finish
    // is called without the lock (gRPC may run reactions inline); once
    // `finished` is set only this caller finishes, and the reactor stays
    // alive until it has (OnDone comes after Finish).
    void End(const grpc::Status& status) {
      HoldReactor* r = nullptr;
      {
        absl::MutexLock lock(&mu);
        if (reactor == nullptr || finished) return;
        finished = true;
        if (writing) {
          finish_pending = true;
          pending = status;
          return;
        }
        r = reactor;
      }
      r->Finish(status);
    }
  };

  absl::Status Begin(DaemonState* state, const grpc::CallbackServerContext& ctx, const grpc::ByteBuffer& request) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, AuthenticateCall(state->tenants(), ctx));
    v1::HoldSessionRequest req;
    WARPD_RETURN_IF_ERROR(ParseMessage(request, &req, "HoldSession"));
    WARPD_ASSIGN_OR_RETURN(session_, state->sessions().Get(req.session(), *tenant));
    session_->AddHolder();
    v1::LeaseEvent event;
    event.set_grace_seconds(absl::ToDoubleSeconds(state->sessions().grace()));
    WARPD_RETURN_IF_ERROR(SerializeMessage(event, &out_));
    {
      absl::MutexLock lock(&link_->mu);
      link_->writing = true;
      StartWrite(&out_);
    }
    std::shared_ptr<Link> link = link_;
    close_listener_ = session_->AddCloseListener([link] { link->End(grpc::Status::OK); });
    if (close_listener_ == 0) End(grpc::Status::OK);  // closed between Get and here
    return absl::OkStatus();
  }

  void End(const grpc::Status& status) { link_->End(status); }

  std::shared_ptr<Link> link_;
  std::shared_ptr<Session> session_;
  // Set in the constructor (gRPC calls OnDone only after it returned).
  uint64_t close_listener_ = 0;
  grpc::ByteBuffer out_;
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartHoldSession(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request) {
  return new HoldReactor(state, ctx, request);
}

}  // namespace warpd::server
