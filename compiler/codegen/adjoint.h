// warpd compiler: the adjoint (reverse-mode) emitter.
//
// For a module compiled with a backward pass (ir::Module::backward), each
// emitted @wp.func f gets `adj_f_<name>(ctx, _tid, args..., adj_args&...,
// adj_ret)` and each kernel K a thread body and entry points
// (AdjointCpuEntrySymbol, AdjointCudaEntrySymbol) whose argument block is
// K's block followed by a second one of the same layout holding the
// adjoints of the parameters (gradient arrays for arrays; docs/launch_abi.md).
//
// The emitter walks the same TIR as the forward emitter (after
// tir::MakeReadsExplicit): every variable is declared at the top, the body
// is replayed forward (FunctionEmitter in replay mode: faults return, prints
// are skipped, loops count their iterations, returns, breaks and continues
// record which one happened), then each instruction's adjoint is emitted in
// reverse order: loads accumulate into the place's adjoint (atomically into
// gradient arrays), stores move the place's adjoint into the value's and
// reset it (an array element's gradient is read, not reset: Warp's rule),
// builtins call their native adjoint (builtins/adjoint.h), constructors
// distribute over their flat components, user calls call the callee's
// adjoint (which replays it). Branches reverse under the same condition;
// loops run their iterations backwards, replaying each one forward before
// its reverse sweep, from the starting values that iteration had (kept per
// iteration, within kAdjointSnapshotBytes; past that, where the gradient
// depends on them, the launch faults with FAULT_ADJOINT_LOOP).
//
// Thread-safe (pure function).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "compiler/tir/tir.h"

namespace warpd::codegen {

struct Adjoints {
  std::string source;  // appended after the module's forward text
  // Kernels left without an adjoint, with why ("file:line:col: error: warpd
  // cannot differentiate ..."): a differentiable builtin without an adjoint
  // in warpd yet, in the kernel or a function it calls. The other kernels'
  // adjoints are unaffected, as a failing kernel leaves the rest of its module.
  std::map<std::string, std::string> failed;
  // Per kernel with an adjoint: the array parameters (indices) whose
  // gradients it adds to without atomics when the runtime marks them
  // (codegen/thread_index.h, FindThreadExclusive): the backward module's
  // ParamInfo.access bit abi::kAccessExclusive.
  std::map<std::string, std::set<int>> exclusive;
  // Set when a wp.grad() call's callee (or a function it calls) got no
  // adjoint: the forward text calls it, so the module cannot compile
  // ("file:line:col: error: ..."; INVALID_ARGUMENT for the whole module).
  std::string grad_error;
};

// The adjoint functions and kernel entries of `module` (its functions made
// explicit by tir::MakeReadsExplicit). The kernels named in `lane_kernels`
// (AdjointRunsLaneBlocked before MakeReadsExplicit, lane_blocks.h) also get a
// lane-blocked adjoint body their CPU entry runs kLanes thread ids at a time.
Adjoints GenerateAdjoints(const tir::Module& module, const std::set<std::string>& lane_kernels = {});

// For a module without a backward pass: the adjoints its wp.grad() calls
// run (tir::Grad): of their user callees and what those call, no kernels'.
// Empty when it calls wp.grad() of no user function.
Adjoints GenerateGradAdjoints(const tir::Module& module);

// The declarations of the adjoint functions the module's wp.grad() calls
// run (codegen.cc puts them before the functions that call them).
std::string GradAdjointDeclarations(const tir::Module& module);

// How much of a thread's stack the adjoints of one module may use to keep
// their loops' iterations' starting values, shared among all its loops (a
// client cannot make a backward pass overflow a worker thread's stack; the
// module's local arrays have the same bound, builtins::kMaxLocalArrayBytes).
inline constexpr size_t kAdjointSnapshotBytes = 64 << 10;

std::string AdjointCpuEntrySymbol(const std::string& kernel);
std::string AdjointCudaEntrySymbol(const std::string& kernel);

}  // namespace warpd::codegen
