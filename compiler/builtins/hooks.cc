#include "common/str_cat.h"
#include "compiler/builtins/hooks.h"

#include "common/abi/print_table.h"
#include "common/status_macros.h"
#include "compiler/builtins/printf_format.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warpd::builtins::internal {
namespace {

using ir::Expr;
using ir::ExprKind;
using types::ScalarKind;
using types::TypeRef;

absl::Status Err(std::string_view msg) { return absl::InvalidArgumentError(std::string(msg)); }

// A call's positional arguments and keyword arguments.
struct Args {
  std::vector<Expr*> pos;
  std::vector<std::pair<std::string, Expr*>> kw;

  explicit Args(Expr& call) {
    size_t npos = call.operands.size() - call.keywords.size();
    for (size_t i = 0; i < call.operands.size(); ++i) {
      if (i < npos) pos.push_back(call.operands[i].get());
      else kw.push_back({call.keywords[i - npos], call.operands[i].get()});
    }
  }
  Expr* Keyword(std::string_view name) const {
    for (const auto& [k, v] : kw)
      if (k == name) return v;
    return nullptr;
  }
  absl::Status OnlyKeywords(std::string_view fn, std::initializer_list<std::string_view> allowed) const {
    for (const auto& [k, v] : kw) {
      bool ok = false;
      for (std::string_view a : allowed) ok |= k == a;
      if (!ok) return Err(Cat(fn, "() got an unexpected keyword argument '", k, "'"));
    }
    return absl::OkStatus();
  }
};

// A dtype= keyword (a type used as a value), else the positional argument
// `pos` when there is one, else the default.
absl::StatusOr<ScalarKind> DTypeKeyword(const Args& a, std::string_view fn, ScalarKind def, size_t pos = SIZE_MAX) {
  Expr* d = a.Keyword("dtype");
  if (!d && pos < a.pos.size()) d = a.pos[pos];
  if (!d) return def;
  if (d->kind != ExprKind::TypeValue || !d->type_value || !d->type_value->is_scalar())
    return Err(Cat(fn, "(): dtype must be a scalar type such as wp.float32"));
  return d->type_value->scalar();
}

absl::StatusOr<int64_t> IntConstant(const Expr* e, std::string_view what) {
  if (e && e->kind == ExprKind::Constant) {
    if (const int64_t* v = std::get_if<int64_t>(&e->value)) return *v;
  }
  return Err(Cat(what, " must be an integer constant"));
}

// Checks that every argument is a scalar of dtype `s`, giving untyped
// literals that type. Constructors are the one place Warp adapts literals.
// With `noun` ("vector", "matrix") the error is Warp 1.19's for that family's
// constructors (one value fills it, several initialize it).
absl::Status ScalarsOf(std::vector<Expr*>& args, ScalarKind s, std::string_view fn, std::string_view noun = {}) {
  for (Expr* a : args) {
    if (a->type && a->type->is_scalar_of(s)) continue;
    if (CoerceLiteral(*a, s)) continue;
    if (!noun.empty()) {
      return Err(args.size() == 1 ? Cat("the value used to fill this ", noun, " is expected to be of the type `",
                                        types::ScalarName(s), "`")
                                  : Cat("all values used to initialize this ", noun,
                                        " are expected to be of the type `", types::ScalarName(s), "`"));
    }
    return Err(Cat(fn, "() components must be ", types::ScalarName(s), ", got ",
                            a->type ? a->type->ToString() : "no value", " (convert explicitly, e.g. ",
                            types::ScalarName(s), "(x))"));
  }
  return absl::OkStatus();
}

// "(2, 3)": a matrix shape as Warp's messages write it.
std::string ShapeText(int rows, int cols) { return Cat("(", rows, ", ", cols, ")"); }

// Moves operand `e` out of `operands` (a hook rewriting its call to positional form).
std::unique_ptr<Expr> TakeOperand(std::vector<std::unique_ptr<Expr>>& operands, const Expr* e) {
  for (auto& o : operands)
    if (o.get() == e) return std::move(o);
  return nullptr;
}

absl::StatusOr<HookResult> Done(TypeRef t, std::string cpp) {
  HookResult r;
  r.result = t;
  r.cpp = std::move(cpp);
  return r;
}

absl::StatusOr<HookResult> ConstructScalar(TypeRef t, Args& a, std::string_view fn) {
  if (a.pos.size() != 1) return Err(Cat(fn, "() takes exactly one argument"));
  Expr* x = a.pos[0];
  if (!x->type || !x->type->is_scalar())
    return Err(Cat("cannot convert ", x->type ? x->type->ToString() : "no value", " to ", t->ToString()));
  if (IsLiteral(*x) && CoerceLiteral(*x, t->scalar())) return Done(t, "$0");
  return Done(t, "wp::cast<$R>($0)");
}

absl::StatusOr<HookResult> ConstructVector(TypeRef t, Args& a, std::string_view fn) {
  size_t n = a.pos.size();
  int len = t->length();
  if (n == 0) return Done(t, "$R{}");
  if (n == 1 && a.pos[0]->type && a.pos[0]->type->is_vector()) {
    if (a.pos[0]->type->length() != len)  // Warp's words, the target's length first
      return Err(Cat("incompatible vector of length ", len, " given when copy constructing a vector of length ",
                     a.pos[0]->type->length()));
    return Done(t, "wp::cast<$R>($0)");
  }
  if (n != 1 && n != static_cast<size_t>(len))
    return Err(Cat("incompatible number of values given (", n, ") when constructing a vector of length ", len));
  if (auto st = ScalarsOf(a.pos, t->scalar(), fn, "vector"); !st.ok()) return st;
  if (n == 1) return Done(t, Cat("wp::vec_splat<", len, ", ", types::ScalarCppName(t->scalar()), ">($0)"));
  return Done(t, "$R{{$*}}");
}

absl::StatusOr<HookResult> ConstructMatrix(TypeRef t, Args& a, std::string_view fn) {
  size_t n = a.pos.size();
  int r = t->rows(), c = t->cols();
  std::string dt(types::ScalarCppName(t->scalar()));
  if (n == 0) return Done(t, "$R{}");
  if (n == 1 && a.pos[0]->type && a.pos[0]->type->is_matrix()) {
    TypeRef from = a.pos[0]->type;
    if (from->rows() != r || from->cols() != c)  // Warp's words, the target's shape first
      return Err(Cat("incompatible matrix of shape ", ShapeText(r, c), " given when copy constructing a matrix of shape ",
                     ShapeText(from->rows(), from->cols())));
    return Done(t, "wp::cast<$R>($0)");
  }
  // Warp 1.19 refuses vectors here in kernels (rows or columns would be a
  // guess); its Python scope takes rows, which the client does.
  for (Expr* v : a.pos)
    if (v->type && v->type->is_vector())
      return Err(Cat(fn, "(): passing vectors to a matrix constructor is not supported (as in Warp 1.19); use "
                         "wp.matrix_from_rows() or wp.matrix_from_cols()"));
  if (n != 1 && n != static_cast<size_t>(r * c))
    return Err(Cat("incompatible number of values given (", n, ") when constructing a matrix of shape ",
                   ShapeText(r, c)));
  if (auto st = ScalarsOf(a.pos, t->scalar(), fn, "matrix"); !st.ok()) return st;
  if (n == 1) return Done(t, Cat("wp::mat_splat<", r, ", ", c, ", ", dt, ">($0)"));
  return Done(t, "$R{{$*}}");
}

absl::StatusOr<HookResult> ConstructQuat(TypeRef t, Args& a, std::string_view fn) {
  size_t n = a.pos.size();
  std::string dt(types::ScalarCppName(t->scalar()));
  if (n == 0) return Done(t, "$R{}");  // zeros, as in Warp 1.19 (not the identity)
  if (n == 1 && a.pos[0]->type && a.pos[0]->type->is_quat()) return Done(t, "wp::cast<$R>($0)");
  if (n == 2 && a.pos[0]->type && types::SameType(a.pos[0]->type, types::Vector(3, t->scalar()))) {
    std::vector<Expr*> real = {a.pos[1]};
    if (auto st = ScalarsOf(real, t->scalar(), fn); !st.ok()) return st;
    return Done(t, "$R{{$0.c[0], $0.c[1], $0.c[2], $1}}");
  }
  if (n != 4) return Err(Cat(fn, "() takes 0 arguments, a quaternion, (ijk, real) or 4 scalars; got ", n));
  if (auto st = ScalarsOf(a.pos, t->scalar(), fn); !st.ok()) return st;
  return Done(t, "$R{{$*}}");
}

// Warp 1.19's transformation(p: vec3, q: quat = identity) overload, tried
// before the others: what p and q may be, and its dtype rules.
bool IsTransformP(const Expr* e) {
  return e->type && e->type->is_vector() && e->type->length() == 3 && types::IsFloat(e->type->scalar());
}
bool IsTransformQ(const Expr* e) { return e->type && e->type->is_quat(); }
absl::Status TransformPQDTypes(TypeRef t, const Expr* p, const Expr* q) {
  if (q && q->type->scalar() != p->type->scalar())
    return Err("all values given when constructing a transformation matrix must have the same type");
  if (p->type->scalar() != t->scalar())
    return Err(Cat("all values used to initialize this transformation matrix are expected to be of the type `",
                   types::ScalarName(t->scalar()), "`"));
  return absl::OkStatus();
}

// transform(p=..., q=...) (q defaults to the identity, as in Warp): the call
// is rewritten to its positional form (lowering passes positional operands).
absl::StatusOr<HookResult> ConstructTransformKeywords(TypeRef t, Expr& call, std::string_view fn) {
  Args a(call);
  if (auto st = a.OnlyKeywords(fn, {"p", "q", "dtype"}); !st.ok()) return st;
  Expr* p = a.pos.size() > 0 ? a.pos[0] : a.Keyword("p");
  Expr* q = a.pos.size() > 1 ? a.pos[1] : a.Keyword("q");
  if (a.pos.size() > 2 || !p || (a.pos.size() > 0 && a.Keyword("p")) || (a.pos.size() > 1 && a.Keyword("q")))
    return Err(Cat(fn, "() takes p and q (by position or name)"));
  TypeRef v3 = types::Vector(3, t->scalar()), qt = types::Quat(t->scalar());
  if (!IsTransformP(p) || (q && !IsTransformQ(q)))
    return Err(Cat(fn, "(p, q) needs p: ", v3->ToString(), " and q: ", qt->ToString()));
  if (auto st = TransformPQDTypes(t, p, q); !st.ok()) return st;
  std::vector<std::unique_ptr<Expr>> old = std::move(call.operands);
  call.operands.push_back(TakeOperand(old, p));
  if (q) call.operands.push_back(TakeOperand(old, q));
  call.keywords.clear();
  std::string dt(types::ScalarCppName(t->scalar()));
  return Done(t, q ? "$R{$0, $1}" : Cat("$R{$0, wp::quat_identity<", dt, ">()}"));
}

absl::StatusOr<HookResult> ConstructTransform(TypeRef t, Args& a, std::string_view fn) {
  size_t n = a.pos.size();
  std::string dt(types::ScalarCppName(t->scalar()));
  if (n == 0) return Done(t, "$R{}");  // zeros, as in Warp 1.19 (not the identity)
  if (n == 1 && a.pos[0]->type && a.pos[0]->type->is_transform()) {
    if (a.pos[0]->type->scalar() != t->scalar())
      return Err(Cat("copy constructing a transform requires matching source and target dtypes, got `",
                     types::ScalarName(a.pos[0]->type->scalar()), "` and `", types::ScalarName(t->scalar()), "`"));
    return Done(t, "$0");
  }
  // A float vec3 (and a quaternion): Warp's (p, q = identity) form.
  if ((n == 1 && IsTransformP(a.pos[0])) || (n == 2 && IsTransformP(a.pos[0]) && IsTransformQ(a.pos[1]))) {
    if (auto st = TransformPQDTypes(t, a.pos[0], n == 2 ? a.pos[1] : nullptr); !st.ok()) return st;
    return Done(t, n == 2 ? "$R{$0, $1}" : Cat("$R{$0, wp::quat_identity<", dt, ">()}"));
  }
  if (n == 1) {  // every component the one value, as Warp's transform(1.5)
    if (auto st = ScalarsOf(a.pos, t->scalar(), fn); !st.ok()) return st;
    return Done(t, "$R{{{$0, $0, $0}}, {{$0, $0, $0, $0}}}");
  }
  if (n != 7)
    return Err(Cat("incompatible number of values given (", n,
                   ") when constructing a transform; expected 0, 1, or 7"));
  if (auto st = ScalarsOf(a.pos, t->scalar(), fn); !st.ok()) return st;
  return Done(t, "$R{{{$0, $1, $2}}, {{$3, $4, $5, $6}}}");
}

absl::StatusOr<HookResult> ConstructSpatialVector(TypeRef t, Args& a, std::string_view fn) {
  size_t n = a.pos.size();
  if (n == 2) {
    TypeRef v3 = types::Vector(3, t->scalar());
    for (Expr* v : a.pos)
      if (!v->type || !types::SameType(v->type, v3))
        return Err(Cat(fn, "(w, v) needs two ", v3->ToString()));
    return Done(t, "$R{{$0.c[0], $0.c[1], $0.c[2], $1.c[0], $1.c[1], $1.c[2]}}");
  }
  return ConstructVector(t, a, fn);
}

// The type a constructor name denotes (with keywords for the generic ones).
absl::StatusOr<TypeRef> ConstructedType(std::string_view name, Args& a, types::TypeTable& table) {
  if (name == "vector") {
    // As Warp 1.19 infers vector(...)'s length and dtype (builtins.py vector_value_func).
    if (auto st = a.OnlyKeywords(name, {"length", "dtype"}); !st.ok()) return st;
    auto dtype = DTypeKeyword(a, name, ScalarKind::kFloat32);
    if (!dtype.ok()) return dtype.status();
    size_t n = a.pos.size();
    int64_t len = static_cast<int64_t>(n);
    const TypeRef first = n ? a.pos[0]->type : nullptr;
    if (Expr* l = a.Keyword("length")) {
      auto v = IntConstant(l, "vector(): length");
      if (!v.ok()) return v.status();
      len = *v;
      if (n > 1 && len != static_cast<int64_t>(n))
        return Err(Cat("incompatible number of values given (", n, ") when constructing a vector of length ", len));
    } else if (n == 0) {
      return Err("the `length` argument must be specified when zero-initializing a vector");
    } else if (n == 1 && first && first->is_vector()) {
      len = first->length();  // vector(v): a copy (converted with dtype=)
    } else if (n == 1) {
      return Err("the `length` argument must be specified when filling a vector with a value");
    }
    if (a.Keyword("dtype") || !first) return table.CheckedVector(len, *dtype);
    // Without dtype=, the values' type decides (a copy: the vector's scalar type); several
    // values must have one type, literals included (vector(1.0, 2) is refused, as in Warp).
    if (n > 1) {
      for (Expr* v : a.pos)
        if (!v->type || !types::SameType(v->type, first))
          return Err("all values given when constructing a vector must have the same type");
    }
    if (first->has_dtype()) return table.CheckedVector(len, first->scalar());
    return table.CheckedVector(len, *dtype);
  }
  if (name == "matrix") {
    if (auto st = a.OnlyKeywords(name, {"shape", "dtype"}); !st.ok()) return st;
    auto dtype = DTypeKeyword(a, name, ScalarKind::kFloat32);
    if (!dtype.ok()) return dtype.status();
    Expr* shape = a.Keyword("shape");
    if (!shape) {  // as Warp 1.19 infers matrix(...)'s shape
      if (a.pos.size() == 1 && a.pos[0]->type && a.pos[0]->type->is_matrix()) {
        TypeRef from = a.pos[0]->type;
        return table.CheckedMatrix(from->rows(), from->cols(), a.Keyword("dtype") ? *dtype : from->scalar());
      }
      return Err(a.pos.empty()  ? "the `shape` argument must be specified when zero-initializing a matrix"
                 : a.pos.size() == 1 ? "the `shape` argument must be specified when filling a matrix with a value"
                                     : "the `shape` argument must be specified when initializing a matrix by value");
    }
    if (shape->kind != ExprKind::Tuple || shape->operands.size() != 2)
      return Err("matrix(): shape=(rows, cols) is required");
    auto r = IntConstant(shape->operands[0].get(), "matrix(): shape");
    auto c = IntConstant(shape->operands[1].get(), "matrix(): shape");
    if (!r.ok()) return r.status();
    if (!c.ok()) return c.status();
    ScalarKind s = *dtype;
    if (!a.Keyword("dtype") && !a.pos.empty() && a.pos[0]->type && a.pos[0]->type->is_scalar() &&
        !IsLiteral(*a.pos[0]))
      s = a.pos[0]->type->scalar();
    return table.CheckedMatrix(*r, *c, s);
  }
  if (name == "quaternion" || name == "transformation") {
    if (auto st = name == "quaternion" ? a.OnlyKeywords(name, {"dtype"}) : a.OnlyKeywords(name, {"p", "q", "dtype"});
        !st.ok())
      return st;
    ScalarKind s = ScalarKind::kFloat32;
    if (!a.pos.empty() && a.pos[0]->type && a.pos[0]->type->has_dtype() && !IsLiteral(*a.pos[0]))
      s = a.pos[0]->type->scalar();
    auto dtype = DTypeKeyword(a, name, s);
    if (!dtype.ok()) return dtype.status();
    return name == "quaternion" ? table.CheckedQuat(*dtype) : table.CheckedTransform(*dtype);
  }
  if (name == "spatial_vector") {  // spatial_vector(..., dtype=float64), as in Warp
    if (auto st = a.OnlyKeywords(name, {"dtype"}); !st.ok()) return st;
    ScalarKind s = ScalarKind::kFloat32;
    if (!a.pos.empty() && a.pos[0]->type && a.pos[0]->type->has_dtype() && !IsLiteral(*a.pos[0]))
      s = a.pos[0]->type->scalar();
    auto dtype = DTypeKeyword(a, name, s);
    if (!dtype.ok()) return dtype.status();
    return table.CheckedVector(6, *dtype);
  }
  TypeRef t = types::TypeFromWarpName(name);
  if (!t) return Err(Cat("unknown type constructor '", name, "'"));
  if (t->is_transform()) {
    if (auto st = a.OnlyKeywords(name, {"p", "q"}); !st.ok()) return st;
  } else if (auto st = a.OnlyKeywords(name, {}); !st.ok()) {
    return st;
  }
  return t;
}

}  // namespace

