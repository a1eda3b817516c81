// Random states advanced in place.
//
// The random builtins of warpd/native/rand.h (randi, randu, randf, randn,
// sample_*, poisson, sample_cdf) take their `state` by reference: called on a
// variable they advance it, so successive calls draw successive numbers (on
// any other argument they advance a copy). Passes that rewrite operands must
// keep such an argument the variable itself, and count the call as a write
// of it.
#pragma once

#include <cstddef>

#include "compiler/builtins/builtins.h"

namespace warpd::builtins {

// Whether argument `param` of a call of `o` is a random state the call
// advances in place.
bool AdvancesState(const Overload& o, size_t param);

}  // namespace warpd::builtins
