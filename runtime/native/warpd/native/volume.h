// warpd device runtime: sparse volumes (Warp's wp.Volume over NanoVDB grids).
//
// A volume is one NanoVDB grid (ABI 32) that the server copied into memory it
// owns and checked once when it was made (runtime/objects/volume.h): magic,
// version, sizes, the tree's node sections and its layout for the grid's
// value type. The server also writes the layout of each node kind for that
// value type (field offsets, node sizes, as NanoVDB's own headers define
// them: the server computes them from nanovdb/NanoVDB.h) into the
// descriptor, so this header holds no copy of NanoVDB's code, only a walk
// over offsets.
//
// The walk trusts nothing in the buffer: every node offset it follows must
// be 32-byte aligned, inside the grid, and a whole node of its kind; every
// table index is checked against the table's size. A forged or corrupted
// child offset therefore yields the background value (or no store), never a
// read or write outside the grid's bytes. Kernels name a volume by its id,
// resolved through the launch's object table (objects.h) on every call: an
// unknown id records FAULT_UNKNOWN_OBJECT and the call yields zero.
//
// Semantics follow Warp 1.19: CLOSEST rounds the index-space position to the
// nearest voxel (half away from zero), LINEAR interpolates trilinearly with
// float32 weights; a call whose value type is not the grid's yields zero; a
// store writes only voxels of leaf nodes (never tiles or the background);
// volume_lookup_index numbers every voxel of every leaf (leaf order, then the
// voxel's offset in its leaf) of a value grid, and the active voxels of an
// index grid; -1 elsewhere.
#pragma once

#include "warpd/native/array.h"
#include "warpd/native/atomic.h"
#include "warpd/native/core.h"
#include "warpd/native/launch.h"
#include "warpd/native/mat.h"
#include "warpd/native/objects.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"

