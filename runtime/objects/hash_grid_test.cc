// HashGrid: creation limits and charging, builds (random points, strided
// and multi-dimensional inputs, groups, rebuilds, empty builds), checked by
// running the native queries (runtime/native/warpd/native/hash_grid.h) on
// the host against brute force.
#include "runtime/objects/hash_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/object_table.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;

class HashGridTest : public ::testing::Test {
 protected:
  // Points as an array of vec3f (`stride` elements apart when > 1; of
  // `shape` when given).
  std::shared_ptr<const Array> Points(const std::vector<wp::vec3f>& pts, int stride = 1,
                                      std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(pts.size())};
    ArrayLayout layout = *MakeArrayLayout(types::Vector(3, ScalarKind::kFloat32), shape);
    auto buffer = *pool_.Allocate(std::max<uint64_t>(1, pts.size() * sizeof(wp::vec3f) * stride), "test");
    if (stride > 1) {
      layout.strides[0] = static_cast<int64_t>(sizeof(wp::vec3f)) * stride;
      layout.contiguous = false;
    }
    for (size_t i = 0; i < pts.size(); ++i)
      std::memcpy(buffer->data() + i * sizeof(wp::vec3f) * stride, &pts[i], sizeof(wp::vec3f));
    return std::make_shared<Array>("cpu", layout, std::move(buffer));
  }
  std::shared_ptr<const Array> Groups(const std::vector<int32_t>& g) {
    ArrayLayout layout = *MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {static_cast<int64_t>(g.size())});
    auto buffer = *pool_.Allocate(std::max<uint64_t>(1, g.size() * 4), "test");
    if (!g.empty()) std::memcpy(buffer->data(), g.data(), g.size() * 4);
    return std::make_shared<Array>("cpu", layout, std::move(buffer));
  }
  absl::Status Build(HashGrid& grid, const Array& points, const Array* groups, double radius) {
    auto buffers = HashGrid::MakeBuildBuffers(static_cast<int64_t>(points.layout().num_elements), groups != nullptr,
                                              pool_);
    if (!buffers.ok()) return buffers.status();
    return grid.Build(points, groups, radius, *std::move(buffers));
  }
  // The candidates a kernel's query yields, in order, with the launch table
  // holding `grid` under id 42.
  std::vector<int> Query(const std::shared_ptr<HashGrid>& grid, wp::vec3f p, float r, const int32_t* group = nullptr) {
    std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(42, grid);
    wp::launch_ctx ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    ctx.objects = t->entries();
    ctx.num_objects = 1;
    auto q = group ? wp::hash_grid_query(&ctx, 1, 42, p, r, *group) : wp::hash_grid_query(&ctx, 1, 42, p, r);
    std::vector<int> out;
    wp::int32 index = -1;
    while (wp::hash_grid_query_next(q, index) && out.size() < 100000) out.push_back(index);
    EXPECT_EQ(ctx.fault.flag, 0);
    return out;
  }

  std::shared_ptr<MemoryAccount> account_ = MemoryAccount::Create("test", 0);
  SegmentPool pool_{account_};
};

std::vector<wp::vec3f> RandomPoints(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<wp::vec3f> pts(n);
  for (auto& p : pts) p = wp::vec3f{{u(rng), u(rng), u(rng)}};
  return pts;
}

float Dist(const wp::vec3f& a, const wp::vec3f& b) {
  const float dx = a.c[0] - b.c[0], dy = a.c[1] - b.c[1], dz = a.c[2] - b.c[2];
  return std::sqrt(dx * dx + dy * dy + dz * dz);
}

