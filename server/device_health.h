// warpd server: each device's health, for grpc.health and recovery.
//
//   DeviceHealth health(state->devices(), [&](const std::string& device, bool serving) {
//     server->GetHealthCheckService()->SetServingStatus(device, serving);
//   });
//
// A thread looks at every device each `interval`. A device that is not
// healthy (a GPU whose CUDA context a kernel's hardware fault lost,
// runtime/device/device.h) is asked to Recover, which succeeds once the
// arrays and work of the lost context are gone (their sessions freed them
// or closed). Each device's state goes to `publish` once at start and then
// whenever it changes: main.cc makes it the grpc.health.v1 status of the
// service named after the device ("cpu", "cuda:0"), beside the daemon's
// own (""), which a lost GPU leaves SERVING: the CPU and the other GPUs
// keep serving. Changes are logged once each. Thread-safe; the destructor
// stops the thread.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/device/device_registry.h"

namespace warpd::server {

class DeviceHealth {
 public:
  using Publish = std::function<void(const std::string& device, bool serving)>;

  DeviceHealth(const runtime::DeviceRegistry& devices, Publish publish,
               absl::Duration interval = absl::Milliseconds(500));
  ~DeviceHealth();
  DeviceHealth(const DeviceHealth&) = delete;
  DeviceHealth& operator=(const DeviceHealth&) = delete;

  // One look at every device now (what the thread does each interval).
  void CheckNow() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();

  const runtime::DeviceRegistry& devices_;
  const Publish publish_;
  const absl::Duration interval_;
  absl::Mutex mu_;
  std::vector<int> serving_ ABSL_GUARDED_BY(mu_);  // per device: -1 unknown, 0, 1
  std::vector<std::string> last_reason_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace warpd::server
