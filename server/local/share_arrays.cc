#include "server/local/share_arrays.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::server {

ShareSocket::Answer ShareArrays(const TenantRegistry& tenants, const SessionManager& sessions) {
  return [&tenants, &sessions](std::string_view bearer, std::string_view session_token,
                               uint64_t handle) -> absl::StatusOr<SharedRegion> {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, tenants.Authenticate("Bearer " + std::string(bearer)));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, sessions.Get(std::string(session_token), *tenant));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Array> array, session->arrays().Get(handle));
    if (array->buffer()->cpu() == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("array ", handle, " is on ", array->device(),
                                                        ", whose memory a local client cannot map; download it"));
    }
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
