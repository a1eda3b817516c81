// Loads a module the Python client saved (warpd.save_module) and launches
// its kernel `wave`, written in Python as
//
//   @wp.kernel
//   def wave(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), k: float, steps: int):
//       i = wp.tid()
//       s = float(0.0)
//       for j in range(steps):
//           s += wp.sin(k * wp.length(p[i]) * float(j + 1))
//       out[i] = s
//
// over points p[i] = (0.01 i, 1, -0.5), k = 0.75, steps = 5. With --grad it
// also runs the kernel's adjoint (LaunchAdjoint) with out.grad = 1, which
// gives p.grad = d(out[i])/d(p[i]) (the module's backward pass: saved with
// it, wp.save_module(..., backward=True), or compiled when first needed).
//
//   load_module MODULE_FILE [--out out.f32] [--grad pgrad.f32]
#include <cstdio>
#include <vector>

#include "example_util.h"
#include "warpd/client.h"

namespace ir = warpd::ir;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODULE_FILE [--out out.f32]\n", argv[0]);
    return 2;
  }
  auto client = Check(warpd::Client::Connect(), "Connect");
  warpd::Module m = Check(client->LoadModuleFile(argv[1]), "LoadModuleFile");
  warpd::Kernel wave = Check(m.kernel("wave"), "kernel");
  std::printf("loaded module '%s' from %s: kernel %s with %d parameters\n", m.ir().name().c_str(), argv[1],
              wave.name().c_str(), wave.info().params_size());

  struct Vec3 {
    float x, y, z;
  };
  const int64_t n = 1000;
  std::vector<Vec3> points(n);
  for (int64_t i = 0; i < n; ++i) points[i] = {0.01f * static_cast<float>(i), 1.0f, -0.5f};
  const std::string grad_path = Flag(argc, argv, "--grad");
  const bool grad = !grad_path.empty();
  warpd::Array p = Check(client->ArrayFrom<Vec3>(ir::Vec(3, ir::Float32()), points, {}, "cpu", grad), "upload p");
  warpd::Array out = Check(client->CreateArray(ir::Float32(), {n}, warpd::Init::kZeros, "cpu", grad), "create out");
  Check(client->Launch(wave, {n}, {p, out, 0.75, 5}), "Launch");
  std::vector<float> values = Check(client->Download<float>(out), "Download");
  std::printf("out[0]=%g out[1]=%g out[%ld]=%g\n", values[0], values[1], static_cast<long>(n - 1), values[n - 1]);
  WriteFloats(Flag(argc, argv, "--out"), values);
  if (grad) {
    Check(client->FillValue(out.grad(), 1.0f), "fill out.grad");
    // No adjoints given: each array's own gradient, as in Warp.
    Check(client->LaunchAdjoint(wave, {n}, {p, out, 0.75, 5}, {}), "LaunchAdjoint");
    std::vector<float> pgrad = Check(client->Download<float>(p.grad()), "Download p.grad");
    std::printf("p.grad[0]=(%g, %g, %g)\n", pgrad[0], pgrad[1], pgrad[2]);
    WriteFloats(grad_path, pgrad);
  }
  return 0;
}
