// warpd runtime tests: a view of an array, made as CreateView makes one
// (MakeViewLayout's checks, the base's buffer shared). Test-only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"

namespace warpd::runtime::testing {

// `base`'s bytes from `offset` as `shape` with byte `strides`, on base's
// device; a test failure (and a view of the base's layout) when the view
// is refused.
inline std::shared_ptr<const Array> ViewOf(const std::shared_ptr<const Array>& base, uint64_t offset,
                                           std::vector<int64_t> shape, std::vector<int64_t> strides) {
  ViewRequest request;
  request.offset_bytes = offset;
  request.shape = shape;
  request.strides = strides;
  auto v = MakeViewLayout(*base, request, uint64_t{1} << 30);
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return base;
  return std::make_shared<Array>(base->device(), v->layout, base->buffer(), v->byte_offset);
}

}  // namespace warpd::runtime::testing
