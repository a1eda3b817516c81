// Semantic analysis: unrolling a for loop whose body indexes a tuple with the
// loop variable.
//
// A tuple's elements have types of their own, so t[i] needs a constant i.
// Warp unrolls every loop over range() with constant bounds (up to its
// max_unroll; a loop with wp.static() in it always), and each copy of the
// body sees the index as a constant: `for i in range(len(t)): s += t[i]`
// works there. warpd unrolls where it changes what a program means: the
// body indexes a tuple (a local or parameter of tuple type) with the loop
// variable. The bounds must be constants here: integer literals or len() of
// a value whose length its type fixes (a tuple, vector, matrix, quaternion
// or transformation; wp.static(len(t)) of a local reaches the daemon as
// len(t)). The copies are the client's statements again, each preceded by
// `i = k` (after the loop i keeps its last value, as in Python), with every
// read of i in them replaced by the constant k of the range's type.
#include <cstdint>
#include <optional>

#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

using ir::Block;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;
using ir::TypeRef;

namespace {

// Copies of a body at most; a longer loop stays a loop (and t[i] an error).
constexpr int64_t kMaxUnrolledIterations = 1024;

// The value of a range() argument analysed already, if sema knows it.
std::optional<int64_t> ConstantInt(const Expr& e) {
  if (e.kind == ExprKind::Constant) {
    const int64_t* v = std::get_if<int64_t>(&e.value);
    if (!v || (e.const_dtype && !types::IsInteger(*e.const_dtype))) return std::nullopt;
    return *v;
  }
  if (e.kind == ExprKind::Unary && e.unary_op == ir::UnaryOp::kNeg) {
    auto v = ConstantInt(*e.operands[0]);
    if (!v || *v == INT64_MIN) return std::nullopt;
    return -*v;
  }
  if (e.kind == ExprKind::Call && e.overload && e.overload->form == builtins::Form::kLen && e.operands.size() == 1) {
    TypeRef t = e.operands[0]->type;
    if (!t) return std::nullopt;
    if (t->is_tuple()) return static_cast<int64_t>(t->elements().size());
    if (t->is_vector()) return t->length();
    if (t->is_matrix()) return t->rows();
    if (t->is_quat()) return 4;
    if (t->is_transform()) return 7;
  }
  return std::nullopt;
}

bool IsName(const Expr* e, const std::string& name) {
  return e && e->kind == ExprKind::Name && e->name == name;
}

// Whether a range() argument may be a constant: only these are analysed
// before the loop's own analysis (analysing has effects: callees, limits).
bool MaybeConstant(const Expr& e) {
  if (e.kind == ExprKind::Constant) return true;
  if (e.kind == ExprKind::Unary && e.unary_op == ir::UnaryOp::kNeg) return MaybeConstant(*e.operands[0]);
  return e.kind == ExprKind::Call && e.callee_kind == ir::CalleeKind::kBuiltin &&
         (e.name == "len" || e.name == "wp.len") && e.keywords.empty() && e.operands.size() == 1 &&
         e.operands[0]->kind == ExprKind::Name;
}

// Whether `e` holds t[..., var, ...] with t a local of tuple type.
template <typename IsTupleLocal>
bool IndexesTuple(const Expr& e, const std::string& var, const IsTupleLocal& is_tuple) {
  if (e.kind == ExprKind::Subscript && e.operands[0]->kind == ExprKind::Name && is_tuple(e.operands[0]->name))
    for (size_t k = 1; k < e.operands.size(); ++k)
      if (IsName(e.operands[k].get(), var)) return true;
  for (const auto& o : e.operands)
    if (IndexesTuple(*o, var, is_tuple)) return true;
  return false;
}

template <typename IsTupleLocal>
bool BlockIndexesTuple(const Block& b, const std::string& var, const IsTupleLocal& is_tuple) {
  for (const auto& s : b) {
    if (s->target && IndexesTuple(*s->target, var, is_tuple)) return true;
    if (s->value && IndexesTuple(*s->value, var, is_tuple)) return true;
    if (BlockIndexesTuple(s->body, var, is_tuple) || BlockIndexesTuple(s->orelse, var, is_tuple)) return true;
  }
  return false;
}

// Whether the body assigns the loop variable (then it is no constant).
bool Writes(const Block& b, const std::string& var) {
  for (const auto& s : b) {
    const Expr* t = s->target.get();
    if ((s->kind == StmtKind::Assign || s->kind == StmtKind::AugAssign || s->kind == StmtKind::For) && t) {
      if (IsName(t, var)) return true;
      if (t->kind == ExprKind::Tuple)
        for (const auto& o : t->operands)
          if (IsName(o.get(), var)) return true;
    }
    if (Writes(s->body, var) || Writes(s->orelse, var)) return true;
  }
  return false;
}

// Whether a break or continue of this loop (not of a nested one) is in `b`.
bool Jumps(const Block& b) {
  for (const auto& s : b) {
    if (s->kind == StmtKind::Break || s->kind == StmtKind::Continue) return true;
    if (s->kind == StmtKind::If && (Jumps(s->body) || Jumps(s->orelse))) return true;
  }
  return false;
}

ir::ExprPtr IndexConstant(int64_t k, types::ScalarKind dtype, const ir::Span& span) {
  auto c = std::make_unique<Expr>();
  c->kind = ExprKind::Constant;
  c->span = span;
  c->value = k;
  c->const_dtype = dtype;
  return c;
}

void Substitute(Expr& e, const std::string& var, int64_t k, types::ScalarKind dtype) {
  if (IsName(&e, var)) {
    e = std::move(*IndexConstant(k, dtype, e.span));
    return;
  }
  for (auto& o : e.operands) Substitute(*o, var, k, dtype);
}

void SubstituteBlock(Block& b, const std::string& var, int64_t k, types::ScalarKind dtype) {
  for (auto& s : b) {
    if (s->target) Substitute(*s->target, var, k, dtype);
    if (s->value) Substitute(*s->value, var, k, dtype);
    SubstituteBlock(s->body, var, k, dtype);
    SubstituteBlock(s->orelse, var, k, dtype);
  }
}

}  // namespace

