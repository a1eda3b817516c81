#include "compiler/codegen/codegen.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/codegen/lane_blocks.h"
#include "compiler/codegen/layout.h"
#include "compiler/codegen/thread_index.h"
#include "compiler/ir/from_proto.h"
#include "compiler/sema/sema.h"
#include "compiler/tir/explicit_reads.h"
#include "compiler/tir/lower.h"
#include "compiler/testing/ir_builder.h"
#include "compiler/testing/typed_module.h"
#include "google/protobuf/reflection.h"

namespace warpd::codegen {
namespace {

using namespace warpd::testing;

// from_proto, sema, lowering, codegen.
std::string Source(const v1::Module& proto) {
  auto m = Typed(proto);
  auto t = tir::Lower(*m);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? GenerateModule(*t) : "";
}

TEST(LayoutTest, CStructRules) {
  // (int8, vec3f, float64, array, uint16) -> offsets 0, 4, 16, 24, 88; size 96.
  auto m = Typed(ModuleOf({Kernel("k", {{"a", Scalar(v1::SCALAR_INT8)}, {"b", Vec(3)}, {"c", Scalar(v1::SCALAR_FLOAT64)},
                                        {"d", Arr(F32())}, {"e", Scalar(v1::SCALAR_UINT16)}}, {})}));
  auto layout = compiler::ComputeLayout(*m, m->functions[0]);
  std::vector<uint32_t> offsets;
  for (const auto& p : layout.params) offsets.push_back(p.offset);
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 4, 16, 24, 88}));
  EXPECT_EQ(layout.args_size, 96u);
  EXPECT_EQ(layout.args_align, 8u);
}

TEST(CodegenTest, EmitsAbiAssertsEntryPointsAndBoundsChecks) {
  v1::Module proto = (ModuleOf({Kernel("scale", {{"a", Arr(F32())}, {"s", F32()}},
                                  {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                                   Assign(Sub(Name("a", 3), {Name("i", 3)}, 3),
                                          Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3), Name("s", 3), 3), 3),
                                   For("j", {Int(4)}, {})})}));
  std::string src = Source(proto);
  EXPECT_NE(src.find("#include \"warpd/native/builtin.h\""), std::string::npos);
  EXPECT_EQ(src.find("#include <"), std::string::npos);  // freestanding: nothing else
  EXPECT_NE(src.find("static_assert(__builtin_offsetof(wpa_scale, p_s) == 64"), std::string::npos) << src;
  EXPECT_NE(src.find("static_assert(sizeof(wpa_scale) == 72"), std::string::npos) << src;
  EXPECT_NE(src.find("extern \"C\" void " + CpuEntrySymbol("scale")), std::string::npos);
  EXPECT_NE(src.find("extern \"C\" __global__ void " + CudaEntrySymbol("scale")), std::string::npos);
  EXPECT_NE(src.find("wp::address(ctx, v_a, 3, "), std::string::npos) << src;  // line 3 recorded
  EXPECT_NE(src.find("wp::mul("), std::string::npos);                          // from the builtin table
  EXPECT_NE(src.find("wp::should_stop(ctx)"), std::string::npos);               // loop back-edge check
}

// CUDA takes at most 32764 bytes of parameters by value: a larger argument
// block (here 70 8x8 float64 matrices, 35840 bytes) is passed by address.
TEST(CodegenTest, CudaEntriesTakeLargeArgumentBlocksByAddress) {
  std::vector<P> params;
  for (int i = 0; i < 70; ++i) params.push_back({"m" + std::to_string(i), Mat(8, 8, v1::SCALAR_FLOAT64)});
  std::string big = Source(ModuleOf({Kernel("big", params, {})}));
  EXPECT_NE(big.find("__global__ void " + CudaEntrySymbol("big") +
                     "(wp::launch_ctx* ctx, const wpa_big* __restrict__ args)"),
            std::string::npos);
  EXPECT_NE(big.find("(ctx, *args, t);"), std::string::npos);
  params.resize(63);  // 32256 bytes and the context pointer fit
  std::string fits = Source(ModuleOf({Kernel("fits", params, {})}));
  EXPECT_NE(fits.find("__global__ void " + CudaEntrySymbol("fits") + "(wp::launch_ctx* ctx, wpa_fits args)"),
            std::string::npos);
}

