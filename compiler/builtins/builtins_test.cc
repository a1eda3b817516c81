#include "compiler/builtins/builtins.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "compiler/builtins/builtins_doc.h"

namespace warpd::builtins {
namespace {

using types::ScalarKind;
using types::TypeRef;

TypeRef F32() { return types::Scalar(ScalarKind::kFloat32); }
TypeRef F64() { return types::Scalar(ScalarKind::kFloat64); }
TypeRef I32() { return types::Scalar(ScalarKind::kInt32); }
TypeRef V3() { return types::Vector(3, ScalarKind::kFloat32); }

// The result type of `name(args)`, or null when no overload fits.
TypeRef ResultOf(std::string_view name, std::vector<TypeRef> args) {
  auto r = Resolve(Lookup(name), args, types::TypeTable::Global());
  return r ? r->result : nullptr;
}
std::string SpellingOf(std::string_view name, std::vector<TypeRef> args) {
  auto r = Resolve(Lookup(name), args, types::TypeTable::Global());
  return r ? r->cpp : "";
}

TEST(BuiltinsTest, StrictScalarMatching) {
  EXPECT_EQ(ResultOf("add", {F32(), F32()}), F32());
  EXPECT_EQ(ResultOf("add", {I32(), I32()}), I32());
  EXPECT_EQ(ResultOf("add", {F32(), I32()}), nullptr);  // no implicit conversion
  EXPECT_EQ(ResultOf("add", {F32(), F64()}), nullptr);
  EXPECT_EQ(ResultOf("lt", {F64(), F64()}), types::Scalar(ScalarKind::kBool));
  EXPECT_EQ(ResultOf("sqrt", {I32()}), nullptr);  // Float family only
  EXPECT_EQ(ResultOf("bit_and", {F32(), F32()}), nullptr);
  EXPECT_EQ(ResultOf("sqrt", {types::Scalar(ScalarKind::kFloat16)}), types::Scalar(ScalarKind::kFloat16));
}

TEST(BuiltinsTest, TrailingDefaultsTakeTheBoundType) {
  // expect_near(a, b) leaves out tolerance (default 1e-6), typed as a's dtype.
  auto r = Resolve(Lookup("expect_near"), std::vector<TypeRef>{F64(), F64()}, types::TypeTable::Global());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->defaults.size(), 1u);
  EXPECT_EQ(r->defaults[0], F64());
  r = Resolve(Lookup("expect_near"), std::vector<TypeRef>{V3(), V3()}, types::TypeTable::Global());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->defaults.size(), 1u);
  EXPECT_EQ(r->defaults[0], F32());
  EXPECT_EQ(ResultOf("expect_near", {F32()}), nullptr);  // b has no default
  auto sig = ParseSignature("a: T, b: T = 0.5", "T", "T: Float");
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->params[1].default_value, 0.5);
  EXPECT_FALSE(ParseSignature("a: T = 0.5, b: T", "T", "T: Float").ok());  // a default must be trailing
  EXPECT_FALSE(ParseSignature("a: vec(3, T) = 0.5", "T", "T: Float").ok());  // scalars only
  EXPECT_FALSE(ParseSignature("a: T = x", "T", "T: Float").ok());
  // A default whose dtype no given argument binds cannot be typed: no match.
  sig = ParseSignature("a: S, b: T = 1", "", "T: Float");
  ASSERT_TRUE(sig.ok());
  Bindings b;
  EXPECT_FALSE(Match(*sig, std::vector<TypeRef>{F32()}, &b));
  EXPECT_TRUE(Match(*sig, std::vector<TypeRef>{F32(), F32()}, &b));
}

TEST(BuiltinsTest, VectorOverloadsBindLengthAndDtype) {
  TypeRef v3d = types::Vector(3, ScalarKind::kFloat64);
  TypeRef v4 = types::Vector(4, ScalarKind::kFloat32);
  TypeRef v7 = types::Vector(7, ScalarKind::kFloat32);
  EXPECT_EQ(ResultOf("dot", {V3(), V3()}), F32());
  EXPECT_EQ(ResultOf("dot", {v3d, v3d}), F64());
  EXPECT_EQ(ResultOf("dot", {v7, v7}), F32());
  EXPECT_EQ(ResultOf("dot", {V3(), v4}), nullptr);
  EXPECT_EQ(ResultOf("cross", {V3(), V3()}), V3());
  EXPECT_EQ(ResultOf("cross", {v4, v4}), nullptr);
  EXPECT_EQ(ResultOf("mul", {V3(), F32()}), V3());
  EXPECT_EQ(ResultOf("mul", {F32(), V3()}), V3());
  EXPECT_EQ(ResultOf("mul", {V3(), F64()}), nullptr);
  EXPECT_EQ(ResultOf("normalize", {v4}), v4);
  EXPECT_EQ(ResultOf("length", {v3d}), F64());
  EXPECT_EQ(ResultOf("length", {types::Vector(3, ScalarKind::kInt32)}), nullptr);
}

