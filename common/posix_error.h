// warpd: the one place where errno values become absl::Status.
//
// Every POSIX call in compiler/, runtime/ and server/ that fails reports through
// PosixError, so the mapping from errno to status code is decided once:
// ENOMEM/ENOSPC/EMFILE/ENFILE -> RESOURCE_EXHAUSTED, ENOENT -> NOT_FOUND,
// EACCES/EPERM -> PERMISSION_DENIED, EINVAL -> INVALID_ARGUMENT,
// EEXIST -> ALREADY_EXISTS, anything else -> INTERNAL.
// Thread-safe (uses strerror_r).
#pragma once

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace warpd {

// `context` says what was being done: "memfd_create(array)", "mmap 4096 bytes".
absl::Status PosixError(absl::string_view context, int error_number);

}  // namespace warpd
