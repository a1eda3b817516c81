#include "runtime/device/device_time.h"

namespace warpd::runtime {

DeviceTimeLedger& ThisThreadDeviceTime() {
  thread_local DeviceTimeLedger ledger;
  return ledger;
}

}  // namespace warpd::runtime
