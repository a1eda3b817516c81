// warpd server: the streaming RPCs: Upload (client streaming) and Download
// (server streaming), moving array bytes in chunks.
//
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

#include "grpcpp/support/server_callback.h"
#include "server/daemon_state.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// 2 MiB: a chunk plus its framing stays well below gRPC's default 4 MiB
// receive limit, so clients need no special channel options.
inline constexpr size_t kTransferChunkBytes = size_t{2} << 20;

// The reactors delete themselves when the call is done.
grpc::ServerReadReactor<v1::UploadChunk>* StartUpload(DaemonState* state,
                                                      v1::UploadResponse* response);
grpc::ServerWriteReactor<v1::DownloadChunk>* StartDownload(DaemonState* state,
                                                           const v1::DownloadRequest* request);

}  // namespace warpd::server