// Accesses indexed by a variable that only ever holds the thread id (or 0)
// are checked per block; any other index keeps its per-access check.
TEST(ThreadIndexTest, FindsAccessesIndexedByTheThreadId) {
  v1::Module proto = ModuleOf({Kernel(
      "k", {{"a", Arr(F32())}, {"b", Arr(F32())}, {"s", F32()}},
      {Assign(Name("i", 2), Call("tid", {}, 2), 2),
       Assign(Sub(Name("a", 3), {Name("i", 3)}, 3), Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3),
                                                         Name("s", 3), 3), 3),
       Assign(Name("j", 4), Bin(v1::BINOP_ADD, Name("i", 4), Int(1, 4), 4), 4),
       Assign(Sub(Name("a", 5), {Name("j", 5)}, 5), Name("s", 5), 5),
       Assign(Name("k", 6), Int(0, 6), 6),
       If(Cmp(v1::CMP_GT, Name("s", 7), Float(0.0, 7), 7), {Assign(Name("k", 8), Name("i", 8), 8)}, {}, 7),
       Assign(Sub(Name("b", 9), {Name("k", 9)}, 9), Name("s", 9), 9),
       Assign(Name("m", 10), Name("i", 10), 10),
       Assign(Name("m", 11), Int(5, 11), 11),
       Assign(Sub(Name("b", 12), {Name("m", 12)}, 12), Name("s", 12), 12)})});
  auto m = Typed(proto);
  auto t = tir::Lower(*m);
  ASSERT_TRUE(t.ok()) << t.status();
  ThreadIndexed found = FindThreadIndexed(t->functions[0]);
  std::vector<int> lines;
  for (const tir::ElementAddr* a : found.accesses) lines.push_back(a->span.line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<int>{3, 3, 9}));  // not a[j] (line 5) nor b[m] (line 12)
  EXPECT_EQ(found.arrays, (std::vector<std::string>{"a", "b"}));

  std::string src = GenerateModule(*t);
  EXPECT_NE(src.find("wpb_k_in_block("), std::string::npos) << src;
  EXPECT_NE(src.find("wp::element_in_block(v_a, (wp::int64)v_i)"), std::string::npos) << src;
  EXPECT_NE(src.find("wp::contiguous(a.p_a) && wp::contiguous(a.p_b)"), std::string::npos) << src;
  EXPECT_NE(src.find("wp::address(ctx, v_a, 5, "), std::string::npos) << src;
}

// The names of the parameters FindThreadExclusive finds, on the lowered
// kernel and on the same kernel with its reads made explicit (the adjoint's
// form): both must agree.
std::vector<std::string> ExclusiveParams(const v1::Module& proto) {
  std::vector<std::string> names[2];
  for (int explicit_reads = 0; explicit_reads < 2; ++explicit_reads) {
    auto m = Typed(proto);
    auto t = tir::Lower(*m);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return {};
    tir::Function& f = t->functions[0];
    if (explicit_reads) tir::MakeReadsExplicit(f);
    const ThreadExclusive found = FindThreadExclusive(f);
    for (tir::VarId v : found.params) names[explicit_reads].push_back(f.var(v).name);
    EXPECT_FALSE(found.refs.empty() && !found.params.empty());
  }
  EXPECT_EQ(names[0], names[1]);
  return names[0];
}

