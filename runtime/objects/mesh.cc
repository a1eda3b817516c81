#include "runtime/objects/mesh.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

absl::StatusOr<int64_t> Mesh::CheckArrays(const std::string& device, const Array* points, const Array* indices,
                                          const Array* velocities, int leaf_size, const Array* groups) {
  if (points == nullptr || indices == nullptr) return absl::InvalidArgumentError("a mesh needs points and indices");
  if (absl::Status s = CheckVec3Array(*points, device, "Mesh points"); !s.ok()) return s;
  if (velocities != nullptr) {
    if (absl::Status s = CheckVec3Array(*velocities, device, "Mesh velocities"); !s.ok()) return s;
  }
  if (!types::SameType(indices->dtype(), types::Scalar(types::ScalarKind::kInt32)) || !indices->contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("Mesh indices should be a contiguous array of type wp.int32, got ",
                                                   indices->dtype()->ToString()));
  }
  if (indices->ndim() != 1) {
    return absl::InvalidArgumentError("Mesh indices should be a flattened 1d array of indices");
  }
  if (indices->device() != device) {
    return absl::InvalidArgumentError("Mesh points and indices must live on the same device");
  }
  const uint64_t n_idx = indices->layout().num_elements;
  if (n_idx % 3 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Mesh indices should hold 3 vertex indices per triangle, got ", n_idx, " indices"));
  }
  const uint64_t tris = n_idx / 3;
  if (tris > static_cast<uint64_t>(kMaxTriangles)) {
    return absl::InvalidArgumentError(absl::StrCat("a mesh holds at most ", kMaxTriangles, " triangles, got ", tris));
  }
  if (points->layout().num_elements > static_cast<uint64_t>(kMaxPoints)) {
    return absl::InvalidArgumentError(absl::StrCat("a mesh holds at most ", kMaxPoints, " points"));
  }
  if (velocities != nullptr && velocities->layout().num_elements > static_cast<uint64_t>(kMaxPoints)) {
    return absl::InvalidArgumentError(absl::StrCat("a mesh holds at most ", kMaxPoints, " velocities"));
  }
  if (leaf_size < 1 || leaf_size > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("bvh_leaf_size must be greater than or equal to 1 (and at most 64), current value: ", leaf_size));
  }
  if (absl::Status s = CheckGroups(groups, static_cast<int64_t>(tris), device, "triangle"); !s.ok()) return s;
  return static_cast<int64_t>(tris);
}

absl::StatusOr<std::shared_ptr<Mesh>> Mesh::Create(std::string device, std::shared_ptr<const Array> points,
                                                   std::shared_ptr<const Array> indices,
                                                   std::shared_ptr<const Array> velocities, int leaf_size,
                                                   SegmentPool& pool, std::shared_ptr<const Array> groups) {
  absl::StatusOr<int64_t> checked =
      CheckArrays(device, points.get(), indices.get(), velocities.get(), leaf_size, groups.get());
  if (!checked.ok()) return checked.status();
  const uint64_t tris = static_cast<uint64_t>(*checked);
  // The boxes in the tree's block. Not zeroed: every build and refit
  // computes the boxes before the tree that reads them is usable.
  auto buffers = BvhBuffers::Allocate(static_cast<int64_t>(tris), groups != nullptr, pool,
                                      std::max<uint64_t>(tris, 1) * 2 * sizeof(wp::vec3f));
  if (!buffers.ok()) return buffers.status();
  auto mesh = std::make_shared<Mesh>(std::move(device), std::move(points), std::move(indices), std::move(velocities),
                                     leaf_size, static_cast<int64_t>(tris), *std::move(buffers));
  mesh->groups_ = std::move(groups);
  return mesh;
}

