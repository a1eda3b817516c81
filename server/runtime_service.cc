#include "server/runtime_service.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "grpcpp/support/byte_buffer.h"
#include "runtime/device/device.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_members.h"
#include "server/auth/authenticate.h"
#include "server/grpc_status.h"
#include "server/info_messages.h"
#include "server/lease.h"
#include "server/logging.h"
#include "server/load_module_request.h"
#include "server/raw_messages.h"
#include "server/unary_call.h"
#include "common/log_text.h"
#include "common/status_macros.h"
#include "server/stream_calls.h"
#include "server/submit.h"
#include "server/tenant_array.h"
#include "server/tenants/tenant_usage.h"
#include "server/transfer.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

absl::Status DoCreateArray(DaemonState* state, Tenant& tenant, const v1::CreateArrayRequest& req,
                           v1::CreateArrayResponse* resp) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session(), tenant));
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  if (req.init() != v1::ARRAY_INIT_UNSPECIFIED && req.init() != v1::ARRAY_INIT_EMPTY &&
      req.init() != v1::ARRAY_INIT_ZEROS && req.init() != v1::ARRAY_INIT_CONTENTS) {
    return absl::InvalidArgumentError(absl::StrCat("unknown array init ", req.init()));
  }
  const bool with_contents = req.init() == v1::ARRAY_INIT_CONTENTS;
  if (!with_contents && !req.contents().empty()) {
    return absl::InvalidArgumentError("array contents are given only with ARRAY_INIT_CONTENTS");
  }
  // Struct dtypes live in a table owned by the array.
  auto dtype_table = std::make_shared<types::TypeTable>();
  WARPD_ASSIGN_OR_RETURN(ir::TypeRef dtype, ir::TypeFromProto(req.dtype(), *dtype_table));
  if (!dtype->contains_struct()) dtype_table.reset();
  WARPD_ASSIGN_OR_RETURN(runtime::ArrayLayout layout,
                         runtime::MakeArrayLayout(dtype, {req.shape().data(), size_t(req.shape_size())},
                                                  std::move(dtype_table), /*allow_array_members=*/true));
  if (with_contents && req.contents().size() != layout.size_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("array contents have ", req.contents().size(),
                                                   " bytes, but the array takes ", layout.size_bytes));
  }
  // Elements holding descriptors (runtime/objects/array_members.h) live in
  // the session's private pool, never mapped into a client, and start zeroed
  // (an empty descriptor), whatever the init; the arrays they hold are
  // charged to the session. EMPTY may otherwise reuse the session's own
  // freed memory as it is (segment_pool.h).
  const bool descriptors = dtype->holds_array();
  // Host memory (the CPU's arrays, every array's bookkeeping) comes from
  // `pool`; a GPU array's data is charged through the session's pool of
  // that device, whose account tells its use there (Session::DevicePool).
  runtime::SegmentPool& pool = descriptors ? session->private_pool() : session->pool();
  runtime::SegmentPool& data_pool = device->info().kind == "cpu" ? pool : session->DevicePool(device->name());
  const bool uninitialized = req.init() == v1::ARRAY_INIT_EMPTY || req.init() == v1::ARRAY_INIT_UNSPECIFIED;
  const runtime::Fill fill = uninitialized && !descriptors ? runtime::Fill::kAny : runtime::Fill::kZero;
  // Plain elements may be mapped by a local client (on a GPU: from the
  // session's exportable pool); descriptors never.
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Buffer> buffer,
                         descriptors ? device->Allocate(layout.size_bytes, "array", &data_pool, fill)
                                     : device->AllocateShareable(layout.size_bytes, "array", &data_pool, fill));
  WARPD_ASSIGN_OR_RETURN(
      std::shared_ptr<const runtime::Array> array,
      MakeTenantArray(session->tenant(), pool, device->name(), layout, std::move(buffer), 0,
                      descriptors ? std::make_shared<runtime::HeldArrays>(pool.account()) : nullptr));
  if (with_contents && layout.size_bytes > 0) {
    // Nothing else can reach the array yet: no handle exists.
    auto contents = absl::MakeConstSpan(reinterpret_cast<const std::byte*>(req.contents().data()), layout.size_bytes);
    if (!descriptors) {
      WARPD_RETURN_IF_ERROR(device->Upload(*array, 0, contents));
    } else {
      // The handles become descriptors in a host copy, which is uploaded.
      std::vector<std::byte> bytes(contents.begin(), contents.end());
      std::vector<std::shared_ptr<const runtime::Array>> bound;
      auto lookup_fn = [&](uint64_t handle) { return session->arrays().Get(handle); };
      const uint64_t elem = dtype->size();
      for (uint64_t i = 0; i < layout.num_elements; ++i) {
        auto what = [&] { return absl::StrCat("array contents: element ", i); };
        WARPD_RETURN_IF_ERROR(runtime::BindArrayMembers(dtype, bytes.data() + i * elem, lookup_fn, device->name(),
                                                        &bound, what));
      }
      WARPD_RETURN_IF_ERROR(device->Upload(*array, 0, bytes));
      WARPD_RETURN_IF_ERROR(array->held()->Add(bound, array.get()));
    }
  }
  if (descriptors) session->TrackHeld(array->held());
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session->AddArray(array));
  resp->set_handle(handle);
  resp->set_size_bytes(layout.size_bytes);
  for (int64_t s : array->strides()) resp->add_strides(s);
  // What the share socket would answer for it (server/local/share_arrays.cc).
  const runtime::CpuBuffer* memory = array->buffer()->cpu();
  if (!descriptors && layout.size_bytes > 0 && memory != nullptr && memory->fd() >= 0) {
    resp->set_segment(memory->segment_serial());
    resp->set_segment_offset(memory->offset() + array->byte_offset());
  }
  return absl::OkStatus();
}

