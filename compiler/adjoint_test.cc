// The backward pass through the compiler facade: a module compiled with
// Module.backward, its kernels' adjoint entries called directly through the
// launch ABI (the forward block, then the adjoints' block), their gradients
// checked against central differences of the forward entry; kernels that
// cannot be differentiated yet; the array access the compiler reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/ir/from_proto.h"
#include "compiler/testing/ir_builder.h"
#include "compiler/tir/array_access.h"
#include "warpd/native/array.h"

namespace warpd::compiler {
namespace {

using namespace warpd::testing;

std::unique_ptr<Compiler> MakeCompiler() {
  auto c = Compiler::Create(Compiler::Options{});
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

absl::StatusOr<CompileResult> CompileBackward(Compiler& c, v1::Module proto) {
  proto.set_backward(true);
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  return c.Compile(**m, Target::kCpu);
}

wp::array_t<float> View(std::vector<float>& v) {
  wp::array_t<float> a{};
  a.data = v.data();
  a.shape[0] = static_cast<int>(v.size());
  a.ndim = 1;
  a.strides[0] = sizeof(float);
  return a;
}

struct Args {
  wp::array_t<float> x, y;
};

// The C++ text of `proto` with its backward pass.
absl::StatusOr<Compiler::Generated> GenerateBackward(v1::Module proto) {
  proto.set_backward(true);
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  return Compiler::Generate(**m);
}

void RunEntry(abi::CpuKernelFn entry, const void* block, int64_t n) {
  wp::launch_ctx ctx{};
  ctx.bounds.ndim = 1;
  ctx.bounds.shape[0] = static_cast<int>(n);
  ctx.bounds.size = n;
  entry(&ctx, block, 0, n);
  EXPECT_EQ(ctx.fault.flag, 0);
}

// k(x, y): v = x[i]; s = 0; for j in range(3): s = s * v + 1  (carried,
// nonlinear); if v > 0: y[i] = s * v  else: y[i] = sin(s) - v
v1::Module LoopBranchModule() {
  auto v = [] { return Name("v", 3); };
  auto s = [] { return Name("s", 4); };
  return ModuleOf({Kernel(
      "k", {{"x", Arr(F32())}, {"y", Arr(F32())}},
      {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
       Assign(Name("s", 4), Float(0.0, 4), 4),
       For("j", {Int(3, 5)}, {Assign(s(), Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, s(), v(), 6), Float(1.0, 6), 6), 6)},
           5),
       If(Cmp(v1::CMP_GT, v(), Float(0.0, 7), 7),
          {Assign(Sub(Name("y", 8), {Name("i", 8)}, 8), Bin(v1::BINOP_MUL, s(), v(), 8), 8)},
          {Assign(Sub(Name("y", 9), {Name("i", 9)}, 9), Bin(v1::BINOP_SUB, Call("sin", {s()}, 9), v(), 9), 9)}, 7)})});
}

TEST(AdjointTest, LoopsAndBranchesMatchCentralDifferences) {
  auto c = MakeCompiler();
  auto r = CompileBackward(*c, LoopBranchModule());
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel* k = r->module->FindKernel("k");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->cpu_adjoint, nullptr) << k->adjoint_error;
  ASSERT_EQ(k->layout.args_size, sizeof(Args));

  std::vector<float> x = {-1.5f, -0.3f, 0.25f, 0.8f, 1.7f}, y(x.size()), gx(x.size()), gy(x.size(), 1.0f);
  struct {
    Args fwd, adj;
  } block{{View(x), View(y)}, {View(gx), View(gy)}};
  RunEntry(k->cpu_adjoint, &block, static_cast<int64_t>(x.size()));

  // f(v) per thread, by the forward entry, at v +- h.
  auto f = [&](size_t i, float v) {
    std::vector<float> xs = x, ys(x.size());
    xs[i] = v;
    Args a{View(xs), View(ys)};
    RunEntry(k->cpu_entry, &a, static_cast<int64_t>(xs.size()));
    return static_cast<double>(ys[i]);
  };
  for (size_t i = 0; i < x.size(); ++i) {
    const float h = 1e-3f;
    const double fd = (f(i, x[i] + h) - f(i, x[i] - h)) / (2.0 * h);
    EXPECT_NEAR(gx[i], fd, 2e-2 * (1.0 + std::fabs(fd))) << "x = " << x[i];
  }
  // The output's gradient is its argument's own here only when the runtime
  // says so (the consume bit); unmarked, it is only read.
  for (float g : gy) EXPECT_EQ(g, 1.0f);
}

