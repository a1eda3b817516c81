// warpd server: the warpd.v1.Runtime gRPC service (callback API).
//
// Each RPC authenticates its caller (the bearer token's tenant, else
// UNAUTHENTICATED), checks its session token against that tenant
// (UNAUTHENTICATED when unknown or another tenant's), does its
// work through the runtime and compiler, and answers with a status made by
// ToGrpcStatus. RPCs that may block (compiles, synchronizes, allocation,
// transfers) run on the daemon's RPC pool, never on gRPC's callback threads;
// Submit, which only validates and queues, answers inline.
// Thread-safe. `state` must outlive the service, and the gRPC server must be
// shut down before either is destroyed.
#pragma once

#include "server/daemon_state.h"

// The generated raw methods hide the typed overloads on purpose.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Woverloaded-virtual"
#include "warpd/v1/runtime.grpc.pb.h"
#pragma clang diagnostic pop

namespace warpd::server {

// Every method is registered raw (bytes in, bytes out; raw_messages.h) so the
// server parses requests itself: a request that does not parse gets
// INVALID_ARGUMENT with a message, and LoadModule is read within bounded
// memory (load_module_request.h). Each method's request and response types
// are those of warpd.v1.Runtime in runtime.proto.
using RawRuntimeService = v1::Runtime::WithRawCallbackMethod_ReadVolume<v1::Runtime::WithRawCallbackMethod_CreateVolume<v1::Runtime::WithRawCallbackMethod_CreateMesh<v1::Runtime::WithRawCallbackMethod_CreateBvh<v1::Runtime::WithRawCallbackMethod_CreateHashGrid<v1::Runtime::WithRawCallbackMethod_CreateView<
    v1::Runtime::WithRawCallbackMethod_CreateGraph<v1::Runtime::WithRawCallbackMethod_PersistArray<
    v1::Runtime::WithRawCallbackMethod_ListPersistent<v1::Runtime::WithRawCallbackMethod_AttachPersistent<
    v1::Runtime::WithRawCallbackMethod_DeletePersistent<v1::Runtime::WithRawCallbackMethod_RenewSession<
    v1::Runtime::WithRawCallbackMethod_HoldSession<v1::Runtime::WithRawCallbackMethod_GetUsage<
    v1::Runtime::WithRawCallbackMethod_GetServerInfo<
    v1::Runtime::WithRawCallbackMethod_OpenSession<v1::Runtime::WithRawCallbackMethod_CloseSession<
        v1::Runtime::WithRawCallbackMethod_CreateArray<v1::Runtime::WithRawCallbackMethod_Upload<
            v1::Runtime::WithRawCallbackMethod_Download<v1::Runtime::WithRawCallbackMethod_FreeArray<
                v1::Runtime::WithRawCallbackMethod_LoadModule<v1::Runtime::WithRawCallbackMethod_Submit<
                    v1::Runtime::WithRawCallbackMethod_Synchronize<v1::Runtime::WithRawCallbackMethod_ReadOutput<
                        v1::Runtime::WithRawCallbackMethod_SetKernelCacheDir<
                            v1::Runtime::WithRawCallbackMethod_ClearKernelCache<v1::Runtime::Service>>>>>>>>>>>>>>>>>>>>>>>>>>>;

class RuntimeService final : public RawRuntimeService {
 public:
  explicit RuntimeService(DaemonState* state) : state_(state) {}

#define WARPD_RAW_UNARY(Method)                                                              \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request, \
                                   grpc::ByteBuffer* response) override
  WARPD_RAW_UNARY(GetServerInfo);
  WARPD_RAW_UNARY(OpenSession);
  WARPD_RAW_UNARY(CloseSession);
  WARPD_RAW_UNARY(RenewSession);
  WARPD_RAW_UNARY(GetUsage);
  // persistent_rpcs.cc
  WARPD_RAW_UNARY(PersistArray);
  WARPD_RAW_UNARY(ListPersistent);
  WARPD_RAW_UNARY(AttachPersistent);
  WARPD_RAW_UNARY(DeletePersistent);
  WARPD_RAW_UNARY(CreateArray);
  WARPD_RAW_UNARY(FreeArray);
  WARPD_RAW_UNARY(CreateView);  // view_rpcs.cc
  WARPD_RAW_UNARY(CreateHashGrid);  // object_rpcs.cc
  WARPD_RAW_UNARY(CreateBvh);       // object_rpcs.cc
  WARPD_RAW_UNARY(CreateMesh);      // object_rpcs.cc
  WARPD_RAW_UNARY(CreateVolume);    // volume_rpcs.cc
  WARPD_RAW_UNARY(ReadVolume);      // volume_rpcs.cc
  WARPD_RAW_UNARY(LoadModule);
  WARPD_RAW_UNARY(Submit);
  WARPD_RAW_UNARY(Synchronize);
  WARPD_RAW_UNARY(ReadOutput);
  WARPD_RAW_UNARY(CreateGraph);
  WARPD_RAW_UNARY(SetKernelCacheDir);
  WARPD_RAW_UNARY(ClearKernelCache);
#undef WARPD_RAW_UNARY
  grpc::ServerReadReactor<grpc::ByteBuffer>* Upload(grpc::CallbackServerContext* ctx,
                                                    grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* HoldSession(grpc::CallbackServerContext* ctx,
                                                          const grpc::ByteBuffer* request) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Download(grpc::CallbackServerContext* ctx,
                                                       const grpc::ByteBuffer* request) override;

 private:
  DaemonState* const state_;
};

}  // namespace warpd::server
