// warpd runtime: a launch's object table: the objects kernels may query.
//
// An ObjectTable is an immutable snapshot of one session's live objects on
// one device, with the native table (wp::object_entry, sorted by id) that a
// launch's context points at (docs/launch_abi.md, "Object table"). A session
// keeps its current table and replaces it when an object is added or
// removed (With / Without make the new one); a launch takes the current one
// when it is prepared and holds it (and so its objects) until it is
// destroyed. Only the session's own objects are ever in its tables, so an id
// of another session resolves to nothing in its kernels.
//
//   std::shared_ptr<const ObjectTable> t = ObjectTable::Empty()->With(id, grid);
//   ctx.objects = t->entries(); ctx.num_objects = t->size();
//
// Thread-safe (immutable).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "runtime/objects/geometry_object.h"

namespace warpd::runtime {

class ObjectTable {
 public:
  // The table without objects (one shared instance).
  static std::shared_ptr<const ObjectTable> Empty();

  // This table plus `object` under `id` (replacing an entry of that id).
  std::shared_ptr<const ObjectTable> With(uint64_t id, std::shared_ptr<const GeometryObject> object) const;
  // ... and, for an object with a tree (GeometryObject::tree_descriptor),
  // the tree as an OBJECT_BVH under object->tree_id().
  std::shared_ptr<const ObjectTable> WithTree(uint64_t id, std::shared_ptr<const GeometryObject> object) const;
  // This table without the entries of `ids` (unknown ids are ignored).
  std::shared_ptr<const ObjectTable> Without(absl::Span<const uint64_t> ids) const;

  // The native entries, sorted by id; null when empty.
  const wp::object_entry* entries() const { return native_.empty() ? nullptr : native_.data(); }
  size_t size() const { return native_.size(); }
  bool empty() const { return native_.empty(); }
  // The object of `id`, or null.
  std::shared_ptr<const GeometryObject> Find(uint64_t id) const;
  // The objects' use lock (GeometryObject::use_lock: one per session, so
  // its tables' objects share it); null when empty.
  absl::Mutex* use_lock() const { return objects_.empty() ? nullptr : objects_.front()->use_lock(); }
  // What the table occupies (its vectors).
  uint64_t MemoryBytes() const {
    return sizeof(*this) + objects_.capacity() * sizeof(objects_[0]) + native_.capacity() * sizeof(native_[0]);
  }

  // Made by Empty/With/WithTree/Without only (public for make_shared).
  ObjectTable(std::vector<std::shared_ptr<const GeometryObject>> objects, std::vector<wp::object_entry> native)
      : objects_(std::move(objects)), native_(std::move(native)) {}

 private:
  // This table plus an entry `id` -> (kind, data) owned by `object`.
  std::shared_ptr<const ObjectTable> WithEntry(uint64_t id, std::shared_ptr<const GeometryObject> object,
                                               int32_t kind, const void* data) const;

  // Parallel vectors, sorted by id: objects_[i] owns native_[i].data.
  const std::vector<std::shared_ptr<const GeometryObject>> objects_;
  const std::vector<wp::object_entry> native_;
};

}  // namespace warpd::runtime
