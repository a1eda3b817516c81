// warpd server: the one place where absl::Status becomes grpc::Status.
//
// The codes are the same numbers by design (both follow
// google.rpc.Code); this maps them explicitly so a mismatch cannot slip in.
// A message travels in a response header, which clients cap (gRPC's
// default: 16 KiB of metadata, after percent-encoding); longer messages (a
// compile's diagnostics) are cut to kMaxStatusMessageBytes at a UTF-8
// boundary, with a note saying how much was cut, so the client still gets
// the status instead of a transport error.
// Payloads of the status whose type URL starts with kTypeUrlPrefix (the
// serialized proto message of that name) become the call's error details:
// a warpd.v1.StatusDetails (google.rpc.Status on the wire) in the
// "grpc-status-details-bin" trailer (its message left empty: the call
// has it), at most kMaxStatusDetailsBytes of details (the rest is left
// out, whole details at a time). Other payloads
// stay in the daemon.
// Thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace warpd::server {

inline constexpr size_t kMaxStatusMessageBytes = 4096;
inline constexpr size_t kMaxStatusDetailsBytes = 3072;
inline constexpr char kTypeUrlPrefix[] = "type.googleapis.com/";

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace warpd::server
