#include "compiler/builtins/adjoint.h"

#include "runtime/native/warpd/adjoint_builtins.h"

namespace warpd::builtins {

std::string_view AdjointFamily(std::string_view name, std::span<const types::TypeRef> args) {
  // A name listed under one family only (quat_rpy, transform_point, the
  // spatial builtins) is that family's whatever its arguments are.
  std::string_view only;
  bool several = false;
  for (const auto& lists : {std::span<const native::AdjointBuiltin>(native::kAdjointBuiltins),
                            std::span<const native::AdjointBuiltin>(native::kAdjointPending)})
    for (const auto& b : lists) {
      if (b.name != name) continue;
      if (!only.empty() && only != b.family) several = true;
      only = b.family;
    }
  if (!only.empty() && !several) return only;
  for (types::TypeRef t : args) {
    if (!t) continue;
    if (t->is_vector()) return "vec";
    if (t->is_matrix()) return "mat";
    if (t->is_quat()) return "quat";
    if (t->is_transform()) return "transform";
  }
  return "scalar";
}

std::optional<AdjointSpelling> AdjointOf(const Overload& o, std::span<const types::TypeRef> args) {
  // A table entry naming its adjoint: a generic one, for every value type.
  if (!o.adjoint.empty()) return AdjointSpelling{std::string(o.adjoint), o.adjoint_takes_result};
  const std::string_view family = AdjointFamily(o.name, args);
  for (const auto& b : native::kAdjointBuiltins) {
    if (b.name != o.name || b.family != family) continue;
    std::string_view cpp = o.cpp;
    // Unary plus is spelled as its operand; its adjoint is adj_pos.
    if (cpp == "$0") return AdjointSpelling{"wp::adj_pos", b.takes_result};
    if (!cpp.starts_with("wp::") || cpp.find_first_of("($<{ ") != std::string_view::npos) return std::nullopt;
    return AdjointSpelling{"wp::adj_" + std::string(cpp.substr(4)), b.takes_result};
  }
  return std::nullopt;
}

}  // namespace warpd::builtins
