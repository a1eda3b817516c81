// Semantic analysis: expressions (names, constants, operators, indexing,
// attributes).
#include "common/str_cat.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

using ir::Expr;
using ir::ExprKind;
using ir::TypeRef;
using types::ScalarKind;

absl::Status FunctionSema::ResolveOperator(Expr& e, std::string_view builtin, std::string_view symbol) {
  std::vector<TypeRef> args;
  for (auto& o : e.operands) args.push_back(o->type);
  auto overloads = builtins::Lookup(builtin);
  if (auto r = builtins::Resolve(overloads, args, table())) {
    e.overload = r->overload;
    e.type = r->result;
    e.callee = r->cpp;
    return absl::OkStatus();
  }
  std::vector<std::string> names, quoted;
  for (TypeRef a : args) {
    names.push_back(TypeText(a));
    quoted.push_back(Cat("'", TypeText(a), "'"));
  }
  // Two scalars of different types: Warp's builtins say so in these words.
  if (args.size() == 2 && args[0] && args[1] && args[0]->is_scalar() && args[1]->is_scalar() &&
      !types::SameType(args[0], args[1]))
    return Err(e.span, Cat("unsupported operand types for ", symbol, " (Warp does not convert implicitly; convert one "
                           "side, e.g. float32(x)): Input types must be the same, got [", Join(quoted, ", "), "]"));
  return Err(e.span, Cat("unsupported operand type", args.size() > 1 ? "s" : "", " for ", symbol, ": ",
                                  Join(names, " and "),
                                  args.size() > 1 ? " (Warp does not convert implicitly; convert one side, e.g. float32(x))"
                                                  : ""),
             ir::ErrorCategory::kType);
}

