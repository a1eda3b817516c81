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

}  // namespace warpd::ir
