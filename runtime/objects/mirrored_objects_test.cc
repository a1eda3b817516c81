// Objects on a device the host cannot address (device_mirror.h): meshes and
// BVHs (MirroredTree), hash grids and volumes built on the host and
// published to a mirror in a stand-in device memory that is really host
// memory (testing/host_device_memory.h), so the native queries run here on
// what a GPU's kernels would read: their answers must equal those of the
// same object made on the CPU, and every pointer in a published
// descriptor must be device memory (the mirror or the client's arrays),
// never the host's working copies.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/hash_grid.h"
#include "runtime/objects/mesh.h"
#include "runtime/objects/mirrored_tree.h"
#include "runtime/objects/object_table.h"
#include "runtime/objects/testing/host_device_memory.h"
#include "runtime/objects/volume.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;
using V = wp::vec3f;

class MirroredObjectsTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Array> Gpu(types::TypeRef dtype, const void* data, size_t n) {
    return gpu_.Make(dtype, data, n, device_pool_);
  }
  std::shared_ptr<const Array> Cpu(types::TypeRef dtype, const void* data, size_t n, size_t elem) {
    ArrayLayout layout = *MakeArrayLayout(dtype, {static_cast<int64_t>(n)});
    auto buffer = *host_pool_.Allocate(std::max<uint64_t>(1, n * elem), "test");
    if (n) std::memcpy(buffer->data(), data, n * elem);
    return std::make_shared<Array>("cpu", layout, std::move(buffer));
  }
  // A launch context whose table holds `object` under id 7.
  wp::launch_ctx Ctx(std::shared_ptr<const GeometryObject> object, std::shared_ptr<const ObjectTable>* keep) {
    *keep = ObjectTable::Empty()->With(7, std::move(object));
    wp::launch_ctx ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    ctx.objects = (*keep)->entries();
    ctx.num_objects = 1;
    return ctx;
  }
  // Whether [p, p + bytes) lies in a buffer of `a`, or of the mirror block
  // `[base, base + size)`.
  static bool Within(const void* p, uint64_t bytes, uint64_t base, uint64_t size) {
    const uint64_t at = reinterpret_cast<uint64_t>(p);
    return at >= base && at + bytes <= base + size;
  }

  std::shared_ptr<MemoryAccount> host_account_ = MemoryAccount::Create("host", 0);
  std::shared_ptr<MemoryAccount> device_account_ = MemoryAccount::Create("device", 0);
  SegmentPool host_pool_{host_account_};
  SegmentPool device_pool_{device_account_};
  testing::HostDeviceMemory gpu_;
};

// A noisy sphere and its triangles (a latitude-longitude grid).
void Sphere(int rings, int segs, uint32_t seed, std::vector<V>* pts, std::vector<int>* idx) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(-0.05f, 0.05f);
  for (int i = 0; i <= rings; ++i) {
    const float th = static_cast<float>(M_PI) * i / rings;
    for (int j = 0; j < segs; ++j) {
      const float ph = 2.0f * static_cast<float>(M_PI) * j / segs;
      const float r = 1.0f + noise(rng);
      pts->push_back(V{{r * std::sin(th) * std::cos(ph), r * std::sin(th) * std::sin(ph), r * std::cos(th)}});
    }
  }
  for (int i = 0; i < rings; ++i)
    for (int j = 0; j < segs; ++j) {
      const int a = i * segs + j, b = i * segs + (j + 1) % segs, c = a + segs, d = b + segs;
      idx->insert(idx->end(), {a, c, d, a, d, b});
    }
}

