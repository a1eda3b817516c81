// warpd server: one unary call of a raw-registered method, and Respond, the
// way every unary RPC of warpd.v1.Runtime is answered: authenticate the
// caller (its tenant), parse the request, run the method's work inline or on
// the RPC pool, serialize the response, answer with a status made by
// ToGrpcStatus. Used by runtime_service.cc and persistent_rpcs.cc.
// A UnaryCall deletes itself when it finishes. Thread-compatible per call.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "common/log_text.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/auth/authenticate.h"
#include "server/daemon_state.h"
#include "server/grpc_status.h"
#include "server/logging.h"
#include "server/raw_messages.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

enum class Run { kInline, kOnPool };

// Error messages quote client text (file names, identifiers): escaped and
// bounded (LogStatus), so a client cannot forge log lines with newlines or
// control bytes, nor write megabytes per call; and limited per tenant
// (LogLimited; `tenant` is null before the caller is known).
inline void LogFailure(const char* rpc, const absl::Status& status, const Tenant* tenant) {
  if (status.ok()) return;
  const std::string_view source = tenant != nullptr ? std::string_view(tenant->label()) : "unauthenticated callers";
  if (status.code() == absl::StatusCode::kInternal || status.code() == absl::StatusCode::kUnknown) {
    LogLimited(spdlog::level::warn, source, "failed calls with internal errors", "{}: {}", rpc, LogStatus(status));
  } else {
    LogLimited(spdlog::level::debug, source, "failed calls", "{}: {}", rpc, LogStatus(status));
  }
}

// One unary call of a raw-registered method: its parsed request, the
// response being built, and the reactor that answers. Finish serializes the
// response (when OK), answers, and deletes the call.
template <typename Req, typename Resp>
class UnaryCall {
 public:
  // Null when the caller is not authenticated (UNAUTHENTICATED) or `in` does
  // not parse (INVALID_ARGUMENT): the call was answered.
  static UnaryCall* Start(DaemonState* state, grpc::CallbackServerContext* ctx, grpc::ServerUnaryReactor* reactor,
                          const grpc::ByteBuffer* in, grpc::ByteBuffer* out, const char* rpc) {
    auto* call = new UnaryCall(state, reactor, out, rpc);
    absl::StatusOr<std::shared_ptr<Tenant>> tenant = AuthenticateCall(state->tenants(), *ctx);
    if (!tenant.ok()) {
      call->Finish(tenant.status());
      return nullptr;
    }
    call->tenant = *std::move(tenant);
    call->request_bytes_ = in->Length();
    if (absl::Status s = ParseMessage(*in, &call->request, rpc); !s.ok()) {
      call->Finish(std::move(s));
      return nullptr;
    }
    return call;
  }

  void Finish(absl::Status status) {
    if (status.ok()) status = SerializeMessage(response, out_);
    LogFailure(rpc_, status, tenant.get());
    state_->metrics().Rpc(rpc_, status.code()).Increment();
    reactor_->Finish(ToGrpcStatus(status));
    const size_t request_bytes = request_bytes_;
    delete this;
    TrimAfterLargeRequest(request_bytes);  // the parsed request is gone
  }

  Req request;
  Resp response;
  std::shared_ptr<Tenant> tenant;  // the caller

  // The request's session, if it is the caller's.
  absl::StatusOr<std::shared_ptr<Session>> GetSession(DaemonState* state, const std::string& token) const {
    return state->sessions().Get(token, *tenant);
  }

 private:
  UnaryCall(DaemonState* state, grpc::ServerUnaryReactor* reactor, grpc::ByteBuffer* out, const char* rpc)
      : state_(state), reactor_(reactor), out_(out), rpc_(rpc) {}

  DaemonState* const state_;
  grpc::ServerUnaryReactor* const reactor_;
  grpc::ByteBuffer* const out_;
  const char* const rpc_;
  size_t request_bytes_ = 0;
};

// Parses the request, runs `fn(call)` (returning absl::Status) inline or on
// the RPC pool, and answers with its status. The call (request, response)
// stays valid until then, so `fn` may use it from the pool.
template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* Respond(DaemonState* state, grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                  grpc::ByteBuffer* out, const char* rpc, Run where, Fn fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  UnaryCall<Req, Resp>* call = UnaryCall<Req, Resp>::Start(state, ctx, reactor, in, out, rpc);
  if (call == nullptr) return reactor;
  auto work = [call, fn = std::move(fn)]() mutable { call->Finish(fn(call)); };
  if (where == Run::kOnPool) {
    state->rpc_pool().Schedule(std::move(work));
  } else {
    work();
  }
  return reactor;
}


}  // namespace warpd::server
