// warpd codegen: which array accesses of a kernel index a 1-D array by the
// thread id itself, so a whole block of thread ids can be checked at once.
//
// A variable "holds the thread id" when every value it can take is either
// the thread id or 0: the result of wp.tid() in a 1-D view (a Tid), a plain
// copy of such a variable, or a local or slot (zero-initialized) whose every
// write is a plain store of such a variable or of the constant 0. An access `a[i]` qualifies when
// `i` holds the thread id and `a` is a 1-D array parameter (not an
// indexedarray) the kernel never reassigns. For a block of thread ids [b, e) with 0 <= b and e <= the
// array's length, every such access is in bounds whatever the path through
// the kernel; codegen then emits it without a per-access check (and, for
// contiguous arrays, as plain pointer arithmetic the loop vectorizer sees
// through), and keeps the precise check everywhere else.
//
//   ThreadIndexed t = FindThreadIndexed(kernel);
//   if (t.accesses.contains(&element_addr)) ...  // unchecked in fast blocks
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/tir/tir.h"

namespace warpd::codegen {

struct ThreadIndexed {
  std::set<const tir::ElementAddr*> accesses;
  // The kernel parameters (names, in parameter order) those accesses index:
  // a block is fast when it ends within all of their lengths.
  std::vector<std::string> arrays;
};

ThreadIndexed FindThreadIndexed(const tir::Function& kernel);

// The array parameters a kernel accesses only at the thread's own element,
// for the adjoint's accumulations (adjoint.cc): each element of such an
// array's gradient has one writer, the thread whose index it is, unless the
// launch's gradient arrays share memory (the runtime checks that and says so
// in the descriptor, adj_codegen.h: adj_exclusive).
//
// Stricter than FindThreadIndexed: every access must be `a[i]` with `i`
// exactly wp.tid() (never 0 instead: a local qualifies only when all its
// writes are top-level copies of the thread id, none read before the first),
// or `a[i, j, ...]` with all of the thread's coordinates in order; and the
// array may otherwise only have its shape read: passed to a function or a
// builtin, viewed, or copied to a local, it does not qualify.
struct ThreadExclusive {
  std::set<tir::VarId> params;  // array parameters (their VarIds)
  std::set<tir::VarId> refs;    // element references into them
};

ThreadExclusive FindThreadExclusive(const tir::Function& kernel);

}  // namespace warpd::codegen