TEST_F(MirroredObjectsTest, AMirroredMeshAnswersAsTheSameMeshOnTheCpu) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(24, 32, 1, &p, &idx);
  const auto vec3 = types::Vector(3, ScalarKind::kFloat32);
  const auto i32 = types::Scalar(ScalarKind::kInt32);
  auto points = Gpu(vec3, p.data(), p.size());
  auto indices = Gpu(i32, idx.data(), idx.size());
  auto velocities = Gpu(vec3, p.data(), p.size());
  const uint64_t device_before = device_account_->used();
  auto mesh = MirroredTree::CreateMesh(gpu_, "gpu", points, indices, velocities, 4, host_pool_, device_pool_);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  // The mirror is the session's device memory; the host copies its host memory.
  EXPECT_GT(device_account_->used(), device_before);
  std::shared_ptr<const ObjectTable> keep;
  wp::launch_ctx ctx = Ctx(*mesh, &keep);
  // Published unbuilt: a query finds nothing and touches nothing.
  const V probe{{0.3f, 1.5f, -0.2f}};
  EXPECT_FALSE(wp::mesh_query_point_no_sign(&ctx, 1, 7, probe, 10.0f).result);
  EXPECT_EQ(ctx.fault.flag, 0);

  ASSERT_TRUE((*mesh)->Rebuild(BvhSplit::kSah).ok());
  auto cpu = Mesh::Create("cpu", Cpu(vec3, p.data(), p.size(), sizeof(V)), Cpu(i32, idx.data(), idx.size(), 4),
                          Cpu(vec3, p.data(), p.size(), sizeof(V)), 4, host_pool_);
  ASSERT_TRUE(cpu.ok());
  ASSERT_TRUE((*cpu)->Rebuild(BvhSplit::kSah).ok());
  std::shared_ptr<const ObjectTable> keep_cpu;
  wp::launch_ctx cpu_ctx = Ctx(*cpu, &keep_cpu);

  // Every pointer of the published descriptor is device memory.
  const auto* d = static_cast<const wp::mesh_t*>((*mesh)->descriptor());
  const uint64_t base = reinterpret_cast<uint64_t>(d);
  EXPECT_EQ(reinterpret_cast<uint64_t>(d->points), points->address());
  EXPECT_EQ(reinterpret_cast<uint64_t>(d->indices), indices->address());
  EXPECT_EQ(reinterpret_cast<uint64_t>(d->velocities), velocities->address());
  EXPECT_EQ(d->num_velocities, static_cast<int>(p.size()));
  const uint64_t span = 1 << 20;
  EXPECT_TRUE(Within(d->bvh.nodes, d->bvh.num_nodes * sizeof(wp::bvh_node_t), base, span));
  EXPECT_TRUE(Within(d->bvh.item_lowers, idx.size() / 3 * sizeof(V), base, span));
  EXPECT_TRUE(Within(d->bvh.primitives, idx.size() / 3 * 4, base, span));
  EXPECT_EQ(d->bvh.num_nodes, (*cpu)->native().bvh.num_nodes);
  EXPECT_EQ(d->average_edge_length, (*cpu)->native().average_edge_length);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int k = 0; k < 200; ++k) {
    const V q{{u(rng), u(rng), u(rng)}};
    const wp::mesh_query_point_t a = wp::mesh_query_point(&ctx, 1, 7, q, 10.0f);
    const wp::mesh_query_point_t b = wp::mesh_query_point(&cpu_ctx, 1, 7, q, 10.0f);
    ASSERT_EQ(a.result, b.result);
    EXPECT_EQ(a.face, b.face);
    EXPECT_EQ(a.u, b.u);
    EXPECT_EQ(a.v, b.v);
    EXPECT_EQ(a.sign, b.sign);
    const V dir = wp::normalize(V{{-q.c[0], -q.c[1], -q.c[2]}});
    const wp::mesh_query_ray_t r = wp::mesh_query_ray(&ctx, 1, 7, q, dir, 100.0f, -1);
    const wp::mesh_query_ray_t s = wp::mesh_query_ray(&cpu_ctx, 1, 7, q, dir, 100.0f, -1);
    ASSERT_EQ(r.result, s.result);
    EXPECT_EQ(r.face, s.face);
    EXPECT_EQ(r.t, s.t);
  }
  EXPECT_EQ(ctx.fault.flag, 0);
  // mesh_eval_velocity reads the device's velocities through the descriptor.
  const V vel = wp::mesh_eval_velocity(&ctx, 1, 7, 5, 0.25f, 0.25f);
  const V want = wp::mesh_eval_velocity(&cpu_ctx, 1, 7, 5, 0.25f, 0.25f);
  EXPECT_NE(want.c[2], 0.0f);
  EXPECT_EQ(vel.c[0], want.c[0]);
  EXPECT_EQ(vel.c[2], want.c[2]);
}