std::vector<std::string_view> ConstructorNames() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>{"vector", "matrix", "quaternion", "transformation", "int", "float", "half"};
    for (int k = 0; k < types::kNumScalarKinds; ++k) v->push_back(std::string(types::ScalarName(ScalarKind(k))));
    std::vector<std::string> suffixes = {""};
    for (int k = 1; k < types::kNumScalarKinds; ++k) suffixes.push_back(std::string(types::ScalarSuffix(ScalarKind(k))));
    for (const std::string& s : suffixes) {
      for (int n = 2; n <= 4; ++n) {
        v->push_back(Cat("vec", n, s));
        v->push_back(Cat("mat", n, n, s));
      }
    }
    for (const char* f : {"", "h", "f", "d"}) {
      for (const char* base : {"quat", "transform", "spatial_vector", "spatial_matrix"}) v->push_back(Cat(base, f));
    }
    // Warp spells bfloat16 quaternions and transforms quatbf, transformbf (type_repr).
    v->push_back("quatbf");
    v->push_back("transformbf");
    return v;
  }();
  return std::vector<std::string_view>(names->begin(), names->end());
}

namespace {
absl::StatusOr<HookResult> ConstructOf(TypeRef type, Args& a, Expr& call, std::string_view name);
}  // namespace

absl::StatusOr<HookResult> HookConstruct(const Overload& o, Expr& call, types::TypeTable& table) {
  Args a(call);
  std::string_view name = o.name;
  if (name == "identity") {
    if (auto st = a.OnlyKeywords(name, {"n", "dtype"}); !st.ok()) return st;
    Expr* n = a.Keyword("n");
    if (!n && !a.pos.empty()) n = a.pos[0];
    auto v = IntConstant(n, "identity(): n");
    if (!v.ok()) return v.status();
    if (a.pos.size() > (a.Keyword("n") ? 0u : 2u)) return Err("identity() takes n and dtype");
    // identity(n, dtype) positionally, as Warp accepts.
    auto dtype = DTypeKeyword(a, name, ScalarKind::kFloat32, a.Keyword("n") ? SIZE_MAX : 1);
    if (!dtype.ok()) return dtype.status();
    auto t = table.CheckedMatrix(*v, *v, *dtype);
    if (!t.ok()) return t.status();
    return Done(*t, Cat("wp::identity<", *v, ", ", types::ScalarCppName(*dtype), ">()"));
  }
  if (name == "quat_identity" || name == "transform_identity") {
    if (auto st = a.OnlyKeywords(name, {"dtype"}); !st.ok()) return st;
    // dtype by keyword or alone positionally (transform_identity(float)), as Warp accepts.
    if (a.pos.size() > (a.Keyword("dtype") ? 0u : 1u)) return Err(Cat(name, "() takes only a dtype"));
    auto dtype = DTypeKeyword(a, name, ScalarKind::kFloat32, 0);
    if (!dtype.ok()) return dtype.status();
    auto t = name == "quat_identity" ? table.CheckedQuat(*dtype) : table.CheckedTransform(*dtype);
    if (!t.ok()) return t.status();
    return Done(*t, Cat("wp::", name, "<", types::ScalarCppName(*dtype), ">()"));
  }
  if (name == "matrix_from_rows" || name == "matrix_from_cols") {
    if (auto st = a.OnlyKeywords(name, {}); !st.ok()) return st;
    if (a.pos.empty()) return Err(Cat(name, "() needs at least one vector"));
    TypeRef v = a.pos[0]->type;
    if (!v || !v->is_vector()) return Err(Cat(name, "() takes vectors"));
    for (Expr* e : a.pos)
      if (!e->type || !types::SameType(e->type, v))
        return Err(Cat(name, "() vectors must all be ", v->ToString()));
    int n = static_cast<int>(a.pos.size());
    auto t = name == "matrix_from_rows" ? table.CheckedMatrix(n, v->length(), v->scalar())
                                        : table.CheckedMatrix(v->length(), n, v->scalar());
    if (!t.ok()) return t.status();
    return Done(*t, Cat("wp::", name, "($*)"));
  }
  auto t = ConstructedType(name, a, table);
  if (!t.ok()) return t.status();
  return ConstructOf(*t, a, call, name);
}

