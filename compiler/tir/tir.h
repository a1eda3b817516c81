// warpd compiler: the typed IR (TIR), what sema's checked AST lowers to
// (lower.h) and what every emitter walks.
//
// A Function is a list of instructions over typed variables, with
// structured control flow: If, For and While hold nested blocks. Each
// instruction does one thing: read or write one place, call one resolved
// builtin (the Overload and spelling sema chose), call one user function,
// take one array element's address, check one index, write one print
// record. Evaluation order, short-circuits, chained comparisons, bounds
// checks and stop checks are explicit here, so an emitter only prints: the
// forward emitter (codegen) with its CPU and CUDA entry points walks it, and
// the adjoint emitter of the autodiff work will replay it backwards.
//
// The instruction kinds are listed once (WARPD_TIR_INSTS) and expanded into
// the kind enum, the kind names, the Visitor and the Mutator below. Nodes
// are built through Builder (builder.h), which checks their types, so
// ill-typed TIR is an internal error at the point it is built.
// Thread-compatible: one pass mutates a Function at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/abi/print_table.h"
#include "compiler/ir/ir.h"

namespace warpd::builtins {
struct Overload;
}

namespace warpd::tir {

using types::TypeRef;

// ---------------------------------------------------------------- variables

using VarId = int32_t;
constexpr VarId kNoVar = -1;

enum class VarKind : uint8_t {
  kParam,       // a parameter (kernels: copied out of the argument block)
  kLocal,       // a user variable: declared at the top, zero-initialized
  kTemp,        // defined once, by the instruction naming it as its result
  kSlot,        // a temporary declared by Declare, then stored in branches
  kElementRef,  // an array element's address (ElementAddr); places root here
};
const char* VarKindName(VarKind k);

struct Var {
  VarKind kind = VarKind::kTemp;
  TypeRef type = nullptr;
  std::string name;  // params and locals: the user's (checked) identifier
};

// A value: a variable, or a scalar constant of `type` (bool, int64 or double
// held, converted to `type` by the emitter).
struct Operand {
  VarId var = kNoVar;
  ir::ConstantValue value = int64_t{0};
  TypeRef type = nullptr;

