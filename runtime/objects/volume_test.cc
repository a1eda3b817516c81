// Volume: .nvdb files written by NanoVDB's own writer (none, ZIP and BLOSC
// codecs) of grids built by NanoVDB's GridBuilder with closed-form values,
// read back through the native kernel accessors (volume.h) on the host;
// tiles built by FromTiles; hostile files and grids (truncated, garbage,
// forged sizes and child offsets) rejected with INVALID_ARGUMENT, and a grid
// corrupted after loading still read only inside its bytes.
#include "runtime/objects/volume.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <stdlib.h>
#include <unistd.h>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/object_table.h"

#define NANOVDB_USE_ZIP
#define NANOVDB_USE_BLOSC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <nanovdb/NanoVDB.h>
#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/IO.h>
#pragma GCC diagnostic pop

namespace warpd::runtime {
namespace {

// f(i, j, k) = i + 2j - 3k + 0.5: trilinear interpolation reproduces it
// exactly, so LINEAR samples have a closed form.
float Field(float x, float y, float z) { return x + 2.0f * y - 3.0f * z + 0.5f; }

// A float grid over [-12, 11]^3 holding Field, voxel size 0.5, translated.
nanovdb::GridHandle<nanovdb::HostBuffer> FieldGrid() {
  nanovdb::GridBuilder<float> builder(-100.0f);
  auto acc = builder.getAccessor();
  for (int i = -12; i < 12; ++i)
    for (int j = -12; j < 12; ++j)
      for (int k = -12; k < 12; ++k) acc.setValue(nanovdb::Coord(i, j, k), Field(i, j, k));
  return builder.getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(0.5, nanovdb::Vec3d(1.0, 2.0, 3.0), "field");
}

std::vector<uint8_t> FileOf(const nanovdb::GridHandle<nanovdb::HostBuffer>& h, nanovdb::io::Codec codec) {
  // NanoVDB's stream writer seeks past the end, which a string stream
  // refuses: write a file, private to this process (ctest runs each test
  // in its own process, several at once).
  std::string path = ::testing::TempDir() + "/volume_test_XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return {};
  close(fd);
  nanovdb::io::writeGrid(path, h, codec);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_GT(bytes.size(), 256u) << "the .nvdb file was not written";
  return bytes;
}

class VolumeTest : public ::testing::Test {
 protected:
  struct Ctx {
    std::shared_ptr<const ObjectTable> table;
    wp::launch_ctx ctx;
  };
  Ctx Launch(const std::shared_ptr<Volume>& v) {
    Ctx c;
    c.table = ObjectTable::Empty()->With(7, v);
    std::memset(&c.ctx, 0, sizeof(c.ctx));
    c.ctx.objects = c.table->entries();
    c.ctx.num_objects = 1;
    return c;
  }