absl::Status FunctionSema::ExprSema(Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: {
      if (auto r = renamed_.find(e.name); r != renamed_.end()) e.name = r->second;
      int i = FindLocal(e.name);
      if (i < 0) {
        if (ms_.Find(e.name) >= 0) return Err(e.span, Cat("function '", e.name, "' used as a value (call it)"));
        return Err(e.span, Cat("Referencing undefined symbol: ", e.name), ir::ErrorCategory::kKey);
      }
      e.type = f_.locals[i].type;
      return absl::OkStatus();
    }
    case ExprKind::Constant: {
      if (std::holds_alternative<std::string>(e.value)) {
        e.type = types::Void();  // only print()/printf() accept strings
        return absl::OkStatus();
      }
      if (e.const_dtype) {
        e.type = types::Scalar(*e.const_dtype);
      } else if (std::holds_alternative<bool>(e.value)) {
        e.type = types::Scalar(ScalarKind::kBool);
      } else if (std::holds_alternative<double>(e.value)) {
        e.type = types::Scalar(ScalarKind::kFloat32);
      } else {
        int64_t v = std::get<int64_t>(e.value);
        e.type = types::Scalar((v >= INT32_MIN && v <= INT32_MAX) ? ScalarKind::kInt32 : ScalarKind::kInt64);
      }
      return absl::OkStatus();
    }
    case ExprKind::Binary: {
      for (auto& o : e.operands) SEMA_TRY(ExprSema(*o));
      if (!e.user_function.empty() && ms_.OverloadFits(e.user_function, e.operands)) return OperatorCall(e);
      if (e.binary_op == ir::BinaryOp::kMatMul && !e.operands[0]->type->is_matrix() &&
          !e.operands[1]->type->is_matrix())
        return Err(e.span, Cat("the @ operator needs a matrix operand, got ", e.operands[0]->type->ToString(),
                                        " and ", e.operands[1]->type->ToString()));
      return ResolveOperator(e, builtins::BinaryOpBuiltin(e.binary_op), ir::BinaryOpSymbol(e.binary_op));
    }
    case ExprKind::Unary: {
      if (e.unary_op == ir::UnaryOp::kNot) {
        // `not arr` is true for an array without data (Warp's unot(array)).
        SEMA_TRY(ExprSema(*e.operands[0]));
        if (!e.operands[0]->type->is_array()) SEMA_TRY(ConditionType(*e.operands[0], "the operand of 'not'"));
        return ResolveOperator(e, "unot", "not");
      }
      SEMA_TRY(ExprSema(*e.operands[0]));
      if (!e.user_function.empty() && ms_.OverloadFits(e.user_function, e.operands)) return OperatorCall(e);
      switch (e.unary_op) {
        case ir::UnaryOp::kNeg: return ResolveOperator(e, "neg", "unary -");
        case ir::UnaryOp::kPos: return ResolveOperator(e, "pos", "unary +");
        case ir::UnaryOp::kInvert: return ResolveOperator(e, "invert", "~");
        case ir::UnaryOp::kNot: break;
      }
      return Err(e.span, "unknown unary operator");
    }
    case ExprKind::Compare: {
      for (auto& o : e.operands) SEMA_TRY(ExprSema(*o));
      e.callees.clear();
      e.compare_overloads.clear();
      for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        // Untyped literals take the other side's scalar type (x < 1.0 with
        // x: float64), as Warp's comparisons accept.
        ir::Expr& l = *e.operands[i];
        ir::Expr& rr = *e.operands[i + 1];
        if (!types::SameType(l.type, rr.type)) {
          if (rr.type->is_scalar() && builtins::IsLiteral(l)) builtins::CoerceLiteral(l, rr.type->scalar());
          if (l.type->is_scalar() && builtins::IsLiteral(rr)) builtins::CoerceLiteral(rr, l.type->scalar());
        }
        TypeRef args[2] = {l.type, rr.type};
        auto r = builtins::Resolve(builtins::Lookup(builtins::CompareOpBuiltin(e.compare_ops[i])), args, table());
        if (!r)
          return Err(e.span, Cat("cannot compare ", TypeText(args[0]), " ", ir::CompareOpSymbol(e.compare_ops[i]),
                                 " ", TypeText(args[1]), " (Warp does not convert implicitly)"),
                     ir::ErrorCategory::kType);
        e.callees.push_back(r->cpp);
        e.compare_overloads.push_back(r->overload);
      }
      e.type = types::Scalar(ScalarKind::kBool);
      return absl::OkStatus();
    }
    case ExprKind::BoolOp:
      for (auto& o : e.operands)
        SEMA_TRY(Condition(*o, e.bool_op == ir::BoolOpKind::kAnd ? "an operand of 'and'" : "an operand of 'or'"));
      e.type = types::Scalar(ScalarKind::kBool);
      return absl::OkStatus();
    case ExprKind::Call:
      return CallSema(e);
    case ExprKind::Subscript: {
      Expr& owner = *e.operands[0];
      if (owner.kind == ExprKind::Attribute && owner.name == "shape") {
        // a.shape[d]: `a.shape` alone is not a value (see SubscriptSema).
        SEMA_TRY(ExprSema(*owner.operands[0]));
        if (owner.operands[0]->type->is_array()) {
          owner.type = types::Void();
          return SubscriptSema(e);
        }
      }
      SEMA_TRY(ExprSema(owner));
      return SubscriptSema(e);
    }
    case ExprKind::Attribute:
      SEMA_TRY(ExprSema(*e.operands[0]));
      return AttributeSema(e);
    case ExprKind::IfExp: {
      SEMA_TRY(Condition(*e.operands[0], "a conditional expression's test"));
      SEMA_TRY(ExprSema(*e.operands[1]));
      SEMA_TRY(ExprSema(*e.operands[2]));
      if (e.operands[1]->type->is_void())
        return Err(e.span, "the branches of a conditional expression must be values");
      if (!types::SameType(e.operands[1]->type, e.operands[2]->type))
        return Err(e.span, Cat("both branches of a conditional expression must have one type; got ",
                                        e.operands[1]->type->ToString(), " and ", e.operands[2]->type->ToString()));
      e.type = e.operands[1]->type;
      return absl::OkStatus();
    }
    case ExprKind::Tuple: {
      // A tuple value: `return a, b`, `t = (x, y)`, `a, b = b, a`.
      std::vector<TypeRef> elements;
      for (auto& o : e.operands) {
        SEMA_TRY(ExprSema(*o));
        if (o->type->is_void() || o->type->is_array())
          return Err(o->span, Cat("a tuple element must be a value, not ", o->type->is_void() ? "nothing" : "an array"));
        elements.push_back(o->type);
      }
      auto t = table().Tuple(std::move(elements));
      if (!t.ok()) return ErrFrom(e.span, t.status());
      e.type = *t;
      return absl::OkStatus();
    }
    case ExprKind::TypeValue:
      return Err(e.span, Cat("type ", TypeText(e.type_value), " used as a value"));
  }
  return Err(e.span, "unknown expression");
}

