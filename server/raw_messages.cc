#include "server/raw_messages.h"

#include <malloc.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace warpd::server {

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  bytes.reserve(buffer.Length());
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

absl::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::Message* out, const char* rpc) {
  // Parsed straight from gRPC's slices (a ByteBuffer copy shares them).
  grpc::ByteBuffer shared(buffer);
  bool ok = false;
  if (shared.Valid()) {
    grpc::ProtoBufferReader reader(&shared);
    ok = reader.status().ok() && out->ParseFromZeroCopyStream(&reader);
  } else {
    ok = out->ParseFromString("");  // an empty message arrives as no buffer
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(rpc, ": the request is not a valid ", out->GetTypeName(),
                                                   " (malformed protobuf, or invalid UTF-8 in a string)"));
  }
  return absl::OkStatus();
}

void TrimAfterLargeRequest(size_t request_bytes) {
  if (request_bytes > kTrimAfterRequestBytes) malloc_trim(0);
}

absl::Status SerializeMessage(const google::protobuf::Message& message, grpc::ByteBuffer* out) {
  std::string bytes;
  if (!message.SerializeToString(&bytes))
    return absl::InternalError(absl::StrCat("could not serialize a ", message.GetTypeName()));
  grpc::Slice slice(std::move(bytes));
  *out = grpc::ByteBuffer(&slice, 1);
  return absl::OkStatus();
}

}  // namespace warpd::server
