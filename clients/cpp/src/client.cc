// warpd::Client: connection, session, arrays, modules, launches, graphs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "auth.h"
#include "client_impl.h"

namespace warpd {
namespace internal {
namespace {

constexpr size_t kMaxPending = 1024;       // commands per Submit
constexpr size_t kUploadChunk = 2 << 20;   // bytes per Upload message
constexpr int kMaxMessage = 64 << 20;
constexpr double kCloseSyncSeconds = 60;    // how long closing waits for queued work

std::chrono::system_clock::time_point After(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds));
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  std::string message = s.error_message();
  v1::StatusDetails details;
  bool has_details = !s.error_details().empty() && details.ParseFromString(s.error_details());
  if (has_details) {
    for (const auto& d : details.details()) {
      if (!absl::EndsWith(d.type_url(), "/warpd.v1.CompileFailures")) continue;
      v1::CompileFailures failures;
      if (!failures.ParseFromString(d.value())) continue;
      for (const auto& f : failures.failed()) {
        if (!absl::StrContains(message, f.message())) absl::StrAppend(&message, "\n  ", f.message());
      }
    }
  }
  absl::Status out(static_cast<absl::StatusCode>(s.error_code()), message);
  if (has_details) {
    for (const auto& d : details.details()) out.SetPayload(d.type_url(), absl::Cord(d.value()));
  }
  return out;
}

ArrayState::~ArrayState() {
  if (auto i = impl.lock()) {
    v1::Command cmd;
    cmd.mutable_free()->set_array(handle);
    (void)i->Queue(device, std::move(cmd), {}, /*capturable=*/false);
  }
}

GraphState::~GraphState() {
  if (auto i = impl.lock()) {
    v1::Command cmd;
    cmd.mutable_free_graph()->set_graph(handle);
    (void)i->Queue(device, std::move(cmd), {}, /*capturable=*/false);
  }
}

std::unique_ptr<grpc::ClientContext> Impl::Context(double timeout_seconds) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  if (timeout_seconds > 0) ctx->set_deadline(After(timeout_seconds));
  return ctx;
}

void Impl::Emit(const std::string& text) {
  if (text.empty()) return;
  if (output) {
    output(text);
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void Impl::ReadOutput(const std::string& device) {
  v1::ReadOutputRequest req;
  req.set_session(session);
  req.set_device(device);
  v1::ReadOutputResponse resp;
  auto ctx = Context(10.0);
  if (stub->ReadOutput(ctx.get(), req, &resp).ok()) Emit(resp.output());
}

absl::Status Impl::Connect(const ConnectOptions& o) {
  address = ResolveAddress(o.address);
  output = o.output;
  map_arrays = o.map_local_arrays;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(o.timeout_seconds));
  absl::StatusOr<FoundToken> found;
  while (true) {  // the login socket appears when a starting daemon serves
    found = FindToken(address, o.token, o.token_file);
    if (found.ok() || found.status().code() != absl::StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!found.ok()) {
    if (found.status().code() == absl::StatusCode::kPermissionDenied) {
      return absl::UnauthenticatedError(found.status().message());
    }
    return absl::UnavailableError(
        absl::StrCat("could not reach the warpd daemon at ", address, ": ", found.status().message()));
  }
  token = found->token;
  token_source = found->source;

  std::shared_ptr<grpc::ChannelCredentials> creds;
  std::string ca = o.tls_ca.empty() ? Env("WARPD_TLS_CA") : o.tls_ca;
  if (!ca.empty() && !UnixPath(address)) {
    std::ifstream in(ca);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read the TLS CA file ", ca));
    std::stringstream pem;
    pem << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessage);
  args.SetMaxSendMessageSize(kMaxMessage);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  channel = grpc::CreateCustomChannel(address, creds, args);
  stub = v1::Runtime::NewStub(channel);

  {
    auto ctx = Context(o.timeout_seconds);
    ctx->set_wait_for_ready(true);
    grpc::Status s = stub->GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info);
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      return absl::UnauthenticatedError(RefusalHelp(address, s.error_message(), token_source));
    }
    if (!s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("could not reach the warpd daemon at ", address, ": ", s.error_message()));
    }
  }
  if (!VersionsCompatible(ClientVersion(), info.version())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the warpd daemon at ", address, " is version ", info.version(), ", this client (the warpd C++ client) is ",
        ClientVersion(), ": they speak different protocols. Build the client from the daemon's source tree (version ",
        info.version(), "), or connect to a daemon of version ", ClientVersion()));
  }
  v1::OpenSessionRequest open;
  open.set_client_name(o.client_name.empty() ? absl::StrCat("warpd-cpp pid=", getpid()) : o.client_name);
  v1::OpenSessionResponse opened;
  auto ctx = Context(o.timeout_seconds);
  grpc::Status s = stub->OpenSession(ctx.get(), open, &opened);
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return absl::UnauthenticatedError(RefusalHelp(address, s.error_message(), token_source));
  }
  if (!s.ok()) return FromGrpc(s);
  session = opened.session();
  lease = std::make_unique<Lease>(stub.get(), session, token);
  if (map_arrays) share_path = SharePath(address);
  return absl::OkStatus();
}

