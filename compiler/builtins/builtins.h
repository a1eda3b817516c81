// warpd compiler: THE builtin table.
//
// Every name a kernel may call and every operator lives here and only here:
// its overloads as type patterns (signature.h), its C++ spelling in
// runtime/native, the native header that defines it, differentiability, the
// targets that support it, and how lowering realizes it. Sema resolves calls
// against it and records the resolved overload and spelling on the call;
// codegen emits exactly that spelling; docs/builtins.md and the coverage tests
// are generated from it.
//
// Builtins whose typing no pattern can express (constructors with keyword
// dtypes, atomics over arrays of any ndim, print) carry a typing hook: a
// function of the table that types the call and spells it. There is no
// per-name switch anywhere else.
//
// Spelling: `cpp` is either a callee ("wp::dot": emitted as wp::dot(a, b)) or
// a template with `$0` .. `$9` or `${12}` (arguments), `$*` (all arguments),
// `$L` (the call's source line: builtins that record faults),
// `$R` (the result type), `$T`/`$S` (bound dtypes), and the integer
// variables `$n`, `$m`, `$r`, `$c`, `$k` (lower case).
// Thread-safe: the table is immutable after first use.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "compiler/builtins/signature.h"
#include "compiler/ir/ir.h"

namespace warpd::builtins {

// How lowering realizes a resolved call.
enum class Form : uint8_t {
  kCall,      // an expression spelled by `cpp` (with arguments)
  kTid,       // the thread index (unpacked into 1-4 coordinates)
  kRange,     // range(...): only as a for loop's iterator
  kAtomic,    // atomic_*(arr, i..., value): the element's address, then `cpp`
  kPrint,     // print(value): formatted by the value's type
  kPrintf,    // printf(fmt, args...)
  kLen,       // len(x): a constant for values, the extent for arrays
  kLocalArray,  // zeros(shape, dtype): a zeroed array in the thread's own storage
  kClient,    // evaluated by the client (wp.static): never reaches the server
};

enum Target : uint8_t { kCpu = 1, kCuda = 2, kAllTargets = 3 };

struct Overload;

// The result of a typing hook.
struct HookResult {
  types::TypeRef result = nullptr;
  std::string cpp;  // the final spelling
  // When set, the call resolves to this regular overload (its output
  // parameters and adjoint) instead of the hook's entry; it lives as long
  // as the table.
  const Overload* overload = nullptr;
};

// Types an irregular call. `call`'s operands are typed (a TypeValue operand,
// e.g. dtype=wp.float64, has type void; read its type_value). Returns
// INVALID_ARGUMENT with a message (sema adds file:line) when the call does not
// fit.
using TypeHook = absl::StatusOr<HookResult> (*)(const Overload& o, ir::Expr& call, types::TypeTable& table);

struct Overload {
  std::string_view name;   // Warp's builtin name
  std::string_view group;  // Warp's documentation group ("Vector Math")
  std::string params_text, result_text, constraints_text;  // as written in the table
  Signature sig;
  std::string cpp;               // spelling (see above)
  std::string_view header;       // native header ("warpd/native/mat.h"); empty: builtin.h
  // Warp 1.19's decision for this overload (each table entry states it; see
  // table_builder.h and differentiability_test.cc).
  bool differentiable = false;
  // The adjoint's callee when the spelling is not a plain `wp::f` (whose
  // adjoint is `wp::adj_f`; builtins/adjoint.h); empty otherwise.
  std::string_view adjoint;
  // The named adjoint takes the forward result after the forward arguments
  // (AdjointSpelling::takes_result).
  bool adjoint_takes_result = false;
  // A result that holds arrays (mesh_get's Mesh) whose gradients are not
  // its arguments': the spelling ($0.. the arguments, as `cpp`) of the value
  // holding those gradient arrays, its adjoint in the replay (as an array
  // parameter's adjoint is its gradient array); empty otherwise.
  std::string_view grad_arrays;
  uint8_t targets = kAllTargets;
  Form form = Form::kCall;
  TypeHook hook = nullptr;       // irregular typing; null: pattern matching
  bool variadic = false;         // hooks only: any number of positional args
  // Warp's `sametypes` constraint with its own error: when no overload fits
  // but each argument alone fits this overload's parameter (its variables
  // bound per argument), the call fails with this text (expect_eq(vec3f,
  // vec2f): "Can't test equality for objects with different types").
  std::string_view same_types_error;
};

// All overloads, grouped by name in table order.
std::span<const Overload> Table();

// Overloads named `name` (empty when unknown). Also accepts "wp.name".
std::vector<const Overload*> Lookup(std::string_view name);

// Names of the table, sorted; and the closest ones to `name` for "did you
// mean" (edit distance <= 2, at most 3).
std::vector<std::string_view> Names();
std::vector<std::string_view> Suggest(std::string_view name);

// A successful resolution of a regular overload.
struct Resolution {
  const Overload* overload = nullptr;
  types::TypeRef result = nullptr;  // void type for no result
  std::string cpp;
  // The types of the trailing parameters the call left out (their defaults,
  // Param::default_value, are passed in their place), in order.
  std::vector<types::TypeRef> defaults;
};

// Resolves a regular (non-hook) call; nullopt when no overload fits.
std::optional<Resolution> Resolve(std::span<const Overload* const> overloads, std::span<const types::TypeRef> args,
                                  types::TypeTable& table);

// The same_types_error of the first overload whose parameters each take
// their argument alone (see Overload::same_types_error); empty when none.
std::string_view SameTypesError(std::span<const Overload* const> overloads, std::span<const types::TypeRef> args);

// The one substitution of spelling templates, in two phases. Sema resolves
// the type placeholders ($T $S $V $W $R $n $m $r $c $k) from the overload's
// bindings and result (`bindings` may be null for hooks: then only $R);
// codegen fills the argument placeholders ($0-$9, $*) with the argument
// texts. A template without '$' is a callee: given arguments it becomes
// callee(args...). Each phase leaves the other's placeholders alone.
struct SpellInput {
  const Bindings* bindings = nullptr;
  types::TypeRef result = nullptr;
  const std::vector<std::string>* args = nullptr;  // null: the type phase
  int line = 0;  // $L, in the argument phase
};
std::string Spell(std::string_view tmpl, const SpellInput& in);

// The native callee of atomic `name` ("atomic_add", ...) on an array element
// of type `elem`: wp::atomic_add for scalars, the component-wise
// wp::atomic_add_n<S, N> for vectors, matrices, quaternions and transforms.
std::string AtomicCallee(std::string_view name, types::TypeRef elem);
// Whether atomic `name` works on array elements of type `elem` (Warp 1.19's
// rules: int32/uint32/int64/uint64/float32/float64 and their vectors,
// matrices and quaternions; float16 for add/sub only; bfloat16 for
// add/sub/min/max; bitwise ops on integers; exch/cas on scalars; add/sub
// only on transforms; no quaternion min/max).
bool AtomicSupports(std::string_view name, types::TypeRef elem);
// The scalar-type part of those rules, and Warp's spelling of the scalar
// types atomic `name` takes ("[u]int32, [u]int64, float16, bfloat16, float32,
// or float64"), for messages.
bool AtomicScalarSupported(std::string_view name, types::ScalarKind s);
std::string_view AtomicScalarsText(std::string_view name);

// Local arrays (wp.zeros(shape, dtype) in kernels): their storage is part of
// a thread's stack frame, so a module may hold at most this many bytes of
// them in all (no recursion: a chain of calls holds each function once).
constexpr uint64_t kMaxLocalArrayBytes = 64 << 10;
// The shape of a zeros() call that sema accepted (its `shape` argument: an
// int constant or a tuple of 1-4 of them).
std::vector<int> LocalArrayShape(const ir::Expr& call);

// "dot(a: vec(N, T), b: vec(N, T)) -> T  [T: Scalar]" for docs and messages.
std::string SignatureText(const Overload& o);

// Builtin names of operators.
std::string_view BinaryOpBuiltin(ir::BinaryOp op);    // kAdd -> "add", kMatMul -> "mul"
std::string_view UnaryOpBuiltin(ir::UnaryOp op);      // kNeg -> "neg", kNot -> "unot"
std::string_view CompareOpBuiltin(ir::CompareOp op);  // kLt -> "lt"

// Gives an untyped literal (possibly negated) the scalar type `to` (an int
// literal may become a float, not the reverse); false when it cannot.
bool CoerceLiteral(ir::Expr& e, types::ScalarKind to);
bool IsLiteral(const ir::Expr& e);

}  // namespace warpd::builtins
