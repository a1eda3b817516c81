// warpd server: the start-up self-test. A daemon that cannot compile kernels
// is not healthy, so before serving, the daemon compiles one tiny kernel
// (IR -> sema -> codegen -> module cache -> CPU JIT, exactly like a client's
// module, so a warm cache makes it cheap) and runs it on the CPU device
// through the normal launch path, then checks every value it wrote.
//
// Failure is FAILED_PRECONDITION whose message names the host CPU, the chosen
// compile target and the compiler's (or the check's) error, e.g.
//   the CPU kernel compiler does not work on this host (CPU 'znver5',
//   x86_64-pc-linux-gnu; compiling for x86-64-v4 (+90 -20 features): host
//   CPU 'znver5' is unknown ...): generated code ... failed to compile: ...
// Thread-safe if the arguments are (it only calls their thread-safe methods).
#pragma once

#include "absl/status/status.h"
#include "compiler/compiler.h"
#include "runtime/device/device.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::server {

// Allocates its array on `cpu` (Device::Allocate) from `pool` and frees it.
absl::Status RunSelfTest(compiler::Compiler& compiler, runtime::Device& cpu, runtime::SegmentPool& pool);

}  // namespace warpd::server
