// warpd server: the transfer messages on the wire, read and written without
// protobuf message objects, so array bytes are copied once on each side.
//
// An Upload chunk (warpd.v1.UploadChunk) is read where gRPC received it, as
// a list of byte pieces (the slices of a grpc::ByteBuffer, in order): the
// header fields are decoded and the data field is returned as spans into
// those pieces, for the caller to copy straight into the array. A Download
// chunk (warpd.v1.DownloadChunk) is written into one buffer: the data field's
// tag and length, the data, then the output field if there is any.
//
// The upload bytes come from the client and are hostile: every tag, varint
// and length is checked against what is left of the message, and anything
// but a well-formed UploadChunk is rejected (see ParseUploadChunk). Nothing
// here allocates in proportion to the data. Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace warpd::server {

using BytePieces = absl::Span<const absl::Span<const uint8_t>>;

// The fields of one UploadChunk; `data` points into the parsed pieces and is
// valid as long as they are.
struct UploadChunkFields {
  std::string session;
  uint64_t handle = 0;
  uint64_t offset = 0;
  std::vector<absl::Span<const uint8_t>> data;  // the data field, in order
  uint64_t data_size = 0;                       // the sum of data's sizes
};

// Decodes the UploadChunk serialized across `pieces` (concatenated) into
// `out` (cleared first). Stricter than protobuf: besides malformed bytes (a
// truncated or over-long varint, a length past the end, a field number of
// 0, a varint over 64 bits) it rejects an unknown field, a known field with
// the wrong wire type and a field that appears twice. Errors are
// INVALID_ARGUMENT "Upload: the request is not a valid
// warpd.v1.UploadChunk (<why>)"; `out` is then unspecified.
absl::Status ParseUploadChunk(BytePieces pieces, UploadChunkFields* out);

// The serialized size of a DownloadChunk with `data_size` bytes of data and
// `output` as its output field.
size_t DownloadChunkSize(size_t data_size, std::string_view output);

// Writes that DownloadChunk to `dst` (DownloadChunkSize bytes): fields in
// number order, empty ones left out, as protobuf would.
void WriteDownloadChunk(const uint8_t* data, size_t data_size, std::string_view output, uint8_t* dst);

// Writes that DownloadChunk but for its data bytes, and returns where they go
// (data_size bytes inside `dst`), for a caller that writes them there itself
// (a device download straight into the message).
uint8_t* WriteDownloadChunkFrame(size_t data_size, std::string_view output, uint8_t* dst);

}  // namespace warpd::server