namespace {

absl::StatusOr<HookResult> ConstructOf(TypeRef type, Args& a, Expr& call, std::string_view name) {
  switch (type->kind()) {
    case types::Kind::kScalar: return ConstructScalar(type, a, name);
    case types::Kind::kVector:
      if (name.substr(0, 14) == "spatial_vector") return ConstructSpatialVector(type, a, name);
      return ConstructVector(type, a, name);
    case types::Kind::kMatrix: return ConstructMatrix(type, a, name);
    case types::Kind::kQuat: return ConstructQuat(type, a, name);
    case types::Kind::kTransform:
      if (a.Keyword("p") || a.Keyword("q")) return ConstructTransformKeywords(type, call, name);
      return ConstructTransform(type, a, name);
    default: break;
  }
  return Err(Cat("cannot construct ", type->ToString()));
}

}  // namespace

// type(x)(args) and a.dtype(args) (Warp's generic code): construct_like(x,
// args..., element=True for a.dtype) constructs x's type (or its array's
// element type) from args. x is only typed, never evaluated; the call is
// rewritten to the constructor of that type.
absl::StatusOr<HookResult> HookConstructLike(const Overload& o, Expr& call, types::TypeTable& table) {
  const size_t npos = call.operands.size() - call.keywords.size();
  if (npos < 1) return Err("construct_like() needs the value whose type it constructs");
  bool element = false;
  for (const std::string& k : call.keywords) {
    if (k != "element") return Err(Cat("construct_like() got an unexpected keyword argument '", k, "'"));
    element = true;
  }
  TypeRef t = call.operands[0]->type;
  if (element) {  // an array's element type; a vector's, matrix's, ... scalar type
    if (t && t->is_array()) {
      t = t->element();
    } else if (t && t->has_dtype() && !t->is_scalar()) {
      t = types::Scalar(t->scalar());
    } else {
      return Err("x.dtype(...) needs x to be an array, vector, matrix, quaternion or transformation");
    }
  }
  if (!t || t->is_void() || t->is_array() || t->is_tuple()) return Err("type(x)(...) needs x to be a value");
  std::vector<std::unique_ptr<Expr>> args;
  for (size_t i = 1; i < npos; ++i) args.push_back(std::move(call.operands[i]));
  call.operands = std::move(args);
  call.keywords.clear();
  if (t->is_struct()) {
    auto d = std::make_unique<Expr>();
    d->kind = ExprKind::TypeValue;
    d->span = call.span;
    d->type_value = t;
    d->type = types::Void();
    call.operands.push_back(std::move(d));
    call.keywords = {"dtype"};
    return HookStruct(o, call, table);
  }
  Args a(call);
  return ConstructOf(t, a, call, t->ToString());
}