TEST_F(MirroredObjectsTest, ARefitReadsTheDevicePointsAgain) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(12, 16, 2, &p, &idx);
  const auto vec3 = types::Vector(3, ScalarKind::kFloat32);
  auto points = Gpu(vec3, p.data(), p.size());
  auto mesh = MirroredTree::CreateMesh(gpu_, "gpu", points, Gpu(types::Scalar(ScalarKind::kInt32), idx.data(),
                                                                 idx.size()),
                                       nullptr, 4, host_pool_, device_pool_);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  ASSERT_TRUE((*mesh)->Rebuild(BvhSplit::kSah).ok());
  (*mesh)->set_tree_id(99);
  std::shared_ptr<const ObjectTable> keep;
  wp::launch_ctx ctx = Ctx(*mesh, &keep);
  const V far{{10.0f, 0.0f, 0.0f}};
  const wp::mesh_query_point_t before = wp::mesh_query_point_no_sign(&ctx, 1, 7, far, 100.0f);
  ASSERT_TRUE(before.result);
  // Kernels move the points 5 units along +x on the device; a refit sees it.
  for (V& v : p) v.c[0] += 5.0f;
  ASSERT_TRUE(gpu_.Upload(*points, 0, {reinterpret_cast<const std::byte*>(p.data()), p.size() * sizeof(V)}).ok());
  const uint64_t down = gpu_.downloaded;
  ASSERT_TRUE((*mesh)->Refit().ok());
  EXPECT_GE(gpu_.downloaded - down, p.size() * sizeof(V));
  const wp::mesh_query_point_t after = wp::mesh_query_point_no_sign(&ctx, 1, 7, far, 100.0f);
  ASSERT_TRUE(after.result);
  const V at = wp::mesh_eval_position(&ctx, 1, 7, after.face, after.u, after.v);
  EXPECT_NEAR(at.c[0], 6.0f, 0.1f);  // the moved sphere's surface, closest to x = 10
  // The tree's id as a BVH of the session travels in the descriptor.
  EXPECT_EQ(static_cast<const wp::mesh_t*>((*mesh)->descriptor())->bvh_id, 99u);
}

TEST_F(MirroredObjectsTest, ABadIndexLeavesAnEmptyTreeOnTheDevice) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(6, 8, 3, &p, &idx);
  auto indices = Gpu(types::Scalar(ScalarKind::kInt32), idx.data(), idx.size());
  auto mesh = MirroredTree::CreateMesh(gpu_, "gpu", Gpu(types::Vector(3, ScalarKind::kFloat32), p.data(), p.size()),
                                       indices, nullptr, 4, host_pool_, device_pool_);
  ASSERT_TRUE(mesh.ok());
  ASSERT_TRUE((*mesh)->Rebuild(BvhSplit::kSah).ok());
  const int bad = 100000;
  ASSERT_TRUE(gpu_.Upload(*indices, 4 * 4, {reinterpret_cast<const std::byte*>(&bad), 4}).ok());
  absl::Status s = (*mesh)->Refit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  const auto* d = static_cast<const wp::mesh_t*>((*mesh)->descriptor());
  EXPECT_EQ(d->bvh.root, -1);
  EXPECT_EQ(d->bvh.num_nodes, 0);
}

TEST_F(MirroredObjectsTest, TheChecksAreTheCpusAndNameTheDevice) {
  std::vector<V> p(3, V{{0, 0, 0}});
  const std::vector<int> idx = {0, 1, 2, 0};  // not a multiple of 3
  auto s = MirroredTree::CreateMesh(gpu_, "gpu", Gpu(types::Vector(3, ScalarKind::kFloat32), p.data(), 3),
                                    Gpu(types::Scalar(ScalarKind::kInt32), idx.data(), 4), nullptr, 4, host_pool_,
                                    device_pool_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  // Arrays of another device.
  auto cpu_points = Cpu(types::Vector(3, ScalarKind::kFloat32), p.data(), 3, sizeof(V));
  auto t = MirroredTree::CreateMesh(gpu_, "gpu", cpu_points, Gpu(types::Scalar(ScalarKind::kInt32), idx.data(), 3),
                                    nullptr, 4, host_pool_, device_pool_);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  // A device pool too small for the mirror.
  SegmentPool tiny(MemoryAccount::Create("tiny", 64));
  auto u = MirroredTree::CreateMesh(gpu_, "gpu", Gpu(types::Vector(3, ScalarKind::kFloat32), p.data(), 3),
                                    Gpu(types::Scalar(ScalarKind::kInt32), idx.data(), 3), nullptr, 4, host_pool_,
                                    tiny);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kResourceExhausted) << u.status();
}

