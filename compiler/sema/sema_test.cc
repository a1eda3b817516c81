#include "compiler/sema/sema.h"

#include <gtest/gtest.h>

#include <map>

#include "compiler/ir/from_proto.h"
#include "compiler/testing/ir_builder.h"

namespace warpd::sema {
namespace {

using namespace warpd::testing;

absl::StatusOr<std::unique_ptr<ir::Module>> Check(const v1::Module& proto) {
  auto m = ir::ModuleFromProto(proto);
  if (!m.ok()) return m.status();
  if (auto st = Analyze(**m); !st.ok()) return st;
  return m;
}

// A kernel k(a: array(float32), v: vec3, n: int32) with `body`.
v1::Module K(std::vector<v1::Stmt> body, std::vector<v1::Function> extra = {}) {
  extra.push_back(Kernel("k", {{"a", Arr(F32())}, {"v", Vec(3)}, {"n", I32()}}, std::move(body)));
  return ModuleOf(std::move(extra));
}

TEST(SemaTest, InfersLocalTypes) {
  auto m = Check(K({Assign(Name("i"), Call("tid", {})), Assign(Name("x"), Sub(Name("a"), {Name("i")})),
                    Assign(Name("d"), Call("dot", {Name("v"), Name("v")})),
                    Assign(Name("w"), Bin(v1::BINOP_MUL, Name("v"), Name("x"))),
                    Assign(Name("c"), Attr(Name("w"), "y")),
                    Assign(Name("f"), Call("float64", {Name("n")}))}));
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& locals = (*m)->functions[0].locals;
  auto type_of = [&](const std::string& n) {
    for (const auto& l : locals)
      if (l.name == n) return l.type->ToString();
    return std::string("missing");
  };
  EXPECT_EQ(type_of("i"), "int32");
  EXPECT_EQ(type_of("x"), "float32");
  EXPECT_EQ(type_of("d"), "float32");
  EXPECT_EQ(type_of("w"), "vec3f");
  EXPECT_EQ(type_of("c"), "float32");
  EXPECT_EQ(type_of("f"), "float64");
  EXPECT_EQ((*m)->functions[0].tid_ndim, 1);
}

TEST(SemaTest, UserFunctionReturnTypeIsInferred) {
  auto m = Check(K({Assign(Name("y"), Call("sq", {Float(2.0)}, 1, v1::CALLEE_FUNCTION))},
                   {Func("sq", {{"x", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("x"), Name("x")))})}));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->functions[0].return_type->ToString(), "float32");
}

TEST(SemaTest, LiteralsAdaptInVectorConstructors) {
  auto m = Check(K({Assign(Name("u"), Call("vec3d", {Float(1.0), Int(2), Float(3.0)}))}));
  ASSERT_TRUE(m.ok()) << m.status();
}

// struct S_1 { x: float32, arr: array(float32) }
v1::TypeRef StructWithArray() {
  v1::TypeRef t;
  auto* st = t.mutable_struct_type();
  st->set_name("S_1");
  st->set_display_name("S");
  auto* x = st->add_members();
  x->set_name("x");
  *x->mutable_type() = F32();
  auto* arr = st->add_members();
  arr->set_name("arr");
  *arr->mutable_type() = Arr(F32());
  return t;
}