namespace {

// INVALID_ARGUMENT unless `grad` (null: none) is a gradient for `of`: a
// contiguous vec3f array on `device` of as many elements (and `of` exists).
absl::Status CheckGradient(const Array* grad, const Array* of, const std::string& device, const char* what) {
  if (grad == nullptr) return absl::OkStatus();
  if (of == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, " without the array it belongs to"));
  if (absl::Status s = CheckVec3Array(*grad, device, what); !s.ok()) return s;
  if (grad->layout().num_elements != of->layout().num_elements) {
    return absl::InvalidArgumentError(absl::StrCat(what, " should hold ", of->layout().num_elements,
                                                   " elements (as its array), got ", grad->layout().num_elements));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Mesh::CheckNewArrays(const VertexArrays& arrays, const std::string& device, const Array& old_points,
                                  const Array* old_velocities) {
  auto check = [&](const std::shared_ptr<const Array>& a, const char* what, uint64_t count) -> absl::Status {
    if (absl::Status s = CheckVec3Array(*a, device, what); !s.ok()) return s;
    if (a->ndim() != 1 || a->layout().num_elements != count) {
      return absl::InvalidArgumentError(absl::StrCat("The new ", what, " must have the same shape as the original: ",
                                                     count, " elements, got ", a->layout().num_elements, " (",
                                                     a->ndim(), "-d)"));
    }
    return absl::OkStatus();
  };
  const std::shared_ptr<const Array>& points = arrays.points;
  const std::shared_ptr<const Array>& velocities = arrays.velocities;
  if (velocities != nullptr) {
    const uint64_t count = (old_velocities != nullptr ? old_velocities : &old_points)->layout().num_elements;
    if (absl::Status s = check(velocities, "Mesh velocities", count); !s.ok()) return s;
  }
  if (points != nullptr) {
    if (absl::Status s = check(points, "Mesh points", old_points.layout().num_elements); !s.ok()) return s;
  }
  if (absl::Status s =
          CheckGradient(arrays.velocities_grad.get(), velocities.get(), device, "Mesh velocities gradient");
      !s.ok()) {
    return s;
  }
  return CheckGradient(arrays.points_grad.get(), points.get(), device, "Mesh points gradient");
}

absl::Status Mesh::SetArrays(const VertexArrays& arrays) {
  if (absl::Status s = CheckNewArrays(arrays, device(), *points_, velocities_.get()); !s.ok()) return s;
  const std::shared_ptr<const Array>& points = arrays.points;
  const std::shared_ptr<const Array>& velocities = arrays.velocities;
  if (velocities != nullptr) {
    velocities_ = velocities;
    velocities_grad_ = arrays.velocities_grad;
    desc_.velocities = reinterpret_cast<const wp::vec3f*>(velocities_->data());
    desc_.num_velocities = static_cast<wp::int32>(velocities_->layout().num_elements);
  }
  if (points != nullptr) {
    points_ = points;
    points_grad_ = arrays.points_grad;
    desc_.points = reinterpret_cast<const wp::vec3f*>(points_->data());
  }
  AttachGradients();
  return points != nullptr ? Refit() : absl::OkStatus();
}

absl::Status Mesh::CheckGradients(const std::string& device, const Array& points, const Array* points_grad,
                                  const Array* velocities, const Array* velocities_grad) {
  if (absl::Status s = CheckGradient(points_grad, &points, device, "Mesh points gradient"); !s.ok()) return s;
  return CheckGradient(velocities_grad, velocities, device, "Mesh velocities gradient");
}

absl::Status Mesh::SetGradients(std::shared_ptr<const Array> points_grad,
                                std::shared_ptr<const Array> velocities_grad) {
  if (absl::Status s = CheckGradients(device(), *points_, points_grad.get(), velocities_.get(), velocities_grad.get());
      !s.ok()) {
    return s;
  }
  points_grad_ = std::move(points_grad);
  velocities_grad_ = std::move(velocities_grad);
  AttachGradients();
  return absl::OkStatus();
}

void Mesh::AttachGradients() {
  desc_.points_grad = points_grad_ ? reinterpret_cast<wp::vec3f*>(points_grad_->data()) : nullptr;
  desc_.velocities_grad = velocities_grad_ ? reinterpret_cast<wp::vec3f*>(velocities_grad_->data()) : nullptr;
}

Mesh::Mesh(std::string device, std::shared_ptr<const Array> points, std::shared_ptr<const Array> indices,
           std::shared_ptr<const Array> velocities, int leaf_size, int64_t num_tris, BvhBuffers buffers)
    : TreeObject(wp::OBJECT_MESH, std::move(device)),
      points_(std::move(points)),
      indices_(std::move(indices)),
      velocities_(std::move(velocities)),
      leaf_size_(leaf_size),
      num_tris_(num_tris),
      buffers_(std::move(buffers)) {
  auto* box = reinterpret_cast<wp::vec3f*>(buffers_.extra);
  desc_.bvh.item_lowers = box;
  desc_.bvh.item_uppers = box + num_tris_;
  buffers_.Attach(desc_.bvh);
  desc_.points = reinterpret_cast<const wp::vec3f*>(points_->data());
  desc_.num_points = static_cast<wp::int32>(points_->layout().num_elements);
  desc_.indices = reinterpret_cast<const wp::int32*>(indices_->data());
  desc_.num_tris = static_cast<wp::int32>(num_tris_);
  if (velocities_ != nullptr) {
    desc_.velocities = reinterpret_cast<const wp::vec3f*>(velocities_->data());
    desc_.num_velocities = static_cast<wp::int32>(velocities_->layout().num_elements);
  }
}

namespace {

// Three lanes of a point and a zero, so that each step below is one
// vector operation (GCC/Clang vector extensions, on any target).
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

F4 Load(const wp::vec3f& v) { return F4{v.c[0], v.c[1], v.c[2], 0.0f}; }

// std::fmin and std::fmax lane by lane, bit for bit as they compile here
// (a NaN operand yields the other; of equal operands, x).
F4 FMin(F4 x, F4 y) { return ((y < x) | (x != x)) ? y : x; }
F4 FMax(F4 x, F4 y) { return ((y > x) | (x != x)) ? y : x; }

}  // namespace

absl::Status Mesh::ComputeBoxes(const ParallelFor* parallel) {
  auto* lowers = reinterpret_cast<wp::vec3f*>(buffers_.extra);
  wp::vec3f* uppers = lowers + num_tris_;
  const wp::vec3f* p = desc_.points;
  const wp::int32* idx = desc_.indices;
  const uint32_t np = static_cast<uint32_t>(desc_.num_points);
  // Fixed chunks (so the edge-length sum adds the same numbers in the same
  // order however many threads run them), each with its partial sum and
  // its first triangle with a vertex out of range (-1: none).
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (num_tris_ + kChunk - 1) / kChunk;
  std::vector<double> edge_sum(static_cast<size_t>(chunks), 0.0);
  std::vector<int64_t> bad(static_cast<size_t>(chunks), -1);
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      double sum = 0.0;
      for (int64_t f = chunk * kChunk; f < std::min(num_tris_, (chunk + 1) * kChunk); ++f) {
        const wp::int32 v[3] = {idx[3 * f], idx[3 * f + 1], idx[3 * f + 2]};
        if (static_cast<uint32_t>(v[0]) >= np || static_cast<uint32_t>(v[1]) >= np ||
            static_cast<uint32_t>(v[2]) >= np) {
          bad[static_cast<size_t>(chunk)] = f;
          break;
        }
        // Each triangle's box (fmin / fmax of its corners) and its edges'
        // lengths (wp::length: sqrt((x*x + y*y) + z*z), the three square
        // roots in one vector operation), with the same float operations
        // in the same order as the scalar form, so the same bits.
        const F4 a = Load(p[v[0]]), b = Load(p[v[1]]), c = Load(p[v[2]]);
        const F4 lo = FMin(a, FMin(b, c)), hi = FMax(a, FMax(b, c));
        std::memcpy(&lowers[f], &lo, sizeof(wp::vec3f));
        std::memcpy(&uppers[f], &hi, sizeof(wp::vec3f));
        const F4 e0 = b - a, e1 = c - a, e2 = c - b;
        const F4 s0 = e0 * e0, s1 = e1 * e1, s2 = e2 * e2;
        const F4 len = __builtin_elementwise_sqrt(
            F4{s0[0] + s0[1] + s0[2], s1[0] + s1[1] + s1[2], s2[0] + s2[1] + s2[2], 0.0f});
        sum += len[0] + len[1] + len[2];
      }
      edge_sum[static_cast<size_t>(chunk)] = sum;
    }
  };
  if (parallel != nullptr && chunks > 1) {
    (*parallel)(chunks, 1, run);
  } else {
    run(0, chunks);
  }
  double total = 0.0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (const int64_t f = bad[static_cast<size_t>(chunk)]; f >= 0) {
      for (int k = 0; k < 3; ++k) {
        const wp::int32 v = idx[3 * f + k];
        if (static_cast<uint32_t>(v) >= np) {
          return absl::InvalidArgumentError(absl::StrCat("mesh triangle ", f, ": vertex index ", v,
                                                         " out of range for ", desc_.num_points, " points"));
        }
      }
    }
    total += edge_sum[static_cast<size_t>(chunk)];
  }
  desc_.average_edge_length = num_tris_ > 0 ? static_cast<float>(total / (3.0 * num_tris_)) : 0.0f;
  return absl::OkStatus();
}

absl::Status Mesh::Rebuild(BvhSplit split, const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  BvhBuffers::Unbuild(desc_.bvh);
  built_ = false;
  if (absl::Status s = ComputeBoxes(parallel); !s.ok()) return s;
  const int32_t* groups = groups_ != nullptr ? reinterpret_cast<const int32_t*>(groups_->data()) : nullptr;
  if (absl::Status s = buffers_.Build(desc_.bvh, leaf_size_, split, groups, cancel, parallel); !s.ok()) return s;
  split_ = split;
  built_ = true;
  return absl::OkStatus();
}

absl::Status Mesh::Refit(const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  if (!built_) return Rebuild(split_, cancel, parallel);
  if (absl::Status s = ComputeBoxes(parallel); !s.ok()) {
    BvhBuffers::Unbuild(desc_.bvh);  // the boxes are stale: nothing to traverse until a good build
    built_ = false;
    return s;
  }
  buffers_.Refit(desc_.bvh);
  return absl::OkStatus();
}

}  // namespace warpd::runtime