namespace {

// Bounds of a constant index (k or -k), checked at compile time; a negative
// one counts from the end, as in Python, and becomes that constant.
absl::Status CheckConstantIndex(FunctionSema& fs, Expr& idx, int extent, TypeRef owner, const ir::Span& span) {
  const bool negated = idx.kind == ExprKind::Unary && idx.unary_op == ir::UnaryOp::kNeg &&
                       idx.operands[0]->kind == ExprKind::Constant;
  const Expr& lit = negated ? *idx.operands[0] : idx;
  if (lit.kind != ExprKind::Constant) return absl::OkStatus();
  const int64_t* k = std::get_if<int64_t>(&lit.value);
  if (!k || (negated && *k == INT64_MIN)) return absl::OkStatus();
  const int64_t v = negated ? -*k : *k;
  if (v < -extent || v >= extent) return fs.Err(span, Cat("index ", v, " is out of range for ", owner->ToString()), ir::ErrorCategory::kIndex);
  if (v >= 0 && !negated) return absl::OkStatus();
  const auto dtype = lit.const_dtype;
  idx.kind = ExprKind::Constant;
  idx.value = v < 0 ? v + extent : v;
  idx.const_dtype = dtype;
  idx.operands.clear();
  return absl::OkStatus();
}

// An integer constant, or the negation of one.
std::optional<int64_t> ConstantInt(const Expr& e) {
  const Expr* lit = &e;
  bool negated = false;
  if (e.kind == ExprKind::Unary && e.unary_op == ir::UnaryOp::kNeg) {
    lit = e.operands[0].get();
    negated = true;
  }
  if (lit->kind != ExprKind::Constant) return std::nullopt;
  const int64_t* k = std::get_if<int64_t>(&lit->value);
  if (!k || (negated && *k == INT64_MIN)) return std::nullopt;
  return negated ? -*k : *k;
}

// The components of a vector or matrix axis of `n` a slice selects, by
// Python's rules (slice(start, stop, step).indices(n)); its bounds must be
// constants, as the result's length is part of its type.
absl::StatusOr<std::vector<int>> SliceComponents(const Expr& s, int n) {
  std::optional<int64_t> part[3];
  for (size_t i = 0; i < s.operands.size(); ++i) {
    const std::string& k = s.keywords[i];
    const int which = k == "start" ? 0 : k == "stop" ? 1 : 2;
    part[which] = ConstantInt(*s.operands[i]);
    if (!part[which])
      return absl::InvalidArgumentError("a slice of a vector or matrix needs constant bounds (its length is part of its type)");
  }
  const int64_t step = part[2].value_or(1);
  if (step == 0) return ir::UserError(ir::ErrorCategory::kValue, "Slice step cannot be zero.");
  auto norm = [n](int64_t x, int64_t lo, int64_t hi) { return std::clamp(x < 0 ? x + n : x, lo, hi); };
  int64_t start, stop;
  if (step > 0) {
    start = part[0] ? norm(*part[0], 0, n) : 0;
    stop = part[1] ? norm(*part[1], 0, n) : n;
  } else {
    start = part[0] ? norm(*part[0], -1, n - 1) : n - 1;
    stop = part[1] ? norm(*part[1], -1, n - 1) : -1;
  }
  // start and stop lie in [-1, n]: counting avoids stepping past INT64 bounds.
  int64_t count = 0;
  if (step > 0 && stop > start) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) count = step == INT64_MIN ? 1 : (start - stop - 1) / -step + 1;
  std::vector<int> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<int>(start + i * step));
  return out;
}

}  // namespace

