// The CPU BVH builder alone (runtime/objects/bvh_build.h), without the
// daemon: median ms of BuildBvhTree on one thread and on a ThreadPool's
// threads, then of RefitBvhTree of the tree, the tree's SAH cost (so a faster build that makes a worse tree
// shows) and a hash of its nodes and item order (so a change that should
// keep the tree shows whether it did).
//
//   warpd-bench-bvh [--threads N] [--repeats R] [--leaf L] [FILE | random:N]...
//
// FILE holds n lower corners then n upper corners, float32 x, y, z each
// (the triangle boxes of a mesh, e.g. bench/geometry.py's meshes dumped
// with numpy's tofile); random:N makes N random boxes. Default: random:10000
// and random:400000.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/device/thread_pool.h"
#include "runtime/objects/bvh_build.h"

namespace {

using warpd::runtime::BvhSplit;

struct Boxes {
  std::vector<wp::vec3f> lo, hi;
};

bool Load(const std::string& spec, Boxes* b) {
  if (spec.rfind("random:", 0) == 0) {
    const long n = std::atol(spec.c_str() + 7);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> pos(-10.0f, 10.0f), size(0.0f, 0.05f);
    for (long i = 0; i < n; ++i) {
      wp::vec3f l, h;
      for (int a = 0; a < 3; ++a) {
        l.c[a] = pos(rng);
        h.c[a] = l.c[a] + size(rng);
      }
      b->lo.push_back(l);
      b->hi.push_back(h);
    }
    return true;
  }
  std::ifstream in(spec, std::ios::binary);
  if (!in) return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t n = bytes.size() / (2 * sizeof(wp::vec3f));
  b->lo.resize(n);
  b->hi.resize(n);
  std::memcpy(b->lo.data(), bytes.data(), n * sizeof(wp::vec3f));
  std::memcpy(b->hi.data(), bytes.data() + n * sizeof(wp::vec3f), n * sizeof(wp::vec3f));
  return true;
}

// Sum over nodes of (half) surface area, relative to the root's: the SAH
// cost without the per-node constants.
double SahCost(const std::vector<wp::bvh_node_t>& nodes, int32_t count) {
  auto area = [](const wp::bvh_node_t& n) {
    const double e[3] = {double(n.upper.c[0]) - n.lower.c[0], double(n.upper.c[1]) - n.lower.c[1],
                         double(n.upper.c[2]) - n.lower.c[2]};
    return e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
  };
  double total = 0.0;
  for (int32_t i = 0; i < count; ++i) {
    const double a = area(nodes[i]);
    total += wp::bvh_node_is_leaf(nodes[i]) ? a * (wp::bvh_leaf_end(nodes[i]) - nodes[i].left) : a;
  }
  return total / area(nodes[0]);
}

// FNV-1a over the tree's nodes and item order: a change of the tree shows.
uint64_t TreeHash(const std::vector<wp::bvh_node_t>& nodes, int32_t count, const std::vector<int32_t>& prims) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&h](const void* p, size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  add(nodes.data(), sizeof(wp::bvh_node_t) * static_cast<size_t>(count));
  add(prims.data(), sizeof(int32_t) * prims.size());
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 15, leaf = 4;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else if (a == "--leaf" && i + 1 < argc) {
      leaf = std::atoi(argv[++i]);
    } else {
      specs.push_back(a);
    }
  }
  if (specs.empty()) specs = {"random:10000", "random:400000"};
  warpd::runtime::ThreadPool pool(threads, "bench");
  auto on_pool = [&pool](int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
    pool.ParallelFor(n, grain, fn);
  };
  const warpd::runtime::ParallelFor parallel(on_pool);
  for (const std::string& spec : specs) {
    Boxes b;
    if (!Load(spec, &b)) {
      std::fprintf(stderr, "cannot read %s\n", spec.c_str());
      return 1;
    }
    const int64_t n = static_cast<int64_t>(b.lo.size());
    std::vector<wp::bvh_node_t> nodes(warpd::runtime::BvhNodeCapacity(n));
    std::vector<int32_t> parents(nodes.size()), prims(std::max<int64_t>(n, 1));
    // The builder's scratch, allocated once as a tree object does.
    std::vector<uint64_t> scratch(static_cast<size_t>(warpd::runtime::BvhBuildScratchBytes(n, false) / 8 + 1));
    for (bool par : {false, true}) {
      std::vector<double> ms;
      int32_t num_nodes = 0;
      for (int r = 0; r < repeats + 1; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        auto shape = warpd::runtime::BuildBvhTree(b.lo.data(), b.hi.data(), n, leaf, BvhSplit::kSah, nodes.data(),
                                                  parents.data(), prims.data(), nullptr, nullptr,
                                                  par ? &parallel : nullptr,
                                                  reinterpret_cast<std::byte*>(scratch.data()));
        const auto t1 = std::chrono::steady_clock::now();
        if (!shape.ok()) {
          std::fprintf(stderr, "%s\n", shape.status().ToString().c_str());
          return 1;
        }
        num_nodes = shape->num_nodes;
        if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("%-28s n=%-8lld %-10s %8.3f ms  (min %.3f)  nodes %d  sah %.2f  tree %016llx\n", spec.c_str(),
                  static_cast<long long>(n), par ? "parallel" : "1 thread", ms[ms.size() / 2], ms[0], num_nodes,
                  SahCost(nodes, num_nodes), static_cast<unsigned long long>(TreeHash(nodes, num_nodes, prims)));
      if (!par) continue;
      // RefitBvhTree of that tree (one thread, as the daemon refits).
      const uint64_t before = TreeHash(nodes, num_nodes, prims);
      ms.clear();
      for (int r = 0; r < repeats + 1; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        warpd::runtime::RefitBvhTree(b.lo.data(), b.hi.data(), n, prims.data(), nodes.data(), num_nodes);
        const auto t1 = std::chrono::steady_clock::now();
        if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("%-28s n=%-8lld %-10s %8.3f ms  (min %.3f)  %s\n", spec.c_str(), static_cast<long long>(n), "refit",
                  ms[ms.size() / 2], ms[0], TreeHash(nodes, num_nodes, prims) == before ? "same boxes" : "BOXES DIFFER");
    }
  }
  return 0;
}
