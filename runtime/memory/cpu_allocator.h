// warpd runtime: CPU memory for arrays, backed by memfd segments.
//
// Every CpuBuffer is its own anonymous memory file (memfd_create with
// MFD_CLOEXEC) mapped MAP_SHARED. Keeping the fd lets a later stage hand the
// segment to an authenticated local client (SCM_RIGHTS over the Unix socket)
// for zero-copy views; nothing about it is reachable by name.
//
// Guarantees:
//   - data() is page aligned (so at least 64-byte aligned); size 0 maps
//     nothing and data() is null.
//   - a fresh memfd reads as zeros, so every buffer starts zero-filled; the
//     pages are committed up front (fallocate) so running out of memory is a
//     RESOURCE_EXHAUSTED at Allocate time instead of a SIGBUS later.
//   - limits are checked before any system call: one allocation may not
//     exceed max_allocation_bytes, and the bytes of all live buffers may not
//     exceed max_total_bytes (0: unlimited). Both are RESOURCE_EXHAUSTED.
//
// Ownership: buffers are shared_ptr; the mapping and fd are released when the
// last reference drops (which may be after the allocator is gone).
// Thread-safe: Allocate may be called concurrently; a CpuBuffer's contents are
// synchronized by its users (command streams).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace warpd::runtime {

class CpuBuffer {
 public:
  ~CpuBuffer();
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  // The memfd; owned by the buffer (closed with it). Never -1.
  int fd() const { return fd_; }

 private:
  friend class CpuAllocator;
  CpuBuffer(int fd, std::byte* data, uint64_t size,
            std::shared_ptr<std::atomic<uint64_t>> in_use)
      : fd_(fd), data_(data), size_(size), in_use_(std::move(in_use)) {}

  int fd_;
  std::byte* data_;
  uint64_t size_;
  std::shared_ptr<std::atomic<uint64_t>> in_use_;  // accounting, shared with the allocator
};

class CpuAllocator {
 public:
  struct Options {
    uint64_t max_allocation_bytes = uint64_t{16} << 30;  // 16 GiB
    uint64_t max_total_bytes = 0;                        // 0: unlimited
  };

  explicit CpuAllocator(const Options& options);

  // A new zero-filled buffer of `size` bytes. `name` labels the memfd (shows
  // in /proc/<pid>/fd). RESOURCE_EXHAUSTED when a limit is exceeded or the
  // system is out of memory; INTERNAL for other system errors.
  absl::StatusOr<std::shared_ptr<CpuBuffer>> Allocate(uint64_t size, absl::string_view name);

  uint64_t bytes_in_use() const { return in_use_->load(std::memory_order_relaxed); }
  const Options& options() const { return options_; }

 private:
  Options options_;
  std::shared_ptr<std::atomic<uint64_t>> in_use_;
};

}  // namespace warpd::runtime
