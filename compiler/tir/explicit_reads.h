// warpd compiler: a TIR pass for the adjoint emitter: every read of a
// mutable variable (a parameter, a user local or a slot) used as an operand
// becomes an explicit Load into a fresh temporary just before the
// instruction that uses it.
//
// Lowering lets an instruction read a local directly (`x * y` reads `x`
// and `y` where they stand). A reverse sweep runs after the whole forward
// replay, when a local may hold a later value, so it must see each value as
// it was when used: after this pass every operand is a temporary (defined
// once per execution of its block) or a constant, and the only reads and
// writes of mutable variables are Load and Store, whose adjoints are the
// accumulate-and-reset rules of reverse mode. Element references (defined
// once, by ElementAddr) are left as they are. Places keep their roots; their
// dynamic indices are read explicitly too. The result means what the input
// means. Thread-compatible (mutates `f`).
#pragma once

#include "compiler/tir/tir.h"

namespace warpd::tir {

void MakeReadsExplicit(Function& f);

}  // namespace warpd::tir
