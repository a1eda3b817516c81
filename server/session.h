// warpd server: one client session: its arrays, modules and device streams.
//
// Everything a session creates belongs to it: handles resolve only through
// its own tables (another session's handle is NOT_FOUND), and Close() frees
// it all: queued commands are dropped, a running kernel is cancelled, the
// tables are cleared (memory goes once no command holds it any more).
// After Close, adding objects or streams fails with UNAUTHENTICATED, the same
// as an unknown session. The session's CPU memory comes from its own pool
// (runtime/memory/segment_pool.h), charged to its memory account (below its
// tenant's); arrays that outlive the session keep their memory.
// A session belongs to one tenant (only that tenant's token reaches it) and
// holds a lease: it lives while a HoldSession stream of it is open
// (AddHolder/RemoveHolder) or its last call was less than the grace period
// ago (Touch); SessionManager closes it when the lease lapses.
// Thread-safe; requests of one session may run concurrently.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "compiler/compiler.h"
#include "runtime/device/device.h"
#include "runtime/exec/graph.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"
#include "runtime/exec/time_stamp.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/bvh.h"
#include "runtime/objects/geometry_object.h"
#include "runtime/objects/handle_table.h"
#include "runtime/objects/hash_grid.h"
#include "runtime/objects/object_table.h"
#include "server/tenants/tenant.h"

namespace warpd::server {

class Session {
 public:
  // `group` is the tenant's share of the stream executor, which runs the
  // session's streams; the executor must outlive the session. The session's
  // arrays are charged to its own account below its tenant's, and its
  // queued commands to the tenant's queued-commands quota.
  Session(std::string client_name, std::shared_ptr<Tenant> tenant, std::shared_ptr<runtime::StreamGroup> group,
          const runtime::SegmentPoolOptions& pool_options);
  ~Session();

  const std::string& client_name() const { return client_name_; }
  const std::shared_ptr<Tenant>& tenant() const { return tenant_; }
  runtime::StreamGroup& group() const { return *group_; }

  // Lease. Times are absl::Now() in nanoseconds since the epoch.
  void Touch() { last_active_ns_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed); }
  void AddHolder() { holders_.fetch_add(1, std::memory_order_relaxed); }
  void RemoveHolder() {
    Touch();  // the grace period counts from when the client went away
    holders_.fetch_sub(1, std::memory_order_relaxed);
  }
  // True when nothing holds the lease and the last call was before `deadline_ns`.
  bool Lapsed(int64_t deadline_ns) const {
    return holders_.load(std::memory_order_relaxed) == 0 &&
           last_active_ns_.load(std::memory_order_relaxed) < deadline_ns;
  }
  // For status reports (server/admin): when it opened and was last used
  // (nanoseconds since the epoch), and whether a HoldSession stream holds it.
  int64_t opened_ns() const { return opened_ns_; }
  int64_t last_active_ns() const { return last_active_ns_.load(std::memory_order_relaxed); }
  bool held() const { return holders_.load(std::memory_order_relaxed) > 0; }
  // Where the session's CPU arrays are allocated (Device::Allocate).
  runtime::SegmentPool& pool() { return pool_; }
  // Where its arrays whose elements hold array descriptors are allocated
  // (runtime/objects/array_members.h): memory never mapped into a client.
  // Charged to the same account.
  runtime::SegmentPool& private_pool() { return private_pool_; }
  // What the session's arrays on the GPU named `device` ("cuda:0") are
  // charged through (CudaDevice::Allocate uses its account only): an
  // account of its own under the session's, so its use on each device is
  // known (Warp's get_mempool_used_mem_current/high, GetUsage).
  runtime::SegmentPool& DevicePool(const std::string& device);
  struct DeviceMemory {
    std::string device;
    uint64_t used = 0;  // bytes now
    uint64_t peak = 0;  // the most at once
  };
  // Per GPU the session has used, in name order.
  std::vector<DeviceMemory> DeviceMemoryUse() const;
  // Close() lets go of what `held` holds (breaking cycles of arrays that
  // hold each other). Pass each descriptor array's HeldArrays once.
  void TrackHeld(const std::shared_ptr<runtime::HeldArrays>& held);

  // Objects the session holds by handle. A module and a graph are charged
  // to the session's memory account (their memory_bytes / HeldBytes and a
  // handle's bookkeeping) for as long as any copy of the table's pointer
  // lives; RESOURCE_EXHAUSTED when that does not fit. An array was charged
  // when it was made (tenant_array.h).
  absl::StatusOr<uint64_t> AddArray(std::shared_ptr<const runtime::Array> array);
  absl::StatusOr<uint64_t> AddModule(std::shared_ptr<const compiler::CompiledModule> module);
  absl::StatusOr<uint64_t> AddGraph(std::shared_ptr<runtime::Graph> graph);
  // A handle table entry: the slot, its key, the shared_ptr's control block.
  static constexpr uint64_t kHandleBytes = 128;

