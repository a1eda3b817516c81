#include "compiler/codegen/client_text.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/backend/cpu_jit.h"

namespace warpd::codegen {
namespace {

std::string AllBytes() {
  std::string s;
  for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
  return s;
}

// What must never appear inside the literal: a line end, a backslash-newline
// continuation, a comment opener or closer, a trigraph start, a stray quote.
void ExpectInert(const std::string& lit) {
  ASSERT_GE(lit.size(), 2u);
  EXPECT_EQ(lit.front(), '"');
  EXPECT_EQ(lit.back(), '"');
  const std::string inner = lit.substr(1, lit.size() - 2);
  for (char c : inner) {
    const unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "byte " << int(u) << " in " << lit;
  }
  EXPECT_EQ(inner.find('"'), std::string::npos) << lit;
  EXPECT_EQ(inner.find("*/"), std::string::npos) << lit;
  EXPECT_EQ(inner.find("//"), std::string::npos) << lit;
  EXPECT_EQ(inner.find("/*"), std::string::npos) << lit;
  EXPECT_EQ(inner.find('?'), std::string::npos) << lit;
  // Every backslash starts a three-digit octal escape.
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] != '\\') continue;
    ASSERT_LT(i + 3, inner.size() + 1) << lit;  // room for three digits
    for (size_t k = 1; k <= 3; ++k) EXPECT_TRUE(inner[i + k] >= '0' && inner[i + k] <= '7') << lit;
    i += 3;
  }
}

TEST(CppStringLiteralTest, EveryByteValueIsInert) {
  for (int b = 0; b < 256; ++b) ExpectInert(CppStringLiteral(std::string(1, static_cast<char>(b))));
  ExpectInert(CppStringLiteral(AllBytes()));
  for (const char* payload : {"x.py\n#error X\n//", "a\\", "*/ int x; /*", "?\?/", "\"; system(\"id\"); //",
                              "\r\n#include </etc/passwd>", ""})
    ExpectInert(CppStringLiteral(payload));
  EXPECT_EQ(CppStringLiteral("plain text.py:12"), "\"plain text.py:12\"");
  EXPECT_EQ(CppStringLiteral(std::string("a\n1", 3)), "\"a\\0121\"");  // octal: no run into the digit
}

// The literal means exactly the text, and in a comment or a literal it
// changes nothing else in the translation unit: clang compiles it and the
// string comes back byte for byte.
TEST(CppStringLiteralTest, RoundTripsThroughClang) {
  auto jit = compiler::CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  std::vector<std::string> texts = {AllBytes(), "x.py\n#error X\n//", "a\\", "*/", "?\?/", std::string(5000, '\n')};
  std::string src;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string lit = CppStringLiteral(texts[i]);
    src += "// comment with " + lit + "\n";
    src += "/* block comment with " + lit + " */\n";
    src += "static const char s" + std::to_string(i) + "[] = " + lit + ";\n";
    src += "extern \"C\" const char* get" + std::to_string(i) + "(unsigned long* n) { *n = sizeof(s" +
           std::to_string(i) + ") - 1; return s" + std::to_string(i) + "; }\n";
  }
  auto obj = (*jit)->CompileToObject(src, "client_text");
  ASSERT_TRUE(obj.ok()) << obj.status();
  auto mod = (*jit)->Load(*obj, "client_text");
  ASSERT_TRUE(mod.ok()) << mod.status();
  for (size_t i = 0; i < texts.size(); ++i) {
    auto sym = (*mod)->Lookup("get" + std::to_string(i));
    ASSERT_TRUE(sym.ok()) << sym.status();
    unsigned long n = 0;
    const char* got = reinterpret_cast<const char* (*)(unsigned long*)>(*sym)(&n);
    ASSERT_EQ(n, texts[i].size()) << i;
    EXPECT_EQ(std::memcmp(got, texts[i].data(), n), 0) << i;
  }
}

}  // namespace
}  // namespace warpd::codegen
