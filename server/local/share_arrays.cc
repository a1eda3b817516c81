#include "server/local/share_arrays.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::server {

namespace {

// An fd closed when the last holder lets go.
struct OwnedFd {
  explicit OwnedFd(int f) : fd(f) {}
  ~OwnedFd() { close(fd); }
  const int fd;
};

// A GPU array's pool and allocation (CUDA IPC), for its own session only.
absl::StatusOr<SharedRegion> ExportGpuArray(const runtime::DeviceRegistry& devices, Session& session,
                                            std::shared_ptr<const runtime::Array> array, uint64_t handle) {
  if (array->dtype()->holds_array()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "array ", handle, " holds structs with array members, whose descriptors only the daemon may see or "
        "write: it cannot be shared; download it"));
  }
  if (array->size_bytes() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("array ", handle, " has no memory to share (it is empty)"));
  }
  if (!array->contiguous()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "array ", handle, " is a strided view and cannot be shared on its own; share the array it views"));
  }
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, devices.FindUsable(array->device()));
  absl::StatusOr<runtime::Device::MemoryExport> exported =
      device->ExportMemory(*array->buffer(), session.DevicePool(device->name()));
  if (!exported.ok()) {
    return absl::Status(exported.status().code(),
                        absl::StrCat("array ", handle, " on ", array->device(), " cannot be shared with this "
                                     "process: ", exported.status().message()));
  }
  auto fd = std::make_shared<OwnedFd>(exported->fd);
  SharedRegion region;
  region.fd = fd->fd;
  region.offset = array->byte_offset();
  region.size = array->size_bytes();
  region.segment = exported->pool_serial;
  region.cuda_uuid = exported->device_uuid;
  region.cuda_export = std::move(exported->allocation);
  region.hold = std::make_shared<std::pair<std::shared_ptr<OwnedFd>, std::shared_ptr<const runtime::Array>>>(
      std::move(fd), std::move(array));
  return region;
}

}  // namespace

ShareSocket::Answer ShareArrays(const TenantRegistry& tenants, const SessionManager& sessions,
                                const runtime::DeviceRegistry& devices) {
  return [&tenants, &sessions, &devices](std::string_view bearer, std::string_view session_token,
                                         uint64_t handle) -> absl::StatusOr<SharedRegion> {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, tenants.Authenticate("Bearer " + std::string(bearer)));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, sessions.Get(std::string(session_token), *tenant));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array, session->arrays().Get(handle));
    if (array->buffer()->cpu() == nullptr) return ExportGpuArray(devices, *session, std::move(array), handle);
    const runtime::CpuBuffer* buffer = array->buffer()->cpu();
    if (array->size_bytes() == 0 || buffer->fd() < 0) {
      return absl::FailedPreconditionError(absl::StrCat("array ", handle, " has no memory to map (it is empty)"));
    }
    if (array->dtype()->holds_array()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "array ", handle, " holds structs with array members, whose descriptors only the daemon may see or "
          "write: it cannot be mapped; download it"));
    }
    if (!buffer->BelongsTo(session->pool())) {
      return absl::FailedPreconditionError(
          absl::StrCat("array ", handle, " lives in another session's memory and cannot be mapped; download it"));
    }
    // A view is shared as the bytes it covers: only a contiguous one has
    // them back to back (the client maps a strided view's base instead).
    if (!array->contiguous()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "array ", handle, " is a strided view and cannot be mapped on its own; map the array it views"));
    }
    return SharedRegion{buffer->fd(), buffer->offset() + array->byte_offset(), array->size_bytes(),
                        buffer->segment_serial(), array};
  };
}

}  // namespace warpd::server
