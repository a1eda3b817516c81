// warpd server: process-wide logging through spdlog.
//
// SetUpLogging installs the default logger (stderr, timestamped) at a level
// named by --log-level; the rest of the server logs with spdlog::info etc.
// Call once, before any threads start.
//
// Two rules for lines that carry what a client sent or did:
// - Client text (names, paths, error messages quoting it) goes through
//   LogText / LogStatus (common/log_text.h): escaped and a few hundred bytes
//   at most.
// - A line a tenant can cause at will (a session opened or closed, a failed
//   call, a dropped local connection) goes through LogLimited: at most
//   kLogBurst lines of one kind per tenant (or local uid) in kLogWindow; the
//   rest are counted and reported as one line, "<source>: suppressed N
//   similar lines (<kind>) in 10s", at the same level, with the
//   next limited line after the window (of any source) or at
//   FlushLogSummaries. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

inline constexpr size_t kLogBurst = 10;
inline constexpr absl::Duration kLogWindow = absl::Seconds(10);

// `level` is one of trace, debug, info, warn, error, critical, off (checked
// by flag parsing; anything else means info).
void SetUpLogging(const std::string& level);

// Whether a line of `kind` for `source` ("tenant 'alice'", "uid 1000") may
// be logged at `level` now; logs the summaries that are due. False when the
// logger would drop `level` anyway (such lines use no budget). `kind` names
// the event in the summary ("session opened").
bool AdmitLogLine(spdlog::level::level_enum level, std::string_view source, std::string_view kind);

// Logs a line through the limit above. The arguments are formatted only when
// the line is admitted; client text among them must already be LogText'd.
template <typename... Args>
void LogLimited(spdlog::level::level_enum level, std::string_view source, std::string_view kind,
                spdlog::format_string_t<Args...> format, Args&&... args) {
  if (AdmitLogLine(level, source, kind)) spdlog::log(level, format, std::forward<Args>(args)...);
}

// Logs every suppressed count not yet reported (at shutdown).
void FlushLogSummaries();

}  // namespace warpd::server
