// warpd-compile-worker: runs clang for the warpd daemon (compile_worker.h).
// Started by the daemon with a socket on fds 0 and 1; not for people.
//   warpd-compile-worker [--memory-bytes N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/backend/compile_worker.h"

int main(int argc, char** argv) {
  warpd::compiler::WorkerLimits limits;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--memory-bytes") == 0 && i + 1 < argc) {
      limits.memory_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "warpd-compile-worker: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (absl::Status s = warpd::compiler::ConfineCompileWorker(limits); !s.ok()) {
    std::fprintf(stderr, "warpd-compile-worker: %s\n", std::string(s.message()).c_str());
    return warpd::compiler::kExitSandboxFailed;
  }
  return warpd::compiler::ServeCompileRequests(0, 1);
}
