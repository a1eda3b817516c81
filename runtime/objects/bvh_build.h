// warpd runtime: building and refitting BVH trees on the CPU (the trees of
// wp.Bvh and wp.Mesh; runtime/native/warpd/native/bvh.h has the layout).
//
// BuildBvhTree splits top-down: binned SAH (16 bins over the item centroids
// along the axis of their widest spread) or median splits (Warp's "sah" and
// "median"), down to leaves of at most `leaf_size` items. Nodes are
// numbered so that every child comes after its parent (RefitBvhTree relies
// on it); the tree never gets
// deeper than the query stack allows: past kSahDepth levels it splits at
// the median, which halves the items per level.
// Items with NaN or infinite bounds are placed (their centroid sorts as
// +inf) but never break the build; their boxes are what the queries test.
//
//   std::vector<wp::bvh_node_t> nodes(MaxBvhNodes(n));
//   std::vector<int32_t> parents(nodes.size()), prims(n);
//   ASSIGN_OR_RETURN(BvhShape shape, BuildBvhTree(lowers, uppers, n, 1, BvhSplit::kSah, nodes.data(),
//                                                parents.data(), prims.data()));
//   ... item boxes move ...
//   RefitBvhTree(lowers, uppers, n, prims.data(), nodes.data(), shape.num_nodes);
//
// Thread-safety: none (the caller owns the buffers; runs in stream order).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "warpd/native/bvh.h"

namespace warpd::runtime {

enum class BvhSplit { kSah, kMedian };

// Below this depth the SAH builder splits by cost; deeper, by median.
inline constexpr int kSahDepth = 30;

struct BvhShape {
  int32_t num_nodes = 0;
  int32_t root = -1;  // -1 when there are no items
  int32_t max_depth = 0;
  int32_t num_groups = 0;  // grouped builds: distinct groups
};

// A grouped build (Warp's groups=): `of_item[i]` is item i's group. Each
// group's items form one subtree below splits between groups (at the
// middle group, in increasing group order); the build writes the distinct
// groups in increasing order to `ids` and their subtrees' roots to `roots`
// (n entries each at most; BvhShape::num_groups used).
struct BvhGroups {
  const int32_t* of_item;
  int32_t* ids;
  int32_t* roots;
};

// Nodes a tree of n items may need: 2n - 1 (one for n = 0).
inline int64_t MaxBvhNodes(int64_t n) { return n > 0 ? 2 * n - 1 : 1; }

// The nodes a parallel build uses as scratch past a tree's own (see
// BuildBvhTree).
inline constexpr int32_t kBvhBuildSlack = 128;
inline int64_t BvhNodeCapacity(int64_t n) { return MaxBvhNodes(n) + kBvhBuildSlack; }

// Runs fn over chunks of [0, n), each at least `grain` long, maybe on
// several threads at once; returns when every chunk has run (a device's
// HostParallelFor).
using ParallelFor =
    absl::FunctionRef<void(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn)>;

// The scratch memory a build of n items needs (BuildBvhTree's `scratch`):
// about 1 byte per item, 5 from 32,768 items, 13 for a grouped build.
int64_t BvhBuildScratchBytes(int64_t n, bool grouped);

// Builds the tree of items [0, n) with boxes (lowers[i], uppers[i]) into
// nodes/parents (MaxBvhNodes(n) each; BvhNodeCapacity(n) with `parallel`)
// and prims (n), grouped when `groups` is not null; with `parallel`, the
// top levels of a large tree are built level by level, each large node's
// binning and partition in chunks on its threads, and the subtrees below
// at once (the same tree as without, its nodes numbered in another order;
// the same nodes, bit for bit, on any number of threads). `scratch`:
// BvhBuildScratchBytes(n, groups != nullptr) bytes of any content, 8-byte
// aligned, that the build overwrites (a tree object keeps them with its
// buffers, so they are charged like them); null: the build allocates them
// on the heap and frees them on return.
// INVALID_ARGUMENT for n < 0 or n >= 2^30, leaf_size < 1; CANCELLED when
// *cancel is set.
absl::StatusOr<BvhShape> BuildBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, int leaf_size,
                                      BvhSplit split, wp::bvh_node_t* nodes, int32_t* parents, int32_t* prims,
                                      const std::atomic<bool>* cancel = nullptr, const BvhGroups* groups = nullptr,
                                      const ParallelFor* parallel = nullptr, std::byte* scratch = nullptr);

// Recomputes every node's box from the items' current boxes, leaves first
// (children come after parents), keeping the topology.
void RefitBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, const int32_t* prims,
                  wp::bvh_node_t* nodes, int32_t num_nodes);

}  // namespace warpd::runtime
