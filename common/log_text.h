// warpd: text from a client (or any other untrusted source), made fit for
// one log line.
//
//   spdlog::info("session opened for '{}'", LogText(request.client_name()));
//   spdlog::warn("{}: {}", rpc, LogStatus(status));
//
// LogText escapes the way absl::CHexEscape does: \n \r \t \" \' \\ as
// two-character escapes and every other byte outside printable ASCII
// (control bytes, DEL, every byte of a multi-byte UTF-8 character, and a
// hex digit right after such an escape) as \xNN.
// So a client cannot forge log lines, and the result is printable ASCII
// (valid UTF-8) whatever the input. It keeps at most `max` bytes of that
// escaped text, never splitting an escape, and when it had to cut appends
// "...(+N bytes)", N being the number of input bytes left out. The result is
// at most max + kLogTextMarkerMax bytes for any input, and the work is
// proportional to the result, not to the input (a 4 MiB name costs what a
// 200-byte one does).
//
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace warpd {

// A few hundred bytes: enough to recognise a name or a path.
inline constexpr size_t kLogTextMax = 200;
// Error messages carry more context (a compile diagnostic's first lines).
inline constexpr size_t kLogStatusMax = 500;
// The longest marker: "...(+18446744073709551615 bytes)".
inline constexpr size_t kLogTextMarkerMax = 32;

// absl::string_view: takes std::string, const char* and Status::message().
std::string LogText(absl::string_view text, size_t max = kLogTextMax);

// "INVALID_ARGUMENT: " followed by LogText(status.message(), max); "OK" for
// an OK status. Payloads are not shown.
std::string LogStatus(const absl::Status& status, size_t max = kLogStatusMax);

}  // namespace warpd