TEST(ThreadIndexTest, FindsArraysOnlyTheThreadsOwnElementOfIsAccessed) {
  // i = tid(); a[i] = a[i] * s; b[i + 1] = s; k = 0; if s > 0: k = i; c[k] = s
  // loc = d; loc[i] = s; e[i] = float32(len(e)); atomic_add(f, 0, s); f[i] = s
  v1::Stmt add;
  *add.mutable_expr()->mutable_value() = Call("atomic_add", {Name("f", 9), Int(0, 9), Name("s", 9)}, 9);
  v1::Module one = ModuleOf({Kernel(
      "k",
      {{"a", Arr(F32())}, {"b", Arr(F32())}, {"c", Arr(F32())}, {"d", Arr(F32())}, {"e", Arr(F32())},
       {"f", Arr(F32())}, {"s", F32()}},
      {Assign(Name("i", 2), Call("tid", {}, 2), 2),
       Assign(Sub(Name("a", 3), {Name("i", 3)}, 3),
              Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3), Name("s", 3), 3), 3),
       Assign(Sub(Name("b", 4), {Bin(v1::BINOP_ADD, Name("i", 4), Int(1, 4), 4)}, 4), Name("s", 4), 4),
       Assign(Name("k", 5), Int(0, 5), 5),
       If(Cmp(v1::CMP_GT, Name("s", 6), Float(0.0, 6), 6), {Assign(Name("k", 6), Name("i", 6), 6)}, {}, 6),
       Assign(Sub(Name("c", 6), {Name("k", 6)}, 6), Name("s", 6), 6),
       Assign(Name("loc", 7), Name("d", 7), 7), Assign(Sub(Name("loc", 7), {Name("i", 7)}, 7), Name("s", 7), 7),
       Assign(Sub(Name("e", 8), {Name("i", 8)}, 8), Call("float32", {Call("len", {Name("e", 8)}, 8)}, 8), 8),
       add, Assign(Sub(Name("f", 10), {Name("i", 10)}, 10), Name("s", 10), 10)})});
  EXPECT_EQ(ExclusiveParams(one), (std::vector<std::string>{"a", "e"}));

  // i, j = tid(); g[i, j] = s; h[j, i] = s; u = i; w[u, j] = s + g[i, j]
  v1::Module two = ModuleOf({Kernel(
      "k2", {{"g", Arr(F32(), 2)}, {"h", Arr(F32(), 2)}, {"w", Arr(F32(), 2)}, {"s", F32()}},
      {Assign(TupleOf({Name("i", 2), Name("j", 2)}, 2), Call("tid", {}, 2), 2),
       Assign(Sub(Name("g", 3), {Name("i", 3), Name("j", 3)}, 3), Name("s", 3), 3),
       Assign(Sub(Name("h", 4), {Name("j", 4), Name("i", 4)}, 4), Name("s", 4), 4),
       Assign(Name("u", 5), Name("i", 5), 5),
       Assign(Sub(Name("w", 6), {Name("u", 6), Name("j", 6)}, 6),
              Bin(v1::BINOP_ADD, Name("s", 6), Sub(Name("g", 6), {Name("i", 6), Name("j", 6)}, 6), 6), 6)})});
  EXPECT_EQ(ExclusiveParams(two), (std::vector<std::string>{"g", "w"}));

  // A thread id assigned in a branch (zero where it is not taken).
  v1::Module branch = ModuleOf({Kernel(
      "k3", {{"a", Arr(F32())}, {"s", F32()}},
      {If(Cmp(v1::CMP_GT, Name("s", 2), Float(0.0, 2), 2), {Assign(Name("i", 3), Call("tid", {}, 3), 3)}, {}, 2),
       Assign(Sub(Name("a", 4), {Name("i", 4)}, 4), Name("s", 4), 4)})});
  EXPECT_EQ(ExclusiveParams(branch), (std::vector<std::string>{}));
}

// Sets `file` on every SourceSpan in `msg`, recursively.
void SetAllFiles(google::protobuf::Message* msg, const std::string& file) {
  if (auto* span = dynamic_cast<v1::SourceSpan*>(msg)) {
    span->set_file(file);
    return;
  }
  const auto* refl = msg->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  refl->ListFields(*msg, &fields);
  for (const auto* fd : fields) {
    if (fd->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (fd->is_repeated()) {
      for (int i = 0; i < refl->FieldSize(*msg, fd); ++i) SetAllFiles(refl->MutableRepeatedMessage(msg, fd, i), file);
    } else {
      SetAllFiles(refl->MutableMessage(msg, fd), file);
    }
  }
}

v1::Module TwoFunctionModule() {
  return ModuleOf({Func("helper", {{"x", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("x", 2), Float(2.0, 2), 2), 2)}, 1),
                   Kernel("k", {{"a", Arr(F32())}, {"s", F32()}},
                          {Assign(Name("i", 5), Call("tid", {}, 5), 5),
                           Assign(Sub(Name("a", 6), {Name("i", 6)}, 6),
                                  Call("helper", {Name("s", 6)}, 6, v1::CALLEE_FUNCTION), 6)},
                          4)});
}

