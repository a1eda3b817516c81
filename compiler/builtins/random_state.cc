#include "compiler/builtins/random_state.h"

namespace warpd::builtins {

bool AdvancesState(const Overload& o, size_t param) {
  // Every builtin of rand.h whose first parameter is a state takes it by
  // reference (rand_init takes a seed).
  return param == 0 && o.header == "warpd/native/rand.h" && !o.sig.params.empty() &&
         o.sig.params[0].name == "state";
}

}  // namespace warpd::builtins
