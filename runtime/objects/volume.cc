#include "runtime/objects/volume.h"

#include <blosc.h>
#include <zlib.h>

#include <cstddef>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"

// NanoVDB (libnanovdb-dev): the grid layout and the file records. Only its
// types are used on file and grid bytes from clients; their bounds are
// checked here before anything is dereferenced.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <nanovdb/NanoVDB.h>
#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/IO.h>
#pragma GCC diagnostic pop

namespace warpd::runtime {

namespace {

constexpr uint64_t kVolumeMaxGridBytes = Volume::kMaxGridBytes;
constexpr uint64_t kFileMagic0 = 0x304244566f6e614eULL;  // "NanoVDB0"
constexpr uint64_t kFileMagic2 = 0x324244566f6e614eULL;  // "NanoVDB2" (newer files)
constexpr uint64_t kGridMagic1 = 0x314244566f6e614eULL;  // "NanoVDB1" (newer grids)

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid NanoVDB data: ", std::string(what)));
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Layout of the nodes for build type BuildT, from NanoVDB's definitions.
template <typename BuildT>
void FillNodeLayout(wp::volume_t* d) {
  using RootData = typename nanovdb::NanoRoot<BuildT>::DataType;
  using Tile = typename RootData::Tile;
  using UpperData = typename nanovdb::NanoUpper<BuildT>::DataType;
  using LowerData = typename nanovdb::NanoLower<BuildT>::DataType;
  d->root_header = sizeof(RootData);
  d->root_background = offsetof(RootData, mBackground);
  d->tile_bytes = sizeof(Tile);
  d->tile_child = offsetof(Tile, child);
  d->tile_state = offsetof(Tile, state);
  d->tile_value = offsetof(Tile, value);
  auto internal = [](wp::volume_node_layout* l, auto* tag) {
    using Data = std::remove_pointer_t<decltype(tag)>;
    l->bytes = sizeof(Data);
    l->value_mask = offsetof(Data, mValueMask);
    l->child_mask = offsetof(Data, mChildMask);
    l->table = offsetof(Data, mTable);
    l->stride = sizeof(Data::mTable[0]);
  };
  internal(&d->upper, static_cast<UpperData*>(nullptr));
  internal(&d->lower, static_cast<LowerData*>(nullptr));
}

template <typename ValueT>
void FillValueLayout(wp::volume_t* d) {
  using LeafData = typename nanovdb::NanoLeaf<ValueT>::DataType;
  FillNodeLayout<ValueT>(d);
  d->leaf_bytes = sizeof(LeafData);
  d->leaf_value_mask = offsetof(LeafData, mValueMask);
  d->leaf_values = offsetof(LeafData, mValues);
  d->value_bytes = sizeof(ValueT);
}

// NanoVDB 32.6's index leaves (LeafIndexBase: bbox min, bbox extent, flags,
// value mask, then the uint64 first index and the packed prefix counts); the
// root and internal nodes hold uint64 values as a uint64 grid's do.
void FillIndexLayout(wp::volume_t* d) {
  FillNodeLayout<uint64_t>(d);
  d->leaf_bytes = 96;
  d->leaf_value_mask = 16;
  d->leaf_values = 80;
  d->leaf_prefix = 88;
  d->value_bytes = 8;
}

struct TypeInfo {
  int32_t code;
  const char* name;
};

// The grid's value type from its GridType number and version.
absl::StatusOr<TypeInfo> ValueTypeOf(uint32_t grid_type, uint32_t minor, wp::volume_t* d) {
  switch (grid_type) {
    case 1: FillValueLayout<float>(d); return TypeInfo{wp::VOLUME_FLOAT32, "float"};
    case 2: FillValueLayout<double>(d); return TypeInfo{wp::VOLUME_FLOAT64, "double"};
    case 4: FillValueLayout<int32_t>(d); return TypeInfo{wp::VOLUME_INT32, "int32"};
    case 5: FillValueLayout<int64_t>(d); return TypeInfo{wp::VOLUME_INT64, "int64"};
    case 6: FillValueLayout<nanovdb::Vec3f>(d); return TypeInfo{wp::VOLUME_VEC3F, "Vec3f"};
    case 7: FillValueLayout<nanovdb::Vec3d>(d); return TypeInfo{wp::VOLUME_VEC3D, "Vec3d"};
    case 10: FillValueLayout<uint32_t>(d); return TypeInfo{wp::VOLUME_UINT32, "uint32"};
    case 17: FillValueLayout<nanovdb::Vec4f>(d); return TypeInfo{wp::VOLUME_VEC4F, "Vec4f"};
    case 18: FillValueLayout<nanovdb::Vec4d>(d); return TypeInfo{wp::VOLUME_VEC4D, "Vec4d"};
    case 19:
    case 20:
      if (minor >= 6) {
        FillIndexLayout(d);
        return grid_type == 19 ? TypeInfo{wp::VOLUME_INDEX, "Index"} : TypeInfo{wp::VOLUME_ON_INDEX, "OnIndex"};
      }
      break;
    default: break;
  }
  return absl::UnimplementedError(absl::StrCat("NanoVDB grid type ", grid_type, " (version 32.", minor,
                                               ") is not supported by warpd volumes (supported: float, double, "
                                               "int32, int64, uint32, Vec3f, Vec3d, Vec4f, Vec4d, and index grids "
                                               "of NanoVDB 32.6+)"));
}

bool Aligned(uint64_t off) { return (off & 31u) == 0; }
bool Fits(uint64_t off, uint64_t bytes, uint64_t total) { return off <= total && bytes <= total - off; }

// The node sections of the tree: [begin, begin + count * bytes).
struct Section {
  uint64_t begin = 0, count = 0, bytes = 0;
  bool Holds(uint64_t off) const {
    return count != 0 && bytes != 0 && off >= begin && (off - begin) % bytes == 0 && (off - begin) / bytes < count;
  }
};

// Checks every child offset of an internal node table against `children`.
absl::Status CheckInternal(absl::Span<const uint8_t> g, uint64_t node, const wp::volume_node_layout& l, uint32_t n_log2,
                           const Section& children, const char* what) {
  const uint32_t entries = 1u << (3 * n_log2);
  for (uint32_t n = 0; n < entries; ++n) {
    const uint64_t word = Load<uint64_t>(g.data() + node + l.child_mask + 8u * (n >> 6));
    if (((word >> (n & 63)) & 1u) == 0) continue;
    const int64_t rel = Load<int64_t>(g.data() + node + l.table + uint64_t{n} * l.stride);
    const uint64_t child = node + static_cast<uint64_t>(rel);
    if (!children.Holds(child)) return Bad(absl::StrCat("a ", what, " node's child offset ", rel, " is not a node"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Volume::Check(absl::Span<const uint8_t> g, wp::volume_t* d) {
  constexpr uint64_t kGrid = sizeof(nanovdb::GridData);
  constexpr uint64_t kTree = sizeof(nanovdb::TreeData<3>);
  static_assert(kGrid == 672 && kTree == 64, "NanoVDB ABI 32 layout");
  if (g.size() < kGrid + kTree) return Bad(absl::StrCat("a grid of ", g.size(), " bytes is too small"));
  if (reinterpret_cast<uintptr_t>(g.data()) % 32 != 0) return absl::InternalError("volume buffer not aligned");
  const uint8_t* p = g.data();
  const uint64_t magic = Load<uint64_t>(p + offsetof(nanovdb::GridData, mMagic));
  if (magic != NANOVDB_MAGIC_NUMBER && magic != kGridMagic1) return Bad("NanoVDB signature not found on grid");
  const uint32_t version = Load<uint32_t>(p + offsetof(nanovdb::GridData, mVersion));
  const uint32_t major = version >> 21, minor = (version >> 10) & 2047;
  if (major != NANOVDB_MAJOR_VERSION_NUMBER) {
    return absl::UnimplementedError(absl::StrCat("NanoVDB grid version ", major, ".", minor,
                                                 " is not supported (warpd reads version 32 grids)"));
  }
  const uint64_t size = Load<uint64_t>(p + offsetof(nanovdb::GridData, mGridSize));
  if (size != g.size()) return Bad(absl::StrCat("the grid says it has ", size, " bytes, got ", g.size()));
  const uint32_t grid_type = Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridType));
  auto type = ValueTypeOf(grid_type, minor, d);
  if (!type.ok()) return type.status();
  d->value_type = type->code;
  d->grid_bytes = size;

  // The tree: node sections for each level, inside the grid and aligned.
  const uint8_t* tree = p + kGrid;
  uint64_t offsets[4];
  uint32_t counts[3];
  std::memcpy(offsets, tree + offsetof(nanovdb::TreeData<3>, mNodeOffset), sizeof(offsets));
  std::memcpy(counts, tree + offsetof(nanovdb::TreeData<3>, mNodeCount), sizeof(counts));
  const uint64_t sizes[3] = {d->leaf_bytes, d->lower.bytes, d->upper.bytes};
  Section sections[3];
  for (int level = 0; level < 3; ++level) {
    const uint64_t begin = kGrid + offsets[level];
    if (offsets[level] > size || !Aligned(begin)) {
      if (counts[level] != 0) return Bad(absl::StrCat("node section ", level, " lies outside the grid"));
      continue;
    }
    if (counts[level] != 0 && (!Aligned(begin) || !Fits(begin, uint64_t{counts[level]} * sizes[level], size))) {
      return Bad(absl::StrCat("node section ", level, " (", counts[level], " nodes) lies outside the grid"));
    }
    sections[level] = Section{begin, counts[level], sizes[level]};
  }
  const uint64_t root = kGrid + offsets[3];
  if (offsets[3] > size || !Aligned(root) || !Fits(root, d->root_header, size)) {
    return Bad("the root node lies outside the grid");
  }
  const uint32_t tiles = Load<uint32_t>(p + root + offsetof(typename nanovdb::NanoRoot<float>::DataType, mTableSize));
  if (!Fits(root + d->root_header, uint64_t{tiles} * d->tile_bytes, size)) {
    return Bad(absl::StrCat("the root's table of ", tiles, " tiles lies outside the grid"));
  }
  d->root = root;
  d->root_tiles = tiles;
  d->first_leaf = sections[0].begin;
  d->leaf_count = static_cast<uint32_t>(sections[0].count);

  // Every child offset points at a whole node of the next level.
  for (uint32_t t = 0; t < tiles; ++t) {
    const uint64_t at = root + d->root_header + uint64_t{t} * d->tile_bytes;
    const int64_t rel = Load<int64_t>(p + at + d->tile_child);
    if (rel != 0 && !sections[2].Holds(root + static_cast<uint64_t>(rel))) {
      return Bad(absl::StrCat("root tile ", t, "'s child offset ", rel, " is not an upper node"));
    }
  }
  for (uint64_t u = 0; u < sections[2].count; ++u) {
    if (auto s = CheckInternal(g, sections[2].begin + u * sections[2].bytes, d->upper, 5, sections[1], "upper");
        !s.ok())
      return s;
  }
  for (uint64_t l = 0; l < sections[1].count; ++l) {
    if (auto s = CheckInternal(g, sections[1].begin + l * sections[1].bytes, d->lower, 4, sections[0], "lower");
        !s.ok())
      return s;
  }

  // The map (float32 coefficients, as kernels use them).
  const nanovdb::Map* map = reinterpret_cast<const nanovdb::Map*>(p + offsetof(nanovdb::GridData, mMap));
  std::memcpy(d->mat, map->mMatF, sizeof(d->mat));
  std::memcpy(d->inv, map->mInvMatF, sizeof(d->inv));
  std::memcpy(d->vec, map->mVecF, sizeof(d->vec));
  return absl::OkStatus();
}

Volume::Volume(std::string device, std::shared_ptr<CpuBuffer> buffer, uint64_t bytes, const wp::volume_t& desc)
    : GeometryObject(wp::OBJECT_VOLUME, std::move(device)), buffer_(std::move(buffer)), desc_(desc) {
  desc_.grid = reinterpret_cast<uint8_t*>(buffer_->data());
  desc_.grid_bytes = bytes;
}

const void* Volume::descriptor() const {
  return mirror_ != nullptr ? mirror_->pointer<const void>(0) : &desc_;
}

absl::Status Volume::Mirror(ArrayMemory& memory, SegmentPool& device_pool) {
  if (mirror_ != nullptr) return absl::FailedPreconditionError("the volume is mirrored already");
  static_assert(sizeof(wp::volume_t) <= kMirrorGridAt, "the descriptor fits before the grid");
  std::unique_ptr<DeviceMirror> mirror;
  {
    absl::StatusOr<std::unique_ptr<DeviceMirror>> m =
        DeviceMirror::Create(memory, device(), kMirrorGridAt + desc_.grid_bytes, device_pool, "volume");
    if (!m.ok()) return m.status();
    mirror = *std::move(m);
  }
  if (absl::Status s = mirror->Upload(kMirrorGridAt, {reinterpret_cast<const std::byte*>(desc_.grid),
                                                      desc_.grid_bytes});
      !s.ok()) {
    return s;
  }
  wp::volume_t d = desc_;
  d.grid = mirror->pointer<uint8_t>(kMirrorGridAt);
  if (absl::Status s = mirror->UploadValue(0, d); !s.ok()) return s;
  mirror_ = std::move(mirror);
  return absl::OkStatus();
}

absl::Status Volume::ReadBytes(uint64_t offset, absl::Span<std::byte> out) const {
  if (offset > desc_.grid_bytes || out.size() > desc_.grid_bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat("bytes [", offset, ", ", offset + out.size(), ") of a grid of ",
                                              desc_.grid_bytes));
  }
  if (mirror_ != nullptr) return mirror_->Download(kMirrorGridAt + offset, out);
  if (!out.empty()) std::memcpy(out.data(), desc_.grid + offset, out.size());
  return absl::OkStatus();
}

absl::Status Volume::ReadMetadata() {
  const uint8_t* p = desc_.grid;
  const uint32_t version = Load<uint32_t>(p + offsetof(nanovdb::GridData, mVersion));
  const uint32_t minor = (version >> 10) & 2047;
  char name[nanovdb::GridData::MaxNameSize + 1] = {};
  std::memcpy(name, p + offsetof(nanovdb::GridData, mGridName), nanovdb::GridData::MaxNameSize);
  name_ = name;
  grid_index_ = Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridIndex));
  grid_count_ = Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridCount));
  std::memcpy(voxel_size_.data(), p + offsetof(nanovdb::GridData, mVoxelSize), sizeof(voxel_size_));
  std::memcpy(world_bbox_.data(), p + offsetof(nanovdb::GridData, mWorldBBox), sizeof(world_bbox_));
  grid_type_ = Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridType));
  grid_class_ = Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridClass));
  wp::volume_t scratch{};
  auto type = ValueTypeOf(Load<uint32_t>(p + offsetof(nanovdb::GridData, mGridType)), minor, &scratch);
  type_name_ = type.ok() ? type->name : "?";
  const uint8_t* tree = p + sizeof(nanovdb::GridData);
  const uint64_t active = Load<uint64_t>(tree + offsetof(nanovdb::TreeData<3>, mVoxelCount));
  active_voxel_count_ = active;
  internal_counts_[0] = Load<uint32_t>(tree + offsetof(nanovdb::TreeData<3>, mNodeCount) + 4);
  internal_counts_[1] = Load<uint32_t>(tree + offsetof(nanovdb::TreeData<3>, mNodeCount) + 8);
  if (desc_.value_type == wp::VOLUME_ON_INDEX || desc_.value_type == wp::VOLUME_VOXEL_INDEX) {
    voxel_count_ = active;
  } else {
    voxel_count_ = uint64_t{desc_.leaf_count} * 512u;
  }
  desc_.voxel_count = voxel_count_ > 2147483647u ? 2147483647 : static_cast<int32_t>(voxel_count_);

  // Blind data (Warp's feature arrays): NanoVDB 32.6+ counts each entry's
  // offset from the entry itself and stores the element size; older
  // versions count from the grid.
  const int64_t meta = Load<int64_t>(p + offsetof(nanovdb::GridData, mBlindMetadataOffset));
  const uint32_t count = Load<uint32_t>(p + offsetof(nanovdb::GridData, mBlindMetadataCount));
  constexpr uint64_t kEntry = sizeof(nanovdb::GridBlindMetaData);
  static_assert(kEntry == 288, "NanoVDB blind metadata layout");
  if (count > 0 && meta > 0 && Fits(static_cast<uint64_t>(meta), uint64_t{count} * kEntry, desc_.grid_bytes)) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t at = static_cast<uint64_t>(meta) + i * kEntry;
      const int64_t rel = Load<int64_t>(p + at);
      const uint64_t elements = Load<uint64_t>(p + at + 8);
      const uint32_t elem_size = Load<uint32_t>(p + at + 16);
      BlindData b;
      b.offset = minor >= 6 ? at + static_cast<uint64_t>(rel) : static_cast<uint64_t>(rel);
      b.count = elements;
      b.type = Load<uint32_t>(p + at + 28);
      if (minor < 6) return Bad("blind data of NanoVDB grids older than 32.6 is not supported");
      if (elem_size == 0 || elements > desc_.grid_bytes / elem_size) return Bad("blind data larger than the grid");
      b.bytes = elements * elem_size;
      if (!Fits(b.offset, b.bytes, desc_.grid_bytes)) return Bad("blind data lies outside the grid");
      char bname[257] = {};
      std::memcpy(bname, p + at + 32, 256);
      b.name = bname;
      blind_.push_back(std::move(b));
    }
  }
  return absl::OkStatus();
}

