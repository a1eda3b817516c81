#include "server/tenants/tenant.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

Tenant::Tenant(std::string name, uint32_t weight, const TenantLimits& limits,
               std::shared_ptr<runtime::MemoryAccount> global_memory)
    : name_(std::move(name)),
      label_(absl::StrCat("tenant '", name_, "'")),
      weight_(weight),
      memory_(runtime::MemoryAccount::Create(label_, limits.memory_bytes, std::move(global_memory))),
      sessions_(label_, "sessions", limits.sessions),
      arrays_(label_, "arrays", limits.arrays),
      queued_commands_(std::make_shared<CountQuota>(label_, "queued commands", limits.queued_commands)),
      graph_commands_(std::make_shared<CountQuota>(label_, "graph commands", limits.graph_commands)),
      cache_writes_(limits.cache_bytes_per_hour),
      compile_limit_(limits.compiles) {}

TenantLimits Tenant::limits() const {
  TenantLimits out;
  out.memory_bytes = memory_->limit();
  out.arrays = arrays_.limit();
  out.sessions = sessions_.limit();
  out.queued_commands = queued_commands_->limit();
  out.graph_commands = graph_commands_->limit();
  out.cache_bytes_per_hour = cache_writes_.bytes_per_hour();
  absl::MutexLock lock(&mu_);
  out.compiles = compile_limit_;
  return out;
}

void Tenant::Update(uint32_t weight, const TenantLimits& limits) {
  weight_.store(weight, std::memory_order_relaxed);
  memory_->set_limit(limits.memory_bytes);
  sessions_.set_limit(limits.sessions);
  arrays_.set_limit(limits.arrays);
  queued_commands_->set_limit(limits.queued_commands);
  graph_commands_->set_limit(limits.graph_commands);
  cache_writes_.set_bytes_per_hour(limits.cache_bytes_per_hour);
  std::deque<absl::AnyInvocable<void() &&>> start;
  {
    absl::MutexLock lock(&mu_);
    compile_limit_ = limits.compiles;
    // A raised limit lets waiters start now.
    while (!compiles_waiting_.empty() && (compile_limit_ == 0 || compiles_running_ < compile_limit_)) {
      ++compiles_running_;
      start.push_back(std::move(compiles_waiting_.front()));
      compiles_waiting_.pop_front();
    }
  }
  for (auto& s : start) std::move(s)();
}

absl::Status Tenant::StartCompile(absl::AnyInvocable<void() &&> start) {
  {
    absl::MutexLock lock(&mu_);
    if (compile_limit_ != 0 && compiles_running_ >= compile_limit_) {
      if (compiles_waiting_.size() >= kMaxWaitingCompiles) {
        return absl::ResourceExhaustedError(
            absl::StrCat(label_, " compiles limit: ", compiles_running_, " running and ",
                         compiles_waiting_.size(), " waiting; try again when some have finished"));
      }
      compiles_waiting_.push_back(std::move(start));
      return absl::OkStatus();
    }
    ++compiles_running_;
  }
  std::move(start)();
  return absl::OkStatus();
}

void Tenant::CompileDone() {
  absl::AnyInvocable<void() &&> next;
  {
    absl::MutexLock lock(&mu_);
    if (!compiles_waiting_.empty() && (compile_limit_ == 0 || compiles_running_ <= compile_limit_)) {
      next = std::move(compiles_waiting_.front());
      compiles_waiting_.pop_front();
    } else {
      --compiles_running_;
      return;
    }
  }
  std::move(next)();
}

bool Tenant::ChargeCacheWrite(uint64_t bytes) {
  if (cache_writes_.TryCharge(bytes)) return true;
  constexpr int64_t kLogEverySeconds = 600;
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  int64_t logged = cache_refusal_logged_s_.load(std::memory_order_relaxed);
  if ((logged == INT64_MIN || now - logged >= kLogEverySeconds) &&
      cache_refusal_logged_s_.compare_exchange_strong(logged, now, std::memory_order_relaxed)) {
    spdlog::warn("{} reached its cache_bytes_per_hour limit ({} bytes): the modules it compiles are served "
                 "from memory and not saved to the disk kernel cache until the budget refills",
                 label_, cache_writes_.bytes_per_hour());
  }
  return false;
}

uint64_t Tenant::compiles_running() const {
  absl::MutexLock lock(&mu_);
  return compiles_running_;
}

uint64_t Tenant::compiles_waiting() const {
  absl::MutexLock lock(&mu_);
  return compiles_waiting_.size();
}

}  // namespace warpd::server
