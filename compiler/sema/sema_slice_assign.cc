// Semantic analysis: assignment to a slice of a value's components
// (v[1:] = w, q[::2] += w, m[:2, 1:] = n, m[1:, 0] -= w), as Warp 1.19 does
// it: the value must be a vector of the slice's length (a matrix of its
// shape for a 2-D slice of a matrix) with the owner's dtype; Warp does not
// broadcast a scalar. The mistakes raise ValueError with Warp's wording,
// when the module is built (Warp: at codegen, on the launch).
#include "common/str_cat.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema::internal {

using ir::Expr;
using ir::TypeRef;

namespace {

std::string Shape(TypeRef m) { return Cat("(", m->rows(), ", ", m->cols(), ")"); }

}  // namespace

absl::Status FunctionSema::CheckSliceValue(const Expr& target, TypeRef value, const ir::Span& span) {
  const TypeRef slice = target.type;
  const std::string dtype(types::ScalarName(target.operands[0]->type->scalar()));
  const auto err = [&](std::string msg) { return Err(span, msg, ir::ErrorCategory::kValue); };
  if (slice->is_vector()) {
    const int n = slice->length();
    if (!value->is_vector())
      return err(Cat("The provided value is expected to be a vector of length ", n, ", with dtype ", dtype, "."));
    if (value->scalar() != slice->scalar())
      return err(Cat("The provided vector is expected to be of length ", n, " with dtype ", dtype, "."));
    if (value->length() != n)
      return err(Cat("The length of the provided vector (", value->length(),
                     ") isn't compatible with the given slice (expected ", n, ")."));
    return absl::OkStatus();
  }
  if (!value->is_matrix())
    return err(Cat("The provided value is expected to be a matrix of shape ", Shape(slice), ", with dtype ", dtype, "."));
  if (value->scalar() != slice->scalar())
    return err(Cat("The provided matrix is expected to be of shape ", Shape(slice), " with dtype ", dtype, "."));
  if (value->rows() != slice->rows() || value->cols() != slice->cols())
    return err(Cat("The shape of the provided matrix (", Shape(value), ") isn't compatible with the given slice (expected ",
                   Shape(slice), ")."));
  return absl::OkStatus();
}

absl::Status FunctionSema::SliceAssign(ir::Stmt& s) {
  Expr& target = *s.target;
  SEMA_TRY(CheckPlace(*target.operands[0], s.span));
  return CheckSliceValue(target, s.value->type, s.span);
}

absl::Status FunctionSema::SliceAugAssign(ir::Stmt& s) {
  Expr& target = *s.target;
  SEMA_TRY(CheckPlace(*target.operands[0], s.span));
  const bool in_place = s.binary_op == ir::BinaryOp::kAdd || s.binary_op == ir::BinaryOp::kSub;
  // Warp: += and -= add the value in place (its rules are the assignment's);
  // any other operator computes slice op value and assigns the result.
  if (in_place) SEMA_TRY(CheckSliceValue(target, s.value->type, s.span));
  TypeRef args[2] = {target.type, s.value->type};
  auto r = builtins::Resolve(builtins::Lookup(builtins::BinaryOpBuiltin(s.binary_op)), args, table());
  if (!r)
    return Err(s.span, Cat("unsupported operand types for ", ir::BinaryOpSymbol(s.binary_op), "=: ",
                           target.type->ToString(), " and ", s.value->type->ToString(),
                           " (Warp does not convert implicitly)"),
               ir::ErrorCategory::kType);
  if (!in_place) SEMA_TRY(CheckSliceValue(target, r->result, s.span));
  s.overload = r->overload;
  s.callee = r->cpp;
  return absl::OkStatus();
}

}  // namespace warpd::sema::internal
