#include "runtime/objects/bvh_build.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace warpd::runtime {

namespace {

constexpr int kBins = 16;
constexpr float kInf = std::numeric_limits<float>::infinity();

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
  // Half the surface area; 0 for empty or degenerate boxes, finite always.
  double Area() const {
    double e[3];
    for (int a = 0; a < 3; ++a) {
      e[a] = static_cast<double>(hi[a]) - static_cast<double>(lo[a]);
      if (!(e[a] > 0.0)) e[a] = 0.0;
      if (!std::isfinite(e[a])) e[a] = 1e300;
    }
    return e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
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

// Box and finite centroid bounds of a range of items, grown item by item.
struct Bounds {
  Box box;
  float clo[3] = {kInf, kInf, kInf};
  float chi[3] = {-kInf, -kInf, -kInf};

  void Add(const wp::vec3f& l, const wp::vec3f& u) {
    box.Grow(l, u);
    for (int a = 0; a < 3; ++a) {
      const float c = 0.5f * l.c[a] + 0.5f * u.c[a];
      if (std::isfinite(c)) {
        clo[a] = std::min(clo[a], c);
        chi[a] = std::max(chi[a], c);
      }
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

// Splits top-down with an explicit stack. Each SAH split takes two passes
// over its items: one bins them along the axis of their widest centroid
// spread, one partitions them and measures both sides (their boxes and
// centroid bounds ride along in the children's tasks), so no pass
// recomputes what the last one knew.
class Builder {
 public:
  Builder(const wp::vec3f* lowers, const wp::vec3f* uppers, int leaf_size, BvhSplit split, wp::bvh_node_t* nodes,
          int32_t* parents, int32_t* prims)
      : lowers_(lowers), uppers_(uppers), leaf_size_(leaf_size), split_(split), nodes_(nodes), parents_(parents),
        prims_(prims) {}

  absl::StatusOr<BvhShape> Run(int32_t n, const std::atomic<bool>* cancel, const BvhGroups* groups,
                               const ParallelFor* parallel) {
    BvhShape shape;
    for (int32_t i = 0; i < n; ++i) prims_[i] = i;
    if (n == 0) {
      nodes_[0] = wp::bvh_node_t{};
      nodes_[0].right = ~0;  // an empty leaf
      parents_[0] = -1;
      return shape;
    }
    Task root = Measure(0, n).ToTask(0, 0, n, 0, -1);
    // Grouped: the items in group order (stable), each group's range, and
    // a first level of splits between groups (at the middle group), so each
    // group's items form one subtree, whose root is recorded.
    if (groups != nullptr) {
      std::vector<int32_t> of(groups->of_item, groups->of_item + n);  // read once: the array may change
      std::stable_sort(prims_, prims_ + n, [&](int32_t a, int32_t b) { return of[a] < of[b]; });
      for (int32_t k = 0; k < n; ++k) {
        if (k == 0 || of[prims_[k]] != of[prims_[k - 1]]) {
          groups->ids[group_start_.size()] = of[prims_[k]];
          groups->roots[group_start_.size()] = -1;
          group_start_.push_back(k);
        }
      }
      shape.num_groups = static_cast<int32_t>(group_start_.size());
      group_start_.push_back(n);
      root.gend = shape.num_groups;
      groups_ = groups;
    }
    // With a parallel runner, the top of the tree is built here and the
    // subtrees below it of at most n / 8 items (several per worker, for
    // balance; none below kParallelItems) at once on the workers, each into
    // a range of its own past the top's nodes (2m - 1 nodes for m items,
    // the most it can take); then, in order, each subtree's root moves to
    // the node the top gave it and its other nodes down to the next free
    // index (always lower: no overlap), renumbered, so the nodes stay dense
    // with children after parents. The ranges need at most one node more
    // than a dense tree per subtree: kBvhBuildSlack bounds their count.
    constexpr int32_t kParallelItems = 4096;
    const int32_t defer = parallel != nullptr && n >= 2 * kParallelItems ? std::max(n / 8, kParallelItems) : 0;
    std::vector<Task> deferred;
    int32_t next = 1;
    if (absl::Status s = Grow(root, nodes_, parents_, &next, &shape.max_depth, cancel, defer, &deferred); !s.ok()) {
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
      (*parallel)(static_cast<int64_t>(deferred.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          Task t = deferred[static_cast<size_t>(i)];
          t.node = 0;  // local numbering from the range's first node
          t.parent = -1;
          t.depth = 0;
          t.gbegin = t.gend = 0;  // a group's root was recorded above
          const size_t k = static_cast<size_t>(i);
          status[k] = Grow(t, nodes_ + base[k], parents_ + base[k], &count[k], &depth[k], cancel, 0, nullptr);
        }
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
  // top-down with an explicit stack, into nodes/parents, numbering new
  // nodes from *next; tasks of one group or none with at most `defer`
  // items (0: none) are left to the caller in *deferred instead.
  absl::Status Grow(const Task& root, wp::bvh_node_t* nodes, int32_t* parents, int32_t* next, int32_t* max_depth,
                    const std::atomic<bool>* cancel, int32_t defer, std::vector<Task>* deferred) {
    std::vector<Task> work{root};
    uint32_t steps = 0;
    while (!work.empty()) {
      if ((++steps & 0x3ff) == 0 && cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        return absl::CancelledError("BVH build: cancelled");
      }
      const Task t = work.back();
      work.pop_back();
      if (t.gend - t.gbegin == 1) groups_->roots[t.gbegin] = t.node;  // one group's subtree
      if (defer > 0 && t.gend - t.gbegin <= 1 && t.end - t.begin <= defer && t.end - t.begin > leaf_size_ &&
          deferred->size() < static_cast<size_t>(kBvhBuildSlack)) {
        deferred->push_back(t);
        continue;
      }
      *max_depth = std::max(*max_depth, t.depth);
      wp::bvh_node_t& node = nodes[t.node];
      for (int a = 0; a < 3; ++a) {
        node.lower.c[a] = t.box.lo[a];
        node.upper.c[a] = t.box.hi[a];
      }
      parents[t.node] = t.parent;
      if (t.gend - t.gbegin > 1) {  // between groups
        const int32_t gmid = t.gbegin + (t.gend - t.gbegin) / 2;
        const int32_t mid = group_start_[static_cast<size_t>(gmid)];
        node.left = *next;
        node.right = *next + 1;
        Task r = Measure(mid, t.end).ToTask(*next + 1, mid, t.end, t.depth + 1, t.node);
        r.gbegin = gmid;
        r.gend = t.gend;
        Task l = Measure(t.begin, mid).ToTask(*next, t.begin, mid, t.depth + 1, t.node);
        l.gbegin = t.gbegin;
        l.gend = gmid;
        work.push_back(r);
        work.push_back(l);
        *next += 2;
        continue;
      }
      const int32_t count = t.end - t.begin;
      if (count <= leaf_size_) {
        node.left = t.begin;
        node.right = ~t.end;
        continue;
      }
      Bounds left, right;
      const int32_t mid = Split(t, left, right);
      node.left = *next;
      node.right = *next + 1;
      work.push_back(right.ToTask(*next + 1, mid, t.end, t.depth + 1, t.node));
      work.push_back(left.ToTask(*next, t.begin, mid, t.depth + 1, t.node));
      *next += 2;
    }
    return absl::OkStatus();
  }

  Bounds Measure(int32_t begin, int32_t end) const {
    Bounds b;
    for (int32_t k = begin; k < end; ++k) b.Add(lowers_[prims_[k]], uppers_[prims_[k]]);
    return b;
  }

  // Partitions [begin, end) and returns the split position, strictly
  // inside; `left` and `right` measure the two sides.
  int32_t Split(const Task& t, Bounds& left, Bounds& right) {
    if (split_ == BvhSplit::kSah && t.depth < kSahDepth) {
      const int32_t mid = SahSplit(t, left, right);
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

  // Bins of one axis: where its finite centroids start and how many bins
  // one unit of centroid spans.
  struct Axis {
    double lo = 0.0, scale = 0.0;
    int Bin(float c) const {
      // Keys are never NaN (Key maps it to +inf): +inf goes to the last bin, -inf to the first.
      const double x = (static_cast<double>(c) - lo) * scale;
      if (!(x >= 0.0)) return 0;
      if (x >= kBins) return kBins - 1;
      return static_cast<int>(x);
    }
  };

  // The cheapest of the bin boundaries along the axis of the widest
  // centroid spread (as Warp's CPU builder picks it: binning one axis
  // instead of three makes the build about 1.6x faster for a tree whose
  // SAH cost is a few percent higher) by the surface area heuristic, the
  // items partitioned there (left and right measured); t.begin when no
  // boundary separates the items.
  int32_t SahSplit(const Task& t, Bounds& left, Bounds& right) {
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
    Box boxes[kBins];
    int32_t counts[kBins] = {};
    for (int32_t k = t.begin; k < t.end; ++k) {
      const int32_t item = prims_[k];
      const wp::vec3f& l = lowers_[item];
      const wp::vec3f& u = uppers_[item];
      const float c = 0.5f * l.c[best_axis] + 0.5f * u.c[best_axis];
      const int b = axis.Bin(std::isnan(c) ? kInf : c);
      ++counts[b];
      boxes[b].Grow(l, u);
    }
    // Sweep from the right, then from the left.
    double right_area[kBins];
    int32_t right_count[kBins];
    Box acc;
    int32_t n = 0;
    for (int b = kBins - 1; b > 0; --b) {
      acc.Grow(boxes[b]);
      n += counts[b];
      right_area[b] = acc.Area();
      right_count[b] = n;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    int best_bin = -1;
    Box lbox;
    int32_t m = 0;
    for (int b = 0; b < kBins - 1; ++b) {
      lbox.Grow(boxes[b]);
      m += counts[b];
      if (m == 0 || right_count[b + 1] == 0) continue;
      const double cost = lbox.Area() * m + right_area[b + 1] * right_count[b + 1];
      if (cost < best_cost) {
        best_cost = cost;
        best_bin = b;
      }
    }
    if (best_bin < 0) return t.begin;
    // Partition in place (Hoare-style), measuring each item as it settles on its side.
    auto goes_left = [&](int32_t item) {
      const float c = 0.5f * lowers_[item].c[best_axis] + 0.5f * uppers_[item].c[best_axis];
      return axis.Bin(std::isnan(c) ? kInf : c) <= best_bin;
    };
    int32_t i = t.begin, j = t.end - 1;
    while (true) {
      while (i <= j && goes_left(prims_[i])) {
        left.Add(lowers_[prims_[i]], uppers_[prims_[i]]);
        ++i;
      }
      while (i <= j && !goes_left(prims_[j])) {
        right.Add(lowers_[prims_[j]], uppers_[prims_[j]]);
        --j;
      }
      if (i >= j) break;
      std::swap(prims_[i], prims_[j]);
    }
    return i;
  }

  const wp::vec3f* lowers_;
  const wp::vec3f* uppers_;
  const int leaf_size_;
  const BvhSplit split_;
  wp::bvh_node_t* nodes_;
  int32_t* parents_;
  int32_t* prims_;
  // Grouped builds: each group's first item in prims_ (and n), the groups.
  std::vector<int32_t> group_start_;
  const BvhGroups* groups_ = nullptr;
};

}  // namespace

absl::StatusOr<BvhShape> BuildBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, int leaf_size,
                                      BvhSplit split, wp::bvh_node_t* nodes, int32_t* parents, int32_t* prims,
                                      const std::atomic<bool>* cancel, const BvhGroups* groups,
                                      const ParallelFor* parallel) {
  if (n < 0 || n >= (int64_t{1} << 30)) return absl::InvalidArgumentError("a BVH holds 0 to 2^30 - 1 items");
  if (leaf_size < 1) return absl::InvalidArgumentError("leaf_size must be greater than or equal to 1");
  Builder b(lowers, uppers, leaf_size, split, nodes, parents, prims);
  return b.Run(static_cast<int32_t>(n), cancel, groups, parallel);
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
