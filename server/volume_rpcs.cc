// warpd server: CreateVolume and ReadVolume of warpd.v1.Runtime (runtime.proto):
// a session's sparse volumes (runtime/objects/volume.h).
//
// CreateVolume reads an .nvdb file the client uploaded as a uint8 array of
// the session (every size checked against the array's bytes), or builds a
// grid from tiles, into memory from the session's private pool (charged to
// its account), and adds the volume to the session's objects and launch
// tables; on a GPU, the volume is built on the host and mirrored to the
// session's memory there (Volume::Mirror). ReadVolume copies what Warp's
// Volume methods return (the grid's bytes, tiles, voxels, a feature array)
// into an array the client made. Errors: INVALID_ARGUMENT (bad arrays,
// files, grids, sizes), NOT_FOUND (arrays, volumes, device), UNIMPLEMENTED
// (unsupported grid types), RESOURCE_EXHAUSTED. Thread-safe.
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "runtime/objects/volume.h"
#include "server/object_rpcs.h"
#include "server/runtime_service.h"
#include "server/unary_call.h"

namespace warpd::server {

namespace {

absl::StatusOr<std::shared_ptr<const runtime::Array>> ContiguousArray(Session& session, uint64_t handle,
                                                                     const std::string& device, const char* what) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> a, session.arrays().Get(handle));
  if (!a->contiguous()) return absl::InvalidArgumentError(absl::StrCat(what, " must be a contiguous array"));
  if (a->device() != device) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must live on '", device, "', not '", a->device(), "'"));
  }
  return a;
}

void FillInfo(const runtime::Volume& v, v1::VolumeInfo* info) {
  info->set_name(v.name());
  info->set_grid_bytes(v.grid_bytes());
  info->set_grid_index(v.grid_index());
  info->set_grid_count(v.grid_count());
  info->set_type_name(v.type_name());
  for (float t : v.translation()) info->add_translation(t);
  for (float m : v.transform()) info->add_transform(m);
  for (double s : v.voxel_size()) info->add_voxel_size(s);
  info->set_leaf_count(v.leaf_count());
  info->set_voxel_count(v.voxel_count());
  info->set_grid_type(v.grid_type());
  info->set_grid_class(v.grid_class());
  info->set_active_voxel_count(v.active_voxel_count());
  info->set_lower_count(v.internal_counts()[0]);
  info->set_upper_count(v.internal_counts()[1]);
  for (double b : v.world_bbox()) info->add_world_bbox(b);
  for (const auto& b : v.blind_data()) {
    v1::VolumeFeature* f = info->add_features();
    f->set_name(b.name);
    f->set_bytes(b.bytes);
    f->set_count(b.count);
    f->set_type(b.type);
  }
}

absl::StatusOr<std::shared_ptr<runtime::Volume>> GetVolume(Session& session, uint64_t handle) {
  absl::StatusOr<std::shared_ptr<runtime::GeometryObject>> object = session.objects().Get(handle);
  if (!object.ok() || (*object)->kind() != wp::OBJECT_VOLUME) {
    return absl::NotFoundError(absl::StrFormat("volume handle 0x%016x not found", handle));
  }
  return std::static_pointer_cast<runtime::Volume>(*std::move(object));
}

absl::Status DoCreateVolume(DaemonState* state, Session& session, const v1::CreateVolumeRequest& req,
                          v1::CreateVolumeResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  std::shared_ptr<runtime::Volume> volume;
  if (req.has_nvdb()) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> file,
                           ContiguousArray(session, req.nvdb().file(), device->name(), "the .nvdb file"));
    if (!file->dtype()->is_scalar_of(types::ScalarKind::kUInt8)) {
      return absl::InvalidArgumentError("the .nvdb file must be an array of uint8");
    }
    // A volume is built on the host. The CPU's file is read in place (a
    // copy of a large .nvdb file would cost its size again); a GPU's is
    // downloaded to a host copy first.
    std::optional<runtime::HostShadow> host_file;
    if (file->data() == nullptr && file->size_bytes() > 0) {
      WARPD_ASSIGN_OR_RETURN(host_file, runtime::HostShadow::Create(*file, session.private_pool(), ".nvdb file"));
      WARPD_RETURN_IF_ERROR(host_file->Pull(*device, *file));
    }
    const std::byte* data = host_file ? host_file->array()->data() : file->data();
    const absl::Span<const uint8_t> span(reinterpret_cast<const uint8_t*>(data), file->size_bytes());
    if (req.nvdb().raw_grid()) {
      WARPD_ASSIGN_OR_RETURN(volume, runtime::Volume::FromGrid(device->name(), span, session.private_pool()));
    } else {
      WARPD_ASSIGN_OR_RETURN(volume, runtime::Volume::FromNvdb(device->name(), span, req.nvdb().grid_index(),
                                                               session.private_pool()));
    }
  } else if (req.has_tiles()) {
    const v1::VolumeFromTiles& t = req.tiles();
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> tiles,
                           ContiguousArray(session, t.tiles(), device->name(), "the tiles"));
    if (tiles->dtype()->scalar() != types::ScalarKind::kInt32 || tiles->size_bytes() % 12 != 0) {
      return absl::InvalidArgumentError("the tiles must be int32 values, 3 per tile (an (N, 3) array or vec3i)");
    }
    if (t.transform_size() != 9 || t.translation_size() != 3) {
      return absl::InvalidArgumentError("a volume's transform has 9 values and its translation 3");
    }
    std::vector<std::array<int32_t, 3>> origins(tiles->size_bytes() / 12);
    if (!origins.empty()) {
      WARPD_RETURN_IF_ERROR(device->Download(
          *tiles, 0, absl::MakeSpan(reinterpret_cast<std::byte*>(origins.data()), tiles->size_bytes())));
    }
    std::array<double, 9> mat;
    std::array<double, 3> translation;
    for (int i = 0; i < 9; ++i) mat[i] = t.transform(i);
    for (int i = 0; i < 3; ++i) translation[i] = t.translation(i);
    WARPD_ASSIGN_OR_RETURN(
        volume, runtime::Volume::FromTiles(
                    device->name(), t.value_type(), origins,
                    absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.background().data()),
                                              t.background().size()),
                    mat, translation, session.private_pool()));
  } else {
    return absl::InvalidArgumentError("CreateVolume needs a source: nvdb or tiles");
  }
  if (MirrorsObjects(*device)) {
    WARPD_RETURN_IF_ERROR(volume->Mirror(*device, session.DevicePool(device->name())));
  }
  FillInfo(*volume, resp->mutable_info());
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddObject(std::move(volume)));
  resp->set_volume(handle);
  return absl::OkStatus();
}

