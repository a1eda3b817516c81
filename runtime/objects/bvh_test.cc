// Bvh: builds (SAH and median, leaf sizes, empty, single, duplicate and
// degenerate boxes, NaN/inf boxes), refits, checked by running the native
// queries (runtime/native/warpd/native/bvh.h) on the host against brute
// force over every item; tree invariants (every item in one leaf, boxes
// containing their children, depth within the query stack).
#include "runtime/objects/bvh.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/object_table.h"

namespace warpd::runtime {
namespace {

using types::ScalarKind;
using V = wp::vec3f;

V Vec(float x, float y, float z) { return V{{x, y, z}}; }

class BvhTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Array> Vecs(const std::vector<V>& v) {
    ArrayLayout layout =
        *MakeArrayLayout(types::Vector(3, ScalarKind::kFloat32), {static_cast<int64_t>(v.size())});
    auto buffer = *pool_.Allocate(std::max<uint64_t>(1, v.size() * sizeof(V)), "test");
    if (!v.empty()) std::memcpy(buffer->data(), v.data(), v.size() * sizeof(V));
    return std::make_shared<Array>("cpu", layout, std::move(buffer));
  }
  std::shared_ptr<Bvh> Make(const std::vector<V>& lo, const std::vector<V>& hi, int leaf = 1,
                            BvhSplit split = BvhSplit::kSah) {
    lowers_ = Vecs(lo);
    uppers_ = Vecs(hi);
    auto bvh = Bvh::Create("cpu", lowers_, uppers_, leaf, pool_);
    EXPECT_TRUE(bvh.ok()) << bvh.status();
    EXPECT_TRUE((*bvh)->Rebuild(split).ok());
    return *bvh;
  }
  // The items a kernel's query yields (sorted; each at most once, checked).
  std::vector<int> Run(const std::shared_ptr<Bvh>& bvh, int kind, V a, V b, float r = 0.0f,
                       float max_dist = INFINITY, int root = -1) {
    std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(7, bvh);
    wp::launch_ctx ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    ctx.objects = t->entries();
    ctx.num_objects = 1;
    wp::bvh_query_t q;
    switch (kind) {
      case wp::BVH_QUERY_RAY: q = wp::bvh_query_ray(&ctx, 1, 7, a, b, root); break;
      case wp::BVH_QUERY_CAPSULE: q = wp::bvh_query_capsule(&ctx, 1, 7, a, b, r, root); break;
      case wp::BVH_QUERY_SPHERE: q = wp::bvh_query_sphere(&ctx, 1, 7, a, r, root); break;
      default: q = wp::bvh_query_aabb(&ctx, 1, 7, a, b, root); break;
    }
    std::vector<int> out;
    wp::int32 index = -1;
    while (wp::bvh_query_next(q, index, max_dist) && out.size() < 1000000) out.push_back(index);
    EXPECT_EQ(ctx.fault.flag, 0);
    std::sort(out.begin(), out.end());
    EXPECT_TRUE(std::adjacent_find(out.begin(), out.end()) == out.end()) << "an item reported twice";
    return out;
  }
  // The tree's invariants.
  void CheckTree(const Bvh& bvh) {
    const wp::bvh_t& t = bvh.native();
    if (t.num_items == 0) return;
    ASSERT_EQ(t.root, 0);
    ASSERT_LE(t.num_nodes, 2 * t.num_items - 1);
    EXPECT_LT(t.max_depth + 1, wp::BVH_STACK_SIZE);
    std::vector<int> seen(t.num_items, 0);
    for (int i = 0; i < t.num_nodes; ++i) {
      const wp::bvh_node_t& n = t.nodes[i];
      if (wp::bvh_node_is_leaf(n)) {
        ASSERT_LE(wp::bvh_leaf_end(n) - n.left, bvh.leaf_size());
        for (int k = n.left; k < wp::bvh_leaf_end(n); ++k) {
          const int item = t.primitives[k];
          ++seen[item];
          for (int a = 0; a < 3; ++a) {
            if (std::isnan(t.item_lowers[item].c[a]) || std::isnan(t.item_uppers[item].c[a])) continue;
            EXPECT_LE(n.lower.c[a], t.item_lowers[item].c[a]);
            EXPECT_GE(n.upper.c[a], t.item_uppers[item].c[a]);
          }
        }
      } else {
        for (int c : {n.left, n.right}) {
          ASSERT_GT(c, i);
          ASSERT_LT(c, t.num_nodes);
          EXPECT_EQ(t.parents[c], i);
          for (int a = 0; a < 3; ++a) {
            EXPECT_LE(n.lower.c[a], t.nodes[c].lower.c[a]);
            EXPECT_GE(n.upper.c[a], t.nodes[c].upper.c[a]);
          }
        }
      }
    }
    for (int i = 0; i < t.num_items; ++i) EXPECT_EQ(seen[i], 1) << "item " << i;
  }

