// End-to-end tests of the compiler facade: IR proto -> CPU machine code,
// launched directly through the launch ABI and checked against values
// computed here in plain C++.
#include "compiler/compiler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "compiler/builtins/builtins.h"
#include "compiler/codegen/adjoint.h"
#include "compiler/codegen/codegen.h"
#include "compiler/sema/sema.h"
#include "compiler/ir/from_proto.h"
#if WARPD_WITH_CUDA
#include "compiler/backend/cuda_nvrtc.h"
#endif
#include "compiler/testing/feature_module.h"
#include "compiler/testing/ir_builder.h"
#include "warpd/native/array.h"
#include "warpd/native/vec.h"

namespace warpd::compiler {
namespace {

using namespace warpd::testing;

Compiler::Options Options(const std::string& cache_dir, bool verify_cuda) {
  Compiler::Options o;
  o.cache_dir = cache_dir;
  o.verify_cuda = verify_cuda;
  return o;
}

std::unique_ptr<Compiler> MakeCompiler(const std::string& cache_dir = "") {
  auto c = Compiler::Create(Options(cache_dir, false));
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

absl::StatusOr<CompileResult> Compile(Compiler& c, const v1::Module& proto) {
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  return c.Compile(**m, Target::kCpu);
}

template <typename T>
wp::array_t<T> View(std::vector<T>& v) {
  wp::array_t<T> a{};
  a.data = v.data();
  a.shape[0] = static_cast<int>(v.size());
  a.ndim = 1;
  a.strides[0] = sizeof(T);
  return a;
}

// Runs kernel `name` over `n` threads with the argument block `args`.
wp::launch_ctx RunKernel(const CompiledModule& m, const std::string& name, const void* args, int64_t n,
                   std::vector<int> dims = {}) {
  const CompiledKernel* k = m.FindKernel(name);
  EXPECT_NE(k, nullptr);
  wp::launch_ctx ctx{};
  if (dims.empty()) dims = {static_cast<int>(n)};
  ctx.bounds.ndim = static_cast<int>(dims.size());
  ctx.bounds.size = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    ctx.bounds.shape[i] = dims[i];
    ctx.bounds.size *= dims[i];
  }
  k->cpu_entry(&ctx, args, 0, ctx.bounds.size);
  return ctx;
}

// scale(a: array(float32), s: float32): i = tid(); a[i] = a[i] * s
v1::Module ScaleModule() {
  return ModuleOf({Kernel("scale", {{"a", Arr(F32())}, {"s", F32()}},
                          {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                           Assign(Sub(Name("a", 3), {Name("i", 3)}, 3),
                                  Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3), Name("s", 3), 3), 3)})});
}

TEST(CompilerTest, ScaleKernelRunsOnCpu) {
  auto c = MakeCompiler();
  auto r = Compile(*c, ScaleModule());
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel* k = r->module->FindKernel("scale");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->layout.params.size(), 2u);
  EXPECT_EQ(k->layout.params[0].offset, 0u);
  EXPECT_EQ(k->layout.params[1].offset, 64u);
  EXPECT_EQ(k->layout.args_size, 72u);

  std::vector<float> a = {1, 2, 3, -4, 0.5f};
  std::vector<float> expect = a;
  for (auto& x : expect) x *= 2.5f;
  struct {
    wp::array_t<float> a;
    float s;
  } args{View(a), 2.5f};
  auto ctx = RunKernel(*r->module, "scale", &args, a.size());
  EXPECT_EQ(ctx.fault.flag, 0);
  EXPECT_EQ(a, expect);
}