// Client text other than checked identifiers never reaches generated source:
// the file names, the module name and the display names of a hostile module
// leave no trace, so its source is the same as a benign module's.
TEST(CodegenTest, GeneratedSourceHoldsNoClientText) {
  const std::string payloads[] = {
      "x.py\n#error INJECTED\n//",
      "evil\r\nextern \"C\" int system(const char*); static int r = system(\"id\"); //",
      "a\\", "*/ INJECTED /*", "?\?/", std::string(4000, 'Q'),
  };
  v1::Module plain = TwoFunctionModule();
  plain.set_name("plain");
  const std::string plain_src = Source(plain);
  for (const std::string& p : payloads) {
    v1::Module hostile = TwoFunctionModule();
    hostile.set_name(p);
    SetAllFiles(&hostile, p);
    for (auto& f : *hostile.mutable_functions()) f.set_display_name(p.substr(0, 200));  // display names: <= 256
    const std::string src = Source(hostile);
    EXPECT_EQ(src.find(p), std::string::npos) << p;
    EXPECT_EQ(src.find("INJECTED"), std::string::npos) << p;
    EXPECT_EQ(src.find("system"), std::string::npos) << p;
    EXPECT_EQ(src, plain_src) << p;
  }
}

v1::Expr Str(const std::string& s, int line = 1) {
  v1::Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_constant()->set_string_value(s);
  return e;
}

// Print calls become records of their sites: values only, no client text.
TEST(CodegenTest, PrintRecordsHoldValuesNotClientText) {
  v1::Stmt print, printf;
  *print.mutable_span() = Span(2);
  *print.mutable_expr()->mutable_value() = Call("print", {Str("x is", 2), Name("x", 2)}, 2);
  *printf.mutable_span() = Span(6);
  *printf.mutable_expr()->mutable_value() = Call("printf", {Str("FMT-%d-%s\n", 6), Name("i", 6), Str("secret", 6)}, 6);
  const std::string src = Source(ModuleOf({Func("show", {{"x", F32()}}, {print}, 2),
                                           Kernel("k", {}, {Assign(Name("i", 5), Call("tid", {}, 5), 5), printf}, 4)}));
  EXPECT_NE(src.find("wp::print_record<0u, 4u>(ctx, _tid, v_x);"), std::string::npos) << src;
  EXPECT_NE(src.find("wp::print_record<2u, 4u>(ctx, _tid, v_i);"), std::string::npos) << src;  // 1: print's adjoint
  EXPECT_EQ(src.find("FMT"), std::string::npos) << src;
  EXPECT_EQ(src.find("secret"), std::string::npos) << src;
  EXPECT_EQ(src.find("x is"), std::string::npos) << src;
}

}  // namespace
}  // namespace warpd::codegen

namespace warpd::codegen {
namespace {

// v = x[i]; for k in range(iters): v = sin(v) * 0.5 + cos(v) * 0.25; x[i] = v
v1::Function SinCosKernel(std::vector<Stmt> extra = {}, bool local_bound = false) {
  std::vector<Stmt> loop_body = {
      Assign(Name("v", 5),
             Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Call("sin", {Name("v", 5)}, 5), Float(0.5, 5), 5),
                 Bin(v1::BINOP_MUL, Call("cos", {Name("v", 5)}, 5), Float(0.25, 5), 5), 5),
             5)};
  for (auto& s : extra) loop_body.push_back(s);
  return Kernel("sincos", {{"x", Arr(F32())}, {"iters", I32()}},
                {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
                 Assign(Name("m", 3), Name("iters", 3), 3),
                 For("k", {Name(local_bound ? "m" : "iters", 4)}, loop_body, 4),
                 Assign(Sub(Name("x", 6), {Name("i", 6)}, 6), Name("v", 6), 6)});
}

TEST(CodegenTest, LoopsWithUniformBoundsRunLaneBlockedInFastBlocks) {
  std::string src = Source(ModuleOf({SinCosKernel()}));
  if (getenv("WARPD_DUMP_CODEGEN")) printf("%s\n", src.c_str());
  // The fast block runs kLanes ids through the lane-blocked body, the rest
  // through the scalar one.
  EXPECT_NE(src.find("static WP_DEVICE_FUNC void wpb_sincos_lanes("), std::string::npos) << src;
  EXPECT_NE(src.find("wpb_sincos_lanes(ctx, a, t);"), std::string::npos) << src;
  // The lane loop runs inside the iterations, which poll for a stop.
  EXPECT_NE(src.find("if (WP_UNLIKELY(wp::should_stop(ctx))) return;\n    for (int _l = 0; _l < " +
                     std::to_string(kLanes)),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("wp::float32 v_v[" + std::to_string(kLanes) + "]{};"), std::string::npos) << src;
  // The precise body still polls in its loop.
  EXPECT_NE(src.find("if (WP_UNLIKELY(wp::should_stop(ctx))) return;\n    v_k = "), std::string::npos) << src;
}