TEST_F(MirroredObjectsTest, AMirroredBvhFindsWhatBruteForceFinds) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<V> lo(500), hi(500);
  for (int i = 0; i < 500; ++i) {
    lo[i] = V{{u(rng), u(rng), u(rng)}};
    hi[i] = V{{lo[i].c[0] + 0.5f, lo[i].c[1] + 0.5f, lo[i].c[2] + 0.5f}};
  }
  const auto vec3 = types::Vector(3, ScalarKind::kFloat32);
  auto lowers = Gpu(vec3, lo.data(), lo.size());
  auto uppers = Gpu(vec3, hi.data(), hi.size());
  auto bvh = MirroredTree::CreateBvh(gpu_, "gpu", lowers, uppers, 1, host_pool_, device_pool_);
  ASSERT_TRUE(bvh.ok()) << bvh.status();
  ASSERT_TRUE((*bvh)->Rebuild(BvhSplit::kSah).ok());
  EXPECT_EQ((*bvh)->tree_descriptor(), nullptr);  // a BVH answers under its own id only
  const auto* d = static_cast<const wp::bvh_t*>((*bvh)->descriptor());
  EXPECT_EQ(reinterpret_cast<uint64_t>(d->item_lowers), lowers->address());
  EXPECT_EQ(reinterpret_cast<uint64_t>(d->item_uppers), uppers->address());
  std::shared_ptr<const ObjectTable> keep;
  wp::launch_ctx ctx = Ctx(*bvh, &keep);
  for (int k = 0; k < 50; ++k) {
    const V a{{u(rng), u(rng), u(rng)}};
    const V b{{a.c[0] + 1.0f, a.c[1] + 2.0f, a.c[2] + 1.5f}};
    std::set<int> want;
    for (int i = 0; i < 500; ++i) {
      bool overlap = true;
      for (int c = 0; c < 3; ++c) overlap = overlap && lo[i].c[c] <= b.c[c] && hi[i].c[c] >= a.c[c];
      if (overlap) want.insert(i);
    }
    std::set<int> got;
    wp::bvh_query_t q = wp::bvh_query_aabb(&ctx, 1, 7, a, b, -1);
    int32_t i = -1;
    while (wp::bvh_query_next(q, i, 3.402823466e+38f)) got.insert(i);
    EXPECT_EQ(got, want) << k;
  }
  EXPECT_EQ(ctx.fault.flag, 0);
}

