// warpd server: command-line flags, parsed by hand.
//
//   warpd [--listen ADDR]... [--cache-dir DIR] [--cache-max SIZE] [--log-level LEVEL]
//         [--allow-client-cache-dir] [--verify-cuda] [--cuda-execution] [--max-array-bytes N]
//         [--max-memory N]
//         [--cpu-threads N] [--kernel-timeout DURATION] [--compile-workers N]
//         [--compile-timeout DURATION] [--compile-memory N] [--compile-worker PATH]
//         [--no-compile-pch] [--parent-pid PID] [--tenants FILE] [--token-file PATH]
//         [--session-grace DURATION] [--max-sessions N] [--socket-group NAME]
//         [--tls-cert FILE --tls-key FILE] [--state-dir DIR] [--metrics-listen ADDR]
//         [--metrics-insecure] [--print-config] [--new-token]
//         [--version] [--help]
//
// Flags take "--name value" or "--name=value". Defaults need no config: listen
// on 127.0.0.1:7788 and a Unix socket ($XDG_RUNTIME_DIR/warpd.sock, else
// /tmp/warpd-$UID.sock); cache under $XDG_CACHE_HOME/warpd, else
// ~/.cache/warpd. Errors are INVALID_ARGUMENT with a message for the user.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace warpd::server {

struct Flags {
  std::vector<std::string> listen;  // "127.0.0.1:7788", "unix:/path"
  std::string cache_dir;
  // The disk kernel cache's size limit (least recently used entries go,
  // compiler/cache/disk_cache.h); 0: no limit.
  uint64_t cache_max_bytes = uint64_t{2} << 30;
  std::string log_level = "info";  // trace, debug, info, warn, error, critical, off
  bool allow_client_cache_dir = false;
  bool verify_cuda = false;
  // Run arrays and kernels on the GPUs the driver reports (experimental:
  // the CUDA path has not run on a GPU yet); off, GPUs are listed only.
  bool cuda_execution = false;
  uint64_t max_array_bytes = uint64_t{16} << 30;
  // All CPU arrays of all sessions together; 0: half of this machine's
  // physical memory or cgroup limit (so no tenant can get the daemon OOM-killed).
  uint64_t max_memory_bytes = 0;
  int cpu_threads = 0;  // 0: one per core but one (runtime/device/cpu_device.h)
  absl::Duration kernel_timeout = absl::Seconds(300);  // a longer launch is stopped; 0: no limit
  // Compile workers (compiler/backend/compile_pool.h). An empty path means
  // warpd-compile-worker beside the warpd binary.
  std::string compile_worker;
  int compile_workers = 2;
  absl::Duration compile_timeout = absl::Seconds(60);
  uint64_t compile_memory_bytes = uint64_t{4} << 30;
  // Load the runtime header precompiled (compiler/backend/native_pch.h);
  // --no-compile-pch parses it in every compile (slower; for diagnosis).
  bool compile_pch = true;
  // The process that started this daemon; its exit shuts the daemon down
  // (a parent-death signal, set by the daemon itself). 0: none.
  int parent_pid = 0;

  // Tenants (server/tenants/tenant_registry.h). Empty: the daemon's own user
  // only, with a token written to token_file for loopback TCP clients.
  std::string tenants_file;
  std::string token_file;  // default: $XDG_RUNTIME_DIR/warpd.token, else /tmp/warpd-$UID.token
  // Sessions: a session without a HoldSession stream or a call for this long
  // is closed and its objects freed.
  absl::Duration session_grace = absl::Seconds(60);
  size_t max_sessions = 4096;  // all tenants together
  // Unix sockets are 0600; with a group, 0660 and owned by that group.
  std::string socket_group;
  // TLS for TCP listeners (required for addresses beyond loopback).
  std::string tls_cert;
  std::string tls_key;
  // Durable persistent arrays live here. Default: $XDG_STATE_HOME/warpd,
  // else ~/.local/state/warpd.
  std::string state_dir;
  // How long a command-socket connection's thread polls for its client's
  // next frame before it sleeps (server/local/command_socket.h); 0: never.
  absl::Duration command_spin = absl::Microseconds(50);
  // Prometheus metrics over HTTP ("127.0.0.1:9788"); empty: off. The
  // endpoint has no TLS and no authentication, and its labels name every
  // tenant: an address beyond loopback is refused unless metrics_insecure
  // (--metrics-insecure), the operator's explicit choice.
  std::string metrics_listen;
  bool metrics_insecure = false;

  bool print_config = false;
  bool new_token = false;
  bool version = false;
  bool help = false;
  // Test hook, from $WARPD_TEST_CPU_TARGET (not a flag: not for operators):
  // compile CPU code for this target, unchecked ("cpu" or "cpu:+f1,-f2"), so
  // tests can show that a target the compiler rejects stops the daemon.
  std::string test_cpu_target;
};

// What the defaults depend on; tests pass their own.
struct FlagEnvironment {
  std::function<const char*(const char*)> getenv;  // returns null when unset
  unsigned uid = 0;
  static FlagEnvironment Process();  // the real environment
};

// `args` excludes argv[0].
absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args,
                                 const FlagEnvironment& env);

std::string UsageText();

// "127.0.0.1:7788", "[::1]:0", "localhost:80", "unix:/abs/or/relative". Returns
// INVALID_ARGUMENT naming the address otherwise.
absl::Status CheckListenAddress(const std::string& address);

// True for TCP addresses on the loopback interface (127.0.0.0/8, [::1],
// localhost) and for Unix sockets.
bool IsLocalAddress(const std::string& address);

// "1024", "64K", "16G", "2GiB" (binary multiples).
absl::StatusOr<uint64_t> ParseByteSize(const std::string& text);

}  // namespace warpd::server