absl::Status FunctionSema::SliceSema(Expr& s) {
  for (size_t i = 0; i < s.operands.size(); ++i) {
    const std::string& k = i < s.keywords.size() ? s.keywords[i] : "";
    if (k != "start" && k != "stop" && k != "step") return Err(s.span, "a slice has a start, a stop and a step");
    SEMA_TRY(ExprSema(*s.operands[i]));
    if (!s.operands[i]->type->is_int())
      return Err(s.operands[i]->span, Cat("slice bounds must be integers, not ", s.operands[i]->type->ToString()),
                 ir::ErrorCategory::kType);
  }
  if (s.operands.size() != s.keywords.size()) return Err(s.span, "a slice has a start, a stop and a step");
  s.type = types::Void();
  return absl::OkStatus();
}

absl::Status FunctionSema::SliceSubscript(Expr& e) {
  TypeRef t = e.operands[0]->type;
  const size_t n = e.operands.size() - 1;
  auto components = [&](size_t i, int extent) -> absl::StatusOr<std::vector<int>> {
    auto c = SliceComponents(*e.operands[i], extent);
    if (!c.ok()) return ErrFrom(e.operands[i]->span, c.status());
    return c;  // may be empty: v[4:] is a vector of length 0, as in Warp
  };
  if (t->is_indexed_array())
    return Err(e.span, Cat("an ", t->ToString(), " cannot be sliced in a kernel; index every dimension"));
  if (t->is_array()) {
    size_t ints = 0;
    for (size_t i = 1; i <= n; ++i) {
      const Expr& ix = *e.operands[i];
      if (!ir::IsSlice(ix)) {
        ++ints;
        continue;
      }
      for (size_t k = 0; k < ix.operands.size(); ++k) {
        std::optional<int64_t> step = ix.keywords[k] == "step" ? ConstantInt(*ix.operands[k]) : std::nullopt;
        if (step && *step == 0) return Err(ix.span, "Slice step cannot be zero.", ir::ErrorCategory::kValue);
      }
    }
    if (static_cast<int>(n) > t->ndim())
      return Err(e.span, Cat("Incorrect number of indices specified for array indexing: an array with ndim=",
                             t->ndim(), " indexed with ", n, " indices"));
    e.type = table().Array(t->element(), t->ndim() - static_cast<int>(ints));
    return absl::OkStatus();
  }
  if (t->is_vector() || t->is_quat() || t->is_transform()) {  // q[-2:], t[:]: a vector of the components
    if (n != 1) return Err(e.span, Cat(t->ToString(), " takes exactly one index"));
    WARPD_ASSIGN_OR_RETURN(std::vector<int> c, components(1, t->length()));
    auto v = table().CheckedVector(static_cast<int64_t>(c.size()), t->scalar());
    if (!v.ok()) return ErrFrom(e.span, v.status());
    e.type = *v;
    e.slice_components = {std::move(c)};
    return absl::OkStatus();
  }
  if (t->is_matrix()) {
    if (n < 1 || n > 2) return Err(e.span, "matrices take one index (a row) or two (an element)");
    std::vector<int> rows, cols;
    const bool row_slice = ir::IsSlice(*e.operands[1]);
    const bool col_slice = n == 2 && ir::IsSlice(*e.operands[2]);
    if (row_slice) {
      WARPD_ASSIGN_OR_RETURN(rows, components(1, t->rows()));
    } else {
      SEMA_TRY(CheckConstantIndex(*this, *e.operands[1], t->rows(), t, e.span));
    }
    if (col_slice) {
      WARPD_ASSIGN_OR_RETURN(cols, components(2, t->cols()));
    } else if (n == 2) {
      SEMA_TRY(CheckConstantIndex(*this, *e.operands[2], t->cols(), t, e.span));
    } else {
      for (int c = 0; c < t->cols(); ++c) cols.push_back(c);  // m[1:3]: whole rows
    }
    absl::StatusOr<TypeRef> r = absl::InternalError("unset");
    if (row_slice && (col_slice || n == 1)) {
      // Warp: a block with no rows or no columns is a (0, 0) matrix.
      const bool empty = rows.empty() || cols.empty();
      r = table().CheckedMatrix(empty ? 0 : static_cast<int64_t>(rows.size()), empty ? 0 : static_cast<int64_t>(cols.size()),
                                t->scalar());
    } else {
      r = table().CheckedVector(static_cast<int64_t>(row_slice ? rows.size() : cols.size()), t->scalar());
    }
    if (!r.ok()) return ErrFrom(e.span, r.status());
    e.type = *r;
    e.slice_components = {std::move(rows), std::move(cols)};
    return absl::OkStatus();
  }
  return Err(e.span, Cat("a value of type ", t->ToString(), " cannot be sliced (arrays, vectors and matrices can)"));
}

