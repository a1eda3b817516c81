// The builtin table: random numbers and noise (Warp's generators, same numbers).
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddRandom(Builder& b) {
  b.Group("Random", "warpd/native/rand.h");
  b.Add("rand_init", "seed: int32", "uint32").NoDiff();
  b.Add("rand_init", "seed: int32, offset: int32", "uint32").NoDiff();
  b.Add("randi", "state: uint32", "int32").NoDiff();
  b.Add("randi", "state: uint32, low: int32, high: int32", "int32").NoDiff();
  b.Add("randu", "state: uint32", "uint32").NoDiff();
  b.Add("randu", "state: uint32, low: uint32, high: uint32", "uint32").NoDiff();
  b.Add("randf", "state: uint32", "float32").NoDiff();
  b.Add("randf", "state: uint32, low: float32, high: float32", "float32").NoDiff();
  b.Add("randn", "state: uint32", "float32").NoDiff();
  b.Add("sample_cdf", "state: uint32, cdf: array(float32, 1)", "int32").NoDiff();
  for (const char* f : {"sample_triangle", "sample_unit_ring", "sample_unit_disk", "sample_unit_square"})
    b.Add(f, "state: uint32", "vec(2, float32)").NoDiff();
  for (const char* f : {"sample_unit_sphere_surface", "sample_unit_sphere", "sample_unit_hemisphere_surface",
                        "sample_unit_hemisphere", "sample_unit_cube"})
    b.Add(f, "state: uint32", "vec(3, float32)").NoDiff();
  b.Add("poisson", "state: uint32, lam: float32", "uint32").NoDiff();

  b.Group("Random", "warpd/native/noise.h");
  b.Add("noise", "state: uint32, x: float32", "float32").Diff();
  b.Add("noise", "state: uint32, xy: vec(2, float32)", "float32").Diff();
  b.Add("noise", "state: uint32, xyz: vec(3, float32)", "float32").Diff();
  b.Add("noise", "state: uint32, xyzt: vec(4, float32)", "float32").Diff();
  b.Add("pnoise", "state: uint32, x: float32, px: int32", "float32").Diff();
  b.Add("pnoise", "state: uint32, xy: vec(2, float32), px: int32, py: int32", "float32").Diff();
  b.Add("pnoise", "state: uint32, xyz: vec(3, float32), px: int32, py: int32, pz: int32", "float32").Diff();
  b.Add("pnoise", "state: uint32, xyzt: vec(4, float32), px: int32, py: int32, pz: int32, pt: int32", "float32").Diff();
  // Warp's defaults (octaves=1, lacunarity=2.0, gain=0.5): the shorter forms
  // pass them, so curlnoise(state, xy) and curlnoise(state, xy, 4) work.
  struct Curl {
    const char* point;
    const char* result;
  };
  for (const Curl& c : {Curl{"xy: vec(2, float32)", "vec(2, float32)"}, Curl{"xyz: vec(3, float32)", "vec(3, float32)"},
                        Curl{"xyzt: vec(4, float32)", "vec(3, float32)"}}) {
    const std::string head = std::string("state: uint32, ") + c.point;
    b.Add("curlnoise", head + ", octaves: uint32, lacunarity: float32, gain: float32", c.result).Diff();
    // The shorter forms' adjoints (adj_noise.h) have their arity and the
    // same defaults.
    b.Add("curlnoise", head + ", octaves: uint32, lacunarity: float32", c.result).Diff()
        .Cpp("wp::curlnoise($0, $1, $2, $3, 0.5f)").Adj("wp::adj_curlnoise");
    b.Add("curlnoise", head + ", octaves: uint32", c.result).Diff().Cpp("wp::curlnoise($0, $1, $2, 2.0f, 0.5f)")
        .Adj("wp::adj_curlnoise");
    b.Add("curlnoise", head, c.result).Diff().Cpp("wp::curlnoise($0, $1, 1u, 2.0f, 0.5f)").Adj("wp::adj_curlnoise");
  }
}

}  // namespace warpd::builtins::internal