namespace wp {

// The grid's value type: NanoVDB's GridType numbers for value grids, and
// warpd's own numbers for index grids (whose numbering moved between
// NanoVDB 32 minor versions).
enum volume_value_type : int32 {
  VOLUME_UNKNOWN = 0,
  VOLUME_FLOAT32 = 1,
  VOLUME_FLOAT64 = 2,
  VOLUME_INT32 = 4,
  VOLUME_INT64 = 5,
  VOLUME_VEC3F = 6,
  VOLUME_VEC3D = 7,
  VOLUME_UINT32 = 10,
  VOLUME_VEC4F = 17,
  VOLUME_VEC4D = 18,
  VOLUME_INDEX = 100,     // every voxel of a leaf has an index (offset + n)
  VOLUME_ON_INDEX = 101,  // active voxels only (offset + active voxels before n)
  // An index volume warpd allocated from tiles (Warp's bg_value=None): every
  // voxel of each leaf is active, so its index is the value grids' leaf
  // numbering; the grid (a float grid underneath) holds no values to read.
  VOLUME_TILE_INDEX = 102,
  // An index volume warpd allocated from voxels (Warp's allocate_by_voxels):
  // only those voxels are active; a uint32 grid underneath whose active
  // voxels hold their own indices (leaf order, then bit order).
  VOLUME_VOXEL_INDEX = 103,
};

enum volume_sampling : int32 { VOLUME_CLOSEST = 0, VOLUME_LINEAR = 1 };

// An internal node's layout (byte offsets from the node's start).
struct volume_node_layout {
  uint32 bytes;       // the node's size
  uint32 value_mask;  // its value mask (uint64 words)
  uint32 child_mask;  // its child mask
  uint32 table;       // its table of tiles (value or int64 child offset, relative to the node)
  uint32 stride;      // bytes per table entry
  uint32 reserved;
};

// The descriptor the runtime keeps for a volume (the object table's data for
// OBJECT_VOLUME). Written once when the volume is made; the grid's values
// change only by volume_store.
struct volume_t {
  uint8* grid;       // the grid's bytes (grid header first), 32-byte aligned
  uint64 grid_bytes;
  int32 value_type;  // volume_value_type
  int32 value_bytes;
  uint64 root;  // offset of the root node from grid
  uint32 root_tiles;   // entries of the root's tile table
  uint32 root_header;  // bytes of the root node before its tile table
  uint32 root_background;  // offset of the background value in the root
  uint32 tile_bytes;   // bytes per root tile
  uint32 tile_child;   // offset of the tile's int64 child offset (relative to the root; 0: none)
  uint32 tile_state;   // its uint32 state
  uint32 tile_value;   // its value
  uint32 leaf_bytes;
  uint32 leaf_value_mask;
  uint32 leaf_values;  // value grids: the value array; index grids: the uint64 first index
  uint32 leaf_prefix;  // on-index grids: the uint64 packed prefix counts
  uint32 leaf_count;
  uint64 first_leaf;  // offset of the first leaf from grid (leaves are contiguous)
  volume_node_layout upper, lower;
  int32 voxel_count;  // volume_voxel_count's answer (clamped to int32)
  int32 reserved;
  // The index-to-world map (float32 as NanoVDB stores it): world =
  // mat * index + vec; index = inv * (world - vec).
  float32 mat[9];
  float32 inv[9];
  float32 vec[3];
  float32 reserved2;
};
static_assert(sizeof(volume_t) == 232, "volume_t layout");

// Where a voxel's value lives.
enum volume_level : int32 {
  VOLUME_AT_LEAF = 0,
  VOLUME_AT_LOWER = 1,
  VOLUME_AT_UPPER = 2,
  VOLUME_AT_ROOT = 3,
  VOLUME_AT_BACKGROUND = 4,
};

// A voxel's value address (offset from grid) and the level that holds it;
// for a leaf also the leaf's offset and the voxel's offset in it.
struct volume_address {
  uint64 at;
  uint64 leaf;
  int32 level;
  uint32 n;
};

// True when [off, off + bytes) is a 32-byte aligned span inside the grid.
WP_FUNC bool volume_node_ok(const volume_t& v, uint64 off, uint64 bytes) {
  return (off & 31u) == 0 && off <= v.grid_bytes && bytes <= v.grid_bytes - off;
}

template <typename T>
WP_FUNC T volume_read(const volume_t& v, uint64 off) {
  return *reinterpret_cast<const T*>(v.grid + off);
}

WP_FUNC bool volume_bit(const volume_t& v, uint64 mask_off, uint32 n) {
  const uint64 word = volume_read<uint64>(v, mask_off + 8u * (n >> 6));
  return ((word >> (n & 63u)) & 1u) != 0;
}

// The child of internal node `node` at table entry n: its offset, or 0 for
// none (a tile) or a child that is not a whole node of `child_bytes` bytes.
WP_FUNC uint64 volume_internal_child(const volume_t& v, const volume_node_layout& l, uint64 node, uint32 n,
                                     uint64 child_bytes, bool* bad) {
  const int64 rel = volume_read<int64>(v, node + l.table + (uint64)n * l.stride);
  const uint64 child = node + (uint64)rel;  // wraps for negative offsets; checked next
  if (!volume_node_ok(v, child, child_bytes) || child == node) {
    *bad = true;
    return 0;
  }
  return child;
}

// Finds the value of voxel (i, j, k): NanoVDB's root -> upper (32^3 of 4096
// voxels) -> lower (16^3 of 128) -> leaf (8^3) descent.
WP_FUNC volume_address volume_locate(const volume_t& v, int32 i, int32 j, int32 k) {
  volume_address a;
  a.at = v.root + v.root_background;
  a.leaf = 0;
  a.level = VOLUME_AT_BACKGROUND;
  a.n = 0;
  const uint64 key = ((uint64)((uint32)i >> 12) << 42) | ((uint64)((uint32)j >> 12) << 21) | (uint64)((uint32)k >> 12);
  uint64 tile = 0;
  bool found = false;
  for (uint32 t = 0; t < v.root_tiles; ++t) {
    const uint64 at = v.root + v.root_header + (uint64)t * v.tile_bytes;
    if (volume_read<uint64>(v, at) == key) {
      tile = at;
      found = true;
      break;
    }
  }
  if (!found) return a;
  const int64 child_rel = volume_read<int64>(v, tile + v.tile_child);
  if (child_rel == 0) {
    a.at = tile + v.tile_value;
    a.level = VOLUME_AT_ROOT;
    return a;
  }
  bool bad = false;
  const uint64 upper = v.root + (uint64)child_rel;
  if (!volume_node_ok(v, upper, v.upper.bytes)) return a;
  const uint32 nu = ((((uint32)i & 4095u) >> 7) << 10) | ((((uint32)j & 4095u) >> 7) << 5) | (((uint32)k & 4095u) >> 7);
  if (!volume_bit(v, upper + v.upper.child_mask, nu)) {
    a.at = upper + v.upper.table + (uint64)nu * v.upper.stride;
    a.level = VOLUME_AT_UPPER;
    return a;
  }
  const uint64 lower = volume_internal_child(v, v.upper, upper, nu, v.lower.bytes, &bad);
  if (bad) return a;
  const uint32 nl = ((((uint32)i & 127u) >> 3) << 8) | ((((uint32)j & 127u) >> 3) << 4) | (((uint32)k & 127u) >> 3);
  if (!volume_bit(v, lower + v.lower.child_mask, nl)) {
    a.at = lower + v.lower.table + (uint64)nl * v.lower.stride;
    a.level = VOLUME_AT_LOWER;
    return a;
  }
  const uint64 leaf = volume_internal_child(v, v.lower, lower, nl, v.leaf_bytes, &bad);
  if (bad) return a;
  const uint32 n = (((uint32)i & 7u) << 6) | (((uint32)j & 7u) << 3) | ((uint32)k & 7u);
  a.leaf = leaf;
  a.n = n;
  a.level = VOLUME_AT_LEAF;
  a.at = leaf + v.leaf_values + (uint64)n * (uint64)v.value_bytes;
  return a;
}

// The 0-based index of leaf voxel `a` (value grids: every voxel of every
// leaf; index grids: the grid's own index, minus one for the background's 0),
// or -1 when `a` is not a leaf voxel with an index.
WP_FUNC int64 volume_voxel_index(const volume_t& v, const volume_address& a) {
  if (a.level != VOLUME_AT_LEAF) return -1;
  if (v.value_type == VOLUME_INDEX || v.value_type == VOLUME_ON_INDEX) {
    const uint64 offset = volume_read<uint64>(v, a.leaf + v.leaf_values);
    uint64 index;
    if (v.value_type == VOLUME_INDEX) {
      index = offset + a.n;
    } else {
      if (!volume_bit(v, a.leaf + v.leaf_value_mask, a.n)) return -1;
      const uint32 w = a.n >> 6;
      const uint64 word = volume_read<uint64>(v, a.leaf + v.leaf_value_mask + 8u * w);
      const uint64 below = (a.n & 63u) == 0 ? 0 : (word & ((uint64(1) << (a.n & 63u)) - 1));
      index = offset + (uint64)bit_count(below);
      if (w > 0) index += (volume_read<uint64>(v, a.leaf + v.leaf_prefix) >> (9u * (w - 1))) & 511u;
    }
    return index == 0 ? -1 : (int64)(index - 1);
  }
  if (v.value_type == VOLUME_VOXEL_INDEX) {
    if (!volume_bit(v, a.leaf + v.leaf_value_mask, a.n)) return -1;
    return (int64)volume_read<uint32>(v, a.leaf + v.leaf_values + (uint64)a.n * 4u);
  }
  if (a.leaf < v.first_leaf || v.leaf_bytes == 0) return -1;
  const uint64 leaf_index = (a.leaf - v.first_leaf) / v.leaf_bytes;
  if (leaf_index >= v.leaf_count || (a.leaf - v.first_leaf) % v.leaf_bytes != 0) return -1;
  return (int64)(leaf_index * 512u + a.n);
}

// ------------------------------------------------------------ value types

template <typename T>
struct volume_traits;
template <int32 Code, typename S, typename G>
struct volume_traits_of {
  static constexpr int32 code = Code;
  typedef S scalar;
  typedef G grad;
};
template <>
struct volume_traits<float32> : volume_traits_of<VOLUME_FLOAT32, float32, vec_t<3, float32>> {};
template <>
struct volume_traits<float64> : volume_traits_of<VOLUME_FLOAT64, float64, vec_t<3, float64>> {};
template <>
struct volume_traits<int32> : volume_traits_of<VOLUME_INT32, int32, vec_t<3, int32>> {};
template <>
struct volume_traits<int64> : volume_traits_of<VOLUME_INT64, int64, vec_t<3, int64>> {};
template <>
struct volume_traits<uint32> : volume_traits_of<VOLUME_UINT32, uint32, vec_t<3, uint32>> {};
template <>
struct volume_traits<vec_t<3, float32>> : volume_traits_of<VOLUME_VEC3F, float32, mat_t<3, 3, float32>> {};
template <>
struct volume_traits<vec_t<3, float64>> : volume_traits_of<VOLUME_VEC3D, float64, mat_t<3, 3, float64>> {};
template <>
struct volume_traits<vec_t<4, float32>> : volume_traits_of<VOLUME_VEC4F, float32, mat_t<4, 3, float32>> {};
template <>
struct volume_traits<vec_t<4, float64>> : volume_traits_of<VOLUME_VEC4D, float64, mat_t<4, 3, float64>> {};

// *p += v, atomically per scalar component.
template <typename T>
WP_FUNC void volume_atomic_add(T* p, const T& v) {
  atomic_add(p, v);
}
template <int N, typename T>
WP_FUNC void volume_atomic_add(vec_t<N, T>* p, const vec_t<N, T>& v) {
  for (int c = 0; c < N; ++c) atomic_add(&p->c[c], v.c[c]);
}

// v * w for a value and a weight of its scalar type.
template <typename T, typename S>
WP_FUNC T volume_scale(const T& v, S w) {
  return v * w;
}
template <int N, typename T>
WP_FUNC vec_t<N, T> volume_scale(const vec_t<N, T>& v, T w) {
  vec_t<N, T> r;
  for (int c = 0; c < N; ++c) r.c[c] = v.c[c] * w;
  return r;
}
template <typename T>
WP_FUNC T volume_plus(const T& a, const T& b) {
  return a + b;
}
template <int N, typename T>
WP_FUNC vec_t<N, T> volume_plus(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  vec_t<N, T> r;
  for (int c = 0; c < N; ++c) r.c[c] = a.c[c] + b.c[c];
  return r;
}
// grad += v (x) g: a scalar's gradient is a vector, a vector's a matrix.
template <typename T>
WP_FUNC void volume_add_outer(vec_t<3, T>& grad, const T& v, const vec_t<3, T>& g) {
  for (int c = 0; c < 3; ++c) grad.c[c] += v * g.c[c];
}
template <int N, typename T>
WP_FUNC void volume_add_outer(mat_t<N, 3, T>& grad, const vec_t<N, T>& v, const vec_t<3, T>& g) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < 3; ++c) grad.c[r][c] += v.c[r] * g.c[c];
}
// <a, b> summed over components.
template <typename T>
WP_FUNC T volume_dot(const T& a, const T& b) {
  return a * b;
}
template <int N, typename T>
WP_FUNC T volume_dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  T s = T(0);
  for (int c = 0; c < N; ++c) s += a.c[c] * b.c[c];
  return s;
}
// grad * g (the Jacobian applied to a direction): a scalar's gradient is a
// row, a vector's one row per component.
template <typename T>
WP_FUNC T volume_rmul(const vec_t<3, T>& grad, const vec_t<3, T>& g) {
  return grad.c[0] * g.c[0] + grad.c[1] * g.c[1] + grad.c[2] * g.c[2];
}
template <int N, typename T>
WP_FUNC vec_t<N, T> volume_rmul(const mat_t<N, 3, T>& grad, const vec_t<3, T>& g) {
  vec_t<N, T> r;
  for (int c = 0; c < N; ++c) r.c[c] = grad.c[c][0] * g.c[0] + grad.c[c][1] * g.c[1] + grad.c[c][2] * g.c[2];
  return r;
}
// sum_r v[r] * adj_grad[r][:] (a vector's Jacobian adjoint against the value).
template <typename T>
WP_FUNC vec_t<3, T> volume_value_times_grad(const T& v, const vec_t<3, T>& adj_grad) {
  vec_t<3, T> r;
  for (int c = 0; c < 3; ++c) r.c[c] = v * adj_grad.c[c];
  return r;
}
template <int N, typename T>
WP_FUNC vec_t<3, T> volume_value_times_grad(const vec_t<N, T>& v, const mat_t<N, 3, T>& adj_grad) {
  vec_t<3, T> r = {};
  for (int k = 0; k < N; ++k)
    for (int c = 0; c < 3; ++c) r.c[c] += v.c[k] * adj_grad.c[k][c];
  return r;
}

