// Semantic analysis: calls of user functions and builtins.
#include "common/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

using ir::Expr;
using ir::ExprKind;
using ir::TypeRef;

absl::Status FunctionSema::CallSema(Expr& e) {
  if (e.grad) return GradCall(e);
  if (e.callee_kind == ir::CalleeKind::kFunction) return UserCall(e);
  return BuiltinCall(e);
}

namespace {

// Warp's message for a call of a name that is no builtin or user function,
// naming it as the user wrote it.
std::string UnknownFunction(const Expr& call) {
  return Cat("Could not find function ", call.written.empty() ? call.name : call.written,
             " as a built-in or user-defined function. Note that user functions must be annotated with a "
             "@wp.func decorator to be called from a kernel.");
}

// "f(x: float32, v: Any)" for messages.
std::string FunctionSignatureText(const ir::Function& f) {
  std::vector<std::string> params;
  for (const auto& p : f.params)
    params.push_back(Cat(p.name, ": ", p.tuple_of ? Cat("tuple[", p.tuple_of->ToString(), ", ...]")
                                       : p.generic ? "Any" : p.type->ToString()));
  return Cat(f.display_name, "(", Join(params, ", "), ")");
}

// How many generic parameters take the arguments, or -1 when `f` does not
// fit them (Warp: exact types; a generic parameter takes any value).
int Fit(const ir::Function& f, const std::vector<TypeRef>& args) {
  if (f.params.size() != args.size()) return -1;
  int generic = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (f.params[i].generic) {
      if (args[i]->is_void()) return -1;
      if (TypeRef of = f.params[i].tuple_of) {  // tuple[T, ...]
        if (!args[i]->is_tuple()) return -1;
        for (TypeRef e : args[i]->elements())
          if (!types::SameType(e, of)) return -1;
      }
      ++generic;
    } else if (!types::QueryAccepts(f.params[i].type, args[i])) {  // the same type, or a query of its family
      return -1;
    }
  }
  return generic;
}

}  // namespace

bool ModuleSema::OverloadFits(const std::string& set, const std::vector<std::unique_ptr<Expr>>& operands) const {
  std::vector<TypeRef> args;
  for (const auto& o : operands) args.push_back(o->type);
  for (int c : Overloads(set))
    if (Fit(m_.functions[static_cast<size_t>(c)], args) >= 0) return true;
  return false;
}

absl::Status FunctionSema::OperatorCall(Expr& e) {
  e.kind = ExprKind::Call;
  e.callee_kind = ir::CalleeKind::kFunction;
  e.name = e.user_function;
  e.user_function.clear();
  return UserCall(e);
}

absl::Status FunctionSema::UserCall(Expr& e) {
  const std::vector<int>& candidates = ms_.Overloads(e.name);
  if (candidates.empty()) {
    int k = ms_.Find(e.name);
    if (k >= 0 && m_.functions[static_cast<size_t>(k)].kind == ir::FunctionKind::kKernel)
      return Err(e.span, Cat("'", m_.functions[static_cast<size_t>(k)].display_name,
                             "' is a kernel; kernels cannot be called, only launched"));
    return Err(e.span, UnknownFunction(e), ir::ErrorCategory::kAttribute);
  }
  if (!e.keywords.empty()) return Err(e.span, "keyword arguments to user functions are not supported");
  // The arguments' types choose the overload (and a generic function's instance).
  std::vector<TypeRef> args;
  for (auto& a : e.operands) {
    if (!a->type) SEMA_TRY(ExprSema(*a));  // an operator's operands are typed already
    args.push_back(a->type);
  }
  // As Warp 1.19 chooses: an overload without generic parameters first, else
  // the first fitting generic one in definition order.
  int callee = -1, generic = 0;
  for (int c : candidates) {
    const int g = Fit(m_.functions[static_cast<size_t>(c)], args);
    if (g < 0 || (callee >= 0 && (generic == 0 || g > 0))) continue;
    callee = c;
    generic = g;
  }
  if (callee < 0) {
    const ir::Function& only = m_.functions[static_cast<size_t>(candidates.front())];
    if (candidates.size() == 1 && only.params.size() != args.size())
      return Err(e.span, Cat("'", only.display_name, "' takes ", only.params.size(), " argument",
                             only.params.size() == 1 ? "" : "s", " but ", args.size(), " were given"));
    if (candidates.size() == 1) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (only.params[i].generic || types::QueryAccepts(only.params[i].type, args[i])) continue;
        return Err(e.operands[i]->span,
                   Cat("argument '", only.params[i].name, "' of '", only.display_name, "' expects ",
                       only.params[i].type->ToString(), " but got ", TypeText(args[i]), " (no implicit conversion)"));
      }
    }
    std::vector<std::string> got, sigs;
    for (TypeRef a : args) got.push_back(TypeText(a));
    for (int c : candidates) sigs.push_back(FunctionSignatureText(m_.functions[static_cast<size_t>(c)]));
    return Err(e.span, Cat("no overload of ", only.display_name, "() takes (", Join(got, ", "),
                           "); Warp does not convert implicitly. Candidates: ", Join(sigs, "; ")));
  }
  if (generic > 0) {
    auto inst = ms_.Instance(callee, args, e);
    if (!inst.ok()) return inst.status();
    callee = *inst;
  }
  SEMA_TRY(ms_.Ensure(callee, &e));
  e.function_index = callee;
  e.type = m_.functions[static_cast<size_t>(callee)].return_type;
  return absl::OkStatus();
}