absl::StatusOr<bool> FunctionSema::Unroll(Block& b, size_t i) {
  Stmt& loop = *b[i];
  const Expr& iter = *loop.value;
  if (!loop.target || loop.target->kind != ExprKind::Name || iter.kind != ExprKind::Call ||
      iter.callee_kind != ir::CalleeKind::kBuiltin || (iter.name != "range" && iter.name != "builtins.range") ||
      !iter.keywords.empty() || iter.operands.empty() || iter.operands.size() > 3)
    return false;
  const std::string& var = loop.target->name;
  auto is_tuple = [&](const std::string& name) {
    const int l = FindLocal(name);
    return l >= 0 && f_.locals[static_cast<size_t>(l)].type && f_.locals[static_cast<size_t>(l)].type->is_tuple();
  };
  if (!BlockIndexesTuple(loop.body, var, is_tuple) || Writes(loop.body, var) || Jumps(loop.body)) return false;
  // The bounds, analysed on copies (ForSema analyses the originals when the
  // loop stays); they must be constants of one integer type.
  int64_t bounds[3] = {0, 0, 1};
  TypeRef type = nullptr;
  for (size_t k = 0; k < iter.operands.size(); ++k) {
    if (!MaybeConstant(*iter.operands[k])) return false;
    ir::ExprPtr copy = ir::CopyExpr(*iter.operands[k]);
    if (!ExprSema(*copy).ok() || !copy->type->is_int() || (type && !types::SameType(type, copy->type))) return false;
    type = copy->type;
    auto v = ConstantInt(*copy);
    if (!v) return false;
    bounds[iter.operands.size() == 1 ? 1 : k] = *v;
  }
  if (bounds[2] == 0) return false;  // ForSema's (and range()'s) error
  std::vector<int64_t> values;
  for (int64_t v = bounds[0]; bounds[2] > 0 ? v < bounds[1] : v > bounds[1];) {
    if (static_cast<int64_t>(values.size()) >= kMaxUnrolledIterations) return false;
    values.push_back(v);
    if (__builtin_add_overflow(v, bounds[2], &v)) break;  // past the end
  }
  Block out;
  for (int64_t v : values) {
    auto set = std::make_unique<Stmt>();
    set->kind = StmtKind::Assign;
    set->span = loop.target->span;
    set->target = ir::CopyExpr(*loop.target);
    set->value = IndexConstant(v, type->scalar(), loop.target->span);
    out.push_back(std::move(set));
    Block body = ir::CopyStatements(loop.body);
    SubstituteBlock(body, var, v, type->scalar());
    for (auto& s : body) out.push_back(std::move(s));
  }
  if (out.empty()) {  // an empty range: nothing runs
    auto pass = std::make_unique<Stmt>();
    pass->kind = StmtKind::Pass;
    pass->span = loop.span;
    out.push_back(std::move(pass));
  }
  b.erase(b.begin() + static_cast<ptrdiff_t>(i));
  b.insert(b.begin() + static_cast<ptrdiff_t>(i), std::make_move_iterator(out.begin()),
           std::make_move_iterator(out.end()));
  return true;
}

}  // namespace warpd::sema::internal
