#include "runtime/objects/bvh_build.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace warpd::runtime {

namespace {

constexpr int kBins = 16;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Nodes of at least kChunkedItems items bin and partition their items in
// chunks of kChunk, on the ParallelFor's threads when there is one. The
// chunks are fixed, never sized by the thread count, and every result is
// either merged exactly (counts, min and max) or independent of the
// chunking (a stable partition), so the tree is the same on any number of
// threads and without any.
constexpr int32_t kChunk = 16384;
constexpr int32_t kChunkedItems = 2 * kChunk;

// Where the parts of a build's scratch (BvhBuildScratchBytes) start, in
// bytes, each 64-byte aligned: first a byte per item (each item's bin in
// the binning pass of the node holding it; nodes own disjoint ranges, so
// subtrees built at once share it), then, from kChunkedItems items, an
// int32 per item (a stable partition's copy of a chunked node's items);
// grouped builds: a uint64 per item there instead (the (group, item) keys
// sorted first, which the copy reuses), then each group's first item (n + 1
// int32).
struct ScratchLayout {
  ScratchLayout(int64_t n, bool grouped) {
    auto align = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
    copy = align(n);
    group_start = copy + align(grouped ? 8 * n : n >= kChunkedItems ? 4 * n : 0);
    end = group_start + (grouped ? 4 * (n + 1) : 0);
  }
  int64_t copy, group_start, end;
};

struct Box {
  float lo[3] = {kInf, kInf, kInf};
  float hi[3] = {-kInf, -kInf, -kInf};

  void Grow(const wp::vec3f& l, const wp::vec3f& u) {
    for (int a = 0; a < 3; ++a) {
      // NaN bounds leave the box as it is (comparisons are false). Written
      // as selects, not conditional stores, so they compile to minss/maxss:
      // the builder's binning pass spent most of its time on mispredicted
      // branches here.
      lo[a] = l.c[a] < lo[a] ? l.c[a] : lo[a];
      hi[a] = u.c[a] > hi[a] ? u.c[a] : hi[a];
    }
  }
  void Grow(const Box& b) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], b.lo[a]);
      hi[a] = std::max(hi[a], b.hi[a]);
    }
  }
};

// An item's centroid on an axis as a sort key: NaN sorts as +inf.
float Key(const wp::vec3f* lowers, const wp::vec3f* uppers, int32_t item, int axis) {
  const float c = 0.5f * lowers[item].c[axis] + 0.5f * uppers[item].c[axis];
  return std::isnan(c) ? kInf : c;
}

// A node's range of items to split, with what the pass that made it learned:
// the items' bounding box and the bounds of their finite centroids.
struct Task {
  int32_t node, begin, end, depth, parent;
  Box box;
  float clo[3], chi[3];
  // Grouped builds: the task's groups [gbegin, gend) (its items are theirs,
  // contiguous in group order); more than one: split between groups first.
  int32_t gbegin = 0, gend = 0;
};

// Box and finite centroid bounds of a set of items (Lanes measures them).
struct Bounds {
  Box box;
  float clo[3] = {kInf, kInf, kInf};
  float chi[3] = {-kInf, -kInf, -kInf};

  void Merge(const Bounds& b) {
    box.Grow(b.box);
    for (int a = 0; a < 3; ++a) {
      clo[a] = std::min(clo[a], b.clo[a]);
      chi[a] = std::max(chi[a], b.chi[a]);
    }
  }
  Task ToTask(int32_t node, int32_t begin, int32_t end, int32_t depth, int32_t parent) const {
    Task t{node, begin, end, depth, parent, box, {}, {}, 0, 0};
    for (int a = 0; a < 3; ++a) {
      t.clo[a] = clo[a];
      t.chi[a] = chi[a];
    }
    return t;
  }
};

// Bins of one axis: where its finite centroids start and how many bins
// one unit of centroid spans.
struct Axis {
  double lo = 0.0, scale = 0.0;
  // A centroid coordinate's bin: +inf and NaN (Key's +inf) go to the last
  // bin, -inf to the first. Selects, not branches.
  int Bin(float c) const {
    double x = (static_cast<double>(c) - lo) * scale;
    x = std::isnan(c) ? kBins : x;
    x = x >= 0.0 ? x : 0.0;
    x = x < kBins - 1 ? x : kBins - 1;
    return static_cast<int>(x);
  }
};

// Four-lane vectors (GCC/Clang vector extensions, on any target): x, y, z
// and an unused lane, so that each box update is one vector instruction.
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

F4 Load(const wp::vec3f& v) { return F4{v.c[0], v.c[1], v.c[2], 0.0f}; }