// ------------------------------------------------------------ accessors

// Reads the voxels of a value grid of type T (zero when the grid holds
// another type or the descriptor is null).
template <typename T>
struct volume_value_reader {
  const volume_t* v;
  WP_FUNC bool valid() const { return v != nullptr && v->value_type == volume_traits<T>::code; }
  WP_FUNC T read(int32 i, int32 j, int32 k) const {
    if (!valid()) return T{};
    const volume_address a = volume_locate(*v, i, j, k);
    if (a.at > v->grid_bytes - sizeof(T)) return T{};
    return volume_read<T>(*v, a.at);
  }
  WP_FUNC void adj_read(int32, int32, int32, const T&) const {}
};

// Reads the voxels of any grid through its voxel indices into `data`
// (Warp's volume_sample_index): the background where a voxel has none.
template <typename T>
struct volume_index_reader {
  launch_ctx* ctx;
  int32 line;
  const volume_t* v;
  array_t<T> data;
  T background;
  array_t<T>* adj_data;
  T* adj_background;
  WP_FUNC bool valid() const { return v != nullptr; }
  WP_FUNC T read(int32 i, int32 j, int32 k) const {
    const int64 index = volume_voxel_index(*v, volume_locate(*v, i, j, k));
    if (index < 0) return background;
    const T* p = address(ctx, data, line, index);
    return p ? *p : T{};
  }
  WP_FUNC void adj_read(int32 i, int32 j, int32 k, const T& adj) const {
    const int64 index = volume_voxel_index(*v, volume_locate(*v, i, j, k));
    if (index < 0) {
      if (adj_background) *adj_background = volume_plus(*adj_background, adj);
      return;
    }
    if (adj_data == nullptr || adj_data->data == nullptr) return;
    if ((uint64)index >= (uint64)adj_data->shape[0]) return;
    T* g = reinterpret_cast<T*>(reinterpret_cast<char*>(adj_data->data) + index * adj_data->strides[0]);
    volume_atomic_add(g, adj);
  }
};

