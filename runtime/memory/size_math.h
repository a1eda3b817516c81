// warpd runtime: overflow-checked size arithmetic for limits checked before
// allocation. Every product or sum of user-supplied sizes goes through these.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>

namespace warpd::runtime {

// a * b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a + b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Rounds `value` up to a multiple of `align` (a power of two), or nullopt on
// overflow.
inline std::optional<uint64_t> CheckedAlignUp(uint64_t value, uint64_t align) {
  auto sum = CheckedAdd(value, align - 1);
  if (!sum) return std::nullopt;
  return *sum & ~(align - 1);
}

}  // namespace warpd::runtime