// The centroid, as Key computes it.
F4 Centroid(F4 l, F4 u) {
  const F4 half = {0.5f, 0.5f, 0.5f, 0.5f};
  return half * l + half * u;
}

// Half the surface area of the box [lo, hi] (lanes 0..2), in double: 0 for
// empty or degenerate boxes (a negative or NaN extent counts 0), finite
// always (an infinite extent counts 1e300). Vector operations without
// branches: the SAH sweeps call it once or twice per bin.
typedef double D4 __attribute__((vector_size(32)));
double AreaOf(F4 lo, F4 hi) {
  D4 e = __builtin_convertvector(hi, D4) - __builtin_convertvector(lo, D4);
  const D4 zero = {0.0, 0.0, 0.0, 0.0};
  const D4 huge = {1e300, 1e300, 1e300, 1e300};
  const D4 inf = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  e = e > zero ? e : zero;  // NaN and negative extents: 0
  e = e == inf ? huge : e;  // the only non-finite extent left
  return e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
}

// Bounds in four-lane vectors, for the passes that measure item by item.
struct Lanes {
  F4 lo = {kInf, kInf, kInf, kInf};
  F4 hi = {-kInf, -kInf, -kInf, -kInf};
  F4 clo = {kInf, kInf, kInf, kInf};
  F4 chi = {-kInf, -kInf, -kInf, -kInf};

  // Grows by an item with box [l, u] and centroid c. Selects, not
  // branches: NaN bounds and non-finite centroid coordinates change
  // nothing (comparisons with NaN are false; inf - inf is NaN).
  void Add(F4 l, F4 u, F4 c) {
    const F4 inf = {kInf, kInf, kInf, kInf};
    const I4 finite = (c - c) == 0.0f;
    GrowBox(l, u);
    const F4 cl = finite ? c : inf;
    const F4 ch = finite ? c : -inf;
    clo = cl < clo ? cl : clo;
    chi = ch > chi ? ch : chi;
  }
  void GrowBox(F4 l, F4 u) {
    lo = l < lo ? l : lo;
    hi = u > hi ? u : hi;
  }
  void Merge(const Lanes& o) {
    GrowBox(o.lo, o.hi);
    clo = o.clo < clo ? o.clo : clo;
    chi = o.chi > chi ? o.chi : chi;
  }
  // Merges into `b` (exact: min and max).
  void MergeInto(Bounds* b) const {
    for (int a = 0; a < 3; ++a) {
      b->box.lo[a] = std::min(b->box.lo[a], lo[a]);
      b->box.hi[a] = std::max(b->box.hi[a], hi[a]);
      b->clo[a] = std::min(b->clo[a], clo[a]);
      b->chi[a] = std::max(b->chi[a], chi[a]);
    }
  }
};

// The bins of one SAH split: each bin's items measured (so the children's
// bounds are merged bins, never measured again) and counted.
struct Bins {
  Lanes lanes[kBins];
  int32_t count[kBins] = {};

  void Merge(const Bins& b) {
    for (int k = 0; k < kBins; ++k) {
      lanes[k].Merge(b.lanes[k]);
      count[k] += b.count[k];
    }
  }
};

