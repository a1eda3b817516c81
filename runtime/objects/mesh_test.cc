// Mesh: builds and refits, checked by running the native queries
// (runtime/native/warpd/native/mesh.h) on the host against brute force over
// every triangle (closest points, rays, AABB overlaps), signs on a closed
// sphere, and the faults of out-of-range indices and unknown ids.
#include "runtime/objects/mesh.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/object_table.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;
using V = wp::vec3f;

V Vec(float x, float y, float z) { return V{{x, y, z}}; }

// A UV sphere of radius r, outward-wound (counter-clockwise seen from outside).
void Sphere(float r, int rings, int segs, std::vector<V>* pts, std::vector<int>* idx) {
  pts->clear();
  idx->clear();
  pts->push_back(Vec(0, 0, r));
  for (int i = 1; i < rings; ++i) {
    const float th = static_cast<float>(M_PI) * i / rings;
    for (int j = 0; j < segs; ++j) {
      const float ph = 2.0f * static_cast<float>(M_PI) * j / segs;
      pts->push_back(Vec(r * std::sin(th) * std::cos(ph), r * std::sin(th) * std::sin(ph), r * std::cos(th)));
    }
  }
  pts->push_back(Vec(0, 0, -r));
  const int south = static_cast<int>(pts->size()) - 1;
  auto ring = [&](int i, int j) { return 1 + (i - 1) * segs + (j % segs); };
  for (int j = 0; j < segs; ++j) idx->insert(idx->end(), {0, ring(1, j), ring(1, j + 1)});
  for (int i = 1; i < rings - 1; ++i)
    for (int j = 0; j < segs; ++j) {
      idx->insert(idx->end(), {ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)});
      idx->insert(idx->end(), {ring(i, j), ring(i + 1, j + 1), ring(i, j + 1)});
    }
  for (int j = 0; j < segs; ++j) idx->insert(idx->end(), {ring(rings - 1, j), south, ring(rings - 1, j + 1)});
}

class MeshTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Array> Make(types::TypeRef dtype, const void* data, size_t n, size_t elem) {
    ArrayLayout layout = *MakeArrayLayout(dtype, {static_cast<int64_t>(n)});
    auto buffer = *pool_.Allocate(std::max<uint64_t>(1, n * elem), "test");
    if (n) std::memcpy(buffer->data(), data, n * elem);
    return std::make_shared<Array>("cpu", layout, std::move(buffer));
  }
  std::shared_ptr<Mesh> Build(const std::vector<V>& p, const std::vector<int>& idx, int leaf = 4,
                              const std::vector<V>* vel = nullptr) {
    points_ = Make(types::Vector(3, ScalarKind::kFloat32), p.data(), p.size(), sizeof(V));
    indices_ = Make(types::Scalar(ScalarKind::kInt32), idx.data(), idx.size(), sizeof(int));
    auto v = vel ? Make(types::Vector(3, ScalarKind::kFloat32), vel->data(), vel->size(), sizeof(V)) : nullptr;
    auto mesh = Mesh::Create("cpu", points_, indices_, v, leaf, pool_);
    EXPECT_TRUE(mesh.ok()) << mesh.status();
    EXPECT_TRUE((*mesh)->Rebuild(BvhSplit::kSah).ok());
    table_ = ObjectTable::Empty()->With(7, *mesh);
    std::memset(&ctx_, 0, sizeof(ctx_));
    ctx_.objects = table_->entries();
    ctx_.num_objects = 1;
    return *mesh;
  }
  V* points() { return reinterpret_cast<V*>(points_->data()); }
  int* indices() { return reinterpret_cast<int*>(indices_->data()); }
  int ntris() const { return static_cast<int>(indices_->layout().num_elements / 3); }
  void Tri(int f, V& a, V& b, V& c) {
    a = points()[indices()[3 * f]];
    b = points()[indices()[3 * f + 1]];
    c = points()[indices()[3 * f + 2]];
  }
  // Brute force: the closest distance over every (non-sliver) triangle.
  float BruteDist(V p) {
    float best = INFINITY;
    for (int f = 0; f < ntris(); ++f) {
      V a, b, c;
      Tri(f, a, b, c);
      if (wp::mesh_is_sliver(a, b, c)) continue;
      float u, v;
      wp::mesh_closest_on_triangle(a, b, c, p, u, v);
      best = std::min(best, wp::length(wp::sub(wp::mesh_bary_point(a, b, c, u, v), p)));
    }
    return best;
  }
  // Brute force: the closest ray hit over every triangle (t, or inf).
  float BruteRay(V s, V d, int* face) {
    float best = INFINITY;
    for (int f = 0; f < ntris(); ++f) {
      V a, b, c;
      Tri(f, a, b, c);
      float t, u, v, sg;
      if (wp::mesh_ray_triangle(s, wp::mesh_ray_shear(d), a, b, c, t, u, v, sg) && t >= 0 && t < best) {
        best = t;
        *face = f;
      }
    }
    return best;
  }

  std::shared_ptr<MemoryAccount> account_ = MemoryAccount::Create("test", 0);
  SegmentPool pool_{account_};
  std::shared_ptr<const Array> points_, indices_;
  std::shared_ptr<const ObjectTable> table_;
  wp::launch_ctx ctx_;
};

