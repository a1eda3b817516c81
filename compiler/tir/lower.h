// warpd compiler: lowers a module that passed sema to TIR (tir.h).
//
// Expressions become instructions in evaluation order (left to right,
// operands before their operator, a stored value before its place);
// `and`/`or`, conditional expressions and chained comparisons become
// branches; indexing becomes places with explicit index checks and element
// addresses; print calls become records of their sites (print_sites.h).
// Failure is INTERNAL: sema accepted the module, so TIR that does not
// type-check is warpd's bug. The result points into `module`, which must
// outlive it. Thread-safe (pure function).
#pragma once

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/tir/tir.h"

namespace warpd::tir {

absl::StatusOr<Module> Lower(const ir::Module& module);

}  // namespace warpd::tir
