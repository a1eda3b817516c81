#include "server/session.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "runtime/memory/memory_charge.h"

namespace warpd::server {

Session::Session(std::string client_name, std::shared_ptr<Tenant> tenant,
                 std::shared_ptr<runtime::StreamGroup> group, const runtime::SegmentPoolOptions& pool_options)
    : client_name_(std::move(client_name)),
      tenant_(std::move(tenant)),
      group_(std::move(group)),
      pool_(runtime::MemoryAccount::Create("session", 0, tenant_->memory()), pool_options),
      private_pool_(pool_.account(), pool_options),
      pool_options_(pool_options) {}

runtime::SegmentPool& Session::DevicePool(const std::string& device) {
  absl::MutexLock lock(&device_pools_mu_);
  std::unique_ptr<runtime::SegmentPool>& pool = device_pools_[device];
  if (pool == nullptr) {
    pool = std::make_unique<runtime::SegmentPool>(
        runtime::MemoryAccount::Create(absl::StrCat("session on ", device), 0, pool_.account()), pool_options_);
  }
  return *pool;
}

std::vector<Session::DeviceMemory> Session::DeviceMemoryUse() const {
  absl::MutexLock lock(&device_pools_mu_);
  std::vector<DeviceMemory> use;
  for (const auto& [device, pool] : device_pools_) {
    use.push_back(DeviceMemory{device, pool->account()->used(), pool->account()->peak()});
  }
  return use;
}

void Session::TrackHeld(const std::shared_ptr<runtime::HeldArrays>& held) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;  // Close has run: AddArray fails next, and nothing keeps the array
  // Pruned when the list doubles: amortized O(1) per array.
  if (held_.size() >= 16 && (held_.size() & (held_.size() - 1)) == 0) {
    std::erase_if(held_, [](const std::weak_ptr<runtime::HeldArrays>& w) { return w.expired(); });
  }
  held_.push_back(held);
}

Session::~Session() { Close(); }

absl::Status Session::ClosedError() const {
  return absl::UnauthenticatedError("session is closed");
}

absl::StatusOr<uint64_t> Session::AddArray(std::shared_ptr<const runtime::Array> array) {
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  return arrays_.Insert(std::move(array));
}