absl::Status FunctionSema::SubscriptSema(Expr& e) {
  Expr& owner = *e.operands[0];
  size_t n = e.operands.size() - 1;
  // a.shape[d]: the extent of dimension d.
  if (owner.kind == ExprKind::Attribute && owner.name == "shape" && owner.operands[0]->type->is_array()) {
    Expr& idx = *e.operands[1];
    if (n != 1 || idx.kind != ExprKind::Constant || !std::holds_alternative<int64_t>(idx.value))
      return Err(e.span, "array.shape must be indexed with one integer constant");
    int64_t d = std::get<int64_t>(idx.value);
    // The descriptor has four extents, 0 past ndim (Warp: a.shape[1] of a 1-D array is 0).
    if (d < 0 || d >= 4) return Err(e.span, Cat("shape index ", d, " is out of range (0..3)"));
    SEMA_TRY(ExprSema(idx));
    e.type = types::Scalar(ScalarKind::kInt32);
    return absl::OkStatus();
  }
  if (owner.type->is_tuple()) {
    // t[k]: k must be a constant (each element has its own type).
    Expr& idx = *e.operands[1];
    SEMA_TRY(ExprSema(idx));
    const Expr* lit = &idx;
    bool negated = false;
    if (idx.kind == ExprKind::Unary && idx.unary_op == ir::UnaryOp::kNeg) {
      lit = idx.operands[0].get();
      negated = true;
    }
    const int64_t* k = lit->kind == ExprKind::Constant ? std::get_if<int64_t>(&lit->value) : nullptr;
    if (n != 1 || k == nullptr) return Err(e.span, "a tuple must be indexed with one integer constant");
    const int64_t size = static_cast<int64_t>(owner.type->elements().size());
    const int64_t at = negated ? size - *k : *k;
    if (at < 0 || at >= size)
      return Err(e.span, Cat("index ", negated ? -*k : *k, " is out of range for ", owner.type->ToString()),
                 ir::ErrorCategory::kIndex);
    e.element_index = static_cast<int>(at);
    e.type = owner.type->elements()[static_cast<size_t>(at)];
    return absl::OkStatus();
  }
  bool sliced = false;
  for (size_t i = 1; i <= n; ++i) {
    if (ir::IsSlice(*e.operands[i])) {
      SEMA_TRY(SliceSema(*e.operands[i]));
      sliced = true;
      continue;
    }
    SEMA_TRY(ExprSema(*e.operands[i]));
    TypeRef t = e.operands[i]->type;
    if (!t->is_int()) return Err(e.operands[i]->span, Cat("indices must be integers, not ", t->ToString()), ir::ErrorCategory::kType);
  }
  if (sliced) return SliceSubscript(e);
  TypeRef t = owner.type;
  if (t->is_array()) {
    int nd = t->ndim();
    if (static_cast<int>(n) > nd)
      return Err(e.span, Cat("Incorrect number of indices specified for array indexing: an array with ndim=", nd,
                             " indexed with ", n, " indices"));
    // Fewer indices than dimensions: a slice (a view of the remaining dims;
    // of an indexedarray, an indexedarray, as in Warp).
    e.type = static_cast<int>(n) == nd ? t->element()
                                       : table().Array(t->element(), nd - static_cast<int>(n), t->is_indexed_array());
    return absl::OkStatus();
  }
  if (t->is_vector() || t->is_quat() || t->is_transform()) {
    if (n != 1) return Err(e.span, Cat(t->ToString(), " takes exactly one index"));
    SEMA_TRY(CheckConstantIndex(*this, *e.operands[1], t->length(), t, e.span));
    e.type = types::Scalar(t->scalar());
    return absl::OkStatus();
  }
  if (t->is_matrix()) {
    if (n < 1 || n > 2) return Err(e.span, "matrices take one index (a row) or two (an element)");
    SEMA_TRY(CheckConstantIndex(*this, *e.operands[1], t->rows(), t, e.span));
    if (n == 2) SEMA_TRY(CheckConstantIndex(*this, *e.operands[2], t->cols(), t, e.span));
    e.type = n == 1 ? types::Vector(t->cols(), t->scalar()) : types::Scalar(t->scalar());
    return absl::OkStatus();
  }
  return Err(e.span, Cat("a value of type ", t->ToString(), " cannot be indexed"), ir::ErrorCategory::kType);
}