TEST_F(HashGridTest, CreateChecksDimsAndDtypeAndChargesTheCellTable) {
  EXPECT_EQ(HashGrid::Create("cpu", {0, 4, 4}, ScalarKind::kFloat32, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HashGrid::Create("cpu", {4, -1, 4}, ScalarKind::kFloat32, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto big = HashGrid::Create("cpu", {1291, 1291, 1291}, ScalarKind::kFloat32, pool_);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("cell count exceeds supported limit"), std::string::npos) << big.status();
  // Products that overflow int64 are refused too, before any allocation.
  EXPECT_EQ(HashGrid::Create("cpu", {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40}, ScalarKind::kFloat32,
                             pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HashGrid::Create("cpu", {4, 4, 4}, ScalarKind::kInt32, pool_).status().code(),
            absl::StatusCode::kInvalidArgument);
  const uint64_t before = account_->used();
  auto grid = HashGrid::Create("cpu", {64, 64, 64}, ScalarKind::kFloat32, pool_);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_GE(account_->used() - before, uint64_t{64 * 64 * 64 * 8});
  // A limited account refuses a table that does not fit.
  SegmentPool small(MemoryAccount::Create("small", 1 << 20));
  EXPECT_EQ(HashGrid::Create("cpu", {128, 128, 128}, ScalarKind::kFloat32, small).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(HashGridTest, CheckBuildRejectsWrongDtypesRadiiAndGroups) {
  auto grid = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat64, pool_);
  auto pts = Points(RandomPoints(4, 0, 1, 1));
  EXPECT_EQ(grid->CheckBuild(*pts, nullptr, 1.0).code(), absl::StatusCode::kInvalidArgument);  // vec3f, not vec3d
  auto grid32 = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  EXPECT_TRUE(grid32->CheckBuild(*pts, nullptr, 1.0).ok());
  for (double r : {0.0, -1.0, std::nan(""), double(INFINITY)})
    EXPECT_EQ(grid32->CheckBuild(*pts, nullptr, r).code(), absl::StatusCode::kInvalidArgument) << r;
  EXPECT_EQ(grid32->CheckBuild(*pts, Groups({1, 2, 3}).get(), 1.0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(grid32->CheckBuild(*pts, Groups({1, 2, 3, 4}).get(), 1.0).ok());
  EXPECT_EQ(grid32->CheckBuild(*pts, pts.get(), 1.0).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HashGridTest, QueriesFindExactlyTheBruteForceNeighbours) {
  // Points well outside the grid's nominal extent (8 cells of 0.5) and at
  // negative coordinates wrap onto its cells.
  const std::vector<wp::vec3f> pts = RandomPoints(700, -7.0f, 9.0f, 3);
  auto grid = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  ASSERT_TRUE(Build(*grid, *Points(pts), nullptr, 0.5).ok());
  const wp::hash_grid_t& g = grid->native();
  ASSERT_EQ(g.num_points, 700);
  // point_ids is a permutation, sorted by cell.
  std::vector<int> ids(g.point_ids, g.point_ids + 700);
  std::vector<int> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 700; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  for (float r : {0.0f, 0.3f, 0.5f, 1.2f, 3.0f}) {
    for (size_t i = 0; i < pts.size(); i += 7) {
      std::vector<int> got = Query(grid, pts[i], r);
      std::set<int> unique(got.begin(), got.end());
      EXPECT_EQ(unique.size(), got.size()) << "a candidate came twice";
      std::set<int> near, want;
      for (int c : got)
        if (Dist(pts[i], pts[static_cast<size_t>(c)]) <= r) near.insert(c);
      for (size_t j = 0; j < pts.size(); ++j)
        if (Dist(pts[i], pts[j]) <= r) want.insert(static_cast<int>(j));
      EXPECT_EQ(near, want) << "point " << i << " radius " << r;
    }
  }
}

TEST_F(HashGridTest, StridedAndMultiDimensionalPointsBuildAsTheirRowMajorElements) {
  const std::vector<wp::vec3f> pts = RandomPoints(64, 0.0f, 4.0f, 5);
  auto a = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  auto b = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  auto c = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  ASSERT_TRUE(Build(*a, *Points(pts), nullptr, 1.0).ok());
  ASSERT_TRUE(Build(*b, *Points(pts, 3), nullptr, 1.0).ok());
  ASSERT_TRUE(Build(*c, *Points(pts, 1, {4, 4, 4}), nullptr, 1.0).ok());
  for (const auto& grid : {b, c}) {
    ASSERT_EQ(grid->native().num_points, 64);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(grid->native().point_ids[i], a->native().point_ids[i]);
    for (int i = 0; i < 64; i += 5) EXPECT_EQ(Query(grid, pts[static_cast<size_t>(i)], 1.0f), Query(a, pts[static_cast<size_t>(i)], 1.0f));
  }
}

TEST_F(HashGridTest, GroupedQueriesSeeOnlyTheirGroup) {
  std::vector<wp::vec3f> pts;
  std::vector<int32_t> groups;
  const int32_t kGroups[] = {INT32_MIN, -1, 0, 7, INT32_MAX};
  std::mt19937 rng(9);
  for (int i = 0; i < 300; ++i) {
    pts.push_back(RandomPoints(1, 0.0f, 2.0f, static_cast<uint32_t>(i))[0]);
    groups.push_back(kGroups[rng() % 5]);
  }
  auto grid = *HashGrid::Create("cpu", {4, 4, 4}, ScalarKind::kFloat32, pool_);
  ASSERT_TRUE(Build(*grid, *Points(pts), Groups(groups).get(), 0.5).ok());
  for (int32_t group : {INT32_MIN, -1, 0, 7, INT32_MAX, 99}) {
    for (size_t i = 0; i < pts.size(); i += 11) {
      std::set<int> near, want;
      for (int c : Query(grid, pts[i], 0.6f, &group)) {
        EXPECT_EQ(groups[static_cast<size_t>(c)], group);
        if (Dist(pts[i], pts[static_cast<size_t>(c)]) <= 0.6f) near.insert(c);
      }
      for (size_t j = 0; j < pts.size(); ++j)
        if (groups[j] == group && Dist(pts[i], pts[j]) <= 0.6f) want.insert(static_cast<int>(j));
      EXPECT_EQ(near, want) << "group " << group;
    }
  }
  // Without a group: every point.
  std::set<int> all;
  for (int c : Query(grid, pts[0], 100.0f)) all.insert(c);
  EXPECT_EQ(all.size(), pts.size());
}

TEST_F(HashGridTest, RebuildsReplaceThePointsAndEmptyBuildsYieldNothing) {
  auto grid = *HashGrid::Create("cpu", {8, 8, 8}, ScalarKind::kFloat32, pool_);
  // Never built: nothing, and point ids are -1.
  EXPECT_TRUE(Query(grid, wp::vec3f{{0, 0, 0}}, 1.0f).empty());
  ASSERT_TRUE(Build(*grid, *Points({wp::vec3f{{0, 0, 0}}, wp::vec3f{{0.1f, 0, 0}}}), nullptr, 1.0).ok());
  EXPECT_EQ(Query(grid, wp::vec3f{{0, 0, 0}}, 0.5f).size(), 2u);
  ASSERT_TRUE(Build(*grid, *Points({wp::vec3f{{5, 5, 5}}}), nullptr, 1.0).ok());
  EXPECT_EQ(Query(grid, wp::vec3f{{5, 5, 5}}, 0.5f), std::vector<int>{0});
  // The earlier points are gone: the query near the origin finds nothing
  // within reach (5,5,5 wraps onto cell 5 of 8, not 0).
  EXPECT_TRUE(Query(grid, wp::vec3f{{0, 0, 0}}, 0.5f).empty());
  ASSERT_TRUE(Build(*grid, *Points({}), nullptr, 1.0).ok());
  EXPECT_EQ(grid->native().num_points, 0);
  EXPECT_TRUE(Query(grid, wp::vec3f{{5, 5, 5}}, 10.0f).empty());
}

TEST_F(HashGridTest, PointIdChecksItsIndexAndUnknownIdsFault) {
  auto grid = *HashGrid::Create("cpu", {4, 4, 4}, ScalarKind::kFloat32, pool_);
  ASSERT_TRUE(Build(*grid, *Points(RandomPoints(10, 0, 1, 2)), nullptr, 1.0).ok());
  std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(42, grid);
  wp::launch_ctx ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  ctx.objects = t->entries();
  ctx.num_objects = 1;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(wp::hash_grid_point_id(&ctx, 3, 42, i), grid->native().point_ids[i]);
  EXPECT_EQ(ctx.fault.flag, 0);
  EXPECT_EQ(wp::hash_grid_point_id(&ctx, 5, 42, 10), -1);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_OBJECT_INDEX);
  EXPECT_EQ(ctx.fault.index, 10);
  EXPECT_EQ(ctx.fault.extent, 10);
  std::memset(&ctx.fault, 0, sizeof(ctx.fault));
  EXPECT_EQ(wp::hash_grid_point_id(&ctx, 6, 42, -1), -1);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_OBJECT_INDEX);
  std::memset(&ctx.fault, 0, sizeof(ctx.fault));
  // An unknown id: a fault naming it, and an empty query.
  auto q = wp::hash_grid_query(&ctx, 8, 43, wp::vec3f{{0, 0, 0}}, 1.0f);
  wp::int32 index = 0;
  EXPECT_FALSE(wp::hash_grid_query_next(q, index));
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
  EXPECT_EQ(ctx.fault.index, 43);
  EXPECT_EQ(ctx.fault.line, 8);
}

TEST_F(HashGridTest, ExtremeAndNanCoordinatesTerminateAndYieldEachPointOnce) {
  for (std::array<int64_t, 3> dims : {std::array<int64_t, 3>{1, 1, 1}, std::array<int64_t, 3>{3, 5, 7}}) {
    for (float v : {1e20f, -1e20f, INFINITY, -INFINITY, 2147483648.0f, std::nanf("")}) {
      auto grid = *HashGrid::Create("cpu", dims, ScalarKind::kFloat32, pool_);
      ASSERT_TRUE(Build(*grid, *Points({wp::vec3f{{v, v, v}}}), nullptr, 1.0).ok());
      EXPECT_EQ(Query(grid, wp::vec3f{{v, v, v}}, 1.0f), std::vector<int>{0}) << v;
    }
  }
}

}  // namespace
}  // namespace warpd::runtime
