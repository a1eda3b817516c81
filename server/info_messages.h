// warpd server: the messages that describe the daemon's devices and
// persistent arrays to clients, shared by warpd.v1.Runtime (GetServerInfo,
// the persistent-array RPCs) and warpd.v1.Admin (warpctl).
// Thread-safe (pure functions).
#pragma once

#include <string>

#include "runtime/device/device.h"
#include "runtime/objects/array.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {

// The device's description and its free memory now.
void FillDeviceInfo(const runtime::Device& device, v1::DeviceInfo* out);

void FillPersistentInfo(const std::string& name, const runtime::Array& array, bool durable,
                        v1::PersistentArrayInfo* out);

}  // namespace warpd::server
