// warpd compiler: the adjoint spelling of a builtin call, from the builtin
// table and the list of native adjoints (runtime/native/warpd/
// adjoint_builtins.h).
//
// A differentiable regular overload whose C++ spelling is a plain callee
// `wp::f` has the adjoint `wp::adj_f`, called as adj_f(args..., [ret,]
// adj_args&..., adj_ret) (adj_scalar.h's conventions); which overloads have
// one is decided per family of value types (scalar, vec, mat, quat,
// transform, spatial), by the first non-scalar argument. Thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "compiler/builtins/builtins.h"

namespace warpd::builtins {

struct AdjointSpelling {
  std::string callee;         // "wp::adj_sin"
  bool takes_result = false;  // the forward result follows the forward arguments
};

// The family of a call of `name` with `args`: "scalar", "vec", "mat",
// "quat", "transform" or "spatial".
std::string_view AdjointFamily(std::string_view name, std::span<const types::TypeRef> args);

// The adjoint of regular overload `o` called with `args`; nullopt when it has
// no native adjoint for this family (yet).
std::optional<AdjointSpelling> AdjointOf(const Overload& o, std::span<const types::TypeRef> args);

}  // namespace warpd::builtins
