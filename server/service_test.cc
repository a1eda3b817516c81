// End-to-end tests of the gRPC service in process: real server, real stubs,
// a hand-written kernel standing in for the compiler.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/daemon_state.h"
#include "server/runtime_service.h"
#include "server/transfer.h"
#include "server/version.h"
#include "runtime/exec/test_kernels.h"
#include "warpd/native/array.h"
#include "warpd/v1/runtime.grpc.pb.h"

namespace warpd::server {
namespace {

using compiler::CompiledKernel;
using compiler::ParamLayout;
using types::ScalarKind;

using runtime::testing::IncArgs;
using runtime::testing::IncKernel;

class FakeModule : public compiler::CompiledModule {
 public:
  FakeModule() {
    cache_key_ = "fake";
    CompiledKernel inc;
    inc.layout.name = "inc";
    inc.layout.display_name = "inc";
    inc.layout.params = {ParamLayout{"a", types::TypeTable::Global().Array(types::Scalar(ScalarKind::kFloat32), 1), 0, 64},
                         ParamLayout{"amount", types::Scalar(ScalarKind::kFloat32), 64, 4}};
    inc.layout.args_size = 80;
    inc.layout.args_align = 16;
    inc.layout.tid_ndim = 1;
    inc.layout.file = "/home/u/inc.py";
    inc.cpu_entry = &IncKernel;
    kernels_.push_back(inc);
  }
};

std::string F32(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Flags flags;
    flags.cache_dir = "/tmp/warpd-service-test-cache";
    flags.cpu_threads = 2;
    flags.max_array_bytes = 64 << 20;
    state_ = std::make_unique<DaemonState>(flags, nullptr);
    service_ = std::make_unique<RuntimeService>(state_.get());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(64 << 20);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = server_->InProcessChannel(grpc::ChannelArguments());
    stub_ = v1::Runtime::NewStub(channel_);
  }
  // Every call carries the owner tenant's token (the default mode).
  void Auth(grpc::ClientContext* ctx) {
    ctx->AddMetadata("authorization", "Bearer " + state_->tenants().PeerToken(*Owner()));
  }
  std::shared_ptr<Tenant> Owner() { return state_->tenants().All().front(); }

  void TearDown() override {
    server_->Shutdown();
    server_->Wait();
    server_.reset();
    service_.reset();
    state_.reset();
  }

  std::string Open() {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::OpenSessionRequest req;
    req.set_client_name("test");
    v1::OpenSessionResponse resp;
    EXPECT_TRUE(stub_->OpenSession(&ctx, req, &resp).ok());
    return resp.session();
  }

  grpc::Status Create(const std::string& session, std::vector<int64_t> shape, uint64_t* handle,
                      v1::ScalarType dtype = v1::SCALAR_FLOAT32, const std::string& device = "cpu") {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::CreateArrayRequest req;
    req.set_session(session);
    req.set_device(device);
    req.mutable_dtype()->set_scalar(dtype);
    for (int64_t s : shape) req.add_shape(s);
    req.set_init(v1::ARRAY_INIT_ZEROS);
    v1::CreateArrayResponse resp;
    grpc::Status s = stub_->CreateArray(&ctx, req, &resp);
    if (handle) *handle = resp.handle();
    return s;
  }

  grpc::Status Upload(const std::string& session, uint64_t handle, const std::string& data,
                      size_t chunk, uint64_t offset = 0, uint64_t* written = nullptr) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::UploadResponse resp;
    auto writer = stub_->Upload(&ctx, &resp);
    for (size_t pos = 0; pos < data.size(); pos += chunk) {
      v1::UploadChunk c;
      if (pos == 0) {
        c.set_session(session);
        c.set_handle(handle);
        c.set_offset(offset);
      }
      c.set_data(data.substr(pos, chunk));
      if (!writer->Write(c)) break;
    }
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    if (written) *written = resp.bytes_written();
    return s;
  }