// A FailedFunction of the response (or of an error's CompileFailures).
void FailureToProto(const ir::FunctionFailure& f, v1::FailedFunction* out) {
  out->set_name(f.name);
  out->set_display_name(f.display_name);
  out->set_kernel(f.kernel);
  out->set_message(f.message);
  out->set_category(static_cast<v1::ErrorCategory>(f.parts.category));
  out->set_location(f.parts.location);
  out->set_text(f.parts.text);
}

// Adds `failures` to a failed LoadModule's status as a CompileFailures
// payload (ToGrpcStatus sends it as the call's error details), as many as
// fit in kMaxStatusDetailsBytes.
void AttachCompileFailures(const std::vector<ir::FunctionFailure>& failures, absl::Status& status) {
  v1::CompileFailures details;
  for (const ir::FunctionFailure& f : failures) {
    v1::FailedFunction one;
    FailureToProto(f, &one);
    if (details.ByteSizeLong() + one.ByteSizeLong() + 8 > kMaxStatusDetailsBytes) break;
    *details.add_failed() = std::move(one);
  }
  status.SetPayload(absl::StrCat(kTypeUrlPrefix, v1::CompileFailures::descriptor()->full_name()),
                    absl::Cord(absl::string_view(details.SerializeAsString())));
}

// Fills the response for a compiled module and adds it to the session.
absl::Status FinishLoadModule(DaemonState* state, const Tenant& tenant, Session& session,
                              absl::StatusOr<compiler::CompileResult> compiled, v1::LoadModuleResponse* resp) {
  const metrics::TenantMetrics m = state->metrics().ForTenant(tenant.name());
  if (!compiled.ok()) {
    m.compiles_failed.Increment();
    return compiled.status();
  }
  compiler::CompileResult& result = *compiled;
  if (result.cache_hit) {
    m.module_cache_hits.Increment();
  } else {
    m.module_cache_misses.Increment();
    m.compiles_ok.Increment();
    m.compile_seconds.Observe(result.compile_ms / 1000.0);
  }
  WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddModule(result.module));
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
      param->set_access(p.access);
    }
  }
  for (const ir::FunctionFailure& f : result.failures) {
    FailureToProto(f, resp->add_failed());
  }
  spdlog::debug("LoadModule: {} kernel(s), key {}, {} in {:.1f} ms",
                result.module->kernels().size(), result.module->cache_key(),
                result.cache_hit ? "cache hit" : "compiled", result.compile_ms);
  return absl::OkStatus();
}