TEST(SemaTest, StructsConstructAndAssignMembers) {
  v1::TypeRef s;
  auto* st = s.mutable_struct_type();
  st->set_name("P_1");
  st->set_display_name("P");
  auto* m = st->add_members();
  m->set_name("pos");
  *m->mutable_type() = Vec(3);
  v1::Expr ctor = Call("struct", {});
  auto* kw = ctor.mutable_call()->add_keywords();
  kw->set_name("dtype");
  *kw->mutable_value()->mutable_type_value() = s;
  auto ok = Check(ModuleOf({Kernel("k", {{"p", s}}, {Assign(Name("q"), ctor),
                                                     Assign(Attr(Name("q"), "pos"), Attr(Name("p"), "pos"))})}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto bad = Check(ModuleOf({Kernel("k", {{"p", s}}, {Assign(Attr(Name("p"), "mass"), Float(1.0))})}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mass"), std::string::npos) << bad.status();
}

struct ErrorCase {
  const char* what;
  v1::Module module;
  const char* expect;
};

TEST(SemaTest, UserErrors) {
  std::vector<ErrorCase> cases = {
      {"float + int", K({Assign(Name("x", 9), Bin(v1::BINOP_ADD, Float(1.0, 9), Int(1, 9), 9), 9)}),
       "test.py:9:1: error: unsupported operand types for + (Warp does not convert implicitly; convert one side, e.g. "
       "float32(x)): Input types must be the same, got ['float32', 'int32']"},
      {"unknown name", K({Assign(Name("x", 5), Name("nope", 5), 5)}),
       "test.py:5:1: error: Referencing undefined symbol: nope"},
      {"unknown function", K({Assign(Name("x", 6), Call("wp.frobnicate", {}, 6), 6)}),
       "Could not find function wp.frobnicate as a built-in or user-defined function"},
      {"retype variable", K({Assign(Name("x"), Float(1.0)), Assign(Name("x", 3), Int(2, 3), 3)}),
       "cannot assign a value of type int32 to 'x' of type float32"},
      {"wrong index count", K({Assign(Name("x"), Sub(Name("a"), {Int(0), Int(1)}))}), "array with ndim=1 indexed with 2"},
      {"float index", K({Assign(Name("x"), Sub(Name("a"), {Float(0.0)}))}), "indices must be integers"},
      {"store wrong type", K({Assign(Sub(Name("a"), {Int(0)}), Int(1))}),
       "cannot store a value of type int32 into a place of type float32"},
      {"bad overload", K({Assign(Name("x"), Call("dot", {Name("v"), Name("n")}))}), "no overload of dot() takes (vec3f, int32)"},
      {"wrong arg count", K({Assign(Name("y"), Call("sq", {}, 1, v1::CALLEE_FUNCTION))},
                            {Func("sq", {{"x", F32()}}, {Return(Name("x"))})}),
       "'sq' takes 1 argument but 0 were given"},
      {"wrong arg type", K({Assign(Name("y"), Call("sq", {Int(1)}, 1, v1::CALLEE_FUNCTION))},
                           {Func("sq", {{"x", F32()}}, {Return(Name("x"))})}),
       "argument 'x' of 'sq' expects float32 but got int32"},
      {"recursion", K({Assign(Name("y"), Call("r", {Float(1)}, 1, v1::CALLEE_FUNCTION))},
                      {Func("r", {{"x", F32()}}, {Return(Call("r", {Name("x")}, 1, v1::CALLEE_FUNCTION))})}),
       "recursion is not supported"},
      {"kernel return value", K({Return(Int(1))}), "Warp kernels cannot return values."},
      {"vec3 component type", K({Assign(Name("u"), Call("vec3", {Name("n"), Float(0), Float(0)}))}),
       "all values used to initialize this vector are expected to be of the type `float32`"},
      {"vector attribute", K({Assign(Name("x"), Attr(Name("v"), "w"))}), "vec3f has no component 'w'"},
      {"tid arity mismatch",
       K({Assign(TupleOf({Name("i"), Name("j")}), Call("tid", {})), Assign(TupleOf({Name("p"), Name("q"), Name("r")}), Call("tid", {}))}),
       "unpacked into 3 variables here but into 2"},
      {"range of float", K({For("j", {Float(3.0)}, {})}), "range() arguments must be integers"},
      // int8 elements have no atomics: h[0] += x is h[0] = h[0] + x, typed as such.
      {"int8 element += float", ModuleOf({Kernel("k", {{"h", Arr(Scalar(v1::SCALAR_INT8))}},
                                                 {AugAssign(Sub(Name("h"), {Int(0)}), v1::BINOP_ADD, Float(1.0))})}),
       "unsupported operand types for +=: int8 and float32"},
      {"int literal as an atomic value", K({Assign(Name("x"), Call("atomic_add", {Name("a"), Int(0), Int(1)}))}),
       "atomic_add() value must be float32, got int32"},
      {"atomic on a bool array", ModuleOf({Kernel("k", {{"t", Arr([] {
         v1::TypeRef t;
         t.set_scalar(v1::SCALAR_BOOL);
         return t;
       }())}}, {AugAssign(Sub(Name("t"), {Int(0)}), v1::BINOP_ADD, Sub(Name("t"), {Int(1)}))})}),
       "atomic += on an array of bool is not supported"},
      {"atomic min on a transform array", ModuleOf({Kernel("k", {{"t", Arr([] {
         v1::TypeRef t;
         t.mutable_transform()->set_dtype(v1::SCALAR_FLOAT32);
         return t;
       }())}}, {Assign(Name("x"), Call("atomic_min", {Name("t"), Int(0), Sub(Name("t"), {Int(1)})}))})}),
       "atomic_min() on an array of transformf is not supported"},
      {"int literal into a float array", K({Assign(Sub(Name("a"), {Int(0)}), Int(1))}),
       "cannot store a value of type int32 into a place of type float32"},
      {"float literal times float64", K({Assign(Name("x"), Bin(v1::BINOP_MUL, Call("float64", {Name("n")}), Float(2.0)))}),
       "Input types must be the same, got ['float64', 'float32']"},
      {"no kernels", ModuleOf({Func("f", {}, {})}), "has no kernels"},
  };
  for (const auto& c : cases) {
    auto m = Check(c.module);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(m.status().message().find(c.expect), std::string::npos) << c.what << ": " << m.status();
  }
}

// Arrays of structs holding arrays (the daemon binds their descriptors):
// elements read, members indexed, whole elements stored, an array member
// assigned another array of its type (as in Warp; the runtime keeps every
// array of such a launch alive with the descriptor array: HeldArrays). A
// sub-array is no place, and a member takes only its own array type.
TEST(SemaTest, ArraysOfStructsHoldingArrays) {
  auto m = Check(ModuleOf({Kernel("k", {{"s", Arr(StructWithArray())}, {"out", Arr(F32())}},
                                  {Assign(Sub(Name("out"), {Int(0)}), Sub(Attr(Sub(Name("s"), {Int(1)}), "arr"), {Int(2)})),
                                   Assign(Sub(Name("s"), {Int(0)}), Sub(Name("s"), {Int(1)})),
                                   Assign(Attr(Sub(Name("s"), {Int(0)}), "arr"), Name("out"))})}));
  ASSERT_TRUE(m.ok()) << m.status();
  auto wrong_type = Check(ModuleOf({Kernel("k", {{"s", Arr(StructWithArray())}, {"out", Arr(F32(), 2)}},
                                           {Assign(Attr(Sub(Name("s"), {Int(0)}), "arr"), Name("out"))})}));
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("cannot store a value of type"), std::string::npos)
      << wrong_type.status();
  auto sub_array = Check(ModuleOf({Kernel("k", {{"a", Arr(F32(), 2)}, {"out", Arr(F32())}},
                                          {Assign(Sub(Name("a"), {Int(0)}), Name("out"))})}));
  ASSERT_FALSE(sub_array.ok());
  EXPECT_NE(sub_array.status().message().find("cannot be assigned"), std::string::npos) << sub_array.status();
}

// @wp.func overloads: the call's argument types choose (exactly; Warp has
// no implicit conversions), by type and by arity.
TEST(SemaTest, OverloadsAreChosenByArgumentTypes) {
  auto fcall = [](std::vector<v1::Expr> args) { return Call("area", std::move(args), 1, v1::CALLEE_FUNCTION); };
  auto m = Check(K({Assign(Name("a1"), fcall({Float(2.0)})), Assign(Name("a2"), fcall({Float(2.0), Float(3.0)})),
                    Assign(Name("a3"), fcall({Name("v")}))},
                   {Overload(Func("area_1", {{"r", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("r"), Name("r")))}), "area"),
                    Overload(Func("area_2", {{"w", F32()}, {"h", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("w"), Name("h")))}),
                             "area"),
                    Overload(Func("area_3", {{"v", Vec(3)}}, {Return(Call("length", {Name("v")}))}), "area")}));
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Function& k = (*m)->functions[3];
  ASSERT_EQ(k.name, "k");
  std::vector<std::string> callees;
  for (const auto& s : k.body) callees.push_back((*m)->functions[s->value->function_index].name);
  EXPECT_EQ(callees, (std::vector<std::string>{"area_1", "area_2", "area_3"}));

  auto bad = Check(K({Assign(Name("x"), fcall({Int(2)}))},
                     {Overload(Func("area_1", {{"r", F32()}}, {Return(Name("r"))}), "area"),
                      Overload(Func("area_2", {{"w", F32()}, {"h", F32()}}, {Return(Name("w"))}), "area")}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no overload of area_1() takes (int32); Warp does not convert implicitly. "
                                        "Candidates: area_1(r: float32); area_2(w: float32, h: float32)"),
            std::string::npos)
      << bad.status();
}

// typing.Any parameters: one instance per distinct argument types; the
// template itself is never analysed or emitted.
TEST(SemaTest, GenericFunctionsAreInstantiatedPerArgumentTypes) {
  auto twice = [](v1::Expr x) { return Call("twice", {std::move(x)}, 1, v1::CALLEE_FUNCTION); };
  auto m = Check(K({Assign(Name("ra"), twice(Float(1.5))), Assign(Name("rb"), twice(Name("n"))),
                    Assign(Name("rc"), twice(Name("v"))), Assign(Name("rd"), twice(Float(0.5)))},
                   {Func("twice", {{"x", AnyT()}}, {Return(Bin(v1::BINOP_ADD, Name("x"), Name("x")))})}));
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Module& mod = **m;
  ASSERT_EQ(mod.functions.size(), 5u);  // twice, k, and three instances (float32 twice shares one)
  EXPECT_TRUE(mod.functions[0].is_generic());
  std::vector<std::string> types;
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_FALSE(mod.functions[i].is_generic());
    EXPECT_EQ(mod.functions[i].display_name, "twice");
    types.push_back(mod.functions[i].return_type->ToString());
  }
  EXPECT_EQ(types, (std::vector<std::string>{"float32", "int32", "vec3f"}));
  EXPECT_EQ(mod.functions[1].body[0]->value->function_index, mod.functions[1].body[3]->value->function_index);
}

