// warpd runtime: an array's elements as one row-major byte sequence.
//
// A view (array_view.h) may be strided: its elements need not be back to
// back in memory. Transfers, copies and fills address an array by its
// "logical bytes": its elements in row-major order, each element's bytes in
// turn, size_bytes() in all. For a contiguous array they are exactly the
// size_bytes() bytes at data(); for a view they are gathered from (or
// scattered to) the memory runs it covers, so a client downloads a view as
// the contiguous array NumPy would make of it.
//
//   ReadArrayBytes(*view, 0, view->size_bytes(), out);  // a packed copy
//
// Callers check ranges: [offset, offset + n) must lie within size_bytes(),
// and the array's placement was checked when it was made (MakeViewLayout),
// so every address touched is inside its buffer. Elements that overlap (a
// zero stride) are read and written in row-major order, each write
// overwriting the last. Copies and fills of strided arrays stop early, and
// return false, once `*cancel` is set (checked every few thousand runs: a
// broadcast view of single-element runs can take seconds); contiguous ones
// are one memory operation. Thread-compatible: the caller orders these with
// the array's other users (the device stream); `cancel` may be set from any
// thread. These are the CPU device's implementation of Device's data
// movement (runtime/device/device.h): above runtime/device, callers go
// through the Device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/objects/array.h"

namespace warpd::runtime {

// Copies logical bytes [offset, offset + n) of `array` to `out`.
void ReadArrayBytes(const Array& array, uint64_t offset, uint64_t n, std::byte* out);

// Writes `n` bytes from `in` to logical bytes [offset, offset + n) of `array`.
void WriteArrayBytes(const Array& array, uint64_t offset, const std::byte* in, uint64_t n);

// Logical bytes [dst_offset, dst_offset + n) of dst <- [src_offset,
// src_offset + n) of src. Two contiguous arrays are one memmove (so they may
// overlap); otherwise, as in Warp, overlapping memory gets an unspecified mix.
bool CopyArrayBytes(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                    const std::atomic<bool>* cancel = nullptr);

// dst's elements <- src's, in row-major order (CopyArrayBytes of all of
// them). The arrays must have the same size_bytes().
bool CopyArrayElements(const Array& dst, const Array& src, const std::atomic<bool>* cancel = nullptr);

// Logical bytes [offset, offset + n) of `array` <- copies of `pattern` back
// to back: byte offset + i gets pattern[i % pattern.size()]. An empty pattern
// writes nothing.
bool FillArrayBytes(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                    const std::atomic<bool>* cancel = nullptr);

// Every element of `array` <- `element` (exactly one element's bytes).
bool FillArrayElements(const Array& array, std::string_view element, const std::atomic<bool>* cancel = nullptr);

}  // namespace warpd::runtime
