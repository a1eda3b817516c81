// warpd server: the streaming RPCs: Upload (client streaming) and Download
// (server streaming), moving array bytes in chunks.
//
// Offsets and lengths count an array's logical bytes (runtime/objects/
// array_bytes.h): a strided view moves as its elements packed in row-major
// order, scattered on upload and gathered on download.
// Upload: the first chunk names session, array and byte offset; every chunk's
// data is written in order after the previous one. Before the first write the
// session's stream on the array's device drains, so earlier commands see the
// old contents. Writing past the array's end is INVALID_ARGUMENT.
// Download: waits until the session's stream on the array's device drains
// and reports its sticky error if one is pending (e.g. a kernel fault,
// OUT_OF_RANGE); then sends [offset, offset+length) in chunks of at most
// kTransferChunkBytes.
// Both keep the array alive while they run, whatever happens to its handle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/daemon_state.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// 2 MiB: a chunk plus its framing stays well below gRPC's default 4 MiB
// receive limit, so clients need no special channel options.
inline constexpr size_t kTransferChunkBytes = size_t{2} << 20;

// Raw (raw_messages.h): chunks arrive as serialized v1::UploadChunk, read in
// gRPC's receive buffers and copied once, straight into the array
// (transfer_wire.h); a chunk that is not a well-formed UploadChunk fails the
// upload with INVALID_ARGUMENT; an upload the client cancels fails
// (CANCELLED, logged), it is never reported as done. The download request is
// a serialized v1::DownloadRequest and each chunk a serialized
// v1::DownloadChunk, written with one copy of the array's bytes. The
// reactors delete themselves when done.
// What a DownloadRequest asks for, checked: the array (kept alive), the
// byte range [begin, end) and the stream to drain first (null when the
// session has none on the array's device). The errors Download gives.
struct DownloadRange {
  std::shared_ptr<const runtime::Array> array;
  runtime::Device* device = nullptr;  // the array's (the daemon's; lives as long)
  uint64_t begin = 0;
  uint64_t end = 0;
  std::shared_ptr<runtime::Stream> stream;
  // The session, when the array's elements hold array members: their
  // descriptors go out as the handles it knows the arrays by.
  std::shared_ptr<Session> session;
};
absl::StatusOr<DownloadRange> ResolveDownload(DaemonState* state, const Tenant& tenant,
                                              const v1::DownloadRequest& req);

// Writes logical bytes [offset, offset + n) of `array` (array_bytes.h: a
// strided view's elements in row-major order) to `out` (n bytes), for a
// download: Device::Download of `device` (the array's) straight into `out`,
// except for an array whose elements hold array members: its whole elements
// are downloaded into *staging, their descriptors become the handles
// `session` (the range's) knows their arrays by (array_members.h,
// RevealArrayMembers), and the range is copied out of that. The device's
// errors (none for a range ResolveDownload checked).
absl::Status ArrayBytesAt(runtime::Device& device, const runtime::Array& array, uint64_t offset, uint64_t n,
                          std::byte* out, std::vector<std::byte>* staging, const Session* session);

grpc::ServerReadReactor<grpc::ByteBuffer>* StartUpload(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                       grpc::ByteBuffer* response);
grpc::ServerWriteReactor<grpc::ByteBuffer>* StartDownload(DaemonState* state, grpc::CallbackServerContext* ctx,
                                                          const grpc::ByteBuffer* request);

}  // namespace warpd::server
