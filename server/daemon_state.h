// warpd server: everything the daemon shares between requests.
//
// Owns, in construction order: the CPU allocator, the devices, the compiler,
// the executor that runs command streams (fairly between sessions), the sessions, and the pool that runs
// RPC work which may block (compiles, synchronizes). Destruction runs in
// reverse, so RPC work finishes first, then sessions close (streams cancel
// and drain), then streams' executor stops; modules are released before the
// compiler and devices outlive everything that runs on them.
// The gRPC server must be shut down before the state is destroyed.
// Thread-safe after construction.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/compiler.h"
#include "runtime/device/device_registry.h"
#include "runtime/device/thread_pool.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/cpu_allocator.h"
#include "server/flags.h"
#include "server/session_manager.h"

namespace warpd::server {

class DaemonState {
 public:
  // Probes devices and creates the compiler (its cache dir is created).
  static absl::StatusOr<std::unique_ptr<DaemonState>> Create(const Flags& flags);

  // For tests: `compiler` may be null (LoadModule then fails UNAVAILABLE).
  DaemonState(const Flags& flags, std::unique_ptr<compiler::Compiler> compiler);

  const Flags& flags() const { return flags_; }
  compiler::Compiler* compiler() const { return compiler_.get(); }
  const runtime::DeviceRegistry& devices() const { return devices_; }
  runtime::CpuAllocator& allocator() { return allocator_; }
  SessionManager& sessions() { return sessions_; }
  runtime::ThreadPool& rpc_pool() { return rpc_pool_; }
  // "12.4" when a CUDA driver was found, else "".
  const std::string& cuda_driver() const { return cuda_driver_; }

 private:
  const Flags flags_;
  // The allocator outlives the devices that allocate from it.
  runtime::CpuAllocator allocator_;
  runtime::DeviceRegistry devices_;
  std::unique_ptr<compiler::Compiler> compiler_;
  runtime::StreamScheduler stream_executor_;
  SessionManager sessions_;
  runtime::ThreadPool rpc_pool_;
  std::string cuda_driver_;
};

}  // namespace warpd::server