// struct(dtype=S) is S's zero value (what the client emits for `S()` in a
// kernel; Warp zero-initializes); struct(v1, v2, dtype=S, m4=v4) sets members
// by position then by name, as Warp 1.19's S(v1, v2, m4=v4), and zeroes the
// rest. The call is rewritten to the given values in member order (lowering
// passes positional operands only).
absl::StatusOr<HookResult> HookStruct(const Overload&, Expr& call, types::TypeTable&) {
  Args a(call);
  Expr* d = a.Keyword("dtype");
  if (!d || d->kind != ExprKind::TypeValue || !d->type_value || !d->type_value->is_struct())
    return Err("struct() needs the keyword argument dtype=<a @wp.struct type>");
  TypeRef t = d->type_value;
  const auto& members = t->members();
  const std::string name = t->ToString();
  if (a.pos.size() > members.size())
    return Err(Cat(name, "() takes at most ", members.size(), " arguments (its members), got ", a.pos.size()));
  std::vector<Expr*> given(members.size(), nullptr);
  for (size_t i = 0; i < a.pos.size(); ++i) given[i] = a.pos[i];
  for (const auto& [k, v] : a.kw) {
    if (k == "dtype") continue;
    size_t m = 0;
    while (m < members.size() && members[m].name != k) ++m;
    if (m == members.size()) return Err(Cat(name, "() has no member '", k, "'"));
    if (given[m]) return Err(Cat(name, "() got multiple values for member '", k, "'"));
    given[m] = v;
  }
  for (size_t m = 0; m < members.size(); ++m) {
    Expr* v = given[m];
    if (!v) continue;
    TypeRef want = members[m].type;
    if (v->type && types::SameType(v->type, want)) continue;
    if (want->is_scalar() && IsLiteral(*v) && CoerceLiteral(*v, want->scalar())) continue;
    return Err(Cat(name, "() member '", members[m].name, "' is ", want->ToString(), ", got ",
                   v->type ? v->type->ToString() : "no value", " (Warp does not convert implicitly)"));
  }
  // Operands become: the given values in member order, then dtype=.
  std::vector<std::unique_ptr<Expr>> old = std::move(call.operands);
  std::string cpp = "$R{";
  size_t k = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    if (m) cpp += ", ";
    if (!given[m]) {
      cpp += "{}";
      continue;
    }
    call.operands.push_back(TakeOperand(old, given[m]));
    CatAppend(&cpp, "${", k++, "}");
  }
  cpp += "}";
  call.operands.push_back(TakeOperand(old, d));
  call.keywords = {"dtype"};
  return Done(t, cpp);
}

