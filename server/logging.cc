#include "server/logging.h"

#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "server/log_limiter.h"
#include "spdlog/sinks/stdout_color_sinks.h"

namespace warpd::server {
namespace {

LogLimiter& Limiter() {
  static LogLimiter* limiter = new LogLimiter(LogLimiter::Options{kLogBurst, kLogWindow, nullptr});
  return *limiter;
}

void LogSummaries(const std::vector<LogLimiter::Summary>& summaries) {
  for (const LogLimiter::Summary& s : summaries) {
    spdlog::log(static_cast<spdlog::level::level_enum>(s.level), "{}: suppressed {} similar lines ({}) in {}",
                s.source, s.suppressed, s.kind, absl::FormatDuration(s.window));
  }
}

}  // namespace

void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("warpd");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to off; flags already rejected those.
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

bool AdmitLogLine(spdlog::level::level_enum level, std::string_view source, std::string_view kind) {
  if (!spdlog::should_log(level)) return false;
  LogLimiter::Decision d = Limiter().Admit(source, kind, static_cast<int>(level));
  LogSummaries(d.ended);
  return d.admit;
}

void FlushLogSummaries() { LogSummaries(Limiter().Flush()); }

}  // namespace warpd::server
