#include "compiler/sema/sema.h"

#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "compiler/builtins/builtins.h"

namespace warpd::sema {
namespace {

using ir::Block;
using ir::Expr;
using ir::ExprKind;
using ir::Function;
using ir::FunctionKind;
using ir::ScalarKind;
using ir::Span;
using ir::Stmt;
using ir::StmtKind;
using ir::Type;

#define SEMA_TRY(x)                 \
  do {                              \
    if (auto _st = (x); !_st.ok()) \
      return _st;                   \
  } while (0)

const Type kInt32 = Type::Scalar(ScalarKind::kInt32);
const Type kBool = Type::Scalar(ScalarKind::kBool);

bool IsAtomicElement(const Type& t) {
  switch (t.scalar()) {
    case ScalarKind::kInt32:
    case ScalarKind::kUInt32:
    case ScalarKind::kInt64:
    case ScalarKind::kUInt64:
    case ScalarKind::kFloat32:
    case ScalarKind::kFloat64:
      return t.is_scalar() || t.is_vector();
    default:
      return false;
  }
}

// A literal whose type may adapt to its context (constructor arguments):
// an untyped constant, possibly negated.
bool IsLiteral(const Expr& e) {
  if (e.kind == ExprKind::Constant) return !e.const_dtype && !std::holds_alternative<bool>(e.value);
  if (e.kind == ExprKind::Unary && (e.unary_op == ir::UnaryOp::kNeg || e.unary_op == ir::UnaryOp::kPos))
    return IsLiteral(*e.operands[0]);
  return false;
}

bool LiteralIsFloat(const Expr& e) {
  if (e.kind == ExprKind::Constant) return std::holds_alternative<double>(e.value);
  return LiteralIsFloat(*e.operands[0]);
}

// Gives a literal the scalar type `to` (int literals may become floats, not
// the reverse). Returns false when it cannot.
bool CoerceLiteral(Expr& e, ScalarKind to) {
  if (!IsLiteral(e) || to == ScalarKind::kBool) return false;
  if (LiteralIsFloat(e) && !ir::IsFloat(to)) return false;
  Expr* node = &e;
  while (true) {
    node->type = Type::Scalar(to);
    if (node->kind == ExprKind::Constant) break;
    node = node->operands[0].get();
  }
  // Re-resolve neg/pos for the new type.
  node = &e;
  while (node->kind == ExprKind::Unary) {
    auto overloads = builtins::Lookup(node->unary_op == ir::UnaryOp::kNeg ? "neg" : "pos");
    node->overload = nullptr;
    Type arg = Type::Scalar(to);
    for (const auto* o : overloads)
      if (builtins::MatchOverload(*o, std::span<const Type>(&arg, 1))) node->overload = o;
    if (!node->overload) return false;
    node = node->operands[0].get();
  }
  return true;
}

class ModuleSema;

class FunctionSema {
 public:
  FunctionSema(ModuleSema& ms, ir::Module& m, Function& f) : ms_(ms), m_(m), f_(f) {}
  absl::Status Run();

