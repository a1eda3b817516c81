#include "server/runtime_service.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "compiler/ir/from_proto.h"
#include "grpcpp/support/byte_buffer.h"
#include "runtime/device/cpu_device.h"
#include "runtime/objects/array.h"
#include "server/grpc_status.h"
#include "server/load_module_request.h"
#include "server/status_macros.h"
#include "server/submit.h"
#include "server/transfer.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

enum class Run { kInline, kOnPool };

// Runs `fn` (returning absl::Status) inline or on the RPC pool and finishes
// the call with its status. The request and response stay valid until
// Finish, so `fn` may use them from the pool.
template <typename Fn>
grpc::ServerUnaryReactor* Respond(DaemonState* state, grpc::CallbackServerContext* ctx,
                                  const char* rpc, Run where, Fn fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto work = [reactor, rpc, fn = std::move(fn)]() mutable {
    absl::Status status = fn();
    if (!status.ok()) {
      if (status.code() == absl::StatusCode::kInternal ||
          status.code() == absl::StatusCode::kUnknown) {
        spdlog::warn("{}: {}", rpc, status.ToString());
      } else {
        spdlog::debug("{}: {}", rpc, status.ToString());
      }
    }
    reactor->Finish(ToGrpcStatus(status));
  };
  if (where == Run::kOnPool) {
    state->rpc_pool().Schedule(std::move(work));
  } else {
    work();
  }
  return reactor;
}

void FillDeviceInfo(const runtime::DeviceInfo& in, v1::DeviceInfo* out) {
  out->set_name(in.name);
  out->set_alias(in.alias);
  out->set_kind(in.kind);
  out->set_arch(in.arch);
  out->set_uuid(in.uuid);
  out->set_memory_bytes(in.memory_bytes);
}

absl::Status DoCreateArray(DaemonState* state, const v1::CreateArrayRequest& req,
                           v1::CreateArrayResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session()));
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().Find(req.device()));
  if (device->AsCpu() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("arrays on device '", device->name(), "' are not supported yet"));
  }
  if (req.init() != v1::ARRAY_INIT_UNSPECIFIED && req.init() != v1::ARRAY_INIT_EMPTY &&
      req.init() != v1::ARRAY_INIT_ZEROS) {
    return absl::InvalidArgumentError(absl::StrCat("unknown array init ", req.init()));
  }
  WARPD_ASSIGN_OR_RETURN(ir::Type dtype, ir::TypeFromProto(req.dtype()));
  WARPD_ASSIGN_OR_RETURN(
      runtime::ArrayLayout layout,
      runtime::MakeArrayLayout(dtype, {req.shape().data(), size_t(req.shape_size())}));
  // Fresh CPU buffers are zero-filled, so EMPTY and ZEROS cost the same.
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::CpuBuffer> buffer,
                         state->allocator().Allocate(layout.size_bytes, "array"));
  auto array = std::make_shared<const runtime::Array>(device->name(), layout, std::move(buffer));
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session->AddArray(array));
  resp->set_handle(handle);
  resp->set_size_bytes(layout.size_bytes);
  for (int64_t s : array->strides()) resp->add_strides(s);
  return absl::OkStatus();
}

absl::Status DoLoadModule(DaemonState* state, LoadModuleInput req, v1::LoadModuleResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session));
  for (const std::string& name : req.devices) {
    WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().Find(name));
    if (device->AsCpu() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("compiling for device '", name, "' is not supported yet"));
    }
  }
  if (state->compiler() == nullptr) {
    return absl::UnavailableError("this server has no kernel compiler");
  }
  std::unique_ptr<ir::Module>& module = req.module;
  WARPD_ASSIGN_OR_RETURN(compiler::CompileResult result, state->compiler()->CompileCpu(*module));
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session->AddModule(result.module));
  resp->set_module(handle);
  resp->set_cache_key(result.module->cache_key());
  resp->set_cache_hit(result.cache_hit);
  resp->set_compile_ms(result.compile_ms);
  for (const compiler::CompiledKernel& k : result.module->kernels()) {
    v1::KernelInfo* info = resp->add_kernels();
    info->set_name(k.layout.name);
    info->set_args_size(k.layout.args_size);
    info->set_tid_ndim(static_cast<uint32_t>(std::max(k.layout.tid_ndim, 0)));
    for (const compiler::ParamLayout& p : k.layout.params) {
      v1::ParamInfo* param = info->add_params();
      param->set_name(p.name);
      *param->mutable_type() = ir::TypeToProto(p.type);
      param->set_offset(p.offset);
      param->set_size(p.size);
    }
  }
  spdlog::debug("LoadModule: {} kernel(s), key {}, {} in {:.1f} ms",
                result.module->kernels().size(), result.module->cache_key(),
                result.cache_hit ? "cache hit" : "compiled", result.compile_ms);
  return absl::OkStatus();
}