void Impl::Close() {
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (closed) return;
  bool queued = false;
  for (auto& [name, q] : queues) queued = queued || !q.pending.empty();
  if (queued) {
    absl::Status st = SynchronizeLocked("", kCloseSyncSeconds);
    if (!st.ok() && st.code() != absl::StatusCode::kUnavailable) {
      std::fprintf(stderr, "warpd: at exit: %s\n", std::string(st.message()).c_str());
    }
  }
  closed = true;
  queues.clear();
  lease.reset();
  v1::CloseSessionRequest req;
  req.set_session(session);
  v1::CloseSessionResponse resp;
  auto ctx = Context(2.0);
  (void)stub->CloseSession(ctx.get(), req, &resp);
}

absl::Status Impl::Queue(const std::string& device, v1::Command cmd, std::vector<Array> arrays, bool capturable) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (closed) return absl::FailedPreconditionError("the client is closed");
  DeviceQueue& q = queues[device];
  if (q.capturing && capturable) {
    q.captured.push_back(std::move(cmd));
    for (Array& a : arrays) q.captured_arrays.push_back(std::move(a));
    return absl::OkStatus();
  }
  q.pending.push_back(std::move(cmd));
  if (q.pending.size() >= kMaxPending) return FlushLocked(device);
  return absl::OkStatus();
}

absl::Status Impl::FlushLocked(const std::string& device) {
  std::vector<std::string> names;
  for (auto& [name, q] : queues) {
    if ((device.empty() || name == device) && !q.pending.empty()) names.push_back(name);
  }
  for (const std::string& name : names) {
    v1::SubmitRequest req;
    req.set_session(session);
    req.set_device(name);
    std::vector<v1::Command> cmds;
    cmds.swap(queues[name].pending);
    for (v1::Command& c : cmds) *req.add_commands() = std::move(c);
    v1::SubmitResponse resp;
    auto ctx = Context();
    grpc::Status s = stub->Submit(ctx.get(), req, &resp);
    if (!s.ok()) {
      absl::Status st = FromGrpc(s);
      if (st.code() != absl::StatusCode::kUnavailable && st.code() != absl::StatusCode::kUnauthenticated) {
        ReadOutput(name);
      }
      return st;
    }
    Emit(resp.output());
  }
  return absl::OkStatus();
}

absl::Status Impl::SynchronizeLocked(const std::string& device, double timeout_seconds) {
  absl::Status st = FlushLocked(device);
  if (!st.ok()) return st;
  v1::SynchronizeRequest req;
  req.set_session(session);
  req.set_device(device);
  v1::SynchronizeResponse resp;
  auto ctx = Context(timeout_seconds);
  grpc::Status s = stub->Synchronize(ctx.get(), req, &resp);
  if (!s.ok()) {
    absl::Status err = FromGrpc(s);
    if (err.code() != absl::StatusCode::kUnavailable && err.code() != absl::StatusCode::kUnauthenticated) {
      ReadOutput(device);
    }
    return err;
  }
  Emit(resp.output());
  return absl::OkStatus();
}

std::shared_ptr<Mapping> Impl::MappingOf(ArrayState& a) {
  if (!share_path || a.size_bytes < kShareMinBytes) return nullptr;
  std::lock_guard<std::mutex> lock(a.map_mu);
  if (!a.map_tried) {
    a.map_tried = true;
    auto m = MapArray(*share_path, token, session, a.handle, a.size_bytes);
    if (m.ok()) a.mapping = *std::move(m);
  }
  return a.mapping;
}

