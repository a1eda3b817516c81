// warpd server: CreateView of warpd.v1.Runtime: a new handle to an array
// that shares another array's memory (runtime/objects/array_view.h checks
// the request; runtime.proto states the rules). The base is looked up in the
// caller's session only, so a handle of another session or tenant is
// NOT_FOUND, exactly like one that never existed.
#include "server/view_rpcs.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "compiler/ir/from_proto.h"
#include "runtime/objects/array_view.h"
#include "server/runtime_service.h"
#include "server/tenant_array.h"
#include "server/unary_call.h"

namespace warpd::server {

absl::Status CreateView(DaemonState* state, Session& session, const v1::CreateViewRequest& req,
                        v1::CreateViewResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> base, session.arrays().Get(req.base()));
  runtime::ViewRequest view;
  view.offset_bytes = req.offset_bytes();
  view.shape = {req.shape().data(), static_cast<size_t>(req.shape_size())};
  view.strides = {req.strides().data(), static_cast<size_t>(req.strides_size())};
  if (req.has_dtype()) {
    // A struct dtype lives in a table the view owns, as CreateArray's does.
    auto table = std::make_shared<types::TypeTable>();
    WARPD_ASSIGN_OR_RETURN(view.dtype, ir::TypeFromProto(req.dtype(), *table));
    if (view.dtype->contains_struct()) view.dtype_table = std::move(table);
  }
  WARPD_ASSIGN_OR_RETURN(runtime::ViewPlacement placed,
                         runtime::MakeViewLayout(*base, view, state->flags().max_array_bytes));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array,
                         MakeTenantArray(session.tenant(), session.pool(), base->device(), placed.layout,
                                         base->buffer(), placed.byte_offset, base->held()));
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddArray(std::move(array)));
  resp->set_handle(handle);
  resp->set_size_bytes(placed.layout.size_bytes);
  resp->set_contiguous(placed.layout.contiguous);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* RuntimeService::CreateView(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out) {
  // Checks and bookkeeping only, like Submit: inline.
  return Respond<v1::CreateViewRequest, v1::CreateViewResponse>(
      state_, ctx, in, out, "CreateView", Run::kInline, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return server::CreateView(state_, *session, call->request, &call->response);
      });
}

}  // namespace warpd::server