// Keyword arguments name a builtin's parameters (wp.pow(y=4.0, x=2.0)), as
// in Warp. Each overload whose parameter names take the keywords gives an
// order of the operands; overloads that agree on it are resolved together,
// and the first order that resolves is the call's: its operands are put in
// that order and the keywords dropped. *r stays empty when none resolves.
absl::Status FunctionSema::KeywordCall(Expr& e, const std::vector<const builtins::Overload*>& overloads,
                                       std::vector<TypeRef>& args, std::optional<builtins::Resolution>& r) {
  const size_t n = e.operands.size(), positional = n - e.keywords.size();
  for (size_t j = 0; j < e.keywords.size(); ++j)
    for (size_t k = 0; k < j; ++k)
      if (e.keywords[j] == e.keywords[k])
        return Err(e.span, Cat(e.name, "() got multiple values for argument '", e.keywords[j], "'"));
  std::vector<std::vector<size_t>> orders;  // orders[g][param] = operand
  std::vector<std::vector<const builtins::Overload*>> groups;
  for (const builtins::Overload* o : overloads) {
    const auto& params = o->sig.params;
    if (params.size() != n) continue;
    std::vector<size_t> order(n, n);
    for (size_t i = 0; i < positional; ++i) order[i] = i;
    bool fits = true;
    for (size_t j = 0; j < e.keywords.size() && fits; ++j) {
      fits = false;
      for (size_t p = positional; p < n; ++p) {
        if (params[p].name != e.keywords[j] || order[p] != n) continue;
        order[p] = positional + j;
        fits = true;
        break;
      }
    }
    if (!fits) continue;
    size_t g = 0;
    while (g < orders.size() && orders[g] != order) ++g;
    if (g == orders.size()) {
      orders.push_back(order);
      groups.emplace_back();
    }
    groups[g].push_back(o);
  }
  if (orders.empty()) {
    std::vector<std::string> sigs;
    for (const auto* o : overloads) sigs.push_back(builtins::SignatureText(*o));
    return Err(e.span, Cat(e.name, "() has no overload with ", n, " parameters named by the keywords ",
                           Join(e.keywords, ", "), ". Candidates: ", Join(sigs, "; ")));
  }
  for (size_t g = 0; g < orders.size() && !r; ++g) {
    std::vector<TypeRef> ordered(n);
    for (size_t p = 0; p < n; ++p) ordered[p] = args[orders[g][p]];
    r = builtins::Resolve(groups[g], ordered, table());
    if (!r) continue;
    std::vector<std::unique_ptr<Expr>> operands(n);
    for (size_t p = 0; p < n; ++p) operands[p] = std::move(e.operands[orders[g][p]]);
    e.operands = std::move(operands);
    e.keywords.clear();
    args = std::move(ordered);
  }
  return absl::OkStatus();
}

