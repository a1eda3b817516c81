// The IR builder (include/warpd/client/ir.h): plain construction of
// warpd.v1 messages, shaped as the Python front end shapes them.
#include "warpd/client/ir.h"

namespace warpd::ir {
namespace {

// Gives every expression of `e` without a span the span `span` (expressions
// are built before the statement that knows the caller's line).
void FillSpans(v1::Expr* e, const v1::SourceSpan& span);

void FillAll(google::protobuf::RepeatedPtrField<v1::Expr>* es, const v1::SourceSpan& span) {
  for (auto& e : *es) FillSpans(&e, span);
}

void FillSpans(v1::Expr* e, const v1::SourceSpan& span) {
  if (!e->has_span()) *e->mutable_span() = span;
  switch (e->kind_case()) {
    case v1::Expr::kBinary:
      FillSpans(e->mutable_binary()->mutable_left(), span);
      FillSpans(e->mutable_binary()->mutable_right(), span);
      break;
    case v1::Expr::kUnary: FillSpans(e->mutable_unary()->mutable_operand(), span); break;
    case v1::Expr::kCompare:
      FillSpans(e->mutable_compare()->mutable_left(), span);
      FillAll(e->mutable_compare()->mutable_comparators(), span);
      break;
    case v1::Expr::kBoolOp: FillAll(e->mutable_bool_op()->mutable_values(), span); break;
    case v1::Expr::kCall:
      FillAll(e->mutable_call()->mutable_args(), span);
      for (auto& k : *e->mutable_call()->mutable_keywords()) FillSpans(k.mutable_value(), span);
      break;
    case v1::Expr::kSubscript:
      FillSpans(e->mutable_subscript()->mutable_value(), span);
      FillAll(e->mutable_subscript()->mutable_indices(), span);
      break;
    case v1::Expr::kAttribute: FillSpans(e->mutable_attribute()->mutable_value(), span); break;
    case v1::Expr::kIfExp:
      FillSpans(e->mutable_if_exp()->mutable_test(), span);
      FillSpans(e->mutable_if_exp()->mutable_body(), span);
      FillSpans(e->mutable_if_exp()->mutable_orelse(), span);
      break;
    case v1::Expr::kTuple: FillAll(e->mutable_tuple()->mutable_elements(), span); break;
    default: break;
  }
}

v1::SourceSpan SpanOf(const std::source_location& loc) {
  v1::SourceSpan s;
  s.set_file(loc.file_name());
  s.set_line(static_cast<int32_t>(loc.line()));
  s.set_col(loc.column() > 0 ? static_cast<int32_t>(loc.column()) : 1);
  return s;
}

Expr Compare(v1::CompareOperator op, const Expr& a, const Expr& b) {
  v1::Expr e;
  auto* c = e.mutable_compare();
  *c->mutable_left() = a.proto();
  c->add_ops(op);
  *c->add_comparators() = b.proto();
  return Expr(std::move(e));
}

Expr BoolOp(v1::BoolOperator op, const Expr& a, const Expr& b) {
  v1::Expr e;
  auto* c = e.mutable_bool_op();
  c->set_op(op);
  *c->add_values() = a.proto();
  *c->add_values() = b.proto();
  return Expr(std::move(e));
}

Expr Unary(v1::UnaryOperator op, const Expr& a) {
  v1::Expr e;
  e.mutable_unary()->set_op(op);
  *e.mutable_unary()->mutable_operand() = a.proto();
  return Expr(std::move(e));
}

}  // namespace

// ------------------------------------------------------------------ types

Type Scalar(v1::ScalarType scalar) {
  v1::TypeRef t;
  t.set_scalar(scalar);
  return Type(std::move(t));
}
Type Bool() { return Scalar(v1::SCALAR_BOOL); }
Type Int8() { return Scalar(v1::SCALAR_INT8); }
Type UInt8() { return Scalar(v1::SCALAR_UINT8); }
Type Int16() { return Scalar(v1::SCALAR_INT16); }
Type UInt16() { return Scalar(v1::SCALAR_UINT16); }
Type Int32() { return Scalar(v1::SCALAR_INT32); }
Type UInt32() { return Scalar(v1::SCALAR_UINT32); }
Type Int64() { return Scalar(v1::SCALAR_INT64); }
Type UInt64() { return Scalar(v1::SCALAR_UINT64); }
Type Float16() { return Scalar(v1::SCALAR_FLOAT16); }
Type Float32() { return Scalar(v1::SCALAR_FLOAT32); }
Type Float64() { return Scalar(v1::SCALAR_FLOAT64); }

Type Vec(int length, const Type& scalar) {
  v1::TypeRef t;
  t.mutable_vector()->set_length(static_cast<uint32_t>(length));
  t.mutable_vector()->set_dtype(scalar.proto().scalar());
  return Type(std::move(t));
}

Type Mat(int rows, int cols, const Type& scalar) {
  v1::TypeRef t;
  t.mutable_matrix()->set_rows(static_cast<uint32_t>(rows));
  t.mutable_matrix()->set_cols(static_cast<uint32_t>(cols));
  t.mutable_matrix()->set_dtype(scalar.proto().scalar());
  return Type(std::move(t));
}

Type Quat(const Type& scalar) {
  v1::TypeRef t;
  t.mutable_quat()->set_dtype(scalar.proto().scalar());
  return Type(std::move(t));
}

Type Transform(const Type& scalar) {
  v1::TypeRef t;
  t.mutable_transform()->set_dtype(scalar.proto().scalar());
  return Type(std::move(t));
}

Type ArrayOf(const Type& dtype, int ndim) {
  v1::TypeRef t;
  *t.mutable_array()->mutable_dtype() = dtype.proto();
  t.mutable_array()->set_ndim(static_cast<uint32_t>(ndim));
  return Type(std::move(t));
}

Type Struct(std::string name, std::vector<std::pair<std::string, Type>> members) {
  v1::TypeRef t;
  auto* s = t.mutable_struct_type();
  s->set_display_name(name);
  s->set_name(std::move(name));
  for (auto& [member, type] : members) {
    auto* m = s->add_members();
    m->set_name(member);
    *m->mutable_type() = type.proto();
  }
  return Type(std::move(t));
}

// --------------------------------------------------------------- expressions

Expr::Expr(int v) { e_.mutable_constant()->set_int_value(v); }
Expr::Expr(int64_t v) { e_.mutable_constant()->set_int_value(v); }
Expr::Expr(double v) { e_.mutable_constant()->set_float_value(v); }
Expr::Expr(float v) { e_.mutable_constant()->set_float_value(v); }
Expr::Expr(bool v) { e_.mutable_constant()->set_bool_value(v); }

Expr Expr::operator[](const Expr& index) const { return Index({index}); }

Expr Expr::Index(std::initializer_list<Expr> indices) const {
  v1::Expr e;
  auto* s = e.mutable_subscript();
  *s->mutable_value() = e_;
  for (const Expr& i : indices) *s->add_indices() = i.proto();
  return Expr(std::move(e));
}

Expr Expr::Attr(std::string_view name) const {
  v1::Expr e;
  *e.mutable_attribute()->mutable_value() = e_;
  e.mutable_attribute()->set_attr(std::string(name));
  return Expr(std::move(e));
}

Expr Name(std::string_view id) {
  v1::Expr e;
  e.mutable_name()->set_id(std::string(id));
  return Expr(std::move(e));
}

Expr FloatLit(double value, const Type& scalar) {
  v1::Expr e;
  e.mutable_constant()->set_float_value(value);
  e.mutable_constant()->set_dtype(scalar.proto().scalar());
  return Expr(std::move(e));
}

Expr IntLit(int64_t value, const Type& scalar) {
  v1::Expr e;
  e.mutable_constant()->set_int_value(value);
  e.mutable_constant()->set_dtype(scalar.proto().scalar());
  return Expr(std::move(e));
}

Expr TypeValue(const Type& type) {
  v1::Expr e;
  *e.mutable_type_value() = type.proto();
  return Expr(std::move(e));
}

Expr Call(std::string_view builtin, std::vector<Expr> args, std::vector<std::pair<std::string, Expr>> keywords) {
  v1::Expr e;
  auto* c = e.mutable_call();
  c->set_callee(std::string(builtin));
  c->set_kind(v1::CALLEE_BUILTIN);
  for (Expr& a : args) *c->add_args() = std::move(a.mutable_proto());
  for (auto& [name, value] : keywords) {
    auto* k = c->add_keywords();
    k->set_name(name);
    *k->mutable_value() = std::move(value.mutable_proto());
  }
  return Expr(std::move(e));
}

Expr Call(const FunctionBuilder& function, std::vector<Expr> args) {
  v1::Expr e;
  auto* c = e.mutable_call();
  c->set_callee(function.name());
  c->set_kind(v1::CALLEE_FUNCTION);
  for (Expr& a : args) *c->add_args() = std::move(a.mutable_proto());
  return Expr(std::move(e));
}

Expr Tid() { return Call("tid"); }

Expr Binary(v1::BinaryOperator op, const Expr& a, const Expr& b) {
  v1::Expr e;
  auto* bin = e.mutable_binary();
  bin->set_op(op);
  *bin->mutable_left() = a.proto();
  *bin->mutable_right() = b.proto();
  return Expr(std::move(e));
}

Expr operator+(const Expr& a, const Expr& b) { return Binary(v1::BINOP_ADD, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return Binary(v1::BINOP_SUB, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return Binary(v1::BINOP_MUL, a, b); }
Expr operator/(const Expr& a, const Expr& b) { return Binary(v1::BINOP_DIV, a, b); }
Expr operator%(const Expr& a, const Expr& b) { return Binary(v1::BINOP_MOD, a, b); }
Expr operator-(const Expr& a) { return Unary(v1::UNARY_NEG, a); }
Expr FloorDiv(const Expr& a, const Expr& b) { return Binary(v1::BINOP_FLOOR_DIV, a, b); }
Expr Pow(const Expr& a, const Expr& b) { return Binary(v1::BINOP_POW, a, b); }
Expr BitAnd(const Expr& a, const Expr& b) { return Binary(v1::BINOP_BIT_AND, a, b); }
Expr BitOr(const Expr& a, const Expr& b) { return Binary(v1::BINOP_BIT_OR, a, b); }
Expr BitXor(const Expr& a, const Expr& b) { return Binary(v1::BINOP_BIT_XOR, a, b); }
Expr Shl(const Expr& a, const Expr& b) { return Binary(v1::BINOP_LSHIFT, a, b); }
Expr Shr(const Expr& a, const Expr& b) { return Binary(v1::BINOP_RSHIFT, a, b); }
Expr MatMul(const Expr& a, const Expr& b) { return Binary(v1::BINOP_MATMUL, a, b); }

Expr operator<(const Expr& a, const Expr& b) { return Compare(v1::CMP_LT, a, b); }
Expr operator<=(const Expr& a, const Expr& b) { return Compare(v1::CMP_LE, a, b); }
Expr operator>(const Expr& a, const Expr& b) { return Compare(v1::CMP_GT, a, b); }
Expr operator>=(const Expr& a, const Expr& b) { return Compare(v1::CMP_GE, a, b); }
Expr Eq(const Expr& a, const Expr& b) { return Compare(v1::CMP_EQ, a, b); }
Expr Ne(const Expr& a, const Expr& b) { return Compare(v1::CMP_NE, a, b); }
Expr And(const Expr& a, const Expr& b) { return BoolOp(v1::BOOL_AND, a, b); }
Expr Or(const Expr& a, const Expr& b) { return BoolOp(v1::BOOL_OR, a, b); }
Expr Not(const Expr& a) { return Unary(v1::UNARY_NOT, a); }

Expr Select(const Expr& test, const Expr& body, const Expr& orelse) {
  v1::Expr e;
  auto* x = e.mutable_if_exp();
  *x->mutable_test() = test.proto();
  *x->mutable_body() = body.proto();
  *x->mutable_orelse() = orelse.proto();
  return Expr(std::move(e));
}

Expr Tuple(std::vector<Expr> elements) {
  v1::Expr e;
  for (Expr& x : elements) *e.mutable_tuple()->add_elements() = std::move(x.mutable_proto());
  return Expr(std::move(e));
}

// ----------------------------------------------------------------- functions

FunctionBuilder::FunctionBuilder(std::string name, v1::FunctionKind kind, Loc loc) {
  fn_.set_display_name(name);
  fn_.set_name(std::move(name));
  fn_.set_kind(kind);
  *fn_.mutable_span() = SpanOf(loc);
  blocks_.push_back(fn_.mutable_body());
}

Expr FunctionBuilder::Param(std::string_view name, const Type& type, Loc loc) {
  auto* p = fn_.add_params();
  p->set_name(std::string(name));
  *p->mutable_type() = type.proto();
  *p->mutable_span() = SpanOf(loc);
  return ir::Name(name);
}

FunctionBuilder& FunctionBuilder::Returns(const Type& type) {
  *fn_.mutable_return_type() = type.proto();
  return *this;
}

v1::Stmt* FunctionBuilder::NewStmt(Loc loc) {
  v1::Stmt* s = blocks_.back()->Add();
  *s->mutable_span() = SpanOf(loc);
  return s;
}

void FunctionBuilder::Nested(google::protobuf::RepeatedPtrField<v1::Stmt>* block, const std::function<void()>& body) {
  blocks_.push_back(block);
  if (body) body();
  blocks_.pop_back();
}

Expr FunctionBuilder::Let(std::string_view name, const Expr& value, Loc loc) {
  Expr target = ir::Name(name);
  Assign(target, value, loc);
  return target;
}

void FunctionBuilder::Assign(const Expr& target, const Expr& value, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* a = s->mutable_assign();
  *a->mutable_target() = target.proto();
  *a->mutable_value() = value.proto();
  FillSpans(a->mutable_target(), s->span());
  FillSpans(a->mutable_value(), s->span());
}

void FunctionBuilder::AugAssign(const Expr& target, v1::BinaryOperator op, const Expr& value, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* a = s->mutable_aug_assign();
  *a->mutable_target() = target.proto();
  a->set_op(op);
  *a->mutable_value() = value.proto();
  FillSpans(a->mutable_target(), s->span());
  FillSpans(a->mutable_value(), s->span());
}

void FunctionBuilder::AddAssign(const Expr& target, const Expr& value, Loc loc) {
  AugAssign(target, v1::BINOP_ADD, value, loc);
}

void FunctionBuilder::SubAssign(const Expr& target, const Expr& value, Loc loc) {
  AugAssign(target, v1::BINOP_SUB, value, loc);
}

void FunctionBuilder::Eval(const Expr& value, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  *s->mutable_expr()->mutable_value() = value.proto();
  FillSpans(s->mutable_expr()->mutable_value(), s->span());
}

void FunctionBuilder::If(const Expr& test, const std::function<void()>& body, const std::function<void()>& orelse,
                         Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* x = s->mutable_if_stmt();
  *x->mutable_test() = test.proto();
  FillSpans(x->mutable_test(), s->span());
  Nested(x->mutable_body(), body);
  Nested(x->mutable_orelse(), orelse);
}

void FunctionBuilder::For(std::string_view var, const Expr& start, const Expr& stop, const Expr& step,
                          const std::function<void(const Expr&)>& body, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* x = s->mutable_for_stmt();
  Expr target = ir::Name(var);
  *x->mutable_target() = target.proto();
  *x->mutable_iter() = Call("range", {start, stop, step}).proto();
  FillSpans(x->mutable_target(), s->span());
  FillSpans(x->mutable_iter(), s->span());
  Nested(x->mutable_body(), [&] { body(target); });
}

void FunctionBuilder::For(std::string_view var, const Expr& stop, const std::function<void(const Expr&)>& body,
                          Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* x = s->mutable_for_stmt();
  Expr target = ir::Name(var);
  *x->mutable_target() = target.proto();
  *x->mutable_iter() = Call("range", {stop}).proto();
  FillSpans(x->mutable_target(), s->span());
  FillSpans(x->mutable_iter(), s->span());
  Nested(x->mutable_body(), [&] { body(target); });
}

void FunctionBuilder::While(const Expr& test, const std::function<void()>& body, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  auto* x = s->mutable_while_stmt();
  *x->mutable_test() = test.proto();
  FillSpans(x->mutable_test(), s->span());
  Nested(x->mutable_body(), body);
}

void FunctionBuilder::Return(const Expr& value, Loc loc) {
  v1::Stmt* s = NewStmt(loc);
  *s->mutable_return_stmt()->mutable_value() = value.proto();
  FillSpans(s->mutable_return_stmt()->mutable_value(), s->span());
}

void FunctionBuilder::Return(Loc loc) { NewStmt(loc)->mutable_return_stmt(); }
void FunctionBuilder::Break(Loc loc) { NewStmt(loc)->mutable_break_stmt(); }
void FunctionBuilder::Continue(Loc loc) { NewStmt(loc)->mutable_continue_stmt(); }

ModuleBuilder::ModuleBuilder(std::string name) { module_.set_name(std::move(name)); }

ModuleBuilder& ModuleBuilder::Add(const FunctionBuilder& function) {
  *module_.add_functions() = function.proto();
  return *this;
}

ModuleBuilder& ModuleBuilder::Backward(bool on) {
  module_.set_backward(on);
  return *this;
}

}  // namespace warpd::ir
