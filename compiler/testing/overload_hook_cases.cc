// Hand-written calls of the builtins typed by a hook (no signature pattern
// to enumerate): constructors, atomics, print, len, cast, zeros, tid, range,
// identity and friends. Each case is one CallCase; arguments rotate over the
// value forms like the generated ones.
#include <cmath>
#include <limits>
#include <set>

#include "common/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "compiler/testing/ir_builder.h"
#include "compiler/testing/overload_generator.h"

namespace warpd::testing {
namespace {

using types::ScalarKind;
using types::TypeRef;

constexpr ArgForm kValueFormList[] = {ArgForm::kLiteral,      ArgForm::kLocal,      ArgForm::kArrayElement,
                                      ArgForm::kStructMember, ArgForm::kFuncResult, ArgForm::kComponent};

ArgForm Rot(int i) { return kValueFormList[i % kValueForms]; }

ScalarKind K(int k) { return static_cast<ScalarKind>(k); }

class Cases {
 public:
  explicit Cases(Catalog& c) : c_(c) {}

  void Add(const std::string& hook, const std::string& what, std::function<void(ModuleBuilder&)> emit) {
    AddOther(hook, what, std::move(emit));
    if (covered_.insert(hook).second) c_.hooks_covered.push_back(hook);
  }
  // A case that is not a hook builtin's (constants).
  void AddOther(const std::string& group, const std::string& what, std::function<void(ModuleBuilder&)> emit) {
    CallCase cc;
    cc.what = Cat(group, ": ", what);
    cc.kernel_group = Cat("h_", group);
    cc.emit = std::move(emit);
    c_.calls.push_back(std::move(cc));
  }
  int rot() { return rot_++; }

