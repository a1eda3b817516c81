// The GPU check's adjoint cases: each kernel's adjoint entry (compiled with
// the module's backward pass, compiler/codegen/adjoint.cc) run on the device,
// with gradients computed here in double by hand-derived formulas.
#include <cmath>
#include <string>
#include <vector>

#include "compiler/testing/ir_builder.h"
#include "tools/gpu_check/case_data.h"

namespace warpd::gpu_check {
namespace {

using namespace warpd::testing;

// A case running kernel `name`'s adjoint entry.
CheckCase AdjointCase(const std::string& name, const std::string& what) {
  CheckCase c;
  c.name = name;
  c.kernel = name;
  c.adjoint = true;
  c.what = what;
  return c;
}

Expr At(const std::string& array, int line, std::vector<Expr> idx = {}) {
  if (idx.empty()) idx.push_back(Name("i", line));
  return Sub(Name(array, line), std::move(idx), line);
}

// f(x, y: array(float32), a: float32): i = tid(); y[i] = sin(x[i]) * a + x[i] * x[i]
//   dy/dx = cos(x) * a + 2x
CheckCase Elementwise() {
  CheckCase c = AdjointCase(
      "ad_elementwise", "adjoint of y[i] = sin(x[i]) * a + x[i] * x[i]: x.grad += y.grad * (cos(x) * a + 2x)");
  c.proto = ModuleOf(
      {Kernel(c.kernel, {{"x", Arr(F32())}, {"y", Arr(F32())}, {"a", F32()}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2),
               Assign(At("y", 3),
                      Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Call("sin", {At("x", 3)}, 3), Name("a", 3), 3),
                          Bin(v1::BINOP_MUL, At("x", 3), At("x", 3), 3), 3),
                      3)})},
      "gpu_check_" + c.name);
  const int32_t n = 100003;
  const float a = 1.25f;
  std::vector<float> x(n), y(n), g(n), zeros(n, 0.0f), expect(n);
  Inputs in(7);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = 2.0f * in.Next();
    g[i] = in.Next();
    y[i] = static_cast<float>(std::sin(double(x[i])) * a + double(x[i]) * x[i]);
    expect[i] = static_cast<float>(g[i] * (std::cos(double(x[i])) * a + 2.0 * x[i]));
  }
  Launch l;
  l.name = "grid_stride";
  l.what = "100003 ids in 64 blocks of 256 threads";
  l.dim = {n};
  l.max_blocks = 64;
  l.scalars = {ScalarOf<float>("a", {a}), ScalarOf<float>("adj:a", {0.0f})};
  // The replay recomputes y; whether it stores it again or not, y keeps the forward values.
  l.arrays = {ArrayArg{"x", {n}, Bytes(x), Rule::kUnchanged},
              ArrayArg{"y", {n}, Bytes(y), Rule::kClose, Bytes(y), 1e-6, 1e-6},
              ArrayArg{"adj:x", {n}, Bytes(zeros), Rule::kClose, Bytes(expect), 1e-5, 1e-6},
              ArrayArg{"adj:y", {n}, Bytes(g), Rule::kUnchanged}};
  c.launches.push_back(l);
  // x[i] is the thread's own element: with the flag the runtime sets then
  // (docs/launch_abi.md), the adjoint adds to x.grad without atomics.
  l.name = "own_element";
  l.what = "the same, x.grad marked one writer per element (plain adds)";
  l.arrays[2].flags = 2;
  c.launches.push_back(std::move(l));
  return c;
}

