// Test-only: kernels that call every overload of the builtin table.
//
// "A program the front end accepts never fails in clang or NVRTC" (issue 24),
// checked by construction: BuildCatalog lists, for every regular
// (pattern-typed) overload of builtins::Table(), its concrete bindings up to
// a small bound (each dtype variable over its family; N in 2..5; M in 2..3;
// R, C, K in 2..4; V over 24 value types, W over 3 when V varies too;
// arrays 1-D). Each binding becomes one or more calls (CallCase), each
// argument in a rotating form (ArgForm), the call spelled by name, by
// keywords or as an operator, made in the kernel or in a plain or generic
// @wp.func (CallStyle in the .cc). Builtins typed by a hook (constructors,
// atomics, print, ...) have hand-written cases (overload_hook_cases.cc) or a
// stated reason why not (HookSkips()); constants at every scalar type's
// limits are cases too.
//
// BuildModule packs calls into one warpd.v1 module and a manifest: what each
// input array and member of the struct parameter holds, which output slot
// each result lands in and what it must satisfy. overloads_test.cc compiles
// the modules for the CPU and with NVRTC + ptxas, runs them on the CPU and
// checks the manifest.
//
//   Catalog c = BuildCatalog();
//   std::vector<const CallCase*> calls = ...;   // a slice of c.calls
//   GeneratedModule m = BuildModule(calls, "overloads_7");
//   // compile m.proto; launch each of m.kernels with in_<i>, s, out_<i>
//   // filled from m.inputs / m.members / m.outputs; check m.expectations
//
// Argument values are a function of (type, Value) only, never of the form,
// so every call of one binding computes the same thing (agreement groups).
// Thread-compatible: build catalogs and modules on one thread at a time (the
// generator's struct types live in one process-wide table, ModuleBuilder::Types()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/types/type.h"
#include "compiler/builtins/builtins.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::testing {

// How an argument reaches a call.
enum class ArgForm : uint8_t {
  // Values.
  kLiteral,       // a constructed constant: float16(0.5), vec3h(...), a typed constant
  kLocal,         // a local variable holding the constant
  kArrayElement,  // in_<n>[k]: an element of an input array
  kStructMember,  // s.v<k>: a member of the kernel's struct parameter
  kFuncResult,    // id_<n>(constant): the result of a @wp.func
  kComponent,     // a component: vec2h(x, x)[1] or .y for scalars, matrix_from_rows(v, v)[1] for vectors
  // Arrays.
  kArrayParam,   // in_<n>: the kernel's array parameter itself
  kArrayLocal,   // a local alias of it
  kArrayMember,  // s.a<n>: an array member of the struct parameter
  // Output arguments.
  kOutLocal,    // a local variable (then stored)
  kOutElement,  // out_<n>[slot] directly
  kOutMember,   // a member of a local struct (then stored)
};
const char* ArgFormName(ArgForm f);
constexpr int kValueForms = 6;
constexpr int kArrayForms = 3;
constexpr int kOutForms = 3;

// The value an argument carries. Components follow from the type and `seed`
// (ValueComponents); `all` sets every component (domain overrides).
struct Value {
  Value(int seed_in = 0, std::optional<double> all_in = std::nullopt) : seed(seed_in), all(all_in) {}
  int seed;
  std::optional<double> all;
};

// The components of a value of a dtype-carrying type in storage order
// (matrices row-major, quaternions x y z w, transforms p then q); bools as
// 0/1. Floats are multiples of 1/64 (exact in float16); matrices are
// symmetric and diagonally dominant without repeated eigenvalues (float
// ones), quaternions shorter than 1.
std::vector<double> ValueComponents(types::TypeRef t, const Value& v);
// Writes the value's bytes in the launch ABI's encoding (docs/launch_abi.md);
// structs at their members' offsets (members get seeds seed + member index).
// `out` has t->size() bytes. Array members are left alone.
void EncodeValue(types::TypeRef t, const Value& v, uint8_t* out);

// Writes a 1-D contiguous wp::array_t descriptor (docs/launch_abi.md) of `n`
// elements of `elem_size` bytes at `data` to `dst` (64 bytes).
void WriteArrayDescriptor(uint8_t* dst, void* data, int64_t n, uint64_t elem_size);

// IEEE half -> float (for reading float16 results).
float HalfToFloat(uint16_t bits);

// Proto pieces ir_builder.h lacks.
v1::Expr BoolConst(bool b);
v1::Expr StrConst(const std::string& s);
v1::Expr TypeValue(types::TypeRef t);  // a type used as a value (dtype=wp.float16)
v1::Expr WithKeyword(v1::Expr call, const std::string& name, v1::Expr value);

class ModuleBuilder;

// One call (or a few statements) the generator emits.
struct CallCase {
  std::string what;          // the overload's signature and binding, or the hook case
  std::string kernel_group;  // calls of one group share kernels
  std::function<void(ModuleBuilder&)> emit;
  // Calls with the same group >= 0 compute the same values; their results
  // (in emission order, per call) must agree.
  int agreement_group = -1;
  // Gets a kernel of its own: builtins whose inlined bodies are large
  // (curlnoise, the decompositions, ...) make NVRTC and ptxas time grow
  // faster than linearly with the number of calls in one kernel.
  bool own_kernel = false;
  // Picks the spelling of its literals (so a call is spelled the same in
  // any module: bisection reproduces it). The catalog sets it.
  int seed = 0;
};