std::array<float, 9> Volume::transform() const {
  std::array<float, 9> m;
  std::memcpy(m.data(), desc_.mat, sizeof(desc_.mat));
  return m;
}
std::array<float, 3> Volume::translation() const { return {desc_.vec[0], desc_.vec[1], desc_.vec[2]}; }

void Volume::Tiles(int32_t* out) const {
  for (uint32_t l = 0; l < desc_.leaf_count; ++l) {
    const uint8_t* leaf = desc_.grid + desc_.first_leaf + uint64_t{l} * desc_.leaf_bytes;
    for (int c = 0; c < 3; ++c) out[3 * l + c] = Load<int32_t>(leaf + 4 * c) & ~7;
  }
}

void Volume::Voxels(int32_t* out) const {
  const bool on_index = desc_.value_type == wp::VOLUME_ON_INDEX || desc_.value_type == wp::VOLUME_VOXEL_INDEX;
  for (uint32_t l = 0; l < desc_.leaf_count; ++l) {
    const uint64_t leaf = desc_.first_leaf + uint64_t{l} * desc_.leaf_bytes;
    int32_t origin[3];
    for (int c = 0; c < 3; ++c) origin[c] = Load<int32_t>(desc_.grid + leaf + 4 * c) & ~7;
    for (uint32_t n = 0; n < 512; ++n) {
      const int32_t ijk[3] = {origin[0] + static_cast<int32_t>(n >> 6), origin[1] + static_cast<int32_t>((n >> 3) & 7),
                              origin[2] + static_cast<int32_t>(n & 7)};
      uint64_t slot;
      if (on_index) {
        wp::volume_address a{};
        a.level = wp::VOLUME_AT_LEAF;
        a.leaf = leaf;
        a.n = n;
        const int64_t index = wp::volume_voxel_index(desc_, a);
        if (index < 0 || static_cast<uint64_t>(index) >= voxel_count_) continue;
        slot = static_cast<uint64_t>(index);
      } else {
        slot = uint64_t{l} * 512u + n;
      }
      std::memcpy(out + 3 * slot, ijk, sizeof(ijk));
    }
  }
}

