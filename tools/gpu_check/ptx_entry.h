// tools/gpu_check: the parameter list of a kernel entry in PTX text.
//
// NVRTC declares each kernel parameter as `.param .u64 name` (a pointer or
// 64-bit scalar) or `.param .align A .b8 name[N]` (a struct by value). The
// generator checks that the CUDA entry takes what the manifest says: the
// context pointer, then the argument block by value (N bytes) or its address.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warpd::gpu_check {

// Bytes of each parameter of `.entry <entry>(...)`, in order.
// Errors: NOT_FOUND when the PTX has no such entry; INVALID_ARGUMENT when a
// parameter declaration is not one of the forms above.
absl::StatusOr<std::vector<uint64_t>> PtxEntryParamBytes(std::string_view ptx, std::string_view entry);

}  // namespace warpd::gpu_check