  std::shared_ptr<MemoryAccount> account_ = MemoryAccount::Create("test", 0);
  SegmentPool pool_{account_};
  std::shared_ptr<const Array> lowers_, uppers_;
};

bool Overlap(V al, V ah, V bl, V bh) {
  for (int a = 0; a < 3; ++a)
    if (al.c[a] > bh.c[a] || ah.c[a] < bl.c[a]) return false;
  return true;
}

// Warp's slab test, in double: the hit parameter or NAN.
double RayBox(V s, V d, V lo, V hi) {
  double tmin = -INFINITY, tmax = INFINITY;
  for (int a = 0; a < 3; ++a) {
    const double r = 1.0 / static_cast<double>(d.c[a]);
    const double t1 = (lo.c[a] - s.c[a]) * r, t2 = (hi.c[a] - s.c[a]) * r;
    tmin = std::fmax(tmin, std::fmin(t1, t2));
    tmax = std::fmin(tmax, std::fmax(t1, t2));
  }
  return (tmax >= 0 && tmax >= tmin) ? tmin : NAN;
}

void RandomBoxes(size_t n, uint32_t seed, std::vector<V>* lo, std::vector<V>* hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-5.0f, 5.0f), e(0.0f, 1.5f);
  lo->resize(n);
  hi->resize(n);
  for (size_t i = 0; i < n; ++i) {
    (*lo)[i] = Vec(u(rng), u(rng), u(rng));
    (*hi)[i] = Vec((*lo)[i].c[0] + e(rng), (*lo)[i].c[1] + e(rng), (*lo)[i].c[2] + e(rng));
  }
}