 private:
  Catalog& c_;
  std::set<std::string> covered_;
  int rot_ = 0;
};

std::vector<ScalarKind> NonBool() {
  std::vector<ScalarKind> v;
  for (int k = 1; k < types::kNumScalarKinds; ++k) v.push_back(K(k));
  return v;
}
const ScalarKind kFloats[] = {ScalarKind::kFloat16, ScalarKind::kFloat32, ScalarKind::kFloat64};

// Constructors named by a type (vec3h, mat22d, quatf, spatial_vector, int8,
// ...): no arguments, every component (each in a rotating form), one scalar
// (splat), a conversion from another dtype, and the special forms.
void NamedConstructor(Cases& cs, const std::string& name, TypeRef t) {
  const ScalarKind s = t->scalar();
  auto store = [t](ModuleBuilder& b, v1::Expr e) { b.Store(std::move(e), t, "result", true); };
  if (t->is_scalar()) {
    for (ScalarKind from : {ScalarKind::kBool, ScalarKind::kInt8, ScalarKind::kUInt64, ScalarKind::kFloat16,
                            ScalarKind::kFloat64, ScalarKind::kInt32}) {
      const int r = cs.rot();
      cs.Add(name, Cat(name, "(", types::ScalarName(from), ") argument ", ArgFormName(Rot(r))),
             [=](ModuleBuilder& b) { store(b, Call(name, {b.Arg(types::Scalar(from), Value{r % 3}, Rot(r))})); });
    }
    return;
  }
  cs.Add(name, Cat(name, "()"), [=](ModuleBuilder& b) { store(b, Call(name, {})); });
  const int n = static_cast<int>(t->size() / types::ScalarSize(s));
  {
    const int r = cs.rot();
    cs.Add(name, Cat(name, "(", n, " components, rotating forms)"), [=](ModuleBuilder& b) {
      std::vector<double> comps = ValueComponents(t, Value{1});
      std::vector<v1::Expr> args;
      for (int i = 0; i < n; ++i) args.push_back(b.Arg(types::Scalar(s), Value{0, comps[i]}, Rot(r + i)));
      store(b, Call(name, std::move(args)));
    });
  }
  if (t->is_vector() || t->is_matrix()) {
    const int r = cs.rot();
    cs.Add(name, Cat(name, "(scalar) argument ", ArgFormName(Rot(r))),
           [=](ModuleBuilder& b) { store(b, Call(name, {b.Arg(types::Scalar(s), Value{1}, Rot(r))})); });
  }
  // From another dtype of the same shape (a conversion).
  const ScalarKind other = s == ScalarKind::kFloat64 ? ScalarKind::kInt32 : ScalarKind::kFloat64;
  TypeRef from = nullptr;
  if (t->is_vector()) from = types::Vector(t->length(), other);
  if (t->is_matrix()) from = types::Matrix(t->rows(), t->cols(), other);
  if (t->is_quat() && other != ScalarKind::kInt32) from = types::Quat(other);
  // Transforms copy only from their own dtype (Warp 1.19's rule).
  if (t->is_transform()) from = t;
  if (from) {
    const int r = cs.rot();
    // spatial_vector without a suffix takes its dtype from its arguments
    // (as Warp's spatial_vector builtin does); the others convert.
    TypeRef result = name == "spatial_vector" ? from : t;
    cs.Add(name, Cat(name, "(", from->ToString(), ") argument ", ArgFormName(Rot(r))),
           [=](ModuleBuilder& b) { b.Store(Call(name, {b.Arg(from, Value{0}, Rot(r))}), result, "result", true); });
  }
  if (t->is_quat()) {
    const int r = cs.rot();
    cs.Add(name, Cat(name, "(ijk: vec3, real)"), [=](ModuleBuilder& b) {
      store(b, Call(name, {b.Arg(types::Vector(3, s), Value{0, 0.25}, Rot(r)),
                           b.Arg(types::Scalar(s), Value{0, 0.5}, Rot(r + 1))}));
    });
  }
  if (t->is_transform()) {
    const int r = cs.rot();
    cs.Add(name, Cat(name, "(p: vec3, q: quat)"), [=](ModuleBuilder& b) {
      store(b, Call(name, {b.Arg(types::Vector(3, s), Value{0}, Rot(r)), b.Arg(types::Quat(s), Value{1}, Rot(r + 1))}));
    });
  }
  if (name.rfind("spatial_vector", 0) == 0) {
    const int r = cs.rot();
    cs.Add(name, Cat(name, "(w: vec3, v: vec3)"), [=](ModuleBuilder& b) {
      store(b, Call(name,
                    {b.Arg(types::Vector(3, s), Value{0}, Rot(r)), b.Arg(types::Vector(3, s), Value{1}, Rot(r + 1))}));
    });
  }
}

void GenericConstructors(Cases& cs) {
  // vector(..., length=, dtype=) and its forms.
  for (ScalarKind s : {ScalarKind::kFloat16, ScalarKind::kInt64, ScalarKind::kUInt8}) {
    TypeRef t = types::Vector(5, s);
    cs.Add("vector", Cat("vector(length=5, dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(WithKeyword(Call("vector", {}), "length", Int(5)), "dtype", TypeValue(types::Scalar(s))), t,
              "result", true);
    });
    const int r = cs.rot();
    cs.Add("vector", Cat("vector(a, b, c) of ", types::ScalarName(s), " values (dtype inferred)"),
           [=](ModuleBuilder& b) {
             std::vector<v1::Expr> args;
             for (int i = 0; i < 3; ++i) args.push_back(b.Arg(types::Scalar(s), Value{i}, Rot(r + i + 1)));
             b.Store(Call("vector", std::move(args)), types::Vector(3, s), "result", true);
           });
  }
  for (ScalarKind s : {ScalarKind::kFloat64, ScalarKind::kInt16, ScalarKind::kFloat16}) {
    TypeRef t = types::Matrix(2, 3, s);
    cs.Add("matrix", Cat("matrix(shape=(2, 3), dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(WithKeyword(Call("matrix", {}), "shape", TupleOf({Int(2), Int(3)})), "dtype",
                          TypeValue(types::Scalar(s))),
              t, "result", true);
    });
    const int r = cs.rot();
    cs.Add("matrix", Cat("matrix(6 ", types::ScalarName(s), " values, shape=(3, 2)) (dtype inferred)"),
           [=](ModuleBuilder& b) {
             std::vector<v1::Expr> args;
             for (int i = 0; i < 6; ++i) args.push_back(b.Arg(types::Scalar(s), Value{i}, Rot(r + i)));
             b.Store(WithKeyword(Call("matrix", std::move(args)), "shape", TupleOf({Int(3), Int(2)})),
                     types::Matrix(3, 2, s), "result", true);
           });
  }
  for (ScalarKind s : kFloats) {
    cs.Add("quaternion", Cat("quaternion(dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(Call("quaternion", {}), "dtype", TypeValue(types::Scalar(s))), types::Quat(s), "result",
              true);
    });
    const int r = cs.rot();
    cs.Add("quaternion", Cat("quaternion(x, y, z, w) of ", types::ScalarName(s), " values"), [=](ModuleBuilder& b) {
      std::vector<v1::Expr> args;
      for (int i = 0; i < 4; ++i) args.push_back(b.Arg(types::Scalar(s), Value{0, 0.125 * (i + 1)}, Rot(r + i + 1)));
      b.Store(Call("quaternion", std::move(args)), types::Quat(s), "result", true);
    });
    cs.Add("transformation", Cat("transformation(p, q) of ", types::ScalarName(s)), [=](ModuleBuilder& b) {
      b.Store(Call("transformation",
                   {b.Arg(types::Vector(3, s), Value{0}, Rot(r)), b.Arg(types::Quat(s), Value{1}, Rot(r + 2))}),
              types::Transform(s), "result", true);
    });
    cs.Add("transformation", Cat("transformation(p) of ", types::ScalarName(s), " (the identity rotation)"),
           [=](ModuleBuilder& b) {
             b.Store(Call("transformation", {b.Arg(types::Vector(3, s), Value{0}, Rot(r + 1))}), types::Transform(s),
                     "result", true);
           });
    cs.Add("transformation", Cat("transformation(dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(Call("transformation", {}), "dtype", TypeValue(types::Scalar(s))), types::Transform(s),
              "result", true);
    });
    cs.Add("quat_identity", Cat("quat_identity(dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(Call("quat_identity", {}), "dtype", TypeValue(types::Scalar(s))), types::Quat(s), "result",
              true);
    });
    cs.Add("transform_identity", Cat("transform_identity(dtype=", types::ScalarName(s), ")"), [=](ModuleBuilder& b) {
      b.Store(WithKeyword(Call("transform_identity", {}), "dtype", TypeValue(types::Scalar(s))), types::Transform(s),
              "result", true);
    });
  }
  for (ScalarKind s : {ScalarKind::kFloat16, ScalarKind::kFloat32, ScalarKind::kFloat64, ScalarKind::kInt32}) {
    for (int n = 2; n <= 5; ++n) {
      const bool keywords = n % 2 == 0;
      cs.Add("identity", Cat("identity(", n, ", ", types::ScalarName(s), ")", keywords ? " by keyword" : ""),
             [=](ModuleBuilder& b) {
               v1::Expr call = keywords ? WithKeyword(WithKeyword(Call("identity", {}), "n", Int(n)), "dtype",
                                                      TypeValue(types::Scalar(s)))
                                        : Call("identity", {Int(n), TypeValue(types::Scalar(s))});
               b.Store(std::move(call), types::Matrix(n, n, s), "result", true);
             });
    }
    for (const char* f : {"matrix_from_rows", "matrix_from_cols"}) {
      for (int n = 2; n <= 5; ++n) {
        for (int count : {2, 3, 4}) {
          const int r = cs.rot();
          const bool rows = std::string_view(f) == "matrix_from_rows";
          TypeRef result = rows ? types::Matrix(count, n, s) : types::Matrix(n, count, s);
          cs.Add(f, Cat(f, "(", count, " x vec(", n, ", ", types::ScalarName(s), "))"), [=](ModuleBuilder& b) {
            std::vector<v1::Expr> args;
            for (int i = 0; i < count; ++i) args.push_back(b.Arg(types::Vector(n, s), Value{i}, Rot(r + i)));
            b.Store(Call(f, std::move(args)), result, "result", true);
          });
        }
      }
    }
  }
  // struct(dtype=S): zero, by position, by keyword.
  TypeRef st = ModuleBuilder::ValueStruct();
  cs.Add("struct", "struct(dtype=VStruct)", [=](ModuleBuilder& b) {
    b.Store(WithKeyword(Call("struct", {}), "dtype", TypeValue(st)), st, "result", true);
  });
  for (int k = 0; k < 2; ++k) {
    const int r = cs.rot();
    cs.Add("struct", k ? "struct(f=, h=, dtype=VStruct) by keyword" : "struct(f, v, i, h, dtype=VStruct)",
           [=](ModuleBuilder& b) {
             const auto& ms = st->members();
             v1::Expr call = Call("struct", {});
             for (size_t m = 0; m < ms.size(); ++m) {
               if (k && m % 2 == 1) continue;
               v1::Expr v = b.Arg(ms[m].type, Value{static_cast<int>(m)}, Rot(r + static_cast<int>(m)));
               if (k)
                 call = WithKeyword(std::move(call), ms[m].name, std::move(v));
               else
                 *call.mutable_call()->add_args() = std::move(v);
             }
             b.Store(WithKeyword(std::move(call), "dtype", TypeValue(st)), st, "result", true);
           });
  }
}