// Calls fn(i) for i in [0, n), on `parallel`'s threads when not null.
template <typename Fn>
void ForEachChunk(const ParallelFor* parallel, int64_t n, const Fn& fn) {
  if (parallel == nullptr || n < 2) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  (*parallel)(n, 1, [&fn](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

// Splits top-down. Each SAH split takes two passes over its items: one
// bins them along the axis of their widest centroid spread, measuring each
// bin (box, centroid bounds) and noting each item's bin, one partitions
// them by those notes (in place; stable and in chunks for large nodes); the
// children's bounds are the merged bins of their sides, so no pass
// recomputes what the last one knew. Nodes of a few items skip the bin
// array (FewSahSplit), with the same result.
class Builder {
 public:
  Builder(const wp::vec3f* lowers, const wp::vec3f* uppers, int leaf_size, BvhSplit split, wp::bvh_node_t* nodes,
          int32_t* parents, int32_t* prims)
      : lowers_(lowers), uppers_(uppers), leaf_size_(leaf_size), split_(split), nodes_(nodes), parents_(parents),
        prims_(prims) {}

  absl::StatusOr<BvhShape> Run(int32_t n, const std::atomic<bool>* cancel, const BvhGroups* groups,
                               const ParallelFor* parallel, std::byte* scratch) {
    BvhShape shape;
    if (n == 0) {
      nodes_[0] = wp::bvh_node_t{};
      nodes_[0].right = ~0;  // an empty leaf
      parents_[0] = -1;
      return shape;
    }
    // Scratch (ScratchLayout): the caller's, or our own.
    std::vector<std::byte> own;
    if (scratch == nullptr) {
      own.resize(static_cast<size_t>(BvhBuildScratchBytes(n, groups != nullptr)));
      scratch = own.data();
    }
    const ScratchLayout at(n, groups != nullptr);
    bin_of_ = reinterpret_cast<uint8_t*>(scratch);
    copy_ = reinterpret_cast<int32_t*>(scratch + at.copy);
    Task root = MeasureAll(n, parallel).ToTask(0, 0, n, 0, -1);
    // Grouped: the items in group order (stable), each group's range, and
    // a first level of splits between groups (at the middle group), so each
    // group's items form one subtree, whose root is recorded.
    if (groups != nullptr) {
      // Sorted as (group, item) keys, unique, so the order is a stable
      // sort's; the group array is read once (the client may change it).
      auto* keys = reinterpret_cast<uint64_t*>(scratch + at.copy);
      group_start_ = reinterpret_cast<int32_t*>(scratch + at.group_start);
      for (int32_t k = 0; k < n; ++k) {
        const uint32_t g = static_cast<uint32_t>(groups->of_item[k]) ^ 0x80000000u;  // signed order
        keys[k] = (static_cast<uint64_t>(g) << 32) | static_cast<uint32_t>(prims_[k]);
      }
      std::sort(keys, keys + n);
      int32_t count = 0;
      for (int32_t k = 0; k < n; ++k) {
        prims_[k] = static_cast<int32_t>(keys[k] & 0xffffffffu);
        if (k == 0 || keys[k] >> 32 != keys[k - 1] >> 32) {
          groups->ids[count] = static_cast<int32_t>(static_cast<uint32_t>(keys[k] >> 32) ^ 0x80000000u);
          groups->roots[count] = -1;
          group_start_[count++] = k;
        }
      }
      shape.num_groups = count;
      group_start_[count] = n;
      root.gend = shape.num_groups;
      groups_ = groups;
    }
    // With a parallel runner, the top of the tree is built level by level
    // (GrowTop: large nodes' passes in chunks on the threads, a level's
    // smaller nodes at once) down to subtrees of at most n / 4 items
    // (about four: a thread the machine takes away holds up one at most;
    // none below kParallelItems), which
    // are built at once on the threads, each into a range of its own past
    // the top's nodes (2m - 1 nodes for m items, the most it can take);
    // then, in order, each subtree's root moves to the node the top gave it
    // and its other nodes down to the next free index (always lower: no
    // overlap), renumbered, so the nodes stay dense with children after
    // parents. The ranges need at most one node more than a dense tree per
    // subtree: kBvhBuildSlack bounds their count.
    constexpr int32_t kParallelItems = 1024;
    std::vector<Task> deferred;
    int32_t next = 1;
    if (parallel != nullptr && n >= 8 * kParallelItems) {
      const int32_t defer = std::max(n / 4, kParallelItems);
      if (absl::Status s = GrowTop(root, &next, &shape.max_depth, cancel, defer, &deferred, parallel); !s.ok()) {
        return s;
      }
    } else if (absl::Status s = Grow(root, nodes_, parents_, &next, &shape.max_depth, cancel); !s.ok()) {
      return s;
    }
    if (!deferred.empty()) {
      std::vector<int32_t> base(deferred.size()), count(deferred.size(), 1), depth(deferred.size(), 0);
      std::vector<absl::Status> status(deferred.size());
      int32_t at = next;
      for (size_t i = 0; i < deferred.size(); ++i) {
        base[i] = at;
        at += static_cast<int32_t>(MaxBvhNodes(deferred[i].end - deferred[i].begin));
      }
      ForEachChunk(parallel, static_cast<int64_t>(deferred.size()), [&](int64_t i) {
        Task t = deferred[static_cast<size_t>(i)];
        t.node = 0;  // local numbering from the range's first node
        t.parent = -1;
        t.depth = 0;
        t.gbegin = t.gend = 0;  // a group's root was recorded above
        const size_t k = static_cast<size_t>(i);
        status[k] = Grow(t, nodes_ + base[k], parents_ + base[k], &count[k], &depth[k], cancel);
      });
      for (size_t i = 0; i < deferred.size(); ++i) {
        if (!status[i].ok()) return status[i];
        const Task& t = deferred[i];
        const int32_t from = base[i];
        // Local node 0 goes to t.node; local k > 0 to next + k - 1 (<= from + k).
        auto global = [&](int32_t k) { return k == 0 ? t.node : next + k - 1; };
        for (int32_t k = 0; k < count[i]; ++k) {
          wp::bvh_node_t node = nodes_[from + k];
          if (!wp::bvh_node_is_leaf(node)) {
            node.left = global(node.left);
            node.right = global(node.right);
          }
          const int32_t parent = k == 0 ? t.parent : global(parents_[from + k]);
          nodes_[global(k)] = node;
          parents_[global(k)] = parent;
        }
        next += count[i] - 1;
        shape.max_depth = std::max(shape.max_depth, t.depth + depth[i]);
      }
    }
    shape.num_nodes = next;
    shape.root = 0;
    return shape;
  }

 private:
  // Splits task `root` (its node already numbered) and its descendants
  // top-down, depth first, into nodes/parents, numbering new nodes from
  // *next.
  absl::Status Grow(const Task& root, wp::bvh_node_t* nodes, int32_t* parents, int32_t* next, int32_t* max_depth,
                    const std::atomic<bool>* cancel) {
    std::vector<Task> work{root};
    uint32_t steps = 0;
    while (!work.empty()) {
      if ((++steps & 0x3ff) == 0 && Cancelled(cancel)) return absl::CancelledError("BVH build: cancelled");
      const Task t = work.back();
      work.pop_back();
      *max_depth = std::max(*max_depth, t.depth);
      Task children[2];
      if (Step(t, nodes, parents, *next, children, nullptr)) {
        work.push_back(children[1]);
        work.push_back(children[0]);
        *next += 2;
      }
    }
    return absl::OkStatus();
  }

  // The top of a parallel build, level by level from `root`: each level's
  // tasks of one group or none with at most `defer` items (while
  // kBvhBuildSlack allows) go to *deferred, the others are split, those of
  // kChunkedItems or more one after another (their passes in chunks on the
  // threads), the rest at once, one per thread (when they hold
  // kChunkedItems items together; else here); their children, numbered in
  // the level's order from *next, make the next level. The numbering and
  // the tree depend on the items only, never on the threads.
  absl::Status GrowTop(const Task& root, int32_t* next, int32_t* max_depth, const std::atomic<bool>* cancel,
                       int32_t defer, std::vector<Task>* deferred, const ParallelFor* parallel) {
    std::vector<Task> level{root}, split, children;
    while (!level.empty()) {
      if (Cancelled(cancel)) return absl::CancelledError("BVH build: cancelled");
      split.clear();
      for (const Task& t : level) {
        if (t.gend - t.gbegin <= 1 && t.end - t.begin <= defer && t.end - t.begin > leaf_size_ &&
            deferred->size() < static_cast<size_t>(kBvhBuildSlack)) {
          if (t.gend - t.gbegin == 1) groups_->roots[t.gbegin] = t.node;
          deferred->push_back(t);
        } else {
          *max_depth = std::max(*max_depth, t.depth);
          split.push_back(t);
        }
      }
      // Children's numbers, in the level's order: a task splits iff it has
      // more than one group or more than leaf_size items.
      std::vector<int32_t> first(split.size(), -1);
      for (size_t i = 0; i < split.size(); ++i) {
        const Task& t = split[i];
        if (t.gend - t.gbegin > 1 || t.end - t.begin > leaf_size_) {
          first[i] = *next;
          *next += 2;
        }
      }
      children.assign(2 * split.size(), Task{});
      std::vector<size_t> small;
      for (size_t i = 0; i < split.size(); ++i) {
        if (split[i].end - split[i].begin >= kChunkedItems) {
          Step(split[i], nodes_, parents_, first[i], &children[2 * i], parallel);
        } else {
          small.push_back(i);
        }
      }
      // At once only when there is enough to share: each ParallelFor wakes
      // the workers and waits for the last of them.
      int64_t small_items = 0;
      for (size_t i : small) small_items += split[i].end - split[i].begin;
      ForEachChunk(small_items >= kChunkedItems ? parallel : nullptr, static_cast<int64_t>(small.size()),
                   [&](int64_t k) {
                     const size_t i = small[static_cast<size_t>(k)];
                     Step(split[i], nodes_, parents_, first[i], &children[2 * i], nullptr);
                   });
      level.clear();
      for (size_t i = 0; i < split.size(); ++i) {
        if (first[i] < 0) continue;
        level.push_back(children[2 * i]);
        level.push_back(children[2 * i + 1]);
      }
    }
    return absl::OkStatus();
  }

  static bool Cancelled(const std::atomic<bool>* cancel) {
    return cancel != nullptr && cancel->load(std::memory_order_relaxed);
  }

  // Writes task t's node (its parent, its box; a leaf, or children
  // numbered first and first + 1) and returns whether it split, into
  // children[0] and children[1]. `parallel` (or null) runs the chunks of a
  // large node's passes.
  bool Step(const Task& t, wp::bvh_node_t* nodes, int32_t* parents, int32_t first, Task* children,
            const ParallelFor* parallel) {
    if (t.gend - t.gbegin == 1) groups_->roots[t.gbegin] = t.node;  // one group's subtree
    wp::bvh_node_t& node = nodes[t.node];
    for (int a = 0; a < 3; ++a) {
      node.lower.c[a] = t.box.lo[a];
      node.upper.c[a] = t.box.hi[a];
    }
    parents[t.node] = t.parent;
    if (t.gend - t.gbegin > 1) {  // between groups
      const int32_t gmid = t.gbegin + (t.gend - t.gbegin) / 2;
      const int32_t mid = group_start_[gmid];
      node.left = first;
      node.right = first + 1;
      children[0] = Measure(t.begin, mid).ToTask(first, t.begin, mid, t.depth + 1, t.node);
      children[0].gbegin = t.gbegin;
      children[0].gend = gmid;
      children[1] = Measure(mid, t.end).ToTask(first + 1, mid, t.end, t.depth + 1, t.node);
      children[1].gbegin = gmid;
      children[1].gend = t.gend;
      return true;
    }
    if (t.end - t.begin <= leaf_size_) {
      node.left = t.begin;
      node.right = ~t.end;
      return false;
    }
    Bounds left, right;
    const int32_t mid = Split(t, left, right, parallel);
    node.left = first;
    node.right = first + 1;
    children[0] = left.ToTask(first, t.begin, mid, t.depth + 1, t.node);
    children[1] = right.ToTask(first + 1, mid, t.end, t.depth + 1, t.node);
    return true;
  }

  Bounds Measure(int32_t begin, int32_t end) const {
    Lanes x;
    for (int32_t k = begin; k < end; ++k) {
      const F4 l = Load(lowers_[prims_[k]]), u = Load(uppers_[prims_[k]]);
      x.Add(l, u, Centroid(l, u));
    }
    Bounds b;
    x.MergeInto(&b);
    return b;
  }

  // Numbers the items 0..n-1 in prims_ and measures them all, in chunks.
  Bounds MeasureAll(int32_t n, const ParallelFor* parallel) {
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<Bounds> part(static_cast<size_t>(chunks));
    ForEachChunk(parallel, chunks, [&](int64_t c) {
      const int32_t begin = static_cast<int32_t>(c * kChunk), end = std::min(n, begin + kChunk);
      for (int32_t k = begin; k < end; ++k) prims_[k] = k;
      part[static_cast<size_t>(c)] = Measure(begin, end);
    });
    Bounds all;
    for (const Bounds& b : part) all.Merge(b);
    return all;
  }

  // Partitions [begin, end) and returns the split position, strictly
  // inside; `left` and `right` measure the two sides.
  int32_t Split(const Task& t, Bounds& left, Bounds& right, const ParallelFor* parallel) {
    if (split_ == BvhSplit::kSah && t.depth < kSahDepth) {
      const int32_t mid = SahSplit(t, left, right, parallel);
      if (mid > t.begin && mid < t.end) return mid;
    }
    const int32_t mid = MedianSplit(t);
    left = Measure(t.begin, mid);
    right = Measure(mid, t.end);
    return mid;
  }

  // The median along the axis of the widest centroid spread.
  int32_t MedianSplit(const Task& t) {
    float lo[3] = {kInf, kInf, kInf}, hi[3] = {-kInf, -kInf, -kInf};
    for (int32_t k = t.begin; k < t.end; ++k) {
      for (int a = 0; a < 3; ++a) {
        const float c = Key(lowers_, uppers_, prims_[k], a);
        lo[a] = std::min(lo[a], c);
        hi[a] = std::max(hi[a], c);
      }
    }
    int axis = 0;
    double best = -1.0;
    for (int a = 0; a < 3; ++a) {
      double e = static_cast<double>(hi[a]) - static_cast<double>(lo[a]);
      if (std::isnan(e)) e = 0.0;
      if (e > best) {
        best = e;
        axis = a;
      }
    }
    const int32_t mid = t.begin + (t.end - t.begin) / 2;
    std::nth_element(prims_ + t.begin, prims_ + mid, prims_ + t.end, [&](int32_t x, int32_t y) {
      const float kx = Key(lowers_, uppers_, x, axis), ky = Key(lowers_, uppers_, y, axis);
      return kx != ky ? kx < ky : x < y;
    });
    return mid;
  }

  // Bins items [begin, end) into `out` along `axis`, noting each one's bin
  // in bin_of_.
  void BinRange(int32_t begin, int32_t end, int axis_index, const Axis& axis, Bins* out) {
    switch (axis_index) {
      case 0:
        return BinRangeOn<0>(begin, end, axis, out);
      case 1:
        return BinRangeOn<1>(begin, end, axis, out);
      default:
        return BinRangeOn<2>(begin, end, axis, out);
    }
  }

  // BinRange along axis kAxis (a constant: the key is a lane picked at
  // compile time, not through memory). Items in a row often fall in one
  // bin (neighbouring triangles of a mesh), so the bins' updates run in
  // kSets interleaved sets, counts included: each update then waits for
  // the one kSets items back, not for the last (a store-to-load chain).
  template <int kAxis>
  void BinRangeOn(int32_t begin, int32_t end, const Axis& axis, Bins* out) {
    constexpr int kSets = 4;
    // Locals: the byte stores to bin_of may alias anything, and would make
    // every pointer reload from `this`.
    const int32_t* prims = prims_;
    const wp::vec3f* lowers = lowers_;
    const wp::vec3f* uppers = uppers_;
    uint8_t* bin_of = bin_of_;
    Lanes lanes[kSets][kBins];
    int32_t count[kSets][kBins] = {};
    for (int32_t k = begin; k < end; ++k) {
      const int32_t item = prims[k];
      const F4 l = Load(lowers[item]), u = Load(uppers[item]);
      const F4 c = Centroid(l, u);
      const int b = axis.Bin(c[kAxis]);
      bin_of[k] = static_cast<uint8_t>(b);
      ++count[k % kSets][b];
      lanes[k % kSets][b].Add(l, u, c);
    }
    for (int b = 0; b < kBins; ++b) {
      out->count[b] = count[0][b];
      out->lanes[b] = lanes[0][b];
      for (int set = 1; set < kSets; ++set) {
        out->count[b] += count[set][b];
        out->lanes[b].Merge(lanes[set][b]);
      }
    }
  }

  // The cheapest of the bin boundaries along the axis of the widest
  // centroid spread (as Warp's CPU builder picks it: binning one axis
  // instead of three makes the build about 1.6x faster for a tree whose
  // SAH cost is a few percent higher) by the surface area heuristic, the
  // items partitioned there (left and right measured); t.begin when no
  // boundary separates the items.
  int32_t SahSplit(const Task& t, Bounds& left, Bounds& right, const ParallelFor* parallel) {
    int best_axis = -1;
    double widest = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double extent = static_cast<double>(t.chi[a]) - static_cast<double>(t.clo[a]);
      if (extent > widest && std::isfinite(extent)) {
        widest = extent;
        best_axis = a;
      }
    }
    if (best_axis < 0) return t.begin;
    const Axis axis{static_cast<double>(t.clo[best_axis]), kBins / widest};
    const int32_t count = t.end - t.begin;
    if (count <= kFewItems) return FewSahSplit(t, best_axis, axis, left, right);
    const bool chunked = count >= kChunkedItems;
    const int64_t chunks = chunked ? (count + kChunk - 1) / kChunk : 1;
    std::vector<Bins> part(chunked ? static_cast<size_t>(chunks) : 0);
    Bins bins;
    if (chunked) {
      ForEachChunk(parallel, chunks, [&](int64_t c) {
        const int32_t begin = t.begin + static_cast<int32_t>(c * kChunk);
        BinRange(begin, std::min(t.end, begin + kChunk), best_axis, axis, &part[static_cast<size_t>(c)]);
      });
      for (const Bins& b : part) bins.Merge(b);
    } else {
      BinRange(t.begin, t.end, best_axis, axis, &bins);
    }
    const int best_bin = CheapestBoundary(bins);
    if (best_bin < 0) return t.begin;
    int32_t mid = t.begin;
    Lanes side[2];
    for (int b = 0; b < kBins; ++b) {
      side[b <= best_bin ? 0 : 1].Merge(bins.lanes[b]);
      if (b <= best_bin) mid += bins.count[b];
    }
    side[0].MergeInto(&left);
    side[1].MergeInto(&right);
    if (chunked) {
      PartitionChunks(t, best_bin, mid, part, parallel);
    } else {
      // In place (Lomuto, without branches): positions past k are still
      // unmoved when k reaches them, so bin_of_[k] is item prims_[k]'s.
      int32_t i = t.begin;
      for (int32_t k = t.begin; k < t.end; ++k) {
        const int32_t item = prims_[k];
        const bool goes_left = bin_of_[k] <= best_bin;
        prims_[k] = prims_[i];
        prims_[i] = item;
        i += goes_left ? 1 : 0;
      }
    }
    return mid;
  }

  // SahSplit of at most kFewItems items: the bins swept over the
  // non-empty ones only (a bit mask), without a bin_of_ pass. The same
  // boundary and the same children's bounds as SahSplit's (an empty bin
  // repeats the cost of the boundary before it); the left items keep their
  // order, then the right ones.
  static constexpr int32_t kFewItems = 32;
  int32_t FewSahSplit(const Task& t, int axis_index, const Axis& axis, Bounds& left, Bounds& right) {
    const int32_t n = t.end - t.begin;
    int32_t item[kFewItems];
    uint8_t bin[kFewItems];
    Bins bins;
    uint32_t used = 0;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t it = prims_[t.begin + i];
      const F4 l = Load(lowers_[it]), u = Load(uppers_[it]);
      const F4 c = Centroid(l, u);
      const int b = axis.Bin(c[axis_index]);
      item[i] = it;
      bin[i] = static_cast<uint8_t>(b);
      ++bins.count[b];
      bins.lanes[b].Add(l, u, c);
      used |= 1u << b;
    }
    double right_area[kBins];
    int32_t right_count[kBins];
    Lanes acc;
    int32_t r = 0;
    for (uint32_t m = used; m != 0;) {
      const int b = 31 - std::countl_zero(m);
      m &= ~(1u << b);
      acc.GrowBox(bins.lanes[b].lo, bins.lanes[b].hi);
      r += bins.count[b];
      right_area[b] = AreaOf(acc.lo, acc.hi);
      right_count[b] = r;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    int best_bin = -1;
    Lanes lbox;
    int32_t l = 0;
    for (uint32_t m = used;;) {
      const int b = std::countr_zero(m);
      m &= m - 1;
      if (m == 0) break;  // the last non-empty bin: nothing on its right
      const int next = std::countr_zero(m);
      lbox.GrowBox(bins.lanes[b].lo, bins.lanes[b].hi);
      l += bins.count[b];
      const double cost = AreaOf(lbox.lo, lbox.hi) * l + right_area[next] * right_count[next];
      if (cost < best_cost) {
        best_cost = cost;
        best_bin = b;
      }
    }
    if (best_bin < 0) return t.begin;
    Lanes side[2];
    int32_t lpos = t.begin, rpos = t.begin;
    for (uint32_t m = used; m != 0; m &= m - 1) {
      const int b = std::countr_zero(m);
      side[b <= best_bin ? 0 : 1].Merge(bins.lanes[b]);
      if (b <= best_bin) rpos += bins.count[b];
    }
    side[0].MergeInto(&left);
    side[1].MergeInto(&right);
    const int32_t mid = rpos;
    for (int32_t i = 0; i < n; ++i) {
      const bool goes_left = bin[i] <= best_bin;
      prims_[goes_left ? lpos : rpos] = item[i];
      lpos += goes_left ? 1 : 0;
      rpos += goes_left ? 0 : 1;
    }
    return mid;
  }

  // The bin boundary of least SAH cost (the left side: bins <= the result),
  // -1 when none has items on both sides. An empty bin b > 0 repeats
  // boundary b - 1's cost exactly, and ties go to the first, so only
  // boundaries after non-empty bins are costed.
  static int CheapestBoundary(const Bins& bins) {
    double right_area[kBins];
    int32_t right_count[kBins];
    Lanes acc;
    int32_t n = 0;
    for (int b = kBins - 1; b > 0; --b) {
      if (bins.count[b] != 0 || b == kBins - 1) {
        acc.GrowBox(bins.lanes[b].lo, bins.lanes[b].hi);
        n += bins.count[b];
        right_area[b] = AreaOf(acc.lo, acc.hi);
      } else {
        right_area[b] = right_area[b + 1];
      }
      right_count[b] = n;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    int best_bin = -1;
    Lanes lbox;
    int32_t m = 0;
    for (int b = 0; b < kBins - 1; ++b) {
      if (bins.count[b] == 0) continue;
      lbox.GrowBox(bins.lanes[b].lo, bins.lanes[b].hi);
      m += bins.count[b];
      if (right_count[b + 1] == 0) break;  // and at every later boundary
      const double cost = AreaOf(lbox.lo, lbox.hi) * m + right_area[b + 1] * right_count[b + 1];
      if (cost < best_cost) {
        best_cost = cost;
        best_bin = b;
      }
    }
    return best_bin;
  }

  // A chunked node's stable partition: each chunk writes its left items
  // after the earlier chunks' left items (from t.begin) and its right ones
  // after theirs (from mid) into copy_, then copies its range back.
  void PartitionChunks(const Task& t, int best_bin, int32_t mid, const std::vector<Bins>& part,
                       const ParallelFor* parallel) {
    const size_t chunks = part.size();
    std::vector<int32_t> lpos(chunks), rpos(chunks);
    int32_t l = t.begin, r = mid;
    for (size_t c = 0; c < chunks; ++c) {
      int32_t left = 0, all = 0;
      for (int b = 0; b < kBins; ++b) {
        all += part[c].count[b];
        if (b <= best_bin) left += part[c].count[b];
      }
      lpos[c] = l;
      rpos[c] = r;
      l += left;
      r += all - left;
    }
    int32_t* out = copy_;
    ForEachChunk(parallel, static_cast<int64_t>(chunks), [&](int64_t c) {
      const int32_t begin = t.begin + static_cast<int32_t>(c * kChunk), end = std::min(t.end, begin + kChunk);
      int32_t lp = lpos[static_cast<size_t>(c)], rp = rpos[static_cast<size_t>(c)];
      for (int32_t k = begin; k < end; ++k) {
        const bool goes_left = bin_of_[k] <= best_bin;
        out[goes_left ? lp : rp] = prims_[k];
        lp += goes_left ? 1 : 0;
        rp += goes_left ? 0 : 1;
      }
    });
    ForEachChunk(parallel, static_cast<int64_t>(chunks), [&](int64_t c) {
      const int32_t begin = t.begin + static_cast<int32_t>(c * kChunk), end = std::min(t.end, begin + kChunk);
      std::memcpy(prims_ + begin, out + begin, sizeof(int32_t) * static_cast<size_t>(end - begin));
    });
  }

  const wp::vec3f* lowers_;
  const wp::vec3f* uppers_;
  const int leaf_size_;
  const BvhSplit split_;
  wp::bvh_node_t* nodes_;
  int32_t* parents_;
  int32_t* prims_;
  // Each position's bin in the binning pass of the node holding it (a
  // byte per item; nodes own disjoint ranges, so subtrees built at once
  // share it), and a stable partition's copy of a chunked node's items.
  uint8_t* bin_of_ = nullptr;
  int32_t* copy_ = nullptr;
  // Grouped builds: each group's first item in prims_ (and n), the groups.
  int32_t* group_start_ = nullptr;
  const BvhGroups* groups_ = nullptr;
};

}  // namespace

int64_t BvhBuildScratchBytes(int64_t n, bool grouped) { return n > 0 ? ScratchLayout(n, grouped).end : 0; }

absl::StatusOr<BvhShape> BuildBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, int leaf_size,
                                      BvhSplit split, wp::bvh_node_t* nodes, int32_t* parents, int32_t* prims,
                                      const std::atomic<bool>* cancel, const BvhGroups* groups,
                                      const ParallelFor* parallel, std::byte* scratch) {
  if (n < 0 || n >= (int64_t{1} << 30)) return absl::InvalidArgumentError("a BVH holds 0 to 2^30 - 1 items");
  if (leaf_size < 1) return absl::InvalidArgumentError("leaf_size must be greater than or equal to 1");
  Builder b(lowers, uppers, leaf_size, split, nodes, parents, prims);
  return b.Run(static_cast<int32_t>(n), cancel, groups, parallel, scratch);
}

void RefitBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, const int32_t* prims,
                  wp::bvh_node_t* nodes, int32_t num_nodes) {
  for (int32_t i = num_nodes - 1; i >= 0; --i) {
    wp::bvh_node_t& node = nodes[i];
    Box box;
    if (wp::bvh_node_is_leaf(node)) {
      const int32_t end = std::min<int64_t>(wp::bvh_leaf_end(node), n);
      for (int32_t k = std::max(node.left, 0); k < end; ++k) box.Grow(lowers[prims[k]], uppers[prims[k]]);
    } else {
      for (int32_t c : {node.left, node.right}) {
        if (c <= i || c >= num_nodes) continue;  // children come after parents
        Box child;
        for (int a = 0; a < 3; ++a) {
          child.lo[a] = nodes[c].lower.c[a];
          child.hi[a] = nodes[c].upper.c[a];
        }
        box.Grow(child);
      }
    }
    for (int a = 0; a < 3; ++a) {
      node.lower.c[a] = box.lo[a];
      node.upper.c[a] = box.hi[a];
    }
  }
}

}  // namespace warpd::runtime
