#include "common/str_cat.h"
#include "compiler/builtins/signature.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace warpd::builtins {
namespace {

using types::ScalarKind;
using types::TypeRef;

constexpr std::string_view kIntVars = "NMRCK";

// The pattern words of the query types.
constexpr std::pair<std::string_view, types::QueryKind> kQueryWords[] = {
    {"hash_grid_query", types::QueryKind::kHashGrid},  {"bvh_query_aabb", types::QueryKind::kBvhAabb},
    {"bvh_query_ray", types::QueryKind::kBvhRay},      {"bvh_query_capsule", types::QueryKind::kBvhCapsule},
    {"bvh_query_sphere", types::QueryKind::kBvhSphere}, {"mesh_query_point", types::QueryKind::kMeshPoint},
    {"mesh_query_ray", types::QueryKind::kMeshRay},     {"mesh_query_aabb", types::QueryKind::kMeshAabb},
    {"mesh_query_sphere", types::QueryKind::kMeshSphere}, {"bvh_query", types::QueryKind::kBvhAny},
    {"mesh_query", types::QueryKind::kMeshAny}, {"mesh", types::QueryKind::kMesh},
};

std::optional<types::QueryKind> QueryNamed(std::string_view w) {
  for (const auto& [word, kind] : kQueryWords)
    if (word == w) return kind;
  return std::nullopt;
}

std::string_view QueryName(types::QueryKind k) {
  for (const auto& [word, kind] : kQueryWords)
    if (kind == k) return word;
  return "query";
}

int IntVar(char c) {
  size_t i = kIntVars.find(c);
  return i == std::string_view::npos ? -1 : static_cast<int>(i);
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  void Skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Skip();
    return i_ >= s_.size();
  }
  bool Peek(char c) {
    Skip();
    return i_ < s_.size() && s_[i_] == c;
  }
  char Next() { return s_[i_++]; }
  std::string Word() {
    Skip();
    size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  absl::Status Error(std::string_view what) const {
    return absl::InternalError(Cat("builtin table: ", what, " in '", s_, "' at ", i_));
  }

  // An integer: a literal or an int variable.
  absl::StatusOr<int> Dim() {
    std::string w = Word();
    if (w.size() == 1 && IntVar(w[0]) >= 0) return -(IntVar(w[0]) + 1);
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0]))) return std::stoi(w);
    return Error("expected a dimension");
  }

  // A dtype: T, S or a scalar name.
  absl::Status DType(Pattern* p) {
    std::string w = Word();
    if (w == "T" || w == "S") {
      p->dtype_var = w == "T" ? 0 : 1;
      return absl::OkStatus();
    }
    if (w == "V" || w == "W") {
      p->value_var = w == "V" ? 0 : 1;
      return absl::OkStatus();
    }
    auto s = types::ScalarFromName(w);
    if (!s) return Error("expected a dtype");
    p->scalar = *s;
    return absl::OkStatus();
  }

  absl::StatusOr<Pattern> Type() {
    Pattern p;
    std::string w = Word();
    if (w == "T" || w == "S") {
      p.kind = Pattern::Kind::kScalar;
      p.dtype_var = w == "T" ? 0 : 1;
      return p;
    }
    if (w == "V" || w == "W") {
      p.kind = Pattern::Kind::kValue;
      p.value_var = w == "V" ? 0 : 1;
      return p;
    }
    if (auto s = types::ScalarFromName(w)) {
      p.kind = Pattern::Kind::kScalar;
      p.scalar = *s;
      return p;
    }
    if (!Eat('(')) return Error("expected '('");
    if (w == "tuple") {
      p.kind = Pattern::Kind::kTuple;
      do {
        auto e = Type();
        if (!e.ok()) return e.status();
        if (e->kind == Pattern::Kind::kTuple) return Error("nested tuple");
        p.elements.push_back(*std::move(e));
      } while (Eat(','));
      if (!Eat(')')) return Error("expected ')'");
      return p;
    }
    if (w == "vec") {
      p.kind = Pattern::Kind::kVector;
      auto d = Dim();
      if (!d.ok()) return d.status();
      p.dims[0] = *d;
      if (!Eat(',')) return Error("expected ','");
    } else if (w == "mat") {
      p.kind = Pattern::Kind::kMatrix;
      for (int k = 0; k < 2; ++k) {
        auto d = Dim();
        if (!d.ok()) return d.status();
        p.dims[k] = *d;
        if (!Eat(',')) return Error("expected ','");
      }
    } else if (w == "quat") {
      p.kind = Pattern::Kind::kQuat;
    } else if (w == "transform") {
      p.kind = Pattern::Kind::kTransform;
    } else if (w == "array") {
      p.kind = Pattern::Kind::kArray;
    } else if (std::optional<types::QueryKind> q = QueryNamed(w)) {
      p.kind = Pattern::Kind::kQuery;
      p.query = *q;
    } else {
      return Error("unknown type constructor");
    }
    if (auto st = DType(&p); !st.ok()) return st;
    if (p.value_var >= 0 && p.kind != Pattern::Kind::kArray) return Error("V/W only as an array dtype");
    if (p.kind == Pattern::Kind::kArray && Eat(',')) {
      auto d = Dim();
      if (!d.ok()) return d.status();
      p.dims[0] = *d;
    }
    if (!Eat(')')) return Error("expected ')'");
    return p;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

bool BindDType(const Signature& sig, const Pattern& p, ScalarKind s, Bindings* b) {
  if (p.dtype_var < 0) return s == p.scalar;
  if (!InFamily(s, sig.families[p.dtype_var])) return false;
  auto& slot = b->dtypes[p.dtype_var];
  if (slot && *slot != s) return false;
  slot = s;
  return true;
}

bool BindDim(int want, int got, Bindings* b) {
  if (want > 0) return want == got;
  if (want == 0) return true;
  int& slot = b->ints[-want - 1];
  if (slot && slot != got) return false;
  slot = got;
  return true;
}

bool BindValue(int var, TypeRef t, Bindings* b) {
  TypeRef& slot = b->values[var];
  if (slot && !types::SameType(slot, t)) return false;
  if (!slot) slot = t;
  return true;
}

bool MatchOne(const Signature& sig, const Pattern& p, TypeRef t, Bindings* b) {
  using K = Pattern::Kind;
  switch (p.kind) {
    case K::kScalar:
      return t->is_scalar() && BindDType(sig, p, t->scalar(), b);
    case K::kVector:
      return t->is_vector() && BindDim(p.dims[0], t->length(), b) && BindDType(sig, p, t->scalar(), b);
    case K::kMatrix:
      return t->is_matrix() && BindDim(p.dims[0], t->rows(), b) && BindDim(p.dims[1], t->cols(), b) &&
             BindDType(sig, p, t->scalar(), b);
    case K::kQuat:
      return t->is_quat() && BindDType(sig, p, t->scalar(), b);
    case K::kTransform:
      return t->is_transform() && BindDType(sig, p, t->scalar(), b);
    case K::kArray:
      // Builtins take plain arrays only (atomics on indexedarrays go through
      // their hook and an element address).
      if (!t->is_array() || t->is_indexed_array() || !BindDim(p.dims[0], t->ndim(), b)) return false;
      if (p.value_var >= 0) return BindValue(p.value_var, t->element(), b);
      return t->element()->is_scalar() && BindDType(sig, p, t->element()->scalar(), b);
    case K::kValue:
      return t->is_value() && !t->is_array() && !t->is_tuple() && BindValue(p.value_var, t, b);
    case K::kQuery:
      return t->is_query() && t->query_kind() == p.query && BindDType(sig, p, t->scalar(), b);
    case K::kTuple:
      return false;  // results only
  }
  return false;
}

std::string DimText(int d, const char* any) {
  if (d > 0) return std::to_string(d);
  if (d == 0) return any;
  return std::string(1, kIntVars[-d - 1]);
}

}  // namespace

