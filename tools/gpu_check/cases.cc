#include "tools/gpu_check/cases.h"

#include <cmath>
#include <cstring>
#include <string>

#include "compiler/testing/feature_module.h"
#include "compiler/testing/ir_builder.h"
#include "tools/gpu_check/case_data.h"

namespace warpd::gpu_check {
namespace {

using namespace warpd::testing;

// (a) saxpy(x, y, out: array(float32), a: float32): i = tid(); out[i] = a * x[i] + y[i]
CheckCase Saxpy() {
  CheckCase c;
  c.name = "saxpy";
  c.what = "out[i] = a * x[i] + y[i] over float32 arrays (array descriptors in the argument block, by value)";
  c.kernel = "saxpy";
  c.proto = ModuleOf({Kernel("saxpy", {{"x", Arr(F32())}, {"y", Arr(F32())}, {"out", Arr(F32())}, {"a", F32()}},
                             {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                              Assign(Sub(Name("out", 3), {Name("i", 3)}, 3),
                                     Bin(v1::BINOP_ADD,
                                         Bin(v1::BINOP_MUL, Name("a", 3), Sub(Name("x", 3), {Name("i", 3)}, 3), 3),
                                         Sub(Name("y", 3), {Name("i", 3)}, 3), 3),
                                     3)})},
                     "gpu_check_saxpy");
  const int32_t n = (1 << 18) + 3;
  const float a = 1.75f;
  std::vector<float> x(n), y(n), out(n, -1.0f), expect(n);
  Inputs in(1);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = in.Next();
    y[i] = in.Next();
    // In double, then rounded once: the device may fuse the multiply-add.
    expect[i] = static_cast<float>(static_cast<double>(a) * x[i] + y[i]);
  }
  for (int variant = 0; variant < 2; ++variant) {
    Launch l;
    l.name = variant == 0 ? "grid_stride" : "full_grid";
    l.what = variant == 0 ? "64 blocks of 256 threads for 262147 ids: the grid-stride loop turns 16 times"
                          : "one thread per id (1025 blocks of 256)";
    l.dim = {n};
    l.max_blocks = variant == 0 ? 64 : 0;
    l.scalars = {ScalarOf<float>("a", {a})};
    l.arrays = {ArrayArg{"x", {n}, Bytes(x), Rule::kUnchanged},
                ArrayArg{"y", {n}, Bytes(y), Rule::kUnchanged},
                ArrayArg{"out", {n}, Bytes(out), Rule::kClose, Bytes(expect), 1e-6, 1e-6}};
    c.launches.push_back(std::move(l));
  }
  return c;
}

// (b) big_<k>(m0..m<k-1>: mat88d, s: float64, out: array(float64)):
//   i = tid(); out[i] = float64(i) * s + m0[0, 0] + m<k/3>[4, 5] + m<2k/3>[2, 7] + m<k-1>[i % 8, (i // 8) % 8]
// 70 matrices: a 35912-byte block, passed by address; 63: 32328 bytes, still by value.
CheckCase BigArgs(int mats) {
  CheckCase c;
  c.name = "big_args_" + std::to_string(mats);
  c.kernel = "big" + std::to_string(mats);
  c.by_pointer = mats == 70;
  std::vector<P> params;
  for (int k = 0; k < mats; ++k) params.push_back({"m" + std::to_string(k), Mat(8, 8, v1::SCALAR_FLOAT64)});
  params.push_back({"s", Scalar(v1::SCALAR_FLOAT64)});
  params.push_back({"out", Arr(Scalar(v1::SCALAR_FLOAT64))});
  const int k1 = mats / 3, k2 = 2 * mats / 3, last = mats - 1;
  auto m = [](int k) { return Name("m" + std::to_string(k), 3); };
  v1::Expr sum = Bin(v1::BINOP_MUL, Call("float64", {Name("i", 3)}, 3), Name("s", 3), 3);
  sum = Bin(v1::BINOP_ADD, sum, Sub(m(0), {Int(0, 3), Int(0, 3)}, 3), 3);
  sum = Bin(v1::BINOP_ADD, sum, Sub(m(k1), {Int(4, 3), Int(5, 3)}, 3), 3);
  sum = Bin(v1::BINOP_ADD, sum, Sub(m(k2), {Int(2, 3), Int(7, 3)}, 3), 3);
  sum = Bin(v1::BINOP_ADD, sum,
            Sub(m(last),
                {Bin(v1::BINOP_MOD, Name("i", 3), Int(8, 3), 3),
                 Bin(v1::BINOP_MOD, Bin(v1::BINOP_FLOOR_DIV, Name("i", 3), Int(8, 3), 3), Int(8, 3), 3)},
                3),
            3);
  c.proto = ModuleOf({Kernel(c.kernel, params,
                             {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                              Assign(Sub(Name("out", 3), {Name("i", 3)}, 3), std::move(sum), 3)})},
                     "gpu_check_" + c.name);
  const size_t block = static_cast<size_t>(mats) * 512 + 8 + 64;
  c.what = std::to_string(mats) + " mat88d parameters, a float64 and an array: " + std::to_string(block) +
           "-byte argument block, " +
           (c.by_pointer ? "over 32764 bytes so passed by address" : "under 32764 bytes so passed by value");
  // m<k>[r][c] = 100k + 8r + c + 0.25: every sum below is exact in float64.
  auto elem = [](int k, int r, int col) { return 100.0 * k + 8 * r + col + 0.25; };
  const int32_t n = 1000;
  const double s = 0.5;
  Launch l;
  l.name = "values";
  l.what = "out[i] from matrices at both ends of the block";
  l.dim = {n};
  for (int k = 0; k < mats; ++k) {
    std::vector<double> v(64);
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) v[r * 8 + col] = elem(k, r, col);
    l.scalars.push_back(ScalarOf<double>("m" + std::to_string(k), v));
  }
  l.scalars.push_back(ScalarOf<double>("s", {s}));
  std::vector<double> out(n, -1.0), expect(n);
  for (int32_t i = 0; i < n; ++i)
    expect[i] = i * s + elem(0, 0, 0) + elem(k1, 4, 5) + elem(k2, 2, 7) + elem(last, i % 8, (i / 8) % 8);
  l.arrays = {ArrayArg{"out", {n}, Bytes(out), Rule::kExact, Bytes(expect)}};
  c.launches.push_back(std::move(l));
  return c;
}

