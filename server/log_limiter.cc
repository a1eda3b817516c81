#include "server/log_limiter.h"

#include <algorithm>

namespace warpd::server {

LogLimiter::LogLimiter(Options options) : options_(std::move(options)) {}

void LogLimiter::SweepLocked(absl::Time now, std::vector<Summary>* out) {
  if (now < next_sweep_) return;
  next_sweep_ = absl::InfiniteFuture();
  for (auto it = windows_.begin(); it != windows_.end();) {
    const Window& w = it->second;
    if (now - w.start < options_.window) {
      next_sweep_ = std::min(next_sweep_, w.start + options_.window);
      ++it;
      continue;
    }
    if (w.suppressed > 0) {
      out->push_back(Summary{it->first.first, it->first.second, w.level, w.suppressed, options_.window});
    }
    windows_.erase(it++);
  }
}

LogLimiter::Decision LogLimiter::Admit(std::string_view source, std::string_view kind, int level) {
  const absl::Time now = options_.clock ? options_.clock() : absl::Now();
  Decision d;
  absl::MutexLock lock(&mu_);
  SweepLocked(now, &d.ended);
  auto [it, fresh] = windows_.try_emplace(Key(source, kind));
  Window& w = it->second;
  if (fresh) {
    w.start = now;
    w.level = level;
    next_sweep_ = std::min(next_sweep_, now + options_.window);
  }
  if (w.admitted < options_.burst) {
    ++w.admitted;
    d.admit = true;
  } else {
    ++w.suppressed;
  }
  return d;
}

std::vector<LogLimiter::Summary> LogLimiter::Flush() {
  std::vector<Summary> out;
  absl::MutexLock lock(&mu_);
  for (auto& [key, w] : windows_) {
    if (w.suppressed > 0) out.push_back(Summary{key.first, key.second, w.level, w.suppressed, options_.window});
  }
  windows_.clear();
  next_sweep_ = absl::InfiniteFuture();
  return out;
}

}  // namespace warpd::server
