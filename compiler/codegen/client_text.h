// warpd compiler: the one way client-supplied text enters generated source.
//
// Generated C++ is compiled inside the daemon, so any byte a client controls
// that reaches it as code is a way to run native code as the daemon. The rule
// (DESIGN.md section 4): identifiers reach codegen only after ir/from_proto
// checked them ([A-Za-z_][A-Za-z0-9_]*, bounded length, and always behind a
// prefix: p_, v_, wpf_, wpk_); every other client string (file names, module
// names, display names, messages, later print format strings) either stays on
// the host side (ir::Module::files, KernelLayout) or goes through
// CppStringLiteral, which makes it an inert string literal. Nothing else in
// codegen writes client text. Tests: client_text_test.cc (every byte value)
// and codegen_test.cc (generated sources hold no raw client string).
#pragma once

#include <string>
#include <string_view>

namespace warpd::codegen {

// `text` as a C/C++ narrow string literal, quotes included, that means exactly
// `text`: printable ASCII stays, except `"`, `\`, `?` (no trigraphs), `*` and
// `/`; every other byte (newlines, NUL, bytes >= 0x80) is a three-digit octal
// escape, which cannot run into a following digit. The result contains no
// newline, no backslash before a newline, and no "*/", so it is inert in a
// literal, a // comment or a /* comment */ alike.
std::string CppStringLiteral(std::string_view text);

}  // namespace warpd::codegen
