// Test-only helpers that build warpd.v1 IR protos compactly, the way the
// Python client would emit them. Every node gets file "test.py" and the line
// passed in (or the builder's current line).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "warpd/v1/ir.pb.h"

namespace warpd::testing {

using v1::Expr;
using v1::Stmt;

inline v1::SourceSpan Span(int line) {
  v1::SourceSpan s;
  s.set_file("test.py");
  s.set_line(line);
  s.set_col(1);
  return s;
}

inline v1::TypeRef Scalar(v1::ScalarType t) {
  v1::TypeRef r;
  r.set_scalar(t);
  return r;
}
inline v1::TypeRef F32() { return Scalar(v1::SCALAR_FLOAT32); }
inline v1::TypeRef I32() { return Scalar(v1::SCALAR_INT32); }
inline v1::TypeRef Vec(int n, v1::ScalarType t = v1::SCALAR_FLOAT32) {
  v1::TypeRef r;
  r.mutable_vector()->set_length(n);
  r.mutable_vector()->set_dtype(t);
  return r;
}
inline v1::TypeRef Mat(int rows, int cols, v1::ScalarType t = v1::SCALAR_FLOAT32) {
  v1::TypeRef r;
  r.mutable_matrix()->set_rows(rows);
  r.mutable_matrix()->set_cols(cols);
  r.mutable_matrix()->set_dtype(t);
  return r;
}
// typing.Any (a generic @wp.func parameter).
inline v1::TypeRef AnyT() {
  v1::TypeRef r;
  r.mutable_any();
  return r;
}
inline v1::TypeRef Arr(v1::TypeRef dtype, int ndim = 1) {
  v1::TypeRef r;
  *r.mutable_array()->mutable_dtype() = std::move(dtype);
  r.mutable_array()->set_ndim(ndim);
  return r;
}

inline Expr Name(const std::string& id, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_name()->set_id(id);
  return e;
}
inline Expr Int(int64_t v, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_constant()->set_int_value(v);
  return e;
}
inline Expr Float(double v, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_constant()->set_float_value(v);
  return e;
}
inline Expr Bin(v1::BinaryOperator op, Expr a, Expr b, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_binary()->set_op(op);
  *e.mutable_binary()->mutable_left() = std::move(a);
  *e.mutable_binary()->mutable_right() = std::move(b);
  return e;
}
inline Expr Cmp(v1::CompareOperator op, Expr a, Expr b, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  *e.mutable_compare()->mutable_left() = std::move(a);
  e.mutable_compare()->add_ops(op);
  *e.mutable_compare()->add_comparators() = std::move(b);
  return e;
}
inline Expr Call(const std::string& callee, std::vector<Expr> args, int line = 1,
                 v1::CalleeKind kind = v1::CALLEE_BUILTIN) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_call()->set_callee(callee);
  e.mutable_call()->set_kind(kind);
  for (auto& a : args) *e.mutable_call()->add_args() = std::move(a);
  return e;
}
// A call as the user wrote it, when that differs from the callee ("wp.f").
inline Expr Written(Expr call, const std::string& written) {
  call.mutable_call()->set_written(written);
  return call;
}
inline Expr Sub(Expr value, std::vector<Expr> idx, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  *e.mutable_subscript()->mutable_value() = std::move(value);
  for (auto& i : idx) *e.mutable_subscript()->add_indices() = std::move(i);
  return e;
}
// a:b:c in a subscript: the builtin slice() with the given bounds as keywords.
inline Expr Slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step = {},
                  int line = 1) {
  Expr e = Call("slice", {}, line);
  const std::pair<const char*, std::optional<int64_t>> parts[] = {{"start", start}, {"stop", stop}, {"step", step}};
  for (const auto& [name, v] : parts) {
    if (!v) continue;
    v1::Keyword* k = e.mutable_call()->add_keywords();
    k->set_name(name);
    Expr& x = *k->mutable_value();
    *x.mutable_span() = Span(line);
    if (*v < 0) {
      x.mutable_unary()->set_op(v1::UNARY_NEG);
      *x.mutable_unary()->mutable_operand() = Int(-*v, line);
    } else {
      x = Int(*v, line);
    }
  }
  return e;
}
inline Expr Attr(Expr value, const std::string& attr, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  *e.mutable_attribute()->mutable_value() = std::move(value);
  e.mutable_attribute()->set_attr(attr);
  return e;
}
inline Expr BoolOp(v1::BoolOperator op, std::vector<Expr> values, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_bool_op()->set_op(op);
  for (auto& v : values) *e.mutable_bool_op()->add_values() = std::move(v);
  return e;
}
inline Expr IfExp(Expr test, Expr body, Expr orelse, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  *e.mutable_if_exp()->mutable_test() = std::move(test);
  *e.mutable_if_exp()->mutable_body() = std::move(body);
  *e.mutable_if_exp()->mutable_orelse() = std::move(orelse);
  return e;
}
// a op1 b op2 c ...: `ops` and `comparators` pair up.
inline Expr CmpChain(Expr left, std::vector<v1::CompareOperator> ops, std::vector<Expr> comparators, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  *e.mutable_compare()->mutable_left() = std::move(left);
  for (auto op : ops) e.mutable_compare()->add_ops(op);
  for (auto& c : comparators) *e.mutable_compare()->add_comparators() = std::move(c);
  return e;
}
inline Expr TupleOf(std::vector<Expr> elts, int line = 1) {
  Expr e;
  *e.mutable_span() = Span(line);
  for (auto& x : elts) *e.mutable_tuple()->add_elements() = std::move(x);
  return e;
}

