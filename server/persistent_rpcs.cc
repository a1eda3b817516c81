// warpd server: the persistent-array RPCs of warpd.v1.Runtime (PersistArray,
// ListPersistent, AttachPersistent, DeletePersistent): the service edge of
// server/persistent/persistent_store.h. Names are per tenant: one tenant's
// names are invisible to another (NOT_FOUND, as for a name never made).
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "compiler/ir/from_proto.h"
#include "server/info_messages.h"
#include "server/runtime_service.h"
#include "server/unary_call.h"

namespace warpd::server {

using grpc::ByteBuffer;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

ServerUnaryReactor* RuntimeService::PersistArray(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  using Call = UnaryCall<v1::PersistArrayRequest, v1::PersistArrayResponse>;
  Call* call = Call::Start(state_, ctx, reactor, in, out, "PersistArray");
  if (call == nullptr) return reactor;
  auto lookup = [&]() -> absl::StatusOr<std::pair<std::shared_ptr<const runtime::Array>, std::shared_ptr<runtime::Stream>>> {
    const v1::PersistArrayRequest& req = call->request;
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, req.session()));
    WARPD_RETURN_IF_ERROR(PersistentStore::CheckName(req.name()));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array, session->arrays().Get(req.handle()));
    // A durable array is stored as the contiguous array it is: a strided
    // view is not one (a contiguous view is).
    if (array->dtype()->holds_array()) {  // its descriptors point into this process
      return absl::FailedPreconditionError(absl::StrCat(
          "array ", req.handle(), " holds structs with array members and cannot be made persistent"));
    }
    if (!array->contiguous()) {
      return absl::FailedPreconditionError(absl::StrCat("array ", req.handle(),
                                                        " is a strided view; persist a contiguous() copy of it"));
    }
    // Other sessions may write it from now on: its memory must not come back
    // to this session's next array as it is (segment_pool.h).
    array->buffer()->KeepFromReuse();
    std::shared_ptr<runtime::Stream> stream = req.durable() ? session->FindStream(array->device()) : nullptr;
    return std::make_pair(std::move(array), std::move(stream));
  };
  auto found = lookup();
  if (!found.ok()) {
    call->Finish(found.status());
    return reactor;
  }
  auto [array, stream] = *std::move(found);
  // The store may touch files: on the RPC pool. A durable array is written
  // once the commands queued before this call have run (a callback from the
  // stream, so no thread waits for the stream meanwhile).
  auto put = [this, call, array = std::move(array)]() mutable {
    call->Finish(state_->persistent().Put(call->tenant->name(), call->request.name(), std::move(array),
                                          call->request.durable()));
  };
  if (stream == nullptr) {
    state_->rpc_pool().Schedule(std::move(put));
  } else {
    stream->WhenIdle([this, put = std::move(put)]() mutable { state_->rpc_pool().Schedule(std::move(put)); });
  }
  return reactor;
}

ServerUnaryReactor* RuntimeService::ListPersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                   ByteBuffer* out) {
  return Respond<v1::ListPersistentRequest, v1::ListPersistentResponse>(
      state_, ctx, in, out, "ListPersistent", Run::kInline, [this](auto* call) -> absl::Status {
        WARPD_RETURN_IF_ERROR(call->GetSession(state_, call->request.session()).status());
        for (const PersistentStore::Entry& e : state_->persistent().List(call->tenant->name())) {
          FillPersistentInfo(e.name, *e.array, e.durable, call->response.add_arrays());
        }
        return absl::OkStatus();
      });
}

ServerUnaryReactor* RuntimeService::AttachPersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                     ByteBuffer* out) {
  return Respond<v1::AttachPersistentRequest, v1::AttachPersistentResponse>(
      state_, ctx, in, out, "AttachPersistent", Run::kInline, [this](auto* call) -> absl::Status {
        const v1::AttachPersistentRequest& req = call->request;
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, req.session()));
        WARPD_RETURN_IF_ERROR(PersistentStore::CheckName(req.name()));
        WARPD_ASSIGN_OR_RETURN(PersistentStore::Entry e, state_->persistent().Get(call->tenant->name(), req.name()));
        // Its own Array object over the stored buffer: a handle names one
        // object, so a struct member bound to this handle reads back as it
        // and not as the handle the array was saved from (transfer.cc).
        auto attached = std::make_shared<const runtime::Array>(e.array->device(), e.array->layout(), e.array->buffer(),
                                                               e.array->byte_offset(), e.array->held());
        WARPD_ASSIGN_OR_RETURN(uint64_t handle, session->AddArray(std::move(attached)));
        call->response.set_handle(handle);
        FillPersistentInfo(e.name, *e.array, e.durable, call->response.mutable_info());
        for (int64_t s : e.array->strides()) call->response.add_strides(s);
        return absl::OkStatus();
      });
}

ServerUnaryReactor* RuntimeService::DeletePersistent(CallbackServerContext* ctx, const ByteBuffer* in,
                                                     ByteBuffer* out) {
  // Removes the file of a durable array: on the pool.
  return Respond<v1::DeletePersistentRequest, v1::DeletePersistentResponse>(
      state_, ctx, in, out, "DeletePersistent", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_RETURN_IF_ERROR(call->GetSession(state_, call->request.session()).status());
        WARPD_RETURN_IF_ERROR(PersistentStore::CheckName(call->request.name()));
        return state_->persistent().Delete(call->tenant->name(), call->request.name());
      });
}

}  // namespace warpd::server
