#include "compiler/tir/print_sites.h"

#include <gtest/gtest.h>

#include "compiler/tir/lower.h"
#include "compiler/ir/from_proto.h"
#include "compiler/sema/sema.h"
#include "compiler/testing/ir_builder.h"
#include "compiler/testing/typed_module.h"

namespace warpd::tir {
namespace {

using namespace warpd::testing;

v1::Expr Str(const std::string& s, int line = 1) {
  v1::Expr e;
  *e.mutable_span() = Span(line);
  e.mutable_constant()->set_string_value(s);
  return e;
}

v1::Stmt Do(v1::Expr e, int line = 1) {
  v1::Stmt s;
  *s.mutable_span() = Span(line);
  *s.mutable_expr()->mutable_value() = std::move(e);
  return s;
}



// show(x: float32): print("x is", x)
// k_prints(): i = tid(); printf("i=%d %s\n", i, "secret"); show(1.5)
// k_quiet(): i = tid()
v1::Module PrintingModule(const std::string& format = "i=%d %s\n") {
  return ModuleOf({Func("show", {{"x", F32()}}, {Do(Call("print", {Str("x is"), Name("x", 2)}, 2), 2)}, 2),
                   Kernel("k_prints", {},
                          {Assign(Name("i", 5), Call("tid", {}, 5), 5),
                           Do(Call("printf", {Str(format, 6), Name("i", 6), Str("secret", 6)}, 6), 6),
                           Do(Call("show", {Float(1.5, 7)}, 7, v1::CALLEE_FUNCTION), 7)},
                          4),
                   Kernel("k_quiet", {}, {Assign(Name("i", 9), Call("tid", {}, 9), 9)}, 8)});
}

TEST(PrintSitesTest, DescribesEachCallAndWhichKernelsPrint) {
  auto m = TypedModule(PrintingModule());
  ASSERT_TRUE(m.ok()) << m.status();
  PrintSites p = CollectPrintSites(**m);
  ASSERT_EQ(p.table.sites.size(), 3u);
  // Site 0: print("x is", x) in show: text, a float32 at offset 0, newline.
  const auto& print = p.table.sites[0];
  ASSERT_EQ(print.segments.size(), 3u);
  EXPECT_EQ(print.segments[0].text, "x is ");
  EXPECT_EQ(print.segments[1].type->ToString(), "float32");
  EXPECT_EQ(print.segments[1].conversion.conv, 0);
  EXPECT_EQ(print.segments[2].text, "\n");
  EXPECT_EQ(print.payload, 4u);
  // Site 1: its line in a backward pass (Warp's adj_print): the string, then
  // x's adjoint, each after "adj:".
  const auto& adjoint = p.table.sites[1];
  ASSERT_EQ(adjoint.segments.size(), 3u);
  EXPECT_EQ(adjoint.segments[0].text, "adj: x is\nadj:");
  EXPECT_EQ(adjoint.segments[1].type->ToString(), "float32");
  EXPECT_TRUE(adjoint.segments[1].conversion.adjoint);
  EXPECT_FALSE(print.segments[1].conversion.adjoint);
  EXPECT_EQ(adjoint.segments[2].text, "\n");
  EXPECT_EQ(adjoint.payload, 4u);
  // Site 2: the printf; the string argument became text at compile time.
  const auto& printf = p.table.sites[2];
  ASSERT_EQ(printf.segments.size(), 3u);
  EXPECT_EQ(printf.segments[0].text, "i=");
  EXPECT_EQ(printf.segments[1].conversion.conv, 'd');
  EXPECT_EQ(printf.segments[2].text, " secret\n");
  EXPECT_EQ(printf.payload, 4u);
  // k_prints prints through show too; k_quiet never prints.
  EXPECT_EQ(p.table.kernels, std::vector<std::string>{"k_prints"});
}

TEST(PrintSitesTest, TableKeyCoversEveryByteOfText) {
  // Equal sources, different text: different keys (so the module cache never
  // hands one session's format strings to another).
  auto a = TypedModule(PrintingModule("i=%d %s\n"));
  auto b = TypedModule(PrintingModule("j=%d %s\n"));
  auto c = TypedModule(PrintingModule("i=%d %s\n"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto ta = Lower(**a), tb = Lower(**b);
  ASSERT_TRUE(ta.ok() && tb.ok());
  for (size_t f = 0; f < ta->functions.size(); ++f)
    EXPECT_EQ(Dump(*ta, ta->functions[f]), Dump(*tb, tb->functions[f]));
  const std::string ka = PrintTableKey(CollectPrintSites(**a).table);
  EXPECT_NE(ka, PrintTableKey(CollectPrintSites(**b).table));
  EXPECT_EQ(ka, PrintTableKey(CollectPrintSites(**c).table));
}

TEST(PrintSitesTest, BadFormatIsACompileErrorNamingTheLine) {
  auto m = TypedModule(ModuleOf({Kernel("k", {}, {Do(Call("printf", {Str("%f\n", 3), Int(1, 3)}, 3), 3)})}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find(":3:"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("printf(): the 1st conversion '%f' expects a floating-point value, got int32"),
            std::string::npos)
      << m.status();
}

}  // namespace
}  // namespace warpd::tir