// A concrete overload beats a generic one; a generic function calling itself
// is recursion, even with other types each time.
TEST(SemaTest, ConcreteOverloadsWinAndGenericRecursionIsRejected) {
  auto call = [](const char* f, v1::Expr x) { return Call(f, {std::move(x)}, 1, v1::CALLEE_FUNCTION); };
  auto m = Check(K({Assign(Name("ra"), call("g", Float(1.0))), Assign(Name("rb"), call("g", Name("n")))},
                   {Overload(Func("g_any", {{"x", AnyT()}}, {Return(Name("x"))}), "g"),
                    Overload(Func("g_f32", {{"x", F32()}}, {Return(Name("x"))}), "g")}));
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Function& k = (*m)->functions[2];
  EXPECT_EQ((*m)->functions[k.body[0]->value->function_index].name, "g_f32");
  EXPECT_EQ((*m)->functions[k.body[1]->value->function_index].display_name, "g_any");

  auto rec = Check(K({Assign(Name("ra"), call("r", Float(1.0)))},
                     {Func("r", {{"x", AnyT()}}, {Return(call("r", Call("vec2", {Name("x"), Name("x")}, 7)))})}));
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("recursive call of 'r'"), std::string::npos) << rec.status();
}

TEST(SemaTest, KernelsNeedConcreteParameterTypes) {
  auto m = Check(ModuleOf({Kernel("k", {{"x", AnyT()}}, {})}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("kernels need concrete parameter types"), std::string::npos) << m.status();
}

// A string constant never takes a number's type (the IR fuzzer once got
// `x > "range"` through sema to an INTERNAL error in lowering).
// One kernel that fails (directly, or through a function it calls) is left
// out; the module's other kernels and functions stay, and the failures are
// listed in module order with their own messages.
TEST(SemaTest, AFailingKernelIsDroppedAndTheOthersStay) {
  v1::Module proto = ModuleOf({
      Func("bad_f", {{"x", F32()}}, {Return(Written(Call("no_such_builtin", {Name("x")}), "wp.no_such_builtin"))}),
      Func("good_f", {{"x", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("x"), Name("x")))}),
      Kernel("uses_bad", {{"a", Arr(F32())}}, {Assign(Name("y"), Call("bad_f", {Float(1.0)}, 1, v1::CALLEE_FUNCTION))}),
      Kernel("good", {{"a", Arr(F32())}}, {Assign(Name("y"), Call("good_f", {Float(1.0)}, 1, v1::CALLEE_FUNCTION))}),
      Kernel("bad", {{"a", Arr(F32())}}, {Assign(Name("y"), Call("sqrt", {Name("nowhere")}))}),
  });
  auto m = Check(proto);
  ASSERT_TRUE(m.ok()) << m.status();
  std::map<std::string, bool> dropped;
  for (const auto& f : (*m)->functions) dropped[f.name] = f.dropped;
  EXPECT_TRUE(dropped["bad_f"]);
  EXPECT_FALSE(dropped["good_f"]);
  EXPECT_TRUE(dropped["uses_bad"]);
  EXPECT_FALSE(dropped["good"]);
  EXPECT_TRUE(dropped["bad"]);
  const auto& failures = (*m)->failures;
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_EQ(failures[0].name, "bad_f");
  EXPECT_FALSE(failures[0].kernel);
  EXPECT_NE(failures[0].message.find("Could not find function wp.no_such_builtin"), std::string::npos)
      << failures[0].message;
  EXPECT_EQ(failures[0].parts.category, ir::ErrorCategory::kAttribute);
  EXPECT_EQ(failures[0].parts.location, "test.py:1:1");
  EXPECT_EQ(failures[1].name, "uses_bad");
  EXPECT_TRUE(failures[1].kernel);
  // A kernel failing through its callee reports the callee's error (its line).
  EXPECT_EQ(failures[1].message, failures[0].message);
  EXPECT_EQ(failures[2].name, "bad");
  EXPECT_NE(failures[2].message.find("nowhere"), std::string::npos) << failures[2].message;
  EXPECT_NE(failures[2].message.find("(in kernel 'bad')"), std::string::npos) << failures[2].message;
  // The parts: Warp's text alone (no location, no kernel), and its category.
  EXPECT_EQ(failures[2].parts.text, "Referencing undefined symbol: nowhere");
  EXPECT_EQ(failures[2].parts.category, ir::ErrorCategory::kKey);
  EXPECT_EQ(failures[2].message, failures[2].parts.location + ": error: " + failures[2].parts.text + " (in kernel 'bad')");
}