  // Objects kernels query by id (runtime/objects/geometry_object.h): one
  // table for every kind, so ids are unique in the session. An object is
  // charged its handle and bookkeeping (its buffers were charged by the pool
  // that allocated them) and enters the session's launch table of its
  // device (ObjectsOn). At most kMaxObjects (RESOURCE_EXHAUSTED).
  // `handle`: 0 draws one; else the client's own (a CreateTree command's
  // id), ALREADY_EXISTS when the session uses it.
  static constexpr size_t kMaxObjects = 1 << 16;
  absl::StatusOr<uint64_t> AddObject(std::shared_ptr<runtime::GeometryObject> object, uint64_t handle = 0);
  // The hash grid `handle` names: NOT_FOUND ("hash grid handle 0x... not
  // found") for an unknown handle, another session's, or another kind's.
  absl::StatusOr<std::shared_ptr<runtime::HashGrid>> GetHashGrid(uint64_t handle) const;
  // The object with a tree (a BVH) `handle` names: NOT_FOUND ("BVH handle
  // 0x... not found") as GetHashGrid.
  absl::StatusOr<std::shared_ptr<runtime::TreeObject>> GetTree(uint64_t handle) const;
  // Drops `handles` from the object table and the launch tables; launches
  // prepared before keep their tables (and so the objects) until they are
  // destroyed. Unknown handles are ignored.
  void RemoveObjects(absl::Span<const uint64_t> handles);
  // The session's live objects on `device`, as a launch's object table
  // (runtime/objects/object_table.h); never null.
  std::shared_ptr<const runtime::ObjectTable> ObjectsOn(const std::string& device) const;
  runtime::HandleTable<runtime::GeometryObject>& objects() { return objects_; }

  // Lookups and removal (NOT_FOUND for unknown handles).
  runtime::HandleTable<const runtime::Array>& arrays() { return arrays_; }
  const runtime::HandleTable<const runtime::Array>& arrays() const { return arrays_; }
  runtime::HandleTable<const compiler::CompiledModule>& modules() { return modules_; }
  runtime::HandleTable<runtime::Graph>& graphs() { return graphs_; }

  // Streams per device: 0, the default one, and up to 63 more (Warp's
  // wp.Stream; SubmitRequest.stream).
  static constexpr uint32_t kMaxStreamsPerDevice = 64;
  // The session's stream `id` on `device`, made on first use;
  // INVALID_ARGUMENT for an id past kMaxStreamsPerDevice.
  absl::StatusOr<std::shared_ptr<runtime::Stream>> StreamFor(runtime::Device* device, uint32_t id = 0);
  // The stream `id` on the device named `device`, or null when none was made.
  std::shared_ptr<runtime::Stream> FindStream(const std::string& device, uint32_t id = 0);
  // Every stream of the device named `device`; of every device.
  std::vector<std::shared_ptr<runtime::Stream>> StreamsOn(const std::string& device);
  std::vector<std::shared_ptr<runtime::Stream>> Streams();

  // The session's time slots (RecordTime commands, Synchronize's
  // read_times), made on first use: 64 KiB, not charged (one per session).
  std::shared_ptr<runtime::TimeSlots> time_slots();
  // The slots if made, else null (a read before any stamp).
  std::shared_ptr<const runtime::TimeSlots> find_time_slots() const;

  // Calls `listener` (once, without locks held) when the session closes.
  // Returns the registration's id (never 0) for RemoveCloseListener; 0,
  // without calling it, when the session is already closed. The listener
  // must not block. Whoever adds one removes it when it no longer needs it
  // (a HoldSession stream when it ends): the session keeps every listener
  // until then, or until it closes.
  uint64_t AddCloseListener(absl::AnyInvocable<void() &&> listener);
  // Drops listener `id` without calling it. A no-op for 0 or an id already
  // removed or taken by Close (whose call of it may be running, or about to
  // run, when this returns).
  void RemoveCloseListener(uint64_t id);
  // Listeners added and neither removed nor taken by Close yet (for tests).
  size_t close_listener_count() const;

  // Idempotent.
  void Close();

 private:
  absl::Status ClosedError() const;

  const std::string client_name_;
  const std::shared_ptr<Tenant> tenant_;
  const std::shared_ptr<runtime::StreamGroup> group_;
  const int64_t opened_ns_ = absl::GetCurrentTimeNanos();
  std::atomic<int64_t> last_active_ns_{opened_ns_};
  std::atomic<int> holders_{0};
  runtime::SegmentPool pool_;
  runtime::SegmentPool private_pool_;
  const runtime::SegmentPoolOptions pool_options_;
  mutable absl::Mutex device_pools_mu_;
  std::map<std::string, std::unique_ptr<runtime::SegmentPool>> device_pools_ ABSL_GUARDED_BY(device_pools_mu_);
  runtime::HandleTable<const runtime::Array> arrays_{"array"};
  runtime::HandleTable<const compiler::CompiledModule> modules_{"module", 4096};
  runtime::HandleTable<runtime::Graph> graphs_{"graph", 4096};
  runtime::HandleTable<runtime::GeometryObject> objects_{"object", kMaxObjects};

  // Held while adding objects, so nothing is added after Close cleared the
  // tables.
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<runtime::Stream>> streams_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<runtime::TimeSlots> time_slots_ ABSL_GUARDED_BY(mu_);
  // Per device, the launch table of the objects in objects_ (replaced, never
  // changed, when one is added or removed).
  std::map<std::string, std::shared_ptr<const runtime::ObjectTable>> object_tables_ ABSL_GUARDED_BY(mu_);
  // Shared by the session's objects: builds exclude its launches that may
  // query them (GeometryObject::use_lock).
  const std::shared_ptr<absl::Mutex> object_use_lock_ = std::make_shared<absl::Mutex>();
  // By id, in the order they were added (ids only grow).
  std::map<uint64_t, absl::AnyInvocable<void() &&>> close_listeners_ ABSL_GUARDED_BY(mu_);
  uint64_t next_close_listener_ ABSL_GUARDED_BY(mu_) = 1;
  // Descriptor arrays' HeldArrays (TrackHeld); expired ones are pruned as
  // new ones come.
  std::vector<std::weak_ptr<runtime::HeldArrays>> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server
