#include "compiler/builtins/builtins.h"

#include <gtest/gtest.h>

#include <set>

namespace warpd::builtins {
namespace {

using ir::ScalarKind;
using ir::Type;

Type F32() { return Type::Scalar(ScalarKind::kFloat32); }
Type F64() { return Type::Scalar(ScalarKind::kFloat64); }
Type I32() { return Type::Scalar(ScalarKind::kInt32); }

std::optional<Type> Resolve(std::string_view name, std::vector<Type> args) {
  for (const auto* o : Lookup(name))
    if (auto m = MatchOverload(*o, args)) return m->result;
  return std::nullopt;
}

TEST(BuiltinsTest, StrictScalarMatching) {
  EXPECT_EQ(Resolve("add", {F32(), F32()}), F32());
  EXPECT_EQ(Resolve("add", {I32(), I32()}), I32());
  EXPECT_FALSE(Resolve("add", {F32(), I32()}));  // no implicit conversion
  EXPECT_FALSE(Resolve("add", {F32(), F64()}));
  EXPECT_EQ(Resolve("lt", {F64(), F64()}), Type::Scalar(ScalarKind::kBool));
  EXPECT_FALSE(Resolve("sqrt", {I32()}));  // float only
  EXPECT_FALSE(Resolve("bit_and", {F32(), F32()}));
}

TEST(BuiltinsTest, VectorOverloads) {
  Type v3 = Type::Vector(3, ScalarKind::kFloat32);
  Type v3d = Type::Vector(3, ScalarKind::kFloat64);
  Type v4 = Type::Vector(4, ScalarKind::kFloat32);
  EXPECT_EQ(Resolve("dot", {v3, v3}), F32());
  EXPECT_EQ(Resolve("dot", {v3d, v3d}), F64());
  EXPECT_FALSE(Resolve("dot", {v3, v4}));
  EXPECT_EQ(Resolve("cross", {v3, v3}), v3);
  EXPECT_FALSE(Resolve("cross", {v4, v4}));
  EXPECT_EQ(Resolve("mul", {v3, F32()}), v3);
  EXPECT_EQ(Resolve("mul", {F32(), v3}), v3);
  EXPECT_FALSE(Resolve("mul", {v3, F64()}));
  EXPECT_EQ(Resolve("normalize", {v4}), v4);
  EXPECT_EQ(Resolve("length", {v3d}), F64());
}

TEST(BuiltinsTest, EveryRegularOverloadNamesARuntimeFunction) {
  std::set<std::string_view> names;
  for (const auto& o : Table()) {
    names.insert(o.name);
    if (o.special == Special::kNone && o.name != "pos") EXPECT_EQ(o.cpp.substr(0, 4), "wp::") << o.name;
  }
  for (const char* required : {"dot", "cross", "length", "normalize", "tid", "range", "vec3", "float32",
                               "int32", "atomic_add", "min", "max", "sqrt"})
    EXPECT_TRUE(names.count(required)) << required;
}

TEST(BuiltinsTest, VectorNames) {
  EXPECT_EQ(VectorTypeFromName("vec3"), Type::Vector(3, ScalarKind::kFloat32));
  EXPECT_EQ(VectorTypeFromName("vec4d"), Type::Vector(4, ScalarKind::kFloat64));
  EXPECT_EQ(VectorTypeFromName("vec2h"), Type::Vector(2, ScalarKind::kFloat16));
  EXPECT_FALSE(VectorTypeFromName("vec5"));
  EXPECT_FALSE(VectorTypeFromName("vec3q"));
  // The names Type prints for vectors parse back.
  for (auto k : {ScalarKind::kFloat32, ScalarKind::kFloat64, ScalarKind::kInt32, ScalarKind::kUInt8})
    EXPECT_EQ(VectorTypeFromName(Type::Vector(3, k).ToString()), Type::Vector(3, k));
}

TEST(BuiltinsTest, SignatureText) {
  auto dot = Lookup("dot");
  ASSERT_EQ(dot.size(), 1u);
  EXPECT_EQ(Signature(*dot[0]), "dot(vec<N,T>, vec<N,T>) -> T  [T: int or float scalar]");
}

}  // namespace
}  // namespace warpd::builtins

#include <fstream>
#include <sstream>

#include "compiler/builtins/builtins_doc.h"

namespace warpd::builtins {
namespace {

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
