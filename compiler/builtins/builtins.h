// warpd compiler: THE builtin table.
//
// Every name a kernel may call, every operator, its overloads, result types,
// C++ spelling in runtime/native and differentiability live here and only
// here. Sema resolves calls against it, codegen emits `cpp` names from it, and
// tests and docs enumerate it.
//
// Overloads are written with a type variable T (a scalar kind restricted by a
// class) and N (a vector length): e.g. dot(vec<N,T>, vec<N,T>) -> T for
// numeric T. Matching is exact: Warp has no implicit conversions.
// Builtins whose typing is irregular (tid, range, constructors, conversions,
// atomics) are marked with a Special kind and typed by sema.
// Thread-safe: the table is immutable after first use.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "compiler/ir/type.h"

namespace warpd::builtins {

// Which scalar kinds T may bind to.
enum class TClass : uint8_t {
  kNumeric,  // integers and float32/float64 (not bool, not float16)
  kFloat,    // float32, float64
  kInt,      // integer kinds
  kAny,      // numeric and bool
};

// A parameter or result slot.
enum class Slot : uint8_t {
  kVoid,  // result only
  kT,     // scalar T
  kVec,   // vec<N, T>
  kVec3,  // vec<3, T>
  kBool,  // bool
};

enum class Special : uint8_t {
  kNone,
  kTid,         // wp.tid(): int32, or a tuple of int32 when unpacked
  kRange,       // range(stop) / range(start, stop[, step]) in for loops
  kConvert,     // float32(x), int32(x), ...: scalar conversions
  kVecCtor,     // vec3(), vec3(s), vec3(x, y, z), vec3(v)
  kAtomicAdd,   // atomic_add(array, i..., value) -> old value
};

struct Overload {
  std::string_view name;
  std::vector<Slot> params;
  Slot result = Slot::kVoid;
  TClass tclass = TClass::kNumeric;
  std::string_view cpp;  // function in runtime/native, e.g. "wp::dot"
  bool differentiable = false;
  Special special = Special::kNone;
};

// All overloads, grouped by name in table order.
std::span<const Overload> Table();

// Overloads named `name` (empty when unknown).
std::vector<const Overload*> Lookup(std::string_view name);

// True when `s` may bind T of class `c`.
bool InClass(ir::ScalarKind s, TClass c);

// The result of matching an overload against argument types.
struct Match {
  ir::Type result;
};

// Matches a regular (non-special) overload; nullopt when the arguments don't fit.
std::optional<Match> MatchOverload(const Overload& o, std::span<const ir::Type> args);

// "dot(vec<N,T>, vec<N,T>) -> T" for messages.
std::string Signature(const Overload& o);

// Builtin names of operators.
std::string_view BinaryOpBuiltin(int binary_op);   // ir::BinaryOp -> "add"
std::string_view CompareOpBuiltin(int compare_op); // ir::CompareOp -> "lt"

// Parses a vector constructor name ("vec3", "vec3d", "vec4h") into its type.
std::optional<ir::Type> VectorTypeFromName(std::string_view name);

}  // namespace warpd::builtins
