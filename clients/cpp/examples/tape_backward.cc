// Gradients through two kernels with a Tape: y = x * x, then
// loss = sum(sin(y)) (atomic_add), so d loss / d x = 2 x cos(x^2).
// Built with the IR builder; Backward() compiles the kernels' backward pass
// the first time and runs the adjoints on the daemon.
//
//   tape_backward [--out grad.f32]
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_util.h"
#include "warpd/client.h"

namespace ir = warpd::ir;

int main(int argc, char** argv) {
  ir::KernelBuilder square("square");
  {
    ir::Expr x = square.Param("x", ir::ArrayOf(ir::Float32()));
    ir::Expr y = square.Param("y", ir::ArrayOf(ir::Float32()));
    ir::Expr i = square.Let("i", ir::Tid());
    square.Assign(y[i], x[i] * x[i]);
  }
  ir::KernelBuilder sum_sin("sum_sin");
  {
    ir::Expr y = sum_sin.Param("y", ir::ArrayOf(ir::Float32()));
    ir::Expr loss = sum_sin.Param("loss", ir::ArrayOf(ir::Float32()));
    ir::Expr i = sum_sin.Let("i", ir::Tid());
    sum_sin.Eval(ir::Call("atomic_add", {loss, 0, ir::Call("sin", {y[i]})}));
  }
  warpd::v1::Module module = ir::ModuleBuilder("examples.tape").Add(square).Add(sum_sin).Build();

  auto client = Check(warpd::Client::Connect(), "Connect");
  warpd::Module m = Check(client->LoadModule(module), "LoadModule");
  warpd::Kernel k_square = Check(m.kernel("square"), "kernel square");
  warpd::Kernel k_sum = Check(m.kernel("sum_sin"), "kernel sum_sin");

  const int64_t n = 64;
  std::vector<float> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = -1.5f + 3.0f * static_cast<float>(i) / static_cast<float>(n - 1);
  warpd::Array x = Check(client->ArrayFrom<float>(ir::Float32(), xs, {}, "cpu", /*requires_grad=*/true), "x");
  warpd::Array y = Check(client->CreateArray(ir::Float32(), {n}, warpd::Init::kZeros, "cpu", true), "y");
  warpd::Array loss = Check(client->CreateArray(ir::Float32(), {1}, warpd::Init::kZeros, "cpu", true), "loss");

  warpd::Tape tape(*client);
  {
    auto recording = Check(tape.Record(), "Record");
    Check(client->Launch(k_square, {n}, {x, y}), "Launch square");
    Check(client->Launch(k_sum, {n}, {y, loss}), "Launch sum_sin");
  }
  Check(tape.Backward(loss), "Backward");
  std::vector<float> grad = Check(client->Download<float>(x.grad()), "Download grad");
  std::vector<float> l = Check(client->Download<float>(loss), "Download loss");
  double reference_loss = 0;
  for (float v : xs) reference_loss += std::sin(static_cast<double>(v) * v);
  std::printf("launches recorded=%zu loss=%.6f (sum sin(x^2) = %.6f) grad[0]=%g grad[%ld]=%g\n", tape.size(), l[0],
              reference_loss, grad[0], static_cast<long>(n - 1), grad[n - 1]);
  WriteFloats(Flag(argc, argv, "--out"), grad);

  // Zeroing the tape's gradients leaves x.grad all zeros.
  Check(tape.Zero(), "Zero");
  std::vector<float> zeroed = Check(client->Download<float>(x.grad()), "Download zeroed grad");
  for (float v : zeroed) {
    if (v != 0.0f) {
      std::fprintf(stderr, "Tape::Zero left a gradient of %g\n", v);
      return 1;
    }
  }
  std::printf("zeroed ok\n");
  return 0;
}