// type(x)(args) and a.dtype(args): the client's construct_like(x, args...,
// element=True).
void ConstructLike(Cases& cs) {
  const TypeRef kLike[] = {types::Vector(3, ScalarKind::kFloat16),
                           types::Vector(5, ScalarKind::kInt64),
                           types::Matrix(2, 3, ScalarKind::kFloat64),
                           types::Quat(ScalarKind::kFloat32),
                           types::Transform(ScalarKind::kFloat64),
                           types::Scalar(ScalarKind::kUInt16),
                           ModuleBuilder::ValueStruct()};
  for (TypeRef t : kLike) {
    const int r = cs.rot();
    // Scalars take exactly one argument, structs their members (as Warp's
    // constructors of those types).
    if (!t->is_scalar()) {
      cs.Add("construct_like", Cat("type(x)() of ", t->ToString(), ", x ", ArgFormName(Rot(r))), [=](ModuleBuilder& b) {
        b.Store(Call("construct_like", {b.Arg(t, Value{0}, Rot(r))}), t, "result", true);
      });
    }
    if (t->is_struct()) {
      cs.Add("construct_like", Cat("type(x)(members) of ", t->ToString()), [=](ModuleBuilder& b) {
        std::vector<v1::Expr> args = {b.Arg(t, Value{0}, Rot(r + 1))};
        for (size_t m = 0; m < t->members().size(); ++m)
          args.push_back(b.Arg(t->members()[m].type, Value{static_cast<int>(m)}, Rot(r + 2 + static_cast<int>(m))));
        b.Store(Call("construct_like", std::move(args)), t, "result", true);
      });
    } else {
      cs.Add("construct_like", Cat("type(x)(x) of ", t->ToString()), [=](ModuleBuilder& b) {
        b.Store(Call("construct_like", {b.Arg(t, Value{0}, Rot(r + 1)), b.Arg(t, Value{1}, Rot(r + 2))}), t, "result",
                true);
      });
    }
    if (t->has_dtype() && !t->is_scalar()) {
      const TypeRef s = types::Scalar(t->scalar());
      cs.Add("construct_like", Cat("x.dtype(value) of ", t->ToString()), [=](ModuleBuilder& b) {
        b.Store(WithKeyword(Call("construct_like", {b.Arg(t, Value{0}, Rot(r + 3)), b.Arg(s, Value{2}, Rot(r + 4))}),
                            "element", BoolConst(true)),
                s, "result", true);
      });
    }
  }
  const TypeRef elem = types::Vector(2, ScalarKind::kFloat64);
  cs.Add("construct_like", "a.dtype(x, y) of array(vec2d)", [=](ModuleBuilder& b) {
    b.Store(
        WithKeyword(Call("construct_like", {b.ArrayArg(elem, ArgForm::kArrayParam),
                                            b.Arg(types::Scalar(ScalarKind::kFloat64), Value{0}, ArgForm::kLocal),
                                            b.Arg(types::Scalar(ScalarKind::kFloat64), Value{1}, ArgForm::kComponent)}),
                    "element", BoolConst(true)),
        elem, "result", true);
  });
}