// Each user error carries the category of the Python class Warp raises for
// it, decided where sema finds it (hooks' errors keep theirs).
TEST(SemaTest, UserErrorsCarryWarpsCategory) {
  using ir::ErrorCategory;
  struct Case {
    const char* what;
    v1::Module module;
    ErrorCategory category;
    const char* text;
  };
  std::vector<Case> cases = {
      {"unknown name", K({Assign(Name("x"), Name("nope"))}), ErrorCategory::kKey, "Referencing undefined symbol: nope"},
      {"unknown builtin", K({Assign(Name("x"), Written(Call("frobnicate", {}), "wp.frobnicate"))}),
       ErrorCategory::kAttribute,
       "Could not find function wp.frobnicate as a built-in or user-defined function. Note that user functions must "
       "be annotated with a @wp.func decorator to be called from a kernel."},
      // A bare name resolves to a builtin (expect_eq(...), as in Warp), else it names nothing.
      {"unknown bare name called", K({Assign(Name("x"), Call("frobnicate", {}))}), ErrorCategory::kKey,
       "Referencing undefined symbol: frobnicate"},
      {"compare types", K({Assign(Name("x"), Cmp(v1::CMP_EQ, Name("v"), Name("n")))}), ErrorCategory::kType,
       "cannot compare vec3f == int32 (Warp does not convert implicitly)"},
      {"mixed scalars", K({Assign(Name("x"), Bin(v1::BINOP_MUL, Int(1), Float(1.0)))}), ErrorCategory::kGeneral,
       "unsupported operand types for * (Warp does not convert implicitly; convert one side, e.g. float32(x)): Input "
       "types must be the same, got ['int32', 'float32']"},
      {"component index", K({Assign(Name("x"), Sub(Name("v"), {Int(3)}))}), ErrorCategory::kIndex,
       "index 3 is out of range for vec3f"},
      {"no component", K({Assign(Name("x"), Attr(Name("v"), "w"))}), ErrorCategory::kAttribute,
       "vec3f has no component 'w'"},
      {"float index", K({Assign(Name("x"), Sub(Name("a"), {Float(0.0)}))}), ErrorCategory::kType,
       "indices must be integers, not float32"},
      {"kernel return", K({Return(Int(1))}), ErrorCategory::kType,
       "Warp kernels cannot return values. Write results to output arguments, and omit the return annotation or use "
       "`-> None`."},
      {"retype", K({Assign(Name("x"), Float(1.0)), Assign(Name("x"), Int(2))}), ErrorCategory::kType, nullptr},
  };
  for (const auto& c : cases) {
    auto m = Check(c.module);
    ASSERT_FALSE(m.ok()) << c.what;
    ir::UserErrorParts p = ir::PartsOf(m.status());
    EXPECT_EQ(p.category, c.category) << c.what << ": " << m.status();
    if (c.text) EXPECT_EQ(p.text, c.text) << c.what;
    EXPECT_EQ(p.location.substr(0, 8), "test.py:") << c.what;
  }
}

