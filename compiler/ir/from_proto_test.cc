#include "compiler/ir/from_proto.h"

#include <gtest/gtest.h>

#include "compiler/testing/ir_builder.h"

namespace warpd::ir {
namespace {

using namespace warpd::testing;

TEST(FromProtoTest, ConvertsKernelWithSpansAndTypes) {
  auto proto = ModuleOf({Kernel("k", {{"a", Arr(Vec(3), 2)}, {"s", F32()}},
                                {Assign(Name("x", 4), Bin(v1::BINOP_MUL, Name("s", 4), Float(2.0, 4), 4), 4)}, 3)});
  auto m = ModuleFromProto(proto);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->functions.size(), 1u);
  const Function& f = (*m)->functions[0];
  EXPECT_EQ(f.kind, FunctionKind::kKernel);
  EXPECT_EQ(f.params[0].type, types::TypeTable::Global().Array(types::Vector(3, types::ScalarKind::kFloat32), 2));
  EXPECT_EQ(f.params[0].type->ToString(), "array(dtype=vec3f, ndim=2)");
  EXPECT_EQ(f.params[1].type, types::Scalar(types::ScalarKind::kFloat32));
  const Stmt& s = *f.body[0];
  EXPECT_EQ(s.kind, StmtKind::Assign);
  EXPECT_EQ(s.span.line, 4);
  EXPECT_EQ((*m)->Where(s.span), "test.py:4:1");
  EXPECT_EQ(s.value->kind, ExprKind::Binary);
  EXPECT_EQ(s.value->binary_op, BinaryOp::kMul);
  EXPECT_EQ(std::get<double>(s.value->operands[1]->value), 2.0);
}

TEST(FromProtoTest, TypeRoundTrip) {
  using types::ScalarKind;
  types::TypeTable local;
  auto s = local.Struct("Particle", "Particle",
                        {{"x", types::Vector(3, ScalarKind::kFloat32)}, {"m", types::Scalar(ScalarKind::kFloat64)}});
  ASSERT_TRUE(s.ok()) << s.status();
  for (types::TypeRef t : {types::Scalar(ScalarKind::kUInt16), types::Vector(4, ScalarKind::kFloat64),
                           types::Matrix(2, 3, ScalarKind::kFloat16), types::Quat(ScalarKind::kFloat64),
                           types::Transform(ScalarKind::kFloat32),
                           types::TypeTable::Global().Array(types::Scalar(ScalarKind::kInt8), 4), *s,
                           local.Array(*s, 2)}) {
    types::TypeTable into;
    auto back = TypeFromProto(TypeToProto(t), into);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(types::SameType(*back, t)) << t->ToString() << " came back as " << (*back)->ToString();
  }
}

struct BadCase {
  const char* what;
  v1::Module module;
  const char* expect;
};

TEST(FromProtoTest, RejectsMalformedModules) {
  v1::Module no_kind = ModuleOf({Kernel("k", {}, {})});
  no_kind.mutable_functions(0)->set_kind(v1::FUNCTION_KIND_UNSPECIFIED);
  v1::Module bad_name = ModuleOf({Kernel("k-1", {}, {})});
  v1::Module dup = ModuleOf({Kernel("k", {}, {}), Kernel("k", {}, {})});
  v1::Module empty_stmt = ModuleOf({Kernel("k", {}, {v1::Stmt()})});
  v1::Module no_value = ModuleOf({Kernel("k", {}, {Assign(Name("x"), v1::Expr())})});
  v1::Module bad_ndim = ModuleOf({Kernel("k", {{"a", Arr(F32(), 5)}}, {})});
  v1::Module bad_vec = ModuleOf({Kernel("k", {{"v", Vec(1025)}}, {})});
  v1::Module untyped = ModuleOf({Kernel("k", {{"a", v1::TypeRef()}}, {})});
  v1::Module bad_op = ModuleOf({Kernel("k", {}, {Assign(Name("x"), Bin(static_cast<v1::BinaryOperator>(99), Int(1), Int(2)))})});
  std::vector<BadCase> cases = {
      {"no kind", no_kind, "has no kind"},
      {"bad identifier", bad_name, "invalid function name"},
      {"duplicate", dup, "duplicate function name"},
      {"empty statement", empty_stmt, "statement without a kind"},
      {"missing value", no_value, "missing assigned value"},
      {"ndim 5", bad_ndim, "array ndim 5 is out of range [1, 4]"},
      {"vector too long", bad_vec, "vector length 1025"},
      {"untyped param", untyped, "needs a type annotation"},
      {"unknown operator", bad_op, "unknown binary operator"},
  };
  for (const auto& c : cases) {
    auto m = ModuleFromProto(c.module);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(m.status().message().find(c.expect), std::string::npos) << c.what << ": " << m.status();
  }
}

TEST(FromProtoTest, DeepNestingIsRejectedBeforeRecursingFurther) {
  v1::Expr e = Int(1);
  for (int i = 0; i < 200; ++i) e = Bin(v1::BINOP_ADD, std::move(e), Int(1));
  auto m = ModuleFromProto(ModuleOf({Kernel("k", {}, {Assign(Name("x"), std::move(e))})}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("nested deeper than"), std::string::npos) << m.status();
}

TEST(FromProtoTest, NodeLimit) {
  std::vector<v1::Stmt> body;
  for (int i = 0; i < 50; ++i) body.push_back(Assign(Name("x"), Int(i)));
  Limits limits;
  limits.max_nodes = 100;
  auto m = ModuleFromProto(ModuleOf({Kernel("k", {}, std::move(body))}), limits);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("module too large"), std::string::npos) << m.status();
}

}  // namespace
}  // namespace warpd::ir