absl::StatusOr<HookResult> HookTid(const Overload&, Expr& call, types::TypeTable&) {
  if (!call.operands.empty()) return Err("wp.tid() takes no arguments");
  return Done(types::Scalar(ScalarKind::kInt32), "");
}

absl::StatusOr<HookResult> HookRange(const Overload& o, Expr&, types::TypeTable&) {
  return Err(Cat(o.name, "() may only be used as the iterator of a for loop"));
}

absl::StatusOr<HookResult> HookAtomic(const Overload& o, Expr& call, types::TypeTable&) {
  Args a(call);
  if (auto st = a.OnlyKeywords(o.name, {}); !st.ok()) return st;
  bool cas = o.name == "atomic_cas";
  size_t trailing = cas ? 2 : 1;
  if (a.pos.size() < 1 + 1 + trailing)
    return Err(Cat(o.name, "(arr, i, ...", cas ? ", compare" : "", ", value) needs an array, indices and ",
                            cas ? "compare and value" : "a value"));
  TypeRef arr = a.pos[0]->type;
  if (!arr || !arr->is_array()) return Err(Cat(o.name, "() needs an array first, got ", arr ? arr->ToString() : "no value"));
  size_t nidx = a.pos.size() - 1 - trailing;
  if (static_cast<int>(nidx) != arr->ndim())
    return Err(Cat(o.name, "() on an array with ndim=", arr->ndim(), " needs ", arr->ndim(), " indices, got ", nidx));
  for (size_t i = 1; i <= nidx; ++i)
    if (!a.pos[i]->type || !a.pos[i]->type->is_int())
      return Err(Cat("indices must be integers, not ", a.pos[i]->type ? a.pos[i]->type->ToString() : "no value"));
  TypeRef elem = arr->element();
  if (elem->has_dtype() && !AtomicScalarSupported(o.name, elem->scalar()))  // Warp 1.19's words
    return Err(Cat(o.name, "() operations only work on arrays with ", AtomicScalarsText(o.name),
                   " as the underlying scalar types, but got ", elem->ToString(), " (with scalar type ",
                   types::ScalarName(elem->scalar()), ")"));
  if (!AtomicSupports(o.name, elem))
    return Err(Cat(o.name, "() on an array of ", elem->ToString(), " is not supported"));
  // No literal adaptation (Warp 1.19: atomic_add(int64_array, 0, 1) is an error).
  for (size_t i = a.pos.size() - trailing; i < a.pos.size(); ++i) {
    Expr* v = a.pos[i];
    if (v->type && types::SameType(v->type, elem)) continue;
    return Err(Cat(o.name, "() value must be ", elem->ToString(), ", got ",
                            v->type ? v->type->ToString() : "no value", " (no implicit conversion)"));
  }
  return Done(elem, AtomicCallee(o.name, elem));
}

