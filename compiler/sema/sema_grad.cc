// Semantic analysis: wp.grad(f)(args) (Warp 1.19), the gradient of a
// builtin or user function called in forward code.
//
// The call is analysed as f(args) would be (overloads, keywords, generic
// instances), then its type becomes the adjoints' type: the argument's type
// for one argument, the tuple of the arguments' types for several. The
// callee must be differentiable and have an adjoint warpd can call (a
// builtin's native adjoint, a user function's generated one), and its result
// must be a value whose adjoint can be seeded with ones (scalars, vectors,
// matrices, quaternions, transforms, or a tuple of them).
#include "absl/strings/str_join.h"
#include "common/str_cat.h"
#include "compiler/builtins/adjoint.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

namespace {

// A value whose adjoint wp.grad() can seed (codegen: wp::grad_seed).
bool Seedable(ir::TypeRef t) {
  if (t->is_tuple()) {
    for (ir::TypeRef e : t->elements())
      if (!Seedable(e)) return false;
    return !t->elements().empty();
  }
  return t->is_scalar() || t->is_vector() || t->is_matrix() || t->is_quat() || t->is_transform();
}

}  // namespace

absl::Status FunctionSema::GradCall(ir::Expr& e) {
  e.grad = false;  // typed as the plain call first
  SEMA_TRY(e.callee_kind == ir::CalleeKind::kFunction ? UserCall(e) : BuiltinCall(e));
  e.grad = true;
  const bool user = e.callee_kind == ir::CalleeKind::kFunction;
  const std::string name =
      user ? m_.functions[static_cast<size_t>(e.function_index)].display_name : std::string(e.name);
  if (e.type->is_void()) return Err(e.span, Cat("Cannot compute gradient of void function '", name, "'"));
  std::vector<ir::TypeRef> inputs;
  for (const auto& a : e.operands) inputs.push_back(a->type);
  if (!user) {
    const builtins::Overload& o = *e.overload;
    if (!o.differentiable)
      return Err(e.span, Cat("Cannot compute gradient of non-differentiable function '", name, "'"));
    bool outputs = false;
    for (const auto& p : o.sig.params) outputs |= p.out;
    if (o.hook || o.form != builtins::Form::kCall || outputs || !e.keywords.empty())
      return Err(e.span, Cat("warpd cannot compute wp.grad() of ", name, "() yet (a constructor, a builtin with "
                             "output or type arguments, or another irregular builtin)"));
    if (!builtins::AdjointOf(o, inputs)) {
      std::vector<std::string> sig;
      for (ir::TypeRef t : inputs) sig.push_back(t->ToString());
      return Err(e.span, Cat("warpd cannot compute wp.grad() of ", name, "(", Join(sig, ", "),
                             ") yet: it has no adjoint for these types"));
    }
  }
  if (inputs.empty()) return Err(e.span, Cat("wp.grad() of '", name, "' needs arguments to differentiate by"));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->is_array())
      return Err(e.operands[i]->span, Cat("wp.grad() of '", name, "' cannot take an array argument (argument ", i + 1,
                                          "): its adjoint would be a gradient array; call wp.grad() of a function "
                                          "of the elements instead"));
  if (!Seedable(e.type))
    return Err(e.span, Cat("wp.grad() of '", name, "' needs a result of scalars, vectors, matrices, quaternions or "
                           "transforms (or a tuple of them) to seed with ones, not ", e.type->ToString()));
  e.grad_result = e.type;
  if (inputs.size() == 1) {
    e.type = inputs[0];
    return absl::OkStatus();
  }
  auto tuple = table().Tuple(inputs);
  if (!tuple.ok()) return ErrFrom(e.span, tuple.status());
  e.type = *tuple;
  return absl::OkStatus();
}

}  // namespace warpd::sema::internal