// Rounds half away from zero to int32 (saturating; NaN -> 0).
WP_FUNC int32 volume_round(float32 x) {
  const float32 r = round(x);
  if (!(r == r)) return 0;
  if (r >= 2147483520.0f) return 2147483647;
  if (r <= -2147483648.0f) return (int32)(-2147483647 - 1);
  return (int32)r;
}
WP_FUNC int32 volume_floor(float32 x) {
  const float32 r = floor(x);
  if (!(r == r)) return 0;
  if (r >= 2147483520.0f) return 2147483647;
  if (r <= -2147483648.0f) return (int32)(-2147483647 - 1);
  return (int32)r;
}

// The eight corners of the cell at floor(uvw), with their float32 weights
// and the weights' gradients (and the gradients' mixed derivatives).
struct volume_cell {
  int32 i, j, k;
  float32 wx[2], wy[2], wz[2];
  WP_FUNC explicit volume_cell(const vec3f& uvw) {
    const float32 bx = floor(uvw.c[0]), by = floor(uvw.c[1]), bz = floor(uvw.c[2]);
    i = volume_floor(uvw.c[0]);
    j = volume_floor(uvw.c[1]);
    k = volume_floor(uvw.c[2]);
    const float32 fx = uvw.c[0] - bx, fy = uvw.c[1] - by, fz = uvw.c[2] - bz;
    wx[0] = 1.0f - fx;
    wx[1] = fx;
    wy[0] = 1.0f - fy;
    wy[1] = fy;
    wz[0] = 1.0f - fz;
    wz[1] = fz;
  }
};

