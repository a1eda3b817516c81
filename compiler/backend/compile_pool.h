// warpd compiler: the daemon's pool of compile workers (compile_worker.h).
//
// Workers are started ahead of need (posix_spawn of warpd-compile-worker,
// one socket pair each) and reused; idle workers found dead (killed, or
// crashed) are reaped and replaced before the next compile picks one. Compile() takes an idle worker (waiting
// for one if all are busy: the pool size bounds concurrent compiles), sends
// the source and waits for the object at most `timeout`. A worker that
// overruns is killed; one that dies (crash, assertion, out of memory) is
// reaped; either way a fresh worker replaces it and the caller gets
//   DEADLINE_EXCEEDED   the compile ran past the time limit
//   RESOURCE_EXHAUSTED  the worker ran out of its memory limit
//   INTERNAL            the compiler crashed (signal or exit status named)
// each naming `what` (the module or kernel). A compile error inside a
// healthy worker is returned as the worker reported it (INTERNAL).
//
// Thread-safe. The destructor closes the workers' sockets (they exit) and
// reaps them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

class CompilePool {
 public:
  struct Options {
    std::string worker_path;  // the warpd-compile-worker binary
    int workers = 2;
    absl::Duration timeout = absl::Seconds(60);
    uint64_t memory_bytes = uint64_t{4} << 30;  // address space per worker; 0: unlimited
    // Workers load the runtime header precompiled (native_pch.h); each
    // builds the PCH for `pch_target` (when set) as soon as it starts.
    bool precompiled_header = true;
    std::optional<CpuTarget> pch_target;
  };

  // Starts the workers. FAILED_PRECONDITION when the binary cannot be run.
  static absl::StatusOr<std::unique_ptr<CompilePool>> Create(const Options& options);
  ~CompilePool();

  absl::StatusOr<std::string> Compile(const CpuTarget& target, std::string_view source,
                                      std::string_view unit_name, std::string_view what);

  const Options& options() const { return options_; }
  // Process ids of the live workers (for tests and diagnostics).
  std::vector<pid_t> WorkerPids() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
  };

  explicit CompilePool(const Options& options) : options_(options) {}
  absl::StatusOr<Worker> Spawn() const;
  // Kills (if `kill`) and reaps `w`; returns what became of it, for messages.
  std::string Reap(Worker& w, bool kill, int* exit_code) const;
  absl::StatusOr<Worker> Acquire();
  void ReplaceDeadIdleWorkers();
  void Release(Worker w);
  // Replaces a worker that was lost (in the background of the caller's error).
  void Replace();

  const Options options_;
  mutable absl::Mutex mu_;
  std::vector<Worker> idle_ ABSL_GUARDED_BY(mu_);
  std::vector<pid_t> busy_ ABSL_GUARDED_BY(mu_);
  int live_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::compiler
