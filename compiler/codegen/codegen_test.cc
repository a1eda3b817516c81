#include "compiler/codegen/codegen.h"

#include <gtest/gtest.h>

#include "compiler/codegen/layout.h"
#include "compiler/ir/from_proto.h"
#include "compiler/sema/sema.h"
#include "compiler/testing/ir_builder.h"

namespace warpd::codegen {
namespace {

using namespace warpd::testing;

std::unique_ptr<ir::Module> Typed(const v1::Module& proto) {
  auto m = ir::ModuleFromProto(proto);
  EXPECT_TRUE(m.ok()) << m.status();
  auto st = sema::Analyze(**m);
  EXPECT_TRUE(st.ok()) << st;
  return *std::move(m);
}

TEST(LayoutTest, CStructRules) {
  // (int8, vec3f, float64, array, uint16) -> offsets 0, 4, 16, 24, 88; size 96.
  auto m = Typed(ModuleOf({Kernel("k", {{"a", Scalar(v1::SCALAR_INT8)}, {"b", Vec(3)}, {"c", Scalar(v1::SCALAR_FLOAT64)},
                                        {"d", Arr(F32())}, {"e", Scalar(v1::SCALAR_UINT16)}}, {})}));
  auto layout = compiler::ComputeLayout(*m, m->functions[0]);
  std::vector<uint32_t> offsets;
  for (const auto& p : layout.params) offsets.push_back(p.offset);
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 4, 16, 24, 88}));
  EXPECT_EQ(layout.args_size, 96u);
  EXPECT_EQ(layout.args_align, 8u);
}

TEST(CodegenTest, EmitsAbiAssertsEntryPointsAndBoundsChecks) {
  auto m = Typed(ModuleOf({Kernel("scale", {{"a", Arr(F32())}, {"s", F32()}},
                                  {Assign(Name("i", 2), Call("tid", {}, 2), 2),
                                   Assign(Sub(Name("a", 3), {Name("i", 3)}, 3),
                                          Bin(v1::BINOP_MUL, Sub(Name("a", 3), {Name("i", 3)}, 3), Name("s", 3), 3), 3),
                                   For("j", {Int(4)}, {})})}));
  std::string src = GenerateModule(*m);
  EXPECT_NE(src.find("#include \"warpd/native/builtin.h\""), std::string::npos);
  EXPECT_EQ(src.find("#include <"), std::string::npos);  // freestanding: nothing else
  EXPECT_NE(src.find("static_assert(__builtin_offsetof(wpa_scale, p_s) == 64"), std::string::npos) << src;
  EXPECT_NE(src.find("static_assert(sizeof(wpa_scale) == 72"), std::string::npos) << src;
  EXPECT_NE(src.find("extern \"C\" void " + CpuEntrySymbol("scale")), std::string::npos);
  EXPECT_NE(src.find("extern \"C\" __global__ void " + CudaEntrySymbol("scale")), std::string::npos);
  EXPECT_NE(src.find("wp::address(ctx, v_a, 3, "), std::string::npos) << src;  // line 3 recorded
  EXPECT_NE(src.find("wp::mul("), std::string::npos);                          // from the builtin table
  EXPECT_NE(src.find("wp::should_stop(ctx)"), std::string::npos);               // loop back-edge check
}

}  // namespace
}  // namespace warpd::codegen