template <typename Reader>
struct volume_sampler {
  template <typename T>
  WP_FUNC static T sample(const Reader& r, const vec3f& uvw, int32 mode) {
    typedef typename volume_traits<T>::scalar S;
    if (!r.valid()) return T{};
    if (mode == VOLUME_CLOSEST) return r.read(volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]));
    if (mode != VOLUME_LINEAR) return T{};
    const volume_cell c(uvw);
    T val = T{};
    for (int o = 0; o < 8; ++o) {
      const int ox = (o >> 2) & 1, oy = (o >> 1) & 1, oz = o & 1;
      const T v = r.read(c.i + ox, c.j + oy, c.k + oz);
      const S w = (S)(c.wx[ox] * c.wy[oy] * c.wz[oz]);
      val = volume_plus(val, volume_scale(v, w));
    }
    return val;
  }

  template <typename T, typename G>
  WP_FUNC static T sample_grad(const Reader& r, const vec3f& uvw, int32 mode, G& grad) {
    typedef typename volume_traits<T>::scalar S;
    grad = G{};
    if (!r.valid()) return T{};
    if (mode == VOLUME_CLOSEST) return r.read(volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]));
    if (mode != VOLUME_LINEAR) return T{};
    const volume_cell c(uvw);
    T val = T{};
    for (int o = 0; o < 8; ++o) {
      const int ox = (o >> 2) & 1, oy = (o >> 1) & 1, oz = o & 1;
      const T v = r.read(c.i + ox, c.j + oy, c.k + oz);
      const float32 sx = ox ? 1.0f : -1.0f, sy = oy ? 1.0f : -1.0f, sz = oz ? 1.0f : -1.0f;
      const S w = (S)(c.wx[ox] * c.wy[oy] * c.wz[oz]);
      const vec_t<3, S> gw = {{(S)(sx * c.wy[oy] * c.wz[oz]), (S)(sy * c.wx[ox] * c.wz[oz]),
                               (S)(sz * c.wx[ox] * c.wy[oy])}};
      val = volume_plus(val, volume_scale(v, w));
      volume_add_outer(grad, v, gw);
    }
    return val;
  }

  // The adjoint of sample: the position's (LINEAR) and the read voxels'.
  template <typename T>
  WP_FUNC static void adj_sample(const Reader& r, const vec3f& uvw, int32 mode, vec3f& adj_uvw, const T& adj_ret) {
    typedef typename volume_traits<T>::scalar S;
    if (!r.valid()) return;
    if (mode != VOLUME_LINEAR) {
      r.adj_read(volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]), adj_ret);
      return;
    }
    const volume_cell c(uvw);
    for (int o = 0; o < 8; ++o) {
      const int ox = (o >> 2) & 1, oy = (o >> 1) & 1, oz = o & 1;
      const T v = r.read(c.i + ox, c.j + oy, c.k + oz);
      const float32 sx = ox ? 1.0f : -1.0f, sy = oy ? 1.0f : -1.0f, sz = oz ? 1.0f : -1.0f;
      const S w = (S)(c.wx[ox] * c.wy[oy] * c.wz[oz]);
      const S d = volume_dot(v, adj_ret);
      adj_uvw.c[0] += (float32)(d * (S)(sx * c.wy[oy] * c.wz[oz]));
      adj_uvw.c[1] += (float32)(d * (S)(sy * c.wx[ox] * c.wz[oz]));
      adj_uvw.c[2] += (float32)(d * (S)(sz * c.wx[ox] * c.wy[oy]));
      r.adj_read(c.i + ox, c.j + oy, c.k + oz, volume_scale(adj_ret, w));
    }
  }

  // The adjoint of sample_grad: through the value and through the gradient.
  template <typename T, typename G>
  WP_FUNC static void adj_sample_grad(const Reader& r, const vec3f& uvw, int32 mode, vec3f& adj_uvw, const G& adj_grad,
                                      const T& adj_ret) {
    typedef typename volume_traits<T>::scalar S;
    if (!r.valid()) return;
    if (mode != VOLUME_LINEAR) {
      r.adj_read(volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]), adj_ret);
      return;
    }
    const volume_cell c(uvw);
    for (int o = 0; o < 8; ++o) {
      const int ox = (o >> 2) & 1, oy = (o >> 1) & 1, oz = o & 1;
      const T v = r.read(c.i + ox, c.j + oy, c.k + oz);
      const float32 sx = ox ? 1.0f : -1.0f, sy = oy ? 1.0f : -1.0f, sz = oz ? 1.0f : -1.0f;
      const S w = (S)(c.wx[ox] * c.wy[oy] * c.wz[oz]);
      const vec_t<3, S> gw = {{(S)(sx * c.wy[oy] * c.wz[oz]), (S)(sy * c.wx[ox] * c.wz[oz]),
                               (S)(sz * c.wx[ox] * c.wy[oy])}};
      const S d = volume_dot(v, adj_ret);
      // d(grad)/d(uvw): the weights' mixed second derivatives (the
      // diagonal is zero for trilinear weights).
      const vec_t<3, S> va = volume_value_times_grad(v, adj_grad);
      const S hxy = (S)(sx * sy * c.wz[oz]), hxz = (S)(sx * sz * c.wy[oy]), hyz = (S)(sy * sz * c.wx[ox]);
      adj_uvw.c[0] += (float32)(d * gw.c[0] + va.c[1] * hxy + va.c[2] * hxz);
      adj_uvw.c[1] += (float32)(d * gw.c[1] + va.c[0] * hxy + va.c[2] * hyz);
      adj_uvw.c[2] += (float32)(d * gw.c[2] + va.c[0] * hxz + va.c[1] * hyz);
      r.adj_read(c.i + ox, c.j + oy, c.k + oz, volume_plus(volume_scale(adj_ret, w), volume_rmul(adj_grad, gw)));
    }
  }
};