namespace {

// The elements *v spreads into: v[0] .. v[n-1] for a vector, quaternion or
// matrix (its rows), and a[start], a[start+step], ... for a slice of a 1-D
// array with constant bounds (*a[:3]). Each is a copy of v's expression, so
// v must be a path (a name, member, component or element), evaluated once
// per element as Warp does.
absl::StatusOr<std::vector<ir::ExprPtr>> Spread(const Expr& original, TypeRef t) {
  auto pure = [](const Expr& x, auto& self) -> bool {
    if (x.kind == ExprKind::Name || x.kind == ExprKind::Constant) return true;
    if (x.kind == ExprKind::Attribute) return self(*x.operands[0], self);
    if (x.kind == ExprKind::Unary && x.unary_op == ir::UnaryOp::kNeg) return self(*x.operands[0], self);
    if (x.kind == ExprKind::Subscript || ir::IsSlice(x)) {
      for (const auto& o : x.operands)
        if (!self(*o, self)) return false;
      return true;
    }
    return false;
  };
  if (!pure(original, pure))
    return absl::InvalidArgumentError("*x needs x to be a variable, member, component or array slice");
  std::vector<ir::ExprPtr> out;
  auto element = [&](ir::ExprPtr base, int64_t k) {
    auto sub = std::make_unique<Expr>();
    sub->kind = ExprKind::Subscript;
    sub->span = original.span;
    sub->operands.push_back(std::move(base));
    auto c = std::make_unique<Expr>();
    c->kind = ExprKind::Constant;
    c->span = original.span;
    c->value = k;
    sub->operands.push_back(std::move(c));
    out.push_back(std::move(sub));
  };
  if (t->is_vector() || t->is_quat() || t->is_matrix()) {
    const int n = t->is_matrix() ? t->rows() : t->length();
    for (int k = 0; k < n; ++k) element(ir::CopyExpr(original), k);
    return out;
  }
  if (t->is_array() && original.kind == ExprKind::Subscript && original.operands.size() == 2 &&
      ir::IsSlice(*original.operands[1]) && original.operands[0]->type && original.operands[0]->type->ndim() == 1) {
    const Expr& s = *original.operands[1];
    int64_t part[3] = {0, -1, 1};
    bool has[3] = {false, false, false};
    for (size_t i = 0; i < s.operands.size(); ++i) {
      const int w = s.keywords[i] == "start" ? 0 : s.keywords[i] == "stop" ? 1 : 2;
      const Expr& v = *s.operands[i];
      const bool negated = v.kind == ExprKind::Unary && v.unary_op == ir::UnaryOp::kNeg;
      const Expr& lit = negated ? *v.operands[0] : v;
      const int64_t* k = lit.kind == ExprKind::Constant ? std::get_if<int64_t>(&lit.value) : nullptr;
      if (!k) return ir::UserError(ir::ErrorCategory::kValue, "Slice component must be a compile-time constant.");
      if (negated && w == 2)
        return ir::UserError(ir::ErrorCategory::kValue, "Starred expression slice step cannot be negative for arrays.");
      if (negated)
        return ir::UserError(ir::ErrorCategory::kValue,
                             "Starred expression slice bounds cannot be negative for arrays.");
      part[w] = *k;
      has[w] = true;
    }
    if (!has[1])
      return ir::UserError(ir::ErrorCategory::kValue, "Starred expression on arrays requires explicit upper bound "
                                                      "(e.g., *array[0:3], not *array[0:]).");
    if (part[2] <= 0) return absl::InvalidArgumentError("*a[i:j]: the slice step must be positive");
    // Non-negative bounds: the difference cannot overflow; counting avoids stepping past INT64_MAX.
    const int64_t count = part[1] > part[0] ? (part[1] - part[0] - 1) / part[2] + 1 : 0;
    if (count > 64) return absl::InvalidArgumentError("*a[i:j] spreads at most 64 elements");
    for (int64_t i = 0; i < count; ++i) element(ir::CopyExpr(*original.operands[0]), part[0] + i * part[2]);
    return out;
  }
  return ir::UserError(ir::ErrorCategory::kType,
                       Cat("Starred expressions are only supported for arrays (with slice), vectors, quaternions, "
                           "and matrices. Got ", t->ToString(), "."));
}

}  // namespace

absl::Status FunctionSema::SpreadArguments(Expr& e) {
  for (size_t i = 0; i < e.operands.size(); ++i) {
    if (!ir::IsUnpack(*e.operands[i])) continue;
    if (i >= e.operands.size() - e.keywords.size()) return Err(e.span, "*x must come before keyword arguments");
    // Typed to learn the length; the elements are fresh copies, typed as arguments.
    Expr& typed = *e.operands[i]->operands[0];
    SEMA_TRY(ExprSema(typed));
    auto spread = Spread(typed, typed.type);
    if (!spread.ok()) return ErrFrom(e.operands[i]->span, spread.status());
    std::vector<ir::ExprPtr> operands;
    for (size_t k = 0; k < i; ++k) operands.push_back(std::move(e.operands[k]));
    const size_t next = operands.size() + spread->size();
    for (auto& s : *spread) operands.push_back(std::move(s));
    for (size_t k = i + 1; k < e.operands.size(); ++k) operands.push_back(std::move(e.operands[k]));
    e.operands = std::move(operands);
    i = next - 1;
  }
  return absl::OkStatus();
}

