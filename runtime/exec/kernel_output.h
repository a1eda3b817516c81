// warpd runtime: turns a launch's print records into text.
//
// A kernel that may print gets an output buffer of kOutputRecordBytes for
// each launch (launch_ctx::output; records as in
// runtime/native/warpd/native/print.h). After the launch, FormatKernelOutput
// reads the records written, orders them by thread id (a thread's records
// keep their order), and formats each with its site in the module's print
// table (common/abi/print_table.h):
//
//   print(x)        values as Warp prints them: scalars with %g / integers /
//                   True and False, vectors "1 2 3 ", matrices one row per
//                   line, quaternions "0 0 0 1", transforms "(1 2 3) (0 0 0 1)",
//                   arrays "array(shape=(4,), dtype=float32)"
//   printf(...)     each value by its checked conversion; the snprintf format
//                   is rebuilt here from the parsed conversion, never taken
//                   from the client, and gets an argument of exactly the type
//                   it names
//
// Bounds: at most kMaxLaunchOutput bytes of text per launch. Records that
// did not fit in the buffer, or whose text would pass the limit, are dropped,
// and one note at the end says how many:
//   [warpd: kernel 'k' printed too much in one launch: 12 print calls dropped
//   (limit: 65536 bytes of text, 262144 bytes of records)]
// The parser trusts nothing in the buffer: it reads only [0, committed),
// checks every header against the table, and stops (with a note) at the
// first record that does not match.
// Thread-compatible (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/abi/print_table.h"

namespace warpd::runtime {

constexpr uint64_t kOutputRecordBytes = 256 << 10;
constexpr size_t kMaxLaunchOutput = 64 << 10;

// The text of a launch's records. `data` holds `committed` bytes of records;
// `dropped` counts records the kernel could not write; `kernel` names the
// kernel in notes.
std::string FormatKernelOutput(const abi::PrintTable& table, const uint8_t* data, uint64_t committed,
                               uint64_t dropped, std::string_view kernel);

// One value (`bytes` holds abi::PrintValueSize(type) bytes) as `conversion`
// formats it. For tests.
std::string FormatPrintValue(types::TypeRef type, const uint8_t* bytes, const abi::PrintConversion& conversion);

}  // namespace warpd::runtime