// ------------------------------------------------------------ builtins

WP_FUNC const volume_t* volume_get(launch_ctx* ctx, int32 line, uint64 id) {
  return static_cast<const volume_t*>(resolve_object(ctx, line, id, OBJECT_VOLUME));
}
// For adjoints: the forward call already recorded any unknown id.
WP_FUNC const volume_t* volume_find(const launch_ctx* ctx, uint64 id) {
  int32 found = OBJECT_NONE;
  return static_cast<const volume_t*>(find_object(ctx, id, OBJECT_VOLUME, &found));
}

template <typename T>
WP_FUNC T volume_sample(launch_ctx* ctx, int32 line, uint64 id, const vec3f& uvw, int32 mode) {
  const volume_value_reader<T> r{volume_get(ctx, line, id)};
  return volume_sampler<volume_value_reader<T>>::template sample<T>(r, uvw, mode);
}
template <typename T, typename G>
WP_FUNC T volume_sample_grad(launch_ctx* ctx, int32 line, uint64 id, const vec3f& uvw, int32 mode, G& grad) {
  const volume_value_reader<T> r{volume_get(ctx, line, id)};
  return volume_sampler<volume_value_reader<T>>::template sample_grad<T>(r, uvw, mode, grad);
}
template <typename T>
WP_FUNC T volume_sample_index(launch_ctx* ctx, int32 line, uint64 id, const vec3f& uvw, int32 mode,
                              const array_t<T>& data, const T& background) {
  const volume_index_reader<T> r{ctx, line, volume_get(ctx, line, id), data, background, nullptr, nullptr};
  return volume_sampler<volume_index_reader<T>>::template sample<T>(r, uvw, mode);
}
template <typename T, typename G>
WP_FUNC T volume_sample_grad_index(launch_ctx* ctx, int32 line, uint64 id, const vec3f& uvw, int32 mode,
                                   const array_t<T>& data, const T& background, G& grad) {
  const volume_index_reader<T> r{ctx, line, volume_get(ctx, line, id), data, background, nullptr, nullptr};
  return volume_sampler<volume_index_reader<T>>::template sample_grad<T>(r, uvw, mode, grad);
}