absl::Status FunctionSema::BuiltinCall(Expr& e) {
  std::string_view name = e.name;
  SEMA_TRY(SpreadArguments(e));
  auto overloads = builtins::Lookup(name);
  if (overloads.empty()) {
    auto near = builtins::Suggest(name);
    std::string hint;
    if (!near.empty()) hint = Cat(" Did you mean ", Join(near, ", "), "?");
    // A bare name (expect_eq(...) resolves to the builtin, as in Warp) that names
    // nothing is Warp's KeyError; wp.name that names nothing its AttributeError.
    if (e.written.empty() && name.find('.') == std::string_view::npos)
      return Err(e.span, Cat("Referencing undefined symbol: ", name), ir::ErrorCategory::kKey);
    return Err(e.span, Cat(UnknownFunction(e), hint), ir::ErrorCategory::kAttribute);
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
    if (!r.ok()) return ErrFrom(e.span, r.status());
    e.overload = r->overload ? r->overload : &first;
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
  std::vector<TypeRef> args;
  for (auto& a : e.operands) args.push_back(a->type);
  std::optional<builtins::Resolution> r;
  if (e.keywords.empty()) {
    r = builtins::Resolve(overloads, args, table());
  } else {
    SEMA_TRY(KeywordCall(e, overloads, args, r));
  }
  if (!r && e.keywords.empty()) {
    std::string_view different = builtins::SameTypesError(overloads, args);
    if (!different.empty()) return Err(e.span, std::string(different));
  }
  if (!r) {
    // Literal arguments may take the type the other arguments agree on
    // (e.g. wp.min(x, 0.0) with x a float64 is not allowed in Warp, but
    // clamp(x, 0, 10) with x an int64 literal-mixes; try each scalar type).
    std::vector<std::string> got, sigs;
    for (TypeRef a : args) got.push_back(TypeText(a));
    for (const auto* o : overloads) sigs.push_back(builtins::SignatureText(*o));
    // Values of one shape whose dtypes differ, which an overload takes once
    // they agree: Warp's words for it (dot(vec2f, vec2h)).
    std::string same;
    const TypeRef a0 = args.empty() ? nullptr : args[0];
    if (e.keywords.empty() && args.size() >= 2 &&
        (a0->is_scalar() || a0->is_vector() || a0->is_matrix() || a0->is_quat() || a0->is_transform())) {
      types::TypeTable& global = types::TypeTable::Global();
      const types::ScalarKind k = a0->scalar();
      std::vector<TypeRef> uniform;
      bool differ = false;
      for (TypeRef a : args) {
        TypeRef u = nullptr;
        if (a->is_scalar() && a0->is_scalar()) u = global.Scalar(k);
        if (a->is_vector() && a0->is_vector() && a->length() == a0->length()) u = global.Vector(a->length(), k);
        if (a->is_matrix() && a0->is_matrix() && a->rows() == a0->rows() && a->cols() == a0->cols())
          u = global.Matrix(a->rows(), a->cols(), k);
        if (a->is_quat() && a0->is_quat()) u = global.Quat(k);
        if (a->is_transform() && a0->is_transform()) u = global.Transform(k);
        if (!u) break;
        differ |= !types::SameType(u, a);
        uniform.push_back(u);
      }
      if (differ && uniform.size() == args.size() && builtins::Resolve(overloads, uniform, table())) {
        std::vector<std::string> quoted;
        for (TypeRef a : args) quoted.push_back(Cat("'", a->ToString(), "'"));
        same = Cat(": Input types must be exactly the same, got [", Join(quoted, ", "), "]");
      }
    }
    return Err(e.span, Cat("no overload of ", std::string(name), "() takes (", Join(got, ", "), ")", same,
                           "; Warp does not convert implicitly. Candidates: ", Join(sigs, "; ")));
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
  // Parameters left out take their defaults, typed as the overload binds them.
  for (size_t i = 0; i < r->defaults.size(); ++i) {
    const builtins::Param& p = sig.params[e.operands.size()];
    auto c = std::make_unique<Expr>();
    c->kind = ExprKind::Constant;
    c->span = e.span;
    c->value = *p.default_value;
    c->const_dtype = r->defaults[i]->scalar();
    SEMA_TRY(ExprSema(*c));
    e.operands.push_back(std::move(c));
  }
  e.overload = r->overload;
  e.type = r->result;
  e.callee = r->cpp;
  return absl::OkStatus();
}

}  // namespace warpd::sema::internal
