// warpd compiler: semantic analysis.
//
// Resolves names, infers and checks types with Warp's strict rules (no
// implicit conversions between scalar types; a variable keeps the type of its
// first assignment), resolves builtin overloads against compiler/builtins and
// user-function calls, rejects recursion, and fills the sema fields of the IR
// (Expr::type, Expr::overload, Expr::function_index, Function::locals,
// Function::return_type, Function::tid_ndim).
//
// Errors are INVALID_ARGUMENT: "file:line:col: error: <what> (in kernel 'k')".
// Thread-compatible: mutates `module` only.
#pragma once

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace warpd::sema {

absl::Status Analyze(ir::Module& module);

}  // namespace warpd::sema