// What an output slot must satisfy after the launch.
struct Expectation {
  int output = 0;  // out_<output>
  int slot = 0;
  std::string what;    // the call and which result
  bool finite = true;  // every float component finite (bools: 0 or 1)
  int agreement_group = -1;
  int result_index = 0;  // the n-th stored result of its call
  // A scalar with a known value (constants): compared exactly (a NaN by
  // kind, a zero by sign); integers as int64 (uint64 below 2^63).
  std::optional<double> exact_float;
  std::optional<int64_t> exact_int;
};

struct InputArray {
  types::TypeRef type = nullptr;  // element type
  std::vector<Value> values;      // one per element
};

struct StructMemberSpec {
  std::string name;
  types::TypeRef type = nullptr;
  Value value;     // value members
  int input = -1;  // array members: the input array (in_<input>) they describe
};

struct OutputArray {
  types::TypeRef type = nullptr;
  int slots = 0;
};

struct KernelInfo {
  std::string name;
  bool prints = false;             // calls print: its launch may write records
  std::vector<std::string> calls;  // CallCase::what of its calls, in order
};

struct GeneratedModule {
  v1::Module proto;
  std::vector<InputArray> inputs;         // kernel parameters in_<i>
  std::vector<StructMemberSpec> members;  // of the struct parameter `s`
  std::vector<OutputArray> outputs;       // kernel parameters out_<i>
  std::vector<Expectation> expectations;
  std::vector<KernelInfo> kernels;
  int calls = 0;
};

// Emits statements into the current kernel; CallCase::emit uses it.
class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string module_name);
  ~ModuleBuilder();

  // The generator's type table (structs; struct-free types are global).
  static types::TypeTable& Types();
  // The struct used as a V binding: {f: float32, v: vec3d, i: int8, h: vec2h}.
  static types::TypeRef ValueStruct();

  void BeginKernel(const std::string& name);
  void BeginCall(const CallCase& call);
  void MarkPrints();

  // An argument of value type `t` carrying `v` in `form` (a value form).
  v1::Expr Arg(types::TypeRef t, const Value& v, ArgForm form);
  // A constant of `t` (kLiteral), spelled in the next of its literal styles.
  v1::Expr Literal(types::TypeRef t, const Value& v);
  // An array argument (1-D array of `element`) in `form` (an array form).
  v1::Expr ArrayArg(types::TypeRef element, ArgForm form);
  // A fresh local holding `value`; returns its name.
  std::string Local(v1::Expr value);
  // A name no local of the kernel has yet.
  std::string FreshName();
  // A new @wp.func c_<n>(p0: params[0], p1: ...) with `body`; returns its
  // name.
  std::string Function(std::vector<v1::TypeRef> params, std::vector<v1::Stmt> body);
  // The place an output argument of `t` (starting as `initial`) is passed
  // as; `finish` records what lands there once the call has been emitted.
  struct OutPlace {
    v1::Expr arg;
    std::function<void()> finish;
  };
  OutPlace Out(types::TypeRef t, const Value& initial, ArgForm form, const std::string& label, bool finite);
  // Stores `value` (of type `t`) in a new output slot with an expectation.
  void Store(v1::Expr value, types::TypeRef t, const std::string& label, bool finite);
  // Store() of a scalar whose value must be exactly `f` (floats) or `i`.
  void StoreExact(v1::Expr value, types::TypeRef t, const std::string& label, std::optional<double> f,
                  std::optional<int64_t> i);
  void Emit(v1::Stmt s);
  void EmitExpr(v1::Expr e);

  // The module and its manifest; the builder is spent.
  GeneratedModule Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Everything the generator covers.
struct Catalog {
  std::vector<CallCase> calls;
  int overloads = 0;                       // regular overloads enumerated
  int bindings = 0;                        // their concrete bindings
  std::vector<std::string> hooks_covered;  // hook builtins with hand-written cases
  std::vector<std::string> shadowed;       // bindings an earlier overload of the name takes
  std::vector<std::string> skipped;        // "name: reason" (hooks, Form::kClient)
};

struct CatalogOptions {
  // Calls per binding (each in other forms); overloads with few bindings
  // get enough calls for every argument to see every form.
  int calls_per_binding = 1;
  // Exploration, not CI: vector lengths 1-5 and 8, matrix dims 1-6, and
  // dtypes float16, float64, int8, uint64 (and bool) only.
  bool wide = false;
};

Catalog BuildCatalog(const CatalogOptions& options = {});

// Whether overload `o` queries a server-side object (an object id or a query
// argument): the catalog lists it as skipped (no generated module has a live
// object); compiler_test instantiates it and its e2e tests run it.
bool QueriesObjects(const builtins::Overload& o);

// One module calling `calls` in kernels of at most `calls_per_kernel` calls
// (a kernel never mixes kernel groups). Small kernels compile fastest with
// NVRTC + ptxas (their optimizers are superlinear in a function's size).
GeneratedModule BuildModule(const std::vector<const CallCase*>& calls, const std::string& name,
                            int calls_per_kernel = 4);

// Hand-written calls of hook builtins (overload_hook_cases.cc), and the
// hook builtins deliberately left out, with the reason.
void AddHookCases(Catalog& catalog);
std::vector<std::pair<std::string, std::string>> HookSkips();

}  // namespace warpd::testing
