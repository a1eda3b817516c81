// warpd runtime tests: a stand-in for a GPU's memory (ArrayMemory) that the
// host cannot address by the Buffer's account (host_data() is null, as on
// a GPU) but that is really host memory, so a test can read what an object
// published to its mirror and run the native queries on it on the host.
// Contiguous arrays only (the mirrors' blocks and the tests' arrays).
// Test-only.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/memory_charge.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_memory.h"

namespace warpd::runtime::testing {

class HostDeviceBuffer final : public Buffer {
 public:
  HostDeviceBuffer(void* p, uint64_t bytes, MemoryCharge charge)
      : Buffer(reinterpret_cast<uint64_t>(p), bytes, /*host_addressable=*/false), charge_(std::move(charge)) {}
  ~HostDeviceBuffer() override { std::free(reinterpret_cast<void*>(address())); }

 private:
  MemoryCharge charge_;
};

class HostDeviceMemory final : public ArrayMemory {
 public:
  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(uint64_t bytes, std::string_view, SegmentPool* pool,
                                                   Fill) override {
    if (pool == nullptr) return absl::FailedPreconditionError("no pool");
    absl::StatusOr<MemoryCharge> charge = MemoryCharge::Take(pool->account(), bytes);
    if (!charge.ok()) return charge.status();
    void* p = std::aligned_alloc(256, (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256);
    std::memset(p, 0, bytes);
    ++allocations;
    return std::make_shared<HostDeviceBuffer>(p, bytes, *std::move(charge));
  }
  absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) override {
    EXPECT_TRUE(dst.contiguous());
    EXPECT_EQ(dst.data(), nullptr);  // never host memory
    if (offset + bytes.size() > dst.size_bytes()) return absl::OutOfRangeError("upload past the array");
    std::memcpy(reinterpret_cast<std::byte*>(dst.address()) + offset, bytes.data(), bytes.size());
    uploaded += bytes.size();
    return absl::OkStatus();
  }
  absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) override {
    EXPECT_TRUE(src.contiguous());
    EXPECT_EQ(src.data(), nullptr);
    if (offset + out.size() > src.size_bytes()) return absl::OutOfRangeError("download past the array");
    std::memcpy(out.data(), reinterpret_cast<const std::byte*>(src.address()) + offset, out.size());
    downloaded += out.size();
    return absl::OkStatus();
  }

  // A contiguous 1-D array of `n` elements of `dtype` on "gpu" holding `data`.
  std::shared_ptr<const Array> Make(types::TypeRef dtype, const void* data, size_t n, SegmentPool& pool) {
    ArrayLayout layout = *MakeArrayLayout(dtype, {static_cast<int64_t>(n)});
    auto buffer = *Allocate(layout.size_bytes, "test", &pool, Fill::kZero);
    if (layout.size_bytes > 0) std::memcpy(reinterpret_cast<void*>(buffer->address()), data, layout.size_bytes);
    return std::make_shared<Array>("gpu", layout, std::move(buffer));
  }

  uint64_t uploaded = 0, downloaded = 0, allocations = 0;
};

}  // namespace warpd::runtime::testing