// Overloads and generic functions compile and run: the template is not
// emitted, its instances and the chosen overloads are.
TEST(CompilerTest, OverloadsAndGenericInstancesRun) {
  auto call = [](const char* f, std::vector<v1::Expr> args) {
    return Call(f, std::move(args), 1, v1::CALLEE_FUNCTION);
  };
  // out[0] = twice(1.5) + area(2.0) + area(2.0, 3.0); out[1] = float32(twice(21))
  auto proto = ModuleOf(
      {Func("twice", {{"x", AnyT()}}, {Return(Bin(v1::BINOP_ADD, Name("x"), Name("x")))}),
       Overload(Func("area_r", {{"r", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("r"), Name("r")))}), "area"),
       Overload(Func("area_wh", {{"w", F32()}, {"h", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("w"), Name("h")))}),
                "area"),
       Kernel("k", {{"out", Arr(F32())}},
              {Assign(Sub(Name("out"), {Int(0)}),
                      Bin(v1::BINOP_ADD,
                          Bin(v1::BINOP_ADD, call("twice", {Float(1.5)}), call("area", {Float(2.0)})),
                          call("area", {Float(2.0), Float(3.0)}))),
               Assign(Sub(Name("out"), {Int(1)}), Call("float32", {call("twice", {Int(21)})}))})});
  auto c = MakeCompiler();
  auto m = ir::ModuleFromProto(proto);
  ASSERT_TRUE(m.ok()) << m.status();
  auto g = Compiler::Generate(**m);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->source.find("f_twice("), std::string::npos);  // the template itself
  EXPECT_NE(g->source.find("f_twice_wpi0("), std::string::npos) << g->source;
  EXPECT_NE(g->source.find("f_twice_wpi1("), std::string::npos) << g->source;
  auto r = Compile(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> out(2, 0.0f);
  struct {
    wp::array_t<float> out;
  } args{View(out)};
  auto ctx = RunKernel(*r->module, "k", &args, 1);
  EXPECT_EQ(ctx.fault.flag, 0);
  EXPECT_EQ(out, (std::vector<float>{3.0f + 4.0f + 6.0f, 42.0f}));
}

TEST(CompilerTest, OutOfBoundsRecordsFaultWithLine) {
  // bad(a): i = tid(); a[i + 1] = 1.0  (line 7)
  auto proto = ModuleOf({Kernel("bad", {{"a", Arr(F32())}},
                                {Assign(Name("i", 6), Call("tid", {}, 6), 6),
                                 Assign(Sub(Name("a", 7), {Bin(v1::BINOP_ADD, Name("i", 7), Int(1, 7), 7)}, 7),
                                        Float(1.0, 7), 7)})});
  auto c = MakeCompiler();
  auto r = Compile(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> a(4, 0.0f);
  struct {
    wp::array_t<float> a;
  } args{View(a)};
  auto ctx = RunKernel(*r->module, "bad", &args, a.size());
  EXPECT_EQ(ctx.fault.flag, 1);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_INDEX_OUT_OF_BOUNDS);
  EXPECT_EQ(ctx.fault.line, 7);
  EXPECT_EQ(ctx.fault.index, 4);
  EXPECT_EQ(ctx.fault.extent, 4);
  // Threads before the faulting one wrote; nothing wrote outside the array.
  EXPECT_EQ(a[1], 1.0f);
  EXPECT_EQ(a[3], 1.0f);
}


TEST(CompilerTest, LoopsBranchesVectorsAndUserFunctions) {
  auto proto = FeatureModule();
  auto c = MakeCompiler();
  auto r = Compile(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  const int n = 6;
  std::vector<float> out(n);
  std::vector<wp::vec3f> v(n);
  for (int i = 0; i < n; ++i) v[i] = wp::vec3f{{1.0f + i, -2.0f * i, 0.5f}};
  struct {
    wp::array_t<float> out;
    wp::array_t<wp::vec3f> v;
  } args{View(out), View(v)};
  RunKernel(*r->module, "k", &args, n);
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j <= i; ++j) s += (j % 2 == 0) ? double(j) * j : -1.0;
    double x = v[i].c[0], y = v[i].c[1];
    double cross_sq = x * x + y * y;  // cross(v, z) = (y, -x, 0)
    EXPECT_NEAR(out[i], s + cross_sq + 1.0, 1e-3 * (1 + std::abs(s + cross_sq))) << i;
  }
}

#if WARPD_WITH_CUDA
TEST(CompilerTest, VerifyCudaCompilesGeneratedSourceWithNvrtcAndPtxas) {
  ASSERT_TRUE(Nvrtc::Load().ok()) << "NVRTC is required with CUDA: " << Nvrtc::Load().status();
  auto c = Compiler::Create(Options("", true));
  ASSERT_TRUE(c.ok()) << c.status();
  for (const auto& proto : {ScaleModule(), FeatureModule()}) {
    auto r = Compile(**c, proto);
    EXPECT_TRUE(r.ok()) << r.status();
  }
}