// Constants at the ends of every scalar type's range (and inf, NaN, -0.0,
// denormals), spelled as a typed constant, through the type's constructor
// and negated, stored and compared exactly: the literal spellings of codegen
// must hold in clang and NVRTC.
void Constants(Cases& cs) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto constant = [](ScalarKind s, double f, int64_t i, bool typed) {
    v1::Expr e = types::IsFloat(s) ? Float(f) : Int(i);
    if (typed) e.mutable_constant()->set_dtype(ir::TypeToProto(types::Scalar(s)).scalar());
    return e;
  };
  for (ScalarKind s : NonBool()) {
    const std::string name(types::ScalarName(s));
    const TypeRef t = types::Scalar(s);
    if (types::IsFloat(s)) {
      const double max = s == ScalarKind::kFloat16    ? 65504.0
                         : s == ScalarKind::kBFloat16 ? 3.3895313892515355e38  // 0x7f7f
                         : s == ScalarKind::kFloat32  ? 3.4028234663852886e38
                                                      : 1.7976931348623157e308;
      const double tiny = s == ScalarKind::kFloat16    ? 5.960464477539063e-08
                          : s == ScalarKind::kBFloat16 ? 9.183549615799121e-41  // 2^-133, 0x0001
                          : s == ScalarKind::kFloat32  ? 1.401298464324817e-45
                                                       : 4.9406564584124654e-324;
      for (double v : {max, -max, tiny, -0.0, kInf, -kInf, std::numeric_limits<double>::quiet_NaN(), 0.1}) {
        // 0.1 is not exact in any float type: rounded by the compiler.
        const std::optional<double> want = v == 0.1 ? std::optional<double>() : std::optional<double>(v);
        for (int form = 0; form < 3; ++form) {
          if (form == 2 && !(v > 0)) continue;
          cs.AddOther("constant",
                      Cat(name, " ", v,
                          form == 0   ? " typed"
                          : form == 1 ? " constructed"
                                      : " negated"),
                      [=](ModuleBuilder& b) {
                        v1::Expr e = form == 0 ? constant(s, v, 0, true) : Call(name, {constant(s, v, 0, false)});
                        if (form == 2) {
                          v1::Expr neg;
                          *neg.mutable_span() = Span(1);
                          neg.mutable_unary()->set_op(v1::UNARY_NEG);
                          *neg.mutable_unary()->mutable_operand() = constant(s, v, 0, false);
                          e = Call(name, {neg});
                        }
                        b.StoreExact(std::move(e), t, "value", form == 2 && want ? std::optional<double>(-v) : want,
                                     std::nullopt);
                      });
        }
      }
      continue;
    }
    const bool sign = types::IsSigned(s);
    const int bits = static_cast<int>(types::ScalarSize(s) * 8);
    const int64_t max = bits == 64 ? INT64_MAX : sign ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
    const int64_t min = !sign ? 0 : bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
    for (int64_t v : {min, max, int64_t{0}, int64_t{1}}) {
      for (int form = 0; form < 3; ++form) {
        if (form == 2 && (v <= 0 || !sign)) continue;  // negate positive values (-(2^63) has no literal)
        cs.AddOther("constant",
                    Cat(name, " ", v,
                        form == 0   ? " typed"
                        : form == 1 ? " constructed"
                                    : " negated"),
                    [=](ModuleBuilder& b) {
                      v1::Expr e = form == 0 ? constant(s, 0, v, true) : Call(name, {constant(s, 0, v, false)});
                      if (form == 2) {
                        v1::Expr neg;
                        *neg.mutable_span() = Span(1);
                        neg.mutable_unary()->set_op(v1::UNARY_NEG);
                        *neg.mutable_unary()->mutable_operand() = constant(s, 0, v, false);
                        e = Call(name, {neg});
                      }
                      b.StoreExact(std::move(e), t, "value", std::nullopt, form == 2 ? -v : v);
                    });
      }
    }
  }
}