absl::StatusOr<std::shared_ptr<Volume>> Volume::FromNvdb(std::string device, absl::Span<const uint8_t> file,
                                                         uint32_t grid_index, SegmentPool& pool) {
  static_assert(sizeof(nanovdb::io::Header) == 16 && sizeof(nanovdb::io::MetaData) == 176, "NanoVDB file layout");
  uint64_t at = 0;
  uint32_t seen = 0;
  const uint64_t n = file.size();
  // Grids counted over every segment (for grid_count when the grid header
  // has none).
  while (at < n) {
    if (n - at < sizeof(nanovdb::io::Header)) return Bad("the file ends inside a segment header");
    const uint64_t magic = Load<uint64_t>(file.data() + at);
    if (magic != kFileMagic0 && magic != kFileMagic2) return Bad("NanoVDB signature not found");
    const uint32_t version = Load<uint32_t>(file.data() + at + 8);
    if ((version >> 21) != NANOVDB_MAJOR_VERSION_NUMBER) {
      return absl::UnimplementedError(absl::StrCat("unsupported NanoVDB file version ", version >> 21, " (warpd reads 32)"));
    }
    const uint16_t grids = Load<uint16_t>(file.data() + at + 12);
    const uint16_t codec = Load<uint16_t>(file.data() + at + 14);
    at += sizeof(nanovdb::io::Header);
    std::vector<nanovdb::io::MetaData> metas(grids);
    for (uint16_t g = 0; g < grids; ++g) {
      if (n - at < sizeof(nanovdb::io::MetaData)) return Bad("the file ends inside a grid's metadata");
      std::memcpy(&metas[g], file.data() + at, sizeof(nanovdb::io::MetaData));
      at += sizeof(nanovdb::io::MetaData);
      if (metas[g].nameSize > n - at) return Bad("a grid name runs past the end of the file");
      at += metas[g].nameSize;
    }
    for (uint16_t g = 0; g < grids; ++g, ++seen) {
      // The grid's stored bytes, walked as NanoVDB's reader does (the
      // metadata's fileSize is not trusted: writers disagree on whether it
      // counts the compressed sizes' prefixes).
      const uint64_t bytes = metas[g].gridSize;
      uint64_t disk = 0;
      if (codec == 0) {
        disk = bytes;
      } else if (codec == 1 || codec == 2) {
        uint64_t left = bytes;
        do {
          if (n - at < disk || n - at - disk < 8) return Bad("a compressed grid is truncated");
          const uint64_t packed = Load<uint64_t>(file.data() + at + disk);
          disk += 8;
          if (packed > n - at - disk) return Bad("a compressed grid runs past the end of the file");
          disk += packed;
          left -= codec == 1 ? left : std::min<uint64_t>(left, nanovdb::io::Internal::MAX_SIZE);
        } while (left > 0);
      } else {
        return absl::UnimplementedError(absl::StrCat("unsupported NanoVDB codec ", codec));
      }
      if (disk > n - at) return Bad(absl::StrCat("grid ", seen, "'s ", disk, " bytes run past the end of the file"));
      if (seen != grid_index) {
        at += disk;
        continue;
      }
      if (bytes > kMaxGridBytes) return Bad(absl::StrCat("a grid of ", bytes, " bytes is larger than warpd loads"));
      if (bytes < sizeof(nanovdb::GridData)) return Bad(absl::StrCat("a grid of ", bytes, " bytes is too small"));
      auto buffer = pool.Allocate(bytes, "volume", Fill::kZero);
      if (!buffer.ok()) return buffer.status();
      uint8_t* dst = reinterpret_cast<uint8_t*>((*buffer)->data());
      const uint8_t* src = file.data() + at;
      switch (codec) {
        case 0:  // none
          if (disk < bytes) return Bad("a grid's stored bytes are fewer than its size");
          std::memcpy(dst, src, bytes);
          break;
        case 1: {  // ZIP: one zlib stream, its size first
          if (disk < 8) return Bad("a compressed grid is truncated");
          const uint64_t packed = Load<uint64_t>(src);
          if (packed > disk - 8) return Bad("a compressed grid runs past its stored bytes");
          uLongf out = static_cast<uLongf>(bytes);
          const int rc = uncompress(dst, &out, src + 8, static_cast<uLong>(packed));
          if (rc != Z_OK || out != bytes) return Bad(absl::StrCat("ZIP data does not decompress to the grid's ", bytes,
                                                               " bytes (zlib ", rc, ")"));
          break;
        }
        case 2: {  // BLOSC: chunks of up to 1 GiB, each with its size first
          uint64_t done = 0, used = 0;
          while (done < bytes) {
            if (disk - used < 8) return Bad("a compressed grid is truncated");
            const uint64_t packed = Load<uint64_t>(src + used);
            used += 8;
            if (packed > disk - used) return Bad("a compressed chunk runs past its stored bytes");
            const uint64_t chunk = std::min<uint64_t>(bytes - done, nanovdb::io::Internal::MAX_SIZE);
            size_t expect = 0;
            if (blosc_cbuffer_validate(src + used, packed, &expect) != 0 || expect != chunk) {
              return Bad("BLOSC data does not match the grid's size");
            }
            const int got = blosc_decompress_ctx(src + used, dst + done, chunk, 1);
            if (got < 0 || static_cast<uint64_t>(got) != chunk) return Bad("BLOSC data does not decompress");
            used += packed;
            done += chunk;
          }
          break;
        }
        default: return absl::UnimplementedError(absl::StrCat("unsupported NanoVDB codec ", codec));
      }
      wp::volume_t desc{};
      if (auto s = Check(absl::Span<const uint8_t>(dst, bytes), &desc); !s.ok()) return s;
      auto volume = std::make_shared<Volume>(std::move(device), *std::move(buffer), bytes, desc);
      if (auto s = volume->ReadMetadata(); !s.ok()) return s;
      return volume;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("the file holds ", seen, " grids, no grid ", grid_index));
}

absl::StatusOr<std::shared_ptr<Volume>> Volume::FromGrid(std::string device, absl::Span<const uint8_t> grid,
                                                         SegmentPool& pool) {
  if (grid.size() > kMaxGridBytes) return Bad(absl::StrCat("a grid of ", grid.size(), " bytes is larger than warpd loads"));
  if (grid.size() < sizeof(nanovdb::GridData)) return Bad(absl::StrCat("a grid of ", grid.size(), " bytes is too small"));
  auto buffer = pool.Allocate(grid.size(), "volume", Fill::kAny);
  if (!buffer.ok()) return buffer.status();
  std::memcpy((*buffer)->data(), grid.data(), grid.size());
  wp::volume_t desc{};
  if (auto s = Check(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>((*buffer)->data()), grid.size()), &desc);
      !s.ok())
    return s;
  auto volume = std::make_shared<Volume>(std::move(device), *std::move(buffer), grid.size(), desc);
  if (auto s = volume->ReadMetadata(); !s.ok()) return s;
  return volume;
}