// Validates and queues the batch; returns the stream it went to.
absl::StatusOr<std::shared_ptr<runtime::Stream>> DoSubmit(DaemonState* state, const v1::SubmitRequest& req,
                                                          v1::SubmitResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session()));
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().Find(req.device()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Stream> stream, session->StreamFor(device));
  WARPD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<runtime::Command>> batch,
                         PrepareBatch(*session, device->name(), req.commands()));
  resp->set_sequence(stream->Submit(std::move(batch)));
  return stream;
}

// The streams a Synchronize request waits for: the named device's, or all.
absl::StatusOr<std::vector<std::shared_ptr<runtime::Stream>>> StreamsToSynchronize(
    DaemonState* state, const v1::SynchronizeRequest& req) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session()));
  if (req.device().empty()) return session->Streams();
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().Find(req.device()));
  std::vector<std::shared_ptr<runtime::Stream>> out;
  if (auto stream = session->FindStream(device->name())) out.push_back(std::move(stream));
  return out;
}

// Finishes a Synchronize call once every stream it waits for has reported;
// the first error wins (every stream's error is cleared).
class SyncJoin {
 public:
  SyncJoin(grpc::ServerUnaryReactor* reactor, size_t streams)
      : reactor_(reactor), remaining_(streams) {}

  void Done(absl::Status status) {
    absl::Status result;
    {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok() && !status.ok()) first_error_ = std::move(status);
      if (--remaining_ > 0) return;
      result = first_error_;
    }
    if (!result.ok()) spdlog::debug("Synchronize: {}", result.ToString());
    reactor_->Finish(ToGrpcStatus(result));
  }

 private:
  grpc::ServerUnaryReactor* const reactor_;
  absl::Mutex mu_;
  size_t remaining_ ABSL_GUARDED_BY(mu_);
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerUnaryReactor* RuntimeService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                        const v1::GetServerInfoRequest*,
                                                        v1::ServerInfo* response) {
  return Respond(state_, ctx, "GetServerInfo", Run::kInline, [this, response] {
    response->set_version(kVersion);
    for (const auto& d : state_->devices().all()) FillDeviceInfo(d->info(), response->add_devices());
    response->set_kernel_cache_dir(state_->compiler() ? state_->compiler()->cache_dir()
                                                      : state_->flags().cache_dir);
    response->set_cuda_driver(state_->cuda_driver());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* RuntimeService::OpenSession(grpc::CallbackServerContext* ctx,
                                                      const v1::OpenSessionRequest* request,
                                                      v1::OpenSessionResponse* response) {
  return Respond(state_, ctx, "OpenSession", Run::kInline, [this, ctx, request, response] {
    WARPD_ASSIGN_OR_RETURN(std::string token, state_->sessions().Open(request->client_name()));
    response->set_session(token);
    spdlog::info("session opened for '{}' from {} ({} open)", request->client_name(),
                 ctx->peer(), state_->sessions().size());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* RuntimeService::CloseSession(grpc::CallbackServerContext* ctx,
                                                       const v1::CloseSessionRequest* request,
                                                       v1::CloseSessionResponse*) {
  // Closing cancels and waits for the session's streams: may block.
  return Respond(state_, ctx, "CloseSession", Run::kOnPool, [this, request] {
    WARPD_RETURN_IF_ERROR(state_->sessions().Close(request->session()));
    spdlog::info("session closed ({} open)", state_->sessions().size());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* RuntimeService::CreateArray(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateArrayRequest* request,
                                                      v1::CreateArrayResponse* response) {
  return Respond(state_, ctx, "CreateArray", Run::kOnPool,
                 [this, request, response] { return DoCreateArray(state_, *request, response); });
}

grpc::ServerReadReactor<v1::UploadChunk>* RuntimeService::Upload(grpc::CallbackServerContext* ctx,
                                                                 v1::UploadResponse* response) {
  return StartUpload(state_, response);
}

grpc::ServerWriteReactor<v1::DownloadChunk>* RuntimeService::Download(
    grpc::CallbackServerContext* ctx, const v1::DownloadRequest* request) {
  return StartDownload(state_, request);
}

grpc::ServerUnaryReactor* RuntimeService::FreeArray(grpc::CallbackServerContext* ctx,
                                                    const v1::FreeArrayRequest* request,
                                                    v1::FreeArrayResponse*) {
  // Removing the handle is immediate; queued commands that use the array
  // hold it, so its memory goes when the last of them is done.
  return Respond(state_, ctx, "FreeArray", Run::kInline, [this, request] {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session,
                           state_->sessions().Get(request->session()));
    return session->arrays().Remove(request->handle()).status();
  });
}

grpc::ServerUnaryReactor* RuntimeService::LoadModule(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  return Respond(state_, ctx, "LoadModule", Run::kOnPool, [this, request, response] {
    WARPD_ASSIGN_OR_RETURN(LoadModuleInput req,
                           ReadLoadModuleRequest(*request, [this](const std::string& session) {
                             return state_->sessions().Get(session).status();
                           }));
    v1::LoadModuleResponse resp;
    WARPD_RETURN_IF_ERROR(DoLoadModule(state_, std::move(req), &resp));
    std::string bytes;
    if (!resp.SerializeToString(&bytes)) {
      return absl::InternalError("LoadModule: could not serialize the response");
    }
    grpc::Slice slice(std::move(bytes));
    *response = grpc::ByteBuffer(&slice, 1);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* RuntimeService::Submit(grpc::CallbackServerContext* ctx,
                                                 const v1::SubmitRequest* request,
                                                 v1::SubmitResponse* response) {
  if (!request->synchronize()) {
    return Respond(state_, ctx, "Submit", Run::kInline,
                   [this, request, response] { return DoSubmit(state_, *request, response).status(); });
  }
  // Submit and wait: finishes from the thread that drains the stream, like
  // Synchronize, so no gRPC thread blocks.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::StatusOr<std::shared_ptr<runtime::Stream>> stream = DoSubmit(state_, *request, response);
  if (!stream.ok()) {
    spdlog::debug("Submit: {}", stream.status().ToString());
    reactor->Finish(ToGrpcStatus(stream.status()));
    return reactor;
  }
  (*stream)->SynchronizeAsync([reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* RuntimeService::Synchronize(grpc::CallbackServerContext* ctx,
                                                      const v1::SynchronizeRequest* request,
                                                      v1::SynchronizeResponse*) {
  // Never blocks a gRPC thread: the call finishes from the thread that drains
  // the last busy stream (or here, when all are idle).
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto streams = StreamsToSynchronize(state_, *request);
  if (!streams.ok()) {
    spdlog::debug("Synchronize: {}", streams.status().ToString());
    reactor->Finish(ToGrpcStatus(streams.status()));
    return reactor;
  }
  if (streams->empty()) {
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  auto join = std::make_shared<SyncJoin>(reactor, streams->size());
  for (const auto& stream : *streams) {
    stream->SynchronizeAsync([join](absl::Status s) { join->Done(std::move(s)); });
  }
  return reactor;
}

grpc::ServerUnaryReactor* RuntimeService::SetKernelCacheDir(
    grpc::CallbackServerContext* ctx, const v1::SetKernelCacheDirRequest* request,
    v1::SetKernelCacheDirResponse* response) {
  return Respond(state_, ctx, "SetKernelCacheDir", Run::kOnPool, [this, request, response] {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session,
                           state_->sessions().Get(request->session()));
    if (!state_->flags().allow_client_cache_dir) {
      return absl::PermissionDeniedError(
          "this server does not let clients change the kernel cache directory (start it with "
          "--allow-client-cache-dir)");
    }
    const std::string& path = request->path();
    if (path.empty() || path[0] != '/' || path.size() > 4096 || path.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          "kernel cache directory must be an absolute path (at most 4096 bytes, no NUL)");
    }
    if (state_->compiler() == nullptr) {
      return absl::UnavailableError("this server has no kernel compiler");
    }
    WARPD_RETURN_IF_ERROR(state_->compiler()->SetCacheDir(request->path()));
    response->set_kernel_cache_dir(state_->compiler()->cache_dir());
    spdlog::info("kernel cache directory set to {}", state_->compiler()->cache_dir());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* RuntimeService::ClearKernelCache(grpc::CallbackServerContext* ctx,
                                                           const v1::ClearKernelCacheRequest* request,
                                                           v1::ClearKernelCacheResponse* response) {
  return Respond(state_, ctx, "ClearKernelCache", Run::kOnPool, [this, request, response] {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session,
                           state_->sessions().Get(request->session()));
    if (state_->compiler() == nullptr) {
      return absl::UnavailableError("this server has no kernel compiler");
    }
    if (!state_->flags().allow_client_cache_dir) {
      // A shared daemon: the cache belongs to every tenant, not this one.
      const size_t released = session->modules().Clear().size();
      response->set_modules_released(released);
      return absl::OkStatus();
    }
    WARPD_ASSIGN_OR_RETURN(uint64_t removed, state_->compiler()->ClearCache());
    response->set_entries_removed(removed);
    spdlog::info("kernel cache cleared: {} entries removed", removed);
    return absl::OkStatus();
  });
}

}  // namespace warpd::server
