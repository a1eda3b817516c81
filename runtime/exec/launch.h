// warpd runtime: kernel launches on the CPU device.
//
// PrepareLaunch checks a launch against the kernel's layout (compiler.h) and
// builds its argument block (docs/launch_abi.md): for each parameter at its
// layout offset, an array gets its 64-byte wp::array_t descriptor and a
// scalar or vector gets the client's bytes verbatim. Errors, all naming the
// kernel and the parameter:
//   NOT_FOUND         the module has no kernel of that name
//   INVALID_ARGUMENT  wrong argument count; bytes for an array parameter or
//                     an array for a value parameter; bytes length != param
//                     size; array dtype or ndim mismatch; array on another
//                     device; launch dims not 1..4, negative or too large;
//                     dims count != tid_ndim when tid_ndim >= 2
//
// Executing a launch runs the kernel's entry on the device (Device::RunKernel:
// on the CPU over its worker pool in chunks of thread ids). A bounds fault
// becomes OUT_OF_RANGE:
//   kernel 'inc' at /path/file.py:12: index 10 out of bounds for dimension 0
//   (shape (10,))
// A cancel becomes CANCELLED.
//
// Ownership: the command holds the CompiledModule and every argument array
// by shared_ptr until it is destroyed, so neither can go away under a
// running kernel.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "common/abi/compiled_module.h"
#include "runtime/exec/command.h"
#include "runtime/objects/array.h"
#include "runtime/objects/object_table.h"

namespace warpd::runtime {

// One launch argument as the client sent it, with handles already resolved:
// raw bytes for a scalar or vector parameter, or an array.
using LaunchArgValue = std::variant<std::string, std::shared_ptr<const Array>>;


// A launch runs `repeat` times in a row (0: once), as that many identical
// launches would, stopping at the first failing run; more than
// kMaxLaunchRepeat is INVALID_ARGUMENT.
inline constexpr uint32_t kMaxLaunchRepeat = 1 << 16;

// Bits of a gradient array's descriptor flags in an adjoint block (its
// reserved word, docs/launch_abi.md), given per argument by the caller:
// stores into it consume the gradient (its argument's own, without
// retain_grad); it is its argument's own gradient (with or without
// retain_grad: views of it taken in the kernel consume). Bit 1 (one writer
// per element) only the runtime sets.
inline constexpr int32_t kGradConsume = 1;
inline constexpr int32_t kGradOwn = 4;

// A struct argument's array members travel as the array's handle in the
// first 8 bytes of the member's 64-byte slot (0: no array); the rest of the
// slot is ignored. Each is resolved with `lookup`, checked like an array
// argument (dtype, ndim, device) and replaced by its descriptor. Without
// `lookup`, structs with array members are INVALID_ARGUMENT.
// `adj_args` (an adjoint launch, Warp's adjoint=True): the parameters'
// adjoints, checked and packed like `args` into a second block after the
// first; the kernel runs its adjoint entry (FAILED_PRECONDITION when its
// module was compiled without a backward pass). Gradient arrays may be None.
// `adj_flags[i]` (kGrad* bits, others ignored) goes into gradient array
// i's descriptor's reserved word (docs/launch_abi.md).
// `objects`: the launching session's object table on `device` (its objects
// that kernels may query by id; object_table.h), held until the command is
// destroyed; null: none. A query of an id not in it fails the launch with
// OUT_OF_RANGE (a kernel fault) naming the id and the kernel's line.
absl::StatusOr<std::unique_ptr<Command>> PrepareLaunch(
    std::shared_ptr<const abi::CompiledModule> module, const std::string& kernel,
    absl::Span<const int64_t> dims, std::vector<LaunchArgValue> args, const std::string& device,
    const ArrayLookup* lookup = nullptr, uint32_t repeat = 1, std::vector<LaunchArgValue>* adj_args = nullptr,
    const std::vector<int32_t>* adj_flags = nullptr, std::shared_ptr<const ObjectTable> objects = nullptr,
    Device::LaunchShape shape = {});

}  // namespace warpd::runtime