static bool IsStringConstant(const Expr* e) { return ir::IsStringConstant(*e); }

static absl::Status CheckPrintPayload(const std::vector<Expr*>& values, std::string_view fn) {
  uint64_t payload = 0;
  for (const Expr* e : values)
    if (!IsStringConstant(e)) payload += abi::PrintValueSize(e->type);
  if (payload > abi::kMaxPrintPayload)
    return Err(Cat(fn, "() prints ", payload, " bytes of values in one call; at most ", abi::kMaxPrintPayload,
                   " are allowed"));
  return absl::OkStatus();
}

// print(a, b, ...): string constants and values of any type (structs print
// a placeholder, as in Warp), joined by spaces; print() prints a newline, as
// in Python. Formatted by the server (common/abi/print_table.h).
absl::StatusOr<HookResult> HookPrint(const Overload&, Expr& call, types::TypeTable&) {
  Args a(call);
  if (!a.kw.empty()) return Err("print() takes no keyword arguments");
  for (Expr* e : a.pos) {
    if (IsStringConstant(e)) continue;
    if (!e->type || e->type->is_void()) return Err("print() arguments must have values");
  }
  WARPD_RETURN_IF_ERROR(CheckPrintPayload(a.pos, "print"));
  return Done(types::Void(), "");
}

