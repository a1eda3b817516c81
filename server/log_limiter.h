// warpd server: a limit on the log lines one tenant can cause at will.
//
// A tenant decides how often it opens sessions, fails calls or drops a
// connection; each such event may log a line. LogLimiter admits at most
// `burst` lines of one kind for one source (a tenant's label, "uid 1000")
// in a window of `window` that starts with the first of them; the rest are
// counted. When a window has passed, the next Admit (of any source or kind)
// returns that window's count as a Summary, for the caller to log as one
// "suppressed N similar lines" line; Flush returns every count not yet
// reported (at shutdown). Sources and kinds do not share budgets.
//
//   LogLimiter::Decision d = limiter.Admit(tenant.label(), "session opened", level);
//   for (const auto& s : d.ended) LogSummary(s);
//   if (d.admit) spdlog::info(...);
//
// Memory: one entry per (source, kind) with a window in progress; entries
// go when their window has passed and been reported. Sources are tenants
// and uids, kinds are the caller's constants, so the map stays small.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace warpd::server {

class LogLimiter {
 public:
  struct Options {
    size_t burst = 10;
    absl::Duration window = absl::Seconds(10);
    std::function<absl::Time()> clock;  // null: absl::Now
  };

  // Lines of one kind for one source that were not logged.
  struct Summary {
    std::string source;
    std::string kind;
    int level = 0;  // the caller's severity, as given to the Admit that opened the window
    uint64_t suppressed = 0;
    absl::Duration window;
  };

  struct Decision {
    bool admit = false;
    std::vector<Summary> ended;  // windows that have passed with lines suppressed (any source)
  };

  LogLimiter() : LogLimiter(Options()) {}
  explicit LogLimiter(Options options);

  // Whether a line of `kind` for `source` may be logged now, and the
  // summaries now due. `level` is returned in this window's summary.
  Decision Admit(std::string_view source, std::string_view kind, int level);

  // Every suppressed count not yet reported, windows in progress included;
  // their entries are reset.
  std::vector<Summary> Flush();

 private:
  struct Window {
    absl::Time start;
    int level = 0;
    size_t admitted = 0;
    uint64_t suppressed = 0;
  };
  using Key = std::pair<std::string, std::string>;  // source, kind

  // Removes windows that ended by `now`, appending those with lines
  // suppressed to `out`.
  void SweepLocked(absl::Time now, std::vector<Summary>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, Window> windows_ ABSL_GUARDED_BY(mu_);
  absl::Time next_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // earliest window end
};

}  // namespace warpd::server
