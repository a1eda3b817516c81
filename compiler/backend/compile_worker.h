// warpd compiler: a compile worker, the process that runs clang for the
// daemon (binary warpd-compile-worker, started by CompilePool).
//
// Compiling runs out of the daemon's process so that a crash, an assertion,
// a hang or a memory blow-up inside clang costs one worker, never the daemon
// and its tenants. A worker reads requests (compile_protocol.h) from fd 0,
// compiles each with CompileCppToObject, writes the reply to fd 1, and exits
// 0 when fd 0 closes. Before its first request it confines itself:
//   - every inherited descriptor but 0, 1, 2 is closed;
//   - no new privileges (PR_SET_NO_NEW_PRIVS), no core dumps, no file
//     writes (RLIMIT_FSIZE 0), few descriptors;
//   - an address-space limit (RLIMIT_AS, `memory_bytes`; not under
//     AddressSanitizer, whose shadow memory needs terabytes of it); running
//     out of memory exits with kExitOutOfMemory;
//   - a seccomp filter refusing (EPERM) sockets, exec, ptrace and the other
//     system calls a compiler never needs.
// The daemon enforces the wall-clock limit by killing the worker.
//
// A worker keeps the precompiled runtime headers (native_pch.h) of the
// targets and include lists it compiles, and builds builtin.h's for
// `WorkerOptions::pch_target` as soon as it starts, so that its first compile
// does not pay for it. What it logs (a PCH it could not build) goes to the
// daemon with its next reply (compile_protocol.h), which logs it: not to fd
// 1, which carries replies, nor to stderr, which may be a file that
// RLIMIT_FSIZE 0 forbids writing (SIGXFSZ).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

// Exit status of a worker that ran out of memory.
constexpr int kExitOutOfMemory = 75;
// Exit status of a worker that could not confine itself.
constexpr int kExitSandboxFailed = 76;

struct WorkerLimits {
  uint64_t memory_bytes = 0;  // address space; 0: unlimited
};

struct WorkerOptions {
  bool precompiled_header = true;       // false: parse the runtime headers in every compile
  std::optional<CpuTarget> pch_target;  // build its PCH before the first request
  std::string log_level = "warn";       // the least spdlog level passed to the daemon
};

// Confines the calling process as described above (process-wide, once).
absl::Status ConfineCompileWorker(const WorkerLimits& limits);

// Serves requests from `in_fd`, replies on `out_fd`, until `in_fd` closes.
// Makes the process's default logger collect messages for the replies.
// Returns the process exit status.
int ServeCompileRequests(int in_fd, int out_fd, const WorkerOptions& options = {});

}  // namespace warpd::compiler