// printf(fmt, args...): the format is parsed and checked against the
// argument types here (printf_format.h), so a bad format is a compile error.
absl::StatusOr<HookResult> HookPrintf(const Overload&, Expr& call, types::TypeTable&) {
  Args a(call);
  if (!a.kw.empty()) return Err("printf() takes no keyword arguments");
  if (a.pos.empty() || !IsStringConstant(a.pos[0]))
    return Err("printf() needs a format string constant first");
  if (a.pos.size() - 1 > 32)  // Warp 1.19's limit, in its words
    return Err("printf(): the maximum number of variadic arguments that can be passed to `printf` is 32");
  std::vector<PrintfArg> args;
  for (size_t i = 1; i < a.pos.size(); ++i) {
    Expr* e = a.pos[i];
    if (IsStringConstant(e)) {
      args.push_back({nullptr, &std::get<std::string>(e->value)});
      continue;
    }
    if (!e->type || !e->type->is_scalar())
      return Err(Cat("printf() arguments must be scalars or string constants, got ",
                     e->type && !e->type->is_void() ? e->type->ToString() : "no value"));
    args.push_back({e->type, nullptr});
  }
  WARPD_RETURN_IF_ERROR(PrintfSegments(std::get<std::string>(a.pos[0]->value), args).status());
  std::vector<Expr*> values(a.pos.begin() + 1, a.pos.end());
  WARPD_RETURN_IF_ERROR(CheckPrintPayload(values, "printf"));
  return Done(types::Void(), "");
}

absl::StatusOr<HookResult> HookLen(const Overload&, Expr& call, types::TypeTable&) {
  Args a(call);
  if (a.pos.size() != 1 || !a.kw.empty()) return Err("len() takes exactly one argument");
  TypeRef t = a.pos[0]->type;
  if (!t || !(t->is_vector() || t->is_matrix() || t->is_quat() || t->is_transform() || t->is_array() || t->is_tuple()))
    return Err(Cat("len() of ", t ? t->ToString() : "no value", " is not defined"));
  return Done(types::Scalar(ScalarKind::kInt32), "");
}

namespace {

// Whether every byte of a `t` is a value's: no padding (whose bytes would be
// whatever the thread's stack held) and no array descriptor (whose bits are
// addresses, never shown to or made by a kernel's arithmetic).
bool PlainBits(TypeRef t) {
  if (t->has_dtype()) return true;
  if (!t->is_struct() || t->holds_array()) return false;
  uint64_t sum = 0;
  for (const auto& m : t->members()) {
    if (!PlainBits(m.type)) return false;
    sum += m.type->size();
  }
  return sum == t->size();
}

}  // namespace