TEST(CodegenTest, LoopsThatCouldRunLongOrReorderEffectsAreNotLaneBlocked) {
  // A bound the kernel writes, a bound in a local, a while loop beside it,
  // a loop in a loop.
  v1::Module written = ModuleOf({SinCosKernel({Assign(Name("iters", 5), Int(3, 5), 5)})});
  v1::Module local = ModuleOf({SinCosKernel({}, /*local_bound=*/true)});
  v1::Module looped = ModuleOf({SinCosKernel({While(Cmp(v1::CMP_LT, Name("v", 5), Float(-10.0, 5), 5), {}, 5)})});
  v1::Module nested = ModuleOf({SinCosKernel({For("j", {Int(3, 5)}, {}, 5)})});
  // Lane arrays past kMaxLaneBytes of stack: 70 vec4 locals (and as many
  // temporaries) at 64 lanes is 140 KiB.
  std::vector<Stmt> many;
  for (int j = 0; j < 70; ++j) {
    many.push_back(Assign(Name("w" + std::to_string(j), 5),
                          Call("vec4", {Name("v", 5), Name("v", 5), Name("v", 5), Name("v", 5)}, 5), 5));
  }
  v1::Module big = ModuleOf({SinCosKernel(many)});
  std::vector<Stmt> few(many.begin(), many.begin() + 10);
  EXPECT_NE(Source(ModuleOf({SinCosKernel(few)})).find("_lanes("), std::string::npos);
  for (const v1::Module* m : {&written, &local, &looped, &nested, &big}) {
    std::string src = Source(*m);
    EXPECT_EQ(src.find("_lanes("), std::string::npos) << src;
  }
}

// float32 sin and cos of lane arrays run as wp::sincos_lanes (trig.h): a
// sin and a cos of one variable as one call; with a write to the variable
// between them, two; inside an `if`, per lane. A kernel without loops that
// calls them runs lane-blocked too.
TEST(CodegenTest, SinAndCosOfLaneArraysRunAsLaneCalls) {
  const std::string lanes = std::to_string(kLanes);
  std::string src = Source(ModuleOf({SinCosKernel()}));
  EXPECT_NE(src.find("wp::sincos_lanes<" + lanes + ", true, true>(t9, t11, v_v);"), std::string::npos) << src;
  EXPECT_EQ(src.find("wp::sin("), src.find("wp::sin(v_v)"));  // the scalar body still calls wp::sin
  EXPECT_EQ(src.find("wp::sin(v_v[_l])"), std::string::npos) << src;

  auto no_loop = [](std::vector<Stmt> body) {
    std::vector<Stmt> all = {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                             Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3)};
    for (auto& st : body) all.push_back(st);
    all.push_back(Assign(Sub(Name("x", 9), {Name("i", 9)}, 9), Name("v", 9), 9));
    return ModuleOf({Kernel("trig", {{"x", Arr(F32())}}, all, 1)});
  };
  // sin(v); v = v + 1; cos(v): the write splits them.
  src = Source(no_loop({Assign(Name("s", 4), Call("sin", {Name("v", 4)}, 4), 4),
                        Assign(Name("v", 5), Bin(v1::BINOP_ADD, Name("v", 5), Float(1.0, 5), 5), 5),
                        Assign(Name("c", 6), Call("cos", {Name("v", 6)}, 6), 6),
                        Assign(Name("v", 7), Bin(v1::BINOP_ADD, Name("s", 7), Name("c", 7), 7), 7)}));
  EXPECT_NE(src.find("static WP_DEVICE_FUNC void wpb_trig_lanes("), std::string::npos) << src;
  EXPECT_NE(src.find("wp::sincos_lanes<" + lanes + ", true, false>("), std::string::npos) << src;
  EXPECT_NE(src.find("wp::sincos_lanes<" + lanes + ", false, true>("), std::string::npos) << src;
  // Inside an `if`: per lane; with nothing else to run as lanes the kernel
  // keeps the ordinary fast block.
  src = Source(no_loop({If(Cmp(v1::CMP_LT, Name("v", 4), Float(0.0, 4), 4),
                           {Assign(Name("v", 5), Call("sin", {Name("v", 5)}, 5), 5)}, {}, 4)}));
  EXPECT_EQ(src.find("_lanes("), std::string::npos) << src;
}

}  // namespace
}  // namespace warpd::codegen
