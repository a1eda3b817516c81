// warpd runtime: the devices a daemon runs work on.
//
// A Device describes itself (DeviceInfo, what GetServerInfo reports) and
// offers the execution primitive of its kind: CpuDevice a parallel-for over
// a worker pool (cpu_device.h); a CudaDevice will offer driver streams.
// Devices live as long as the daemon; they are shared by all sessions.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace warpd::runtime {

struct DeviceInfo {
  std::string name;   // "cpu", "cuda:0"
  std::string alias;  // CPU model or GPU name
  std::string kind;   // "cpu" or "cuda"
  std::string arch;   // "x86_64", "sm_90"
  std::string uuid;
  uint64_t memory_bytes = 0;
};

class CpuDevice;

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  const std::string& name() const { return info().name; }
  // This device as a CpuDevice, or null when it is not one.
  virtual CpuDevice* AsCpu() { return nullptr; }
};

}  // namespace warpd::runtime
