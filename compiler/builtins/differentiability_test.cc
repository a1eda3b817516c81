// The builtin table's differentiability, overload by overload, against Warp
// 1.19's registry (tests/fixtures/warp_builtins_1.19.json, a copy of
// ../shared/warp-builtins-1.19.json), and the decisions for warpd's names
// that Warp's public list lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins {
namespace {

// A minimal JSON reader for the fixture: objects keep their key order (the
// order of a builtin's arguments).
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // strings; numbers as written
  std::vector<Json> items;              // array items; object values
  std::vector<std::string> keys;        // object keys, beside their items

  const Json* Get(std::string_view key) const {
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &items[i];
    return nullptr;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}
  bool Read(Json* out) {
    if (!Value(out)) return false;
    Space();
    return i_ == s_.size();
  }

 private:
  void Space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    for (; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      if (s_[i_] == '\\' && ++i_ < s_.size()) {
        const char c = s_[i_];
        if (c == 'u') return false;  // the fixture has none
        *out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
      } else {
        *out += s_[i_];
      }
    }
    return i_++ < s_.size();
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool Value(Json* v) {
    Space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      v->kind = Json::Kind::kObject;
      ++i_;
      if (Eat('}')) return true;
      do {
        v->keys.emplace_back();
        v->items.emplace_back();
        if (!String(&v->keys.back()) || !Eat(':') || !Value(&v->items.back())) return false;
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      v->kind = Json::Kind::kArray;
      ++i_;
      if (Eat(']')) return true;
      do {
        v->items.emplace_back();
        if (!Value(&v->items.back())) return false;
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      v->kind = Json::Kind::kString;
      return String(&v->text);
    }
    if (Word("true") || Word("false")) {
      v->kind = Json::Kind::kBool;
      v->boolean = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
      return true;
    }
    if (Word("null")) return true;
    v->kind = Json::Kind::kNumber;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || std::strchr("+-.eE", s_[i_])))
      v->text += s_[i_++];
    return !v->text.empty();
  }

  std::string_view s_;
  size_t i_ = 0;
};

struct WarpOverload {
  std::vector<std::pair<std::string, std::string>> args;  // name, Warp's type text
  bool differentiable = false;
};
struct WarpBuiltin {
  std::string group;
  std::vector<WarpOverload> overloads;
};

// Warp's groups whose builtins warpd does not target (no table entries).
const std::set<std::string> kUntargetedGroups = {"Tile Primitives", "Geometry", "Volumes", "Textures"};

const std::map<std::string, WarpBuiltin>& Warp() {
  static const auto* warp = [] {
    auto* out = new std::map<std::string, WarpBuiltin>;
    const std::string path = std::string(WARPD_SOURCE_DIR) + "/tests/fixtures/warp_builtins_1.19.json";
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    Json root;
    if (!in || !JsonReader(text.str()).Read(&root) || root.kind != Json::Kind::kObject) {
      ADD_FAILURE() << "cannot read " << path;
      return out;
    }
    for (size_t i = 0; i < root.keys.size(); ++i) {
      const std::string& name = root.keys[i];
      const Json& b = root.items[i];
      if (name.front() == '_') continue;  // _about
      WarpBuiltin w;
      w.group = b.Get("group")->text;
      for (const Json& o : b.Get("overloads")->items) {
        WarpOverload wo;
        const Json* args = o.Get("args");
        for (size_t k = 0; k < args->keys.size(); ++k) wo.args.emplace_back(args->keys[k], args->items[k].text);
        wo.differentiable = o.Get("differentiable")->boolean;
        w.overloads.push_back(std::move(wo));
      }
      (*out)[name] = std::move(w);
    }
    return out;
  }();
  return *warp;
}

// The shape of a value type, as far as matching needs it: Warp's type text
// and the table's patterns both map to one. Dims: > 0 fixed, 0 any.
struct Shape {
  enum Kind { kAny, kScalar, kVector, kMatrix, kQuat, kTransform, kArray, kOther } kind = kAny;
  int dims[2] = {0, 0};
};

int DimOf(std::string_view s) { return s == "Any" || s.empty() ? 0 : std::stoi(std::string(s)); }