  bool is_var() const { return var != kNoVar; }
  static Operand Of(VarId v, TypeRef t) { return Operand{v, int64_t{0}, t}; }
  static Operand Constant(ir::ConstantValue v, TypeRef t) { return Operand{kNoVar, std::move(v), t}; }
};

// A place: a root variable (a param, local, temp or slot; or an element
// reference, meaning the element it points at), then a path into it.
struct Step {
  enum class Kind : uint8_t {
    kComponent,      // vector, quaternion or spatial component `index`
    kMatrixRow,      // matrix row `index` (a vector)
    kMatrixElement,  // matrix element (`index`, `index2`)
    kTransformIndex, // transform element `index` of 7 (p then q)
    kMember,         // struct member `name`
    kField,          // transform field `name` (p or q)
    kTupleElement,   // tuple element `element`
  };
  Kind kind = Kind::kComponent;
  Operand index, index2;  // int scalars; dynamic ones were checked (CheckIndex)
  std::string name;       // kMember, kField
  TypeRef type = nullptr; // the type after this step
  int element = 0;        // kTupleElement
};
const char* StepKindName(Step::Kind k);

struct Place {
  VarId root = kNoVar;
  std::vector<Step> steps;
  TypeRef type = nullptr;  // the root's type, or the last step's
};

// --------------------------------------------------------------- instructions

// The instruction kinds, each a struct below. Fields named `dst` are the
// result (kNoVar: none).
//   Declare      var (a slot) comes into scope, zero-initialized
//   Load         dst = place (a read)
//   Store        place = value
//   Builtin      dst = overload(args), spelled `callee`; dst kNoVar for void
//   MakeTuple    dst = (elements...)
//   CallFunc     dst = function(args); then the caller stops if a fault or
//                cancel happened inside
//   Grad         dst = the gradient of a builtin or user function at args
//                (wp.grad(f)(args)): their adjoints for an adjoint of one in
//                every component of f's result; a tuple for several args
//   ElementAddr  dst (an element ref) = &array[indices], bounds-checked
//   Subview      dst = array[indices] (fewer indices than dims), checked
//   LocalArray   dst = a zeroed array of constant shape in the function's
//                own storage (wp.zeros in kernels)
//   ArrayShape   dst = (int32) array.shape[dim]
//   CheckIndex   dst = index, or index + extent when negative (Python's
//                v[-1]); outside [-extent, extent) a fault at `line`
//   Tid          dst = the thread index (1-D)
//   TidCoords    dsts = the thread's coordinates in the launch grid
//   Print        one output record of a print site
//   If           if (cond) then_body else else_body
//   For          for var in range(start, stop, step): body
//   While        while (cond_body; cond): body
//   Break, Continue, Return
// LEAF kinds hold no blocks; NESTED kinds hold blocks (visited by default).
#define WARPD_TIR_INSTS(LEAF, NESTED) \
  LEAF(Declare)                       \
  LEAF(Load)                          \
  LEAF(Store)                         \
  LEAF(Builtin)                       \
  LEAF(MakeTuple)                     \
  LEAF(CallFunc)                      \
  LEAF(Grad)                          \
  LEAF(ElementAddr)                   \
  LEAF(Subview)                       \
  LEAF(LocalArray)                    \
  LEAF(ArrayShape)                    \
  LEAF(CheckIndex)                    \
  LEAF(Tid)                           \
  LEAF(TidCoords)                     \
  LEAF(Print)                         \
  NESTED(If)                          \
  NESTED(For)                         \
  NESTED(While)                       \
  LEAF(Break)                         \
  LEAF(Continue)                      \
  LEAF(Return)
#define WARPD_TIR_IGNORE(k)

enum class InstKind : uint8_t {
#define X(k) k,
  WARPD_TIR_INSTS(X, X)
#undef X
};
const char* InstKindName(InstKind k);

struct Inst {
  explicit Inst(InstKind k) : kind(k) {}
  virtual ~Inst() = default;
  Inst(const Inst&) = delete;
  Inst& operator=(const Inst&) = delete;

