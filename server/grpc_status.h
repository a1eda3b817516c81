// warpd server: the one place where absl::Status becomes grpc::Status.
//
// The codes are the same numbers by design (both follow
// google.rpc.Code); this maps them explicitly so a mismatch cannot slip in.
// Thread-safe.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace warpd::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace warpd::server