TEST_F(MirroredObjectsTest, AMirroredHashGridFindsEveryNeighbour) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 4.0f);
  std::vector<V> p(700);
  for (V& v : p) v = V{{u(rng), u(rng), u(rng)}};
  std::vector<int32_t> groups(p.size());
  for (size_t i = 0; i < p.size(); ++i) groups[i] = static_cast<int32_t>(i % 3);
  auto grid = HashGrid::CreateMirrored(gpu_, "gpu", {16, 16, 16}, ScalarKind::kFloat32, host_pool_, device_pool_);
  ASSERT_TRUE(grid.ok()) << grid.status();
  std::shared_ptr<const ObjectTable> keep;
  wp::launch_ctx ctx = Ctx(*grid, &keep);
  const float r = 0.4f;
  // Unbuilt: nothing.
  {
    auto q = wp::hash_grid_query(&ctx, 1, 7, p[0], r);
    int32_t i = -1;
    EXPECT_FALSE(wp::hash_grid_query_next(q, i));
  }
  auto points = Gpu(types::Vector(3, ScalarKind::kFloat32), p.data(), p.size());
  auto group_array = Gpu(types::Scalar(ScalarKind::kInt32), groups.data(), groups.size());
  for (bool grouped : {false, true}) {
    auto buffers = HashGrid::MakeBuildBuffers(static_cast<int64_t>(p.size()), grouped, host_pool_);
    ASSERT_TRUE(buffers.ok());
    const Array* g = grouped ? group_array.get() : nullptr;
    ASSERT_TRUE((*grid)->PrepareMirroredBuild(**buffers, *points, g, host_pool_, device_pool_).ok());
    ASSERT_TRUE((*grid)->Build(*points, g, r, *buffers).ok());
    const auto* d = static_cast<const wp::hash_grid_t*>((*grid)->descriptor());
    EXPECT_EQ(d->num_points, static_cast<int>(p.size()));
    EXPECT_EQ(d->point_keys != nullptr, grouped);
    for (int k = 0; k < 60; ++k) {
      const V& c = p[static_cast<size_t>(k) * 11];
      std::set<int> got, want;
      for (size_t i = 0; i < p.size(); ++i) {
        if (grouped && groups[i] != 1) continue;
        if (wp::length(wp::sub(p[i], c)) <= r) want.insert(static_cast<int>(i));
      }
      auto q = grouped ? wp::hash_grid_query(&ctx, 1, 7, c, r, 1) : wp::hash_grid_query(&ctx, 1, 7, c, r);
      int32_t i = -1;
      while (wp::hash_grid_query_next(q, i)) {
        if (wp::length(wp::sub(p[static_cast<size_t>(i)], c)) <= r) got.insert(i);
        if (grouped) EXPECT_EQ(groups[static_cast<size_t>(i)], 1);
      }
      EXPECT_EQ(got, want) << k;
    }
  }
  EXPECT_EQ(ctx.fault.flag, 0);
  // A build whose buffers were not prepared for the mirror is refused.
  auto plain = HashGrid::MakeBuildBuffers(static_cast<int64_t>(p.size()), false, host_pool_);
  EXPECT_EQ((*grid)->Build(*points, nullptr, r, *plain).code(), absl::StatusCode::kInternal);
}

TEST_F(MirroredObjectsTest, AMirroredVolumeIsQueriedAndStoredIntoOnTheDevice) {
  const std::vector<std::array<int32_t, 3>> tiles = {{0, 0, 0}, {-8, 8, 16}};
  const float bg = -123.0f;
  auto v = Volume::FromTiles("gpu", wp::VOLUME_FLOAT32, tiles,
                             absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&bg), 4),
                             {0.1, 0, 0, 0, 0.2, 0, 0, 0, 0.3}, {1, 2, 3}, host_pool_);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE((*v)->Mirror(gpu_, device_pool_).ok());
  EXPECT_TRUE((*v)->mirrored());
  EXPECT_EQ((*v)->Mirror(gpu_, device_pool_).code(), absl::StatusCode::kFailedPrecondition);
  const auto* d = static_cast<const wp::volume_t*>((*v)->descriptor());
  EXPECT_NE(d, &(*v)->native());
  EXPECT_NE(d->grid, (*v)->native().grid);
  EXPECT_EQ(d->grid_bytes, (*v)->native().grid_bytes);
  std::shared_ptr<const ObjectTable> keep;
  wp::launch_ctx ctx = Ctx(*v, &keep);
  EXPECT_EQ(wp::volume_lookup<float>(&ctx, 1, 7, 3, 4, 5), bg);
  wp::volume_store(&ctx, 1, 7, 3, 4, 5, 42.0f);  // lands in the device's grid
  EXPECT_EQ(wp::volume_lookup<float>(&ctx, 1, 7, 3, 4, 5), 42.0f);
  // The host's copy keeps the layout, the device the values: ReadBytes
  // reads the device's.
  std::vector<std::byte> device_bytes((*v)->grid_bytes());
  ASSERT_TRUE((*v)->ReadBytes(0, absl::MakeSpan(device_bytes)).ok());
  EXPECT_NE(std::memcmp(device_bytes.data(), (*v)->bytes().data(), device_bytes.size()), 0);
  EXPECT_EQ(std::memcmp(device_bytes.data(), d->grid, device_bytes.size()), 0);
  std::vector<std::byte> past(8);
  EXPECT_EQ((*v)->ReadBytes((*v)->grid_bytes() - 4, absl::MakeSpan(past)).code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace warpd::runtime
