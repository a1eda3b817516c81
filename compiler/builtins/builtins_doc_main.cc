// Prints the builtin table as Markdown: build/bin/warpd-builtins > docs/builtins.md
#include <cstdio>

#include "compiler/builtins/builtins_doc.h"

int main() {
  std::fputs(warpd::builtins::BuiltinsMarkdown().c_str(), stdout);
  return 0;
}
