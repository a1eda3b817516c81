// warpd server: the one place where absl::Status becomes grpc::Status.
//
// The codes are the same numbers by design (both follow
// google.rpc.Code); this maps them explicitly so a mismatch cannot slip in.
// A message travels in a response header, which clients cap (gRPC's
// default: 16 KiB of metadata, after percent-encoding); longer messages (a
// compile's diagnostics) are cut to kMaxStatusMessageBytes at a UTF-8
// boundary, with a note saying how much was cut, so the client still gets
// the status instead of a transport error.
// Thread-safe.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace warpd::server {

inline constexpr size_t kMaxStatusMessageBytes = 4096;

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace warpd::server