absl::StatusOr<std::shared_ptr<ModuleState>> Impl::LoadModule(const v1::Module& ir, const std::string& device) {
  v1::LoadModuleRequest req;
  req.set_session(session);
  *req.mutable_module() = ir;
  req.add_devices(device);
  auto state = std::make_shared<ModuleState>();
  auto ctx = Context();
  grpc::Status s = stub->LoadModule(ctx.get(), req, &state->response);
  if (!s.ok()) return FromGrpc(s);
  state->impl = weak_from_this();
  state->device = device;
  state->ir = ir;
  return state;
}

absl::StatusOr<std::shared_ptr<ModuleState>> Impl::Backward(const std::shared_ptr<ModuleState>& m) {
  if (m->ir.backward()) return m;
  if (m->backward) return m->backward;
  v1::Module ir = m->ir;
  ir.set_backward(true);
  auto b = LoadModule(ir, m->device);
  if (!b.ok()) return b.status();
  m->backward = *b;
  return *b;
}

}  // namespace internal

using internal::Impl;

// ------------------------------------------------------------------ handles

uint64_t Array::handle() const { return state_->handle; }
const std::string& Array::device() const { return state_->device; }
const v1::TypeRef& Array::dtype() const { return state_->dtype; }
const std::vector<int64_t>& Array::shape() const { return state_->shape; }
int64_t Array::size() const { return state_->count; }
uint64_t Array::size_bytes() const { return state_->size_bytes; }
Array Array::grad() const { return state_ ? state_->grad : Array(); }

uint64_t Module::handle() const { return state_->response.module(); }
const std::string& Module::device() const { return state_->device; }
const v1::LoadModuleResponse& Module::response() const { return state_->response; }
const v1::Module& Module::ir() const { return state_->ir; }

absl::StatusOr<Kernel> Module::kernel(std::string_view wanted) const {
  const std::string name(wanted);
  const auto& kernels = state_->response.kernels();
  for (int k = 0; k < kernels.size(); ++k) {
    if (kernels[k].name() == name) return Kernel(*this, k);
  }
  // By the name it was written with.
  std::vector<std::string> ir_names;
  for (const auto& f : state_->ir.functions()) {
    if (f.kind() != v1::FUNCTION_KERNEL) continue;
    const std::string& shown = f.display_name().empty() ? f.name() : f.display_name();
    if (shown == name) ir_names.push_back(f.name());
  }
  for (const auto& f : state_->response.failed()) {
    for (const std::string& n : ir_names) {
      if (f.kernel() && f.name() == n) {
        return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' failed to compile: ", f.message()));
      }
    }
  }
  if (ir_names.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("module '", state_->ir.name(), "' has ", ir_names.size(), " kernels written '", name,
                     "' (made by one factory): name one by its IR name"));
  }
  if (ir_names.size() == 1) {
    for (int k = 0; k < kernels.size(); ++k) {
      if (kernels[k].name() == ir_names[0]) return Kernel(*this, k);
    }
  }
  std::string have;
  for (const auto& f : state_->ir.functions()) {
    if (f.kind() == v1::FUNCTION_KERNEL) {
      absl::StrAppend(&have, have.empty() ? "" : ", ", f.display_name().empty() ? f.name() : f.display_name());
    }
  }
  return absl::NotFoundError(
      absl::StrCat("module '", state_->ir.name(), "' has no kernel '", name, "' (it has: ", have, ")"));
}

const std::string& Kernel::name() const { return info().name(); }
const v1::KernelInfo& Kernel::info() const { return module_.state_->response.kernels(index_); }

uint64_t Graph::handle() const { return state_->handle; }
const std::string& Graph::device() const { return state_->device; }