namespace {

// The grid of `tiles` built with NanoVDB's GridBuilder, in a buffer of the
// session's pool. Its size is known before building (one leaf per distinct
// tile, lower and upper nodes per distinct 128^3 and 4096^3 block, a root
// tile per upper node), so the pool charges it (RESOURCE_EXHAUSTED) before
// the builder's own memory, about as much again, is used.
//
// With `voxels`, the points are single voxels: only they are active.
template <typename ValueT>
absl::StatusOr<std::pair<std::shared_ptr<CpuBuffer>, uint64_t>> BuildTiles(
    absl::Span<const std::array<int32_t, 3>> tiles, absl::Span<const uint8_t> background, const nanovdb::Map& map,
    SegmentPool& pool, bool voxels = false) {
  if (background.size() != sizeof(ValueT)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a background value of ", background.size(), " bytes for a grid of ", sizeof(ValueT), "-byte values"));
  }
  auto keys = [&](int shift) {
    std::vector<std::array<int32_t, 3>> k;
    k.reserve(tiles.size());
    for (const auto& t : tiles) k.push_back({t[0] >> shift, t[1] >> shift, t[2] >> shift});
    std::sort(k.begin(), k.end());
    return static_cast<uint64_t>(std::unique(k.begin(), k.end()) - k.begin());
  };
  const uint64_t leaves = keys(3), lowers = keys(7), uppers = keys(12);
  using RootData = typename nanovdb::NanoRoot<ValueT>::DataType;
  const uint64_t estimate = sizeof(nanovdb::GridData) + sizeof(nanovdb::TreeData<3>) + sizeof(RootData) +
                            uppers * sizeof(typename RootData::Tile) +
                            uppers * sizeof(typename nanovdb::NanoUpper<ValueT>::DataType) +
                            lowers * sizeof(typename nanovdb::NanoLower<ValueT>::DataType) +
                            leaves * sizeof(typename nanovdb::NanoLeaf<ValueT>::DataType);
  if (estimate > kVolumeMaxGridBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("a volume of ", estimate, " bytes is larger than warpd builds"));
  }
  auto buffer = pool.Allocate(estimate, "volume", Fill::kAny);
  if (!buffer.ok()) return buffer.status();

