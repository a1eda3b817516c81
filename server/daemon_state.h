// warpd server: everything the daemon shares between requests.
//
// Owns, in construction order: the daemon-wide memory account, the devices, the compiler,
// the executor that runs command streams (fairly between tenants), the sessions, and the pool that runs
// RPC work which may block briefly (allocation, reading and checking a module;
// compiles themselves wait on the compiler's own threads). Destruction runs in
// reverse, so RPC work finishes first, then sessions close (streams cancel
// and drain), then streams' executor stops; modules are released before the
// compiler and devices outlive everything that runs on them.
// The gRPC server must be shut down before the state is destroyed.
// Thread-safe after construction.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compiler/compiler.h"
#include "runtime/device/device_registry.h"
#include "runtime/device/thread_pool.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/memory_account.h"
#include "server/flags.h"
#include "server/metrics/daemon_metrics.h"
#include "server/persistent/persistent_store.h"
#include "server/session_manager.h"
#include "server/tenants/tenant_registry.h"

namespace warpd::server {

class DaemonState {
 public:
  // Probes devices and creates the compiler (its cache dir is created).
  static absl::StatusOr<std::unique_ptr<DaemonState>> Create(const Flags& flags);

  // For tests: `compiler` may be null (LoadModule then fails UNAVAILABLE);
  // `tenants` null: the default mode (this user only).
  DaemonState(const Flags& flags, std::unique_ptr<compiler::Compiler> compiler,
              std::unique_ptr<TenantRegistry> tenants = nullptr,
              std::shared_ptr<runtime::MemoryAccount> memory = nullptr);

  // The limits a tenant gets when the tenants file names none.
  static TenantLimits BuiltinTenantLimits(const Flags& flags);
  static TenantRegistry::Options TenantOptions(const Flags& flags);
  // The daemon-wide CPU memory account (--max-memory).
  static std::shared_ptr<runtime::MemoryAccount> GlobalMemory(const Flags& flags);

  const Flags& flags() const { return flags_; }
  compiler::Compiler* compiler() const { return compiler_.get(); }
  const runtime::DeviceRegistry& devices() const { return devices_; }
  // The account every session's memory account is under (--max-memory).
  const std::shared_ptr<runtime::MemoryAccount>& memory() const { return memory_; }
  SessionManager& sessions() { return sessions_; }
  TenantRegistry& tenants() { return *tenants_; }
  PersistentStore& persistent() { return persistent_; }
  metrics::DaemonMetrics& metrics() { return metrics_; }
  // Reads the durable persistent arrays of --state-dir (at start-up).
  void LoadPersistent();
  // Re-reads the tenants file (SIGHUP): new weights reach the executor,
  // sessions opened with a token the new file no longer accepts (a removed
  // token_sha256, a login token replaced because a uid left its tenant, a
  // removed tenant's) are closed, and removed tenants' metrics stop being
  // exported. Logs one line per tenant whose sessions or login token this
  // touched. A file that does not load changes nothing.
  absl::Status ReloadTenants();
  runtime::ThreadPool& rpc_pool() { return rpc_pool_; }
  // "12.4" when a usable CUDA driver was found, else "".
  const std::string& cuda_driver() const { return cuda_driver_; }

 private:
  // Lists the GPUs the process's CUDA driver reports (or logs why there are
  // none); called once, from the constructor.
  void AddCudaDevices();

  const Flags flags_;
  // First, so it outlives everything that counts into it.
  metrics::DaemonMetrics metrics_;
  // CPU memory of all sessions together; segments hold it, so it outlives
  // everything.
  const std::shared_ptr<runtime::MemoryAccount> memory_;
  std::unique_ptr<TenantRegistry> tenants_;
  runtime::DeviceRegistry devices_;
  std::unique_ptr<compiler::Compiler> compiler_;
  runtime::StreamScheduler stream_executor_;
  SessionManager sessions_;
  // Persistent arrays hold memory: released before the devices go.
  PersistentStore persistent_;
  runtime::ThreadPool rpc_pool_;
  std::string cuda_driver_;
  // One reload at a time (SIGHUP and warpctl's ReloadTenants).
  absl::Mutex reload_mu_;
};

}  // namespace warpd::server