// ------------------------------------------------------------------- client

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() { impl_->Close(); }

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(ConnectOptions options) {
  auto impl = std::make_shared<Impl>();
  absl::Status st = impl->Connect(options);
  if (!st.ok()) {
    if (!impl->session.empty()) impl->Close();
    return st;
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const std::string& Client::address() const { return impl_->address; }
const std::string& Client::session() const { return impl_->session; }
const v1::ServerInfo& Client::server_info() const { return impl_->info; }
bool Client::local() const { return impl_->share_path.has_value(); }

absl::StatusOr<Array> Client::CreateArray(const ir::Type& dtype, std::vector<int64_t> shape, Init init,
                                          std::string_view device, bool requires_grad) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (impl_->closed) return absl::FailedPreconditionError("the client is closed");
  v1::CreateArrayRequest req;
  req.set_session(impl_->session);
  req.set_device(std::string(device));
  *req.mutable_dtype() = dtype.proto();
  for (int64_t d : shape) req.add_shape(d);
  req.set_init(init == Init::kZeros ? v1::ARRAY_INIT_ZEROS : v1::ARRAY_INIT_EMPTY);
  v1::CreateArrayResponse resp;
  auto ctx = impl_->Context();
  grpc::Status s = impl_->stub->CreateArray(ctx.get(), req, &resp);
  if (!s.ok()) return internal::FromGrpc(s);
  auto state = std::make_shared<internal::ArrayState>();
  state->impl = impl_;
  state->handle = resp.handle();
  state->device = std::string(device);
  state->dtype = dtype.proto();
  state->shape = std::move(shape);
  state->count = 1;
  for (int64_t d : state->shape) state->count *= d;
  state->size_bytes = resp.size_bytes();
  if (requires_grad) {
    auto g = CreateArray(dtype, state->shape, Init::kZeros, device, false);
    if (!g.ok()) return g.status();
    state->grad = *g;
  }
  return Array(std::move(state));
}

absl::Status Client::Upload(const Array& a, const void* data, size_t bytes) {
  if (!a.valid()) return absl::InvalidArgumentError("Upload of an invalid Array");
  if (bytes != a.size_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("Upload: ", bytes, " bytes for an array of ", a.size_bytes()));
  }
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (bytes == 0) return absl::OkStatus();
  if (auto m = impl_->MappingOf(*a.state_)) {
    absl::Status st = impl_->SynchronizeLocked(a.device());  // queued work may use the array
    if (!st.ok()) return st;
    std::memcpy(m->data, data, bytes);
    return absl::OkStatus();
  }
  absl::Status st = impl_->FlushLocked(a.device());
  if (!st.ok()) return st;
  auto ctx = impl_->Context();
  v1::UploadResponse resp;
  auto writer = impl_->stub->Upload(ctx.get(), &resp);
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off < bytes; off += internal::kUploadChunk) {
    v1::UploadChunk chunk;
    if (off == 0) {
      chunk.set_session(impl_->session);
      chunk.set_handle(a.handle());
      chunk.set_offset(0);
    }
    chunk.set_data(p + off, std::min(internal::kUploadChunk, bytes - off));
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  return internal::FromGrpc(writer->Finish());
}

absl::Status Client::Download(const Array& a, void* out, size_t bytes) {
  if (!a.valid()) return absl::InvalidArgumentError("Download of an invalid Array");
  if (bytes != a.size_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Download: a buffer of ", bytes, " bytes for an array of ", a.size_bytes()));
  }
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (auto m = impl_->MappingOf(*a.state_)) {
    absl::Status st = impl_->SynchronizeLocked(a.device());
    if (!st.ok()) return st;
    std::memcpy(out, m->data, bytes);
    return absl::OkStatus();
  }
  absl::Status st = impl_->FlushLocked(a.device());
  if (!st.ok()) return st;
  v1::DownloadRequest req;
  req.set_session(impl_->session);
  req.set_handle(a.handle());
  auto ctx = impl_->Context();
  auto reader = impl_->stub->Download(ctx.get(), req);
  v1::DownloadChunk chunk;
  size_t pos = 0;
  bool overflow = false;
  while (reader->Read(&chunk)) {
    impl_->Emit(chunk.output());
    if (pos + chunk.data().size() > bytes) {
      overflow = true;
      ctx->TryCancel();
      break;
    }
    std::memcpy(static_cast<char*>(out) + pos, chunk.data().data(), chunk.data().size());
    pos += chunk.data().size();
  }
  grpc::Status s = reader->Finish();
  if (overflow) return absl::DataLossError(absl::StrCat("the daemon sent more than the array's ", bytes, " bytes"));
  if (!s.ok()) {
    absl::Status err = internal::FromGrpc(s);
    impl_->ReadOutput(a.device());
    return err;
  }
  if (pos != bytes) return absl::DataLossError(absl::StrCat("the daemon sent ", pos, " of the array's ", bytes, " bytes"));
  return absl::OkStatus();
}

absl::StatusOr<MappedArray> Client::Map(const Array& a) {
  if (!a.valid()) return absl::InvalidArgumentError("Map of an invalid Array");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (!impl_->share_path) {
    return absl::FailedPreconditionError(absl::StrCat(
        "arrays are mapped only for a client on the daemon's Unix socket (with map_local_arrays); this client is "
        "connected to ", impl_->address));
  }
  std::shared_ptr<internal::Mapping> m;
  if (a.size_bytes() >= internal::kShareMinBytes) {
    m = impl_->MappingOf(*a.state_);
  } else {  // a small array mapped because asked for (not used for transfers)
    auto got = internal::MapArray(*impl_->share_path, impl_->token, impl_->session, a.handle(), a.size_bytes());
    if (!got.ok()) return got.status();
    m = *got;
  }
  if (!m) return absl::FailedPreconditionError("the daemon does not share this array with this client");
  MappedArray out;
  out.mapping_ = m;
  out.array_ = a;
  out.data_ = m->data;
  out.size_ = m->size;
  return out;
}