TEST(AdjointTest, AKernelWithoutAnAdjointLeavesTheOthersTheirs) {
  // f(x) = x * x names a custom gradient the module lacks (a client bug:
  // the adjoint of a kernel calling f cannot be made);
  // bad(x, y): y[i] = f(x[i]);  good(x, y): y[i] = x[i] * x[i]
  v1::Function f = Func("f", {{"x", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("x", 2), Name("x", 2), 2), 2)});
  f.set_custom_grad("f_grad_missing");
  auto proto = ModuleOf(
      {f,
       Kernel("bad", {{"x", Arr(F32())}, {"y", Arr(F32())}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2),
               Assign(Sub(Name("y", 3), {Name("i", 3)}, 3), Call("f", {Sub(Name("x", 3), {Name("i", 3)}, 3)}, 3, v1::CALLEE_FUNCTION), 3)}),
       Kernel("good", {{"x", Arr(F32())}, {"y", Arr(F32())}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2),
               Assign(Sub(Name("y", 3), {Name("i", 3)}, 3),
                      Bin(v1::BINOP_MUL, Sub(Name("x", 3), {Name("i", 3)}, 3), Sub(Name("x", 3), {Name("i", 3)}, 3),
                          3),
                      3)})});
  auto c = MakeCompiler();
  auto r = CompileBackward(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel* bad = r->module->FindKernel("bad");
  const CompiledKernel* good = r->module->FindKernel("good");
  ASSERT_NE(bad, nullptr);
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(bad->cpu_adjoint, nullptr);
  EXPECT_NE(bad->cpu_entry, nullptr);  // its forward pass is unaffected
  EXPECT_NE(bad->adjoint_error.find("custom gradient of 'f'"), std::string::npos) << bad->adjoint_error;
  EXPECT_NE(bad->adjoint_error.find(":3:"), std::string::npos) << bad->adjoint_error;  // the line
  ASSERT_NE(good->cpu_adjoint, nullptr);
  std::vector<float> x = {1.0f, -2.0f, 3.0f}, y(3), gx(3), gy(3, 1.0f);
  struct {
    Args fwd, adj;
  } block{{View(x), View(y)}, {View(gx), View(gy)}};
  RunEntry(good->cpu_adjoint, &block, 3);
  EXPECT_EQ(gx, (std::vector<float>{2.0f, -4.0f, 6.0f}));
  // A forward-only compile of the same module has no adjoint entries at all.
  auto m = ir::ModuleFromProto(proto);
  ASSERT_TRUE(m.ok());
  auto fwd = c->Compile(**m, Target::kCpu);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  EXPECT_EQ(fwd->module->FindKernel("good")->cpu_adjoint, nullptr);
}

// k(x, y, n): v = x[i]; s = 0; w = 1; for j in range(n): s = s + sin(v * w) * 0.5; w = w + 1
// (linear carried values, sin in the loop); p = v; for j in range(3): p = p * p * 0.5 + 0.1
// (nonlinear: kept per iteration); if v > 0: y[i] = s * p  else: y[i] = cos(s) - p
v1::Module LaneLoopModule() {
  auto nm = [](const char* n, int line) { return Name(n, line); };
  auto mul = [](v1::Expr a, v1::Expr b, int line) { return Bin(v1::BINOP_MUL, std::move(a), std::move(b), line); };
  auto add = [](v1::Expr a, v1::Expr b, int line) { return Bin(v1::BINOP_ADD, std::move(a), std::move(b), line); };
  return ModuleOf({Kernel(
      "k", {{"x", Arr(F32())}, {"y", Arr(F32())}, {"n", I32()}},
      {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
       Assign(Name("s", 4), Float(0.0, 4), 4), Assign(Name("w", 4), Float(1.0, 4), 4),
       For("j", {Name("n", 5)},
           {Assign(nm("s", 6), add(nm("s", 6), mul(Call("sin", {mul(nm("v", 6), nm("w", 6), 6)}, 6), Float(0.5, 6), 6), 6),
                   6),
            Assign(nm("w", 7), add(nm("w", 7), Float(1.0, 7), 7), 7)},
           5),
       Assign(Name("p", 8), Name("v", 8), 8),
       For("j2", {Int(3, 9)},
           {Assign(nm("p", 10), add(mul(mul(nm("p", 10), nm("p", 10), 10), Float(0.5, 10), 10), Float(0.1, 10), 10),
                   10)},
           9),
       If(Cmp(v1::CMP_GT, nm("v", 11), Float(0.0, 11), 11),
          {Assign(Sub(Name("y", 12), {Name("i", 12)}, 12), mul(nm("s", 12), nm("p", 12), 12), 12)},
          {Assign(Sub(Name("y", 13), {Name("i", 13)}, 13),
                  Bin(v1::BINOP_SUB, Call("cos", {nm("s", 13)}, 13), nm("p", 13), 13), 13)},
          11)})});
}