  ValueT bg;
  std::memcpy(&bg, background.data(), sizeof(bg));
  nanovdb::GridBuilder<ValueT> builder(bg, nanovdb::GridClass::Unknown);
  auto acc = builder.getAccessor();
  for (const auto& t : tiles) {
    if (voxels) {
      acc.setValue(nanovdb::Coord(t[0], t[1], t[2]), bg);
      continue;
    }
    const int32_t x = t[0] & ~7, y = t[1] & ~7, z = t[2] & ~7;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 8; ++k) acc.setValue(nanovdb::Coord(x + i, y + j, z + k), bg);
  }
  auto handle = builder.template getHandle<nanovdb::AbsDiff, nanovdb::HostBuffer>(map, "");
  const uint64_t bytes = handle.size();
  if (bytes > estimate) {  // not expected: the layout has no other parts
    auto bigger = pool.Allocate(bytes, "volume", Fill::kAny);
    if (!bigger.ok()) return bigger.status();
    buffer = std::move(bigger);
  }
  std::memcpy((*buffer)->data(), handle.data(), bytes);
  return std::make_pair(*std::move(buffer), bytes);
}

}  // namespace

absl::StatusOr<std::shared_ptr<Volume>> Volume::FromTiles(std::string device, int32_t type,
                                                          absl::Span<const std::array<int32_t, 3>> tiles,
                                                          absl::Span<const uint8_t> background,
                                                          const std::array<double, 9>& mat,
                                                          const std::array<double, 3>& translation,
                                                          SegmentPool& pool) {
  const bool voxel_index = type == wp::VOLUME_VOXEL_INDEX;
  const char* what = voxel_index ? " voxels" : " tiles";
  const int64_t most = voxel_index ? kMaxTiles * 64 : kMaxTiles;
  if (tiles.empty()) return absl::InvalidArgumentError(absl::StrCat("a volume needs at least one", what));
  if (static_cast<int64_t>(tiles.size()) > most) {
    return absl::InvalidArgumentError(
        absl::StrCat("a volume of ", tiles.size(), what, " is more than the ", most, " warpd builds"));
  }
  // The map and its inverse (Warp's affine index-to-world transform).
  double m[3][3], inv[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) m[r][c] = mat[3 * r + c];
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  if (!(std::abs(det) > 0.0) || !std::isfinite(det)) {
    return absl::InvalidArgumentError("the volume's transform is singular or not finite");
  }
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      // The adjugate's (r, c) entry: the cofactor of (c, r).
      const int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
      inv[r][c] = (m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]) / det;
    }
  for (double t : translation)
    if (!std::isfinite(t)) return absl::InvalidArgumentError("the volume's translation is not finite");
  // Map::set stores its matrices transposed (OpenVDB's row-vector
  // convention): handed the transposes, the grid keeps `mat` as given
  // (index-to-world = mat * index, as Warp's transform and voxel size read).
  double mt[3][3], invt[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      mt[r][c] = m[c][r];
      invt[r][c] = inv[c][r];
    }
  nanovdb::Map map;
  map.set(mt, invt, nanovdb::Vec3d(translation[0], translation[1], translation[2]), 1.0);

  absl::StatusOr<std::pair<std::shared_ptr<CpuBuffer>, uint64_t>> built = absl::UnknownError("");
  const bool tile_index = type == wp::VOLUME_TILE_INDEX;
  const float zero = 0.0f;
  if (tile_index) {
    if (!background.empty()) return absl::InvalidArgumentError("an index volume has no background value");
    type = wp::VOLUME_FLOAT32;
    background = absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&zero), sizeof(zero));
  }
  const uint32_t no_index = 0;
  if (voxel_index) {
    if (!background.empty()) return absl::InvalidArgumentError("an index volume has no background value");
    type = wp::VOLUME_UINT32;
    background = absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&no_index), sizeof(no_index));
  }
  switch (type) {
    case wp::VOLUME_UINT32: built = BuildTiles<uint32_t>(tiles, background, map, pool, voxel_index); break;
    case wp::VOLUME_FLOAT32: built = BuildTiles<float>(tiles, background, map, pool); break;
    case wp::VOLUME_FLOAT64: built = BuildTiles<double>(tiles, background, map, pool); break;
    case wp::VOLUME_INT32: built = BuildTiles<int32_t>(tiles, background, map, pool); break;
    case wp::VOLUME_INT64: built = BuildTiles<int64_t>(tiles, background, map, pool); break;
    case wp::VOLUME_VEC3F: built = BuildTiles<nanovdb::Vec3f>(tiles, background, map, pool); break;
    case wp::VOLUME_VEC3D: built = BuildTiles<nanovdb::Vec3d>(tiles, background, map, pool); break;
    case wp::VOLUME_VEC4F: built = BuildTiles<nanovdb::Vec4f>(tiles, background, map, pool); break;
    case wp::VOLUME_VEC4D: built = BuildTiles<nanovdb::Vec4d>(tiles, background, map, pool); break;
    default:
      return absl::UnimplementedError(absl::StrCat("volumes of value type ", type, " cannot be allocated by warpd"));
  }
  if (!built.ok()) return built.status();
  auto [buffer, bytes] = *std::move(built);
  wp::volume_t desc{};
  if (auto s = Check(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(buffer->data()), bytes), &desc);
      !s.ok())
    return absl::InternalError(absl::StrCat("the built volume does not check: ", s.message()));
  if (tile_index) desc.value_type = wp::VOLUME_TILE_INDEX;
  if (voxel_index) {
    // Each active voxel holds its index: leaves in order, voxels in bit order.
    desc.value_type = wp::VOLUME_VOXEL_INDEX;
    uint8_t* grid = reinterpret_cast<uint8_t*>(buffer->data());
    uint32_t next = 0;
    for (uint32_t l = 0; l < desc.leaf_count; ++l) {
      const uint64_t leaf = desc.first_leaf + uint64_t{l} * desc.leaf_bytes;
      for (uint32_t n = 0; n < 512; ++n) {
        const uint64_t word = Load<uint64_t>(grid + leaf + desc.leaf_value_mask + 8u * (n >> 6));
        if (((word >> (n & 63u)) & 1u) == 0) continue;
        std::memcpy(grid + leaf + desc.leaf_values + 4u * n, &next, sizeof(next));
        ++next;
      }
    }
  }
  auto volume = std::make_shared<Volume>(std::move(device), std::move(buffer), bytes, desc);
  if (auto s = volume->ReadMetadata(); !s.ok()) return s;
  if (tile_index || voxel_index) volume->type_name_ = "OnIndex";
  return volume;
}

}  // namespace warpd::runtime