std::vector<TypeRef> AtomicElements() {
  std::vector<TypeRef> v;
  for (ScalarKind s : NonBool()) {
    v.push_back(types::Scalar(s));
    v.push_back(types::Vector(3, s));
    v.push_back(types::Matrix(2, 2, s));
  }
  for (ScalarKind s : kFloats) {
    v.push_back(types::Quat(s));
    v.push_back(types::Transform(s));
  }
  return v;
}

void Atomics(Cases& cs) {
  for (const char* f : {"atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
                        "atomic_exch", "atomic_cas"}) {
    for (TypeRef t : AtomicElements()) {
      if (!builtins::AtomicSupports(f, t)) continue;
      const int r = cs.rot();
      const bool cas = std::string_view(f) == "atomic_cas";
      cs.Add(f, Cat(f, "(array(", t->ToString(), "), i, value) value ", ArgFormName(Rot(r))), [=](ModuleBuilder& b) {
        ModuleBuilder::OutPlace place = b.Out(t, Value{0}, ArgForm::kOutElement, "array element", true);
        const v1::Expr arr = place.arg.subscript().value();
        const v1::Expr idx = place.arg.subscript().indices(0);
        std::vector<v1::Expr> args = {arr, idx};
        if (cas) args.push_back(b.Arg(t, Value{0, 0.0}, Rot(r + 1)));
        args.push_back(b.Arg(t, Value{1}, Rot(r)));
        b.Store(Call(f, std::move(args)), t, "old value", true);
        place.finish();
      });
    }
  }
}