template <typename T>
WP_FUNC T volume_lookup(launch_ctx* ctx, int32 line, uint64 id, int32 i, int32 j, int32 k) {
  const volume_value_reader<T> r{volume_get(ctx, line, id)};
  return r.read(i, j, k);
}

WP_FUNC int32 volume_lookup_index(launch_ctx* ctx, int32 line, uint64 id, int32 i, int32 j, int32 k) {
  const volume_t* v = volume_get(ctx, line, id);
  if (v == nullptr) return -1;
  const int64 index = volume_voxel_index(*v, volume_locate(*v, i, j, k));
  return index < 0 || index > 2147483647 ? -1 : (int32)index;
}

WP_FUNC int32 volume_voxel_count(launch_ctx* ctx, int32 line, uint64 id) {
  const volume_t* v = volume_get(ctx, line, id);
  return v ? v->voxel_count : 0;
}

template <typename T>
WP_FUNC void volume_store(launch_ctx* ctx, int32 line, uint64 id, int32 i, int32 j, int32 k, const T& value) {
  const volume_t* v = volume_get(ctx, line, id);
  if (v == nullptr || v->value_type != volume_traits<T>::code) return;
  const volume_address a = volume_locate(*v, i, j, k);
  if (a.level != VOLUME_AT_LEAF || a.at + sizeof(T) > v->grid_bytes) return;
  *reinterpret_cast<T*>(v->grid + a.at) = value;
}