// A kernel with loops runs its adjoint kLanes thread ids at a time (the
// lane-blocked body, lane_blocks.h) and the rest one at a time: every lane
// gives exactly the scalar body's gradient (threads with equal inputs in a
// lane block and in the remainder agree bit for bit), and both match
// central differences.
TEST(AdjointTest, LaneBlockedAdjointEqualsTheScalarOne) {
  auto proto = LaneLoopModule();
  {
    absl::StatusOr<Compiler::Generated> g = GenerateBackward(proto);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_NE(g->source.find("_lanes(ctx, a, d, t, scalar)"), std::string::npos);
    // The replay just before each reverse sweep computes the cos the sin's
    // adjoint needs with the sin (kept in _gp<N>).
    EXPECT_NE(g->source.find("wp::sincos_lanes<64, true, true>("), std::string::npos);
    EXPECT_NE(g->source.find("wp::mul(_gpt"), std::string::npos);
  }
  auto c = MakeCompiler();
  auto r = CompileBackward(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel* k = r->module->FindKernel("k");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->cpu_adjoint, nullptr) << k->adjoint_error;
  struct Args3 {
    wp::array_t<float> x, y;
    int32_t n, pad;
  };
  ASSERT_EQ(k->layout.args_size, sizeof(Args3));
  const int64_t threads = 150;  // two lane blocks of 64, then 22 one at a time
  std::vector<float> x(threads), y(threads), gx(threads), gy(threads, 1.0f);
  // One rounding per value (no a * b + c a compiler may fuse in some lanes only).
  for (int64_t i = 0; i < threads; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 64 - 30) / 25.0f;
  struct {
    Args3 fwd, adj;
  } block{{View(x), View(y), 7, 0}, {View(gx), View(gy), 0, 0}};
  RunEntry(k->cpu_adjoint, &block, threads);
  for (int64_t i = 0; i < 22; ++i)  // thread i (lane block 0), i + 128 (scalar) have equal inputs
    EXPECT_EQ(gx[static_cast<size_t>(i)], gx[static_cast<size_t>(i + 128)]) << "thread " << i;
  auto f = [&](size_t i, float v) {
    std::vector<float> xs = x, ys(x.size());
    xs[i] = v;
    Args3 a{View(xs), View(ys), 7, 0};
    RunEntry(k->cpu_entry, &a, threads);
    return static_cast<double>(ys[i]);
  };
  for (size_t i = 0; i < 22; ++i) {
    const float h = 1e-3f;
    const double fd = (f(i, x[i] + h) - f(i, x[i] - h)) / (2.0 * h);
    EXPECT_NEAR(gx[i], fd, 2e-2 * (1.0 + std::fabs(fd))) << "x = " << x[i];
  }
  // 100 iterations: more than the lanes keep of the first loop (64 here),
  // within what the scalar adjoint keeps (256): the lane blocks run one
  // thread at a time instead, with the same gradients and no fault.
  std::fill(gx.begin(), gx.end(), 0.0f);
  block.fwd.n = 100;
  RunEntry(k->cpu_adjoint, &block, threads);
  for (int64_t i = 0; i < 22; ++i)
    EXPECT_EQ(gx[static_cast<size_t>(i)], gx[static_cast<size_t>(i + 128)]) << "thread " << i << ", n = 100";
  EXPECT_NE(gx[0], 0.0f);
}