absl::Status Client::Fill(const Array& a, std::string element) {
  if (!a.valid()) return absl::InvalidArgumentError("Fill of an invalid Array");
  if (a.size() > 0 && element.size() * static_cast<uint64_t>(a.size()) != a.size_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fill: ", element.size(), " bytes for an element of ", a.size_bytes() / a.size()));
  }
  v1::Command cmd;
  cmd.mutable_fill()->set_array(a.handle());
  cmd.mutable_fill()->set_value(std::move(element));
  return impl_->Queue(a.device(), std::move(cmd), {a});
}

absl::Status Client::Zero(const Array& a) {
  if (!a.valid()) return absl::InvalidArgumentError("Zero of an invalid Array");
  if (a.size() == 0) return absl::OkStatus();
  return Fill(a, std::string(a.size_bytes() / static_cast<uint64_t>(a.size()), '\0'));
}

absl::Status Client::Copy(const Array& dst, const Array& src) {
  if (!dst.valid() || !src.valid()) return absl::InvalidArgumentError("Copy of an invalid Array");
  if (dst.device() != src.device()) {
    return absl::InvalidArgumentError("Copy between devices: both arrays must be on one device");
  }
  v1::Command cmd;
  cmd.mutable_copy()->set_dst(dst.handle());
  cmd.mutable_copy()->set_src(src.handle());
  return impl_->Queue(dst.device(), std::move(cmd), {dst, src});
}

absl::StatusOr<Module> Client::LoadModule(const v1::Module& ir, std::string_view device) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (impl_->closed) return absl::FailedPreconditionError("the client is closed");
  auto m = impl_->LoadModule(ir, std::string(device));
  if (!m.ok()) return m.status();
  return Module(*std::move(m));
}

absl::StatusOr<Module> Client::LoadModuleFile(const std::string& path, std::string_view device) {
  auto req = ReadModuleFile(path);
  if (!req.ok()) return req.status();
  return LoadModule(req->module(), device);
}

absl::Status Client::Launch(const Kernel& kernel, std::vector<int64_t> dim, std::vector<Arg> args) {
  if (kernel.index_ < 0) return absl::InvalidArgumentError("Launch of an invalid Kernel");
  const auto& m = kernel.module_.state_;
  if (m->impl.lock() != impl_) return absl::InvalidArgumentError("a kernel of another client");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  auto launch = impl_->PackLaunch(kernel.info(), m->response.module(), m->device, dim, args);
  if (!launch.ok()) return launch.status();
  if (impl_->tape != nullptr) impl_->tape->launches_.push_back({kernel, dim, args});
  for (int64_t d : dim) {
    if (d == 0) return absl::OkStatus();  // nothing to run
  }
  v1::Command cmd;
  *cmd.mutable_launch() = *std::move(launch);
  std::vector<Array> arrays;
  Impl::ArraysOf(args, &arrays);
  return impl_->Queue(m->device, std::move(cmd), std::move(arrays));
}