// s(x, w, l: array(float32)): i = tid(); wp.atomic_add(l, 0, x[i] * x[i] * w[0])
//   x.grad[i] += 2 x w l.grad;  w.grad[0] += sum over threads of x^2 l.grad (every
//   thread adds to one element: contended float atomics on the device)
CheckCase ContendedSum() {
  CheckCase c = AdjointCase(
      "ad_atomic_sum", "adjoint of atomic_add(l, 0, x[i] * x[i] * w[0]): 32768 threads add into w.grad[0]");
  v1::Stmt add;
  *add.mutable_span() = Span(3);
  *add.mutable_expr()->mutable_value() = Call(
      "atomic_add",
      {Name("l", 3), Int(0, 3),
       Bin(v1::BINOP_MUL, Bin(v1::BINOP_MUL, At("x", 3), At("x", 3), 3), At("w", 3, {Int(0, 3)}), 3)},
      3);
  c.proto = ModuleOf({Kernel(c.kernel, {{"x", Arr(F32())}, {"w", Arr(F32())}, {"l", Arr(F32())}},
                             {Assign(Name("i", 2), Call("tid", {}, 2), 2), std::move(add)})},
                     "gpu_check_" + c.name);
  const int32_t n = 1 << 15;
  const float w0 = 0.75f, g = 2.0f;
  // Multiples of 1/8 in [-2, 2): every product and partial sum below is
  // exact in float32, so the sum does not depend on the order of the adds.
  std::vector<float> x(n), gx(n);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37) % 32 - 16) / 8.0f;
    gx[i] = 2.0f * x[i] * w0 * g;
    sum += double(x[i]) * x[i] * g;
  }
  std::vector<float> zeros(n, 0.0f);
  Launch l;
  l.name = "contended";
  l.what = "x.grad exact; w.grad[0] the exact sum of 32768 adds";
  l.dim = {n};
  l.arrays = {ArrayArg{"x", {n}, Bytes(x), Rule::kUnchanged},
              ArrayArg{"w", {1}, Bytes(std::vector<float>{w0}), Rule::kUnchanged},
              // The replay does not add again (an atomic's result is not
              // replayed): l keeps its value.
              ArrayArg{"l", {1}, Bytes(std::vector<float>{5.0f}), Rule::kUnchanged},
              // x[i]: one writer per element (plain adds); w[0]: every thread (atomics).
              ArrayArg{"adj:x", {n}, Bytes(zeros), Rule::kExact, Bytes(gx), 0, 0, 64, 2},
              ArrayArg{"adj:w", {1}, Bytes(std::vector<float>{0.0f}), Rule::kExact,
                       Bytes(std::vector<float>{static_cast<float>(sum)})},
              ArrayArg{"adj:l", {1}, Bytes(std::vector<float>{g}), Rule::kUnchanged}};
  c.launches.push_back(std::move(l));
  return c;
}

// p(x, y: array(float32), n: int32): i = tid(); s = x[i]
//   for j in range(n): s = s * s * 0.5 + 0.25      (line 4)
//   y[i] = s
// ds_{k+1}/ds_k = s_k: the reverse sweep needs every iteration's s (kept per
// iteration, at most 256), and faults past that rather than guess.
CheckCase LoopReplay() {
  CheckCase c = AdjointCase(
      "ad_loop", "adjoint of a dynamic loop carrying s = s * s * 0.5 + 0.25 (per-iteration snapshots)");
  c.proto = ModuleOf(
      {Kernel(c.kernel, {{"x", Arr(F32())}, {"y", Arr(F32())}, {"n", I32()}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("s", 3), At("x", 3), 3),
               For("j", {Name("n", 4)},
                   {Assign(Name("s", 5),
                           Bin(v1::BINOP_ADD,
                               Bin(v1::BINOP_MUL, Bin(v1::BINOP_MUL, Name("s", 5), Name("s", 5), 5), Float(0.5, 5), 5),
                               Float(0.25, 5), 5),
                           5)},
                   4),
               Assign(At("y", 6), Name("s", 6), 6)})},
      "gpu_check_" + c.name);
  const int32_t threads = 5000;
  Inputs in(11);
  std::vector<float> x(threads), g(threads), zeros(threads, 0.0f);
  for (int32_t i = 0; i < threads; ++i) {
    x[i] = in.Next();
    g[i] = 1.0f + in.Next();
  }
  for (int32_t iters : {40, 256, 300}) {
    Launch l;
    l.dim = {threads};
    l.scalars = {ScalarOf<int32_t>("n", {iters}), ScalarOf<int32_t>("adj:n", {0})};
    std::vector<float> y(threads), expect(threads);
    for (int32_t i = 0; i < threads; ++i) {
      double s = x[i], d = 1.0;
      for (int32_t j = 0; j < iters; ++j) {
        d *= s;
        s = s * s * 0.5 + 0.25;
      }
      y[i] = static_cast<float>(s);
      expect[i] = static_cast<float>(g[i] * d);
    }
    l.arrays = {ArrayArg{"x", {threads}, Bytes(x), Rule::kUnchanged},
                ArrayArg{"y", {threads}, Bytes(y), Rule::kClose, Bytes(y), 1e-5, 1e-6},
                ArrayArg{"adj:y", {threads}, Bytes(g), Rule::kUnchanged}};
    if (iters <= 256) {
      l.name = "iterations_" + std::to_string(iters);
      l.what = std::to_string(iters) + " iterations (at most 256 kept): x.grad = y.grad * product of s_k";
      // Products of up to 256 factors near 0.29 underflow to zero in float32
      // as they do in double rounded to float: compare with an absolute floor.
      l.arrays.push_back(ArrayArg{"adj:x", {threads}, Bytes(zeros), Rule::kClose, Bytes(expect), 1e-4, 1e-30});
    } else {
      l.name = "past_capacity";
      l.what = "300 iterations, 256 kept: FAULT_ADJOINT_LOOP (kind 3) at line 4, x.grad untouched";
      l.arrays.push_back(ArrayArg{"adj:x", {threads}, Bytes(zeros), Rule::kUnchanged});
      l.fault = FaultExpect{1, 3, 4, 0, iters, 256, 0, {0, 0, 0, 0}};
    }
    c.launches.push_back(std::move(l));
  }
  return c;
}