absl::StatusOr<uint64_t> Session::AddModule(
    std::shared_ptr<const compiler::CompiledModule> module) {
  // Every session holding a module pays for it (the module cache shares one
  // copy, so this over-counts a module that several sessions hold).
  absl::StatusOr<runtime::MemoryCharge> charge = pool_.Charge(kHandleBytes + module->memory_bytes());
  if (!charge.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("loading a module of ", module->memory_bytes(),
                                                     " bytes: ", charge.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  return modules_.Insert(runtime::WithCharge(std::move(module), *std::move(charge)));
}

absl::StatusOr<uint64_t> Session::AddGraph(std::shared_ptr<runtime::Graph> graph) {
  // Its commands carry their own charges (submit.cc); this is the graph.
  absl::StatusOr<runtime::MemoryCharge> charge = pool_.Charge(kHandleBytes + graph->HeldBytes());
  if (!charge.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("keeping a graph: ", charge.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  return graphs_.Insert(runtime::WithCharge(std::move(graph), *std::move(charge)));
}

absl::StatusOr<uint64_t> Session::AddObject(std::shared_ptr<runtime::GeometryObject> object, uint64_t requested) {
  absl::StatusOr<runtime::MemoryCharge> charge = pool_.Charge(kHandleBytes + object->MetadataBytes());
  if (!charge.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("keeping a ", runtime::ObjectKindName(object->kind()), ": ",
                                                     charge.status().message()));
  }
  std::shared_ptr<runtime::GeometryObject> held = runtime::WithCharge(std::move(object), *std::move(charge));
  held->set_use_lock(object_use_lock_);  // one for the session's objects (geometry_object.h)
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  uint64_t handle = requested;
  if (requested != 0) {
    WARPD_RETURN_IF_ERROR(objects_.InsertAs(requested, held));
  } else {
    WARPD_ASSIGN_OR_RETURN(handle, objects_.Insert(held));
  }
  if (held->tree_descriptor() != nullptr) {
    // Its tree answers as a BVH under a second handle of the same object
    // (so BuildTree on it builds the object, and freeing either handle
    // drops that handle's entry; freeing the object's drops both).
    absl::StatusOr<uint64_t> tree = objects_.Insert(held);
    if (!tree.ok()) {
      (void)objects_.Remove(handle);
      return tree.status();
    }
    held->set_tree_id(*tree);
  }
  std::shared_ptr<const runtime::ObjectTable>& table = object_tables_[held->device()];
  if (table == nullptr) table = runtime::ObjectTable::Empty();
  table = table->WithTree(handle, held);
  return handle;
}

absl::StatusOr<std::shared_ptr<runtime::HashGrid>> Session::GetHashGrid(uint64_t handle) const {
  absl::StatusOr<std::shared_ptr<runtime::GeometryObject>> object = objects_.Get(handle);
  if (!object.ok() || (*object)->kind() != wp::OBJECT_HASH_GRID) {
    return absl::NotFoundError(absl::StrFormat("hash grid handle 0x%016x not found", handle));
  }
  return std::static_pointer_cast<runtime::HashGrid>(*std::move(object));
}

absl::StatusOr<std::shared_ptr<runtime::TreeObject>> Session::GetTree(uint64_t handle) const {
  absl::StatusOr<std::shared_ptr<runtime::GeometryObject>> object = objects_.Get(handle);
  if (!object.ok() || ((*object)->kind() != wp::OBJECT_BVH && (*object)->kind() != wp::OBJECT_MESH)) {
    return absl::NotFoundError(absl::StrFormat("BVH handle 0x%016x not found", handle));
  }
  return std::static_pointer_cast<runtime::TreeObject>(*std::move(object));
}

void Session::RemoveObjects(absl::Span<const uint64_t> handles) {
  std::vector<std::shared_ptr<runtime::GeometryObject>> removed;  // dropped outside the lock
  std::vector<std::shared_ptr<const runtime::ObjectTable>> old_tables;
  std::vector<uint64_t> gone(handles.begin(), handles.end());
  absl::MutexLock lock(&mu_);
  for (uint64_t h : handles) {
    absl::StatusOr<std::shared_ptr<runtime::GeometryObject>> object = objects_.Remove(h);
    if (!object.ok()) continue;
    // The object's own handle takes its tree's with it.
    const uint64_t tree = (*object)->tree_id();
    if (tree != 0 && tree != h && objects_.Remove(tree).ok()) gone.push_back(tree);
    removed.push_back(*std::move(object));
  }
  if (removed.empty()) return;
  for (auto& [device, table] : object_tables_) {
    old_tables.push_back(table);
    table = table->Without(gone);
  }
}

std::shared_ptr<const runtime::ObjectTable> Session::ObjectsOn(const std::string& device) const {
  absl::MutexLock lock(&mu_);
  auto it = object_tables_.find(device);
  return it == object_tables_.end() ? runtime::ObjectTable::Empty() : it->second;
}

absl::StatusOr<std::shared_ptr<runtime::Stream>> Session::StreamFor(runtime::Device* device, uint32_t id) {
  if (id >= kMaxStreamsPerDevice) {
    return absl::InvalidArgumentError(absl::StrCat("stream ", id, " on ", device->name(), ": a session has streams 0 to ",
                                                   kMaxStreamsPerDevice - 1, " per device"));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return ClosedError();
  auto& stream = streams_[{device->name(), id}];
  if (stream == nullptr) {
    stream = runtime::Stream::Create(device, group_, runtime::Stream::kDefaultMaxQueued, tenant_->queued_commands(),
                                     pool_.account());
  }
  return stream;
}

std::shared_ptr<runtime::TimeSlots> Session::time_slots() {
  absl::MutexLock lock(&mu_);
  if (time_slots_ == nullptr) time_slots_ = std::make_shared<runtime::TimeSlots>();
  return time_slots_;
}

std::shared_ptr<const runtime::TimeSlots> Session::find_time_slots() const {
  absl::MutexLock lock(&mu_);
  return time_slots_;
}

std::shared_ptr<runtime::Stream> Session::FindStream(const std::string& device, uint32_t id) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find({device.empty() ? std::string("cpu") : device, id});
  return it == streams_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<runtime::Stream>> Session::StreamsOn(const std::string& device) {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<runtime::Stream>> out;
  for (auto& [key, s] : streams_)
    if (key.first == device) out.push_back(s);
  return out;
}

std::vector<std::shared_ptr<runtime::Stream>> Session::Streams() {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<runtime::Stream>> out;
  for (auto& [key, s] : streams_) out.push_back(s);
  return out;
}

uint64_t Session::AddCloseListener(absl::AnyInvocable<void() &&> listener) {
  absl::MutexLock lock(&mu_);
  if (closed_) return 0;
  const uint64_t id = next_close_listener_++;
  close_listeners_.emplace(id, std::move(listener));
  return id;
}

void Session::RemoveCloseListener(uint64_t id) {
  absl::AnyInvocable<void() &&> removed;  // destroyed outside the lock
  absl::MutexLock lock(&mu_);
  auto it = close_listeners_.find(id);
  if (it == close_listeners_.end()) return;
  removed = std::move(it->second);
  close_listeners_.erase(it);
}

size_t Session::close_listener_count() const {
  absl::MutexLock lock(&mu_);
  return close_listeners_.size();
}

void Session::Close() {
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<runtime::Stream>> streams;
  std::map<uint64_t, absl::AnyInvocable<void() &&>> listeners;
  std::vector<std::weak_ptr<runtime::HeldArrays>> held;
  std::map<std::string, std::shared_ptr<const runtime::ObjectTable>> object_tables;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    streams.swap(streams_);
    listeners.swap(close_listeners_);
    held.swap(held_);
    object_tables.swap(object_tables_);
  }
  for (auto& [id, l] : listeners) std::move(l)();
  // Stop the work first, then drop the objects; the last references (and
  // the munmaps) happen here, outside any lock.
  for (auto& [key, s] : streams) s->Cancel();
  streams.clear();
  graphs_.Clear();  // graphs hold arrays, modules and objects
  object_tables.clear();
  objects_.Clear();
  arrays_.Clear();
  // Arrays holding each other (or freed ones still held) go now.
  for (const std::weak_ptr<runtime::HeldArrays>& w : held) {
    if (std::shared_ptr<runtime::HeldArrays> h = w.lock()) h->Clear();
  }
  modules_.Clear();
}

}  // namespace warpd::server