// A module compiled for CUDA: PTX for the newest architecture at most the
// device's, with the same layouts as the CPU module, its entries named in
// the PTX, cached in memory and on disk by architecture.
TEST(CompilerTest, CudaModulesArePtxWithTheCpuModulesLayouts) {
  ASSERT_TRUE(Nvrtc::Load().ok()) << "NVRTC is required with CUDA: " << Nvrtc::Load().status();
  const std::string dir = ::testing::TempDir() + "/warpd-cuda-cache";
  std::filesystem::remove_all(dir);
  auto c = MakeCompiler(dir);
  auto cpu = Compile(*c, FeatureModule());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto m = ir::ModuleFromProto(FeatureModule());
  ASSERT_TRUE(m.ok());
  auto r = c->Compile(**m, Target::kCuda, 90);
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledModule& cuda = *r->module;
  EXPECT_EQ(cuda.target(), Target::kCuda);
  EXPECT_EQ(cuda.cuda_arch(), 90);
  EXPECT_FALSE(r->cache_hit);
  EXPECT_NE(cuda.cache_key(), cpu->module->cache_key());
  ASSERT_EQ(cuda.kernels().size(), 1u);
  const CompiledKernel& k = cuda.kernels()[0];
  EXPECT_EQ(k.cpu_entry, nullptr);
  EXPECT_EQ(k.cuda_entry, codegen::CudaEntrySymbol("k"));
  EXPECT_NE(cuda.cuda_image().find(".visible .entry " + k.cuda_entry + "("), std::string::npos);
  EXPECT_NE(cuda.cuda_image().find(".target sm_90"), std::string::npos);
  const CompiledKernel& on_cpu = cpu->module->kernels()[0];
  EXPECT_EQ(k.layout.args_size, on_cpu.layout.args_size);
  ASSERT_EQ(k.layout.params.size(), on_cpu.layout.params.size());
  for (size_t i = 0; i < k.layout.params.size(); ++i) EXPECT_EQ(k.layout.params[i].offset, on_cpu.layout.params[i].offset);
  // The parameter list CudaDevice::RunKernel passes (cuda_device_test
  // launches entries declared so): the context's address, then the block
  // by value at the layout's alignment and size.
  const std::string params = ".param .u64 " + k.cuda_entry + "_param_0,\n\t.param .align " +
                             std::to_string(k.layout.args_align) + " .b8 " + k.cuda_entry + "_param_1[" +
                             std::to_string(k.layout.args_size) + "]\n)";
  EXPECT_NE(cuda.cuda_image().find(params), std::string::npos) << params << "\n" << cuda.cuda_image().substr(0, 2000);
  EXPECT_TRUE(Nvrtc::Load().ok() && VerifyPtx(cuda.cuda_image(), 90).ok());
  // A newer device gets the newest architecture NVRTC has up to its own
  // (here sm_90's PTX for a hypothetical sm_95), from the cache.
  auto m2 = ir::ModuleFromProto(FeatureModule());
  auto again = c->Compile(**m2, Target::kCuda, 95);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->module.get(), r->module.get());
  // A device older than every architecture NVRTC has.
  auto m3 = ir::ModuleFromProto(FeatureModule());
  auto old = c->Compile(**m3, Target::kCuda, 30);
  EXPECT_EQ(old.status().code(), absl::StatusCode::kFailedPrecondition) << old.status();
  // From disk in a new compiler.
  auto fresh = MakeCompiler(dir);
  auto m4 = ir::ModuleFromProto(FeatureModule());
  auto disk = fresh->Compile(**m4, Target::kCuda, 90);
  ASSERT_TRUE(disk.ok()) << disk.status();
  EXPECT_TRUE(disk->cache_hit);
  EXPECT_EQ(disk->module->cuda_image(), cuda.cuda_image());
  std::filesystem::remove_all(dir);
}

