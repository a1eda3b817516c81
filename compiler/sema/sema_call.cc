// Semantic analysis: calls of user functions and builtins.
#include "common/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

using ir::Expr;
using ir::ExprKind;
using ir::TypeRef;

absl::Status FunctionSema::CallSema(Expr& e) {
  if (e.callee_kind == ir::CalleeKind::kFunction) return UserCall(e);
  return BuiltinCall(e);
}

absl::Status FunctionSema::UserCall(Expr& e) {
  int callee = ms_.Find(e.name);
  if (callee < 0) return Err(e.span, Cat("unknown function '", e.name, "'"));
  if (!e.keywords.empty()) return Err(e.span, "keyword arguments to user functions are not supported");
  ir::Function& fn = m_.functions[callee];
  if (fn.kind == ir::FunctionKind::kKernel)
    return Err(e.span, Cat("'", fn.display_name, "' is a kernel; kernels cannot be called, only launched"));
  SEMA_TRY(ms_.Ensure(callee, &e));
  if (e.operands.size() != fn.params.size())
    return Err(e.span, Cat("'", fn.display_name, "' takes ", fn.params.size(), " argument",
                                    fn.params.size() == 1 ? "" : "s", " but ", e.operands.size(), " were given"));
  for (size_t i = 0; i < e.operands.size(); ++i) {
    SEMA_TRY(ExprSema(*e.operands[i]));
    if (types::SameType(e.operands[i]->type, fn.params[i].type)) continue;
    return Err(e.operands[i]->span,
               Cat("argument '", fn.params[i].name, "' of '", fn.display_name, "' expects ",
                            fn.params[i].type->ToString(), " but got ", TypeText(e.operands[i]->type),
                            " (no implicit conversion)"));
  }
  e.function_index = callee;
  e.type = fn.return_type;
  return absl::OkStatus();
}

absl::Status FunctionSema::BuiltinCall(Expr& e) {
  std::string_view name = e.name;
  auto overloads = builtins::Lookup(name);
  if (overloads.empty()) {
    auto near = builtins::Suggest(name);
    std::string hint;
    if (!near.empty()) hint = Cat("; did you mean ", Join(near, ", "), "?");
    return Err(e.span, Cat("unknown function '", e.name, "'", hint));
  }
  // Type the arguments; types used as values (dtype=wp.float64) and strings
  // are read by the hooks.
  for (auto& a : e.operands) {
    if (a->kind == ExprKind::TypeValue) {
      a->type = types::Void();
      continue;
    }
    if (a->kind == ExprKind::Tuple) {  // shape=(3, 3)
      for (auto& el : a->operands) SEMA_TRY(ExprSema(*el));
      a->type = types::Void();
      continue;
    }
    SEMA_TRY(ExprSema(*a));
  }
  const builtins::Overload& first = *overloads.front();
  if (first.hook) {
    auto r = first.hook(first, e, table());
    if (!r.ok()) return Err(e.span, std::string(r.status().message()));
    e.overload = &first;
    e.type = r->result;
    e.callee = builtins::Spell(r->cpp, {.result = r->result});
    if (first.form == builtins::Form::kTid && e.tuple_arity == 0 && f_.kind == ir::FunctionKind::kKernel &&
        f_.tid_ndim == 0)
      f_.tid_ndim = 1;
    if (first.form == builtins::Form::kLocalArray) {
      uint64_t bytes = e.type->element()->size();
      for (int n : builtins::LocalArrayShape(e)) bytes *= static_cast<uint64_t>(n);
      SEMA_TRY(ms_.AddLocalArray(bytes, e));
      if (!local_array_) local_array_ = &e;
    }
    return absl::OkStatus();
  }
  if (!e.keywords.empty()) return Err(e.span, Cat(std::string(name), "() takes no keyword arguments"));
  std::vector<TypeRef> args;
  for (auto& a : e.operands) args.push_back(a->type);
  auto r = builtins::Resolve(overloads, args, table());
  if (!r) {
    // Literal arguments may take the type the other arguments agree on
    // (e.g. wp.min(x, 0.0) with x a float64 is not allowed in Warp, but
    // clamp(x, 0, 10) with x an int64 literal-mixes; try each scalar type).
    std::vector<std::string> got, sigs;
    for (TypeRef a : args) got.push_back(TypeText(a));
    for (const auto* o : overloads) sigs.push_back(builtins::SignatureText(*o));
    return Err(e.span, Cat("no overload of ", std::string(name), "() takes (", Join(got, ", "),
                                    "); Warp does not convert implicitly. Candidates: ", Join(sigs, "; ")));
  }
  // Output arguments must be places this function can write.
  const builtins::Signature& sig = r->overload->sig;
  for (size_t i = 0; i < sig.params.size(); ++i) {
    if (!sig.params[i].out) continue;
    Expr& a = *e.operands[i];
    if (a.kind != ExprKind::Name && a.kind != ExprKind::Subscript && a.kind != ExprKind::Attribute)
      return Err(a.span, Cat("argument '", sig.params[i].name, "' of ", std::string(name),
                                      "() is an output: pass a variable"));
    SEMA_TRY(CheckPlace(a, a.span));
  }
  e.overload = r->overload;
  e.type = r->result;
  e.callee = r->cpp;
  return absl::OkStatus();
}

}  // namespace warpd::sema::internal