// v(m: array(mat33), v: array(vec3), y: array(float32)): i = tid(); y[i] = length(m[i] @ v[i])
//   with u = M v: v.grad += g M^T u / |u|; m.grad += g (u / |u|) v^T
CheckCase MatVec() {
  CheckCase c = AdjointCase("ad_mat_vec", "adjoint of y[i] = length(m[i] @ v[i]) over mat33 and vec3 arrays");
  c.proto = ModuleOf({Kernel(c.kernel, {{"m", Arr(Mat(3, 3))}, {"v", Arr(Vec(3))}, {"y", Arr(F32())}},
                             {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                              Assign(At("y", 3),
                                     Call("length", {Bin(v1::BINOP_MATMUL, At("m", 3), At("v", 3), 3)}, 3), 3)})},
                     "gpu_check_" + c.name);
  const int32_t n = 4099;
  Inputs in(13);
  std::vector<float> m(9 * n), v(3 * n), y(n), g(n), gm(9 * n), gv(3 * n);
  for (int32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 9; ++k) m[9 * i + k] = (k % 4 == 0 ? 2.0f : 0.0f) + 0.25f * in.Next();
    v[3 * i] = 1.0f + 0.5f * in.Next();
    v[3 * i + 1] = in.Next();
    v[3 * i + 2] = in.Next();
    g[i] = in.Next();
    double u[3];
    for (int r = 0; r < 3; ++r) {
      u[r] = 0;
      for (int k = 0; k < 3; ++k) u[r] += double(m[9 * i + 3 * r + k]) * v[3 * i + k];
    }
    const double len = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    y[i] = static_cast<float>(len);
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) gm[9 * i + 3 * r + k] = static_cast<float>(g[i] * u[r] / len * v[3 * i + k]);
    for (int k = 0; k < 3; ++k) {
      double s = 0;
      for (int r = 0; r < 3; ++r) s += double(m[9 * i + 3 * r + k]) * u[r];
      gv[3 * i + k] = static_cast<float>(g[i] * s / len);
    }
  }
  std::vector<float> zm(9 * n, 0.0f), zv(3 * n, 0.0f);
  Launch l;
  l.name = "values";
  l.what = "4099 ids: m.grad and v.grad";
  l.dim = {n};
  l.arrays = {ArrayArg{"m", {n}, Bytes(m), Rule::kUnchanged},
              ArrayArg{"v", {n}, Bytes(v), Rule::kUnchanged},
              ArrayArg{"y", {n}, Bytes(y), Rule::kClose, Bytes(y), 1e-5, 1e-6},
              // Each thread's own elements: plain adds (docs/launch_abi.md).
              ArrayArg{"adj:m", {n}, Bytes(zm), Rule::kClose, Bytes(gm), 1e-4, 1e-6, 64, 2},
              ArrayArg{"adj:v", {n}, Bytes(zv), Rule::kClose, Bytes(gv), 1e-4, 1e-6, 64, 2},
              ArrayArg{"adj:y", {n}, Bytes(g), Rule::kUnchanged}};
  c.launches.push_back(std::move(l));
  return c;
}