  std::shared_ptr<MemoryAccount> account_ = MemoryAccount::Create("test", 0);
  SegmentPool pool_{account_};
};

TEST_F(VolumeTest, ReadsFilesOfEveryCodecAndSamplesClosedForms) {
  const auto handle = FieldGrid();
  for (auto codec : {nanovdb::io::Codec::NONE, nanovdb::io::Codec::ZIP, nanovdb::io::Codec::BLOSC}) {
    SCOPED_TRACE(static_cast<int>(codec));
    const std::vector<uint8_t> file = FileOf(handle, codec);
    auto v = Volume::FromNvdb("cpu", file, 0, pool_);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ((*v)->grid_bytes(), handle.size());
    EXPECT_EQ(std::memcmp((*v)->bytes().data(), handle.data(), handle.size()), 0);
    EXPECT_EQ((*v)->type_name(), "float");
    EXPECT_EQ((*v)->name(), "field");
    EXPECT_EQ((*v)->leaf_count(), 64u);  // voxels -12..11: tiles at -16, -8, 0 and 8 on each axis
    EXPECT_EQ((*v)->voxel_count(), 64u * 512u);
    EXPECT_EQ((*v)->voxel_size()[0], 0.5);
    auto c = Launch(*v);
    // Lookups: stored values inside, the background outside.
    EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 3, -4, 5), Field(3, -4, 5));
    EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 100, 0, 0), -100.0f);
    EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, -12, -12, -12), Field(-12, -12, -12));
    // Another type reads zero (Warp's rule).
    EXPECT_EQ(wp::volume_lookup<wp::int32>(&c.ctx, 1, 7, 3, -4, 5), 0);
    // LINEAR reproduces the linear field; CLOSEST rounds.
    const wp::vec3f p = {{1.25f, -2.75f, 3.5f}};
    EXPECT_NEAR(wp::volume_sample<float>(&c.ctx, 1, 7, p, wp::VOLUME_LINEAR), Field(1.25f, -2.75f, 3.5f), 1e-4);
    EXPECT_EQ(wp::volume_sample<float>(&c.ctx, 1, 7, p, wp::VOLUME_CLOSEST), Field(1, -3, 4));
    wp::vec3f grad{};
    const float val = wp::volume_sample_grad<float>(&c.ctx, 1, 7, p, wp::VOLUME_LINEAR, grad);
    EXPECT_NEAR(val, Field(1.25f, -2.75f, 3.5f), 1e-4);
    EXPECT_NEAR(grad.c[0], 1.0f, 1e-5);
    EXPECT_NEAR(grad.c[1], 2.0f, 1e-5);
    EXPECT_NEAR(grad.c[2], -3.0f, 1e-5);
    // The map: world = 0.5 * index + (1, 2, 3), and back.
    const wp::vec3f w = wp::volume_index_to_world(&c.ctx, 1, 7, p);
    EXPECT_FLOAT_EQ(w.c[0], 1.625f);
    EXPECT_FLOAT_EQ(w.c[1], 0.625f);
    EXPECT_FLOAT_EQ(w.c[2], 4.75f);
    const wp::vec3f back = wp::volume_world_to_index(&c.ctx, 1, 7, w);
    EXPECT_FLOAT_EQ(back.c[0], p.c[0]);
    // Voxel indices agree with Voxels().
    std::vector<int32_t> voxels(3 * (*v)->voxel_count());
    (*v)->Voxels(voxels.data());
    for (size_t n : {size_t{0}, size_t{777}, size_t{64 * 512 - 1}}) {
      EXPECT_EQ(wp::volume_lookup_index(&c.ctx, 1, 7, voxels[3 * n], voxels[3 * n + 1], voxels[3 * n + 2]),
                static_cast<int32_t>(n));
    }
    EXPECT_EQ(wp::volume_lookup_index(&c.ctx, 1, 7, 1000, 0, 0), -1);
    EXPECT_EQ(c.ctx.fault.flag, 0);
    // An unknown id faults.
    EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 9, 8, 0, 0, 0), 0.0f);
    EXPECT_EQ(c.ctx.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
    EXPECT_EQ(c.ctx.fault.line, 9);
  }
}

// Warp's transform is index-to-world, row-major (world = mat * index + t):
// the grid keeps it as given, its voxel size is mat * (1, 1, 1), and the
// kernels' maps follow it (a rotation tells a transposed matrix apart).
TEST_F(VolumeTest, ATransformIsKeptAsGivenAndMapsIndexToWorld) {
  const std::vector<std::array<int32_t, 3>> voxels = {{1, 1, 2}};
  auto v = Volume::FromTiles("cpu", wp::VOLUME_VOXEL_INDEX, voxels, {}, {0, -1, 0, 1, 0, 0, 0, 0, 2}, {0.5, 0, 0},
                             pool_);
  ASSERT_TRUE(v.ok()) << v.status();
  const std::array<float, 9> want = {0, -1, 0, 1, 0, 0, 0, 0, 2};
  EXPECT_EQ((*v)->transform(), want);
  EXPECT_EQ((*v)->voxel_size(), (std::array<double, 3>{-1, 1, 2}));
  auto c = Launch(*v);
  const wp::vec3f world = wp::volume_index_to_world(&c.ctx, 1, 7, wp::vec3f{{1, 1, 2}});
  EXPECT_EQ(world.c[0], -0.5f);  // 0*1 - 1*1 + 0*2 + 0.5
  EXPECT_EQ(world.c[1], 1.0f);
  EXPECT_EQ(world.c[2], 4.0f);
  const wp::vec3f index = wp::volume_world_to_index(&c.ctx, 1, 7, world);
  EXPECT_EQ(index.c[0], 1.0f);
  EXPECT_EQ(index.c[1], 1.0f);
  EXPECT_EQ(index.c[2], 2.0f);
}

