// warpd runtime: the devices of this daemon, by name.
//
// Built once at start-up ("cpu" always; "cuda:N" for each GPU the driver
// reports, which cannot run work yet), then read-only: Find is thread-safe after
// construction. Owns the devices; they live as long as the registry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/device/device.h"

namespace warpd::runtime {

class DeviceRegistry {
 public:
  // Not thread-safe; call before sharing the registry.
  void Add(std::unique_ptr<Device> device) { devices_.push_back(std::move(device)); }

  // The device called `name`; "" means "cpu". INVALID_ARGUMENT naming the
  // available devices otherwise.
  absl::StatusOr<Device*> Find(const std::string& name) const {
    const std::string& want = name.empty() ? kDefault : name;
    for (const auto& d : devices_) {
      if (d->name() == want) return d.get();
    }
    std::vector<std::string> names;
    for (const auto& d : devices_) names.push_back(d->name());
    return absl::InvalidArgumentError(absl::StrCat("unknown device '", want,
                                                   "' (available: ", absl::StrJoin(names, ", "),
                                                   ")"));
  }

  // Find, for work (arrays, modules, launches, graphs): a device listed but
  // unable to run work (DeviceInfo::unavailable) is FAILED_PRECONDITION
  // saying why.
  absl::StatusOr<Device*> FindUsable(const std::string& name) const {
    absl::StatusOr<Device*> d = Find(name);
    if (d.ok() && !(*d)->info().unavailable.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("device '", (*d)->name(), "' (", (*d)->info().alias,
                                                        ") cannot run work: ", (*d)->info().unavailable));
    }
    return d;
  }

  const std::vector<std::unique_ptr<Device>>& all() const { return devices_; }

 private:
  inline static const std::string kDefault = "cpu";
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace warpd::runtime
