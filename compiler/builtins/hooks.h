// warpd compiler: internal: typing hooks of the irregular builtins
// (constructors, atomics, print, len, ...). Only the table files use them.
#pragma once

#include "compiler/builtins/builtins.h"

namespace warpd::builtins::internal {

// Value constructors named by a type ("vec3", "mat33d", "quatf", "float32",
// "spatial_vector") and the generic ones ("vector", "matrix", "quaternion",
// "transformation", "identity", "quat_identity", "transform_identity",
// "matrix_from_rows", "matrix_from_cols").
absl::StatusOr<HookResult> HookConstruct(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookStruct(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookConstructLike(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookTid(const Overload& o, ir::Expr& call, types::TypeTable& table);
// range() and reversed(range()): a for loop's iterator only (sema's ForSema
// types them there); anywhere else an error.
absl::StatusOr<HookResult> HookRange(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookAtomic(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookPrint(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookPrintf(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookLen(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookCast(const Overload& o, ir::Expr& call, types::TypeTable& table);
// Builtins warpd refuses with a reason (raw pointers, client-side ones).
absl::StatusOr<HookResult> HookZeros(const Overload& o, ir::Expr& call, types::TypeTable& table);
absl::StatusOr<HookResult> HookUnsupported(const Overload& o, ir::Expr& call, types::TypeTable& table);

// The names HookConstruct handles, for the table.
std::vector<std::string_view> ConstructorNames();

}  // namespace warpd::builtins::internal
