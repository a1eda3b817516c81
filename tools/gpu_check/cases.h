// tools/gpu_check: the kernels the GPU check runs, their inputs, and what a
// correct device must produce.
//
// Each case is one module (IR built as the Python client would send it) with
// one kernel, and one or more launches of it. Expected values are computed
// here in plain C++ loops from the inputs, independently of warpd's compiler
// and runtime; scripts/gpu_check.py compares the device's results with them.
// Array data is raw little-endian element bytes, row-major.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::gpu_check {

// How a result array is compared (scripts/gpu_check.py implements each).
enum class Rule {
  kExact,              // every element equals `expect`
  kClose,              // |got - expect| <= atol + rtol * |expect| (floats)
  kExpectedOrInitial,  // every element equals `expect` or its initial value
  kUnchanged,          // every element equals its initial value
  // every component as `expect`, which the same source's CPU entry produced:
  // integers and bools exactly, floats within a tolerance of their type
  // (float16 2e-3, bfloat16 2e-2, float32 1e-5, float64 1e-12, relative to
  // 1 + |expect|, or ArrayArg::rtol where larger), NaN where NaN,
  // infinities exactly
  kReference,
};

struct ArrayArg {
  std::string param;
  std::vector<int64_t> shape;  // the descriptor's shape (1..4 dims)
  std::string init;            // initial element bytes (shape's elements)
  Rule rule = Rule::kUnchanged;
  std::string expect = {};     // element bytes; empty for kUnchanged
  double rtol = 0;             // kClose; kReference: a looser relative tolerance than its type's
  double atol = 0;
  // Elements allocated after the array's extent, filled with 0xA5 bytes,
  // that no thread may write (the descriptor does not cover them).
  int64_t guard_elems = 64;
  // The descriptor's flags word (wp::array_t::reserved; docs/launch_abi.md):
  // 2 marks a gradient whose elements each have one writer.
  int32_t flags = 0;
};

// An array a value parameter refers to (an array member of a struct): the
// runner allocates it and writes its descriptor at `at`, the member's offset
// in the parameter. Its contents are not compared.
struct ArrayRef {
  uint32_t at = 0;
  std::vector<int64_t> shape;  // 1-D
  uint32_t elem_bytes = 0;
  std::string init;
};

struct ScalarArg {
  std::string param;
  std::string bytes;           // exactly the parameter's size
  std::vector<double> shown;   // the same values, for people reading the manifest
  std::vector<ArrayRef> refs = {};
};

// The launch's fault record (wp::fault_info) after the launch.
struct FaultExpect {
  int32_t flag = 0;
  int32_t kind = 0;
  int32_t line = 0;
  int32_t dim = 0;
  int64_t index = 0;
  int64_t extent = 0;
  int32_t array_ndim = 0;
  int64_t shape[4] = {0, 0, 0, 0};
};

struct Launch {
  std::string name;
  std::string what;            // one line for the report
  std::string kernel = {};     // another kernel of the case's module than CheckCase::kernel
  std::vector<int32_t> dim;    // the launch grid (launch_ctx.bounds), 1..4 dims
  int threads_per_block = 256;
  int max_blocks = 0;          // > 0: fewer blocks than ids, so the grid-stride loop turns
  bool cancel_before = false;  // launch_ctx.cancel = 1 before the launch
  // > 0: launch_ctx lives in host-mapped memory and the runner sets cancel
  // this long after the launch; the kernel must then end within deadline_s.
  double cancel_after_s = 0;
  double deadline_s = 60;
  std::vector<ScalarArg> scalars;
  std::vector<ArrayArg> arrays;
  FaultExpect fault;
};

struct CheckCase {
  std::string name;            // file names: <name>.ptx, <name>.json
  std::string what;
  std::string kernel;          // the kernel's IR name
  bool by_pointer = false;     // what the CUDA entry must take (docs/launch_abi.md)
  // Runs the kernel's adjoint entry (the module is compiled with its backward
  // pass). Its block is the forward block followed, at the forward block's
  // size, by one of the same layout holding the adjoints: a launch gives the
  // adjoint of parameter p as "adj:p" (arrays: the gradient arrays; values:
  // their incoming adjoints, which the entry reads and drops).
  bool adjoint = false;
  bool compressed = false;     // files written gzip-compressed (<name>.ptx.gz, ...)
  v1::Module proto;
  std::vector<Launch> launches;
};

// Every case, in the order the runner runs them (a launch that may hang a
// broken device, cancel while running, comes last).
std::vector<CheckCase> AllCases();

// Every overload of the builtin table (compiler/testing/overload_generator.h):
// one case per generated module, one launch of one thread per kernel, each
// output compared with the CPU entry's (kReference). Slow to build (the CPU
// reference compiles every module): gpu_check_gen --overloads.
absl::StatusOr<std::vector<CheckCase>> OverloadCases(int first_module, int modules);

}  // namespace warpd::gpu_check
