// warpd server: CreateHashGrid, CreateBvh and CreateMesh of warpd.v1.Runtime (object_rpcs.h).
#include "server/object_rpcs.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "runtime/objects/bvh.h"
#include "runtime/objects/hash_grid.h"
#include "runtime/objects/mesh.h"
#include "runtime/objects/mirrored_tree.h"
#include "server/runtime_service.h"
#include "server/unary_call.h"

namespace warpd::server {

bool MirrorsObjects(const runtime::Device& device) { return device.info().kind != "cpu"; }

absl::Status CreateHashGrid(DaemonState* state, Session& session, const v1::CreateHashGridRequest& req,
                            v1::CreateHashGridResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  types::ScalarKind dtype;
  switch (req.dtype()) {
    case v1::SCALAR_TYPE_UNSPECIFIED:
    case v1::SCALAR_FLOAT32: dtype = types::ScalarKind::kFloat32; break;
    case v1::SCALAR_FLOAT16: dtype = types::ScalarKind::kFloat16; break;
    case v1::SCALAR_FLOAT64: dtype = types::ScalarKind::kFloat64; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unsupported dtype ", v1::ScalarType_Name(req.dtype()),
                                                     " for HashGrid. Supported types: float16, float32, float64"));
  }
  const std::array<int64_t, 3> dims = {req.dim_x(), req.dim_y(), req.dim_z()};
  std::shared_ptr<runtime::HashGrid> grid;
  if (MirrorsObjects(*device)) {
    WARPD_ASSIGN_OR_RETURN(grid, runtime::HashGrid::CreateMirrored(*device, device->name(), dims, dtype,
                                                                   session.private_pool(),
                                                                   session.DevicePool(device->name())));
  } else {
    WARPD_ASSIGN_OR_RETURN(grid, runtime::HashGrid::Create(device->name(), dims, dtype, session.private_pool()));
  }
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddObject(std::move(grid)));
  resp->set_grid(handle);
  return absl::OkStatus();
}

namespace {

// The array `handle` names, or null for 0 (none).
absl::StatusOr<std::shared_ptr<const runtime::Array>> OptionalArray(ArrayGetter arrays, uint64_t handle) {
  if (handle == 0) return std::shared_ptr<const runtime::Array>();
  return arrays(handle);
}

absl::StatusOr<std::shared_ptr<runtime::TreeObject>> MakeBvh(runtime::Device& device, Session& session,
                                                             const v1::CreateBvhRequest& req, ArrayGetter arrays) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> lowers, arrays(req.lowers()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> uppers, arrays(req.uppers()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> groups, OptionalArray(arrays, req.groups()));
  const int leaf_size = req.leaf_size() == 0 ? 1 : req.leaf_size();
  if (MirrorsObjects(device)) {
    return runtime::MirroredTree::CreateBvh(device, device.name(), std::move(lowers), std::move(uppers), leaf_size,
                                            session.private_pool(), session.DevicePool(device.name()),
                                            std::move(groups));
  }
  return runtime::Bvh::Create(device.name(), std::move(lowers), std::move(uppers), leaf_size, session.private_pool(),
                              std::move(groups));
}

absl::StatusOr<std::shared_ptr<runtime::TreeObject>> MakeMesh(runtime::Device& device, Session& session,
                                                              const v1::CreateMeshRequest& req, ArrayGetter arrays) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> points, arrays(req.points()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> indices, arrays(req.indices()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> velocities, OptionalArray(arrays, req.velocities()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> groups, OptionalArray(arrays, req.groups()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> points_grad, OptionalArray(arrays, req.points_grad()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> velocities_grad,
                         OptionalArray(arrays, req.velocities_grad()));
  const int leaf_size = req.leaf_size() == 0 ? 4 : req.leaf_size();
  if (MirrorsObjects(device)) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::MirroredTree> mesh,
                           runtime::MirroredTree::CreateMesh(device, device.name(), std::move(points),
                                                             std::move(indices), std::move(velocities), leaf_size,
                                                             session.private_pool(),
                                                             session.DevicePool(device.name()), std::move(groups)));
    WARPD_RETURN_IF_ERROR(mesh->SetGradients(std::move(points_grad), std::move(velocities_grad)));
    return mesh;
  }
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Mesh> mesh,
                         runtime::Mesh::Create(device.name(), std::move(points), std::move(indices),
                                               std::move(velocities), leaf_size, session.private_pool(),
                                               std::move(groups)));
  WARPD_RETURN_IF_ERROR(mesh->SetGradients(std::move(points_grad), std::move(velocities_grad)));
  return mesh;
}

}  // namespace

absl::Status CreateBvh(DaemonState* state, Session& session, const v1::CreateBvhRequest& req,
                       v1::CreateBvhResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  auto arrays = [&session](uint64_t h) { return session.arrays().Get(h); };
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::TreeObject> bvh, MakeBvh(*device, session, req, arrays));
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddObject(std::move(bvh)));
  resp->set_bvh(handle);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* RuntimeService::CreateBvh(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                    grpc::ByteBuffer* out) {
  return Respond<v1::CreateBvhRequest, v1::CreateBvhResponse>(
      state_, ctx, in, out, "CreateBvh", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return server::CreateBvh(state_, *session, call->request, &call->response);
      });
}

absl::Status CreateMesh(DaemonState* state, Session& session, const v1::CreateMeshRequest& req,
                        v1::CreateMeshResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  auto arrays = [&session](uint64_t h) { return session.arrays().Get(h); };
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::TreeObject> mesh, MakeMesh(*device, session, req, arrays));
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddObject(std::move(mesh)));
  resp->set_mesh(handle);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<runtime::TreeObject>> MakeTree(runtime::Device& device, Session& session,
                                                              const v1::CreateTree& req, ArrayGetter arrays) {
  switch (req.kind_case()) {
    case v1::CreateTree::kBvh: return MakeBvh(device, session, req.bvh(), arrays);
    case v1::CreateTree::kMesh: return MakeMesh(device, session, req.mesh(), arrays);
    default: return absl::InvalidArgumentError("create_tree: neither a BVH (bvh) nor a mesh (mesh)");
  }
}

grpc::ServerUnaryReactor* RuntimeService::CreateMesh(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out) {
  return Respond<v1::CreateMeshRequest, v1::CreateMeshResponse>(
      state_, ctx, in, out, "CreateMesh", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return server::CreateMesh(state_, *session, call->request, &call->response);
      });
}

grpc::ServerUnaryReactor* RuntimeService::CreateHashGrid(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                         grpc::ByteBuffer* out) {
  // Allocates the cell table (up to 16 GiB, zeroed): on the RPC pool.
  return Respond<v1::CreateHashGridRequest, v1::CreateHashGridResponse>(
      state_, ctx, in, out, "CreateHashGrid", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return server::CreateHashGrid(state_, *session, call->request, &call->response);
      });
}

}  // namespace warpd::server