inline Stmt Assign(Expr target, Expr value, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_assign()->mutable_target() = std::move(target);
  *s.mutable_assign()->mutable_value() = std::move(value);
  return s;
}
inline Stmt AugAssign(Expr target, v1::BinaryOperator op, Expr value, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_aug_assign()->mutable_target() = std::move(target);
  s.mutable_aug_assign()->set_op(op);
  *s.mutable_aug_assign()->mutable_value() = std::move(value);
  return s;
}
inline Stmt If(Expr test, std::vector<Stmt> body, std::vector<Stmt> orelse = {}, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_if_stmt()->mutable_test() = std::move(test);
  for (auto& b : body) *s.mutable_if_stmt()->add_body() = std::move(b);
  for (auto& b : orelse) *s.mutable_if_stmt()->add_orelse() = std::move(b);
  return s;
}
inline Stmt For(const std::string& var, std::vector<Expr> range_args, std::vector<Stmt> body, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_for_stmt()->mutable_target() = Name(var, line);
  *s.mutable_for_stmt()->mutable_iter() = Call("range", std::move(range_args), line);
  for (auto& b : body) *s.mutable_for_stmt()->add_body() = std::move(b);
  return s;
}
inline Stmt While(Expr test, std::vector<Stmt> body, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_while_stmt()->mutable_test() = std::move(test);
  for (auto& b : body) *s.mutable_while_stmt()->add_body() = std::move(b);
  return s;
}
inline Stmt Return(Expr value, int line = 1) {
  Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_return_stmt()->mutable_value() = std::move(value);
  return s;
}

struct P {
  std::string name;
  v1::TypeRef type;
};

inline v1::Function Fn(const std::string& name, v1::FunctionKind kind, std::vector<P> params, std::vector<Stmt> body,
                       int line = 1) {
  v1::Function f;
  f.set_name(name);
  f.set_kind(kind);
  *f.mutable_span() = Span(line);
  for (auto& p : params) {
    auto* q = f.add_params();
    q->set_name(p.name);
    *q->mutable_type() = p.type;
    *q->mutable_span() = Span(line);
  }
  for (auto& s : body) *f.add_body() = std::move(s);
  return f;
}
inline v1::Function Kernel(const std::string& name, std::vector<P> params, std::vector<Stmt> body, int line = 1) {
  return Fn(name, v1::FUNCTION_KERNEL, std::move(params), std::move(body), line);
}
inline v1::Function Func(const std::string& name, std::vector<P> params, std::vector<Stmt> body, int line = 1) {
  return Fn(name, v1::FUNCTION_FUNC, std::move(params), std::move(body), line);
}

// An overload of `set`: a @wp.func defined again with other parameter types.
inline v1::Function Overload(v1::Function f, const std::string& set) {
  f.set_overload_set(set);
  return f;
}

inline v1::Module ModuleOf(std::vector<v1::Function> fns, const std::string& name = "test") {
  v1::Module m;
  m.set_name(name);
  for (auto& f : fns) *m.add_functions() = std::move(f);
  return m;
}

}  // namespace warpd::testing