Shape WarpShape(std::string_view t) {
  static const std::set<std::string_view> kScalars = {
      "Scalar", "Float",  "Int",     "int",      "float",   "bool",    "int8",    "uint8",  "int16",
      "uint16", "int32",  "uint32",  "int64",    "uint64",  "float16", "float32", "float64", "bfloat16"};
  Shape s;
  auto between = [&](std::string_view open, std::string_view close) {
    size_t a = t.find(open);
    if (a == std::string_view::npos) return std::string_view();
    a += open.size();
    return t.substr(a, t.find(close, a) - a);
  };
  if (t == "Any") return s;
  if (kScalars.count(t)) {
    s.kind = Shape::kScalar;
  } else if (t.substr(0, 7) == "vector(") {
    s.kind = Shape::kVector;
    s.dims[0] = DimOf(between("length=", ","));
  } else if (t.substr(0, 3) == "vec" && t.size() >= 4 && std::isdigit(static_cast<unsigned char>(t[3]))) {
    s.kind = Shape::kVector;  // vec3f
    s.dims[0] = t[3] - '0';
  } else if (t.substr(0, 7) == "matrix(") {
    s.kind = Shape::kMatrix;
    s.dims[0] = DimOf(between("shape=(", ","));
    s.dims[1] = DimOf(between(", ", ")"));
  } else if (t.substr(0, 3) == "mat" && t.size() >= 5 && std::isdigit(static_cast<unsigned char>(t[3]))) {
    s.kind = Shape::kMatrix;  // mat44f
    s.dims[0] = t[3] - '0';
    s.dims[1] = t[4] - '0';
  } else if (t.substr(0, 4) == "quat") {
    s.kind = Shape::kQuat;
  } else if (t.substr(0, 9) == "transform") {
    s.kind = Shape::kTransform;
  } else if (t.find("array(") != std::string_view::npos) {
    s.kind = Shape::kArray;
  } else {
    s.kind = Shape::kOther;  // tuples, strings
  }
  return s;
}

Shape TableShape(const Pattern& p) {
  Shape s;
  auto dim = [](int d) { return d > 0 ? d : 0; };
  switch (p.kind) {
    case Pattern::Kind::kScalar: s.kind = Shape::kScalar; break;
    case Pattern::Kind::kVector: s.kind = Shape::kVector; break;
    case Pattern::Kind::kMatrix: s.kind = Shape::kMatrix; break;
    case Pattern::Kind::kQuat: s.kind = Shape::kQuat; break;
    case Pattern::Kind::kTransform: s.kind = Shape::kTransform; break;
    case Pattern::Kind::kArray: return Shape{Shape::kArray, {0, 0}};  // ndim is not a shape
    case Pattern::Kind::kValue: return s;
    case Pattern::Kind::kTuple:
    case Pattern::Kind::kQuery: s.kind = Shape::kOther; break;
  }
  s.dims[0] = dim(p.dims[0]);
  s.dims[1] = dim(p.dims[1]);
  return s;
}

bool Fits(const Shape& a, const Shape& b) {
  if (a.kind == Shape::kAny || b.kind == Shape::kAny) return true;
  if (a.kind != b.kind) return false;
  for (int i = 0; i < 2; ++i)
    if (a.dims[i] && b.dims[i] && a.dims[i] != b.dims[i]) return false;
  return true;
}

// The Warp overloads a table overload stands for: a hook stands for all of
// its name's; a regular overload for those with its parameter names in order
// and fitting types, or, where there is none, those it is a shorter form of
// (Warp's trailing defaults that the table spells as a separate overload).
std::vector<const WarpOverload*> Counterparts(const Overload& o, const WarpBuiltin& w) {
  std::vector<const WarpOverload*> exact, shorter;
  for (const WarpOverload& wo : w.overloads) {
    if (o.hook) {
      exact.push_back(&wo);
      continue;
    }
    const auto& params = o.sig.params;
    if (params.size() > wo.args.size()) continue;
    bool fits = true;
    for (size_t i = 0; i < params.size() && fits; ++i)
      fits = params[i].name == wo.args[i].first && Fits(TableShape(params[i].pattern), WarpShape(wo.args[i].second));
    if (fits) (params.size() == wo.args.size() ? exact : shorter).push_back(&wo);
  }
  return exact.empty() ? shorter : exact;
}

