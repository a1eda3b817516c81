// warpd server: one client session: its arrays, modules and device streams.
//
// Everything a session creates belongs to it: handles resolve only through
// its own tables (another session's handle is NOT_FOUND), and Close() frees
// it all: queued commands are dropped, a running kernel is cancelled, the
// tables are cleared (memory goes once no command holds it any more).
// After Close, adding objects or streams fails with UNAUTHENTICATED, the same
// as an unknown session.
// Thread-safe; requests of one session may run concurrently.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compiler/compiler.h"
#include "runtime/device/device.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"
#include "runtime/objects/array.h"
#include "runtime/objects/handle_table.h"

namespace warpd::server {

class Session {
 public:
  // `scheduler` runs the session's streams and must outlive the session.
  // Until tenants exist the session is its own scheduling group (weight 1):
  // sessions share the executor fairly.
  Session(std::string client_name, runtime::StreamScheduler* scheduler);
  ~Session();

  const std::string& client_name() const { return client_name_; }

  absl::StatusOr<uint64_t> AddArray(std::shared_ptr<const runtime::Array> array);
  absl::StatusOr<uint64_t> AddModule(std::shared_ptr<const compiler::CompiledModule> module);

  // Lookups and removal (NOT_FOUND for unknown handles).
  runtime::HandleTable<const runtime::Array>& arrays() { return arrays_; }
  runtime::HandleTable<const compiler::CompiledModule>& modules() { return modules_; }

  // The session's stream on `device`, made on first use.
  absl::StatusOr<std::shared_ptr<runtime::Stream>> StreamFor(runtime::Device* device);
  // The stream on the device named `device`, or null when none was made.
  std::shared_ptr<runtime::Stream> FindStream(const std::string& device);
  std::vector<std::shared_ptr<runtime::Stream>> Streams();

  // Idempotent.
  void Close();

 private:
  absl::Status ClosedError() const;

  const std::string client_name_;
  const std::shared_ptr<runtime::StreamGroup> group_;
  runtime::HandleTable<const runtime::Array> arrays_{"array"};
  runtime::HandleTable<const compiler::CompiledModule> modules_{"module", 4096};

  // Held while adding objects, so nothing is added after Close cleared the
  // tables.
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<runtime::Stream>> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server
