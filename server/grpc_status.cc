#include "server/grpc_status.h"

#include <string>

#include "absl/strings/match.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

namespace {

grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return grpc::StatusCode::OK;
    case absl::StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case absl::StatusCode::kUnknown: return grpc::StatusCode::UNKNOWN;
    case absl::StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case absl::StatusCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case absl::StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case absl::StatusCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case absl::StatusCode::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
    case absl::StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case absl::StatusCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case absl::StatusCode::kAborted: return grpc::StatusCode::ABORTED;
    case absl::StatusCode::kOutOfRange: return grpc::StatusCode::OUT_OF_RANGE;
    case absl::StatusCode::kUnimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case absl::StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
    case absl::StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case absl::StatusCode::kDataLoss: return grpc::StatusCode::DATA_LOSS;
    case absl::StatusCode::kUnauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
    default: return grpc::StatusCode::UNKNOWN;
  }
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string message(status.message());
  if (message.size() > kMaxStatusMessageBytes) {
    size_t cut = kMaxStatusMessageBytes;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    const size_t dropped = message.size() - cut;
    message.resize(cut);
    message += "\n[warpd: " + std::to_string(dropped) + " more bytes of this message were cut]";
  }
  v1::StatusDetails details;
  size_t detail_bytes = 0;
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    if (!absl::StartsWith(url, kTypeUrlPrefix)) return;
    if (detail_bytes + url.size() + payload.size() > kMaxStatusDetailsBytes) return;
    detail_bytes += url.size() + payload.size();
    v1::StatusDetail* d = details.add_details();
    d->set_type_url(std::string(url));
    d->set_value(std::string(payload));
  });
  if (details.details().empty()) return grpc::Status(ToGrpcCode(status.code()), std::move(message));
  // The message is the call's own (grpc-message); not repeated here, so
  // both trailers together stay within what clients accept.
  details.set_code(static_cast<int32_t>(status.code()));
  return grpc::Status(ToGrpcCode(status.code()), message, details.SerializeAsString());
}

}  // namespace warpd::server