 private:
  absl::Status Err(const Span& s, absl::string_view msg) const {
    const char* what = f_.kind == FunctionKind::kKernel ? "kernel" : "function";
    return absl::InvalidArgumentError(
        absl::StrCat(m_.Where(s), ": error: ", msg, " (in ", what, " '", f_.display_name, "')"));
  }
  absl::Status BlockSema(Block& b);
  absl::Status StmtSema(Stmt& s);
  absl::Status ExprSema(Expr& e);
  absl::Status CallSema(Expr& e);
  absl::Status BuiltinCall(Expr& e, std::string_view name);
  absl::Status SpecialCall(Expr& e, const builtins::Overload& o);
  absl::Status SubscriptSema(Expr& e);
  absl::Status AttributeSema(Expr& e);
  absl::Status ResolveOperator(Expr& e, std::string_view builtin, absl::string_view symbol);
  absl::Status Assign(Stmt& s);
  absl::Status AssignName(Expr& target, const Type& t, const Span& span);
  absl::Status Condition(Expr& e, absl::string_view what);
  absl::Status ForSema(Stmt& s);
  absl::Status AugAssign(Stmt& s);
  absl::Status ReturnSema(Stmt& s);
  int FindLocal(const std::string& name) const {
    for (size_t i = 0; i < f_.locals.size(); ++i)
      if (f_.locals[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // `owner` (already typed) is an assignable vector variable (v[i] = x, v.x = x).
  absl::Status CheckLocalVector(const Expr& owner, const Span& span);

  ModuleSema& ms_;
  ir::Module& m_;
  Function& f_;
  int loop_depth_ = 0;
  bool saw_return_value_ = false;
};

class ModuleSema {
 public:
  explicit ModuleSema(ir::Module& m) : m_(m), state_(m.functions.size(), kNone) {
    for (size_t i = 0; i < m.functions.size(); ++i) by_name_[m.functions[i].name] = static_cast<int>(i);
  }

  absl::Status Run() {
    for (size_t i = 0; i < m_.functions.size(); ++i) SEMA_TRY(Ensure(static_cast<int>(i), nullptr));
    return absl::OkStatus();
  }

  int Find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
  }

  // Analyzes function `i` if needed (callees before callers, so inferred
  // return types are known); a call back into a function under analysis is
  // recursion, which kernels may not use.
  absl::Status Ensure(int i, const Expr* call) {
    if (state_[i] == kDone) return absl::OkStatus();
    if (state_[i] == kActive)
      return absl::InvalidArgumentError(
          absl::StrCat(m_.Where(call->span), ": error: recursive call of '", m_.functions[i].display_name,
                       "': recursion is not supported in kernels and functions"));
    state_[i] = kActive;
    SEMA_TRY(FunctionSema(*this, m_, m_.functions[i]).Run());
    state_[i] = kDone;
    return absl::OkStatus();
  }

 private:
  enum State { kNone, kActive, kDone };
  ir::Module& m_;
  std::vector<State> state_;
  std::unordered_map<std::string, int> by_name_;
};

absl::Status FunctionSema::Run() {
  for (const auto& p : f_.params) f_.locals.push_back(ir::Local{p.name, p.type, true});
  if (f_.kind == FunctionKind::kKernel && f_.declared_return && !f_.declared_return->is_void())
    return Err(f_.span, "kernels cannot return a value");
  SEMA_TRY(BlockSema(f_.body));
  if (f_.kind == FunctionKind::kKernel) {
    f_.return_type = Type::Void();
  } else if (f_.declared_return) {
    if (!f_.declared_return->is_void() && !saw_return_value_)
      return Err(f_.span, absl::StrCat("function is declared to return ", f_.declared_return->ToString(),
                                       " but has no return statement with a value"));
    f_.return_type = *f_.declared_return;
  }
  return absl::OkStatus();
}

absl::Status FunctionSema::BlockSema(Block& b) {
  for (auto& s : b) SEMA_TRY(StmtSema(*s));
  return absl::OkStatus();
}

absl::Status FunctionSema::Condition(Expr& e, absl::string_view what) {
  SEMA_TRY(ExprSema(e));
  if (!e.type.is_scalar() || e.type.scalar() == ScalarKind::kFloat16)
    return Err(e.span, absl::StrCat(what, " must be a bool or an integer/float scalar, not ", e.type.ToString()));
  return absl::OkStatus();
}

absl::Status FunctionSema::StmtSema(Stmt& s) {
  switch (s.kind) {
    case StmtKind::Assign:
      return Assign(s);
    case StmtKind::AugAssign:
      return AugAssign(s);
    case StmtKind::ExprStmt:
      return ExprSema(*s.value);
    case StmtKind::If:
      SEMA_TRY(Condition(*s.value, "an if condition"));
      SEMA_TRY(BlockSema(s.body));
      return BlockSema(s.orelse);
    case StmtKind::For:
      return ForSema(s);
    case StmtKind::While:
      SEMA_TRY(Condition(*s.value, "a while condition"));
      ++loop_depth_;
      SEMA_TRY(BlockSema(s.body));
      --loop_depth_;
      return absl::OkStatus();
    case StmtKind::Return:
      return ReturnSema(s);
    case StmtKind::Break:
    case StmtKind::Continue:
      if (loop_depth_ == 0)
        return Err(s.span, absl::StrCat("'", s.kind == StmtKind::Break ? "break" : "continue", "' outside a loop"));
      return absl::OkStatus();
    case StmtKind::Pass:
      return absl::OkStatus();
  }
  return Err(s.span, "unknown statement");
}

absl::Status FunctionSema::ReturnSema(Stmt& s) {
  if (f_.kind == FunctionKind::kKernel) {
    if (s.value) return Err(s.span, "kernels cannot return a value");
    return absl::OkStatus();
  }
  Type t = Type::Void();
  if (s.value) {
    SEMA_TRY(ExprSema(*s.value));
    t = s.value->type;
    if (t.is_void()) return Err(s.span, "return of an expression without a value");
    saw_return_value_ = true;
  }
  if (f_.declared_return) {
    if (*f_.declared_return != t)
      return Err(s.span, absl::StrCat("returns ", t.ToString(), " but the function is declared to return ",
                                      f_.declared_return->ToString()));
  } else if (!f_.return_type.is_void() || saw_return_value_) {
    if (f_.return_type.is_void()) {
      f_.return_type = t;
    } else if (f_.return_type != t) {
      return Err(s.span, absl::StrCat("returns ", t.ToString(), " here but ", f_.return_type.ToString(),
                                      " elsewhere; all return statements must return the same type"));
    }
  }
  return absl::OkStatus();
}

absl::Status FunctionSema::AssignName(Expr& target, const Type& t, const Span& span) {
  target.type = t;
  int i = FindLocal(target.name);
  if (i < 0) {
    if (t.is_void()) return Err(span, absl::StrCat("cannot assign an expression without a value to '", target.name, "'"));
    f_.locals.push_back(ir::Local{target.name, t, false});
    return absl::OkStatus();
  }
  if (f_.locals[i].type != t)
    return Err(span, absl::StrCat("cannot assign a value of type ", t.ToString(), " to '", target.name,
                                  "' of type ", f_.locals[i].type.ToString(),
                                  "; Warp variables keep their type (convert explicitly, e.g. ",
                                  f_.locals[i].type.is_scalar() ? f_.locals[i].type.ToString() : std::string("float32"),
                                  "(x))"));
  return absl::OkStatus();
}

absl::Status FunctionSema::CheckLocalVector(const Expr& owner, const Span& span) {
  if (owner.kind != ExprKind::Name)
    return Err(span, "only components of local vector variables can be assigned (load, modify, store back)");
  if (!owner.type.is_vector())
    return Err(span, absl::StrCat("'", owner.name, "' is ", owner.type.ToString(), ", not a vector"));
  return absl::OkStatus();
}

absl::Status FunctionSema::Assign(Stmt& s) {
  Expr& target = *s.target;
  Expr& value = *s.value;
  if (target.kind == ExprKind::Tuple) {
    if (value.kind != ExprKind::Call || value.callee_kind != ir::CalleeKind::kBuiltin || value.name != "tid")
      return Err(s.span, "tuple assignment is only supported for unpacking wp.tid()");
    int n = static_cast<int>(target.operands.size());
    if (n < 1 || n > 4) return Err(s.span, "wp.tid() unpacks into 1 to 4 variables");
    value.tuple_arity = n;
    SEMA_TRY(ExprSema(value));
    for (auto& t : target.operands) {
      if (t->kind != ExprKind::Name) return Err(t->span, "wp.tid() must be unpacked into plain names");
      SEMA_TRY(AssignName(*t, kInt32, t->span));
    }
    if (f_.kind == FunctionKind::kKernel) {
      if (f_.tid_ndim > 1 && f_.tid_ndim != n)
        return Err(s.span, absl::StrCat("wp.tid() is unpacked into ", n, " variables here but into ", f_.tid_ndim,
                                        " elsewhere in the kernel"));
      f_.tid_ndim = n;
    }
    return absl::OkStatus();
  }
  SEMA_TRY(ExprSema(value));
  if (value.type.is_void()) return Err(value.span, "the assigned expression has no value");
  switch (target.kind) {
    case ExprKind::Name: {
      Type t = value.type;
      if (s.annotation) {
        if (*s.annotation != t) {
          if (t.is_scalar() && s.annotation->is_scalar() && CoerceLiteral(value, s.annotation->scalar())) {
            t = value.type;
          } else {
            return Err(s.span, absl::StrCat("'", target.name, "' is annotated as ", s.annotation->ToString(),
                                            " but assigned ", t.ToString()));
          }
        }
      }
      return AssignName(target, t, s.span);
    }
    case ExprKind::Subscript: {
      Expr& owner = *target.operands[0];
      SEMA_TRY(ExprSema(owner));
      if (owner.type.is_vector()) SEMA_TRY(CheckLocalVector(owner, s.span));
      SEMA_TRY(SubscriptSema(target));
      if (target.type != value.type)
        return Err(s.span, absl::StrCat("cannot store a value of type ", value.type.ToString(), " into an element of type ",
                                        target.type.ToString(), " (no implicit conversion)"));
      return absl::OkStatus();
    }
    case ExprKind::Attribute: {
      SEMA_TRY(ExprSema(*target.operands[0]));
      SEMA_TRY(CheckLocalVector(*target.operands[0], s.span));
      SEMA_TRY(AttributeSema(target));
      if (target.type != value.type)
        return Err(s.span, absl::StrCat("cannot assign ", value.type.ToString(), " to a component of type ",
                                        target.type.ToString(), " (no implicit conversion)"));
      return absl::OkStatus();
    }
    default:
      return Err(s.span, absl::StrCat("cannot assign to a ", ir::ExprKindName(target.kind), " expression"));
  }
}

absl::Status FunctionSema::AugAssign(Stmt& s) {
  Expr& target = *s.target;
  SEMA_TRY(ExprSema(*s.value));
  if (target.kind == ExprKind::Name) {
    SEMA_TRY(ExprSema(target));
  } else if (target.kind == ExprKind::Subscript) {
    SEMA_TRY(ExprSema(*target.operands[0]));
    if (target.operands[0]->type.is_vector()) SEMA_TRY(CheckLocalVector(*target.operands[0], s.span));
    SEMA_TRY(SubscriptSema(target));
  } else if (target.kind == ExprKind::Attribute) {
    SEMA_TRY(ExprSema(*target.operands[0]));
    SEMA_TRY(CheckLocalVector(*target.operands[0], s.span));
    SEMA_TRY(AttributeSema(target));
  } else {
    return Err(s.span, "invalid target of an augmented assignment");
  }
  bool array_element = target.kind == ExprKind::Subscript && target.operands[0]->type.is_array();
  if (array_element && (s.binary_op == ir::BinaryOp::kAdd || s.binary_op == ir::BinaryOp::kSub)) {
    // a[i] += x is an atomic add (Warp's semantics), a[i] -= x an atomic add of -x.
    if (!IsAtomicElement(target.type))
      return Err(s.span, absl::StrCat("atomic ", ir::BinaryOpSymbol(s.binary_op), "= on an array of ", target.type.ToString(),
                                      " is not supported (int32, uint32, int64, uint64, float32, float64 and their vectors are)"));
    if (s.value->type != target.type)
      return Err(s.span, absl::StrCat("cannot add ", s.value->type.ToString(), " to an element of type ",
                                      target.type.ToString(), " (no implicit conversion)"));
    return absl::OkStatus();
  }
  // Anything else is x = x op value; check the operator like an expression.
  auto name = builtins::BinaryOpBuiltin(static_cast<int>(s.binary_op));
  Type args[2] = {target.type, s.value->type};
  for (const auto* o : builtins::Lookup(name)) {
    if (auto m = builtins::MatchOverload(*o, args)) {
      if (m->result != target.type)
        return Err(s.span, absl::StrCat("'", ir::BinaryOpSymbol(s.binary_op), "=' would change the type of the target from ",
                                        target.type.ToString(), " to ", m->result.ToString()));
      return absl::OkStatus();
    }
  }
  return Err(s.span, absl::StrCat("unsupported operand types for ", ir::BinaryOpSymbol(s.binary_op), "=: ",
                                  target.type.ToString(), " and ", s.value->type.ToString(),
                                  " (Warp does not convert implicitly)"));
}

absl::Status FunctionSema::ForSema(Stmt& s) {
  Expr& iter = *s.value;
  if (iter.kind != ExprKind::Call || iter.callee_kind != ir::CalleeKind::kBuiltin || iter.name != "range")
    return Err(iter.span, "for loops iterate over range(...) only");
  size_t n = iter.operands.size();
  if (!iter.keywords.empty() || n < 1 || n > 3) return Err(iter.span, "range() takes 1 to 3 positional arguments");
  std::optional<Type> t;
  for (auto& a : iter.operands) {
    SEMA_TRY(ExprSema(*a));
    if (!a->type.is_scalar() || !ir::IsInteger(a->type.scalar()))
      return Err(a->span, absl::StrCat("range() arguments must be integers, not ", a->type.ToString()));
    if (t && *t != a->type)
      return Err(a->span, absl::StrCat("range() arguments must have one type; got ", t->ToString(), " and ",
                                       a->type.ToString()));
    t = a->type;
  }
  iter.type = *t;
  if (s.target->kind != ExprKind::Name) return Err(s.target->span, "the loop variable must be a plain name");
  SEMA_TRY(AssignName(*s.target, *t, s.target->span));
  ++loop_depth_;
  SEMA_TRY(BlockSema(s.body));
  --loop_depth_;
  return absl::OkStatus();
}

absl::Status FunctionSema::ResolveOperator(Expr& e, std::string_view builtin, absl::string_view symbol) {
  std::vector<Type> args;
  for (auto& o : e.operands) args.push_back(o->type);
  for (const auto* o : builtins::Lookup(builtin)) {
    if (auto m = builtins::MatchOverload(*o, args)) {
      e.overload = o;
      e.type = m->result;
      return absl::OkStatus();
    }
  }
  std::vector<std::string> names;
  for (const auto& a : args) names.push_back(a.ToString());
  return Err(e.span, absl::StrCat("unsupported operand type", args.size() > 1 ? "s" : "", " for ", symbol, ": ",
                                  absl::StrJoin(names, " and "),
                                  args.size() > 1 ? " (Warp does not convert implicitly; convert one side, e.g. float32(x))" : ""));
}

absl::Status FunctionSema::ExprSema(Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: {
      int i = FindLocal(e.name);
      if (i < 0) {
        if (ms_.Find(e.name) >= 0)
          return Err(e.span, absl::StrCat("function '", e.name, "' used as a value (call it)"));
        return Err(e.span, absl::StrCat("unknown name '", e.name, "'"));
      }
      e.type = f_.locals[i].type;
      return absl::OkStatus();
    }
    case ExprKind::Constant: {
      if (e.const_dtype) {
        e.type = Type::Scalar(*e.const_dtype);
      } else if (std::holds_alternative<bool>(e.value)) {
        e.type = kBool;
      } else if (std::holds_alternative<double>(e.value)) {
        e.type = Type::Scalar(ScalarKind::kFloat32);
      } else {
        int64_t v = std::get<int64_t>(e.value);
        e.type = (v >= INT32_MIN && v <= INT32_MAX) ? kInt32 : Type::Scalar(ScalarKind::kInt64);
      }
      return absl::OkStatus();
    }
    case ExprKind::Binary: {
      for (auto& o : e.operands) SEMA_TRY(ExprSema(*o));
      if (e.binary_op == ir::BinaryOp::kMatMul) return Err(e.span, "the @ operator needs matrices, which are not supported yet");
      return ResolveOperator(e, builtins::BinaryOpBuiltin(static_cast<int>(e.binary_op)),
                             ir::BinaryOpSymbol(e.binary_op));
    }
    case ExprKind::Unary: {
      if (e.unary_op != ir::UnaryOp::kNot) SEMA_TRY(ExprSema(*e.operands[0]));
      switch (e.unary_op) {
        case ir::UnaryOp::kNeg: return ResolveOperator(e, "neg", "unary -");
        case ir::UnaryOp::kPos: return ResolveOperator(e, "pos", "unary +");
        case ir::UnaryOp::kInvert: return ResolveOperator(e, "invert", "~");
        case ir::UnaryOp::kNot:
          SEMA_TRY(Condition(*e.operands[0], "the operand of 'not'"));
          e.type = kBool;
          return absl::OkStatus();
      }
      return Err(e.span, "unknown unary operator");
    }
    case ExprKind::Compare: {
      for (auto& o : e.operands) SEMA_TRY(ExprSema(*o));
      for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        Type args[2] = {e.operands[i]->type, e.operands[i + 1]->type};
        auto name = builtins::CompareOpBuiltin(static_cast<int>(e.compare_ops[i]));
        bool ok = false;
        for (const auto* o : builtins::Lookup(name)) ok = ok || builtins::MatchOverload(*o, args).has_value();
        if (!ok)
          return Err(e.span, absl::StrCat("cannot compare ", args[0].ToString(), " ", ir::CompareOpSymbol(e.compare_ops[i]),
                                          " ", args[1].ToString(), " (Warp does not convert implicitly)"));
      }
      e.type = kBool;
      return absl::OkStatus();
    }
    case ExprKind::BoolOp:
      for (auto& o : e.operands) SEMA_TRY(Condition(*o, e.bool_op == ir::BoolOpKind::kAnd ? "an operand of 'and'" : "an operand of 'or'"));
      e.type = kBool;
      return absl::OkStatus();
    case ExprKind::Call:
      return CallSema(e);
    case ExprKind::Subscript:
      SEMA_TRY(ExprSema(*e.operands[0]));
      return SubscriptSema(e);
    case ExprKind::Attribute:
      SEMA_TRY(ExprSema(*e.operands[0]));
      return AttributeSema(e);
    case ExprKind::IfExp: {
      SEMA_TRY(Condition(*e.operands[0], "a conditional expression's test"));
      SEMA_TRY(ExprSema(*e.operands[1]));
      SEMA_TRY(ExprSema(*e.operands[2]));
      if (e.operands[1]->type != e.operands[2]->type)
        return Err(e.span, absl::StrCat("both branches of a conditional expression must have one type; got ",
                                        e.operands[1]->type.ToString(), " and ", e.operands[2]->type.ToString()));
      e.type = e.operands[1]->type;
      return absl::OkStatus();
    }
    case ExprKind::Tuple:
      return Err(e.span, "tuples are not supported here (construct a vector, e.g. wp.vec3(x, y, z))");
    case ExprKind::TypeValue:
      return Err(e.span, absl::StrCat("type ", e.type_value.ToString(), " used as a value"));
  }
  return Err(e.span, "unknown expression");
}

absl::Status FunctionSema::SubscriptSema(Expr& e) {
  Expr& owner = *e.operands[0];
  size_t n = e.operands.size() - 1;
  // a.shape[d]: the extent of dimension d (a constant).
  if (owner.kind == ExprKind::Attribute && owner.name == "shape" && owner.operands[0]->type.is_array()) {
    Expr& idx = *e.operands[1];
    if (n != 1 || idx.kind != ExprKind::Constant || !std::holds_alternative<int64_t>(idx.value))
      return Err(e.span, "array.shape must be indexed with one integer constant");
    int64_t d = std::get<int64_t>(idx.value);
    int nd = owner.operands[0]->type.ndim();
    if (d < 0 || d >= nd) return Err(e.span, absl::StrCat("shape index ", d, " is out of range for an array with ndim=", nd));
    SEMA_TRY(ExprSema(idx));
    e.type = kInt32;
    return absl::OkStatus();
  }
  for (size_t i = 1; i <= n; ++i) {
    SEMA_TRY(ExprSema(*e.operands[i]));
    const Type& t = e.operands[i]->type;
    if (!t.is_scalar() || !ir::IsInteger(t.scalar()))
      return Err(e.operands[i]->span, absl::StrCat("indices must be integers, not ", t.ToString()));
  }
  if (owner.type.is_array()) {
    if (static_cast<int>(n) != owner.type.ndim())
      return Err(e.span, absl::StrCat("array with ndim=", owner.type.ndim(), " indexed with ", n, " ind",
                                      n == 1 ? "ex" : "ices", " (slicing is not supported yet)"));
    e.type = owner.type.element();
    return absl::OkStatus();
  }
  if (owner.type.is_vector()) {
    if (n != 1) return Err(e.span, "vectors take exactly one index");
    Expr& idx = *e.operands[1];
    if (idx.kind == ExprKind::Constant) {
      int64_t k = std::get<int64_t>(idx.value);
      if (k < 0 || k >= owner.type.length())
        return Err(e.span, absl::StrCat("index ", k, " is out of range for ", owner.type.ToString()));
    }
    e.type = Type::Scalar(owner.type.scalar());
    return absl::OkStatus();
  }
  return Err(e.span, absl::StrCat("a value of type ", owner.type.ToString(), " cannot be indexed"));
}

absl::Status FunctionSema::AttributeSema(Expr& e) {
  const Type& t = e.operands[0]->type;
  if (t.is_vector()) {
    static const absl::string_view kNames[] = {"x", "y", "z", "w"};
    for (int i = 0; i < 4; ++i) {
      if (e.name == kNames[i]) {
        if (i >= t.length()) return Err(e.span, absl::StrCat(t.ToString(), " has no component '", e.name, "'"));
        e.type = Type::Scalar(t.scalar());
        return absl::OkStatus();
      }
    }
  }
  if (t.is_array() && e.name == "shape") return Err(e.span, "array.shape must be indexed, e.g. a.shape[0]");
  return Err(e.span, absl::StrCat("a value of type ", t.ToString(), " has no attribute '", e.name, "'"));
}

absl::Status FunctionSema::CallSema(Expr& e) {
  if (e.callee_kind == ir::CalleeKind::kFunction) {
    int callee = ms_.Find(e.name);
    if (callee < 0) return Err(e.span, absl::StrCat("unknown function '", e.name, "'"));
    if (!e.keywords.empty()) return Err(e.span, "keyword arguments to user functions are not supported");
    Function& fn = m_.functions[callee];
    if (fn.kind == FunctionKind::kKernel)
      return Err(e.span, absl::StrCat("'", fn.display_name, "' is a kernel; kernels cannot be called, only launched"));
    SEMA_TRY(ms_.Ensure(callee, &e));
    if (e.operands.size() != fn.params.size())
      return Err(e.span, absl::StrCat("'", fn.display_name, "' takes ", fn.params.size(), " argument",
                                      fn.params.size() == 1 ? "" : "s", " but ", e.operands.size(), " were given"));
    for (size_t i = 0; i < e.operands.size(); ++i) {
      SEMA_TRY(ExprSema(*e.operands[i]));
      if (e.operands[i]->type != fn.params[i].type)
        return Err(e.operands[i]->span,
                   absl::StrCat("argument '", fn.params[i].name, "' of '", fn.display_name, "' expects ", fn.params[i].type.ToString(),
                                " but got ", e.operands[i]->type.ToString(), " (no implicit conversion)"));
    }
    e.function_index = callee;
    e.type = fn.return_type;
    return absl::OkStatus();
  }
  // Builtins: names may arrive qualified ("wp.dot") from the client.
  std::string_view name = e.name;
  if (name.substr(0, 3) == "wp.") name = name.substr(3);
  return BuiltinCall(e, name);
}

absl::Status FunctionSema::BuiltinCall(Expr& e, std::string_view name) {
  auto overloads = builtins::Lookup(name);
  if (overloads.empty()) return Err(e.span, absl::StrCat("unknown function '", e.name, "'"));
  if (overloads.front()->special != builtins::Special::kNone) return SpecialCall(e, *overloads.front());
  if (!e.keywords.empty()) return Err(e.span, absl::StrCat(std::string(name), "() takes no keyword arguments"));
  for (auto& a : e.operands) SEMA_TRY(ExprSema(*a));
  std::vector<Type> args;
  for (auto& a : e.operands) args.push_back(a->type);
  for (const auto* o : overloads) {
    if (auto m = builtins::MatchOverload(*o, args)) {
      e.overload = o;
      e.type = m->result;
      return absl::OkStatus();
    }
  }
  std::vector<std::string> got, sigs;
  for (const auto& a : args) got.push_back(a.ToString());
  for (const auto* o : overloads) sigs.push_back(builtins::Signature(*o));
  return Err(e.span, absl::StrCat("no overload of ", std::string(name), "() takes (", absl::StrJoin(got, ", "),
                                  "); Warp does not convert implicitly. Available: ", absl::StrJoin(sigs, "; ")));
}

absl::Status FunctionSema::SpecialCall(Expr& e, const builtins::Overload& o) {
  e.overload = &o;
  if (!e.keywords.empty()) return Err(e.span, absl::StrCat(std::string(o.name), "() takes no keyword arguments"));
  switch (o.special) {
    case builtins::Special::kTid:
      if (!e.operands.empty()) return Err(e.span, "wp.tid() takes no arguments");
      if (e.tuple_arity == 0 && f_.kind == FunctionKind::kKernel && f_.tid_ndim == 0) f_.tid_ndim = 1;
      e.type = kInt32;
      return absl::OkStatus();
    case builtins::Special::kRange:
      return Err(e.span, "range() may only be used as the iterator of a for loop");
    case builtins::Special::kConvert: {
      std::string_view target = o.name == "int" ? "int32" : o.name == "float" ? "float32" : o.name;
      auto s = ir::ScalarFromName(target);
      if (e.operands.size() != 1) return Err(e.span, absl::StrCat(std::string(o.name), "() takes exactly one argument"));
      SEMA_TRY(ExprSema(*e.operands[0]));
      const Type& a = e.operands[0]->type;
      if (!a.is_scalar()) return Err(e.span, absl::StrCat("cannot convert ", a.ToString(), " to ", std::string(target)));
      e.type = Type::Scalar(*s);
      return absl::OkStatus();
    }
    case builtins::Special::kVecCtor: {
      Type vt = *builtins::VectorTypeFromName(o.name);
      ScalarKind comp = vt.scalar();
      size_t n = e.operands.size();
      for (auto& a : e.operands) SEMA_TRY(ExprSema(*a));
      e.type = vt;
      if (n == 0) return absl::OkStatus();
      if (n == 1 && e.operands[0]->type.is_vector() && e.operands[0]->type.length() == vt.length())
        return absl::OkStatus();  // conversion between vector scalar types
      if (n != 1 && n != static_cast<size_t>(vt.length()))
        return Err(e.span, absl::StrCat(std::string(o.name), "() takes 0, 1 or ", vt.length(), " arguments, got ", n));
      for (auto& a : e.operands) {
        if (a->type == Type::Scalar(comp)) continue;
        if (CoerceLiteral(*a, comp)) continue;
        return Err(a->span, absl::StrCat(std::string(o.name), "() components must be ", std::string(ir::ScalarName(comp)), ", got ",
                                         a->type.ToString(), " (convert explicitly, e.g. ", std::string(ir::ScalarName(comp)), "(x))"));
      }
      return absl::OkStatus();
    }
    case builtins::Special::kAtomicAdd: {
      if (e.operands.size() < 3) return Err(e.span, "atomic_add(array, index..., value) needs an array, indices and a value");
      for (auto& a : e.operands) SEMA_TRY(ExprSema(*a));
      const Type& arr = e.operands[0]->type;
      if (!arr.is_array()) return Err(e.span, absl::StrCat("atomic_add() needs an array first, got ", arr.ToString()));
      size_t nidx = e.operands.size() - 2;
      if (static_cast<int>(nidx) != arr.ndim())
        return Err(e.span, absl::StrCat("atomic_add() on an array with ndim=", arr.ndim(), " needs ", arr.ndim(),
                                        " indices, got ", nidx));
      for (size_t i = 1; i <= nidx; ++i) {
        const Type& t = e.operands[i]->type;
        if (!t.is_scalar() || !ir::IsInteger(t.scalar()))
          return Err(e.operands[i]->span, absl::StrCat("indices must be integers, not ", t.ToString()));
      }
      Type elem = arr.element();
      if (!IsAtomicElement(elem))
        return Err(e.span, absl::StrCat("atomic_add() on an array of ", elem.ToString(), " is not supported"));
      if (e.operands.back()->type != elem)
        return Err(e.operands.back()->span, absl::StrCat("atomic_add() value must be ", elem.ToString(), ", got ",
                                                         e.operands.back()->type.ToString(), " (no implicit conversion)"));
      e.type = elem;
      return absl::OkStatus();
    }
    case builtins::Special::kNone:
      break;
  }
  return Err(e.span, "internal error: unhandled builtin");
}

}  // namespace

absl::Status Analyze(ir::Module& module) {
  bool any_kernel = false;
  for (const auto& f : module.functions) any_kernel |= f.kind == FunctionKind::kKernel;
  if (!any_kernel) return absl::InvalidArgumentError("module '" + module.name + "' has no kernels");
  return ModuleSema(module).Run();
}

}  // namespace warpd::sema
