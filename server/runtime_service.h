// warpd server: the warpd.v1.Runtime gRPC service (callback API).
//
// Each RPC checks its session token (UNAUTHENTICATED when unknown), does its
// work through the runtime and compiler, and answers with a status made by
// ToGrpcStatus. RPCs that may block (compiles, synchronizes, allocation,
// transfers) run on the daemon's RPC pool, never on gRPC's callback threads;
// Submit, which only validates and queues, answers inline.
// Thread-safe. `state` must outlive the service, and the gRPC server must be
// shut down before either is destroyed.
#pragma once

#include "server/daemon_state.h"

// The generated raw LoadModule hides the typed overload on purpose.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Woverloaded-virtual"
#include "warpd/v1/runtime.grpc.pb.h"
#pragma clang diagnostic pop

namespace warpd::server {

// LoadModule is registered raw (bytes in, bytes out) so the server parses
// the request itself: an IR tree nested deeper than protobuf's default limit
// then gets a clear INVALID_ARGUMENT instead of a bare transport error.
class RuntimeService final
    : public v1::Runtime::WithRawCallbackMethod_LoadModule<v1::Runtime::CallbackService> {
 public:
  explicit RuntimeService(DaemonState* state) : state_(state) {}

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx,
                                          const v1::GetServerInfoRequest* request,
                                          v1::ServerInfo* response) override;
  grpc::ServerUnaryReactor* OpenSession(grpc::CallbackServerContext* ctx,
                                        const v1::OpenSessionRequest* request,
                                        v1::OpenSessionResponse* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* ctx,
                                         const v1::CloseSessionRequest* request,
                                         v1::CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* CreateArray(grpc::CallbackServerContext* ctx,
                                        const v1::CreateArrayRequest* request,
                                        v1::CreateArrayResponse* response) override;
  grpc::ServerReadReactor<v1::UploadChunk>* Upload(grpc::CallbackServerContext* ctx,
                                                   v1::UploadResponse* response) override;
  grpc::ServerWriteReactor<v1::DownloadChunk>* Download(
      grpc::CallbackServerContext* ctx, const v1::DownloadRequest* request) override;
  grpc::ServerUnaryReactor* FreeArray(grpc::CallbackServerContext* ctx,
                                      const v1::FreeArrayRequest* request,
                                      v1::FreeArrayResponse* response) override;
  // Raw v1::LoadModuleRequest in, v1::LoadModuleResponse out.
  grpc::ServerUnaryReactor* LoadModule(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx,
                                   const v1::SubmitRequest* request,
                                   v1::SubmitResponse* response) override;
  grpc::ServerUnaryReactor* Synchronize(grpc::CallbackServerContext* ctx,
                                        const v1::SynchronizeRequest* request,
                                        v1::SynchronizeResponse* response) override;
  grpc::ServerUnaryReactor* SetKernelCacheDir(grpc::CallbackServerContext* ctx,
                                              const v1::SetKernelCacheDirRequest* request,
                                              v1::SetKernelCacheDirResponse* response) override;
  grpc::ServerUnaryReactor* ClearKernelCache(grpc::CallbackServerContext* ctx,
                                             const v1::ClearKernelCacheRequest* request,
                                             v1::ClearKernelCacheResponse* response) override;

 private:
  DaemonState* const state_;
};

}  // namespace warpd::server