std::string WarpText(std::string_view name, const WarpOverload& wo) {
  std::vector<std::string> args;
  for (const auto& [n, t] : wo.args) args.push_back(Cat(n, ": ", t));
  return Cat(name, "(", Join(args, ", "), ")");
}

std::string_view YesNo(bool b) { return b ? "yes" : "no"; }

// Warp 1.19 registers the out-parameter forms of these names as hidden
// builtins, absent from the public fixture; the table spells them with
// `out` parameters.
const std::set<std::string_view> kHiddenOutForms = {
    "mesh_query_point",  "mesh_query_point_no_sign",     "mesh_query_furthest_point_no_sign",
    "mesh_query_ray",    "mesh_query_point_sign_normal", "mesh_query_point_sign_winding_number",
    "mesh_query_point_sign_parity"};

// Known gaps, each reported by name: Warp 1.19 differentiates these and
// warpd has no adjoint for them yet (the table says not differentiable, so a
// Tape treats their results as constants). Remove a name when its adjoint
// lands; a name listed here that agrees with Warp fails the test. None now.
const std::set<std::string_view> kGradientsPending = {};

TEST(BuiltinsDifferentiabilityTest, EveryOverloadAgreesWithWarp119) {
  const auto& warp = Warp();
  ASSERT_GT(warp.size(), 250u) << "the fixture parse found too few builtins";
  std::vector<std::string> mismatches;
  std::set<const WarpOverload*> covered;
  for (const Overload& o : Table()) {
    auto it = warp.find(std::string(o.name));
    if (it == warp.end()) continue;  // warpd's own names: WarpdOnlyNamesAreDecided
    auto counterparts = Counterparts(o, it->second);
    const bool has_out = std::any_of(o.sig.params.begin(), o.sig.params.end(), [](const auto& p) { return p.out; });
    if (counterparts.empty() && !(has_out && kHiddenOutForms.count(o.name)))
      mismatches.push_back(Cat(SignatureText(o), ": no Warp 1.19 overload with these argument names and types"));
    for (const WarpOverload* wo : counterparts) {
      covered.insert(wo);
      if (kGradientsPending.count(o.name)) {
        if (o.differentiable || !wo->differentiable)
          mismatches.push_back(Cat(SignatureText(o), ": listed in kGradientsPending but agrees with Warp 1.19"));
        continue;
      }
      if (wo->differentiable != o.differentiable)
        mismatches.push_back(Cat(SignatureText(o), ": table ", YesNo(o.differentiable), ", Warp 1.19 ",
                                 YesNo(wo->differentiable), " for ", WarpText(o.name, *wo)));
    }
  }
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " differentiability mismatches:\n  "
                                  << Join(mismatches, "\n  ");
  // Warp's overloads that no table overload stands for (a kind of argument
  // warpd does not take): none has a differentiability to disagree with, but
  // a new table overload must not miss its counterpart silently.
  std::vector<std::string> uncovered;
  for (const auto& [name, w] : warp) {
    if (kUntargetedGroups.count(w.group) || Lookup(name).empty()) continue;
    for (const WarpOverload& wo : w.overloads) {
      bool tile = false;  // tiles are not targeted (Tile Primitives)
      for (const auto& arg : wo.args) tile = tile || arg.second.substr(0, 5) == "tile(";
      if (!tile && !covered.count(&wo)) uncovered.push_back(WarpText(name, wo));
    }
  }
  EXPECT_TRUE(uncovered.empty()) << uncovered.size() << " Warp 1.19 overloads without a table overload:\n  "
                                 << Join(uncovered, "\n  ");
}