// Checks the request and hands the module to the compiler, which calls
// `finish` exactly once with the serialized response in *out or an error
// (now, or from a compile thread: nothing here waits for a compile).
void StartLoadModule(DaemonState* state, std::shared_ptr<Tenant> tenant, LoadModuleInput req, grpc::ByteBuffer* out,
                     std::chrono::steady_clock::time_point arrived, absl::AnyInvocable<void(absl::Status) &&> finish) {
  absl::StatusOr<std::shared_ptr<Session>> session = state->sessions().Get(req.session, *tenant);
  // What the module is compiled for: the devices' kind (and a GPU's
  // architecture); one module per kind, so the devices named must agree.
  compiler::Target target = compiler::Target::kCpu;
  int cuda_arch = 0;
  absl::Status checked = [&]() -> absl::Status {
    if (!session.ok()) return session.status();
    std::string first;
    for (const std::string& name : req.devices) {
      WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(name));
      int arch = 0;
      if (device->target() == compiler::Target::kCuda &&
          (!absl::StartsWith(device->info().arch, "sm_") ||
           !absl::SimpleAtoi(absl::string_view(device->info().arch).substr(3), &arch))) {
        return absl::InternalError(absl::StrCat("device '", name, "' has no CUDA architecture"));
      }
      if (first.empty()) {
        first = name;
        target = device->target();
        cuda_arch = arch;
      } else if (device->target() != target || arch != cuda_arch) {
        return absl::InvalidArgumentError(absl::StrCat("one LoadModule compiles for one kind of device: '", first,
                                                       "' and '", name, "' differ; load the module for each"));
      }
    }
    if (state->compiler() == nullptr) {
      return absl::UnavailableError("this server has no kernel compiler");
    }
    return absl::OkStatus();
  }();
  if (!checked.ok()) return std::move(finish)(checked);
  // What this tenant compiles goes to the shared disk cache only within its
  // cache_bytes_per_hour budget; past it the module is served from memory.
  compiler::CacheWriteGate gate = [state, tenant](uint64_t bytes) {
    if (tenant->ChargeCacheWrite(bytes)) return true;
    state->metrics().ForTenant(tenant->name()).kernel_cache_unsaved.Increment();
    return false;
  };
  auto module = std::shared_ptr<ir::Module>(std::move(req.module));
  state->compiler()->CompileAsync(
      module, target,
      [state, tenant = std::move(tenant), session = *std::move(session), out, arrived, module,
       finish = std::move(finish)](absl::StatusOr<compiler::CompileResult> compiled) mutable {
        v1::LoadModuleResponse resp;
        absl::Status status = FinishLoadModule(state, *tenant, *session, std::move(compiled), &resp);
        // No kernel passed sema: the error's details list each failure in parts.
        if (!status.ok() && !module->failures.empty()) AttachCompileFailures(module->failures, status);
        resp.set_server_ms(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - arrived).count());
        if (status.ok()) status = SerializeMessage(resp, out);
        // Let go of the session before the call ends: once the last call
        // has ended the daemon may be tearing sessions down.
        session.reset();
        std::move(finish)(status);
      },
      std::move(gate), cuda_arch);
}

}  // namespace

using v1::ClearKernelCacheRequest;
using v1::ClearKernelCacheResponse;
using v1::CloseSessionRequest;
using v1::CloseSessionResponse;
using v1::CreateArrayRequest;
using v1::CreateArrayResponse;
using v1::FreeArrayRequest;
using v1::FreeArrayResponse;
using v1::GetServerInfoRequest;
using v1::OpenSessionRequest;
using v1::OpenSessionResponse;
using v1::ReadOutputRequest;
using v1::ReadOutputResponse;
using v1::ServerInfo;
using v1::SetKernelCacheDirRequest;
using v1::SetKernelCacheDirResponse;
using v1::SubmitRequest;
using v1::SubmitResponse;
using v1::SynchronizeRequest;
using v1::SynchronizeResponse;
using grpc::ByteBuffer;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