TEST(BuiltinsTest, MatrixShapesFollowThePatterns) {
  TypeRef m23 = types::Matrix(2, 3, ScalarKind::kFloat32);
  TypeRef m34 = types::Matrix(3, 4, ScalarKind::kFloat32);
  EXPECT_EQ(ResultOf("mul", {m23, m34}), types::Matrix(2, 4, ScalarKind::kFloat32));
  EXPECT_EQ(ResultOf("mul", {m34, m23}), nullptr);
  EXPECT_EQ(ResultOf("mul", {m23, V3()}), types::Vector(2, ScalarKind::kFloat32));
  EXPECT_EQ(ResultOf("transpose", {m23}), types::Matrix(3, 2, ScalarKind::kFloat32));
  EXPECT_EQ(ResultOf("outer", {types::Vector(2, ScalarKind::kFloat32), V3()}), m23);
  EXPECT_EQ(ResultOf("determinant", {types::Matrix(3, 3, ScalarKind::kFloat64)}), F64());
  EXPECT_EQ(ResultOf("determinant", {m23}), nullptr);
  EXPECT_EQ(ResultOf("quat_rotate", {types::Quat(ScalarKind::kFloat32), V3()}), V3());
  EXPECT_EQ(ResultOf("transform_point", {types::Transform(ScalarKind::kFloat32), V3()}), V3());
}

TEST(BuiltinsTest, SpellingsComeFromTheTable) {
  EXPECT_EQ(SpellingOf("dot", {V3(), V3()}), "wp::dot");
  // where/select: a template with the arguments in Warp's orders.
  TypeRef b = types::Scalar(ScalarKind::kBool);
  EXPECT_EQ(SpellingOf("where", {b, F32(), F32()}), "(($0) ? ($1) : ($2))");
  EXPECT_EQ(SpellingOf("select", {b, F32(), F32()}), "(($0) ? ($2) : ($1))");
}

TEST(BuiltinsTest, EveryOverloadIsSpelledAndGrouped) {
  for (const auto& o : Table()) {
    EXPECT_FALSE(o.group.empty()) << o.name;
    if (o.hook || o.form == Form::kPrint) continue;
    EXPECT_FALSE(o.cpp.empty()) << o.name;
    bool callee = o.cpp.substr(0, 4) == "wp::";
    bool templ = o.cpp.find('$') != std::string::npos || o.cpp.front() == '(';
    EXPECT_TRUE(callee || templ) << o.name << ": " << o.cpp;
  }
}

TEST(BuiltinsTest, UnknownNamesGetSuggestions) {
  auto s = Suggest("normalise");
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0], "normalize");
  EXPECT_TRUE(Suggest("zzzzzzzzzz").empty());
  EXPECT_FALSE(Lookup("wp.dot").empty());
  EXPECT_TRUE(Lookup("no_such_builtin").empty());
}

TEST(BuiltinsTest, SignatureText) {
  auto dot = Lookup("dot");
  ASSERT_FALSE(dot.empty());
  EXPECT_EQ(SignatureText(*dot[0]), "dot(a: vec(N, T), b: vec(N, T)) -> T  [T: Scalar]");
  auto svd = Lookup("svd3");
  ASSERT_EQ(svd.size(), 2u);
  EXPECT_EQ(SignatureText(*svd[0]), "svd3(A: mat(3, 3, T)) -> tuple(mat(3, 3, T), vec(3, T), mat(3, 3, T))  [T: Float]");
  EXPECT_EQ(SignatureText(*svd[1]),
            "svd3(A: mat(3, 3, T), U: out mat(3, 3, T), sigma: out vec(3, T), V: out mat(3, 3, T))  [T: Float]");
}

TEST(BuiltinsDocTest, DocsMatchTheTable) {
  std::ifstream in(std::string(WARPD_SOURCE_DIR) + "/docs/builtins.md");
  ASSERT_TRUE(in) << "docs/builtins.md is missing: build/bin/warpd-builtins > docs/builtins.md";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), BuiltinsMarkdown())
      << "docs/builtins.md is out of date: build/bin/warpd-builtins > docs/builtins.md";
}

}  // namespace
}  // namespace warpd::builtins