absl::Status DoReadVolume(DaemonState* state, Session& session, const v1::ReadVolumeRequest& req) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Volume> volume, GetVolume(session, req.volume()));
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(volume->device()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> out,
                         ContiguousArray(session, req.out(), volume->device(), "the output"));
  uint64_t need = 0;
  switch (req.what()) {
    case v1::ReadVolumeRequest::BYTES: need = volume->grid_bytes(); break;
    case v1::ReadVolumeRequest::TILES: need = uint64_t{volume->leaf_count()} * 12; break;
    case v1::ReadVolumeRequest::VOXELS: need = volume->voxel_count() * 12; break;
    case v1::ReadVolumeRequest::FEATURE:
      if (req.feature() >= volume->blind_data().size()) {
        return absl::InvalidArgumentError(absl::StrCat("feature array ", req.feature(), " out of range: the volume has ",
                                                       volume->blind_data().size()));
      }
      need = volume->blind_data()[req.feature()].bytes;
      break;
    default: return absl::InvalidArgumentError("ReadVolume: unknown `what`");
  }
  if (out->size_bytes() != need) {
    return absl::InvalidArgumentError(
        absl::StrCat("the output array has ", out->size_bytes(), " bytes, ", need, " are needed"));
  }
  if (need == 0) return absl::OkStatus();
  // Composed in the output's host memory (a CPU array), else in host memory
  // of the session's pool (charged to it: up to the grid's size), then
  // written to the output array like an upload.
  std::shared_ptr<runtime::CpuBuffer> staging;
  std::byte* dst = out->data();
  if (dst == nullptr) {
    WARPD_ASSIGN_OR_RETURN(staging, session.private_pool().Allocate(need, "volume read", runtime::Fill::kAny));
    dst = staging->data();
  }
  const absl::Span<std::byte> bytes(dst, need);
  switch (req.what()) {
    case v1::ReadVolumeRequest::BYTES: WARPD_RETURN_IF_ERROR(volume->ReadBytes(0, bytes)); break;
    case v1::ReadVolumeRequest::TILES: volume->Tiles(reinterpret_cast<int32_t*>(dst)); break;
    case v1::ReadVolumeRequest::VOXELS: volume->Voxels(reinterpret_cast<int32_t*>(dst)); break;
    default: {
      const auto& b = volume->blind_data()[req.feature()];
      WARPD_RETURN_IF_ERROR(volume->ReadBytes(b.offset, bytes));
    }
  }
  return staging != nullptr ? device->Upload(*out, 0, bytes) : absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* RuntimeService::CreateVolume(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                       grpc::ByteBuffer* out) {
  return Respond<v1::CreateVolumeRequest, v1::CreateVolumeResponse>(
      state_, ctx, in, out, "CreateVolume", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return DoCreateVolume(state_, *session, call->request, &call->response);
      });
}

grpc::ServerUnaryReactor* RuntimeService::ReadVolume(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out) {
  return Respond<v1::ReadVolumeRequest, v1::ReadVolumeResponse>(
      state_, ctx, in, out, "ReadVolume", Run::kOnPool, [this](auto* call) -> absl::Status {
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
        return DoReadVolume(state_, *session, call->request);
      });
}

}  // namespace warpd::server