bool InFamily(ScalarKind s, Family f) {
  switch (f) {
    case Family::kScalar: return s != ScalarKind::kBool;
    case Family::kFloat: return types::IsFloat(s);
    case Family::kInt: return types::IsInteger(s);
    case Family::kCond: return s == types::ScalarKind::kBool || types::IsInteger(s);
    case Family::kAny: return true;
  }
  return false;
}

std::string_view FamilyName(Family f) {
  switch (f) {
    case Family::kScalar: return "Scalar";
    case Family::kFloat: return "Float";
    case Family::kInt: return "Int";
    case Family::kCond: return "Cond";
    case Family::kAny: return "Any";
  }
  return "";
}

absl::StatusOr<Signature> ParseSignature(std::string_view params, std::string_view result,
                                         std::string_view constraints) {
  Signature sig;
  Parser pp(params);
  while (!pp.AtEnd()) {
    Param prm;
    prm.name = pp.Word();
    if (prm.name.empty() || !pp.Eat(':')) return pp.Error("expected 'name:'");
    Parser save = pp;
    if (pp.Word() == "out") {
      prm.out = true;
    } else {
      pp = save;
    }
    auto t = pp.Type();
    if (!t.ok()) return t.status();
    if (t->kind == Pattern::Kind::kTuple) return pp.Error("tuples only as results");
    prm.pattern = *t;
    if (pp.Eat('=')) {
      std::string text;
      while (!pp.AtEnd() && !pp.Peek(',')) text += pp.Next();
      double v = 0;
      if (t->kind != Pattern::Kind::kScalar || !absl::SimpleAtod(text, &v)) return pp.Error("expected a number");
      prm.default_value = v;
    } else if (!sig.params.empty() && sig.params.back().default_value) {
      return pp.Error("a parameter without a default follows one with a default");
    }
    sig.params.push_back(std::move(prm));
    if (!pp.AtEnd() && !pp.Eat(',')) return pp.Error("expected ','");
  }
  if (!result.empty()) {
    Parser rp(result);
    auto t = rp.Type();
    if (!t.ok()) return t.status();
    if (!rp.AtEnd()) return rp.Error("trailing text");
    sig.result = *t;
  }
  Parser cp(constraints);
  while (!cp.AtEnd()) {
    std::string var = cp.Word();
    if ((var != "T" && var != "S") || !cp.Eat(':')) return cp.Error("expected 'T:' or 'S:'");
    std::string fam = cp.Word();
    Family f;
    if (fam == "Scalar") f = Family::kScalar;
    else if (fam == "Float") f = Family::kFloat;
    else if (fam == "Int") f = Family::kInt;
    else if (fam == "Cond") f = Family::kCond;
    else if (fam == "Any") f = Family::kAny;
    else return cp.Error("unknown family");
    sig.families[var == "T" ? 0 : 1] = f;
    if (!cp.AtEnd() && !cp.Eat(',')) return cp.Error("expected ','");
  }
  return sig;
}