  grpc::Status Download(const std::string& session, uint64_t handle, std::string* out,
                        std::vector<size_t>* chunk_sizes = nullptr) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::DownloadRequest req;
    req.set_session(session);
    req.set_handle(handle);
    auto reader = stub_->Download(&ctx, req);
    v1::DownloadChunk c;
    out->clear();
    while (reader->Read(&c)) {
      out->append(c.data());
      if (chunk_sizes) chunk_sizes->push_back(c.data().size());
    }
    return reader->Finish();
  }

  uint64_t AddFakeModule(const std::string& session) {
    auto s = state_->sessions().Get(session, *Owner());
    EXPECT_TRUE(s.ok());
    auto h = (*s)->AddModule(std::make_shared<FakeModule>());
    EXPECT_TRUE(h.ok());
    return *h;
  }

  grpc::Status SubmitInc(const std::string& session, uint64_t module, uint64_t array,
                         std::vector<int64_t> dims, float amount) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::SubmitRequest req;
    req.set_session(session);
    req.set_device("cpu");
    v1::Launch* l = req.add_commands()->mutable_launch();
    l->set_module(module);
    l->set_kernel("inc");
    for (int64_t d : dims) l->add_dim(d);
    l->add_args()->set_array(array);
    l->add_args()->set_bytes(F32(amount));
    v1::SubmitResponse resp;
    return stub_->Submit(&ctx, req, &resp);
  }

  grpc::Status Sync(const std::string& session) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    v1::SynchronizeRequest req;
    req.set_session(session);
    v1::SynchronizeResponse resp;
    return stub_->Synchronize(&ctx, req, &resp);
  }

  std::unique_ptr<DaemonState> state_;
  std::unique_ptr<RuntimeService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Runtime::Stub> stub_;
};

TEST_F(ServiceTest, ServerInfo) {
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::ServerInfo info;
  ASSERT_TRUE(stub_->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info).ok());
  EXPECT_EQ(info.version(), kVersion);
  ASSERT_GE(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).name(), "cpu");
  EXPECT_EQ(info.devices(0).kind(), "cpu");
  EXPECT_FALSE(info.devices(0).arch().empty());
  EXPECT_FALSE(info.devices(0).alias().empty());
  EXPECT_EQ(info.kernel_cache_dir(), "/tmp/warpd-service-test-cache");
}

TEST_F(ServiceTest, UploadLaunchDownload) {
  const std::string s = Open();
  EXPECT_EQ(s.size(), 32u);
  uint64_t a = 0;
  ASSERT_TRUE(Create(s, {10}, &a).ok());
  std::vector<float> values(10);
  for (int i = 0; i < 10; ++i) values[i] = float(i);
  uint64_t written = 0;
  ASSERT_TRUE(Upload(s, a, std::string(reinterpret_cast<char*>(values.data()), 40), 12, 0,
                     &written).ok());
  EXPECT_EQ(written, 40u);
  const uint64_t m = AddFakeModule(s);
  ASSERT_TRUE(SubmitInc(s, m, a, {10}, 1.5f).ok());
  ASSERT_TRUE(SubmitInc(s, m, a, {10}, 1.0f).ok());
  std::string out;
  ASSERT_TRUE(Download(s, a, &out).ok());
  ASSERT_EQ(out.size(), 40u);
  const float* f = reinterpret_cast<const float*>(out.data());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f[i], float(i) + 2.5f);
}

