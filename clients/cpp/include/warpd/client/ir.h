// A builder for kernel IR (proto/warpd/v1/ir.proto) in C++: the same
// warpd.v1.Module the Python front end emits for a @wp.kernel, written with
// C++ expressions instead of parsed from Python source.
//
//   namespace ir = warpd::ir;
//   ir::KernelBuilder k("saxpy");
//   ir::Expr a = k.Param("a", ir::Float32());
//   ir::Expr x = k.Param("x", ir::ArrayOf(ir::Float32()));
//   ir::Expr y = k.Param("y", ir::ArrayOf(ir::Float32()));
//   ir::Expr i = k.Let("i", ir::Tid());
//   k.Assign(y[i], a * x[i] + y[i]);
//   warpd::v1::Module m = ir::ModuleBuilder("saxpy").Add(k).Build();
//
// Literals follow Warp's rules: a C++ int is an int32 literal, a double a
// float32 literal (as a Python float in a kernel); FloatLit/IntLit give another
// type. Statements record the C++ file and line that added them
// (std::source_location), so the daemon's diagnostics and runtime faults name
// the line of the builder call. Nothing is checked here: the daemon
// type-checks the module when it is loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "warpd/v1/ir.pb.h"

namespace warpd::ir {

// ------------------------------------------------------------------ types

class Type {
 public:
  Type() = default;
  explicit Type(v1::TypeRef ref) : ref_(std::move(ref)) {}
  const v1::TypeRef& proto() const { return ref_; }

 private:
  v1::TypeRef ref_;
};

Type Scalar(v1::ScalarType scalar);
Type Bool();
Type Int8();
Type UInt8();
Type Int16();
Type UInt16();
Type Int32();
Type UInt32();
Type Int64();
Type UInt64();
Type Float16();
Type Float32();
Type Float64();
// vector(length, dtype): Vec(3, Float32()) is wp.vec3.
Type Vec(int length, const Type& scalar);
// matrix(rows, cols, dtype): Mat(3, 3, Float32()) is wp.mat33.
Type Mat(int rows, int cols, const Type& scalar);
Type Quat(const Type& scalar);
Type Transform(const Type& scalar);
// wp.array(dtype=dtype, ndim=ndim): kernel parameters only.
Type ArrayOf(const Type& dtype, int ndim = 1);
// A @wp.struct: `name` a C identifier unique in the module.
Type Struct(std::string name, std::vector<std::pair<std::string, Type>> members);

// --------------------------------------------------------------- expressions

class FunctionBuilder;

class Expr {
 public:
  Expr() = default;
  explicit Expr(v1::Expr e) : e_(std::move(e)) {}
  // Literals: int -> int32, double/float -> float32, bool -> bool (Warp's rules).
  Expr(int v);     // NOLINT(google-explicit-constructor)
  Expr(int64_t v); // NOLINT(google-explicit-constructor)
  Expr(double v);  // NOLINT(google-explicit-constructor)
  Expr(float v);   // NOLINT(google-explicit-constructor)
  Expr(bool v);    // NOLINT(google-explicit-constructor)

  const v1::Expr& proto() const { return e_; }
  v1::Expr& mutable_proto() { return e_; }

  // a[i], a[i, j]
  Expr operator[](const Expr& index) const;
  Expr Index(std::initializer_list<Expr> indices) const;
  // v.x, s.member
  Expr Attr(std::string_view name) const;

