// warpd runtime: server-side objects that kernels query by id (hash grids;
// meshes, BVHs and volumes to come).
//
// Such an object belongs to one session (server/session.h), which names it
// by an unguessable handle (handle_table.h). Kernels hold that handle as a
// plain uint64 and query the object through the launch's object table
// (object_table.h; runtime/native/warpd/native/objects.h), which points at
// the object's native descriptor: a plain struct of runtime/native (e.g.
// wp::hash_grid_t) at a fixed address for the object's lifetime.
//
// Ownership: shared_ptrs, held by the session's handle table, by the object
// tables of launches prepared while it lived, and by the commands that build
// it; the memory it allocated (from its session's pool, so charged to the
// session) goes with the last of them. An object keeps alive every buffer
// its descriptor points to.
// Thread-safety: kind(), device() and descriptor() (the address) are
// immutable; the descriptor's contents change only by commands of the
// object's device stream (stream order), which also runs the launches that
// read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"

#include "warpd/native/launch.h"

namespace warpd::runtime {

class GeometryObject {
 public:
  GeometryObject(wp::object_kind kind, std::string device) : kind_(kind), device_(std::move(device)) {}
  virtual ~GeometryObject() = default;
  GeometryObject(const GeometryObject&) = delete;
  GeometryObject& operator=(const GeometryObject&) = delete;

  wp::object_kind kind() const { return kind_; }
  const std::string& device() const { return device_; }
  // The native descriptor kernels read (its type is the kind's); its address
  // never changes.
  virtual const void* descriptor() const = 0;
  // What the object holds besides what its pool charged (for accounting).
  virtual uint64_t MetadataBytes() const = 0;

  // An object whose tree kernels may also query as a BVH (a mesh's,
  // mesh_get_bvh) answers under a second id of its session: the tree's
  // descriptor (a wp::bvh_t inside the object; null: none), and the id,
  // which the session sets once, before the object is in any table.
  virtual const void* tree_descriptor() const { return nullptr; }
  virtual uint64_t tree_id() const { return 0; }
  virtual void set_tree_id(uint64_t) {}

  // What keeps a build of the object from running while a launch that may
  // query it runs on another stream: commands that change an object (builds,
  // refits) hold it exclusively, launches with an object table shared
  // (exec/launch.cc). A session gives all its objects one lock (set once,
  // before the object is in any table); each object has its own otherwise.
  absl::Mutex* use_lock() const { return use_lock_.get(); }
  void set_use_lock(std::shared_ptr<absl::Mutex> lock) { use_lock_ = std::move(lock); }

 private:
  const wp::object_kind kind_;
  const std::string device_;
  std::shared_ptr<absl::Mutex> use_lock_ = std::make_shared<absl::Mutex>();
};

// Warp's name of an object kind, for messages: "hash grid".
const char* ObjectKindName(int32_t kind);

}  // namespace warpd::runtime
