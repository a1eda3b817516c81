#include "runtime/memory/cpu_allocator.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/posix_error.h"

namespace warpd::runtime {

CpuBuffer::~CpuBuffer() {
  if (data_ != nullptr) munmap(data_, size_);
  close(fd_);
  in_use_->fetch_sub(size_, std::memory_order_relaxed);
}

CpuAllocator::CpuAllocator(const Options& options)
    : options_(options), in_use_(std::make_shared<std::atomic<uint64_t>>(0)) {}

absl::StatusOr<std::shared_ptr<CpuBuffer>> CpuAllocator::Allocate(uint64_t size,
                                                                  absl::string_view name) {
  if (size > options_.max_allocation_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("array of ", size, " bytes exceeds the per-array limit of ",
                     options_.max_allocation_bytes, " bytes (--max-array-bytes)"));
  }
  // Also rejects sizes that mmap or off_t cannot represent.
  if (size > static_cast<uint64_t>(INT64_MAX) / 2) {
    return absl::ResourceExhaustedError(absl::StrCat("array of ", size, " bytes is too large"));
  }
  // Reserve the bytes before any system call so concurrent allocations cannot
  // together overshoot the total limit.
  uint64_t current = in_use_->load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next = current + size;  // cannot overflow: both < 2^63
    if (options_.max_total_bytes != 0 && next > options_.max_total_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "allocating ", size, " bytes would exceed the CPU memory limit of ",
          options_.max_total_bytes, " bytes (", current, " bytes in use)"));
    }
    if (in_use_->compare_exchange_weak(current, next, std::memory_order_relaxed)) break;
  }
  absl::Cleanup unreserve = [&] { in_use_->fetch_sub(size, std::memory_order_relaxed); };

  const std::string label = absl::StrCat("warpd:", name);
  const int fd = memfd_create(label.c_str(), MFD_CLOEXEC);
  if (fd < 0) return PosixError("memfd_create", errno);
  absl::Cleanup close_fd = [fd] { close(fd); };

  std::byte* data = nullptr;
  if (size > 0) {
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
      return PosixError(absl::StrCat("ftruncate memfd to ", size, " bytes"), errno);
    }
    // Commit the pages now; an over-commit would otherwise surface as SIGBUS
    // when a kernel first touches the memory.
    if (int err = posix_fallocate(fd, 0, static_cast<off_t>(size)); err != 0 && err != EOPNOTSUPP) {
      return PosixError(absl::StrCat("allocating ", size, " bytes"), err);
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return PosixError(absl::StrCat("mmap ", size, " bytes"), errno);
    data = static_cast<std::byte*>(p);
  }
  std::move(unreserve).Cancel();
  std::move(close_fd).Cancel();
  return std::shared_ptr<CpuBuffer>(new CpuBuffer(fd, data, size, in_use_));
}

}  // namespace warpd::runtime