TEST_F(BvhTest, CreateChecksArraysAndChargesTheTree) {
  auto lo = Vecs({Vec(0, 0, 0), Vec(1, 1, 1)});
  auto hi = Vecs({Vec(1, 1, 1)});
  EXPECT_EQ(Bvh::Create("cpu", lo, hi, 1, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Bvh::Create("cpu", lo, lo, 0, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Bvh::Create("cuda:0", lo, lo, 1, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  ArrayLayout flayout = *MakeArrayLayout(types::Scalar(ScalarKind::kFloat32), {6});
  auto floats = std::make_shared<Array>("cpu", flayout, *pool_.Allocate(24, "test"));
  EXPECT_EQ(Bvh::Create("cpu", floats, floats, 1, pool_).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<V> l, h;
  RandomBoxes(20000, 1, &l, &h);
  auto big_lo = Vecs(l), big_hi = Vecs(h);
  const uint64_t before = account_->used();
  auto bvh = Bvh::Create("cpu", big_lo, big_hi, 1, pool_);
  ASSERT_TRUE(bvh.ok()) << bvh.status();
  // Nodes (32 bytes) and parents (4) of 2n - 1 nodes, n item indices;
  // the pool charges whole segments, some room of which may be older.
  EXPECT_GE(account_->used() - before + 65536, uint64_t{39999 * 36 + 20000 * 4});
  SegmentPool small(MemoryAccount::Create("small", 16 << 10));
  EXPECT_EQ(Bvh::Create("cpu", big_lo, big_hi, 1, small).status().code(), absl::StatusCode::kResourceExhausted);
}

// The builder's scratch (a byte per item, 5 from 32,768 items, 13 grouped)
// is allocated with the tree, in its one block of the session's pool:
// charged to its account while the tree lives (so a build never allocates
// and never fails for memory), released with it.
TEST_F(BvhTest, BuildScratchIsChargedWithTheTreeAndReleasedWithIt) {
  EXPECT_EQ(BvhBuildScratchBytes(0, false), 0);
  EXPECT_GE(BvhBuildScratchBytes(1000, false), 1000);
  EXPECT_GE(BvhBuildScratchBytes(40000, false), 5 * 40000);
  EXPECT_GE(BvhBuildScratchBytes(1000, true), 13 * 1000);
  std::vector<V> l, h;
  RandomBoxes(40000, 3, &l, &h);
  lowers_ = Vecs(l);
  uppers_ = Vecs(h);
  std::vector<wp::int32> group(l.size());
  for (size_t i = 0; i < group.size(); ++i) group[i] = static_cast<wp::int32>(i % 5) - 2;
  ArrayLayout layout = *MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {static_cast<int64_t>(group.size())});
  auto buffer = *pool_.Allocate(group.size() * sizeof(wp::int32), "test");
  std::memcpy(buffer->data(), group.data(), group.size() * sizeof(wp::int32));
  auto groups = std::make_shared<Array>("cpu", layout, std::move(buffer));
  for (bool grouped : {false, true}) {
    SCOPED_TRACE(grouped ? "grouped" : "ungrouped");
    // A pool of its own that keeps no freed segment: its account holds the
    // tree's memory and nothing else.
    SegmentPoolOptions options;
    options.segment_cache_lifetime = absl::ZeroDuration();
    auto account = MemoryAccount::Create("tree", 0);
    SegmentPool pool(account, options);
    auto bvh = Bvh::Create("cpu", lowers_, uppers_, 4, pool, grouped ? groups : nullptr);
    ASSERT_TRUE(bvh.ok()) << bvh.status();
    // Nodes (32 bytes) and parents (4) of 2n - 1 nodes and the slack, n
    // item indices, group ids and roots, and the scratch: one block.
    const uint64_t tree = (79999 + kBvhBuildSlack) * 36 + 40000 * 4 + (grouped ? 2 * 40000 * 4 : 0);
    const uint64_t scratch = static_cast<uint64_t>(BvhBuildScratchBytes(40000, grouped));
    const SegmentPoolStats stats = pool.stats();
    EXPECT_EQ(stats.blocks_live, 1u);
    EXPECT_GE(stats.block_bytes, tree + scratch);
    EXPECT_LT(stats.block_bytes, tree + scratch + 4096 + 6 * 64);
    EXPECT_GE(account->used(), stats.block_bytes);
    const uint64_t charged = account->used();
    // Builds (on threads too) and refits take nothing more.
    auto threads = [](int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
      std::vector<std::thread> workers;
      for (int64_t i = 0; i < n; i += grain) workers.emplace_back([&fn, i, n, grain] { fn(i, std::min(n, i + grain)); });
      for (auto& w : workers) w.join();
    };
    const ParallelFor parallel(threads);
    ASSERT_TRUE((*bvh)->Rebuild(BvhSplit::kSah).ok());
    ASSERT_TRUE((*bvh)->Rebuild(BvhSplit::kSah, nullptr, &parallel).ok());
    ASSERT_TRUE((*bvh)->Refit().ok());
    CheckTree(**bvh);
    if (grouped) {  // negative groups sort first (signed order)
      const wp::bvh_t& t = (*bvh)->native();
      ASSERT_EQ(t.num_groups, 5);
      for (int g = 0; g < 5; ++g) EXPECT_EQ(t.group_ids[g], g - 2);
    }
    EXPECT_EQ(account->used(), charged);
    EXPECT_EQ(pool.stats().blocks_live, stats.blocks_live);
    bvh->reset();
    EXPECT_EQ(pool.stats().blocks_live, 0u);
    EXPECT_EQ(account->used(), 0u);
  }
}

// A tree is one block of the pool; a session that makes a tree and frees
// the one before, in a loop (wp.Mesh / wp.Bvh + synchronize: the new one is
// made when its batch is accepted, the old one freed in stream order), gets
// the freed tree's memory file back from the pool's cache: no new file, no
// fresh pages. (With a block per part, five of 1 MiB or more, more than the
// cache keeps, every tree of the bench's large mesh made a new file.)
TEST_F(BvhTest, TreesMadeAndFreedInALoopReuseTheirMemory) {
  std::vector<V> l, h;
  RandomBoxes(300000, 5, &l, &h);  // every part of 1 MiB or more
  lowers_ = Vecs(l);
  uppers_ = Vecs(h);
  SegmentPool pool(MemoryAccount::Create("loop", 0));
  std::shared_ptr<Bvh> last;
  uint64_t committed = 0, reuses = 0;
  for (int k = 0; k < 8; ++k) {
    auto bvh = Bvh::Create("cpu", lowers_, uppers_, 4, pool);
    ASSERT_TRUE(bvh.ok()) << bvh.status();
    EXPECT_EQ(pool.stats().blocks_live, last != nullptr ? 2u : 1u);
    last = *std::move(bvh);  // frees the one before
    if (k == 2) {
      committed = pool.stats().committed_bytes;
      reuses = pool.stats().cache_reuses;
    } else if (k > 2) {
      EXPECT_EQ(pool.stats().committed_bytes, committed) << "tree " << k;
      EXPECT_EQ(pool.stats().cache_reuses, reuses + static_cast<uint64_t>(k - 2)) << "tree " << k;
    }
  }
  ASSERT_TRUE(last->Rebuild(BvhSplit::kSah).ok());
  CheckTree(*last);
}

TEST_F(BvhTest, UnbuiltAndEmptyTreesYieldNothing) {
  lowers_ = Vecs({Vec(0, 0, 0)});
  uppers_ = Vecs({Vec(1, 1, 1)});
  auto unbuilt = *Bvh::Create("cpu", lowers_, uppers_, 1, pool_);
  EXPECT_TRUE(Run(unbuilt, wp::BVH_QUERY_AABB, Vec(-9, -9, -9), Vec(9, 9, 9)).empty());
  auto empty = Make({}, {});
  EXPECT_TRUE(Run(empty, wp::BVH_QUERY_AABB, Vec(-9, -9, -9), Vec(9, 9, 9)).empty());
  EXPECT_TRUE(Run(empty, wp::BVH_QUERY_RAY, Vec(-9, 0, 0), Vec(1, 0, 0)).empty());
}

TEST_F(BvhTest, QueriesMatchBruteForceForEverySplitAndLeafSize) {
  std::vector<V> lo, hi;
  RandomBoxes(700, 2, &lo, &hi);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-7.0f, 7.0f), w(0.0f, 4.0f), r(0.0f, 3.0f);
  for (BvhSplit split : {BvhSplit::kSah, BvhSplit::kMedian}) {
    for (int leaf : {1, 2, 4, 8}) {
      auto bvh = Make(lo, hi, leaf, split);
      CheckTree(*bvh);
      for (int trial = 0; trial < 40; ++trial) {
        const V a = Vec(u(rng), u(rng), u(rng));
        const V b = Vec(a.c[0] + w(rng), a.c[1] + w(rng), a.c[2] + w(rng));
        std::vector<int> want;
        for (int i = 0; i < 700; ++i)
          if (Overlap(a, b, lo[i], hi[i])) want.push_back(i);
        EXPECT_EQ(Run(bvh, wp::BVH_QUERY_AABB, a, b), want) << "aabb trial " << trial;

        V d = Vec(u(rng), u(rng), u(rng));
        const float len = std::sqrt(d.c[0] * d.c[0] + d.c[1] * d.c[1] + d.c[2] * d.c[2]);
        for (float& c : d.c) c /= len;
        const float max_dist = trial % 2 ? 4.0f : INFINITY;
        want.clear();
        for (int i = 0; i < 700; ++i) {
          const double t = RayBox(a, d, lo[i], hi[i]);
          if (!std::isnan(t) && !(t >= max_dist)) want.push_back(i);
        }
        EXPECT_EQ(Run(bvh, wp::BVH_QUERY_RAY, a, d, 0.0f, max_dist), want) << "ray trial " << trial;

        const float radius = r(rng);
        want.clear();
        for (int i = 0; i < 700; ++i) {
          double d2 = 0;
          for (int k = 0; k < 3; ++k) {
            const double e = std::max({static_cast<double>(lo[i].c[k]) - a.c[k],
                                       static_cast<double>(a.c[k]) - hi[i].c[k], 0.0});
            d2 += e * e;
          }
          if (d2 <= static_cast<double>(radius) * radius) want.push_back(i);
        }
        EXPECT_EQ(Run(bvh, wp::BVH_QUERY_SPHERE, a, a, radius), want) << "sphere trial " << trial;
      }
    }
  }
}

TEST_F(BvhTest, AxisParallelRaysAndCapsulesAlongBoxFaces) {
  // A row of unit boxes on the x axis; rays along their shared faces.
  std::vector<V> lo, hi;
  for (int i = 0; i < 10; ++i) {
    lo.push_back(Vec(float(i), 0, 0));
    hi.push_back(Vec(float(i) + 1, 1, 1));
  }
  auto bvh = Make(lo, hi);
  std::vector<int> all(10);
  for (int i = 0; i < 10; ++i) all[i] = i;
  // Through the middle of the row: every box.
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_RAY, Vec(-1, 0.5f, 0.5f), Vec(1, 0, 0)), all);
  // Starting inside box 4, going +x: 4..9.
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_RAY, Vec(4.5f, 0.5f, 0.5f), Vec(1, 0, 0)), std::vector<int>({4, 5, 6, 7, 8, 9}));
  // max_dist 2.5 from x = -1: boxes entered at t = 1, 2 (t = 3 is not < 2.5).
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_RAY, Vec(-1, 0.5f, 0.5f), Vec(1, 0, 0), 0, 2.5f), std::vector<int>({0, 1}));
  // Missing above: nothing.
  EXPECT_TRUE(Run(bvh, wp::BVH_QUERY_RAY, Vec(-1, 1.5f, 0.5f), Vec(1, 0, 0)).empty());
  // A capsule from (-1, 1.5, .5) along +x, radius 0.5: the inflated boxes
  // reach y = 1.5 (touching counts); box i is entered at t = (i + .5) / 3.5,
  // so max_dist 0.9 keeps boxes 0..2.
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_CAPSULE, Vec(-1, 1.5f, 0.5f), Vec(3.5f, 0, 0), 0.5f, 0.9f),
            std::vector<int>({0, 1, 2}));
  EXPECT_TRUE(Run(bvh, wp::BVH_QUERY_CAPSULE, Vec(-1, 1.6f, 0.5f), Vec(3.5f, 0, 0), 0.5f, 1.0f).empty());
  // A sphere of radius 0 touching box faces.
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_SPHERE, Vec(3, 1, 1), Vec(3, 1, 1), 0.0f), std::vector<int>({2, 3}));
}

