// warpd-compile-worker: runs clang for the warpd daemon (compile_worker.h).
// Started by the daemon with a socket on fds 0 and 1; not for people.
//   warpd-compile-worker [--memory-bytes N] [--log-level LEVEL] [--no-pch]
//                        [--pch-triple T --pch-cpu C [--pch-features +a,-b]]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_split.h"
#include "compiler/backend/compile_worker.h"

int main(int argc, char** argv) {
  warpd::compiler::WorkerLimits limits;
  warpd::compiler::WorkerOptions options;
  warpd::compiler::CpuTarget pch_target;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--memory-bytes") == 0 && has_value) {
      limits.memory_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--log-level") == 0 && has_value) {
      options.log_level = argv[++i];
    } else if (std::strcmp(argv[i], "--no-pch") == 0) {
      options.precompiled_header = false;
    } else if (std::strcmp(argv[i], "--pch-triple") == 0 && has_value) {
      pch_target.triple = argv[++i];
    } else if (std::strcmp(argv[i], "--pch-cpu") == 0 && has_value) {
      pch_target.cpu = argv[++i];
    } else if (std::strcmp(argv[i], "--pch-features") == 0 && has_value) {
      pch_target.features = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    } else {
      std::fprintf(stderr, "warpd-compile-worker: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (absl::Status s = warpd::compiler::ConfineCompileWorker(limits); !s.ok()) {
    std::fprintf(stderr, "warpd-compile-worker: %s\n", std::string(s.message()).c_str());
    return warpd::compiler::kExitSandboxFailed;
  }
  if (!pch_target.triple.empty() && !pch_target.cpu.empty()) options.pch_target = pch_target;
  return warpd::compiler::ServeCompileRequests(0, 1, options);
}