  const InstKind kind;
  ir::Span span;
};

using InstPtr = std::unique_ptr<Inst>;
using Block = std::vector<InstPtr>;

// Each node knows its kind, so `Isa<Load>(i)` and `Cast<Load>(i)` need no RTTI.
template <InstKind K>
struct InstOf : Inst {
  static constexpr InstKind kKind = K;
  InstOf() : Inst(K) {}
};

struct Declare : InstOf<InstKind::Declare> {
  VarId var = kNoVar;
};

struct Load : InstOf<InstKind::Load> {
  VarId dst = kNoVar;
  Place place;
};

struct Store : InstOf<InstKind::Store> {
  Place place;
  Operand value;
};

// How a builtin receives an argument.
struct Arg {
  enum class Mode : uint8_t {
    kValue,    // `value`
    kOut,      // `place`, by reference (an output parameter)
    kAddress,  // the element reference `value.var` as a pointer (atomics)
    kType,     // a type or shape argument (dtype=, shape=): read by typing only
  };
  Mode mode = Mode::kValue;
  Operand value;
  Place place;
};

struct Builtin : InstOf<InstKind::Builtin> {
  VarId dst = kNoVar;
  const builtins::Overload* overload = nullptr;
  std::string callee;  // sema's spelling (builtins::Spell's argument phase is the emitter's)
  std::vector<Arg> args;
};

struct MakeTuple : InstOf<InstKind::MakeTuple> {
  VarId dst = kNoVar;
  std::vector<Operand> elements;
};

struct CallFunc : InstOf<InstKind::CallFunc> {
  VarId dst = kNoVar;
  int function = -1;  // index into Module::functions
  std::vector<Operand> args;
};

// Forward code only: the backward pass treats its result as a constant (no
// adjoint of its own, as in Warp 1.19). The callee is a differentiable
// builtin (`overload`, spelled `callee` forward) or user function
// `function`; `result` is the callee's result type, the type of the
// adjoint it is seeded with (builtins/adjoint.h, codegen's VisitGrad).
struct Grad : InstOf<InstKind::Grad> {
  VarId dst = kNoVar;
  const builtins::Overload* overload = nullptr;
  std::string callee;
  int function = -1;  // index into Module::functions; -1 for a builtin
  std::vector<Operand> args;
  TypeRef result = nullptr;
};

struct ElementAddr : InstOf<InstKind::ElementAddr> {
  VarId dst = kNoVar;  // a kElementRef of the element type
  Operand array;
  std::vector<Operand> indices;  // one per dimension
};

struct Subview : InstOf<InstKind::Subview> {
  VarId dst = kNoVar;
  Operand array;
  std::vector<Operand> indices;  // fewer than the array's ndim
  // Empty: every entry of `indices` is an integer index. Else one flag per
  // index position: a slice takes three operands of `indices` (start, stop,
  // step: Python's rules, a positive step), an integer one.
  std::vector<bool> slices;
};

// The storage lives as long as the function's frame (sema keeps the array
// from being returned); each execution zeroes it again.
struct LocalArray : InstOf<InstKind::LocalArray> {
  VarId dst = kNoVar;
  std::vector<int> shape;  // 1-4 positive extents
};

struct ArrayShape : InstOf<InstKind::ArrayShape> {
  VarId dst = kNoVar;
  Operand array;
  int dim = 0;
};

struct CheckIndex : InstOf<InstKind::CheckIndex> {
  VarId dst = kNoVar;  // the index to use, in [0, extent)
  Operand index;
  int extent = 0;
};

struct Tid : InstOf<InstKind::Tid> {
  VarId dst = kNoVar;
};

struct TidCoords : InstOf<InstKind::TidCoords> {
  std::vector<VarId> dsts;  // int32 variables, one per launch dimension
};

// A record of print site `site` (Module::prints) holding `values` in payload
// order, unless a guard says when it is written:
//   kExpectNear  only when the difference of `actual` and `expected` exceeds
//                `tolerance`; `values` are {tolerance, expected, actual} and
//                the difference follows them;
//   kExpectEq    only when `actual` != `expected` (wp::eq); values {expected, actual};
//   kExpectNeq   only when they are equal; values {expected, actual}.
enum class PrintGuard { kNone, kExpectNear, kExpectEq, kExpectNeq };

struct Print : InstOf<InstKind::Print> {
  uint32_t site = 0;
  std::vector<Operand> values;
  PrintGuard guard = PrintGuard::kNone;
  // print(): the site of its backward-pass line (tir/print_sites.h), whose
  // record holds the adjoints of `values` but arrays; -1: none.
  int32_t adjoint_site = -1;
};

struct If : InstOf<InstKind::If> {
  Operand cond;  // a scalar (not float16 or bfloat16): nonzero is true
  Block then_body, else_body;
};

// The counter runs in int64 (so `+= step` cannot overflow); step 0 runs no
// iterations. The loop variable (`var`, of the arguments' int type) takes
// each value before the body; every iteration checks for a stop. The bounds
// are of the variable's type or int64 (reversed ranges).
struct For : InstOf<InstKind::For> {
  VarId var = kNoVar;
  Operand start, stop, step;
  Block body;
};

// Each iteration runs cond_body, leaves when `cond` is false, checks for a
// stop, then runs body.
struct While : InstOf<InstKind::While> {
  Block cond_body;
  Operand cond;
  Block body;
};

struct Break : InstOf<InstKind::Break> {};
struct Continue : InstOf<InstKind::Continue> {};

struct Return : InstOf<InstKind::Return> {
  bool has_value = false;
  Operand value;
};

template <class T>
bool Isa(const Inst& i) {
  return i.kind == T::kKind;
}
template <class T>
T& Cast(Inst& i) {
  return static_cast<T&>(i);
}
template <class T>
const T& Cast(const Inst& i) {
  return static_cast<const T&>(i);
}

// ------------------------------------------------------------------ functions

// A generic function (a template; ir::Function::is_generic) keeps an empty
// body: emitters skip it and call its instances.
struct Function {
  const ir::Function* source = nullptr;  // name, kind, params, return type, span
  std::vector<Var> vars;                 // params first (in order), then locals, then the rest
  Block body;

