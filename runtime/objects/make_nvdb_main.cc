// warpd-make-nvdb: writes small .nvdb files with closed-form values, built
// with NanoVDB's own GridBuilder and written by its own writer, for the
// volume tests (tests/e2e/test_volume.py).
//
//   warpd-make-nvdb OUT.nvdb sphere|linear|int|vec [none|zip|blosc]
//
//   sphere  float: |x| - 2 (world x = 0.25 * ijk + (0.5, -0.25, 1)) over ijk in [-12, 11]^3, background 3
//   linear  float: i + 2j - 3k (voxel size 1) over [-16, 15]^3, background -1000
//   int     int32: i * j * k over [-10, 10]^3, background 10
//   vec     Vec3f: (i + 2j + 3k, 4i + 5j + 6k, 7i + 8j + 9k) over [-10, 10]^3, background (10.8, -4.13, 10.26)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#define NANOVDB_USE_ZIP
#define NANOVDB_USE_BLOSC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <nanovdb/NanoVDB.h>
#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/IO.h>
#pragma GCC diagnostic pop

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.nvdb sphere|linear|int|vec [none|zip|blosc]\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1], kind = argv[2], codec_name = argc > 3 ? argv[3] : "none";
  nanovdb::io::Codec codec = nanovdb::io::Codec::NONE;
  if (codec_name == "zip") codec = nanovdb::io::Codec::ZIP;
  if (codec_name == "blosc") codec = nanovdb::io::Codec::BLOSC;
  try {
    if (kind == "sphere") {
      nanovdb::GridBuilder<float> b(3.0f, nanovdb::GridClass::LevelSet);
      auto acc = b.getAccessor();
      for (int i = -12; i < 12; ++i)
        for (int j = -12; j < 12; ++j)
          for (int k = -12; k < 12; ++k) {
            const double x = 0.25 * i, y = 0.25 * j, z = 0.25 * k;
            acc.setValue(nanovdb::Coord(i, j, k), static_cast<float>(std::sqrt(x * x + y * y + z * z) - 2.0));
          }
      auto h = b.getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(0.25, nanovdb::Vec3d(0.5, -0.25, 1.0), "sphere");
      nanovdb::io::writeGrid(out, h, codec);
    } else if (kind == "linear") {
      nanovdb::GridBuilder<float> b(-1000.0f);
      auto acc = b.getAccessor();
      for (int i = -16; i < 16; ++i)
        for (int j = -16; j < 16; ++j)
          for (int k = -16; k < 16; ++k) acc.setValue(nanovdb::Coord(i, j, k), float(i + 2 * j - 3 * k));
      auto h = b.getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(1.0, nanovdb::Vec3d(0.0), "linear");
      nanovdb::io::writeGrid(out, h, codec);
    } else if (kind == "int") {
      nanovdb::GridBuilder<int32_t> b(10);
      auto acc = b.getAccessor();
      for (int i = -10; i <= 10; ++i)
        for (int j = -10; j <= 10; ++j)
          for (int k = -10; k <= 10; ++k) acc.setValue(nanovdb::Coord(i, j, k), i * j * k);
      auto h = b.getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(0.25, nanovdb::Vec3d(0.0), "int");
      nanovdb::io::writeGrid(out, h, codec);
    } else if (kind == "vec") {
      nanovdb::GridBuilder<nanovdb::Vec3f> b(nanovdb::Vec3f(10.8f, -4.13f, 10.26f));
      auto acc = b.getAccessor();
      for (int i = -10; i <= 10; ++i)
        for (int j = -10; j <= 10; ++j)
          for (int k = -10; k <= 10; ++k)
            acc.setValue(nanovdb::Coord(i, j, k), nanovdb::Vec3f(float(i + 2 * j + 3 * k), float(4 * i + 5 * j + 6 * k),
                                                                 float(7 * i + 8 * j + 9 * k)));
      auto h = b.getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(0.25, nanovdb::Vec3d(0.0), "vec");
      nanovdb::io::writeGrid(out, h, codec);
    } else {
      std::fprintf(stderr, "unknown kind %s\n", kind.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warpd-make-nvdb: %s\n", e.what());
    return 1;
  }
  return 0;
}
