// Offline tests of the C++ client: the IR builder's messages, module files,
// version rule, token files, share-socket replies, error details and the
// packing of launch arguments. tests/e2e/test_cpp_client.py runs the client
// against a daemon.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "auth.h"
#include "client_impl.h"
#include "share_map.h"
#include "warpd/client.h"

namespace warpd {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("warpd_client_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(IrBuilder, SaxpyHasTheShapeOfThePythonFrontEndsIr) {
  ir::KernelBuilder k("saxpy");
  ir::Expr a = k.Param("a", ir::Float32());
  ir::Expr x = k.Param("x", ir::ArrayOf(ir::Float32()));
  ir::Expr y = k.Param("y", ir::ArrayOf(ir::Float32()));
  const int line = __LINE__ + 1;
  ir::Expr i = k.Let("i", ir::Tid());
  k.Assign(y[i], a * x[i] + y[i]);
  v1::Module m = ir::ModuleBuilder("m").Add(k).Build();

  ASSERT_EQ(m.functions_size(), 1);
  const v1::Function& f = m.functions(0);
  EXPECT_EQ(f.name(), "saxpy");
  EXPECT_EQ(f.display_name(), "saxpy");
  EXPECT_EQ(f.kind(), v1::FUNCTION_KERNEL);
  ASSERT_EQ(f.params_size(), 3);
  EXPECT_EQ(f.params(0).type().scalar(), v1::SCALAR_FLOAT32);
  EXPECT_EQ(f.params(1).type().array().ndim(), 1u);
  EXPECT_EQ(f.params(1).type().array().dtype().scalar(), v1::SCALAR_FLOAT32);
  ASSERT_EQ(f.body_size(), 2);
  const v1::Stmt& s0 = f.body(0);
  EXPECT_EQ(s0.assign().target().name().id(), "i");
  EXPECT_EQ(s0.assign().value().call().callee(), "tid");
  EXPECT_EQ(s0.assign().value().call().kind(), v1::CALLEE_BUILTIN);
  // Spans name this file and the builder call's line, on statements and on
  // every expression inside them.
  EXPECT_TRUE(s0.span().file().ends_with("client_unit_test.cc")) << s0.span().file();
  EXPECT_EQ(s0.span().line(), line);
  EXPECT_EQ(s0.assign().value().span().line(), line);
  const v1::Expr& v = f.body(1).assign().value();
  EXPECT_EQ(v.binary().op(), v1::BINOP_ADD);
  EXPECT_EQ(v.binary().left().binary().op(), v1::BINOP_MUL);
  EXPECT_EQ(v.binary().left().binary().left().name().id(), "a");
  EXPECT_EQ(v.binary().left().binary().right().subscript().value().name().id(), "x");
  EXPECT_EQ(v.binary().left().binary().right().subscript().indices(0).name().id(), "i");
  EXPECT_EQ(v.binary().left().binary().right().subscript().indices(0).span().line(), line + 1);
  EXPECT_EQ(f.body(1).assign().target().subscript().value().name().id(), "y");
}

TEST(IrBuilder, LiteralsFollowWarpsRules) {
  EXPECT_EQ(ir::Expr(2).proto().constant().int_value(), 2);
  EXPECT_EQ(ir::Expr(2).proto().constant().dtype(), v1::SCALAR_TYPE_UNSPECIFIED);
  EXPECT_EQ(ir::Expr(2.5).proto().constant().float_value(), 2.5);
  EXPECT_EQ(ir::Expr(2.5).proto().constant().dtype(), v1::SCALAR_TYPE_UNSPECIFIED);
  EXPECT_TRUE(ir::Expr(true).proto().constant().bool_value());
  EXPECT_EQ(ir::FloatLit(1.5, ir::Float64()).proto().constant().dtype(), v1::SCALAR_FLOAT64);
  EXPECT_EQ(ir::IntLit(7, ir::UInt64()).proto().constant().int_value(), 7);
  EXPECT_EQ(ir::IntLit(7, ir::UInt64()).proto().constant().dtype(), v1::SCALAR_UINT64);
}

TEST(IrBuilder, ControlFlowNestsBodiesAndLoopsCallRange) {
  ir::FuncBuilder sq("sq");
  ir::Expr v = sq.Param("v", ir::Float32());
  sq.Return(v * v);
  ir::KernelBuilder k("k");
  ir::Expr x = k.Param("x", ir::ArrayOf(ir::Float32()));
  ir::Expr n = k.Param("n", ir::Int32());
  ir::Expr i = k.Let("i", ir::Tid());
  ir::Expr s = k.Let("s", ir::Call("float32", {0.0}));
  k.For("j", n, [&](const ir::Expr& j) { k.AddAssign(s, ir::Call(sq, {x[i]}) * 2.0); });
  k.If(ir::And(i < 3, n > 1), [&] { k.AddAssign(x[i], 1.0); }, [&] { k.Assign(x[i], -x[i]); });
  k.While(ir::Eq(s, 0.0), [&] { k.Break(); });
  v1::Module m = ir::ModuleBuilder("m").Add(sq).Add(k).Build();
  ASSERT_EQ(m.functions_size(), 2);
  EXPECT_EQ(m.functions(0).kind(), v1::FUNCTION_FUNC);
  EXPECT_EQ(m.functions(0).body(0).return_stmt().value().binary().op(), v1::BINOP_MUL);
  const auto& body = m.functions(1).body();
  ASSERT_EQ(body.size(), 5);
  const v1::For& loop = body[2].for_stmt();
  EXPECT_EQ(loop.target().name().id(), "j");
  EXPECT_EQ(loop.iter().call().callee(), "range");
  EXPECT_EQ(loop.iter().call().args(0).name().id(), "n");
  ASSERT_EQ(loop.body_size(), 1);
  EXPECT_EQ(loop.body(0).aug_assign().op(), v1::BINOP_ADD);
  const v1::Expr& call = loop.body(0).aug_assign().value().binary().left();
  EXPECT_EQ(call.call().callee(), "sq");
  EXPECT_EQ(call.call().kind(), v1::CALLEE_FUNCTION);
  const v1::If& branch = body[3].if_stmt();
  EXPECT_EQ(branch.test().bool_op().op(), v1::BOOL_AND);
  EXPECT_EQ(branch.test().bool_op().values(0).compare().ops(0), v1::CMP_LT);
  EXPECT_EQ(branch.test().bool_op().values(0).compare().comparators(0).constant().int_value(), 3);
  ASSERT_EQ(branch.body_size(), 1);
  ASSERT_EQ(branch.orelse_size(), 1);
  EXPECT_EQ(branch.orelse(0).assign().value().unary().op(), v1::UNARY_NEG);
  EXPECT_TRUE(body[4].while_stmt().body(0).has_break_stmt());
}

TEST(Versions, SameMajorAndBeforeOneSameMinor) {
  EXPECT_TRUE(VersionsCompatible("0.1.0", "0.1.7"));
  EXPECT_FALSE(VersionsCompatible("0.1.0", "0.2.0"));
  EXPECT_TRUE(VersionsCompatible("1.2.0", "1.5.3-dev"));
  EXPECT_FALSE(VersionsCompatible("1.2.0", "2.0.0"));
  EXPECT_TRUE(VersionsCompatible("0.1.0", "unknown"));  // cannot tell: the daemon's answers decide
  EXPECT_TRUE(VersionsCompatible(ClientVersion(), ClientVersion()));
}

TEST(ModuleFile, ReadsWhatSaveModuleWritesAndRefusesOtherFiles) {
  fs::path dir = TempDir();
  v1::LoadModuleRequest req;
  ir::KernelBuilder k("k");
  k.Param("x", ir::ArrayOf(ir::Float32()));
  *req.mutable_module() = ir::ModuleBuilder("mod").Add(k).Build();
  {
    std::ofstream out(dir / "m.wpmod", std::ios::binary);
    out << req.SerializeAsString();
  }
  auto got = ReadModuleFile((dir / "m.wpmod").string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->module().name(), "mod");
  EXPECT_EQ(got->module().functions(0).name(), "k");
  {
    std::ofstream out(dir / "bad.wpmod", std::ios::binary);
    out << "\xff\xff\xff not a module";
  }
  EXPECT_EQ(ReadModuleFile((dir / "bad.wpmod").string()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadModuleFile((dir / "missing.wpmod").string()).status().code(), absl::StatusCode::kNotFound);
  fs::remove_all(dir);
}

TEST(Auth, TokenFileMustBeThisUsersPrivateRegularFile) {
  fs::path dir = TempDir();
  fs::path file = dir / "warpd.token";
  {
    std::ofstream out(file);
    out << "  secret-token\n";
  }
  chmod(file.c_str(), 0600);
  std::string why;
  auto token = internal::ReadTokenFile(file.string(), &why);
  ASSERT_TRUE(token.has_value()) << why;
  EXPECT_EQ(*token, "secret-token");
  chmod(file.c_str(), 0644);
  EXPECT_FALSE(internal::ReadTokenFile(file.string(), &why).has_value());
  EXPECT_NE(why.find("644"), std::string::npos) << why;
  chmod(file.c_str(), 0600);
  fs::create_symlink(file, dir / "link");
  EXPECT_FALSE(internal::ReadTokenFile((dir / "link").string(), &why).has_value());
  EXPECT_FALSE(internal::ReadTokenFile((dir / "none").string(), &why).has_value());
  EXPECT_EQ(why, "no such file");
  fs::remove_all(dir);
}

TEST(Auth, Addresses) {
  EXPECT_EQ(internal::UnixPath("unix:/tmp/a.sock").value(), "/tmp/a.sock");
  EXPECT_EQ(internal::UnixPath("unix:///tmp/a.sock").value(), "/tmp/a.sock");
  EXPECT_FALSE(internal::UnixPath("127.0.0.1:7788").has_value());
  EXPECT_TRUE(internal::IsLoopback("127.0.0.1:7788"));
  EXPECT_TRUE(internal::IsLoopback("localhost:1"));
  EXPECT_TRUE(internal::IsLoopback("[::1]:7788"));
  EXPECT_FALSE(internal::IsLoopback("10.0.0.1:7788"));
  EXPECT_EQ(internal::ResolveAddress("unix:/x"), "unix:/x");
}

TEST(ShareSocket, ParsesRepliesAndErrors) {
  auto r = internal::ParseShareReply("ok 4096 65536 3\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->size, 65536u);
  EXPECT_TRUE(internal::ParseShareReply("ok 0 10").ok());
  auto e = internal::ParseShareReply("error NOT_FOUND no such array\n");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(e.status().message().find("no such array"), std::string_view::npos);
  EXPECT_FALSE(internal::ParseShareReply("ok x 10").ok());
  EXPECT_FALSE(internal::ParseShareReply("").ok());
  EXPECT_FALSE(internal::ParseShareReply("ok 1 2 3 4").ok());
}

TEST(Errors, GrpcDetailsBecomePayloadsAndCompileFailuresJoinTheMessage) {
  v1::CompileFailures failures;
  auto* f = failures.add_failed();
  f->set_name("k_1");
  f->set_kernel(true);
  f->set_message("k.cc:3:1: error: unknown name 'q' (in kernel 'k')");
  v1::StatusDetails details;
  details.set_code(3);
  auto* d = details.add_details();
  d->set_type_url("type.googleapis.com/warpd.v1.CompileFailures");
  d->set_value(failures.SerializeAsString());
  grpc::Status s(grpc::StatusCode::INVALID_ARGUMENT, "module 'm': no kernel compiled", details.SerializeAsString());
  absl::Status st = internal::FromGrpc(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("unknown name 'q'"), std::string_view::npos) << st.message();
  auto payload = st.GetPayload("type.googleapis.com/warpd.v1.CompileFailures");
  ASSERT_TRUE(payload.has_value());
  v1::CompileFailures back;
  ASSERT_TRUE(back.ParseFromString(std::string(*payload)));
  EXPECT_EQ(back.failed(0).name(), "k_1");
  EXPECT_TRUE(internal::FromGrpc(grpc::Status::OK).ok());
}

// Launch arguments are packed in the parameter's type, as the Python client
// packs Python numbers (references: IEEE conversions of the same values).
class PackArgs : public ::testing::Test {
 protected:
  static v1::ParamInfo Scalar(v1::ScalarType t, uint32_t size) {
    v1::ParamInfo p;
    p.set_name("p");
    p.mutable_type()->set_scalar(t);
    p.set_size(size);
    return p;
  }
  absl::StatusOr<std::string> Pack(const v1::ParamInfo& p, const Arg& a) {
    v1::LaunchArg out;
    absl::Status st = impl_.PackArg(p, a, "cpu", &out);
    if (!st.ok()) return st;
    return out.bytes();
  }
  internal::Impl impl_;
};

TEST_F(PackArgs, NumbersConvertToTheParameterType) {
  auto f = Pack(Scalar(v1::SCALAR_FLOAT32, 4), 2);
  ASSERT_TRUE(f.ok());
  float fv;
  std::memcpy(&fv, f->data(), 4);
  EXPECT_EQ(fv, 2.0f);
  auto d = Pack(Scalar(v1::SCALAR_FLOAT64, 8), 0.1);
  ASSERT_TRUE(d.ok());
  double dv;
  std::memcpy(&dv, d->data(), 8);
  EXPECT_EQ(dv, 0.1);
  auto h = Pack(Scalar(v1::SCALAR_FLOAT16, 2), 1.0);
  ASSERT_TRUE(h.ok());
  uint16_t hv;
  std::memcpy(&hv, h->data(), 2);
  EXPECT_EQ(hv, 0x3c00);  // binary16 1.0
  h = Pack(Scalar(v1::SCALAR_FLOAT16, 2), -65504.0);
  std::memcpy(&hv, h->data(), 2);
  EXPECT_EQ(hv, 0xfbff);  // the largest finite half, negated
  h = Pack(Scalar(v1::SCALAR_FLOAT16, 2), 1e-7);  // subnormal: round(1e-7 / 2^-24) = 2
  std::memcpy(&hv, h->data(), 2);
  EXPECT_EQ(hv, 0x0002);
  auto b = Pack(Scalar(v1::SCALAR_BFLOAT16, 2), 1.0);
  std::memcpy(&hv, b->data(), 2);
  EXPECT_EQ(hv, 0x3f80);
  auto i = Pack(Scalar(v1::SCALAR_INT32, 4), -7);
  ASSERT_TRUE(i.ok());
  int32_t iv;
  std::memcpy(&iv, i->data(), 4);
  EXPECT_EQ(iv, -7);
  auto u = Pack(Scalar(v1::SCALAR_UINT64, 8), uint64_t{1} << 63);
  ASSERT_TRUE(u.ok());
  uint64_t uv;
  std::memcpy(&uv, u->data(), 8);
  EXPECT_EQ(uv, uint64_t{1} << 63);
}

TEST_F(PackArgs, WrongKindsAndRangesAreRefused) {
  EXPECT_EQ(Pack(Scalar(v1::SCALAR_INT32, 4), 1.5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pack(Scalar(v1::SCALAR_UINT8, 1), 300).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pack(Scalar(v1::SCALAR_UINT32, 4), -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pack(Scalar(v1::SCALAR_FLOAT32, 4), Arg::NullArray()).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::ParamInfo vec;
  vec.set_name("v");
  vec.mutable_type()->mutable_vector()->set_length(3);
  vec.mutable_type()->mutable_vector()->set_dtype(v1::SCALAR_FLOAT32);
  vec.set_size(12);
  EXPECT_EQ(Pack(vec, 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  struct V3 {
    float x, y, z;
  };
  auto ok = Pack(vec, Arg::Value(V3{1, 2, 3}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->size(), 12u);
  EXPECT_EQ(Pack(vec, Arg::Value(1.0)).status().code(), absl::StatusCode::kInvalidArgument);
  v1::ParamInfo arr;
  arr.set_name("a");
  *arr.mutable_type() = ir::ArrayOf(ir::Float32()).proto();
  arr.set_size(64);
  EXPECT_EQ(Pack(arr, 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  v1::LaunchArg out;
  ASSERT_TRUE(impl_.PackArg(arr, Arg::NullArray(), "cpu", &out).ok());
  EXPECT_EQ(out.array(), 0u);
}

}  // namespace
}  // namespace warpd