  const Var& var(VarId v) const { return vars[static_cast<size_t>(v)]; }
  bool is_kernel() const { return source->kind == ir::FunctionKind::kKernel; }
};

struct Module {
  const ir::Module* source = nullptr;  // outlives this Module
  std::vector<Function> functions;     // as in source->functions
  // What the module's print sites print (client text: part of the cache
  // key, never of the generated source), and which kernels may print.
  abi::PrintTable prints;
};

// ---------------------------------------------------------- visitor, mutator

// Visits instructions by kind: Derived defines any of `void Visit<Kind>(const
// Kind&)`; the defaults visit nested blocks in order (If: then, else; While:
// cond_body, body) and do nothing else.
template <class Derived>
class Visitor {
 public:
  void VisitBlock(const Block& b) {
    for (const auto& i : b) Visit(*i);
  }
  void Visit(const Inst& i) {
    switch (i.kind) {
#define X(k)        \
  case InstKind::k: \
    return self().Visit##k(Cast<k>(i));
      WARPD_TIR_INSTS(X, X)
#undef X
    }
  }

#define X(k) \
  void Visit##k(const k&) {}
  WARPD_TIR_INSTS(X, WARPD_TIR_IGNORE)
#undef X
  void VisitIf(const If& i) {
    self().VisitBlock(i.then_body);
    self().VisitBlock(i.else_body);
  }
  void VisitFor(const For& i) { self().VisitBlock(i.body); }
  void VisitWhile(const While& i) {
    self().VisitBlock(i.cond_body);
    self().VisitBlock(i.body);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

// Rewrites blocks: Derived defines any of `void Mutate<Kind>(Kind&, Block&
// out)`, appending the replacement of the instruction to `out`; the default
// keeps it (after mutating nested blocks).
template <class Derived>
class Mutator {
 public:
  void MutateBlock(Block& b) {
    Block out;
    out.reserve(b.size());
    for (auto& i : b) Mutate(std::move(i), out);
    b = std::move(out);
  }
  void Mutate(InstPtr i, Block& out) {
    switch (i->kind) {
#define X(k)                                \
  case InstKind::k:                         \
    if (self().Mutate##k(Cast<k>(*i), out)) \
      out.push_back(std::move(i));          \
    return;
      WARPD_TIR_INSTS(X, X)
#undef X
    }
  }

  // Returns true to keep the instruction (appended after whatever was added).
#define X(k) \
  bool Mutate##k(k&, Block&) { return true; }
  WARPD_TIR_INSTS(X, WARPD_TIR_IGNORE)
#undef X
  bool MutateIf(If& i, Block&) {
    self().MutateBlock(i.then_body);
    self().MutateBlock(i.else_body);
    return true;
  }
  bool MutateFor(For& i, Block&) {
    self().MutateBlock(i.body);
    return true;
  }
  bool MutateWhile(While& i, Block&) {
    self().MutateBlock(i.cond_body);
    self().MutateBlock(i.body);
    return true;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

// A readable listing of a function (tests, debugging): one instruction per
// line, nested blocks indented.
std::string Dump(const Module& m, const Function& f);

// The call graph: per function of `m`, the functions it calls (indices into
// Module::functions); and every function index ordered callees first (sema
// rejects recursion, so the calls form a DAG). For the passes that need a
// callee's result before its callers' (array access, adjoints).
struct CallGraph {
  std::vector<std::vector<int>> callees;
  std::vector<int> callees_first;
};
CallGraph CallGraphOf(const Module& m);

// Whether `f` calls wp.grad() itself (a Grad instruction in its body). As in
// Warp 1.19, such a function gets no adjoint: its calls pass no gradient
// back, and wp.grad() of it is zero.
bool CallsGrad(const Function& f);

}  // namespace warpd::tir