ServerUnaryReactor* RuntimeService::GetServerInfo(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<GetServerInfoRequest, ServerInfo>(state_, ctx, in, out, "GetServerInfo", Run::kInline,
                                                   [this](auto* call) {
    ServerInfo* response = &call->response;
    response->set_version(kVersion);
    for (const auto& d : state_->devices().all()) {
      FillDeviceInfo(*d, response->add_devices());
    }
    response->set_kernel_cache_dir(state_->compiler() ? state_->compiler()->cache_dir()
                                                      : state_->flags().cache_dir);
    response->set_cuda_driver(state_->cuda_driver());
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::OpenSession(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<OpenSessionRequest, OpenSessionResponse>(state_, ctx, in, out, "OpenSession", Run::kInline,
                                                          [this, ctx](auto* call) {
    // The session closes if a reload revokes the token it was opened with.
    WARPD_ASSIGN_OR_RETURN(std::string token, state_->sessions().Open(call->tenant, call->request.client_name(),
                                                                      CallCredential(*ctx)));
    call->response.set_session(token);
    LogLimited(spdlog::level::info, call->tenant->label(), "session opened", "session opened for '{}' from {} ({} open)",
               LogText(call->request.client_name()), LogText(ctx->peer()), state_->sessions().size());
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::CloseSession(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  // Closing cancels and waits for the session's streams: may block.
  return Respond<CloseSessionRequest, CloseSessionResponse>(state_, ctx, in, out, "CloseSession", Run::kOnPool,
                                                            [this](auto* call) {
    WARPD_RETURN_IF_ERROR(state_->sessions().Close(call->request.session(), *call->tenant));
    LogLimited(spdlog::level::info, call->tenant->label(), "session closed", "session closed ({} open)",
               state_->sessions().size());
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::RenewSession(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<v1::RenewSessionRequest, v1::RenewSessionResponse>(
      state_, ctx, in, out, "RenewSession", Run::kInline, [this](auto* call) {
        WARPD_RETURN_IF_ERROR(call->GetSession(state_, call->request.session()).status());
        call->response.set_grace_seconds(absl::ToDoubleSeconds(state_->sessions().grace()));
        return absl::OkStatus();
      });
}

grpc::ServerWriteReactor<ByteBuffer>* RuntimeService::HoldSession(CallbackServerContext* ctx, const ByteBuffer* in) {
  return StartHoldSession(state_, ctx, in);
}

ServerUnaryReactor* RuntimeService::GetUsage(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<v1::GetUsageRequest, v1::Usage>(state_, ctx, in, out, "GetUsage", Run::kInline, [this](auto* call) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
    FillUsage(*call->tenant, &call->response);
    for (const Session::DeviceMemory& use : session->DeviceMemoryUse()) {
      v1::DeviceMemoryUse* m = call->response.add_device_memory();
      m->set_device(use.device);
      m->set_used_bytes(use.used);
      m->set_peak_bytes(use.peak);
    }
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::CreateArray(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<CreateArrayRequest, CreateArrayResponse>(
      state_, ctx, in, out, "CreateArray", Run::kOnPool,
      [this](auto* call) { return DoCreateArray(state_, *call->tenant, call->request, &call->response); });
}

grpc::ServerReadReactor<ByteBuffer>* RuntimeService::Upload(CallbackServerContext* ctx, ByteBuffer* out) {
  return StartUpload(state_, ctx, out);
}

grpc::ServerWriteReactor<ByteBuffer>* RuntimeService::Download(CallbackServerContext* ctx, const ByteBuffer* in) {
  return StartDownload(state_, ctx, in);
}

ServerUnaryReactor* RuntimeService::FreeArray(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  // Removing the handle is immediate; queued commands that use the array
  // hold it, so its memory goes when the last of them is done.
  return Respond<FreeArrayRequest, FreeArrayResponse>(state_, ctx, in, out, "FreeArray", Run::kInline,
                                                      [this](auto* call) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
    return session->arrays().Remove(call->request.handle()).status();
  });
}

ServerUnaryReactor* RuntimeService::LoadModule(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  // Read by ReadLoadModuleRequest (bounded memory), not by UnaryCall's parse.
  const auto arrived = std::chrono::steady_clock::now();
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::StatusOr<std::shared_ptr<Tenant>> tenant = AuthenticateCall(state_->tenants(), *ctx);
  if (!tenant.ok()) {
    LogFailure("LoadModule", tenant.status(), nullptr);
    state_->metrics().Rpc("LoadModule", tenant.status().code()).Increment();
    reactor->Finish(ToGrpcStatus(tenant.status()));
    return reactor;
  }
  // At most the tenant's compile limit run at once; more wait in the
  // tenant's queue, not on the RPC pool. The RPC pool reads and checks the
  // request and generates code; the compile itself (and any wait for a
  // compile worker or for the same module's compile in flight) happens on
  // the compiler's compile threads, which finish the call.
  absl::Status queued = (*tenant)->StartCompile([this, reactor, in, out, arrived, tenant = *tenant]() mutable {
    state_->rpc_pool().Schedule([this, reactor, in, out, arrived, tenant = std::move(tenant)]() mutable {
      auto finish = [this, reactor, tenant](absl::Status status) {
        tenant->CompileDone();
        LogFailure("LoadModule", status, tenant.get());
        state_->metrics().Rpc("LoadModule", status.code()).Increment();
        reactor->Finish(ToGrpcStatus(status));
      };
      absl::StatusOr<LoadModuleInput> req =
          ReadLoadModuleRequest(*in, [this, &tenant](const std::string& session) {
            return state_->sessions().Get(session, *tenant).status();
          });
      if (!req.ok()) return finish(req.status());
      StartLoadModule(state_, std::move(tenant), *std::move(req), out, arrived, std::move(finish));
    });
  });
  if (!queued.ok()) {
    LogFailure("LoadModule", queued, tenant->get());
    state_->metrics().Rpc("LoadModule", queued.code()).Increment();
    reactor->Finish(ToGrpcStatus(queued));
  }
  return reactor;
}

ServerUnaryReactor* RuntimeService::Submit(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto* call = UnaryCall<SubmitRequest, SubmitResponse>::Start(state_, ctx, reactor, in, out, "Submit");
  if (call == nullptr) return reactor;
  absl::StatusOr<std::shared_ptr<runtime::Stream>> stream = SubmitBatch(state_, *call->tenant, call->request, &call->response);
  if (!stream.ok() || !call->request.synchronize()) {
    // What finished launches printed so far comes back at once.
    if (stream.ok()) call->response.set_output((*stream)->TakeOutput());
    call->Finish(stream.status());
    return reactor;
  }
  // Submit and wait: finishes from the thread that drains the stream, like
  // Synchronize, so no gRPC thread blocks. On an error the output stays for
  // ReadOutput (an error status carries no response).
  (*stream)->SynchronizeAsync([this, call, stream = *stream](absl::Status s) {
    CountStreamError(state_, *call->tenant, s);
    if (s.ok()) call->response.set_output(stream->TakeOutput());
    call->Finish(std::move(s));
  });
  return reactor;
}

ServerUnaryReactor* RuntimeService::Synchronize(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  // Never blocks a gRPC thread: the call finishes from the thread that drains
  // the last busy stream (or here, when all are idle).
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto* call = UnaryCall<SynchronizeRequest, SynchronizeResponse>::Start(state_, ctx, reactor, in, out, "Synchronize");
  if (call == nullptr) return reactor;
  if (absl::Status bad = CheckReadTimes(call->request); !bad.ok()) {
    call->Finish(std::move(bad));
    return reactor;
  }
  auto streams = StreamsToSynchronize(state_, *call->tenant, call->request);
  if (!streams.ok()) {
    call->Finish(streams.status());
    return reactor;
  }
  SynchronizeStreams(*streams, [this, call, streams = *streams](absl::Status s) {
    CountStreamError(state_, *call->tenant, s);
    if (s.ok()) call->response.set_output(TakeOutput(streams));
    if (s.ok()) s = ReadTimes(state_, *call->tenant, call->request, &call->response);
    call->Finish(std::move(s));
  });
  return reactor;
}

ServerUnaryReactor* RuntimeService::CreateGraph(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  // Validation and packing only, like Submit: inline.
  return Respond<v1::CreateGraphRequest, v1::CreateGraphResponse>(
      state_, ctx, in, out, "CreateGraph", Run::kInline, [this](auto* call) -> absl::Status {
        const v1::CreateGraphRequest& req = call->request;
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, req.session()));
        WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state_->devices().FindUsable(req.device()));
        WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Graph> graph,
                               PrepareGraph(*session, device->name(), req.commands()));
        WARPD_ASSIGN_OR_RETURN(uint64_t handle, session->AddGraph(std::move(graph)));
        call->response.set_graph(handle);
        return absl::OkStatus();
      });
}

ServerUnaryReactor* RuntimeService::ReadOutput(CallbackServerContext* ctx, const ByteBuffer* in, ByteBuffer* out) {
  return Respond<ReadOutputRequest, ReadOutputResponse>(state_, ctx, in, out, "ReadOutput", Run::kInline,
                                                        [this](auto* call) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
    std::vector<std::shared_ptr<runtime::Stream>> streams;
    if (call->request.device().empty()) {
      streams = session->Streams();
    } else {
      WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state_->devices().Find(call->request.device()));
      streams = session->StreamsOn(device->name());  // kernel output of every stream of the device
    }
    call->response.set_output(TakeOutput(streams));
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::SetKernelCacheDir(CallbackServerContext* ctx, const ByteBuffer* in,
                                                      ByteBuffer* out) {
  return Respond<SetKernelCacheDirRequest, SetKernelCacheDirResponse>(
      state_, ctx, in, out, "SetKernelCacheDir", Run::kOnPool, [this](auto* call) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
    if (!state_->flags().allow_client_cache_dir) {
      return absl::PermissionDeniedError(
          "this server does not let clients change the kernel cache directory (start it with "
          "--allow-client-cache-dir)");
    }
    const std::string& path = call->request.path();
    if (path.empty() || path[0] != '/' || path.size() > 4096 || path.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          "kernel cache directory must be an absolute path (at most 4096 bytes, no NUL)");
    }
    if (state_->compiler() == nullptr) {
      return absl::UnavailableError("this server has no kernel compiler");
    }
    WARPD_RETURN_IF_ERROR(state_->compiler()->SetCacheDir(path));
    call->response.set_kernel_cache_dir(state_->compiler()->cache_dir());
    LogLimited(spdlog::level::info, call->tenant->label(), "kernel cache directory set",
               "kernel cache directory set to {}", LogText(state_->compiler()->cache_dir()));
    return absl::OkStatus();
  });
}

ServerUnaryReactor* RuntimeService::ClearKernelCache(CallbackServerContext* ctx, const ByteBuffer* in,
                                                     ByteBuffer* out) {
  return Respond<ClearKernelCacheRequest, ClearKernelCacheResponse>(
      state_, ctx, in, out, "ClearKernelCache", Run::kOnPool, [this](auto* call) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, call->GetSession(state_, call->request.session()));
    if (state_->compiler() == nullptr) {
      return absl::UnavailableError("this server has no kernel compiler");
    }
    if (!state_->flags().allow_client_cache_dir) {
      // A shared daemon: the cache belongs to every tenant, not this one.
      call->response.set_modules_released(session->modules().Clear().size());
      return absl::OkStatus();
    }
    WARPD_ASSIGN_OR_RETURN(uint64_t removed, state_->compiler()->ClearCache());
    call->response.set_entries_removed(removed);
    LogLimited(spdlog::level::info, call->tenant->label(), "kernel cache cleared",
               "kernel cache cleared: {} entries removed", removed);
    return absl::OkStatus();
  });
}

}  // namespace warpd::server
