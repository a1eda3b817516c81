#include "compiler/ir/ir.h"

namespace warpd::ir {

const char* ExprKindName(ExprKind k) {
  switch (k) {
#define X(n)        \
  case ExprKind::n: \
    return #n;
    WARPD_EXPR_KINDS(X)
#undef X
  }
  return "?";
}

const char* StmtKindName(StmtKind k) {
  switch (k) {
#define X(n)        \
  case StmtKind::n: \
    return #n;
    WARPD_STMT_KINDS(X)
#undef X
  }
  return "?";
}

const char* BinaryOpSymbol(BinaryOp op) {
  static const char* kSymbols[] = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "@"};
  return kSymbols[static_cast<int>(op)];
}

const char* UnaryOpSymbol(UnaryOp op) {
  static const char* kSymbols[] = {"-", "+", "not", "~"};
  return kSymbols[static_cast<int>(op)];
}

const char* CompareOpSymbol(CompareOp op) {
  static const char* kSymbols[] = {"==", "!=", "<", "<=", ">", ">="};
  return kSymbols[static_cast<int>(op)];
}

std::string Module::Where(const Span& s) const {
  return FileOf(s) + ":" + std::to_string(s.line) + ":" + std::to_string(s.col);
}

ExprPtr CopyExpr(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->span = e.span;
  c->name = e.name;
  for (const auto& o : e.operands) c->operands.push_back(CopyExpr(*o));
  c->keywords = e.keywords;
  c->value = e.value;
  c->const_dtype = e.const_dtype;
  c->binary_op = e.binary_op;
  c->unary_op = e.unary_op;
  c->compare_ops = e.compare_ops;
  c->bool_op = e.bool_op;
  c->callee_kind = e.callee_kind;
  c->type_value = e.type_value;
  c->user_function = e.user_function;
  c->written = e.written;
  c->grad = e.grad;
  return c;
}

namespace {

Block CopyBlock(const Block& b);

StmtPtr CopyStmt(const Stmt& s) {
  auto c = std::make_unique<Stmt>();
  c->kind = s.kind;
  c->span = s.span;
  if (s.target) c->target = CopyExpr(*s.target);
  if (s.value) c->value = CopyExpr(*s.value);
  c->binary_op = s.binary_op;
  c->user_function = s.user_function;
  c->annotation = s.annotation;
  c->body = CopyBlock(s.body);
  c->orelse = CopyBlock(s.orelse);
  return c;
}

Block CopyBlock(const Block& b) {
  Block out;
  out.reserve(b.size());
  for (const auto& s : b) out.push_back(CopyStmt(*s));
  return out;
}

}  // namespace

Block CopyStatements(const Block& b) { return CopyBlock(b); }

Function CopyForInstance(const Function& f) {
  Function c;
  c.name = f.name;
  c.display_name = f.display_name;
  c.overload_set = f.overload_set;
  c.kind = f.kind;
  c.params = f.params;
  c.declared_return = f.declared_return;
  c.return_annotation = f.return_annotation;
  c.body = CopyBlock(f.body);
  c.span = f.span;
  return c;
}

}  // namespace warpd::ir