// Index <-> world (float32 maps; the float64 forms compute in float64 from
// the same float32 coefficients).
template <typename S>
WP_FUNC vec_t<3, S> volume_apply(const float32* m, const vec_t<3, S>& p) {
  vec_t<3, S> r;
  for (int c = 0; c < 3; ++c) r.c[c] = (S)m[3 * c] * p.c[0] + (S)m[3 * c + 1] * p.c[1] + (S)m[3 * c + 2] * p.c[2];
  return r;
}
template <typename S>
WP_FUNC vec_t<3, S> volume_index_to_world(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, S>& uvw) {
  const volume_t* v = volume_get(ctx, line, id);
  if (v == nullptr) return vec_t<3, S>{};
  vec_t<3, S> r = volume_apply(v->mat, uvw);
  for (int c = 0; c < 3; ++c) r.c[c] += (S)v->vec[c];
  return r;
}
template <typename S>
WP_FUNC vec_t<3, S> volume_world_to_index(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, S>& xyz) {
  const volume_t* v = volume_get(ctx, line, id);
  if (v == nullptr) return vec_t<3, S>{};
  vec_t<3, S> d;
  for (int c = 0; c < 3; ++c) d.c[c] = xyz.c[c] - (S)v->vec[c];
  return volume_apply(v->inv, d);
}
template <typename S>
WP_FUNC vec_t<3, S> volume_index_to_world_dir(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, S>& uvw) {
  const volume_t* v = volume_get(ctx, line, id);
  return v ? volume_apply(v->mat, uvw) : vec_t<3, S>{};
}
template <typename S>
WP_FUNC vec_t<3, S> volume_world_to_index_dir(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, S>& xyz) {
  const volume_t* v = volume_get(ctx, line, id);
  return v ? volume_apply(v->inv, xyz) : vec_t<3, S>{};
}

// Adjoints, called as wp::volume_adjoint(ctx).f(forward args..., adjoints
// of the args..., adjoint of the result): the generated code's adjoint
// spelling for builtins that need the launch's object table.
struct volume_adjoint {
  launch_ctx* ctx;
  WP_FUNC explicit volume_adjoint(launch_ctx* c) : ctx(c) {}

  template <typename T>
  WP_FUNC void sample(uint64 id, const vec3f& uvw, int32 mode, uint64&, vec3f& adj_uvw, int32&, const T& adj_ret) const {
    const volume_value_reader<T> r{volume_find(ctx, id)};
    volume_sampler<volume_value_reader<T>>::template adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret);
  }
  template <typename T, typename G>
  WP_FUNC void sample_grad(uint64 id, const vec3f& uvw, int32 mode, G&, uint64&, vec3f& adj_uvw, int32&,
                           G& adj_grad, const T& adj_ret) const {
    const volume_value_reader<T> r{volume_find(ctx, id)};
    volume_sampler<volume_value_reader<T>>::template adj_sample_grad<T>(r, uvw, mode, adj_uvw, adj_grad, adj_ret);
  }
  template <typename T>
  WP_FUNC void sample_index(uint64 id, const vec3f& uvw, int32 mode, const array_t<T>& data, const T& background,
                            uint64&, vec3f& adj_uvw, int32&, array_t<T>& adj_data, T& adj_background,
                            const T& adj_ret) const {
    const volume_index_reader<T> r{ctx, 0, volume_find(ctx, id), data, background, &adj_data, &adj_background};
    volume_sampler<volume_index_reader<T>>::template adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret);
  }
  template <typename T, typename G>
  WP_FUNC void sample_grad_index(uint64 id, const vec3f& uvw, int32 mode, const array_t<T>& data,
                                 const T& background, G&, uint64&, vec3f& adj_uvw, int32&, array_t<T>& adj_data,
                                 T& adj_background, G& adj_grad, const T& adj_ret) const {
    const volume_index_reader<T> r{ctx, 0, volume_find(ctx, id), data, background, &adj_data, &adj_background};
    volume_sampler<volume_index_reader<T>>::template adj_sample_grad<T>(r, uvw, mode, adj_uvw, adj_grad, adj_ret);
  }
  // The transforms' adjoints are Warp 1.19's: the map applied to the
  // result's adjoint (mat adj, inv adj; the directions' the same). That is
  // the exact gradient (mat^T adj) for symmetric maps (scales, the usual
  // case) and Warp's own tests expect it for the others too
  // (test_volume_transform_gradient's rotated torus).
  template <typename S>
  WP_FUNC void index_to_world(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_p,
                              const vec_t<3, S>& adj_ret) const {
    const volume_t* v = volume_find(ctx, id);
    if (v) adj_p = volume_plus(adj_p, volume_apply(v->mat, adj_ret));
  }
  template <typename S>
  WP_FUNC void world_to_index(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_p,
                              const vec_t<3, S>& adj_ret) const {
    const volume_t* v = volume_find(ctx, id);
    if (v) adj_p = volume_plus(adj_p, volume_apply(v->inv, adj_ret));
  }
};

}  // namespace wp
