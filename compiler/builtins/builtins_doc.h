// warpd compiler: the builtin table rendered as Markdown (docs/builtins.md).
// A test keeps docs/builtins.md equal to this; regenerate it with
//   build/bin/warpd-builtins > docs/builtins.md
#pragma once

#include <string>

namespace warpd::builtins {

std::string BuiltinsMarkdown();

}  // namespace warpd::builtins