// Lane-blocked adjoints of a loop-free kernel and of a loop whose sum the
// adjoint does not need (bench/kernels.py's ad_elementwise and ad_loop):
// the lanes take the thread-indexed elements and their gradients without
// checks, the loop's replay computes no sin (only each iteration's cos),
// and the gradients equal the scalar adjoint's bit for bit and the closed
// forms.
TEST(AdjointTest, LaneBlockedAdjointsSkipWhatTheGradientDoesNotNeed) {
  auto nm = [](const char* n, int line) { return Name(n, line); };
  auto mul = [](v1::Expr a, v1::Expr b, int line) { return Bin(v1::BINOP_MUL, std::move(a), std::move(b), line); };
  auto add = [](v1::Expr a, v1::Expr b, int line) { return Bin(v1::BINOP_ADD, std::move(a), std::move(b), line); };
  v1::Module proto = ModuleOf(
      {Kernel("e", {{"x", Arr(F32())}, {"y", Arr(F32())}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
               Assign(Sub(Name("y", 4), {Name("i", 4)}, 4),
                      add(mul(Call("sin", {nm("v", 4)}, 4), nm("v", 4), 4),
                          mul(mul(nm("v", 4), nm("v", 4), 4), Float(0.5, 4), 4), 4),
                      4)}),
       Kernel("d", {{"x", Arr(F32())}, {"y", Arr(F32())}, {"n", I32()}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("v", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
               Assign(Name("s", 4), Float(0.0, 4), 4),
               For("k", {Name("n", 5)},
                   {Assign(nm("s", 6),
                           add(nm("s", 6),
                               mul(Call("sin", {mul(nm("v", 6), Call("float", {nm("k", 6)}, 6), 6)}, 6), Float(0.5, 6), 6),
                               6),
                           6)},
                   5),
               Assign(Sub(Name("y", 7), {Name("i", 7)}, 7), nm("s", 7), 7)})});
  {
    absl::StatusOr<Compiler::Generated> g = GenerateBackward(proto);
    ASSERT_TRUE(g.ok()) << g.status();
    const std::string& src = g->source;
    const size_t e = src.find("void wpr_e_lanes("), d = src.find("void wpr_d_lanes(");
    ASSERT_NE(e, std::string::npos);
    ASSERT_NE(d, std::string::npos);
    const std::string d_body = src.substr(d, src.find("\n}\n", d) - d);
    EXPECT_EQ(d_body.find("sincos_lanes<64, true"), std::string::npos) << d_body;
    EXPECT_NE(d_body.find("sincos_lanes<64, false, true>(nullptr, _gp"), std::string::npos) << d_body;
    EXPECT_NE(d_body.find("wp::element_in_block("), std::string::npos) << d_body;
    EXPECT_EQ(d_body.find("wp::adj_address("), std::string::npos) << d_body;
    EXPECT_NE(src.find("if (block_end <= fast_end) for (; t + 64 <= block_end"), std::string::npos);
  }
  auto c = MakeCompiler();
  auto r = CompileBackward(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t threads = 150;  // two lane blocks of 64, then 22 one at a time
  std::vector<float> x(threads);
  for (int64_t i = 0; i < threads; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 64 - 30) / 25.0f;
  {
    const CompiledKernel* k = r->module->FindKernel("e");
    ASSERT_NE(k, nullptr);
    ASSERT_NE(k->cpu_adjoint, nullptr) << k->adjoint_error;
    std::vector<float> y(threads), gx(threads), gy(threads, 1.0f);
    struct {
      Args fwd, adj;
    } block{{View(x), View(y)}, {View(gx), View(gy)}};
    block.adj.y.reserved = 1;  // y's own gradient: its store consumes it (adj_codegen.h)
    RunEntry(k->cpu_adjoint, &block, threads);
    for (int64_t i = 0; i < threads; ++i) {
      const double v = x[static_cast<size_t>(i)];
      EXPECT_NEAR(gx[static_cast<size_t>(i)], std::cos(v) * v + std::sin(v) + v, 1e-5) << "e, thread " << i;
      if (i < 22) EXPECT_EQ(gx[static_cast<size_t>(i)], gx[static_cast<size_t>(i + 128)]) << "e, thread " << i;
      EXPECT_EQ(gy[static_cast<size_t>(i)], 0.0f) << "the store consumes y's gradient";
    }
  }
  {
    const CompiledKernel* k = r->module->FindKernel("d");
    ASSERT_NE(k, nullptr);
    ASSERT_NE(k->cpu_adjoint, nullptr) << k->adjoint_error;
    struct Args3 {
      wp::array_t<float> x, y;
      int32_t n, pad;
    };
    std::vector<float> y(threads), gx(threads), gy(threads, 1.0f);
    struct {
      Args3 fwd, adj;
    } block{{View(x), View(y), 40, 0}, {View(gx), View(gy), 0, 0}};
    RunEntry(k->cpu_adjoint, &block, threads);
    for (int64_t i = 0; i < threads; ++i) {
      const double v = x[static_cast<size_t>(i)];
      double want = 0.0;
      for (int j = 0; j < 40; ++j) want += 0.5 * j * std::cos(v * j);
      EXPECT_NEAR(gx[static_cast<size_t>(i)], want, 1e-4 * (1.0 + std::fabs(want))) << "d, thread " << i;
      if (i < 22) EXPECT_EQ(gx[static_cast<size_t>(i)], gx[static_cast<size_t>(i + 128)]) << "d, thread " << i;
    }
    // A gradient array shorter than the launch: the lane blocks past its end
    // run one thread at a time, and the access faults as the scalar one does.
    std::vector<float> short_gx(100);
    block.adj.x = View(short_gx);
    std::fill(gy.begin(), gy.end(), 1.0f);
    wp::launch_ctx ctx{};
    ctx.bounds.ndim = 1;
    ctx.bounds.shape[0] = static_cast<int>(threads);
    ctx.bounds.size = threads;
    k->cpu_adjoint(&ctx, &block, 0, threads);
    EXPECT_NE(ctx.fault.flag, 0);
    const double v = x[5];
    double want = 0.0;
    for (int j = 0; j < 40; ++j) want += 0.5 * j * std::cos(v * j);
    EXPECT_NEAR(short_gx[5], want, 1e-4 * (1.0 + std::fabs(want)));
  }
}

// print(x) in an adjoint: the replay writes the forward site's record with
// x, then the reverse sweep the print's adjoint site's record with x's
// adjoint (Warp's adj_print), here the adjoint argument itself.
TEST(AdjointTest, PrintRecordsTheValueThenItsAdjoint) {
  v1::Stmt print;
  *print.mutable_span() = Span(2);
  *print.mutable_expr()->mutable_value() = Call("print", {Name("x", 2)}, 2);
  auto proto = ModuleOf({Kernel("k", {{"x", F32()}}, {print})});
  auto c = MakeCompiler();
  auto r = CompileBackward(*c, proto);
  ASSERT_TRUE(r.ok()) << r.status();
  const CompiledKernel* k = r->module->FindKernel("k");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->cpu_adjoint, nullptr);
  EXPECT_TRUE(k->may_print);
  const abi::PrintTable* table = r->module->print_table();
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->sites.size(), 2u);  // print(x), and its adjoint line
  EXPECT_TRUE(table->sites[1].segments[1].conversion.adjoint);
  std::vector<uint8_t> buffer(4096);
  wp::launch_ctx ctx{};
  ctx.bounds.ndim = 1;
  ctx.bounds.shape[0] = 1;
  ctx.bounds.size = 1;
  ctx.output.data = buffer.data();
  ctx.output.capacity = buffer.size();
  struct {
    float x, adj_x;
  } block{17.0f, 42.0f};
  k->cpu_adjoint(&ctx, &block, 0, 1);
  ASSERT_EQ(ctx.output.dropped, 0u);
  std::vector<std::pair<uint32_t, float>> records;
  for (uint64_t at = 0; at < ctx.output.committed;) {
    wp::print_record_header h;
    std::memcpy(&h, buffer.data() + at, sizeof h);
    float v;
    std::memcpy(&v, buffer.data() + at + sizeof h, sizeof v);
    records.emplace_back(h.site, v);
    at += h.size;
  }
  EXPECT_EQ(records, (std::vector<std::pair<uint32_t, float>>{{0u, 17.0f}, {1u, 42.0f}}));
}

