#include "common/posix_error.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warpd {

namespace {

absl::StatusCode CodeForErrno(int error_number) {
  switch (error_number) {
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
    case EAGAIN:
      return absl::StatusCode::kResourceExhausted;
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    case EINVAL:
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status PosixError(absl::string_view context, int error_number) {
  char buf[256];
  // GNU strerror_r returns the message pointer (possibly not `buf`).
  const char* text = strerror_r(error_number, buf, sizeof(buf));
  return absl::Status(CodeForErrno(error_number), absl::StrCat(context, ": ", text));
}

}  // namespace warpd