absl::StatusOr<HookResult> HookCast(const Overload&, Expr& call, types::TypeTable&) {
  Args a(call);
  Expr* dtype = a.Keyword("dtype");
  if (!dtype && a.pos.size() == 2) dtype = a.pos[1];
  if (a.pos.empty() || !dtype || dtype->kind != ExprKind::TypeValue || !dtype->type_value)
    return Err("cast(a, dtype) needs a value and a type");
  TypeRef from = a.pos[0]->type;
  TypeRef to = dtype->type_value;
  // Structs too, as in Warp (wp.cast(s, wp.int32) of a 4-byte struct), where
  // every byte is a member's.
  if (!from || !PlainBits(from) || !PlainBits(to))
    return Err(Cat("cannot cast ", from ? from->ToString() : "no value", " to ", to->ToString(),
                   from && (from->is_struct() || to->is_struct())
                       ? " (a struct casts only when it holds no array and has no padding)"
                       : ""));
  // Warp's cast reinterprets the bits (wp.cast(1.0, wp.int32) == 1065353216).
  if (from->size() != to->size())
    return Err(Cat("cast() reinterprets bits: ", from->ToString(), " (", from->size(), " bytes) and ", to->ToString(),
                   " (", to->size(), " bytes) differ in size"));
  return Done(to, "wp::same_bits<$R>($0)");
}

namespace {

// The shape argument of zeros(): an int constant or a tuple of them.
const Expr* ZerosShapeArg(const Expr& call) {
  const size_t npos = call.operands.size() - call.keywords.size();
  for (size_t i = npos; i < call.operands.size(); ++i)
    if (call.keywords[i - npos] == "shape") return call.operands[i].get();
  return npos > 0 ? call.operands[0].get() : nullptr;
}

absl::StatusOr<std::vector<int>> ZerosShape(const Expr* shape) {
  if (!shape) return Err("zeros(): shape is required");
  std::vector<const Expr*> dims;
  if (shape->kind == ExprKind::Tuple) {
    for (const auto& d : shape->operands) dims.push_back(d.get());
  } else {
    dims.push_back(shape);
  }
  if (dims.empty() || dims.size() > types::kMaxArrayDims)
    return Err(Cat("zeros(): a local array has 1 to ", types::kMaxArrayDims, " dimensions"));
  std::vector<int> out;
  for (const Expr* d : dims) {
    auto n = IntConstant(d, "zeros(): in kernels, each dimension of shape");
    if (!n.ok()) return n.status();
    if (*n < 1 || *n > static_cast<int64_t>(kMaxLocalArrayBytes))
      return Err(Cat("zeros(): dimension ", *n, " is out of range"));
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

}  // namespace

// zeros(shape, dtype) in a kernel: a zeroed array of constant shape in the
// thread's own storage (Warp 1.19's local arrays).
absl::StatusOr<HookResult> HookZeros(const Overload&, Expr& call, types::TypeTable& table) {
  Args a(call);
  if (auto st = a.OnlyKeywords("zeros", {"shape", "dtype"}); !st.ok()) return st;
  if (a.pos.size() > 2) return Err("zeros() takes shape and dtype");
  auto shape = ZerosShape(ZerosShapeArg(call));
  if (!shape.ok()) return shape.status();
  Expr* dtype = a.Keyword("dtype");
  if (!dtype && a.pos.size() == 2) dtype = a.pos[1];
  TypeRef elem = types::Scalar(ScalarKind::kFloat32);
  if (dtype) {
    if (dtype->kind != ExprKind::TypeValue || !dtype->type_value)
      return Err("zeros(): dtype must be a type such as wp.float32 or wp.vec3");
    elem = dtype->type_value;
  }
  if (elem->is_void() || elem->is_array() || elem->holds_array())
    return Err(Cat("zeros(): local arrays of ", elem->ToString(), " are not supported"));
  uint64_t bytes = elem->size();
  for (int n : *shape) bytes *= static_cast<uint64_t>(n);
  if (bytes > kMaxLocalArrayBytes)
    return Err(Cat("zeros(): a local array of ", bytes, " bytes is larger than the ", kMaxLocalArrayBytes,
                   " bytes a module may hold in local arrays"));
  return Done(table.Array(elem, static_cast<int>(shape->size())), "");
}

absl::StatusOr<HookResult> HookUnsupported(const Overload& o, Expr&, types::TypeTable&) {
  if (o.name == "static")
    return Err("wp.static() must be evaluated by the client (it never reaches the server); update the client");
  if (o.name == "array")
    return Err("wp.array() from a raw pointer is not available in warpd kernels: pointers are not safe to share "
               "between tenants");
  return Err(Cat("wp.", o.name, "() is not supported by warpd yet"));
}

}  // namespace warpd::builtins::internal

namespace warpd::builtins {

std::vector<int> LocalArrayShape(const ir::Expr& call) {
  auto shape = internal::ZerosShape(internal::ZerosShapeArg(call));
  return shape.ok() ? *std::move(shape) : std::vector<int>{};
}

}  // namespace warpd::builtins