namespace {

// How Warp names an expression in its attribute errors: a variable by its
// name, a subscript by its base and "[...]", anything else by the kind of
// Python syntax node it is.
std::string NodeName(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: return e.name;
    case ExprKind::Subscript: return e.operands.empty() ? "<Subscript>" : Cat(NodeName(*e.operands[0]), "[...]");
    case ExprKind::Binary: return "<BinOp>";
    case ExprKind::Unary: return "<UnaryOp>";
    default: return Cat("<", ir::ExprKindName(e.kind), ">");
  }
}

// A type as Warp's messages spell it (types.type_repr): a struct by its
// module-qualified class name (the client sends it as the display name), an
// array by its ndim and dtype.
std::string TypeRepr(const TypeRef& t) {
  if (t->is_struct()) return t->display_name();
  if (t->is_array())
    return Cat(t->is_indexed_array() ? "indexedarray" : "array", "(ndim=", t->ndim(), ", dtype=", TypeRepr(t->element()), ")");
  return t->ToString();
}

// Warp's words for `e.name` missing from the value e.operands[0].
std::string NotAnAttribute(const Expr& e) {
  return Cat("Error, `", e.name, "` is not an attribute of '", NodeName(*e.operands[0]), "' (",
             TypeRepr(e.operands[0]->type), ")");
}

}  // namespace

absl::Status FunctionSema::AttributeSema(Expr& e) {
  TypeRef t = e.operands[0]->type;
  if (t->is_vector() || t->is_quat()) {
    static const std::string_view kNames[] = {"x", "y", "z", "w"};
    for (int i = 0; i < 4; ++i) {
      if (e.name == kNames[i]) {
        if (i >= t->length()) return Err(e.span, Cat(t->ToString(), " has no component '", e.name, "'"), ir::ErrorCategory::kAttribute);
        e.type = types::Scalar(t->scalar());
        return absl::OkStatus();
      }
    }
  }
  if (t->is_transform()) {
    if (e.name == "p") {
      e.type = types::Vector(3, t->scalar());
      return absl::OkStatus();
    }
    if (e.name == "q") {
      e.type = types::Quat(t->scalar());
      return absl::OkStatus();
    }
  }
  if (t->is_struct()) {
    if (const types::Member* m = t->FindMember(e.name)) {
      e.type = m->type;
      return absl::OkStatus();
    }
    return Err(e.span, NotAnAttribute(e), ir::ErrorCategory::kAttribute);
  }
  if (t->is_query() && !t->members().empty()) {  // MeshQueryPoint, MeshQueryRay: fields
    if (const types::Member* m = t->FindMember(e.name)) {
      e.type = m->type;
      return absl::OkStatus();
    }
    return Err(e.span, Cat(t->ToString(), " has no field '", e.name, "'"), ir::ErrorCategory::kAttribute);
  }
  if (t->is_array() && e.name == "shape") return Err(e.span, "array.shape must be indexed, e.g. a.shape[0]");
  if (t->is_array() && e.name == "ptr") {
    return Err(e.span,
               Cat(NotAnAttribute(e), " in warpd: kernels never see addresses, nor turn integers into pointers, "
                                      "which tenants sharing the daemon could forge; pass the array itself"),
               ir::ErrorCategory::kAttribute);
  }
  if (t->is_array() && e.name == "ndim") {  // a constant of the type
    const int nd = t->ndim();
    e.kind = ExprKind::Constant;
    e.operands.clear();
    e.value = int64_t{nd};
    e.const_dtype = ScalarKind::kInt32;
    e.type = types::Scalar(ScalarKind::kInt32);
    return absl::OkStatus();
  }
  return Err(e.span, NotAnAttribute(e), ir::ErrorCategory::kAttribute);
}

}  // namespace warpd::sema::internal
