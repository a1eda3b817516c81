#include "server/device_health.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace warpd::server {

DeviceHealth::DeviceHealth(const runtime::DeviceRegistry& devices, Publish publish, absl::Duration interval)
    : devices_(devices),
      publish_(std::move(publish)),
      interval_(interval),
      serving_(devices.all().size(), -1),
      last_reason_(devices.all().size()) {
  CheckNow();
  thread_ = std::thread([this] { Loop(); });
}

DeviceHealth::~DeviceHealth() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void DeviceHealth::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
    }
    CheckNow();
  }
}

void DeviceHealth::CheckNow() {
  absl::MutexLock lock(&mu_);
  const auto& all = devices_.all();
  for (size_t i = 0; i < all.size(); ++i) {
    runtime::Device& device = *all[i];
    bool healthy = device.healthy();
    if (!healthy) {
      const absl::Status recovered = device.Recover();
      healthy = device.healthy();
      if (healthy) {
        spdlog::info("{}: its CUDA context was reset; it serves again", device.name());
      } else if (std::string why(recovered.message()); why != last_reason_[i]) {
        spdlog::warn("{} is not serving: {}", device.name(), why);
        last_reason_[i] = std::move(why);
      }
    }
    if (serving_[i] != int(healthy)) {
      if (serving_[i] == 1) spdlog::error("{} lost its CUDA context: NOT_SERVING until it is reset", device.name());
      serving_[i] = int(healthy);
      if (healthy) last_reason_[i].clear();
      publish_(device.name(), healthy);
    }
  }
}

}  // namespace warpd::server