// (c) oob(a: array(float32)): i = tid(); a[i + delta] = value   (line 7)
CheckCase OutOfBounds1d(int delta) {
  const bool up = delta > 0;
  CheckCase c;
  c.name = up ? "oob_past_end" : "oob_negative";
  c.kernel = up ? "oob_up" : "oob_down";
  c.what = up ? "a[i + 1] = 1.0 over 1000 ids of a 1000-element array: thread 999 must record index 1000"
              : "a[i - 1] = 2.0: thread 0 must record index -1";
  const float value = up ? 1.0f : 2.0f;
  c.proto = ModuleOf({Kernel(c.kernel, {{"a", Arr(F32())}},
                             {Assign(Name("i", 6), Call("tid", {}, 6), 6),
                              Assign(Sub(Name("a", 7), {Bin(v1::BINOP_ADD, Name("i", 7), Int(delta, 7), 7)}, 7),
                                     Float(value, 7), 7)},
                             5)},
                     "gpu_check_" + c.name);
  const int32_t n = 1000;
  std::vector<float> init(n, 0.0f), expect(n, 0.0f);
  for (int32_t i = 0; i < n; ++i)
    if (i + delta >= 0 && i + delta < n) expect[i + delta] = value;
  Launch l;
  l.name = "fault";
  l.what = "fault recorded, the faulting store skipped, nothing written past the array";
  l.dim = {n};
  // Threads that see the fault before their store skip it.
  l.arrays = {ArrayArg{"a", {n}, Bytes(init), Rule::kExpectedOrInitial, Bytes(expect)}};
  l.fault = FaultExpect{1, 1, 7, 0, up ? n : -1, n, 1, {n, 0, 0, 0}};
  c.launches.push_back(std::move(l));
  return c;
}

