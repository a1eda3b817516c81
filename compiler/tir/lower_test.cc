#include "compiler/tir/lower.h"

#include <gtest/gtest.h>

#include "compiler/ir/from_proto.h"
#include "compiler/sema/sema.h"
#include "compiler/testing/ir_builder.h"
#include "compiler/testing/typed_module.h"
#include "compiler/tir/builder.h"

namespace warpd::tir {
namespace {

using namespace warpd::testing;

// The listing of every function of a lowered module.
std::string Listing(const v1::Module& proto) {
  auto m = Typed(proto);
  auto t = Lower(*m);
  EXPECT_TRUE(t.ok()) << t.status();
  std::string out;
  for (const auto& f : t->functions) out += Dump(*t, f);
  return out;
}

// One kernel and one function using every construct that lowers to more
// than one instruction: evaluation order, index checks, element addresses,
// atomics, matrix rows, chained comparisons, and/or, conditional
// expressions, slices, loops and early returns.
v1::Module Constructs() {
  using testing::For;
  using testing::If;
  using testing::Return;
  using testing::While;
  return ModuleOf(
      {Kernel("k", {{"a", Arr(F32(), 2)}, {"m", Mat(3, 3)}, {"v", Vec(3)}, {"n", I32()}},
              {Assign(TupleOf({Name("i"), Name("j")}), Call("tid", {}, 2), 2),
               Assign(Name("x", 3), Sub(Name("a", 3), {Name("i", 3), Name("j", 3)}, 3), 3),
               AugAssign(Sub(Name("a", 4), {Name("i", 4), Name("j", 4)}, 4), v1::BINOP_ADD, Name("x", 4), 4),
               AugAssign(Sub(Name("m", 5), {Name("i", 5)}, 5), v1::BINOP_MUL, Float(2.0, 5), 5),
               Assign(Sub(Sub(Name("m", 6), {Int(1, 6)}, 6), {Name("j", 6)}, 6), Attr(Name("v", 6), "y", 6), 6),
               Assign(Name("b", 7), CmpChain(Int(0, 7), {v1::CMP_LE, v1::CMP_LT}, {Name("i", 7), Name("n", 7)}, 7), 7),
               Assign(Name("c", 8),
                      BoolOp(v1::BOOL_AND, {Name("b", 8), Cmp(v1::CMP_GT, Name("x", 8), Float(0.0, 8), 8)}, 8), 8),
               Assign(Name("d", 9), BoolOp(v1::BOOL_OR, {Name("b", 9), Name("c", 9)}, 9), 9),
               Assign(Name("y", 10), IfExp(Name("c", 10), Name("x", 10), Float(1.0, 10), 10), 10),
               Assign(Name("row", 11), Sub(Name("a", 11), {Name("i", 11)}, 11), 11)}),
       Func("f", {{"n", I32()}, {"x", F32()}},
            {For("k", {Int(1, 12), Name("n", 12)},
                 {If(Cmp(v1::CMP_EQ, Name("k", 13), Int(5, 13), 13), {Return(Name("x", 13), 13)}, {}, 13)}, 12),
             While(Cmp(v1::CMP_LT, Name("n", 14), Int(10, 14), 14),
                   {AugAssign(Name("n", 15), v1::BINOP_ADD, Int(1, 15), 15)}, 14),
             Return(Name("x", 16), 16)})});
}

TEST(LowerTest, MakesOrderChecksAndBranchesExplicit) {
  EXPECT_EQ(Listing(Constructs()), R"(kernel k(a: array(dtype=float32, ndim=2), m: mat33f, v: vec3f, n: int32)
  local i: int32
  local j: int32
  local x: float32
  local b: bool
  local c: bool
  local d: bool
  local y: float32
  local row: array(dtype=float32, ndim=1)
  i, j = tid_coords
  %12: ref float32 = &a[i, j]
  %13: float32 = *%12
  x = %13
  %14: ref float32 = &a[i, j]
  atomic_add(&*%14, x) [wp::atomic_add]
  %15: int32 = check i < 3
  %16: vec3f = m.row[%15]
  %17: vec3f = mul(%16, 2:float32) [wp::mul]
  m.row[%15] = %17
  %18: float32 = v[1:int32]
  %19: int32 = check j < 3
  m[1:int32, %19] = %18
  %20: bool = le(0:int32, i) [wp::le]
  declare %21: bool
  %21 = %20
  if %20:
    %22: bool = lt(i, n) [wp::lt]
    %21 = %22
  b = %21
  declare %23: bool
  if b:
    %24: bool = gt(x, 0:float32) [wp::gt]
    if %24:
      %23 = True:bool
  c = %23
  declare %25: bool
  if b:
    %25 = True:bool
  else:
    if c:
      %25 = True:bool
  d = %25
  declare %26: float32
  if c:
    %26 = x
  else:
    %26 = 1:float32
  y = %26
  %27: array(dtype=float32, ndim=1) = view a[i]
  row = %27
func f(n: int32, x: float32) -> float32
  local k: int32
  for k in range(1:int32, n, 1:int32):
    %3: bool = eq(k, 5:int32) [wp::eq]
    if %3:
      return x
  while:
    %4: bool = lt(n, 10:int32) [wp::lt]
  test %4:
    %5: int32 = add(n, 1:int32) [wp::add]
    n = %5
  return x
)");
}

// The visitor reaches nested blocks; the mutator rewrites them.
class CountKinds : public Visitor<CountKinds> {
 public:
  void VisitCheckIndex(const CheckIndex&) { ++checks; }
  void VisitStore(const Store&) { ++stores; }
  void VisitIf(const If& i) {
    ++ifs;
    Visitor::VisitIf(i);
  }
  int checks = 0, stores = 0, ifs = 0;
};

class DropStoresOfTrue : public Mutator<DropStoresOfTrue> {
 public:
  bool MutateStore(Store& s, Block&) {
    const bool* b = std::get_if<bool>(&s.value.value);
    return s.value.is_var() || b == nullptr || !*b;
  }
};

TEST(LowerTest, VisitorAndMutatorWalkNestedBlocks) {
  auto m = Typed(Constructs());
  auto t = Lower(*m);
  ASSERT_TRUE(t.ok()) << t.status();
  CountKinds count;
  count.VisitBlock(t->functions[0].body);
  EXPECT_EQ(count.checks, 2);
  EXPECT_EQ(count.stores, 15);
  EXPECT_EQ(count.ifs, 6);
  DropStoresOfTrue drop;
  drop.MutateBlock(t->functions[0].body);
  CountKinds after;
  after.VisitBlock(t->functions[0].body);
  EXPECT_EQ(after.stores, 12);  // the three stores of True are gone, one of them from an else block
  EXPECT_EQ(after.ifs, 6);
}

// wp.grad(f)(args) (Call.grad): one Grad instruction, typed as the
// arguments' adjoints (a tuple for several), naming the callee's result type.
TEST(LowerTest, GradCallsOfBuiltinsAndFunctions) {
  auto grad = [](v1::Expr e) {
    e.mutable_call()->set_grad(true);
    return e;
  };
  auto m = ModuleOf(
      {Func("sq", {{"x", F32()}}, {testing::Return(Bin(v1::BINOP_MUL, Name("x", 2), Name("x", 2), 2), 2)}),
       Kernel("k", {{"a", Arr(F32(), 1)}, {"v", F32()}},
              {Assign(Name("g", 3), grad(Call("sq", {Name("v", 3)}, 3, v1::CALLEE_FUNCTION)), 3),
               Assign(Name("t", 4), grad(Call("atan2", {Name("v", 4), Float(2.0, 4)}, 4)), 4)})});
  const std::string listing = Listing(m);
  EXPECT_NE(listing.find("g = %"), std::string::npos) << listing;
  EXPECT_NE(listing.find(": float32 = grad sq(v) of float32"), std::string::npos) << listing;
  EXPECT_NE(listing.find(": tuple(float32, float32) = grad atan2(v, 2:float32) of float32"), std::string::npos)
      << listing;

  // A builtin Warp does not differentiate, and a void function: Warp's messages.
  auto floor = ModuleOf({Kernel("k", {{"v", F32()}}, {Assign(Name("g", 3), grad(Call("floor", {Name("v", 3)}, 3)), 3)})});
  absl::Status st = TypedModule(floor).status();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("Cannot compute gradient of non-differentiable function 'floor'"),
            std::string::npos)
      << st;
}

// Ill-typed TIR cannot be built: the builder's first complaint is INTERNAL.
TEST(BuilderTest, RejectsIllTypedInstructions) {
  auto m = Typed(Constructs());
  Function f;
  f.source = &m->functions[1];
  Builder b(*m, f);
  VarId n = b.NewVar(VarKind::kParam, types::Scalar(types::ScalarKind::kInt32), "n");
  b.Store(b.Root(n), Operand::Constant(1.5, types::Scalar(types::ScalarKind::kFloat32)), ir::Span{});
  ASSERT_FALSE(b.status().ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(b.status().message().find("a store of float32 into a place of int32"), std::string::npos) << b.status();
  EXPECT_TRUE(f.body.empty());

  Function g;
  g.source = &m->functions[1];
  Builder c(*m, g);
  VarId k = c.NewVar(VarKind::kLocal, types::Scalar(types::ScalarKind::kFloat32), "k");
  c.CheckIndex(Operand::Of(k, types::Scalar(types::ScalarKind::kFloat32)), 3, ir::Span{});
  EXPECT_NE(c.status().message().find("an index of type float32"), std::string::npos) << c.status();

  Function h;
  h.source = &m->functions[1];
  Builder d(*m, h);
  VarId x = d.NewVar(VarKind::kParam, types::Scalar(types::ScalarKind::kFloat32), "x");
  d.CallFunction(1, {Operand::Of(x, types::Scalar(types::ScalarKind::kFloat32))}, ir::Span{});
  EXPECT_NE(d.status().message().find("a call of 'f' that does not fit it"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace warpd::tir