void Misc(Cases& cs) {
  cs.Add("tid", "i = tid()",
         [](ModuleBuilder& b) { b.Store(Call("tid", {}), types::Scalar(ScalarKind::kInt32), "result", true); });
  for (const std::vector<int>& args : std::vector<std::vector<int>>{{3}, {1, 4}, {6, 0, -2}}) {
    cs.Add("range",
           Cat("for j in range(",
               Join(
                   [&] {
                     std::vector<std::string> s;
                     for (int a : args) s.push_back(std::to_string(a));
                     return s;
                   }(),
                   ", "),
               ")"),
           [=](ModuleBuilder& b) {
             std::string acc = b.Local(Int(0));
             std::string j = b.FreshName();
             std::vector<v1::Expr> range_args;
             for (int a : args) range_args.push_back(Int(a));
             b.Emit(For(j, std::move(range_args), {Assign(Name(acc), Bin(v1::BINOP_ADD, Name(acc), Name(j)))}));
             b.Store(Name(acc), types::Scalar(ScalarKind::kInt32), "sum", true);
           });
  }
  // reversed(range(...)): order-sensitive sums (acc = 2 acc + j), empty and
  // negative-step ranges included.
  for (const std::vector<int>& args : std::vector<std::vector<int>>{{4}, {2, 9, 3}, {6, 0, -2}, {5, 5}, {1, 8, 0}}) {
    std::vector<std::string> text;
    for (int a : args) text.push_back(std::to_string(a));
    cs.Add("reversed", Cat("for j in reversed(range(", Join(text, ", "), "))"), [=](ModuleBuilder& b) {
      std::string acc = b.Local(Int(0));
      std::string j = b.FreshName();
      std::vector<v1::Expr> range_args;
      for (int a : args) range_args.push_back(Int(a));
      v1::Stmt loop = For(j, std::move(range_args),
                          {Assign(Name(acc), Bin(v1::BINOP_ADD, Bin(v1::BINOP_MUL, Name(acc), Int(2)), Name(j)))});
      v1::Expr range = loop.for_stmt().iter();
      *loop.mutable_for_stmt()->mutable_iter() = Call("reversed", {std::move(range)});
      b.Emit(std::move(loop));
      b.Store(Name(acc), types::Scalar(ScalarKind::kInt32), "sum", true);
    });
  }
  // len() of every kind of value and of an array.
  for (TypeRef t : {types::Vector(5, ScalarKind::kFloat16), types::Matrix(2, 3, ScalarKind::kFloat64),
                    types::Quat(ScalarKind::kFloat32), types::Transform(ScalarKind::kFloat64)}) {
    const int r = cs.rot();
    cs.Add("len", Cat("len(", t->ToString(), ") argument ", ArgFormName(Rot(r))), [=](ModuleBuilder& b) {
      b.Store(Call("len", {b.Arg(t, Value{0}, Rot(r))}), types::Scalar(ScalarKind::kInt32), "result", true);
    });
  }
  cs.Add("len", "len(array(vec3h))", [](ModuleBuilder& b) {
    b.Store(Call("len", {b.ArrayArg(types::Vector(3, ScalarKind::kFloat16), ArgForm::kArrayParam)}),
            types::Scalar(ScalarKind::kInt32), "result", true);
  });
  // cast(): bit reinterpretation between types of one size.
  const std::pair<TypeRef, TypeRef> kCasts[] = {
      {types::Scalar(ScalarKind::kFloat32), types::Scalar(ScalarKind::kInt32)},
      {types::Scalar(ScalarKind::kInt32), types::Scalar(ScalarKind::kFloat32)},
      {types::Scalar(ScalarKind::kFloat16), types::Scalar(ScalarKind::kInt16)},
      {types::Scalar(ScalarKind::kUInt16), types::Scalar(ScalarKind::kFloat16)},
      {types::Scalar(ScalarKind::kFloat64), types::Scalar(ScalarKind::kUInt64)},
      {types::Scalar(ScalarKind::kInt64), types::Scalar(ScalarKind::kFloat64)},
      {types::Vector(3, ScalarKind::kFloat32), types::Vector(3, ScalarKind::kInt32)},
      {types::Matrix(2, 2, ScalarKind::kFloat64), types::Matrix(2, 2, ScalarKind::kUInt64)},
      {types::Quat(ScalarKind::kFloat32), types::Vector(4, ScalarKind::kUInt32)},
      {types::Scalar(ScalarKind::kFloat32), types::Vector(2, ScalarKind::kFloat16)},
      {types::Transform(ScalarKind::kFloat16), types::Vector(7, ScalarKind::kInt16)},
  };
  for (const auto& [from, to] : kCasts) {
    const int r = cs.rot();
    const bool keyword = r % 2 == 0;
    cs.Add("cast", Cat("cast(", from->ToString(), ", ", to->ToString(), ") argument ", ArgFormName(Rot(r))),
           [=](ModuleBuilder& b) {
             v1::Expr call = keyword
                                 ? WithKeyword(Call("cast", {b.Arg(from, Value{0}, Rot(r))}), "dtype", TypeValue(to))
                                 : Call("cast", {b.Arg(from, Value{0}, Rot(r)), TypeValue(to)});
             // Reinterpreted integer bits may be any float (not checked).
             b.Store(std::move(call), to, "result", false);
           });
  }
  // zeros(): local arrays, written, read and searched.
  for (TypeRef t : {types::Scalar(ScalarKind::kFloat16), types::Vector(3, ScalarKind::kFloat64),
                    types::Matrix(2, 2, ScalarKind::kFloat32), types::Scalar(ScalarKind::kInt8),
                    types::Transform(ScalarKind::kFloat32)}) {
    const int r = cs.rot();
    cs.Add("zeros", Cat("zeros(shape=4, dtype=", t->ToString(), ")"), [=](ModuleBuilder& b) {
      std::string z = b.Local(WithKeyword(WithKeyword(Call("zeros", {}), "shape", Int(4)), "dtype", TypeValue(t)));
      b.Emit(Assign(Sub(Name(z), {Int(1)}), b.Arg(t, Value{0}, Rot(r))));
      b.Store(Sub(Name(z), {Int(1)}), t, "element 1", true);
      b.Store(Sub(Name(z), {Int(2)}), t, "element 2 (zero)", true);
      if (t->is_scalar())
        b.Store(Call("lower_bound", {Name(z), b.Arg(t, Value{0}, Rot(r + 1))}), types::Scalar(ScalarKind::kInt32),
                "lower_bound", true);
    });
    cs.Add("zeros", Cat("zeros((2, 3), ", t->ToString(), ")"), [=](ModuleBuilder& b) {
      std::string z = b.Local(Call("zeros", {TupleOf({Int(2), Int(3)}), TypeValue(t)}));
      b.Emit(Assign(Sub(Name(z), {Int(1), Int(2)}), b.Arg(t, Value{1}, Rot(r + 2))));
      b.Store(Sub(Name(z), {Int(1), Int(2)}), t, "element [1, 2]", true);
    });
  }
  // print() and printf(): records go to the launch's buffer.
  for (TypeRef t :
       {types::Scalar(ScalarKind::kFloat16), types::Scalar(ScalarKind::kInt8), types::Scalar(ScalarKind::kBool),
        types::Vector(3, ScalarKind::kFloat32), types::Matrix(2, 2, ScalarKind::kFloat64),
        types::Quat(ScalarKind::kFloat32), types::Transform(ScalarKind::kFloat16), types::Scalar(ScalarKind::kUInt64),
        ModuleBuilder::ValueStruct()}) {
    const int r = cs.rot();
    cs.Add("print", Cat("print(\"x\", ", t->ToString(), ")"), [=](ModuleBuilder& b) {
      b.MarkPrints();
      b.EmitExpr(Call("print", {StrConst("x ="), b.Arg(t, Value{0}, Rot(r))}));
    });
  }
  cs.Add("printf", "printf(\"%d %f %g %s\\n\", int32, float32, float64, str)", [](ModuleBuilder& b) {
    b.MarkPrints();
    b.EmitExpr(
        Call("printf", {StrConst("%d %f %g %s\n"), b.Arg(types::Scalar(ScalarKind::kInt32), Value{0}, ArgForm::kLocal),
                        b.Arg(types::Scalar(ScalarKind::kFloat32), Value{1}, ArgForm::kArrayElement),
                        b.Arg(types::Scalar(ScalarKind::kFloat64), Value{2}, ArgForm::kFuncResult), StrConst("s")}));
  });
}

}  // namespace