bool Match(const Signature& sig, std::span<const TypeRef> args, Bindings* b) {
  if (args.size() > sig.params.size()) return false;
  // Parameters left out must have defaults, of a type the others bind.
  for (size_t i = args.size(); i < sig.params.size(); ++i) {
    const Pattern& p = sig.params[i].pattern;
    if (!sig.params[i].default_value) return false;
    if (p.dtype_var >= 0 && std::none_of(sig.params.begin(), sig.params.begin() + static_cast<long>(args.size()),
                                         [&](const Param& q) { return q.pattern.dtype_var == p.dtype_var; }))
      return false;
  }
  *b = Bindings{};
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i] || !MatchOne(sig, sig.params[i].pattern, args[i], b)) return false;
  return true;
}

TypeRef Instantiate(const Pattern& p, const Bindings& b, types::TypeTable& table) {
  using K = Pattern::Kind;
  auto dim = [&](int d) { return d > 0 ? d : d < 0 ? b.ints[-d - 1] : 0; };
  ScalarKind s = p.dtype_var >= 0 ? b.dtypes[p.dtype_var].value_or(ScalarKind::kFloat32) : p.scalar;
  switch (p.kind) {
    case K::kScalar: return table.Scalar(s);
    case K::kVector: return table.Vector(dim(p.dims[0]), s);
    case K::kMatrix: return table.Matrix(dim(p.dims[0]), dim(p.dims[1]), s);
    case K::kQuat: return table.Quat(s);
    case K::kTransform: return table.Transform(s);
    case K::kArray: {
      TypeRef elem = p.value_var >= 0 ? b.values[p.value_var] : table.Scalar(s);
      return table.Array(elem, dim(p.dims[0]) ? dim(p.dims[0]) : 1);
    }
    case K::kValue: return b.values[p.value_var];
    case K::kQuery: return table.Query(p.query, s);
    case K::kTuple: {
      std::vector<TypeRef> elements;
      for (const Pattern& e : p.elements) elements.push_back(Instantiate(e, b, table));
      auto t = table.Tuple(std::move(elements));
      return t.ok() ? *t : nullptr;
    }
  }
  return nullptr;
}

std::string PatternText(const Pattern& p) {
  using K = Pattern::Kind;
  std::string dtype = p.value_var >= 0 ? std::string(p.value_var ? "W" : "V")
                      : p.dtype_var >= 0 ? std::string(p.dtype_var ? "S" : "T")
                                         : std::string(types::ScalarName(p.scalar));
  switch (p.kind) {
    case K::kScalar: return dtype;
    case K::kVector: return Cat("vec(", DimText(p.dims[0], "Any"), ", ", dtype, ")");
    case K::kMatrix:
      return Cat("mat(", DimText(p.dims[0], "Any"), ", ", DimText(p.dims[1], "Any"), ", ", dtype, ")");
    case K::kQuat: return Cat("quat(", dtype, ")");
    case K::kTransform: return Cat("transform(", dtype, ")");
    case K::kArray:
      if (p.dims[0] == 0) return Cat("array(", dtype, ")");
      return Cat("array(", dtype, ", ", DimText(p.dims[0], "Any"), ")");
    case K::kValue: return dtype;
    case K::kQuery: return Cat(QueryName(p.query), "(", dtype, ")");
    case K::kTuple: {
      std::string out = "tuple(";
      for (size_t i = 0; i < p.elements.size(); ++i) CatAppend(&out, i ? ", " : "", PatternText(p.elements[i]));
      return out + ")";
    }
  }
  return "?";
}

}  // namespace warpd::builtins