// Backward modules name the adjoint entries too.
TEST(CompilerTest, CudaBackwardModulesNameTheirAdjointEntries) {
  auto c = MakeCompiler();
  auto m = ir::ModuleFromProto(ScaleModule());
  ASSERT_TRUE(m.ok());
  (*m)->backward = true;
  auto r = c->Compile(**m, Target::kCuda, 90);
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel& k = r->module->kernels()[0];
  EXPECT_EQ(k.cuda_adjoint, codegen::AdjointCudaEntrySymbol("scale"));
  // The context, then the forward and the adjoints' blocks by value.
  const std::string block = " .b8 " + k.cuda_adjoint + "_param_";
  const std::string size = "[" + std::to_string(k.layout.args_size) + "]";
  EXPECT_NE(r->module->cuda_image().find(".param .u64 " + k.cuda_adjoint + "_param_0,"), std::string::npos);
  EXPECT_NE(r->module->cuda_image().find(block + "1" + size), std::string::npos);
  EXPECT_NE(r->module->cuda_image().find(block + "2" + size), std::string::npos);
}
#endif

// Every regular overload in the builtin table, instantiated for
// representative dtypes of its families (float16/32/64, int8/uint8/int32/
// uint64, bool) and shapes (N=3, R=2, C=3, K=4, M=2), called from a kernel:
// the table's C++ spellings must exist in runtime/native for clang and, when
// NVRTC is installed, for NVRTC too.
types::TypeRef Concrete(const builtins::Pattern& p, types::ScalarKind t, types::ScalarKind s) {
  using K = builtins::Pattern::Kind;
  static const int kVars[5] = {3, 2, 2, 3, 4};  // N M R C K
  auto dim = [](int d) { return d > 0 ? d : d < 0 ? kVars[-d - 1] : 1; };
  types::ScalarKind dt = p.dtype_var < 0 ? p.scalar : p.dtype_var == 0 ? t : s;
  switch (p.kind) {
    case K::kScalar: return types::Scalar(dt);
    case K::kVector: return types::Vector(dim(p.dims[0]), dt);
    case K::kMatrix: return types::Matrix(dim(p.dims[0]), dim(p.dims[1]), dt);
    case K::kQuat: return types::Quat(dt);
    case K::kTransform: return types::Transform(dt);
    case K::kValue: return types::Vector(3, t == types::ScalarKind::kBool ? types::ScalarKind::kFloat32 : t);
    case K::kArray: {
      types::TypeRef el = p.value_var >= 0 ? types::Scalar(types::ScalarKind::kFloat32) : types::Scalar(dt);
      return types::TypeTable::Global().Array(el, p.dims[0] > 0 ? p.dims[0] : 1);
    }
    case K::kQuery: return types::Query(p.query, dt);
    case K::kTuple:
      break;  // results only
  }
  return nullptr;
}

// Shards of the table (by overload index), so ctest runs them in parallel.
constexpr int kCoverageShards = 4;
class EveryBuiltinOverload : public ::testing::TestWithParam<int> {};