TEST(BuiltinsDifferentiabilityTest, PerOverloadDecisionsWhereWarpDecidesPerOverload) {
  types::TypeRef f32 = types::Scalar(types::ScalarKind::kFloat32);
  types::TypeRef v3 = types::Vector(3, types::ScalarKind::kFloat32);
  auto resolved = [](std::string_view name, std::vector<types::TypeRef> args) {
    auto r = Resolve(Lookup(name), args, types::TypeTable::Global());
    return r ? r->overload : nullptr;
  };
  const Overload* scalar_mod = resolved("mod", {f32, f32});
  const Overload* vector_mod = resolved("mod", {v3, v3});
  ASSERT_TRUE(scalar_mod && vector_mod);
  EXPECT_TRUE(scalar_mod->differentiable);
  EXPECT_FALSE(vector_mod->differentiable);
}

// Names in the table that Warp 1.19's public list lacks, and why each is (or
// is not) differentiable. A new warpd-only name fails here until decided.
struct WarpdOnly {
  bool differentiable;
  std::string_view why;
};
std::optional<WarpdOnly> WarpdOnlyDecision(std::string_view name) {
  static const std::set<std::string_view> kFloatCasts = {"float", "half", "float16", "bfloat16", "float32", "float64"};
  static const std::set<std::string_view> kOtherCasts = {"int",   "bool",   "int8",  "uint8",  "int16",
                                                         "uint16", "int32", "uint32", "int64", "uint64"};
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (kFloatCasts.count(name)) return WarpdOnly{true, "Warp's hidden cast to a float type (differentiable)"};
  if (kOtherCasts.count(name)) return WarpdOnly{false, "Warp's hidden cast to an integer or bool (not differentiable)"};
  if (starts("vec") || starts("mat") || starts("quat") || starts("transform") || starts("spatial_vector") ||
      starts("spatial_matrix"))
    return WarpdOnly{true, "a typed constructor: Warp's vector/matrix/quaternion/transformation (differentiable)"};
  if (name == "eq" || name == "ne" || name == "lt" || name == "le" || name == "gt" || name == "ge")
    return WarpdOnly{false, "a comparison: Warp emits it without a builtin and without an adjoint"};
  if (name == "range" || name == "reversed" || name == "expect_eq" || name == "expect_neq")
    return WarpdOnly{false, "Warp's hidden builtin, registered not differentiable"};
  if (name == "struct") return WarpdOnly{false, "warpd's zero-initialized struct of a type: no value inputs"};
  if (name == "construct_like")
    return WarpdOnly{true, "type(x)(args): the value type's constructor, differentiable in Warp"};
  return std::nullopt;
}

TEST(BuiltinsDifferentiabilityTest, WarpdOnlyNamesAreDecided) {
  std::vector<std::string> problems;
  for (const Overload& o : Table()) {
    if (Warp().count(std::string(o.name))) continue;
    auto d = WarpdOnlyDecision(o.name);
    if (!d)
      problems.push_back(Cat(o.name, ": not in Warp 1.19; decide its differentiability in WarpdOnlyDecision"));
    else if (d->differentiable != o.differentiable)
      problems.push_back(Cat(SignatureText(o), ": table ", YesNo(o.differentiable), ", decided ",
                             YesNo(d->differentiable), " (", d->why, ")"));
  }
  EXPECT_TRUE(problems.empty()) << Join(problems, "\n");
}

TEST(BuiltinsDifferentiabilityTest, TheBuilderRequiresOneDecisionPerEntry) {
  std::vector<Overload> t;
  internal::Builder b(t);
  b.Group("Test");
  b.Add("undecided", "x: T", "T", "T: Float");
  b.Add("settled", "x: T", "T", "T: Float").NoDiff();
  b.Add("twice", "x: T", "T", "T: Float").Diff().NoDiff();
  absl::Status s = b.Finish();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("undecided(x: T)"), std::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("twice(x: T) [decided twice]"), std::string_view::npos) << s.message();
  EXPECT_EQ(s.message().find("settled"), std::string_view::npos) << s.message();

  std::vector<Overload> u;
  internal::Builder ok(u);
  ok.Group("Test");
  ok.Add("sin", "x: T", "T", "T: Float").Diff();
  ok.Hook("tid", nullptr).NoDiff();
  EXPECT_TRUE(ok.Finish().ok());
  EXPECT_TRUE(u[0].differentiable);
  EXPECT_FALSE(u[1].differentiable);
}

}  // namespace
}  // namespace warpd::builtins
