// warpd compiler: user errors and their kind.
//
// A user error (a mistake in the client's kernel code) is INVALID_ARGUMENT
// whose message reads "file:line:col: error: <text> (in kernel 'k')". It
// also carries its parts as absl::Status payloads: its category (which of
// Warp's exception classes a client raises: WarpCodegenTypeError for kType,
// ...), its location ("file:line:col") and its bare text (Warp's wording
// where Warp has one, so a client can show exactly that). The category is
// decided where the error is made; sema keeps the parts in Module::failures
// and the server sends them beside the message (runtime.proto's
// FailedFunction). An error made without parts reads as kGeneral with no
// location and its whole message as text.
//
//   return UserError(ErrorCategory::kType, "cannot add int32 and float32");
//   ...
//   UserErrorParts p = PartsOf(status);  // p.category == kType
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace warpd::ir {

// The numbering is the wire's (warpd.v1.ErrorCategory).
enum class ErrorCategory : uint8_t {
  kGeneral = 0,    // WarpCodegenError
  kType = 1,       // WarpCodegenTypeError: a value of the wrong type
  kValue = 2,      // WarpCodegenValueError: a right type with a wrong value
  kAttribute = 3,  // WarpCodegenAttributeError: no such attribute or function
  kKey = 4,        // WarpCodegenKeyError: an undefined name
  kIndex = 5,      // WarpCodegenIndexError: an index out of range
};

struct UserErrorParts {
  ErrorCategory category = ErrorCategory::kGeneral;
  std::string location;  // "file:line:col"; empty when not known
  std::string text;      // the error without location and context
};

// A user error whose location is not known yet (a builtin's typing hook:
// sema adds the call's location, keeping the category): message == text.
absl::Status UserError(ErrorCategory category, std::string_view text);

// A user error with every part; `message` is what it prints as a whole.
absl::Status UserError(const UserErrorParts& parts, std::string_view message);

// The parts of `status` (see the file comment for errors without them).
UserErrorParts PartsOf(const absl::Status& status);

}  // namespace warpd::ir