TEST(AdjointTest, ParamsReportHowArraysAreUsed) {
  // k(a, b, c, d, s): b[i] = a[i]; atomic_add(c, 0, a[i]); t = d (an alias); t[i] = 1.0
  auto proto = ModuleOf({Kernel(
      "k", {{"a", Arr(F32())}, {"b", Arr(F32())}, {"c", Arr(F32())}, {"d", Arr(F32())}, {"s", F32()}},
      {Assign(Name("i", 2), Call("tid", {}, 2), 2),
       Assign(Sub(Name("b", 3), {Name("i", 3)}, 3), Sub(Name("a", 3), {Name("i", 3)}, 3), 3),
       Assign(Name("unused", 4), Call("atomic_add", {Name("c", 4), Int(0, 4), Sub(Name("a", 4), {Name("i", 4)}, 4)}, 4),
              4),
       Assign(Name("t", 5), Name("d", 5), 5), Assign(Sub(Name("t", 6), {Name("i", 6)}, 6), Float(1.0, 6), 6)})});
  auto c = MakeCompiler();
  auto m = ir::ModuleFromProto(proto);
  ASSERT_TRUE(m.ok()) << m.status();
  auto r = c->Compile(**m, Target::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& p = r->module->FindKernel("k")->layout.params;
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].access, tir::kAccessRead);
  EXPECT_EQ(p[1].access, tir::kAccessWritten);
  EXPECT_EQ(p[2].access, tir::kAccessAccumulated);
  EXPECT_EQ(p[3].access, tir::kAccessWritten);  // through the alias
  EXPECT_EQ(p[4].access, 0);
}

}  // namespace
}  // namespace warpd::compiler