TEST_F(BvhTest, DegenerateInputsBuildShallowTrees) {
  // Identical boxes, points (zero-size boxes), NaN and infinite boxes.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<V> lo, hi;
    for (int i = 0; i < 5000; ++i) {
      if (variant == 0) {
        lo.push_back(Vec(1, 1, 1));
        hi.push_back(Vec(2, 2, 2));
      } else if (variant == 1) {
        lo.push_back(Vec(float(i % 7), 0, 0));
        hi.push_back(lo.back());
      } else {
        const float x = i % 3 == 0 ? NAN : (i % 3 == 1 ? INFINITY : float(i));
        lo.push_back(Vec(x, 0, -x));
        hi.push_back(Vec(x, 1, 1));
      }
    }
    auto bvh = Make(lo, hi, 1);
    CheckTree(*bvh);
    EXPECT_LT(bvh->native().max_depth, 62) << variant;
    std::vector<int> want;
    for (int i = 0; i < 5000; ++i)
      if (Overlap(Vec(0, 0, 0), Vec(3, 3, 3), lo[i], hi[i])) want.push_back(i);
    if (variant < 2) EXPECT_EQ(Run(bvh, wp::BVH_QUERY_AABB, Vec(0, 0, 0), Vec(3, 3, 3)), want) << variant;
  }
}