TEST_F(VolumeTest, TilesAreAllocatedActiveWithTheBackgroundAndStoresLand) {
  const std::vector<std::array<int32_t, 3>> tiles = {{0, 0, 0}, {-8, 8, 16}};
  const float bg = -123.0f;
  auto v = Volume::FromTiles("cpu", wp::VOLUME_FLOAT32, tiles,
                             absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4),
                             {0.1, 0, 0, 0, 0.2, 0, 0, 0, 0.3}, {1, 2, 3}, pool_);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)->leaf_count(), 2u);
  EXPECT_EQ((*v)->type_name(), "float");
  std::vector<int32_t> t(6);
  (*v)->Tiles(t.data());
  std::sort(t.begin(), t.end());
  EXPECT_EQ(t, (std::vector<int32_t>{-8, 0, 0, 0, 8, 16}));
  auto c = Launch(*v);
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 3, 4, 5), bg);
  wp::volume_store(&c.ctx, 1, 7, 3, 4, 5, 42.0f);
  wp::volume_store(&c.ctx, 1, 7, 300, 4, 5, 42.0f);  // no leaf there: nothing stored
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 3, 4, 5), 42.0f);
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 300, 4, 5), bg);
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, -1, 9, 17), bg);
  // The grid is charged to the pool before it is built: tiles in eight
  // different 4096^3 blocks need eight upper nodes (over 2 MiB for floats).
  SegmentPool small(MemoryAccount::Create("small", 1 << 20));
  std::vector<std::array<int32_t, 3>> far;
  for (int i = 0; i < 8; ++i) far.push_back({(i & 1) * 8192, (i & 2) * 4096, (i & 4) * 2048});
  EXPECT_EQ(Volume::FromTiles("cpu", wp::VOLUME_FLOAT32, far,
                              absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4),
                              {1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}, small)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FLOAT_EQ((*v)->transform()[4], 0.2f);
  EXPECT_FLOAT_EQ((*v)->translation()[2], 3.0f);
  // A singular transform or a background of the wrong size is refused.
  EXPECT_EQ(Volume::FromTiles("cpu", wp::VOLUME_FLOAT32, tiles,
                              absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4),
                              {0, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}, pool_)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Volume::FromTiles("cpu", wp::VOLUME_VEC3F, tiles,
                              absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4),
                              {1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}, pool_)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(VolumeTest, VoxelIndexVolumesNumberExactlyTheirVoxels) {
  // Three voxels in one leaf, one far away (another upper node); a repeat.
  const std::vector<std::array<int32_t, 3>> voxels = {{1, 2, 3}, {0, 0, 0}, {7, 7, 7}, {5000, -3, 9}, {1, 2, 3}};
  const std::array<double, 9> unit = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  auto v = Volume::FromTiles("cpu", wp::VOLUME_VOXEL_INDEX, voxels, {}, unit, {0, 0, 0}, pool_);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)->type_name(), "OnIndex");
  EXPECT_EQ((*v)->voxel_count(), 4u);
  std::vector<int32_t> ijk(12);
  (*v)->Voxels(ijk.data());
  auto c = Launch(*v);
  std::vector<std::array<int32_t, 3>> listed;
  for (int i = 0; i < 4; ++i) {
    listed.push_back({ijk[3 * i], ijk[3 * i + 1], ijk[3 * i + 2]});
    EXPECT_EQ(wp::volume_lookup_index(&c.ctx, 1, 7, ijk[3 * i], ijk[3 * i + 1], ijk[3 * i + 2]), i);
  }
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<std::array<int32_t, 3>>{{0, 0, 0}, {1, 2, 3}, {7, 7, 7}, {5000, -3, 9}}));
  // Inactive voxels of an allocated leaf, and unallocated ones, have no index.
  EXPECT_EQ(wp::volume_lookup_index(&c.ctx, 1, 7, 1, 2, 4), -1);
  EXPECT_EQ(wp::volume_lookup_index(&c.ctx, 1, 7, 100, 2, 4), -1);
  EXPECT_EQ(c.ctx.fault.flag, 0);
  // No voxels, a background, or more voxels than warpd builds are refused.
  EXPECT_EQ(Volume::FromTiles("cpu", wp::VOLUME_VOXEL_INDEX, {}, {}, unit, {0, 0, 0}, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  const float bg = 1.0f;
  EXPECT_EQ(Volume::FromTiles("cpu", wp::VOLUME_VOXEL_INDEX, voxels,
                              absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4), unit, {0, 0, 0},
                              pool_)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(VolumeTest, HostileFilesAreRefused) {
  const auto handle = FieldGrid();
  const std::vector<uint8_t> file = FileOf(handle, nanovdb::io::Codec::ZIP);
  ASSERT_GT(file.size(), 256u);
  // Every truncation fails cleanly.
  for (size_t n : {size_t{0}, size_t{8}, size_t{16}, size_t{100}, size_t{200}, file.size() / 2, file.size() - 1}) {
    auto v = Volume::FromNvdb("cpu", absl::Span<const uint8_t>(file.data(), n), 0, pool_);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << n << " " << v.status();
  }
  // Garbage.
  std::vector<uint8_t> garbage(4096, 0xab);
  EXPECT_EQ(Volume::FromNvdb("cpu", garbage, 0, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  // A huge grid size in the metadata is refused before any allocation.
  std::vector<uint8_t> huge = file;
  const uint64_t big = uint64_t{1} << 60;
  std::memcpy(huge.data() + 16, &big, 8);  // MetaData::gridSize
  EXPECT_EQ(Volume::FromNvdb("cpu", huge, 0, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  // No such grid.
  EXPECT_EQ(Volume::FromNvdb("cpu", file, 1, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  // Random byte flips in an uncompressed file: refused or loaded, never a
  // crash, and every lookup of a loaded one stays inside the grid (ASan).
  const std::vector<uint8_t> plain = FileOf(handle, nanovdb::io::Codec::NONE);
  ASSERT_GT(plain.size(), 256u);
  uint32_t seed = 12345;
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<uint8_t> f = plain;
    for (int flips = 0; flips < 4; ++flips) {
      seed = seed * 1664525u + 1013904223u;
      // Half the trials hit the file and grid headers and the tree's first
      // bytes, where the offsets and counts live.
      const size_t span = trial % 2 ? plain.size() : 16 + 176 + 6 + 672 + 64 + 4096;
      const size_t at = (seed >> 8) % span;
      seed = seed * 1664525u + 1013904223u;
      f[at] = static_cast<uint8_t>(seed >> 24);
    }
    auto v = Volume::FromNvdb("cpu", f, 0, pool_);
    if (!v.ok()) {
      EXPECT_TRUE(v.status().code() == absl::StatusCode::kInvalidArgument ||
                  v.status().code() == absl::StatusCode::kUnimplemented)
          << v.status();
      continue;
    }
    auto c = Launch(*v);
    for (int i = -20; i < 20; i += 3)
      (void)wp::volume_sample<float>(&c.ctx, 1, 7, wp::vec3f{{i * 0.7f, i * 0.3f, -i * 0.5f}}, wp::VOLUME_LINEAR);
  }
}

TEST_F(VolumeTest, ForgedOffsetsAreRefusedAtLoadAndIgnoredByKernels) {
  const auto handle = FieldGrid();
  std::vector<uint8_t> grid(handle.data(), handle.data() + handle.size());
  wp::volume_t desc{};
  // Align the copy (the check requires 32-byte aligned grids).
  auto buf = *pool_.Allocate(grid.size(), "test");
  std::memcpy(buf->data(), grid.data(), grid.size());
  absl::Span<const uint8_t> g(reinterpret_cast<const uint8_t*>(buf->data()), grid.size());
  ASSERT_TRUE(Volume::Check(g, &desc).ok());
  // Forge every root tile's child offset: refused.
  auto forge = [&](int64_t forged) {
    for (uint32_t t = 0; t < desc.root_tiles; ++t)
      std::memcpy(buf->data() + desc.root + desc.root_header + uint64_t{t} * desc.tile_bytes + desc.tile_child, &forged,
                  8);
  };
  forge(int64_t{1} << 40);
  wp::volume_t d2{};
  EXPECT_EQ(Volume::Check(g, &d2).code(), absl::StatusCode::kInvalidArgument);
  // A volume whose bytes are forged after loading (as a store through a
  // forged leaf could): the kernel walk reads the background, nothing else.
  auto v = std::make_shared<Volume>("cpu", buf, grid.size(), desc);
  auto c = Launch(v);
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 0, 0, 0), -100.0f);
  forge(-static_cast<int64_t>(desc.root) - 64);  // before the grid
  EXPECT_EQ(wp::volume_lookup<float>(&c.ctx, 1, 7, 0, 0, 0), -100.0f);
  EXPECT_EQ(c.ctx.fault.flag, 0);
}

}  // namespace
}  // namespace warpd::runtime