// A mesh's boxes, tree and build scratch come from the session's pool:
// one block from 1 MiB in all (BvhBuffers; bvh_test's
// TreesMadeAndFreedInALoopReuseTheirMemory), else a block each.
TEST_F(MeshTest, BoxesTreeAndScratchComeFromThePool) {
  for (int rings : {58, 400}) {
    std::vector<V> p;
    std::vector<int> idx;
    Sphere(1.0f, rings, 80, &p, &idx);  // 9,120 triangles (the bench's small mesh), 63,840
    const uint64_t tris = idx.size() / 3;
    points_ = Make(types::Vector(3, ScalarKind::kFloat32), p.data(), p.size(), sizeof(V));
    indices_ = Make(types::Scalar(ScalarKind::kInt32), idx.data(), idx.size(), sizeof(int));
    const SegmentPoolStats before = pool_.stats();
    auto mesh = Mesh::Create("cpu", points_, indices_, nullptr, 4, pool_);
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    const SegmentPoolStats with = pool_.stats();
    // Boxes (24 bytes per triangle), nodes and parents (36 per node, 2n - 1
    // and the slack), item indices (4) and the scratch (1, 5 from 32,768).
    const uint64_t bytes = tris * 24 + (2 * tris - 1 + kBvhBuildSlack) * 36 + tris * (tris >= 32768 ? 9 : 5);
    EXPECT_GE(with.block_bytes - before.block_bytes, bytes);
    EXPECT_LT(with.block_bytes - before.block_bytes, bytes + 4096 + 5 * 64);
    EXPECT_EQ(with.blocks_live - before.blocks_live, bytes >= SegmentPool::kLargeBlockBytes ? 1u : 5u);
    ASSERT_TRUE((*mesh)->Rebuild(BvhSplit::kSah).ok());
    ASSERT_TRUE((*mesh)->Refit().ok());
    EXPECT_EQ(pool_.stats().blocks_live, with.blocks_live);
    mesh->reset();
    EXPECT_EQ(pool_.stats().blocks_live, before.blocks_live);
  }
}