TEST_F(BvhTest, RefitFollowsMovedBoxesAndRootsOutOfRangeFault) {
  std::vector<V> lo, hi;
  RandomBoxes(300, 4, &lo, &hi);
  auto bvh = Make(lo, hi, 2);
  // Move every box by +20 in x, in the arrays the tree reads.
  auto* l = reinterpret_cast<V*>(lowers_->data());
  auto* h = reinterpret_cast<V*>(uppers_->data());
  for (int i = 0; i < 300; ++i) {
    l[i].c[0] += 20;
    h[i].c[0] += 20;
  }
  std::vector<int> all(300);
  for (int i = 0; i < 300; ++i) all[i] = i;
  EXPECT_TRUE(Run(bvh, wp::BVH_QUERY_AABB, Vec(10, -10, -10), Vec(30, 10, 10)).size() < 300);
  ASSERT_TRUE(bvh->Refit().ok());
  CheckTree(*bvh);
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_AABB, Vec(10, -10, -10), Vec(30, 10, 10)), all);
  EXPECT_TRUE(Run(bvh, wp::BVH_QUERY_AABB, Vec(-10, -10, -10), Vec(9, 10, 10)).empty());
  // A subtree root: only the items under it.
  const wp::bvh_t& t = bvh->native();
  const int sub = t.nodes[0].left;
  std::set<int> under;
  std::vector<int> stack{sub};
  while (!stack.empty()) {
    const wp::bvh_node_t& n = t.nodes[stack.back()];
    stack.pop_back();
    if (wp::bvh_node_is_leaf(n)) {
      for (int k = n.left; k < wp::bvh_leaf_end(n); ++k) under.insert(t.primitives[k]);
    } else {
      stack.push_back(n.left);
      stack.push_back(n.right);
    }
  }
  EXPECT_EQ(Run(bvh, wp::BVH_QUERY_AABB, Vec(-99, -99, -99), Vec(99, 99, 99), 0, INFINITY, sub),
            std::vector<int>(under.begin(), under.end()));
  // A root outside the tree records FAULT_OBJECT_INDEX and yields nothing.
  std::shared_ptr<const ObjectTable> table = ObjectTable::Empty()->With(7, bvh);
  wp::launch_ctx ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  ctx.objects = table->entries();
  ctx.num_objects = 1;
  auto q = wp::bvh_query_aabb(&ctx, 12, 7, Vec(-99, -99, -99), Vec(99, 99, 99), t.num_nodes);
  wp::int32 index = -5;
  EXPECT_FALSE(wp::bvh_query_next(q, index, INFINITY));
  EXPECT_EQ(index, -5);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_OBJECT_INDEX);
  EXPECT_EQ(ctx.fault.line, 12);
  EXPECT_EQ(ctx.fault.index, t.num_nodes);
  // An unknown id: FAULT_UNKNOWN_OBJECT.
  std::memset(&ctx.fault, 0, sizeof(ctx.fault));
  auto u = wp::bvh_query_ray(&ctx, 13, 8, Vec(0, 0, 0), Vec(1, 0, 0), -1);
  EXPECT_FALSE(wp::bvh_query_next(u, index, INFINITY));
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_UNKNOWN_OBJECT);
}