absl::Status Client::LaunchAdjoint(const Kernel& kernel, std::vector<int64_t> dim, std::vector<Arg> args,
                                   std::vector<Arg> adj_args) {
  if (kernel.index_ < 0) return absl::InvalidArgumentError("LaunchAdjoint of an invalid Kernel");
  const auto& m = kernel.module_.state_;
  if (m->impl.lock() != impl_) return absl::InvalidArgumentError("a kernel of another client");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  auto backward = impl_->Backward(m);
  if (!backward.ok()) return backward.status();
  const v1::KernelInfo* info = nullptr;
  for (const auto& k : (*backward)->response.kernels()) {
    if (k.name() == kernel.name()) info = &k;
  }
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("the backward module has no kernel '", kernel.name(), "'"));
  }
  if (adj_args.size() > static_cast<size_t>(info->params_size())) {
    return absl::InvalidArgumentError(absl::StrCat("adjoint launch of kernel '", kernel.name(), "': ", adj_args.size(),
                                                   " adjoints for ", info->params_size(), " parameters"));
  }
  auto launch = impl_->PackLaunch(*info, (*backward)->response.module(), m->device, dim, args);
  if (!launch.ok()) return launch.status();
  launch->set_adjoint(true);
  std::vector<Array> arrays;
  Impl::ArraysOf(args, &arrays);
  for (int k = 0; k < info->params_size(); ++k) {
    const v1::ParamInfo& p = info->params(k);
    const Arg* adj = static_cast<size_t>(k) < adj_args.size() ? &adj_args[static_cast<size_t>(k)] : nullptr;
    const Array* arg_array = impl_->ArrayArg(args[static_cast<size_t>(k)]);
    Array own;  // the argument's own gradient, when none is given (as in Warp)
    if (adj == nullptr && arg_array != nullptr) own = arg_array->grad();
    const Array* adj_array = adj != nullptr ? impl_->ArrayArg(*adj) : (own.valid() ? &own : nullptr);
    bool is_own = adj_array != nullptr && arg_array != nullptr && arg_array->grad().valid() &&
                  adj_array->state_ == arg_array->grad().state_;
    launch->add_adj_consume(is_own);
    launch->add_adj_own(is_own);
    v1::LaunchArg* out = launch->add_adj_args();
    if (adj == nullptr && adj_array == nullptr) {
      if (p.type().has_array()) {
        out->set_array(0);
      } else {
        out->set_bytes(std::string(p.size(), '\0'));
      }
      continue;
    }
    absl::Status st = impl_->PackArg(p, adj != nullptr ? *adj : Arg(*adj_array), m->device, out);
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("adjoint launch of kernel '", kernel.name(), "': adjoint of ",
                                                  st.message()));
    }
    if (adj_array != nullptr) arrays.push_back(*adj_array);
  }
  for (int64_t d : dim) {
    if (d == 0) return absl::OkStatus();
  }
  v1::Command cmd;
  *cmd.mutable_launch() = *std::move(launch);
  return impl_->Queue(m->device, std::move(cmd), std::move(arrays));
}

absl::Status Client::Flush(std::string_view device) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  return impl_->FlushLocked(std::string(device));
}

absl::Status Client::Synchronize(std::string_view device) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (impl_->closed) return absl::FailedPreconditionError("the client is closed");
  return impl_->SynchronizeLocked(std::string(device));
}

absl::Status Client::CaptureBegin(std::string_view device) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (impl_->closed) return absl::FailedPreconditionError("the client is closed");
  std::string dev(device);
  if (impl_->queues[dev].capturing) {
    return absl::FailedPreconditionError(absl::StrCat("a capture on '", dev, "' is already in progress"));
  }
  absl::Status st = impl_->FlushLocked(dev);  // work queued before runs before the graph exists
  if (!st.ok()) return st;
  impl_->queues[dev].capturing = true;
  return absl::OkStatus();
}

absl::StatusOr<Graph> Client::CaptureEnd(std::string_view device) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::string dev(device);
  auto it = impl_->queues.find(dev);
  if (it == impl_->queues.end() || !it->second.capturing) {
    return absl::FailedPreconditionError(absl::StrCat("no capture on '", dev, "' is in progress"));
  }
  internal::DeviceQueue& q = it->second;
  q.capturing = false;
  std::vector<v1::Command> cmds;
  std::vector<Array> held;
  cmds.swap(q.captured);
  held.swap(q.captured_arrays);
  v1::CreateGraphRequest req;
  req.set_session(impl_->session);
  req.set_device(dev);
  for (v1::Command& c : cmds) *req.add_commands() = std::move(c);
  v1::CreateGraphResponse resp;
  auto ctx = impl_->Context();
  grpc::Status s = impl_->stub->CreateGraph(ctx.get(), req, &resp);
  if (!s.ok()) return internal::FromGrpc(s);
  auto state = std::make_shared<internal::GraphState>();
  state->impl = impl_;
  state->handle = resp.graph();
  state->device = dev;
  return Graph(std::move(state));
}

absl::Status Client::Replay(const Graph& graph) {
  if (graph.state_ == nullptr) return absl::InvalidArgumentError("Replay of an invalid Graph");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  auto it = impl_->queues.find(graph.device());
  if (it != impl_->queues.end() && it->second.capturing) {
    return absl::FailedPreconditionError("a graph replay cannot be captured");
  }
  v1::Command cmd;
  cmd.mutable_replay()->set_graph(graph.handle());
  return impl_->Queue(graph.device(), std::move(cmd), {}, /*capturable=*/false);
}

}  // namespace warpd