// tid2d(a: array2d(int32)): i, j = tid(); a[i, j] = i * 1000 + j
CheckCase Tid2d() {
  CheckCase c;
  c.name = "tid_2d";
  c.kernel = "tid2d";
  c.what = "i, j = tid() over a 37x53 launch: row-major decomposition of the linear id, 2-D descriptor";
  c.proto = ModuleOf({Kernel("tid2d", {{"a", Arr(I32(), 2)}},
                             {Assign(TupleOf({Name("i", 2), Name("j", 2)}, 2), Call("tid", {}, 2), 2),
                              Assign(Sub(Name("a", 3), {Name("i", 3), Name("j", 3)}, 3),
                                     Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Name("i", 3), Int(1000, 3), 3),
                                         Name("j", 3), 3),
                                     3)})},
                     "gpu_check_tid_2d");
  const int32_t rows = 37, cols = 53;
  std::vector<int32_t> init(rows * cols, -1), expect(rows * cols);
  for (int32_t i = 0; i < rows; ++i)
    for (int32_t j = 0; j < cols; ++j) expect[i * cols + j] = i * 1000 + j;
  Launch l;
  l.name = "values";
  l.what = "every element written with its coordinates";
  l.dim = {rows, cols};
  l.arrays = {ArrayArg{"a", {rows, cols}, Bytes(init), Rule::kExact, Bytes(expect)}};
  c.launches.push_back(std::move(l));
  return c;
}

// oob2d(a: array2d(float32)): i, j = tid(); a[i, j + 1] = float32(i * 100 + j + 1)   (line 12)
CheckCase OutOfBounds2d() {
  CheckCase c;
  c.name = "oob_2d";
  c.kernel = "oob2d";
  c.what = "a[i, j + 1] over a 37x53 launch of a 37x53 array: dimension 1, index 53, the array's shape recorded";
  v1::Expr j1 = Bin(v1::BINOP_ADD, Name("j", 12), Int(1, 12), 12);
  c.proto = ModuleOf(
      {Kernel("oob2d", {{"a", Arr(F32(), 2)}},
              {Assign(TupleOf({Name("i", 11), Name("j", 11)}, 11), Call("tid", {}, 11), 11),
               Assign(Sub(Name("a", 12), {Name("i", 12), j1}, 12),
                      Call("float32",
                           {Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Name("i", 12), Int(100, 12), 12), j1, 12)}, 12),
                      12)},
              10)},
      "gpu_check_oob_2d");
  const int32_t rows = 37, cols = 53;
  std::vector<float> init(rows * cols, -1.0f), expect(rows * cols, -1.0f);
  for (int32_t i = 0; i < rows; ++i)
    for (int32_t j = 1; j < cols; ++j) expect[i * cols + j] = static_cast<float>(i * 100 + j);
  Launch l;
  l.name = "fault";
  l.what = "fault recorded with both extents; in-range stores either done right or skipped";
  l.dim = {rows, cols};
  l.arrays = {ArrayArg{"a", {rows, cols}, Bytes(init), Rule::kExpectedOrInitial, Bytes(expect)}};
  l.fault = FaultExpect{1, 1, 12, 1, cols, cols, 2, {rows, cols, 0, 0}};
  c.launches.push_back(std::move(l));
  return c;
}

// features (compiler/testing/feature_module.h):
//   square(x: float32): return x * x
//   k(out: array(float32), v: array(vec3)): i = tid(); s = 0.0
//     for j in range(i + 1): if j % 2 == 0: s = s + square(float32(j)) else: s = s - 1.0
//     c = cross(v[i], vec3(0.0, 0.0, 1.0)); out[i] = s + dot(c, c) + length(normalize(v[i]))
CheckCase Features() {
  CheckCase c;
  c.name = "features";
  c.kernel = "features";
  c.what = "loops, branches, a user function, vec3 arrays, cross/dot/length/normalize";
  c.proto = FeatureModule("features", "gpu_check_features");
  const int32_t n = 200;
  std::vector<float> out(n, -1.0f), v(3 * n), expect(n);
  for (int32_t i = 0; i < n; ++i) {
    v[3 * i] = 1.0f + i;
    v[3 * i + 1] = -2.0f * i;
    v[3 * i + 2] = 0.5f;
    double s = 0;
    for (int j = 0; j <= i; ++j) s += (j % 2 == 0) ? double(j) * j : -1.0;
    const double x = v[3 * i], y = v[3 * i + 1];
    expect[i] = static_cast<float>(s + x * x + y * y + 1.0);  // cross(v, z) = (y, -x, 0); |normalize(v)| = 1
  }
  Launch l;
  l.name = "values";
  l.what = "200 ids, loops of 1..200 iterations";
  l.dim = {n};
  l.arrays = {ArrayArg{"out", {n}, Bytes(out), Rule::kClose, Bytes(expect), 1e-6, 1e-5},
              ArrayArg{"v", {n}, Bytes(v), Rule::kUnchanged}};
  c.launches.push_back(std::move(l));
  return c;
}

