// cpu_target.h in a daemon built without the CPU JIT (WARPD_CPU_JIT=OFF, the
// lean CUDA-only build of scripts/build-lean.sh): there is no LLVM to ask
// about the host, and nothing is compiled for it. The target says so; it is
// what the start-up log and a CPU launch's error show.
#include <sys/utsname.h>

#include "absl/strings/str_cat.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

void InitializeNativeLlvm() {}

HostCpu DetectHostCpu() {
  HostCpu host;
  struct utsname name {};
  host.triple = uname(&name) == 0 ? absl::StrCat(name.machine, "-unknown-linux-gnu") : "unknown-unknown-linux-gnu";
  host.name = "unknown";
  return host;
}

bool IsKnownCpu(const std::string& triple, const std::string& cpu) { return false; }

CpuTarget SelectCpuTarget(const HostCpu& host) {
  CpuTarget t;
  t.triple = host.triple;
  t.cpu = "none";
  t.reason = "this warpd was built without the CPU JIT (WARPD_CPU_JIT=OFF): CPU devices hold arrays but run no kernels";
  return t;
}

}  // namespace warpd::compiler
