#include "common/log_text.h"

#include <random>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace warpd {
namespace {

// Printable ASCII only: no control bytes, nothing that is not UTF-8.
bool PrintableAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

TEST(LogTextTest, ShortTextIsEscapedLikeCHexEscape) {
  const std::string text = "x\nFORGED line\t\"q\" 'a' \\ \x01\x7f caf\xc3\xa9";
  EXPECT_EQ(LogText(text), absl::CHexEscape(text));
  EXPECT_EQ(LogText("x\nFORGED"), "x\\nFORGED");
  EXPECT_EQ(LogText(""), "");
  EXPECT_EQ(LogText("plain name"), "plain name");
}

TEST(LogTextTest, LongTextIsCutWithAMarkerCountingTheBytesLeftOut) {
  const std::string text(4 << 20, 'a');
  EXPECT_EQ(LogText(text), std::string(200, 'a') + "...(+4194104 bytes)");
  EXPECT_EQ(LogText(text, 10), "aaaaaaaaaa...(+4194294 bytes)");
  // Exactly max fits without a marker.
  EXPECT_EQ(LogText(std::string(200, 'b')), std::string(200, 'b'));
  EXPECT_EQ(LogText(std::string(201, 'b')), std::string(200, 'b') + "...(+1 bytes)");
}

TEST(LogTextTest, AnEscapeIsNeverSplit) {
  // "ab" then a newline: its escape takes 2 bytes, and max 3 leaves room for one.
  EXPECT_EQ(LogText("ab\ncd", 3), "ab...(+3 bytes)");
  EXPECT_EQ(LogText("ab\ncd", 4), "ab\\n...(+2 bytes)");
  // A binary byte's escape takes 4.
  EXPECT_EQ(LogText("a\xff", 4), "a...(+1 bytes)");
  EXPECT_EQ(LogText("a\xff", 5), "a\\xff");
}

TEST(LogTextTest, MultiByteUtf8CutMidCharacterStaysAscii) {
  // "é" is 2 bytes, each shown as \xNN: a cut between them leaves a whole
  // escape, never half a character, in the log.
  std::string text;
  for (int i = 0; i < 100; ++i) text += "\xc3\xa9";  // 200 bytes, 100 characters
  const std::string shown = LogText(text, 10);
  EXPECT_EQ(shown, "\\xc3\\xa9...(+198 bytes)");
  EXPECT_TRUE(PrintableAscii(shown));
  // A 3-byte character cut after its first byte.
  EXPECT_EQ(LogText("\xe2\x82\xac", 4), "\\xe2...(+2 bytes)");
}

TEST(LogTextTest, AnyInputStaysWithinTheBound) {
  std::mt19937 rng(23);
  for (size_t max : {0, 1, 3, 4, 5, 64, 200}) {
    for (int round = 0; round < 200; ++round) {
      std::string text(rng() % 2000, '\0');
      for (char& c : text) c = static_cast<char>(rng());
      const std::string shown = LogText(text, max);
      ASSERT_LE(shown.size(), max + kLogTextMarkerMax) << max;
      ASSERT_TRUE(PrintableAscii(shown)) << shown;
      if (absl::CHexEscape(text).size() <= max) {
        EXPECT_EQ(shown, absl::CHexEscape(text));
      } else {
        // What is shown is a prefix of the full escape, cut between escapes.
        const size_t marker = shown.rfind("...(+");
        ASSERT_NE(marker, std::string::npos) << shown;
        EXPECT_LE(marker, max);
        EXPECT_EQ(absl::CHexEscape(text).substr(0, marker), shown.substr(0, marker));
      }
    }
  }
  // The largest marker.
  EXPECT_EQ(std::string("...(+18446744073709551615 bytes)").size(), kLogTextMarkerMax);
}

TEST(LogTextTest, LogStatusShowsTheCodeAndABoundedMessage) {
  EXPECT_EQ(LogStatus(absl::OkStatus()), "OK");
  EXPECT_EQ(LogStatus(absl::InvalidArgumentError("bad 'x\ny'")), "INVALID_ARGUMENT: bad \\'x\\ny\\'");
  const std::string shown = LogStatus(absl::NotFoundError(std::string(1 << 20, 'n')));
  EXPECT_EQ(shown, "NOT_FOUND: " + std::string(500, 'n') + "...(+1048076 bytes)");
}

}  // namespace
}  // namespace warpd