TEST_F(BvhTest, GroupedTreesKeepEachGroupInItsOwnSubtree) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  const int n = 700;
  std::vector<V> lo(n), hi(n);
  std::vector<wp::int32> group(n);
  const wp::int32 kGroups[] = {-7, 0, 3, 4, 100000};
  for (int i = 0; i < n; ++i) {
    lo[i] = Vec(u(rng), u(rng), u(rng));
    hi[i] = Vec(lo[i].c[0] + 0.5f, lo[i].c[1] + 0.5f, lo[i].c[2] + 0.5f);
    group[i] = kGroups[rng() % 5];
  }
  ArrayLayout layout = *MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {n});
  auto buffer = *pool_.Allocate(n * sizeof(wp::int32), "test");
  std::memcpy(buffer->data(), group.data(), n * sizeof(wp::int32));
  auto groups = std::make_shared<Array>("cpu", layout, std::move(buffer));
  for (int leaf : {1, 3}) {
    for (BvhSplit split : {BvhSplit::kSah, BvhSplit::kMedian}) {
      lowers_ = Vecs(lo);
      uppers_ = Vecs(hi);
      auto made = Bvh::Create("cpu", lowers_, uppers_, leaf, pool_, groups);
      ASSERT_TRUE(made.ok()) << made.status();
      auto bvh = *made;
      ASSERT_TRUE(bvh->Rebuild(split).ok());
      CheckTree(*bvh);
      const wp::bvh_t& t = bvh->native();
      ASSERT_EQ(t.num_groups, 5);
      for (int g = 0; g < 5; ++g) {
        EXPECT_EQ(t.group_ids[g], kGroups[g]);
        const wp::int32 root = wp::bvh_group_root(&t, kGroups[g]);
        ASSERT_GE(root, 0);
        // Everything below the group's root, and nothing else, is of the group.
        std::vector<int> want;
        for (int i = 0; i < n; ++i)
          if (group[i] == kGroups[g]) want.push_back(i);
        EXPECT_EQ(Run(bvh, wp::BVH_QUERY_AABB, Vec(-1, -1, -1), Vec(99, 99, 99), 0, INFINITY, root), want);
      }
      EXPECT_EQ(wp::bvh_group_root(&t, 1), -1);
      EXPECT_EQ(wp::bvh_group_root(&t, -8), -1);
      EXPECT_EQ(wp::bvh_group_root(&t, 100001), -1);
      // Refit keeps the groups.
      ASSERT_TRUE(bvh->Refit().ok());
      EXPECT_EQ(wp::bvh_group_root(&t, kGroups[2]) >= 0, true);
    }
  }
  // Ungrouped: all of group 0.
  auto plain = Make(lo, hi);
  EXPECT_EQ(wp::bvh_group_root(&plain->native(), 0), 0);
  EXPECT_EQ(wp::bvh_group_root(&plain->native(), 1), -1);
  // Groups of the wrong count or type are refused.
  EXPECT_EQ(Bvh::Create("cpu", lowers_, uppers_, 1, pool_, Vecs(lo)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A parallel build (subtrees on threads at once) makes the same tree as the
// sequential one, numbered otherwise: as many nodes, the same depth, the
// same items in the same leaf order, and queries that yield the same items;
// grouped builds keep their group roots; skewed splits defer many subtrees.
TEST_F(BvhTest, ParallelBuildsMakeTheSameTree) {
  auto threads = [](int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
    // Every chunk on a thread of its own, started in reverse order.
    std::vector<std::thread> workers;
    for (int64_t i = n - 1; i >= 0; --i) workers.emplace_back([&fn, i] { fn(i, i + 1); });
    for (auto& w : workers) w.join();
  };
  const ParallelFor parallel(threads);
  std::vector<V> lo, hi;
  RandomBoxes(60000, 33, &lo, &hi);
  // Half the items in a tight cluster: uneven splits near the top.
  for (size_t i = 0; i < lo.size(); i += 2) {
    lo[i] = Vec(lo[i].c[0] * 1e-3f, lo[i].c[1] * 1e-3f, lo[i].c[2] * 1e-3f);
    hi[i] = Vec(lo[i].c[0] + 1e-4f, lo[i].c[1] + 1e-4f, lo[i].c[2] + 1e-4f);
  }
  std::vector<wp::int32> group(lo.size());
  for (size_t i = 0; i < group.size(); ++i) group[i] = static_cast<wp::int32>(i % 3 == 0 ? 5 : i % 7);
  ArrayLayout layout = *MakeArrayLayout(types::Scalar(ScalarKind::kInt32), {static_cast<int64_t>(group.size())});
  auto buffer = *pool_.Allocate(group.size() * sizeof(wp::int32), "test");
  std::memcpy(buffer->data(), group.data(), group.size() * sizeof(wp::int32));
  auto groups = std::make_shared<Array>("cpu", layout, std::move(buffer));
  for (bool grouped : {false, true}) {
    for (int leaf : {1, 4}) {
      for (BvhSplit split : {BvhSplit::kSah, BvhSplit::kMedian}) {
        lowers_ = Vecs(lo);
        uppers_ = Vecs(hi);
        auto a = *Bvh::Create("cpu", lowers_, uppers_, leaf, pool_, grouped ? groups : nullptr);
        auto b = *Bvh::Create("cpu", lowers_, uppers_, leaf, pool_, grouped ? groups : nullptr);
        ASSERT_TRUE(a->Rebuild(split).ok());
        ASSERT_TRUE(b->Rebuild(split, nullptr, &parallel).ok());
        CheckTree(*b);
        const wp::bvh_t &ta = a->native(), &tb = b->native();
        ASSERT_EQ(tb.num_nodes, ta.num_nodes);
        EXPECT_EQ(tb.max_depth, ta.max_depth);
        EXPECT_TRUE(std::equal(ta.primitives, ta.primitives + ta.num_items, tb.primitives));
        // The subtrees were built apart: the numbering differs.
        EXPECT_NE(std::memcmp(ta.parents, tb.parents, sizeof(wp::int32) * ta.num_nodes), 0);
        for (int q = 0; q < 8; ++q) {
          const V c = Vec(q - 4.0f, 0.5f * q - 2.0f, 1.0f - 0.3f * q);
          const V d = Vec(c.c[0] + 1.0f, c.c[1] + 2.0f, c.c[2] + 0.5f);
          EXPECT_EQ(Run(b, wp::BVH_QUERY_AABB, c, d), Run(a, wp::BVH_QUERY_AABB, c, d));
          EXPECT_EQ(Run(b, wp::BVH_QUERY_RAY, c, Vec(1.0f, 0.2f * q, -0.5f)),
                    Run(a, wp::BVH_QUERY_RAY, c, Vec(1.0f, 0.2f * q, -0.5f)));
        }
        if (grouped) {
          ASSERT_EQ(tb.num_groups, ta.num_groups);
          for (int g = 0; g < tb.num_groups; ++g) {
            const wp::int32 root = wp::bvh_group_root(&tb, tb.group_ids[g]);
            ASSERT_GE(root, 0);
            std::vector<int> want;
            for (size_t i = 0; i < group.size(); ++i)
              if (group[i] == tb.group_ids[g]) want.push_back(static_cast<int>(i));
            EXPECT_EQ(Run(b, wp::BVH_QUERY_AABB, Vec(-9, -9, -9), Vec(9, 9, 9), 0, INFINITY, root), want);
          }
        }
        // A refit of the parallel tree gives the boxes a rebuild gives.
        ASSERT_TRUE(b->Refit().ok());
        CheckTree(*b);
      }
    }
  }
}

TEST_F(BvhTest, ParallelBuildsAreTheSameOnAnyNumberOfThreads) {
  // Large enough for nodes binned and partitioned in chunks (32,768 items
  // and more) two levels down, with NaN and infinite boxes, duplicates and
  // a tight cluster.
  std::vector<V> lo, hi;
  RandomBoxes(150000, 41, &lo, &hi);
  for (size_t i = 0; i < lo.size(); i += 3) {
    lo[i] = Vec(lo[i].c[0] * 1e-3f, lo[i].c[1] * 1e-3f, lo[i].c[2] * 1e-3f);
    hi[i] = Vec(lo[i].c[0] + 1e-4f, lo[i].c[1] + 1e-4f, lo[i].c[2] + 1e-4f);
  }
  for (size_t i = 1; i < lo.size(); i += 997) lo[i].c[i % 3] = NAN;
  for (size_t i = 2; i < lo.size(); i += 991) hi[i].c[(i + 1) % 3] = INFINITY;
  for (size_t i = 4; i < lo.size(); i += 983) lo[i] = Vec(-INFINITY, -INFINITY, -INFINITY);
  for (size_t i = 5; i < lo.size(); i += 7) {
    lo[i] = lo[5];
    hi[i] = hi[5];
  }
  // Chunks claimed from a counter by k threads, so every run hands them
  // out differently.
  auto on_threads = [](int k) {
    return [k](int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
      std::atomic<int64_t> next{0};
      std::vector<std::thread> workers;
      for (int i = 0; i < k; ++i) {
        workers.emplace_back([&] {
          for (int64_t c; (c = next.fetch_add(1)) * grain < n;) fn(c * grain, std::min(n, (c + 1) * grain));
        });
      }
      for (auto& w : workers) w.join();
    };
  };
  auto one = on_threads(1), two = on_threads(2), three = on_threads(3), seven = on_threads(7);
  const std::vector<ParallelFor> runners = {ParallelFor(one), ParallelFor(two), ParallelFor(three),
                                            ParallelFor(seven)};
  lowers_ = Vecs(lo);
  uppers_ = Vecs(hi);
  for (int leaf : {1, 4}) {
    for (BvhSplit split : {BvhSplit::kSah, BvhSplit::kMedian}) {
      SCOPED_TRACE(testing::Message() << "leaf " << leaf << (split == BvhSplit::kSah ? " sah" : " median"));
      auto serial = *Bvh::Create("cpu", lowers_, uppers_, leaf, pool_);
      ASSERT_TRUE(serial->Rebuild(split).ok());
      CheckTree(*serial);
      const wp::bvh_t& ts = serial->native();
      std::shared_ptr<Bvh> first;
      for (const ParallelFor& run : runners) {
        auto b = *Bvh::Create("cpu", lowers_, uppers_, leaf, pool_);
        ASSERT_TRUE(b->Rebuild(split, nullptr, &run).ok());
        const wp::bvh_t& tb = b->native();
        // The serial build's tree, numbered otherwise.
        ASSERT_EQ(tb.num_nodes, ts.num_nodes);
        EXPECT_EQ(tb.max_depth, ts.max_depth);
        EXPECT_TRUE(std::equal(ts.primitives, ts.primitives + ts.num_items, tb.primitives));
        if (first == nullptr) {
          CheckTree(*b);
          first = b;
          continue;
        }
        // Every thread count: the same nodes, bit for bit.
        const wp::bvh_t& tf = first->native();
        EXPECT_EQ(std::memcmp(tf.nodes, tb.nodes, sizeof(wp::bvh_node_t) * tf.num_nodes), 0);
        EXPECT_EQ(std::memcmp(tf.parents, tb.parents, sizeof(wp::int32) * tf.num_nodes), 0);
      }
      const V c = Vec(-1.0f, -0.5f, 0.0f), d = Vec(1.0f, 2.0f, 0.5f);
      EXPECT_EQ(Run(first, wp::BVH_QUERY_AABB, c, d), Run(serial, wp::BVH_QUERY_AABB, c, d));
      EXPECT_EQ(Run(first, wp::BVH_QUERY_RAY, c, Vec(1.0f, 0.3f, -0.2f)),
                Run(serial, wp::BVH_QUERY_RAY, c, Vec(1.0f, 0.3f, -0.2f)));
    }
  }
}

}  // namespace
}  // namespace warpd::runtime
