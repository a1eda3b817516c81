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
      // NaN bounds leave the box as it is (comparisons are false).
      if (l.c[a] < lo[a]) lo[a] = l.c[a];
      if (u.c[a] > hi[a]) hi[a] = u.c[a];
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

struct Task {
  int32_t node, begin, end, depth, parent;
};

class Builder {
 public:
  Builder(const wp::vec3f* lowers, const wp::vec3f* uppers, int leaf_size, BvhSplit split, wp::bvh_node_t* nodes,
          int32_t* parents, int32_t* prims)
      : lowers_(lowers), uppers_(uppers), leaf_size_(leaf_size), split_(split), nodes_(nodes), parents_(parents),
        prims_(prims) {}

  absl::StatusOr<BvhShape> Run(int32_t n, const std::atomic<bool>* cancel) {
    BvhShape shape;
    for (int32_t i = 0; i < n; ++i) prims_[i] = i;
    if (n == 0) {
      nodes_[0] = wp::bvh_node_t{};
      nodes_[0].right = ~0;  // an empty leaf
      parents_[0] = -1;
      return shape;
    }
    int32_t next = 1;
    std::vector<Task> work{{0, 0, n, 0, -1}};
    uint32_t steps = 0;
    while (!work.empty()) {
      if ((++steps & 0x3ff) == 0 && cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        return absl::CancelledError("BVH build: cancelled");
      }
      const Task t = work.back();
      work.pop_back();
      shape.max_depth = std::max(shape.max_depth, t.depth);
      Box box;
      for (int32_t k = t.begin; k < t.end; ++k) box.Grow(lowers_[prims_[k]], uppers_[prims_[k]]);
      wp::bvh_node_t& node = nodes_[t.node];
      for (int a = 0; a < 3; ++a) {
        node.lower.c[a] = box.lo[a];
        node.upper.c[a] = box.hi[a];
      }
      parents_[t.node] = t.parent;
      const int32_t count = t.end - t.begin;
      if (count <= leaf_size_) {
        node.left = t.begin;
        node.right = ~t.end;
        continue;
      }
      const int32_t mid = Split(t, box);
      node.left = next;
      node.right = next + 1;
      work.push_back({next + 1, mid, t.end, t.depth + 1, t.node});
      work.push_back({next, t.begin, mid, t.depth + 1, t.node});
      next += 2;
    }
    shape.num_nodes = next;
    shape.root = 0;
    return shape;
  }

 private:
  // Partitions [begin, end) and returns the split position, strictly inside.
  int32_t Split(const Task& t, const Box& box) {
    if (split_ == BvhSplit::kSah && t.depth < kSahDepth) {
      const int32_t mid = SahSplit(t, box);
      if (mid > t.begin && mid < t.end) return mid;
    }
    return MedianSplit(t);
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

  // The cheapest of the bin boundaries of the three axes by the surface
  // area heuristic; t.begin when no boundary separates the items.
  int32_t SahSplit(const Task& t, const Box&) {
    float clo[3] = {kInf, kInf, kInf}, chi[3] = {-kInf, -kInf, -kInf};
    for (int32_t k = t.begin; k < t.end; ++k) {
      for (int a = 0; a < 3; ++a) {
        const float c = Key(lowers_, uppers_, prims_[k], a);
        if (std::isfinite(c)) {
          clo[a] = std::min(clo[a], c);
          chi[a] = std::max(chi[a], c);
        }
      }
    }
    double best_cost = std::numeric_limits<double>::infinity();
    int best_axis = -1, best_bin = 0;
    for (int a = 0; a < 3; ++a) {
      const double extent = static_cast<double>(chi[a]) - static_cast<double>(clo[a]);
      if (!(extent > 0.0) || !std::isfinite(extent)) continue;
      Box boxes[kBins];
      int32_t counts[kBins] = {};
      for (int32_t k = t.begin; k < t.end; ++k) {
        const int32_t item = prims_[k];
        const int b = Bin(Key(lowers_, uppers_, item, a), clo[a], extent);
        ++counts[b];
        boxes[b].Grow(lowers_[item], uppers_[item]);
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
      Box left;
      int32_t m = 0;
      for (int b = 0; b < kBins - 1; ++b) {
        left.Grow(boxes[b]);
        m += counts[b];
        if (m == 0 || right_count[b + 1] == 0) continue;
        const double cost = left.Area() * m + right_area[b + 1] * right_count[b + 1];
        if (cost < best_cost) {
          best_cost = cost;
          best_axis = a;
          best_bin = b;
        }
      }
    }
    if (best_axis < 0) return t.begin;
    const double extent = static_cast<double>(chi[best_axis]) - static_cast<double>(clo[best_axis]);
    int32_t* mid = std::partition(prims_ + t.begin, prims_ + t.end, [&](int32_t item) {
      return Bin(Key(lowers_, uppers_, item, best_axis), clo[best_axis], extent) <= best_bin;
    });
    return static_cast<int32_t>(mid - prims_);
  }

  // The bin of centroid key c; +inf (and NaN) in the last.
  static int Bin(float c, float lo, double extent) {
    const double x = (static_cast<double>(c) - static_cast<double>(lo)) / extent * kBins;
    if (!(x >= 0.0)) return std::isnan(x) ? kBins - 1 : 0;
    if (x >= kBins) return kBins - 1;
    return static_cast<int>(x);
  }

  const wp::vec3f* lowers_;
  const wp::vec3f* uppers_;
  const int leaf_size_;
  const BvhSplit split_;
  wp::bvh_node_t* nodes_;
  int32_t* parents_;
  int32_t* prims_;
};

}  // namespace

absl::StatusOr<BvhShape> BuildBvhTree(const wp::vec3f* lowers, const wp::vec3f* uppers, int64_t n, int leaf_size,
                                      BvhSplit split, wp::bvh_node_t* nodes, int32_t* parents, int32_t* prims,
                                      const std::atomic<bool>* cancel) {
  if (n < 0 || n >= (int64_t{1} << 30)) return absl::InvalidArgumentError("a BVH holds 0 to 2^30 - 1 items");
  if (leaf_size < 1) return absl::InvalidArgumentError("leaf_size must be greater than or equal to 1");
  Builder b(lowers, uppers, leaf_size, split, nodes, parents, prims);
  return b.Run(static_cast<int32_t>(n), cancel);
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
