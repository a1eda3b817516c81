// saxpy with the IR builder: y <- a * x + y over 100,000 floats, once as a
// launch and then as a captured graph of three launches replayed twice, so
// y = 1 + 7 * a * x at the end. On the daemon's host the arrays are mapped
// into this process (zero-copy); the mapped view and a download agree.
//
//   saxpy [--out y.f32] [--dump-ir module.pb]
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "example_util.h"
#include "warpd/client.h"

namespace ir = warpd::ir;

int main(int argc, char** argv) {
  // The kernel, as the Python client would send
  //   @wp.kernel
  //   def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
  //       i = wp.tid()
  //       y[i] = a * x[i] + y[i]
  ir::KernelBuilder k("saxpy");
  ir::Expr a = k.Param("a", ir::Float32());
  ir::Expr x = k.Param("x", ir::ArrayOf(ir::Float32()));
  ir::Expr y = k.Param("y", ir::ArrayOf(ir::Float32()));
  ir::Expr i = k.Let("i", ir::Tid());
  k.Assign(y[i], a * x[i] + y[i]);
  warpd::v1::Module module = ir::ModuleBuilder("examples.saxpy").Add(k).Build();
  if (std::string path = Flag(argc, argv, "--dump-ir"); !path.empty()) {
    std::ofstream(path, std::ios::binary) << module.SerializeAsString();
  }

  auto client = Check(warpd::Client::Connect(), "Connect");
  std::printf("connected to %s (daemon %s), session open, local=%d\n", client->address().c_str(),
              client->server_info().version().c_str(), client->local() ? 1 : 0);

  const int64_t n = 100000;
  const float alpha = 2.5f;
  std::vector<float> xs(n);
  for (int64_t j = 0; j < n; ++j) xs[j] = static_cast<float>(j) * 0.001f;
  warpd::Array xa = Check(client->ArrayFrom<float>(ir::Float32(), xs), "upload x");
  warpd::Array ya = Check(client->CreateArray(ir::Float32(), {n}, warpd::Init::kEmpty), "create y");
  Check(client->FillValue(ya, 1.0f), "fill y");

  warpd::Module m = Check(client->LoadModule(module), "LoadModule");
  warpd::Kernel saxpy = Check(m.kernel("saxpy"), "kernel");
  Check(client->Launch(saxpy, {n}, {alpha, xa, ya}), "Launch");

  Check(client->CaptureBegin(), "CaptureBegin");
  for (int r = 0; r < 3; ++r) Check(client->Launch(saxpy, {n}, {alpha, xa, ya}), "captured Launch");
  warpd::Graph g = Check(client->CaptureEnd(), "CaptureEnd");
  Check(client->Replay(g), "Replay");
  Check(client->Replay(g), "Replay");

  std::vector<float> out = Check(client->Download<float>(ya), "Download");
  int mapped = 0;
  if (client->local()) {
    warpd::MappedArray view = Check(client->Map(ya), "Map");
    auto span = view.as<float>();
    for (int64_t j = 0; j < n; ++j) {
      if (span[j] != out[j]) {
        std::fprintf(stderr, "mapped y[%ld] = %g, downloaded %g\n", static_cast<long>(j), span[j], out[j]);
        return 1;
      }
    }
    mapped = 1;
  }
  std::printf("mapped=%d y[0]=%g y[1]=%g y[%ld]=%g\n", mapped, out[0], out[1], static_cast<long>(n - 1), out[n - 1]);
  WriteFloats(Flag(argc, argv, "--out"), out);
  return 0;
}
