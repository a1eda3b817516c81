// warpd: what a module's print(), wp.printf() and wp.expect_near() calls
// print, shared by the compiler (which builds it) and the runtime (which
// formats a launch's output records with it).
//
// Kernels never format text. Each print call site of a module is a PrintSite
// numbered in the module; at run time the generated code appends one record
// per call to the launch's output buffer (runtime/native/warpd/native/print.h,
// docs/launch_abi.md): the site number, the thread id and the raw bytes of the
// call's values. The server turns records into text with this table
// (runtime/exec/kernel_output.h). So no client text (format strings, string
// constants) ever reaches generated code or a C printf: literal text stays
// here, and every conversion was parsed and checked against its value's type
// when the module was compiled.
//
//   site "x=%d y=%.2f\n"(int32, float32):
//     text "x=", value int32 at payload offset 0 ('d'), text " y=",
//     value float32 at offset 4 ('f', precision 2), text "\n"
//
// Immutable once built; shared by the module's launches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/types/type.h"

namespace warpd::abi {

// How one value is turned into text.
struct PrintConversion {
  // 0: the way Warp's print() shows a value of the type (see
  // runtime/exec/kernel_output.h); otherwise a printf conversion, one of
  // d i u o x X c f F e E g G a A.
  char conv = 0;
  // printf flags, a subset of "-+ #0" in that order.
  std::string flags;
  int32_t width = -1;      // -1: none; else 0..kMaxPrintfWidth
  int32_t precision = -1;  // -1: none; else 0..kMaxPrintfWidth
  // Integer conversions: the width the value is converted to before
  // printing, as C's length modifiers do (hh: 8, h: 16, l/ll/j/z/t: 64).
  // 0: the argument's own width, at least 32 (C's promotion of small
  // integers to int; a 64-bit argument keeps all its bits).
  int32_t int_bits = 0;
  // conv 0 in a backward pass's record of a print() call: the value (an
  // adjoint) as Warp's adj_print() shows it after its "adj:" (each component
  // after a space; matrix rows on lines of their own, indented by four).
  bool adjoint = false;
};

constexpr int32_t kMaxPrintfWidth = 1024;

// Literal text, or one value read from the record's payload.
struct PrintSegment {
  std::string text;               // when type is null
  types::TypeRef type = nullptr;  // the value's type
  uint32_t offset = 0;            // byte offset of the value in the payload
  PrintConversion conversion;
};

struct PrintSite {
  std::vector<PrintSegment> segments;
  uint32_t payload = 0;  // bytes of values in a record of this site
};

// How many payload bytes a value of type `t` takes in a record: its size;
// for an array, its extents (ndim int32s); nothing for a struct (printed as
// a placeholder, as Warp does).
inline uint32_t PrintValueSize(types::TypeRef t) {
  if (t->is_array()) return static_cast<uint32_t>(4 * t->ndim());
  if (t->is_struct()) return 0;
  return static_cast<uint32_t>(t->size());
}

// Largest payload of one print call; bigger calls are rejected by sema.
constexpr uint32_t kMaxPrintPayload = 16 << 10;

struct PrintTable {
  std::vector<PrintSite> sites;     // indexed by the site number in records
  std::vector<std::string> kernels;  // IR names of the kernels that may print
};

}  // namespace warpd::abi
