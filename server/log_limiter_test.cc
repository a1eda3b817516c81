#include "server/log_limiter.h"

#include <algorithm>
#include <memory>
#include <tuple>

#include "gtest/gtest.h"

namespace warpd::server {
namespace {

// A clock the test moves by hand.
struct FakeClock {
  absl::Time now = absl::FromUnixSeconds(1000);
  std::function<absl::Time()> Fn() {
    return [this] { return now; };
  }
};

LogLimiter::Options Opts(FakeClock* clock, size_t burst = 10, absl::Duration window = absl::Seconds(10)) {
  return LogLimiter::Options{burst, window, clock->Fn()};
}

// How many of `n` lines were admitted; fails on any summary.
size_t AdmitMany(LogLimiter& limiter, std::string_view source, std::string_view kind, int n) {
  size_t admitted = 0;
  for (int i = 0; i < n; ++i) {
    LogLimiter::Decision d = limiter.Admit(source, kind, 2);
    EXPECT_TRUE(d.ended.empty());
    admitted += d.admit;
  }
  return admitted;
}

TEST(LogLimiterTest, AdmitsTheBurstAndReportsTheRestAfterTheWindow) {
  FakeClock clock;
  LogLimiter limiter(Opts(&clock));
  EXPECT_EQ(AdmitMany(limiter, "tenant 'a'", "session opened", 200), 10u);
  // Still inside the window: nothing more, nothing reported.
  clock.now += absl::Seconds(9);
  LogLimiter::Decision d = limiter.Admit("tenant 'a'", "session opened", 2);
  EXPECT_FALSE(d.admit);
  EXPECT_TRUE(d.ended.empty());
  // The window has passed: the next line is admitted and carries the count.
  clock.now += absl::Seconds(1);
  d = limiter.Admit("tenant 'a'", "session opened", 2);
  EXPECT_TRUE(d.admit);
  ASSERT_EQ(d.ended.size(), 1u);
  EXPECT_EQ(d.ended[0].source, "tenant 'a'");
  EXPECT_EQ(d.ended[0].kind, "session opened");
  EXPECT_EQ(d.ended[0].suppressed, 191u);
  EXPECT_EQ(d.ended[0].level, 2);
  EXPECT_EQ(d.ended[0].window, absl::Seconds(10));
  // A new window: 9 more admitted (the line above was the first), then none.
  EXPECT_EQ(AdmitMany(limiter, "tenant 'a'", "session opened", 20), 9u);
}

TEST(LogLimiterTest, SourcesAndKindsDoNotShareBudgets) {
  FakeClock clock;
  LogLimiter limiter(Opts(&clock, /*burst=*/3));
  EXPECT_EQ(AdmitMany(limiter, "tenant 'a'", "session opened", 50), 3u);
  EXPECT_EQ(AdmitMany(limiter, "tenant 'b'", "session opened", 5), 3u);
  EXPECT_EQ(AdmitMany(limiter, "tenant 'a'", "session closed", 5), 3u);
  EXPECT_EQ(AdmitMany(limiter, "uid 1000", "command connection", 1), 1u);
  // A source whose prefix matches another is still another source.
  EXPECT_EQ(AdmitMany(limiter, "tenant 'a", "session opened", 3), 3u);
  clock.now += absl::Seconds(10);
  LogLimiter::Decision d = limiter.Admit("tenant 'c'", "other", 2);
  EXPECT_TRUE(d.admit);
  // Every ended window with lines suppressed is reported once, by whichever
  // line comes next; windows without suppressed lines are not.
  std::sort(d.ended.begin(), d.ended.end(), [](const auto& x, const auto& y) {
    return std::tie(x.source, x.kind) < std::tie(y.source, y.kind);
  });
  ASSERT_EQ(d.ended.size(), 3u);
  EXPECT_EQ(d.ended[0].source, "tenant 'a'");
  EXPECT_EQ(d.ended[0].kind, "session closed");
  EXPECT_EQ(d.ended[0].suppressed, 2u);
  EXPECT_EQ(d.ended[1].source, "tenant 'a'");
  EXPECT_EQ(d.ended[1].kind, "session opened");
  EXPECT_EQ(d.ended[1].suppressed, 47u);
  EXPECT_EQ(d.ended[2].source, "tenant 'b'");
  EXPECT_EQ(d.ended[2].suppressed, 2u);
  EXPECT_TRUE(limiter.Admit("tenant 'a'", "session opened", 2).ended.empty());
}

TEST(LogLimiterTest, AWindowStartsWithItsFirstLine) {
  FakeClock clock;
  LogLimiter limiter(Opts(&clock, /*burst=*/2));
  EXPECT_EQ(AdmitMany(limiter, "s", "k", 2), 2u);
  clock.now += absl::Seconds(6);
  // Another source's window starts now and ends 6 s after s's.
  EXPECT_EQ(AdmitMany(limiter, "t", "k", 4), 2u);
  EXPECT_FALSE(limiter.Admit("s", "k", 2).admit);
  clock.now += absl::Seconds(4);  // s's window has passed, t's has not
  LogLimiter::Decision d = limiter.Admit("t", "k", 2);
  EXPECT_FALSE(d.admit);
  ASSERT_EQ(d.ended.size(), 1u);
  EXPECT_EQ(d.ended[0].source, "s");
  EXPECT_EQ(d.ended[0].suppressed, 1u);
  EXPECT_TRUE(limiter.Admit("s", "k", 2).admit);
  clock.now += absl::Seconds(6);
  d = limiter.Admit("s", "k", 2);
  EXPECT_TRUE(d.admit);  // s's second window still has room
  ASSERT_EQ(d.ended.size(), 1u);
  EXPECT_EQ(d.ended[0].source, "t");
  EXPECT_EQ(d.ended[0].suppressed, 3u);
}

TEST(LogLimiterTest, FlushReportsWindowsInProgressOnce) {
  FakeClock clock;
  LogLimiter limiter(Opts(&clock, /*burst=*/1));
  EXPECT_EQ(AdmitMany(limiter, "s", "k", 5), 1u);
  EXPECT_EQ(AdmitMany(limiter, "t", "k", 1), 1u);
  std::vector<LogLimiter::Summary> flushed = limiter.Flush();
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].source, "s");
  EXPECT_EQ(flushed[0].suppressed, 4u);
  EXPECT_TRUE(limiter.Flush().empty());
  clock.now += absl::Seconds(30);
  EXPECT_TRUE(limiter.Admit("s", "k", 2).ended.empty());
}

}  // namespace
}  // namespace warpd::server
