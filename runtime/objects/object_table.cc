#include "runtime/objects/object_table.h"

#include <algorithm>

namespace warpd::runtime {

const char* ObjectKindName(int32_t kind) {
  switch (kind) {
    case wp::OBJECT_HASH_GRID: return "hash grid";
    case wp::OBJECT_BVH: return "BVH";
    case wp::OBJECT_MESH: return "mesh";
    case wp::OBJECT_VOLUME: return "volume";
    default: return "object";
  }
}

std::shared_ptr<const ObjectTable> ObjectTable::Empty() {
  static const std::shared_ptr<const ObjectTable> empty =
      std::make_shared<const ObjectTable>(std::vector<std::shared_ptr<const GeometryObject>>{},
                                          std::vector<wp::object_entry>{});
  return empty;
}

std::shared_ptr<const ObjectTable> ObjectTable::With(uint64_t id, std::shared_ptr<const GeometryObject> object) const {
  const int32_t kind = object->kind();
  const void* data = object->descriptor();
  return WithEntry(id, std::move(object), kind, data);
}

std::shared_ptr<const ObjectTable> ObjectTable::WithTree(uint64_t id,
                                                         std::shared_ptr<const GeometryObject> object) const {
  std::shared_ptr<const ObjectTable> t = With(id, object);
  if (object->tree_descriptor() == nullptr || object->tree_id() == 0) return t;
  const uint64_t tree = object->tree_id();
  const void* data = object->tree_descriptor();
  return t->WithEntry(tree, std::move(object), wp::OBJECT_BVH, data);
}

std::shared_ptr<const ObjectTable> ObjectTable::WithEntry(uint64_t id, std::shared_ptr<const GeometryObject> object,
                                                          int32_t kind, const void* data) const {
  std::vector<std::shared_ptr<const GeometryObject>> objects = objects_;
  std::vector<wp::object_entry> native = native_;
  auto at = std::lower_bound(native.begin(), native.end(), id,
                             [](const wp::object_entry& e, uint64_t v) { return e.id < v; });
  const size_t i = static_cast<size_t>(at - native.begin());
  wp::object_entry e{};
  e.id = id;
  e.kind = kind;
  e.data = data;
  if (at != native.end() && at->id == id) {
    native[i] = e;
    objects[i] = std::move(object);
  } else {
    native.insert(at, e);
    objects.insert(objects.begin() + static_cast<std::ptrdiff_t>(i), std::move(object));
  }
  return std::make_shared<const ObjectTable>(std::move(objects), std::move(native));
}

std::shared_ptr<const ObjectTable> ObjectTable::Without(absl::Span<const uint64_t> ids) const {
  std::vector<std::shared_ptr<const GeometryObject>> objects;
  std::vector<wp::object_entry> native;
  for (size_t i = 0; i < native_.size(); ++i) {
    if (std::find(ids.begin(), ids.end(), native_[i].id) != ids.end()) continue;
    objects.push_back(objects_[i]);
    native.push_back(native_[i]);
  }
  if (native.empty()) return Empty();
  return std::make_shared<const ObjectTable>(std::move(objects), std::move(native));
}

std::shared_ptr<const GeometryObject> ObjectTable::Find(uint64_t id) const {
  auto at = std::lower_bound(native_.begin(), native_.end(), id,
                             [](const wp::object_entry& e, uint64_t v) { return e.id < v; });
  if (at == native_.end() || at->id != id) return nullptr;
  return objects_[static_cast<size_t>(at - native_.begin())];
}

}  // namespace warpd::runtime
