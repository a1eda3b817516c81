// warpd compiler: wp.printf format strings, parsed and checked against the
// argument types.
//
// A format string is client text. It is parsed once, at compile time, into
// literal text and conversions (abi::PrintSegment); the server later formats
// each value by its parsed conversion (runtime/exec/kernel_output.h), so the
// client's text never reaches a C printf. Accepted, per conversion:
//
//   %[flags][width][.precision][length]conv
//   flags: any of - + space # 0; width, precision: decimal, at most
//   abi::kMaxPrintfWidth ('*' is not supported)
//   d i u o x X c   integer or bool values; length hh h l ll j z t
//   f F e E g G a A floating-point values (float16 is widened); length l
//   s               a string constant (applied here, at compile time)
//   %%              a literal '%'
//
// Anything else (%n, %p, %ls, %Lf, '*', a value of the wrong kind, too few or
// too many arguments) is INVALID_ARGUMENT with a message saying what is wrong.
// Integer values keep all their bits unless a length modifier narrows them
// (%d of an int64 prints the int64), unlike C.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/abi/print_table.h"
#include "common/types/type.h"

namespace warpd::builtins {

// One argument after the format: a string constant (`string` non-null) or a
// value of `type`.
struct PrintfArg {
  types::TypeRef type = nullptr;
  const std::string* string = nullptr;
};

// The segments of printf(format, args...): literal text and one value
// segment per non-string argument, in order (offsets left 0). Adjacent text
// is merged.
absl::StatusOr<std::vector<abi::PrintSegment>> PrintfSegments(std::string_view format,
                                                              std::span<const PrintfArg> args);

}  // namespace warpd::builtins
