// warpd server: the persistent-array store: arrays a tenant has named, which
// outlive the session that made them; `durable` ones also outlive a daemon
// restart, written under the daemon's --state-dir.
//
//   PersistentStore store(flags.state_dir, {}, &devices);
//   WARPD_RETURN_IF_ERROR(store.LoadAll(allocate));       // at start-up
//   WARPD_RETURN_IF_ERROR(store.Put(tenant, "weights", array, /*durable=*/true));
//   WARPD_ASSIGN_OR_RETURN(PersistentStore::Entry e, store.Get(tenant, "weights"));
//   ...
//   WARPD_RETURN_IF_ERROR(store.SaveAll());                // at clean shutdown
//
// Names are client text: CheckName admits 1-128 characters of
// [A-Za-z0-9._-] not starting with '.', and no name (nor a tenant name)
// ever becomes a path: the files are
//   <state_dir>/persistent/<hex sha256(tenant)>/<hex sha256(name)>.warr
// with the real names inside (format: array_file.h, docs/state_dir.md).
// Directories are made 0700 and files 0600; every path component below
// state_dir is opened without following symbolic links and must belong to
// the daemon's user; a file is written to a fresh temporary file in the same
// directory (O_EXCL), fsynced, renamed over the old one, and the directory
// fsynced, so a crash leaves the old contents or the new, never a mix.
//
// Tenants are isolated: the same name in two tenants is two entries, and
// nothing one tenant does can name, list or delete another's entries.
// Every dtype that CreateArray accepts can be durable, struct dtypes
// included: the struct's definition is stored with the file, and a loaded
// array owns a TypeTable holding it (ArrayLayout::dtype_table).
//
// Ownership: the store holds a shared_ptr to each entry's Array; Delete
// drops it (the memory goes when no session holds the array any more).
// An array's bytes move through its device (`devices`: Device::Download
// when writing a file, Device::Upload when loading one).
//
// Thread-safety: every method may be called concurrently. One mutex guards
// the tables and is never held during file I/O; changes to one tenant's
// entries (Put, Delete, SaveAll's and LoadAll's writes for it) are
// serialized by that tenant's own mutex, which is held across the file I/O
// they do, so writing a large durable array delays only its own tenant's
// Put/Delete, never another tenant or any Get/List/size. The bytes of an
// array are read while it is written to disk: the caller makes sure no
// command writes it then (synchronizes its stream; SaveAll runs after the
// streams have drained).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/device_registry.h"
#include "runtime/objects/array.h"

namespace warpd::server {

class PersistentStore {
 public:
  struct Entry {
    std::string name;
    std::shared_ptr<const runtime::Array> array;
    bool durable = false;
  };
  struct Limits {
    size_t max_entries_per_tenant = 1024;
  };
  // Allocates a loaded array's memory on `device`, charging `tenant`'s
  // quota; an error skips that entry.
  using AllocateFn = std::function<absl::StatusOr<std::shared_ptr<const runtime::Array>>(
      const std::string& tenant, const runtime::ArrayLayout& layout, const std::string& device)>;

  // `state_dir` empty: durable entries are refused. Touches no files (they
  // are made on the first durable Put or by LoadAll). `devices` (not owned;
  // it outlives the store) finds each array's device by name.
  PersistentStore(std::string state_dir, Limits limits, const runtime::DeviceRegistry* devices);

  PersistentStore(const PersistentStore&) = delete;
  PersistentStore& operator=(const PersistentStore&) = delete;

  // OK for 1-128 characters of [A-Za-z0-9._-] not starting with '.';
  // INVALID_ARGUMENT saying what is wrong and what is allowed otherwise.
  static absl::Status CheckName(std::string_view name);

  // Names `array` for `tenant`. INVALID_ARGUMENT for a bad name (CheckName)
  // or a tenant name longer than 1024 bytes; ALREADY_EXISTS when the name is
  // taken (delete it first); RESOURCE_EXHAUSTED past the per-tenant limit;
  // FAILED_PRECONDITION for a durable entry without a state directory (or
  // with an unsafe one). A durable entry is written to disk before Put
  // returns (the caller has synchronized the array's stream); if that fails,
  // Put fails and nothing is named.
  absl::Status Put(const std::string& tenant, const std::string& name,
                   std::shared_ptr<const runtime::Array> array, bool durable);

  // NOT_FOUND when `tenant` has no entry `name`.
  absl::StatusOr<Entry> Get(const std::string& tenant, const std::string& name) const;
  // The tenant's entries, sorted by name.
  std::vector<Entry> List(const std::string& tenant) const;
  // Drops the name and, for a durable entry, its file. NOT_FOUND when there
  // is no such entry; when the file cannot be removed, the error and the
  // entry stays.
  absl::Status Delete(const std::string& tenant, const std::string& name);

  // Rewrites every durable entry's file with the array's current contents
  // (at clean shutdown, after the streams have drained). Tries every entry
  // and returns the first error.
  absl::Status SaveAll();

  // At start-up, before requests are served: reads every durable entry under
  // state_dir and names it again, allocating its memory with `allocate`.
  // An entry that cannot be allocated, or whose name is taken, or that is
  // past the tenant's limit, is skipped with a logged warning and its file
  // kept. Corrupt, truncated, foreign or unsafe (symlinked, another user's)
  // files are skipped with a warning and kept for the operator to inspect;
  // temporary files a crash left behind are removed. Returns an error only
  // when the state directory itself is unusable (FAILED_PRECONDITION); with
  // no state_dir, or none written yet, there is nothing to load.
  absl::Status LoadAll(const AllocateFn& allocate);

  // How many entries `tenant` has.
  size_t size(const std::string& tenant) const;

 private:
  struct Slot {
    std::shared_ptr<const runtime::Array> array;
    bool durable = false;
  };
  using Entries = std::map<std::string, Slot>;

  // The mutex that serializes changes to `tenant`'s entries (made on first
  // use; never freed, so the pointer stays valid: tenants are the
  // operator's configured few).
  absl::Mutex* TenantMutex(const std::string& tenant) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckDurable() const;
  // Writes (or rewrites) one durable entry's file atomically.
  absl::Status WriteEntryFile(const std::string& tenant, const std::string& name,
                              const runtime::Array& array) const;
  absl::Status RemoveEntryFile(const std::string& tenant, const std::string& name) const;
  // Loads every entry file of one tenant directory; problems are logged.
  void LoadTenantDir(int persistent_dir_fd, const std::string& dir_name, const AllocateFn& allocate,
                     int* loaded, int* skipped);
  absl::Status LoadEntryFile(int tenant_dir_fd, const std::string& dir_name, const std::string& file_name,
                             const AllocateFn& allocate);

  const std::string state_dir_;
  const Limits limits_;
  const runtime::DeviceRegistry* const devices_;

  mutable absl::Mutex mu_;
  // tenant -> name -> entry; a tenant with no entries has no key.
  absl::flat_hash_map<std::string, Entries> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<absl::Mutex>> tenant_mu_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server