 private:
  v1::Expr e_;
};

// A local variable, parameter or other name in scope.
Expr Name(std::string_view id);
// Literals of an explicit scalar type: FloatLit(1.0, Float64()), IntLit(7, UInt64()).
Expr FloatLit(double value, const Type& scalar);
Expr IntLit(int64_t value, const Type& scalar);
// A type used as a value (e.g. the dtype= of a builtin).
Expr TypeValue(const Type& type);

// Calls of the daemon's builtins (docs/builtins.md): Call("sin", {x}); value
// types are built by their builtin constructors, as Python writes them:
// Call("vec3", {x, y, z}), Call("float64", {i}), Call("mat22d").
Expr Call(std::string_view builtin, std::vector<Expr> args = {},
          std::vector<std::pair<std::string, Expr>> keywords = {});
// A call of a user function of the module (FunctionBuilder::name()).
Expr Call(const FunctionBuilder& function, std::vector<Expr> args = {});
// wp.tid()
Expr Tid();

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator%(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr FloorDiv(const Expr& a, const Expr& b);
Expr Pow(const Expr& a, const Expr& b);
Expr BitAnd(const Expr& a, const Expr& b);
Expr BitOr(const Expr& a, const Expr& b);
Expr BitXor(const Expr& a, const Expr& b);
Expr Shl(const Expr& a, const Expr& b);
Expr Shr(const Expr& a, const Expr& b);
Expr MatMul(const Expr& a, const Expr& b);
Expr Binary(v1::BinaryOperator op, const Expr& a, const Expr& b);

Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr Eq(const Expr& a, const Expr& b);
Expr Ne(const Expr& a, const Expr& b);
Expr And(const Expr& a, const Expr& b);
Expr Or(const Expr& a, const Expr& b);
Expr Not(const Expr& a);
// `body if test else orelse`
Expr Select(const Expr& test, const Expr& body, const Expr& orelse);
Expr Tuple(std::vector<Expr> elements);

// ----------------------------------------------------------------- functions

// Builds one kernel or user function. Statements go to the innermost block
// being built (the bodies of If, For and While are built by their callbacks).
class FunctionBuilder {
 public:
  using Loc = std::source_location;

  FunctionBuilder(std::string name, v1::FunctionKind kind, Loc loc = Loc::current());
  // Not copied or moved: statements are added through pointers into the function.
  FunctionBuilder(const FunctionBuilder&) = delete;
  FunctionBuilder& operator=(const FunctionBuilder&) = delete;

  const std::string& name() const { return fn_.name(); }

  // Declares the next parameter; returns its name as an expression.
  Expr Param(std::string_view name, const Type& type, Loc loc = Loc::current());
  // A user function's return type (inferred from its returns when not set).
  FunctionBuilder& Returns(const Type& type);

  // name = value; returns Name(name).
  Expr Let(std::string_view name, const Expr& value, Loc loc = Loc::current());
  // target = value (a name, a[i], v.x, or a Tuple of names).
  void Assign(const Expr& target, const Expr& value, Loc loc = Loc::current());
  // target op= value (on an array element: an atomic update, as in Warp).
  void AugAssign(const Expr& target, v1::BinaryOperator op, const Expr& value, Loc loc = Loc::current());
  void AddAssign(const Expr& target, const Expr& value, Loc loc = Loc::current());
  void SubAssign(const Expr& target, const Expr& value, Loc loc = Loc::current());
  // An expression statement (a call: wp.atomic_add(...), print(...)).
  void Eval(const Expr& value, Loc loc = Loc::current());
  void If(const Expr& test, const std::function<void()>& body, const std::function<void()>& orelse = {},
          Loc loc = Loc::current());
  // for var in range(start, stop, step): body(Name(var)).
  void For(std::string_view var, const Expr& start, const Expr& stop, const Expr& step,
           const std::function<void(const Expr&)>& body, Loc loc = Loc::current());
  // for var in range(stop)
  void For(std::string_view var, const Expr& stop, const std::function<void(const Expr&)>& body,
           Loc loc = Loc::current());
  void While(const Expr& test, const std::function<void()>& body, Loc loc = Loc::current());
  void Return(const Expr& value, Loc loc = Loc::current());
  void Return(Loc loc = Loc::current());
  void Break(Loc loc = Loc::current());
  void Continue(Loc loc = Loc::current());

  // The function's IR.
  const v1::Function& proto() const { return fn_; }

 private:
  v1::Stmt* NewStmt(Loc loc);
  void Nested(google::protobuf::RepeatedPtrField<v1::Stmt>* block, const std::function<void()>& body);

  v1::Function fn_;
  std::vector<google::protobuf::RepeatedPtrField<v1::Stmt>*> blocks_;
};

class KernelBuilder : public FunctionBuilder {
 public:
  explicit KernelBuilder(std::string name, Loc loc = Loc::current())
      : FunctionBuilder(std::move(name), v1::FUNCTION_KERNEL, loc) {}
};

class FuncBuilder : public FunctionBuilder {
 public:
  explicit FuncBuilder(std::string name, Loc loc = Loc::current())
      : FunctionBuilder(std::move(name), v1::FUNCTION_FUNC, loc) {}
};

// A module: its functions in the order added (add functions before the
// kernels that call them, as the Python client does).
class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name);
  ModuleBuilder& Add(const FunctionBuilder& function);
  // Also compile the backward pass (adjoint launches, Tape::Backward). The
  // client asks for it by itself when a gradient is first needed.
  ModuleBuilder& Backward(bool on = true);
  v1::Module Build() const { return module_; }

 private:
  v1::Module module_;
};

}  // namespace warpd::ir
