// warpd server: requests in and responses out as bytes.
//
// Every warpd.v1.Runtime method is registered raw (ByteBuffer in and out) so
// that the daemon parses requests itself: a request that is not a valid
// message gets INVALID_ARGUMENT naming the method and the expected type,
// instead of gRPC's bare UNIMPLEMENTED with no message. Thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"

namespace warpd::server {

// The bytes of `buffer`, contiguous.
std::string ByteBufferToString(const grpc::ByteBuffer& buffer);

// INVALID_ARGUMENT "<rpc>: the request is not a valid warpd.v1.X ..." when
// `buffer` does not parse as `out`'s type (or not completely).
absl::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::Message* out, const char* rpc);

// Requests larger than this make the daemon hand freed heap memory back to
// the system once they are done (TrimAfterLargeRequest): a parsed request
// and the buffers gRPC received it in are copies of up to 64 MiB that glibc
// would otherwise keep.
inline constexpr size_t kTrimAfterRequestBytes = size_t{4} << 20;
// malloc_trim when `request_bytes` > kTrimAfterRequestBytes.
void TrimAfterLargeRequest(size_t request_bytes);

// INTERNAL when `message` cannot be serialized.
absl::Status SerializeMessage(const google::protobuf::Message& message, grpc::ByteBuffer* out);

}  // namespace warpd::server
