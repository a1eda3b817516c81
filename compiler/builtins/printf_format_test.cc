#include "compiler/builtins/printf_format.h"

#include <gtest/gtest.h>

namespace warpd::builtins {
namespace {

using types::ScalarKind;

types::TypeRef S(ScalarKind k) { return types::Scalar(k); }
const types::TypeRef kI32 = S(ScalarKind::kInt32);
const types::TypeRef kI64 = S(ScalarKind::kInt64);
const types::TypeRef kF32 = S(ScalarKind::kFloat32);
const types::TypeRef kF16 = S(ScalarKind::kFloat16);
const types::TypeRef kBool = S(ScalarKind::kBool);

// The segments as text: literal text as is, values as {conv flags width.precision bits}.
std::string Render(const std::vector<abi::PrintSegment>& segs) {
  std::string out;
  for (const auto& s : segs) {
    if (s.type == nullptr) {
      out += s.text;
      continue;
    }
    const auto& c = s.conversion;
    out += "{";
    out += c.conv;
    out += c.flags;
    if (c.width >= 0) out += std::to_string(c.width);
    if (c.precision >= 0) out += "." + std::to_string(c.precision);
    if (c.int_bits) out += "/" + std::to_string(c.int_bits);
    out += ":" + s.type->ToString() + "}";
  }
  return out;
}

struct Good {
  std::string format;
  std::vector<PrintfArg> args;
  std::string expect;
};

TEST(PrintfFormatTest, ParsesConversions) {
  static const std::string kStr = "abc";
  const std::vector<Good> cases = {
      {"plain text\n", {}, "plain text\n"},
      {"100%% sure", {}, "100% sure"},
      {"i=%d f=%f\n", {{kI32}, {kF32}}, "i={d:int32} f={f:float32}\n"},
      {"%5d|%-5d|%05.2f|%.3e", {{kI32}, {kI32}, {kF32}, {kF32}},
       "{d5:int32}|{d-5:int32}|{f05.2:float32}|{e.3:float32}"},
      {"%lld %hhx %hu %zu", {{kI64}, {kI32}, {kI32}, {kI64}}, "{d/64:int64} {x/8:int32} {u/16:int32} {u/64:int64}"},
      {"%0-+ #g", {{kF32}}, "{g-+ #0:float32}"},  // flags normalized to one order
      {"%s|%5s|%-5s|%.1s", {{nullptr, &kStr}, {nullptr, &kStr}, {nullptr, &kStr}, {nullptr, &kStr}},
       "abc|  abc|abc  |a"},
      {"%c %d", {{kI32}, {kBool}}, "{c:int32} {d:bool}"},
      {"%lf %a", {{kF16}, {kF32}}, "{f:float16} {a:float32}"},
      {"%.f", {{kF32}}, "{f.0:float32}"},
  };
  for (const auto& c : cases) {
    auto r = PrintfSegments(c.format, c.args);
    ASSERT_TRUE(r.ok()) << c.format << ": " << r.status();
    EXPECT_EQ(Render(*r), c.expect) << c.format;
  }
}

struct Bad {
  std::string format;
  std::vector<PrintfArg> args;
  std::string message;  // a substring of the error
};

TEST(PrintfFormatTest, RejectsWhatCannotBeFormattedSafely) {
  static const std::string kStr = "abc";
  const std::vector<Bad> cases = {
      {"%d", {{kF32}}, "the 1st conversion '%d' expects an integer, got float32"},
      {"%f", {{kI32}}, "the 1st conversion '%f' expects a floating-point value, got int32"},
      {"%d %d", {{kI32}}, "more conversions than the 1 value given (the 2nd is '%d')"},
      {"%d", {{kI32}, {kI32}}, "the format has 1 conversion but 2 values were given"},
      {"x", {{kI32}}, "the format has 0 conversions but 1 value was given"},
      {"%n", {{kI32}}, "'%n' is not supported"},
      {"%p", {{kI64}}, "unsupported conversion '%p'"},
      {"%*d", {{kI32}, {kI32}}, "'*' widths"},
      {"%.*f", {{kI32}, {kF32}}, "'*' widths"},
      {"%ls", {{nullptr, &kStr}}, "length modifier in '%ls'"},
      {"%Lf", {{kF32}}, "length modifier in '%Lf'"},
      {"%hf", {{kF32}}, "length modifier in '%hf'"},
      {"%s", {{kI32}}, "expects a string constant, got int32"},
      {"%d", {{nullptr, &kStr}}, "is given a string; use %s"},
      {"%d", {{types::Vector(3, ScalarKind::kFloat32)}}, "expects a scalar, got vec3f"},
      {"50%", {}, "ends inside the conversion '%'"},
      {"%5.2", {{kF32}}, "ends inside the conversion '%5.2'"},
      {"%99999d", {{kI32}}, "width in '%99999' is larger than 1024"},
      {"%.2000f", {{kF32}}, "precision in '%.2000' is larger than 1024"},
      {"%\x01", {{kI32}}, "unsupported conversion '%\\x01'"},
  };
  for (const auto& c : cases) {
    auto r = PrintfSegments(c.format, c.args);
    ASSERT_FALSE(r.ok()) << c.format;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.format << ": " << r.status().message();
    EXPECT_EQ(r.status().message().substr(0, 10), "printf(): ") << r.status().message();
  }
}

}  // namespace
}  // namespace warpd::builtins
