#include "runtime/exec/output_buffer.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/memory/memory_account.h"

namespace warpd::runtime {
namespace {

TEST(OutputBufferTest, KeepsTextInOrderWithinTheBound) {
  OutputBuffer out(10);
  out.Append("abc");
  out.Append("");
  out.Append("defg");
  EXPECT_EQ(out.size(), 7u);
  EXPECT_EQ(out.Take("", "why"), "abcdefg");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(out.Take("", "why"), "");
}

TEST(OutputBufferTest, DropsEverythingAfterTheFirstTextPastTheBound) {
  OutputBuffer out(8);
  out.Append("12345");
  out.Append("6789");  // 9 > 8: dropped
  out.Append("x");     // would fit, but the gap must stay where the note is
  EXPECT_EQ(out.Take(" of 'k'", "too much"), "12345[warpd: 5 bytes of kernel output of 'k' dropped: too much]\n");
  // The next round starts afresh.
  out.Append("y");
  EXPECT_EQ(out.Take("", "too much"), "y");
}

TEST(OutputBufferTest, ChargesKeptTextAndReleasesItOnTake) {
  auto account = MemoryAccount::Create("tenant 't'", 100);
  OutputBuffer out(1000, account);
  out.Append(std::string(60, 'a'));
  EXPECT_EQ(account->used(), 60u);
  out.Append(std::string(30, 'b'));
  EXPECT_EQ(account->used(), 90u);
  // Past the account's limit: dropped, and the note names the limit.
  out.Append(std::string(20, 'c'));
  EXPECT_EQ(account->used(), 90u);
  const std::string text = out.Take("", "more than 1000 bytes");
  EXPECT_EQ(account->used(), 0u);
  EXPECT_EQ(text.substr(0, 90), std::string(60, 'a') + std::string(30, 'b'));
  EXPECT_NE(text.find("20 bytes of kernel output dropped: tenant 't' memory limit"), std::string::npos) << text;
}

TEST(OutputBufferTest, ClearAndDestructionReleaseTheCharge) {
  auto account = MemoryAccount::Create("session", 0);
  {
    OutputBuffer out(1000, account);
    out.Append(std::string(40, 'a'));
    out.Clear();
    EXPECT_EQ(account->used(), 0u);
    EXPECT_TRUE(out.empty());
    out.Append(std::string(50, 'a'));
    EXPECT_EQ(account->used(), 50u);
  }
  EXPECT_EQ(account->used(), 0u);
}

}  // namespace
}  // namespace warpd::runtime