TEST_P(EveryBuiltinOverload, Compiles) {
  using types::ScalarKind;
  const int shard = GetParam();
  int index = -1;
  const ScalarKind kReps[] = {ScalarKind::kFloat16, ScalarKind::kFloat32, ScalarKind::kFloat64, ScalarKind::kInt8,
                              ScalarKind::kUInt8,   ScalarKind::kInt32,   ScalarKind::kUInt64,  ScalarKind::kBool};
  std::vector<v1::Function> kernels;
  int n = 0;
  for (const auto& o : builtins::Table()) {
    if (o.hook || o.form != builtins::Form::kCall) continue;
    if (++index % kCoverageShards != shard) continue;
    bool uses[2] = {false, false};
    auto note = [&](const builtins::Pattern& p) {
      if (p.dtype_var >= 0) uses[p.dtype_var] = true;
    };
    for (const auto& prm : o.sig.params) note(prm.pattern);
    if (o.sig.result) note(*o.sig.result);
    for (ScalarKind t : kReps) {
      if (!builtins::InFamily(t, o.sig.families[0])) continue;
      ScalarKind s = ScalarKind::kFloat32;
      if (uses[1]) {  // S: the first member of its family that is not T
        for (ScalarKind c : kReps)
          if (builtins::InFamily(c, o.sig.families[1]) && c != t) { s = c; break; }
      }
      std::vector<P> params;
      std::vector<v1::Expr> args;
      std::vector<v1::Stmt> body;
      std::vector<types::TypeRef> arg_types;
      for (size_t i = 0; i < o.sig.params.size(); ++i) {
        std::string name = "p" + std::to_string(i);
        types::TypeRef ty = Concrete(o.sig.params[i].pattern, t, s);
        arg_types.push_back(ty);
        if (o.sig.params[i].out && ty->is_query()) {
          // A query: made by its builtin (an unknown id: an empty query).
          const std::string v = types::Vector(3, ty->scalar())->ToString();
          const std::string sc(types::ScalarName(ty->scalar()));
          v1::Expr id = Call("uint64", {Int(0)});
          v1::Expr make;
          switch (ty->query_kind()) {
            case types::QueryKind::kHashGrid:
              make = Call("hash_grid_query", {id, Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kBvhAabb: make = Call("bvh_query_aabb", {id, Call(v, {}), Call(v, {})}); break;
            case types::QueryKind::kBvhRay: make = Call("bvh_query_ray", {id, Call(v, {}), Call(v, {})}); break;
            case types::QueryKind::kBvhCapsule:
              make = Call("bvh_query_capsule", {id, Call(v, {}), Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kBvhSphere:
              make = Call("bvh_query_sphere", {id, Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kMeshAabb: make = Call("mesh_query_aabb", {id, Call(v, {}), Call(v, {})}); break;
            case types::QueryKind::kMeshPoint:
              make = Call("mesh_query_point", {id, Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kMeshRay:
              make = Call("mesh_query_ray", {id, Call(v, {}), Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kMeshSphere:
              make = Call("mesh_query_sphere", {id, Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kBvhAny:  // two kinds in one variable: the erased query
              body.push_back(Assign(Name(name), Call("bvh_query_aabb", {id, Call(v, {}), Call(v, {})})));
              make = Call("bvh_query_ray", {id, Call(v, {}), Call(v, {})});
              break;
            case types::QueryKind::kMeshAny:
              body.push_back(Assign(Name(name), Call("mesh_query_aabb", {id, Call(v, {}), Call(v, {})})));
              make = Call("mesh_query_sphere", {id, Call(v, {}), Call(sc, {Int(0)})});
              break;
            case types::QueryKind::kMesh: make = Call("mesh_get", {id}); break;
          }
          body.push_back(Assign(Name(name), std::move(make)));
        } else if (o.sig.params[i].out) {
          // An output argument: a local of its type.
          body.push_back(Assign(Name(name), Call(ty->ToString(), ty->is_scalar() ? std::vector<v1::Expr>{Int(0)} : std::vector<v1::Expr>{})));
        } else {
          params.push_back({name, ir::TypeToProto(ty)});
        }
        args.push_back(Name(name));
      }
      // Skip instantiations the table itself does not resolve to this overload
      // (e.g. a V argument that must equal another argument's type).
      auto r = builtins::Resolve(std::vector<const builtins::Overload*>{&o}, arg_types, types::TypeTable::Global());
      if (!r) continue;
      v1::Expr call = Call(std::string(o.name), std::move(args));
      if (o.sig.result) {
        body.push_back(Assign(Name("r"), std::move(call)));
      } else {
        v1::Stmt st;
        *st.mutable_expr()->mutable_value() = std::move(call);
        body.push_back(std::move(st));
      }
      kernels.push_back(Kernel("k" + std::to_string(n++), params, std::move(body)));
      if (!uses[0] && !uses[1]) break;  // no dtype variable: one instance
    }
  }
  ASSERT_GT(n, 900 / kCoverageShards);
  auto proto = ModuleOf(std::move(kernels), "coverage");
  if (const char* dump = std::getenv("WARPD_TEST_DUMP_SOURCE")) {  // debugging aid
    auto m = ir::ModuleFromProto(proto);
    ASSERT_TRUE(m.ok());
    auto g = Compiler::Generate(**m);
    ASSERT_TRUE(g.ok()) << g.status();
    std::ofstream(std::string(dump) + "." + std::to_string(shard)) << g->source;
  }
  // With NVRTC installed, one compile checks both clang and NVRTC + ptxas.
  bool cuda = false;
#if WARPD_WITH_CUDA
  cuda = Nvrtc::Load().ok();
#endif
  auto c = Compiler::Create(Options("", cuda));
  ASSERT_TRUE(c.ok()) << c.status();
  auto r = Compile(**c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
}
INSTANTIATE_TEST_SUITE_P(CompilerTest, EveryBuiltinOverload, ::testing::Range(0, kCoverageShards));

TEST(CompilerTest, TwoDimensionalTid) {
  // img(a: array2d(int32)): i, j = tid(); a[i, j] = i * 100 + j
  auto proto = ModuleOf({Kernel(
      "img", {{"a", Arr(I32(), 2)}},
      {Assign(TupleOf({Name("i"), Name("j")}), Call("tid", {})),
       Assign(Sub(Name("a"), {Name("i"), Name("j")}),
              Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Name("i"), Int(100)), Name("j")))})});
  auto c = MakeCompiler();
  auto r = Compile(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->module->FindKernel("img")->layout.tid_ndim, 2);
  const int rows = 3, cols = 5;
  std::vector<int> data(rows * cols, -1);
  wp::array_t<int> a{};
  a.data = data.data();
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.ndim = 2;
  a.strides[0] = cols * sizeof(int);
  a.strides[1] = sizeof(int);
  RunKernel(*r->module, "img", &a, rows * cols, {rows, cols});
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) EXPECT_EQ(data[i * cols + j], i * 100 + j);
}

TEST(CompilerTest, IntegerDivisionByZeroIsGuarded) {
  // d(a: array(int32)): i = tid(); a[i] = 7 // a[i] + 7 % a[i]
  auto proto = ModuleOf({Kernel(
      "d", {{"a", Arr(I32())}},
      {Assign(Name("i"), Call("tid", {})),
       Assign(Sub(Name("a"), {Name("i")}), Bin(v1::BINOP_ADD, Bin(v1::BINOP_FLOOR_DIV, Int(7), Sub(Name("a"), {Name("i")})),
                                               Bin(v1::BINOP_MOD, Int(7), Sub(Name("a"), {Name("i")}))))})});
  auto c = MakeCompiler();
  auto r = Compile(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int> a = {0, 2, -3};
  struct {
    wp::array_t<int> a;
  } args{View(a)};
  RunKernel(*r->module, "d", &args, a.size());
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(a[1], 3 + 1);
  // Warp 1.19 (run here): 7 // -3 == -3 (floors), 7 % -3 == 1 (C's remainder).
  EXPECT_EQ(a[2], -3 + 1);
}

TEST(CompilerTest, UserErrorsNameFileAndLine) {
  // x = 1.0 + 2  (line 12): float32 + int32 is an error in Warp.
  auto proto = ModuleOf({Kernel("k", {}, {Assign(Name("x", 12), Bin(v1::BINOP_ADD, Float(1.0, 12), Int(2, 12), 12), 12)})});
  auto c = MakeCompiler();
  auto r = Compile(*c, proto);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("test.py:12"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("got ['float32', 'int32']"), std::string::npos) << r.status();  // Warp's words
}

TEST(CompilerTest, MemoryAndDiskCache) {
  auto dir = std::filesystem::temp_directory_path() / ("warpd_cache_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    auto c = MakeCompiler(dir.string());
    auto first = Compile(*c, ScaleModule());
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->cache_hit);
    auto second = Compile(*c, ScaleModule());
    ASSERT_TRUE(second.ok());
    EXPECT_TRUE(second->cache_hit);
    EXPECT_EQ(first->module.get(), second->module.get());  // one loaded copy
    EXPECT_EQ(first->module->cache_key().size(), 64u);
    auto key = first->module->cache_key();
    EXPECT_TRUE(std::filesystem::exists(dir / key.substr(0, 2) / (key + ".o")));
  }
  {
    // A new compiler (a restarted daemon) finds the object on disk.
    auto c = MakeCompiler(dir.string());
    auto r = Compile(*c, ScaleModule());
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->cache_hit);
    std::vector<float> a = {1, 2};
    struct {
      wp::array_t<float> a;
      float s;
    } args{View(a), 3.0f};
    RunKernel(*r->module, "scale", &args, a.size());
    EXPECT_EQ(a[1], 6.0f);
    r->module.reset();
    auto removed = c->ClearCache();
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(*removed, 1u);
    auto again = Compile(*c, ScaleModule());
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->cache_hit);
  }
  std::filesystem::remove_all(dir);
}

// Objects built for one CPU target are never loaded for another: the target
// is part of the cache key, so a compiler for another target sharing the disk
// cache compiles its own object.
TEST(CompilerTest, CacheKeysDependOnTheCpuTarget) {
  auto dir = std::filesystem::temp_directory_path() / ("warpd_target_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto host = MakeCompiler(dir.string());
  Compiler::Options baseline_options = Options(dir.string(), false);
  baseline_options.forced_cpu_target = "x86-64";  // valid on every x86-64 host
  if (host->host_cpu().triple.rfind("x86_64", 0) != 0) GTEST_SKIP() << "needs an x86-64 host";
  auto baseline = Compiler::Create(baseline_options);
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  EXPECT_NE(host->cpu_target().Description(), (*baseline)->cpu_target().Description());

  auto a = Compile(*host, ScaleModule());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Compile(**baseline, ScaleModule());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->cache_hit);  // not the host target's object from disk
  EXPECT_NE(a->module->cache_key(), b->module->cache_key());
  // Both run.
  for (const auto* r : {&*a, &*b}) {
    std::vector<float> v = {1, 2, 3};
    struct {
      wp::array_t<float> a;
      float s;
    } args{View(v), 2.0f};
    RunKernel(*r->module, "scale", &args, v.size());
    EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  }
  a->module.reset();
  b->module.reset();
  std::filesystem::remove_all(dir);
}

TEST(CompilerTest, ConcurrentIdenticalCompilesShareOneModule) {
  auto c = MakeCompiler();
  std::vector<std::shared_ptr<const CompiledModule>> got(4);
  std::atomic<int> compiled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto r = Compile(*c, ScaleModule());
      ASSERT_TRUE(r.ok()) << r.status();
      got[t] = r->module;
      compiled += !r->cache_hit;
    });
  for (auto& t : threads) t.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(got[t].get(), got[0].get());
  EXPECT_EQ(compiled.load(), 1);
}

// Many requests for one new module at once: one compile, on a compile
// thread; the callers' threads only hand the work over and return.
TEST(CompilerTest, CompileAsyncCompilesOnceOffTheCallersThread) {
  auto c = MakeCompiler();
  constexpr int kRequests = 16;
  struct Got {
    absl::StatusOr<CompileResult> result = absl::UnknownError("no result");
    std::thread::id thread;
  };
  std::vector<Got> got(kRequests);
  absl::Mutex mu;
  int answered = 0;
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < kRequests; ++i) {
    auto m = ir::ModuleFromProto(ScaleModule());
    ASSERT_TRUE(m.ok()) << m.status();
    c->CompileAsync(std::shared_ptr<ir::Module>(*std::move(m)), Target::kCpu,
                    [&, i](absl::StatusOr<CompileResult> r) {
                      absl::MutexLock lock(&mu);
                      got[i] = {std::move(r), std::this_thread::get_id()};
                      ++answered;
                    });
  }
  {
    absl::MutexLock lock(&mu);
    auto all = [&] { return answered == kRequests; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(120)));
  }
  int compiled = 0;
  for (const Got& g : got) {
    ASSERT_TRUE(g.result.ok()) << g.result.status();
    EXPECT_EQ(g.result->module.get(), got[0].result->module.get());
    if (!g.result->cache_hit) {
      ++compiled;
      EXPECT_NE(g.thread, caller) << "the compile ran on the caller's thread";
    }
  }
  EXPECT_EQ(compiled, 1);
  // Results come the same way for a user error: at once, on the caller.
  auto m = ir::ModuleFromProto(
      ModuleOf({Kernel("k", {}, {Assign(Name("x", 12), Bin(v1::BINOP_ADD, Float(1.0, 12), Int(2, 12), 12), 12)})}));
  ASSERT_TRUE(m.ok()) << m.status();
  bool errored = false;
  c->CompileAsync(std::shared_ptr<ir::Module>(*std::move(m)), Target::kCpu, [&](absl::StatusOr<CompileResult> r) {
    errored = true;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  });
  EXPECT_TRUE(errored);
}

}  // namespace
}  // namespace warpd::compiler

namespace warpd::compiler {
namespace {

using namespace warpd::testing;

// scale under another kernel name: another module, another cache key.
v1::Module NamedScaleModule(const std::string& name) {
  return ModuleOf({Kernel(name, {{"a", Arr(F32())}, {"s", F32()}},
                          {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                           Assign(Sub(Name("a", 3), {Name("i", 3)}, 3),
                                  Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3), Name("s", 3), 3), 3)})});
}

absl::StatusOr<CompileResult> CompileGated(Compiler& c, const v1::Module& proto, CacheWriteGate gate) {
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  absl::Notification ready;
  absl::StatusOr<CompileResult> out = absl::UnknownError("unset");
  c.CompileAsync(
      std::shared_ptr<ir::Module>(*std::move(m)), Target::kCpu,
      [&](absl::StatusOr<CompileResult> r) {
        out = std::move(r);
        ready.Notify();
      },
      std::move(gate));
  ready.WaitForNotification();
  return out;
}

// The gate (a tenant's budget) decides whether a compile is saved to disk;
// a module served from the cache never asks it.
TEST(CompilerDiskCacheTest, GateDecidesWhetherACompileIsSaved) {
  const auto dir = std::filesystem::temp_directory_path() / ("warpd_gate_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto c = MakeCompiler(dir.string());
  std::vector<uint64_t> asked;
  auto refuse = [&](uint64_t bytes) {
    asked.push_back(bytes);
    return false;
  };
  auto first = CompileGated(*c, NamedScaleModule("unsaved"), refuse);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->cache_hit);
  const std::string key = first->module->cache_key();
  const auto entry = dir / key.substr(0, 2) / (key + ".o");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_GT(asked[0], DiskCache::EntryBytes(0));
  EXPECT_FALSE(std::filesystem::exists(entry));  // served from memory only
  EXPECT_EQ(c->cache_stats().bytes, 0u);
  // From memory: the gate is not asked.
  auto again = CompileGated(*c, NamedScaleModule("unsaved"), [](uint64_t) -> bool {
    ADD_FAILURE() << "a cache hit asked the gate";
    return true;
  });
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
  // Compiled again (the memory cache cleared), this time allowed: saved, and
  // the gate was told the entry's size on disk.
  ASSERT_TRUE(c->ClearCache().ok());
  auto saved = CompileGated(*c, NamedScaleModule("unsaved"), [&](uint64_t bytes) {
    asked.push_back(bytes);
    return true;
  });
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(asked.size(), 2u);
  ASSERT_TRUE(std::filesystem::exists(entry));
  EXPECT_EQ(std::filesystem::file_size(entry), asked[1]);
  EXPECT_EQ(c->cache_stats().bytes, asked[1]);
  std::filesystem::remove_all(dir);
}

// Options::cache_max_bytes bounds the directory: a second module's object
// evicts the first's.
TEST(CompilerDiskCacheTest, CacheMaxBoundsTheDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("warpd_max_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  uint64_t entry_bytes = 0;
  {
    auto c = MakeCompiler(dir.string());
    auto r = Compile(*c, NamedScaleModule("first"));
    ASSERT_TRUE(r.ok()) << r.status();
    entry_bytes = c->cache_stats().bytes;
    ASSERT_GT(entry_bytes, 0u);
    ASSERT_TRUE(c->ClearCache().ok());
  }
  Compiler::Options o = Options(dir.string(), false);
  o.cache_max_bytes = entry_bytes + entry_bytes / 2;
  auto made = Compiler::Create(o);
  ASSERT_TRUE(made.ok()) << made.status();
  Compiler& c = **made;
  auto a = Compile(c, NamedScaleModule("first"));
  ASSERT_TRUE(a.ok());
  auto b = Compile(c, NamedScaleModule("secnd"));  // same length: same object size
  ASSERT_TRUE(b.ok());
  const std::string ka = a->module->cache_key(), kb = b->module->cache_key();
  EXPECT_FALSE(std::filesystem::exists(dir / ka.substr(0, 2) / (ka + ".o")));
  EXPECT_TRUE(std::filesystem::exists(dir / kb.substr(0, 2) / (kb + ".o")));
  EXPECT_LE(c.cache_stats().bytes, o.cache_max_bytes);
  EXPECT_EQ(c.cache_stats().evictions, 1u);
  EXPECT_EQ(c.cache_stats().max_bytes, o.cache_max_bytes);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace warpd::compiler