// When no kernel is left, the module fails with every kernel's error.
TEST(SemaTest, AModuleWithNoGoodKernelFailsWithEveryError) {
  auto m = Check(ModuleOf({
      Kernel("k1", {{"a", Arr(F32())}}, {Assign(Name("y"), Call("sqrt", {Name("nowhere1")}))}),
      Kernel("k2", {{"a", Arr(F32())}}, {Assign(Name("y"), Call("sqrt", {Name("nowhere2")}))}),
  }));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("nowhere1"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("nowhere2"), std::string::npos) << m.status();
}

// v[1:] = w, m[:2, 1:] += n: a slice of a local's components is a place;
// empty slices are zero-length values (a (0, 0) matrix when either side is
// empty, as in Warp); the value must fit the slice (Warp's ValueErrors).
TEST(SemaTest, ComponentSlicesAreAssignable) {
  auto kernel = [](std::vector<v1::Stmt> body) {
    return Check(ModuleOf({Kernel("k", {{"w", Vec(4)}, {"m", Mat(4, 4)}, {"v", Vec(3)}, {"n", I32()}}, std::move(body))}));
  };
  auto ok = kernel({Assign(Sub(Name("w"), {Slice(1, {})}), Name("v")),
                    AugAssign(Sub(Name("w"), {Slice({}, {}, -2)}), v1::BINOP_SUB, Sub(Name("v"), {Slice({}, 2)})),
                    AugAssign(Sub(Name("m"), {Slice({}, 2), Slice(1, {})}), v1::BINOP_MUL, Float(2.0)),
                    Assign(Sub(Name("m"), {Name("n"), Slice(1, {})}), Name("v")),
                    Assign(Name("e"), Sub(Name("w"), {Slice(4, {})})),
                    Assign(Name("z"), Sub(Name("m"), {Slice(1, {}), Slice(9, {})}))});
  ASSERT_TRUE(ok.ok()) << ok.status();
  std::map<std::string, std::string> types;
  for (const auto& l : (*ok)->functions[0].locals) types[l.name] = l.type->ToString();
  EXPECT_EQ(types["e"], "vector(length=0, dtype=float32)");
  EXPECT_EQ(types["z"], "matrix(shape=(0, 0), dtype=float32)");

  struct Case {
    v1::Stmt stmt;
    const char* expect;
  };
  std::vector<Case> cases = {
      {Assign(Sub(Name("w"), {Slice(1, {})}), Name("n")),
       "The provided value is expected to be a vector of length 3, with dtype float32."},
      {Assign(Sub(Name("w"), {Slice(2, {})}), Name("v")),
       "The length of the provided vector (3) isn't compatible with the given slice (expected 2)."},
      {AugAssign(Sub(Name("w"), {Slice(1, {})}), v1::BINOP_ADD, Float(1.0)),
       "The provided value is expected to be a vector of length 3, with dtype float32."},
      {Assign(Sub(Name("m"), {Slice({}, 2), Slice(1, {})}), Name("v")),
       "The provided value is expected to be a matrix of shape (2, 3), with dtype float32."},
      {Assign(Sub(Name("m"), {Slice(7, {})}), Name("m")),
       "The shape of the provided matrix ((4, 4)) isn't compatible with the given slice (expected (0, 0))."},
      {Assign(Sub(Sub(Name("w"), {Slice(1, {})}), {Int(0)}), Float(1.0)), "a slice cannot be assigned"},
  };
  for (auto& c : cases) {
    auto m = kernel({c.stmt});
    ASSERT_FALSE(m.ok()) << c.expect;
    EXPECT_NE(m.status().message().find(c.expect), std::string::npos) << m.status();
  }
}

TEST(SemaTest, StringsNeverTakeANumbersType) {
  v1::Expr str;
  *str.mutable_span() = Span(3);
  str.mutable_constant()->set_string_value("range");
  auto m = Check(K({Assign(Name("b", 3), Cmp(v1::CMP_GT, Float(1.0, 3), str, 3), 3)}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("test.py:3:1: error: cannot compare float32 > None"), std::string::npos)
      << m.status();
}

}  // namespace
}  // namespace warpd::sema