std::vector<std::pair<std::string, std::string>> HookSkips() {
  std::vector<std::pair<std::string, std::string>> out = {
      {"array", "wp.array(ptr=...) from a raw pointer is refused by design (pointers are not safe across tenants)"},
      {"static", "wp.static() is evaluated by the client and never reaches the server"},
  };
  // Hook-typed object queries, like the regular ones (QueriesObjects): a
  // generated module has no live object; tests/e2e (test_volume.py, ...)
  // call them on real ones. The volume hooks (volume_sample, volume_lookup,
  // ...: typed by their dtype argument) carry no typed signature, so their
  // group names them.
  std::set<std::string> queries;
  for (const builtins::Overload& o : builtins::Table())
    if (o.hook && (QueriesObjects(o) || o.group == "Volumes")) queries.insert(std::string(o.name));
  for (const std::string& name : queries)
    out.emplace_back(name, "queries a server object by id, which a generated module has none of (tests/e2e)");
  return out;
}

void AddHookCases(Catalog& c) {
  Cases cs(c);
  for (const builtins::Overload& o : builtins::Table()) {
    if (!o.hook || o.group != "Constructors") continue;
    const std::string name(o.name);
    if (TypeRef t = types::TypeFromWarpName(name)) NamedConstructor(cs, name, t);
  }
  GenericConstructors(cs);
  ConstructLike(cs);
  Constants(cs);
  Atomics(cs);
  Misc(cs);
  for (const auto& [name, why] : HookSkips()) c.skipped.push_back(Cat(name, ": ", why));
}

}  // namespace warpd::testing