TEST_F(MeshTest, CreateChecksArrays) {
  std::vector<V> p{Vec(0, 0, 0), Vec(1, 0, 0), Vec(0, 1, 0)};
  std::vector<int> idx{0, 1, 2, 0};
  auto pts = Make(types::Vector(3, ScalarKind::kFloat32), p.data(), 3, sizeof(V));
  auto four = Make(types::Scalar(ScalarKind::kInt32), idx.data(), 4, sizeof(int));
  auto three = Make(types::Scalar(ScalarKind::kInt32), idx.data(), 3, sizeof(int));
  EXPECT_EQ(Mesh::Create("cpu", pts, four, nullptr, 4, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mesh::Create("cpu", three, three, nullptr, 4, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);  // points not vec3
  EXPECT_EQ(Mesh::Create("cpu", pts, pts, nullptr, 4, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mesh::Create("cpu", pts, three, nullptr, 0, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mesh::Create("cuda:0", pts, three, nullptr, 4, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto ok = Mesh::Create("cpu", pts, three, nullptr, 4, pool_);
  ASSERT_TRUE(ok.ok()) << ok.status();
  // Out-of-range vertex index: the build fails, naming the triangle.
  std::vector<int> bad{0, 1, 3};
  auto badi = Make(types::Scalar(ScalarKind::kInt32), bad.data(), 3, sizeof(int));
  auto m = Mesh::Create("cpu", pts, badi, nullptr, 4, pool_);
  ASSERT_TRUE(m.ok());
  absl::Status s = (*m)->Rebuild(BvhSplit::kSah);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vertex index 3"), std::string::npos) << s;
}

TEST_F(MeshTest, GradientsMustMatchTheirArrays) {
  std::vector<V> p{Vec(0, 0, 0), Vec(1, 0, 0), Vec(0, 1, 0)};
  std::vector<int> idx{0, 1, 2};
  auto mesh = Build(p, idx);
  const auto vec3 = types::Vector(3, ScalarKind::kFloat32);
  auto grad = Make(vec3, p.data(), 3, sizeof(V));
  auto short_grad = Make(vec3, p.data(), 2, sizeof(V));
  auto ints = Make(types::Scalar(ScalarKind::kInt32), idx.data(), 3, sizeof(int));
  // Wrong counts and types, and a velocities gradient without velocities, are refused.
  EXPECT_EQ(mesh->SetGradients(short_grad, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh->SetGradients(ints, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh->SetGradients(nullptr, grad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh->native().points_grad, nullptr);
  ASSERT_TRUE(mesh->SetGradients(grad, nullptr).ok());
  EXPECT_EQ(mesh->native().points_grad, reinterpret_cast<const wp::vec3f*>(grad->data()));
  // mesh_get's gradient view reads them; indices have none.
  wp::mesh_view_t g = wp::mesh_get_grads(&ctx_, 7);
  EXPECT_EQ(g.points.data, reinterpret_cast<const wp::vec3f*>(grad->data()));
  EXPECT_EQ(g.points.shape[0], 3);
  EXPECT_EQ(g.velocities.shape[0], 0);
  EXPECT_EQ(g.indices.shape[0], 0);
  EXPECT_EQ(wp::mesh_get_grads(&ctx_, 8).points.shape[0], 0);  // unknown id: nothing, no fault
  EXPECT_EQ(ctx_.fault.flag, 0);
  // New points replace their gradient (none here); a gradient alone is refused.
  auto moved = Make(vec3, p.data(), 3, sizeof(V));
  EXPECT_EQ(mesh->SetArrays({.points_grad = grad}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh->SetArrays({.points = moved, .points_grad = short_grad}).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(mesh->SetArrays({.points = moved}).ok());
  EXPECT_EQ(mesh->native().points_grad, nullptr);
}

TEST_F(MeshTest, ClosestPointsAndSignsMatchBruteForce) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(1.0f, 12, 18, &p, &idx);
  auto mesh = Build(p, idx, 4);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-3, 3);
  for (int i = 0; i < 400; ++i) {
    const V q = Vec(u(rng), u(rng), u(rng));
    const float r = wp::length(q);
    if (std::fabs(r - 1.0f) < 0.05f) continue;  // too close to call against the ideal sphere
    const wp::mesh_query_point_t a = wp::mesh_query_point(&ctx_, 1, 7, q, 1e6f);
    ASSERT_TRUE(a.result);
    V x, y, z;
    Tri(a.face, x, y, z);
    const float d = wp::length(wp::sub(wp::mesh_bary_point(x, y, z, a.u, a.v), q));
    EXPECT_NEAR(d, BruteDist(q), 1e-5f);
    const float want = r < 1.0f ? -1.0f : 1.0f;
    EXPECT_EQ(a.sign, want) << r;
    EXPECT_EQ(wp::mesh_query_point_sign_normal(&ctx_, 1, 7, q, 1e6f, 1e-3f).sign, want) << r;
    EXPECT_EQ(wp::mesh_query_point_sign_winding_number(&ctx_, 1, 7, q, 1e6f, 2.0f, 0.5f).sign, want) << r;
    // max_dist is strict: just below the distance finds nothing.
    EXPECT_FALSE(wp::mesh_query_point_no_sign(&ctx_, 1, 7, q, d * 0.999f).result);
    // Furthest point: a vertex at the largest distance.
    const wp::mesh_query_point_t far = wp::mesh_query_furthest_point_no_sign(&ctx_, 1, 7, q, 0.0f);
    ASSERT_TRUE(far.result);
    Tri(far.face, x, y, z);
    float want_far = 0;
    for (const V& v : p) want_far = std::max(want_far, wp::length(wp::sub(v, q)));
    EXPECT_NEAR(wp::length(wp::sub(wp::mesh_bary_point(x, y, z, far.u, far.v), q)), want_far, 1e-5f);
  }
  EXPECT_EQ(ctx_.fault.flag, 0);
}

TEST_F(MeshTest, RaysMatchBruteForceAndRefitFollowsPoints) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(1.0f, 10, 16, &p, &idx);
  // Plus random triangles around it.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int i = 0; i < 200; ++i) {
    const int base = static_cast<int>(p.size());
    const V c = Vec(u(rng), u(rng), u(rng));
    for (int k = 0; k < 3; ++k) p.push_back(wp::add(c, Vec(u(rng) * 0.2f, u(rng) * 0.2f, u(rng) * 0.2f)));
    idx.insert(idx.end(), {base, base + 1, base + 2});
  }
  auto mesh = Build(p, idx, 2);
  auto check = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const V s = Vec(u(rng) * 2, u(rng) * 2, u(rng) * 2);
      V d = Vec(u(rng), u(rng), u(rng));
      if (i % 10 == 0) d = Vec(0, 0, i % 20 == 0 ? 1.0f : -1.0f);  // axis-parallel
      int face = -1;
      const float want = BruteRay(s, d, &face);
      const wp::mesh_query_ray_t r = wp::mesh_query_ray(&ctx_, 1, 7, s, d, 1e6f, -1);
      ASSERT_EQ(r.result, want < INFINITY) << i;
      if (r.result) {
        EXPECT_EQ(r.t, want);
        EXPECT_EQ(r.face, face);
        // A shorter max_t (strict) misses.
        EXPECT_FALSE(wp::mesh_query_ray(&ctx_, 1, 7, s, d, want, -1).result);
      }
    }
  };
  check(500);
  for (size_t i = 0; i < p.size(); ++i) points()[i] = wp::add(points()[i], Vec(0.5f, -0.25f, 3.0f));
  ASSERT_TRUE(mesh->Refit().ok());
  check(500);
  EXPECT_EQ(ctx_.fault.flag, 0);
}

TEST_F(MeshTest, AabbQueryEvalAndGetters) {
  std::vector<V> p;
  std::vector<int> idx;
  Sphere(2.0f, 8, 12, &p, &idx);
  std::vector<V> vel(p.size());
  for (size_t i = 0; i < p.size(); ++i) vel[i] = Vec(static_cast<float>(i), 1, 2);
  auto mesh = Build(p, idx, 3, &vel);
  const V lo = Vec(-0.5f, -3, 0.2f), hi = Vec(1.5f, 0.5f, 3);
  wp::bvh_query_t q = wp::mesh_query_aabb(&ctx_, 1, 7, lo, hi);
  std::vector<int> got;
  wp::int32 f = -1;
  while (wp::mesh_query_aabb_next(q, f)) got.push_back(f);
  std::sort(got.begin(), got.end());
  std::vector<int> want;
  for (int t = 0; t < ntris(); ++t) {
    V a, b, c;
    Tri(t, a, b, c);
    bool overlap = true;
    for (int i = 0; i < 3; ++i) {
      const float mn = std::min({a.c[i], b.c[i], c.c[i]}), mx = std::max({a.c[i], b.c[i], c.c[i]});
      if (mn > hi.c[i] || mx < lo.c[i]) overlap = false;
    }
    if (overlap) want.push_back(t);
  }
  EXPECT_EQ(got, want);
  EXPECT_FALSE(want.empty());
  const V pos = wp::mesh_eval_position(&ctx_, 1, 7, 5, 0.2f, 0.3f);
  V a, b, c;
  Tri(5, a, b, c);
  const V expect = wp::add(wp::add(wp::mul(a, 0.2f), wp::mul(b, 0.3f)), wp::mul(c, 0.5f));
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(pos.c[i], expect.c[i]);
  const V vv = wp::mesh_eval_velocity(&ctx_, 1, 7, 5, 0.2f, 0.3f);
  EXPECT_FLOAT_EQ(vv.c[0], 0.2f * idx[15] + 0.3f * idx[16] + 0.5f * idx[17]);
  EXPECT_EQ(wp::mesh_get_index(&ctx_, 1, 7, 16), idx[16]);
  EXPECT_FLOAT_EQ(wp::mesh_get_point(&ctx_, 1, 7, 16).c[2], p[idx[16]].c[2]);
  EXPECT_FLOAT_EQ(wp::mesh_get_velocity(&ctx_, 1, 7, 16).c[0], static_cast<float>(idx[16]));
  const V n = wp::mesh_eval_face_normal(&ctx_, 1, 7, 5);
  EXPECT_NEAR(wp::length(n), 1.0f, 1e-6f);
  EXPECT_GT(wp::dot(n, wp::add(wp::add(a, b), c)), 0.0f);  // outward
  EXPECT_EQ(ctx_.fault.flag, 0);
}

TEST_F(MeshTest, OutOfRangeIndicesAndUnknownIdsFault) {
  std::vector<V> p{Vec(0, 0, 0), Vec(1, 0, 0), Vec(0, 1, 0), Vec(0, 0, 1)};
  std::vector<int> idx{0, 1, 2, 0, 2, 3};
  auto mesh = Build(p, idx, 1);
  // A face index out of range.
  EXPECT_EQ(wp::mesh_eval_position(&ctx_, 9, 7, 2, 0, 0).c[0], 0.0f);
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_OBJECT_INDEX);
  EXPECT_EQ(ctx_.fault.dim, wp::OBJECT_MESH_FACES);
  EXPECT_EQ(ctx_.fault.index, 2);
  EXPECT_EQ(ctx_.fault.extent, 2);
  // The client rewrites an index after the build: queries fault, read nothing.
  std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
  indices()[4] = 1 << 30;
  EXPECT_FALSE(wp::mesh_query_point_no_sign(&ctx_, 3, 7, Vec(0.05f, 0.2f, 0.2f), 10.0f).result);
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_OBJECT_INDEX);
  EXPECT_EQ(ctx_.fault.dim, wp::OBJECT_MESH);
  EXPECT_EQ(ctx_.fault.index, 1 << 30);
  EXPECT_EQ(ctx_.fault.extent, 4);
  std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
  EXPECT_FALSE(wp::mesh_query_ray(&ctx_, 3, 7, Vec(2.0f, 0.1f, 0.1f), Vec(-1, 0, 0), 10.0f, -1).result);
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_OBJECT_INDEX);
  std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
  indices()[4] = -1;
  EXPECT_EQ(mesh->Refit().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh->native().bvh.root, -1);  // nothing to traverse after a failed refit
  // Velocities absent: getters fault.
  indices()[4] = 2;
  ASSERT_TRUE(mesh->Rebuild(BvhSplit::kMedian).ok());
  EXPECT_EQ(wp::mesh_get_velocity(&ctx_, 4, 7, 0).c[0], 0.0f);
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_OBJECT_INDEX);
  EXPECT_EQ(ctx_.fault.extent, 0);
  // An unknown id (and a BVH query on a mesh id: kind mismatch).
  std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
  EXPECT_FALSE(wp::mesh_query_ray(&ctx_, 5, 8, Vec(0, 0, 0), Vec(0, 0, 1), 1.0f, -1).result);
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
  std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
  wp::bvh_query_t q = wp::bvh_query_aabb(&ctx_, 5, 7, Vec(0, 0, 0), Vec(1, 1, 1), -1);
  wp::int32 i = 0;
  EXPECT_FALSE(wp::bvh_query_next(q, i, 1.0f));
  EXPECT_EQ(ctx_.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
  EXPECT_EQ(ctx_.fault.extent, wp::OBJECT_MESH);
}

}  // namespace
}  // namespace warpd::runtime