TEST_F(ServiceTest, KernelFaultIsOutOfRangeOnceThenServing) {
  const std::string s = Open();
  uint64_t a = 0;
  ASSERT_TRUE(Create(s, {10}, &a).ok());
  const uint64_t m = AddFakeModule(s);
  ASSERT_TRUE(SubmitInc(s, m, a, {11}, 1.0f).ok());  // accepted; faults when it runs
  grpc::Status st = Sync(s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(st.error_message(),
            "kernel 'inc' at /home/u/inc.py:12: index 10 out of bounds for dimension 0 "
            "(shape (10,))");
  EXPECT_TRUE(Sync(s).ok());
  // Reported by Download too.
  ASSERT_TRUE(SubmitInc(s, m, a, {12}, 1.0f).ok());
  std::string out;
  st = Download(s, a, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_TRUE(Download(s, a, &out).ok());
  EXPECT_EQ(out.size(), 40u);
}

TEST_F(ServiceTest, HandlesAreScopedToSessions) {
  const std::string s1 = Open(), s2 = Open();
  EXPECT_NE(s1, s2);
  uint64_t a = 0;
  ASSERT_TRUE(Create(s1, {4}, &a).ok());
  std::string out;
  EXPECT_EQ(Download(s2, a, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  const uint64_t m2 = AddFakeModule(s2);
  grpc::Status st = SubmitInc(s2, m2, a, {4}, 1.0f);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(st.error_message().find("kernel 'inc': argument 0: array handle"), std::string::npos);
  // The module handle of s2 is unknown in s1.
  EXPECT_EQ(SubmitInc(s1, m2, a, {4}, 1.0f).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Download(s1, a, &out).ok());

  EXPECT_EQ(Download("0123", a, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Download("", a, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::CloseSessionRequest close;
  close.set_session(s1);
  v1::CloseSessionResponse closed;
  ASSERT_TRUE(stub_->CloseSession(&ctx, close, &closed).ok());
  EXPECT_EQ(Download(s1, a, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Closing freed the array; s2's module handle stays charged (a fake
  // module holds no code: the handle's bookkeeping only).
  EXPECT_EQ(state_->memory()->used(), Session::kHandleBytes);
}

TEST_F(ServiceTest, BatchIsAllOrNothing) {
  const std::string s = Open();
  uint64_t a = 0;
  ASSERT_TRUE(Create(s, {4}, &a).ok());
  const uint64_t m = AddFakeModule(s);
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::SubmitRequest req;
  req.set_session(s);
  req.set_device("cpu");
  req.add_commands()->mutable_fill()->set_array(a);
  req.mutable_commands(0)->mutable_fill()->set_value(F32(3.0f));
  req.add_commands()->mutable_free()->set_array(a);
  v1::Launch* l = req.add_commands()->mutable_launch();  // uses the freed array
  l->set_module(m);
  l->set_kernel("inc");
  l->add_dim(4);
  l->add_args()->set_array(a);
  l->add_args()->set_bytes(F32(1.0f));
  v1::SubmitResponse resp;
  EXPECT_EQ(stub_->Submit(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  // Nothing ran and nothing was freed.
  std::string out;
  ASSERT_TRUE(Download(s, a, &out).ok());
  EXPECT_EQ(reinterpret_cast<const float*>(out.data())[0], 0.0f);

  // Now without the launch: fill then free in order.
  req.mutable_commands()->RemoveLast();
  grpc::ClientContext ctx2;
  Auth(&ctx2);
  ASSERT_TRUE(stub_->Submit(&ctx2, req, &resp).ok());
  EXPECT_EQ(resp.sequence(), 2u);
  ASSERT_TRUE(Sync(s).ok());
  EXPECT_EQ(Download(s, a, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  // Its pool's empty segment went too; the module handle's bookkeeping stays.
  EXPECT_EQ(state_->memory()->used(), Session::kHandleBytes);
}

TEST_F(ServiceTest, BadLaunchArguments) {
  const std::string s = Open();
  uint64_t a = 0, i32 = 0;
  ASSERT_TRUE(Create(s, {4}, &a).ok());
  ASSERT_TRUE(Create(s, {4}, &i32, v1::SCALAR_INT32).ok());
  const uint64_t m = AddFakeModule(s);
  grpc::Status st = SubmitInc(s, m, i32, {4}, 1.0f);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "kernel 'inc': argument 'a' expects array(dtype=float32, ndim=1), got "
            "array(dtype=int32, ndim=1)");
  st = SubmitInc(s, m, a, {-1}, 1.0f);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // An unknown device.
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::SubmitRequest req;
  req.set_session(s);
  req.set_device("cuda:7");
  v1::SubmitResponse resp;
  st = stub_->Submit(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "unknown device 'cuda:7' (available: cpu)");
}

TEST_F(ServiceTest, CreateArrayErrors) {
  const std::string s = Open();
  EXPECT_EQ(Create(s, {1, 2, 3, 4, 5}, nullptr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Create(s, {-3}, nullptr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Create(s, {4}, nullptr, v1::SCALAR_TYPE_UNSPECIFIED).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Create(s, {4}, nullptr, v1::SCALAR_FLOAT32, "tpu").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status st = Create(s, {1 << 30}, nullptr);  // 4 GiB > the 64 MiB limit
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Create("nope", {4}, nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ServiceTest, TransferBoundsAndChunks) {
  const std::string s = Open();
  uint64_t a = 0;
  ASSERT_TRUE(Create(s, {4}, &a).ok());
  grpc::Status st = Upload(s, a, std::string(20, 'x'), 8);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Upload(s, a, std::string(8, 'y'), 8, 12).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  uint64_t written = 0;
  ASSERT_TRUE(Upload(s, a, std::string(8, 'z'), 3, 8, &written).ok());
  EXPECT_EQ(written, 8u);
  std::string out;
  ASSERT_TRUE(Download(s, a, &out).ok());
  EXPECT_EQ(out.substr(8), std::string(8, 'z'));

  // Empty upload stream.
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::UploadResponse resp;
  auto writer = stub_->Upload(&ctx, &resp);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // A 5 MiB array comes back in chunks of 2, 2 and 1 MiB, each within a
  // default client's 4 MiB message limit.
  uint64_t big = 0;
  ASSERT_TRUE(Create(s, {5 << 18}, &big).ok());
  std::vector<size_t> sizes;
  grpc::Status big_status = Download(s, big, &out, &sizes);
  ASSERT_TRUE(big_status.ok()) << big_status.error_message();
  EXPECT_EQ(sizes, (std::vector<size_t>{2 << 20, 2 << 20, 1 << 20}));
  EXPECT_EQ(out.size(), size_t{5} << 20);
}

TEST_F(ServiceTest, CacheDirNeedsPermissionAndCompilerIsReported) {
  const std::string s = Open();
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::SetKernelCacheDirRequest req;
  req.set_session(s);
  req.set_path("/tmp/elsewhere");
  v1::SetKernelCacheDirResponse resp;
  grpc::Status st = stub_->SetKernelCacheDir(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext ctx2;
  Auth(&ctx2);
  v1::LoadModuleRequest load;
  load.set_session(s);
  v1::LoadModuleResponse loaded;
  EXPECT_EQ(stub_->LoadModule(&ctx2, load, &loaded).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ServiceTest, TooDeepModuleIsInvalidArgument) {
  const std::string s = Open();
  v1::LoadModuleRequest load;
  load.set_session(s);
  v1::Expr* e = load.mutable_module()->add_functions()->add_body()->mutable_expr()->mutable_value();
  for (int i = 0; i < 1200; ++i) e = e->mutable_unary()->mutable_operand();
  e->mutable_constant()->set_int_value(1);
  grpc::ClientContext ctx;
  Auth(&ctx);
  v1::LoadModuleResponse loaded;
  grpc::Status st = stub_->LoadModule(&ctx, load, &loaded);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Caught by the wire scan, before anything is parsed.
  EXPECT_EQ(st.error_message(),
            "LoadModule: malformed module: expressions and statements nested deeper than 136 levels");
}

// Every method parses its own request: garbage is INVALID_ARGUMENT with a
// message naming the method and the expected type, never a bare UNIMPLEMENTED.
TEST_F(ServiceTest, GarbageRequestsAreInvalidArgumentWithAMessage) {
  const std::string garbage("\xff\xff\xff\xff\x0f garbage", 13);
  for (const char* method : {"GetServerInfo", "OpenSession", "CloseSession", "CreateArray", "CreateView", "FreeArray",
                             "LoadModule", "Submit", "Synchronize", "SetKernelCacheDir", "ClearKernelCache"}) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::GenericStub generic(channel_);
    grpc::Status st;
    absl::Notification done;
    generic.UnaryCall(&ctx, std::string("/warpd.v1.Runtime/") + method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        st = std::move(s);
                        done.Notify();
                      });
    done.WaitForNotification();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_NE(st.error_message().find(method), std::string::npos) << method << ": " << st.error_message();
  }
}

// Every method wants the caller's bearer token before it reads the request.
TEST_F(ServiceTest, CallsWithoutAValidTokenAreUnauthenticated) {
  const std::string session = Open();
  for (const char* token : {"", "Bearer nope", "Basic abc"}) {
    grpc::ClientContext ctx;
    if (*token) ctx.AddMetadata("authorization", token);
    v1::CreateArrayRequest req;
    req.set_session(session);
    req.set_device("cpu");
    req.mutable_dtype()->set_scalar(v1::SCALAR_FLOAT32);
    req.add_shape(4);
    v1::CreateArrayResponse resp;
    grpc::Status st = stub_->CreateArray(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
  }
  grpc::ClientContext ctx;
  v1::OpenSessionRequest req;
  v1::OpenSessionResponse resp;
  EXPECT_EQ(stub_->OpenSession(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace warpd::server