// b(m0..m32: mat88d, x, y: array(float64)):
//   i = tid(); y[i] = x[i] * m0[0, 0] + x[i] * x[i] * m32[i % 8, 1]
// A 17024-byte forward block goes by value; the adjoint's two blocks (34048
// bytes) exceed CUDA's parameter space and go by address.
CheckCase BigBlock() {
  CheckCase c = AdjointCase("ad_big_block", "adjoint with 33 mat88d parameters: both 17024-byte blocks by address");
  c.by_pointer = true;
  const int mats = 33;
  std::vector<P> params;
  for (int k = 0; k < mats; ++k) params.push_back({"m" + std::to_string(k), Mat(8, 8, v1::SCALAR_FLOAT64)});
  params.push_back({"x", Arr(Scalar(v1::SCALAR_FLOAT64))});
  params.push_back({"y", Arr(Scalar(v1::SCALAR_FLOAT64))});
  v1::Expr value = Bin(
      v1::BINOP_ADD, Bin(v1::BINOP_MUL, At("x", 3), Sub(Name("m0", 3), {Int(0, 3), Int(0, 3)}, 3), 3),
      Bin(v1::BINOP_MUL, Bin(v1::BINOP_MUL, At("x", 3), At("x", 3), 3),
          Sub(Name("m32", 3), {Bin(v1::BINOP_MOD, Name("i", 3), Int(8, 3), 3), Int(1, 3)}, 3), 3),
      3);
  c.proto = ModuleOf({Kernel(c.kernel, params,
                             {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(At("y", 3), std::move(value), 3)})},
                     "gpu_check_" + c.name);
  auto elem = [](int k, int r, int col) { return 0.5 * k + 0.125 * r - 0.0625 * col + 1.0; };
  const int32_t n = 777;
  Launch l;
  l.name = "values";
  l.what = "x.grad = y.grad * (m0[0,0] + 2 x m32[i % 8, 1])";
  l.dim = {n};
  for (int k = 0; k < mats; ++k) {
    std::vector<double> v(64);
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) v[r * 8 + col] = elem(k, r, col);
    l.scalars.push_back(ScalarOf<double>("m" + std::to_string(k), v));
    l.scalars.push_back(ScalarOf<double>("adj:m" + std::to_string(k), std::vector<double>(64, 0.0)));
  }
  Inputs in(17);
  std::vector<double> x(n), y(n), g(n), gx(n), zeros(n, 0.0);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = in.Next();
    g[i] = in.Next();
    const double m32 = elem(32, i % 8, 1);
    y[i] = x[i] * elem(0, 0, 0) + x[i] * x[i] * m32;
    gx[i] = g[i] * (elem(0, 0, 0) + 2.0 * x[i] * m32);
  }
  l.arrays = {ArrayArg{"x", {n}, Bytes(x), Rule::kUnchanged},
              ArrayArg{"y", {n}, Bytes(y), Rule::kClose, Bytes(y), 1e-14, 1e-14},
              ArrayArg{"adj:x", {n}, Bytes(zeros), Rule::kClose, Bytes(gx), 1e-13, 1e-14},
              ArrayArg{"adj:y", {n}, Bytes(g), Rule::kUnchanged}};
  c.launches.push_back(std::move(l));
  return c;
}

}  // namespace

std::vector<CheckCase> AdjointCases() {
  std::vector<CheckCase> cases;
  cases.push_back(Elementwise());
  cases.push_back(ContendedSum());
  cases.push_back(LoopReplay());
  cases.push_back(MatVec());
  cases.push_back(BigBlock());
  return cases;
}

}  // namespace warpd::gpu_check