// (d) spin(out: array(int32), n: int32): i = tid(); s = 0
//       for j in range(n): s = s + (i + j) % 7
//       out[i] = s
CheckCase LoopAndCancel() {
  CheckCase c;
  c.name = "loop_cancel";
  c.kernel = "spin";
  c.what = "a loop polling launch_ctx.cancel at its back-edge";
  c.proto = ModuleOf(
      {Kernel("spin", {{"out", Arr(I32())}, {"n", I32()}},
              {Assign(Name("i", 2), Call("tid", {}, 2), 2), Assign(Name("s", 3), Int(0, 3), 3),
               For("j", {Name("n", 4)},
                   {Assign(Name("s", 5),
                           Bin(v1::BINOP_ADD, Name("s", 5),
                               Bin(v1::BINOP_MOD, Bin(v1::BINOP_ADD, Name("i", 5), Name("j", 5), 5), Int(7, 5), 5), 5),
                           5)},
                   4),
               Assign(Sub(Name("out", 6), {Name("i", 6)}, 6), Name("s", 6), 6)})},
      "gpu_check_loop_cancel");
  const int32_t threads = 4096, iters = 1000;
  std::vector<int32_t> init(threads, -7), expect(threads);
  for (int32_t i = 0; i < threads; ++i) {
    int32_t s = 0;
    for (int32_t j = 0; j < iters; ++j) s += (i + j) % 7;
    expect[i] = s;
  }
  {
    Launch l;
    l.name = "loop";
    l.what = "4096 ids, 1000 iterations each";
    l.dim = {threads};
    l.scalars = {ScalarOf<int32_t>("n", {iters})};
    l.arrays = {ArrayArg{"out", {threads}, Bytes(init), Rule::kExact, Bytes(expect)}};
    c.launches.push_back(std::move(l));
  }
  {
    Launch l;
    l.name = "cancel_before_launch";
    l.what = "launch_ctx.cancel = 1 before the launch: no thread runs its body";
    l.dim = {threads};
    l.cancel_before = true;
    l.scalars = {ScalarOf<int32_t>("n", {iters})};
    l.arrays = {ArrayArg{"out", {threads}, Bytes(init), Rule::kUnchanged}};
    c.launches.push_back(std::move(l));
  }
  {
    // 2^31 - 1 iterations per thread would run for minutes at least; the
    // cancel must end it at the next back-edge.
    Launch l;
    l.name = "cancel_while_running";
    l.what = "2^31-1 iterations per id; cancel set from the host 0.5 s after the launch; must end within 10 s";
    l.dim = {1024};
    l.cancel_after_s = 0.5;
    l.deadline_s = 10;
    l.scalars = {ScalarOf<int32_t>("n", {2147483647})};
    std::vector<int32_t> small(1024, -7);
    l.arrays = {ArrayArg{"out", {1024}, Bytes(small), Rule::kUnchanged}};
    c.launches.push_back(std::move(l));
  }
  return c;
}

}  // namespace

std::vector<CheckCase> AllCases() {
  std::vector<CheckCase> cases;
  cases.push_back(Saxpy());
  cases.push_back(BigArgs(63));
  cases.push_back(BigArgs(70));
  cases.push_back(Tid2d());
  cases.push_back(Features());
  cases.push_back(OutOfBounds1d(1));
  cases.push_back(OutOfBounds1d(-1));
  cases.push_back(OutOfBounds2d());
  for (CheckCase& c : AdjointCases()) cases.push_back(std::move(c));
  cases.push_back(LoopAndCancel());
  return cases;
}

}  // namespace warpd::gpu_check
