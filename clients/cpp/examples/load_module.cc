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
// over points p[i] = (0.01 i, 1, -0.5), k = 0.75, steps = 5.
//
//   load_module MODULE_FILE [--out out.f32]
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
  warpd::Array p = Check(client->ArrayFrom<Vec3>(ir::Vec(3, ir::Float32()), points), "upload p");
  warpd::Array out = Check(client->CreateArray(ir::Float32(), {n}), "create out");
  Check(client->Launch(wave, {n}, {p, out, 0.75, 5}), "Launch");
  std::vector<float> values = Check(client->Download<float>(out), "Download");
  std::printf("out[0]=%g out[1]=%g out[%ld]=%g\n", values[0], values[1], static_cast<long>(n - 1), values[n - 1]);
  WriteFloats(Flag(argc, argv, "--out"), values);
  return 0;
}
