// warpd runtime: the memory of one array, on whichever device holds it.
//
// A Buffer is what an Array's elements live in: `size()` bytes at
// `address()`, the address the device's kernels use (a host pointer for the
// CPU; a CUdeviceptr for a GPU, which the host cannot dereference). Code
// that reads or writes the bytes on the host uses `host_data()`, null for
// memory the host cannot address: such bytes move only through the device
// (Device::Upload, Download, CopyRange, FillRange; device.h).
//
// Kinds: CpuBuffer (segment_pool.h), a block of a session's memfd pool that
// a local client may map; the CUDA device's (device/cuda/cuda_buffer.h),
// stream-ordered device memory. A buffer frees its memory when the last
// holder lets go (arrays and views share it through shared_ptr).
// Thread-safe: immutable but for KeepFromReuse.
#pragma once

#include <cstddef>
#include <cstdint>

namespace warpd::runtime {

class CpuBuffer;  // segment_pool.h

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint64_t size() const { return size_; }
  // Byte 0 as the device's kernels address it; 0 when size() is 0.
  uint64_t address() const { return address_; }
  // Byte 0 as a host pointer, when the host can address the memory; null
  // otherwise and when size() is 0.
  std::byte* host_data() const { return host_ ? reinterpret_cast<std::byte*>(address_) : nullptr; }
  // The CPU pool block this is (its memfd, segment and pool, for mapping
  // into a local client); null for any other memory.
  virtual const CpuBuffer* cpu() const { return nullptr; }
  // The memory reaches beyond its session (an array made persistent): once
  // freed, it must not come back as the same session's next allocation as
  // it is. Memory never reused unzeroed ignores it.
  virtual void KeepFromReuse() {}

 protected:
  Buffer(uint64_t address, uint64_t size, bool host_addressable)
      : address_(address), size_(size), host_(host_addressable) {}

 private:
  const uint64_t address_;
  const uint64_t size_;
  const bool host_;
};

}  // namespace warpd::runtime
