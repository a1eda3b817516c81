// warpd compiler: the in-memory IR of a kernel module.
//
// A Module owns Functions (kernels and user functions); a Function owns a tree
// of Stmts and Exprs. Nodes are plain structs with one documented operand
// convention per kind (see the *_KINDS lists); from_proto.cc builds them and
// rejects ill-formed input, sema fills in the `type` and resolution fields,
// codegen reads them. Passes never see the proto.
// Thread-compatible: a Module is mutated by one pass at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/types/type.h"
#include "compiler/ir/diagnostic.h"

namespace warpd::builtins {
struct Overload;
}

namespace warpd::ir {

using types::ScalarKind;
using types::TypeRef;

// A position in the user's source. `file` indexes Module::files.
struct Span {
  uint32_t file = 0;
  int32_t line = 0;
  int32_t col = 0;
};

// Expression kinds and their operands:
//   Name       name = identifier
//   Constant   value; const_dtype (explicit scalar type, or none for a literal)
//   Binary     binary_op; operands = {left, right}
//   Unary      unary_op; operands = {operand}
//   Compare    compare_ops (n); operands = {left, c_1 .. c_n}
//   BoolOp     bool_op; operands = {v_1 .. v_n}, n >= 2
//   Call       name = callee; callee_kind; operands = positional args then
//              keyword values; keywords = names of the trailing operands;
//              grad: wp.grad(callee)(args), the callee's gradient there
//   Subscript  operands = {value, index_1 .. index_n}; an index may be a
//              slice: a Call of builtin "slice" with keywords start/stop/step
//   Attribute  name = attribute; operands = {value}
//   IfExp      operands = {test, body, orelse}
//   Tuple      operands = elements
//   TypeValue  type_value
#define WARPD_EXPR_KINDS(X) \
  X(Name)                   \
  X(Constant)               \
  X(Binary)                 \
  X(Unary)                  \
  X(Compare)                \
  X(BoolOp)                 \
  X(Call)                   \
  X(Subscript)              \
  X(Attribute)              \
  X(IfExp)                  \
  X(Tuple)                  \
  X(TypeValue)

enum class ExprKind : uint8_t {
#define X(k) k,
  WARPD_EXPR_KINDS(X)
#undef X
};

const char* ExprKindName(ExprKind k);

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kBitAnd, kBitOr, kBitXor, kLShift, kRShift, kMatMul };
enum class UnaryOp : uint8_t { kNeg, kPos, kNot, kInvert };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class BoolOpKind : uint8_t { kAnd, kOr };
enum class CalleeKind : uint8_t { kBuiltin, kFunction };

// The Python operator spelling ("+", "<=", "and") for messages.
const char* BinaryOpSymbol(BinaryOp op);
const char* UnaryOpSymbol(UnaryOp op);
const char* CompareOpSymbol(CompareOp op);

// Strings appear only as print/printf arguments.
using ConstantValue = std::variant<bool, int64_t, double, std::string>;

struct Expr {
  ExprKind kind = ExprKind::Name;
  Span span;
  std::string name;
  std::vector<std::unique_ptr<Expr>> operands;
  std::vector<std::string> keywords;
  ConstantValue value = int64_t{0};
  std::optional<ScalarKind> const_dtype;
  BinaryOp binary_op = BinaryOp::kAdd;
  UnaryOp unary_op = UnaryOp::kNeg;
  std::vector<CompareOp> compare_ops;
  BoolOpKind bool_op = BoolOpKind::kAnd;
  CalleeKind callee_kind = CalleeKind::kBuiltin;
  // Binary/Unary: a user overload set of the operator's builtin name that
  // sema tries first (operator overloading); empty: none.
  std::string user_function;
  // Call: the callee as written ("wp.missing_func"), for messages; empty: `name`.
  std::string written;
  // Call: wp.grad(callee)(args): the adjoints of the arguments for a result
  // adjoint of one in every component (ir.proto Call.grad).
  bool grad = false;
  TypeRef type_value = nullptr;

  // Filled by sema.
  TypeRef type = nullptr;                        // the value's type (void for calls returning nothing)
  const builtins::Overload* overload = nullptr;  // resolved builtin (Call, Binary, Unary; Compare: per op)
  std::string callee;                            // its spelling from the table (Compare: see callees)
  std::vector<std::string> callees;              // Compare: one spelling per operator
  std::vector<const builtins::Overload*> compare_overloads;  // Compare: one overload per operator
  int function_index = -1;                       // resolved user function (Call)
  TypeRef grad_result = nullptr;                 // Call with grad: the callee's own result type
  int tuple_arity = 0;                           // wp.tid() unpacked into this many targets
  int element_index = -1;                        // Subscript of a tuple: the element (negative indices resolved)
  // Subscript of a vector, quaternion, transform or matrix with slices
  // (v[1:3], m[:, 1]): per index, the components a slice selects (constant
  // bounds; none for an empty slice such as v[4:]), empty for an integer
  // index (whether an index is a slice is IsSlice of the operand); m[1:3]
  // lists every column second. Set by sema; see IsComponentSlice.
  std::vector<std::vector<int>> slice_components;
};

using ExprPtr = std::unique_ptr<Expr>;

// A string constant: an argument of print()/printf() (text of the call's
// site, never a value).
inline bool IsStringConstant(const Expr& e) {
  return e.kind == ExprKind::Constant && std::holds_alternative<std::string>(e.value);
}

// Statement kinds and their fields:
//   Assign     target (Name | Subscript | Attribute | Tuple of Names), value,
//              annotation (optional)
//   AugAssign  target, binary_op, value
//   ExprStmt   value
//   If         value = test; body; orelse
//   For        target (Name); value = iterator (a Call of "range"); body
//   While      value = test; body
//   Return     value (may be null)
//   Break, Continue, Pass
#define WARPD_STMT_KINDS(X) \
  X(Assign)                 \
  X(AugAssign)              \
  X(ExprStmt)               \
  X(If)                     \
  X(For)                    \
  X(While)                  \
  X(Return)                 \
  X(Break)                  \
  X(Continue)               \
  X(Pass)

enum class StmtKind : uint8_t {
#define X(k) k,
  WARPD_STMT_KINDS(X)
#undef X
};

const char* StmtKindName(StmtKind k);

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::Pass;
  Span span;
  ExprPtr target;
  ExprPtr value;
  BinaryOp binary_op = BinaryOp::kAdd;
  TypeRef annotation = nullptr;
  Block body;
  Block orelse;

  // Filled by sema: AugAssign's operator (x = x op value), unless it is an
  // atomic array update.
  const builtins::Overload* overload = nullptr;
  std::string callee;
  // AugAssign: the user function set of the operator's builtin name in the
  // kernel's scope (as Expr::user_function), from the client; empty: none.
  std::string user_function;
  // Filled by sema: AugAssign through that user function (x = f(x, value)):
  // the overload's function index; -1: the builtin operator or an atomic.
  int function_index = -1;
};

struct Param {
  std::string name;
  TypeRef type = nullptr;  // null when generic
  Span span;
  bool generic = false;    // typing.Any: set per instance (Function::generic_source)
  // A generic parameter annotated tuple[T, ...]: it takes tuples of any
  // length whose elements are all T (null: any value).
  TypeRef tuple_of = nullptr;
};

enum class FunctionKind : uint8_t { kKernel, kFunc };

// A local variable of a function, found by sema (first assignment fixes its type).
struct Local {
  std::string name;
  TypeRef type = nullptr;
  bool is_param = false;
};

struct Function {
  std::string name;          // unique C identifier in the module
  std::string display_name;  // what the user wrote (messages); never empty
  std::string overload_set;  // what calls name (== name unless overloaded)
  // Backward modules: the functions replacing this one's adjoint and replay
  // (ir.proto Function.custom_grad, custom_replay); empty: none.
  std::string custom_grad, custom_replay;
  FunctionKind kind = FunctionKind::kFunc;
  std::vector<Param> params;
  TypeRef declared_return = nullptr;
  std::string return_annotation;  // as written (messages); empty: declared_return's spelling
  Block body;
  Span span;

  // A function with generic parameters is a template: never analysed or
  // emitted itself; sema adds an instance (a copy with concrete parameter
  // types) per distinct argument types it is called with.
  bool is_generic() const {
    for (const auto& p : params)
      if (p.generic) return true;
    return false;
  }

  // Filled by sema.
  TypeRef return_type = nullptr;
  // Sema did not finish this function (it failed, or calls one that failed,
  // or was never reached): it is not lowered or emitted (Module::failures).
  bool dropped = false;
  std::vector<Local> locals;  // params first, then assigned names in order of appearance
  int tid_ndim = 0;           // kernels: targets wp.tid() unpacks into (0: unused)
};

// A slice index (a:b:c) of a Subscript.
inline bool IsSlice(const Expr& e) {
  return e.kind == ExprKind::Call && e.callee_kind == CalleeKind::kBuiltin && e.name == "slice";
}

// v[1:3], m[:2, 1:] (after sema): a slice of a value's components, a place
// when its owner is (lowered component by component).
inline bool IsComponentSlice(const Expr& e) {
  return e.kind == ExprKind::Subscript && !e.slice_components.empty();
}

// A call argument *v (spread by sema into v[0], v[1], ...).
inline bool IsUnpack(const Expr& e) {
  return e.kind == ExprKind::Call && e.callee_kind == CalleeKind::kBuiltin && e.name == "unpack" &&
         e.operands.size() == 1 && e.keywords.empty();
}

// Whether lowering and codegen emit `f`: analysed, and not a template.
inline bool IsEmitted(const Function& f) { return !f.dropped && !f.is_generic(); }

// A kernel or function sema rejected; the module's other kernels still compile.
struct FunctionFailure {
  std::string name;          // Function::name
  std::string display_name;  // Function::display_name
  bool kernel = false;
  std::string message;       // "file:line:col: error: ... (in kernel 'k')"
  UserErrorParts parts;      // the same error in parts (diagnostic.h)
};

// A deep copy of an expression as the client sent it (sema's annotations
// are not copied).
ExprPtr CopyExpr(const Expr& e);

// A deep copy of statements as the client sent them (sema's annotations are
// not copied): a loop body sema unrolls.
Block CopyStatements(const Block& b);

// A deep copy of a function's parameters and body (sema's instances of
// generic functions); sema's annotations are not copied.
Function CopyForInstance(const Function& f);

struct Module {
  // Struct types of this module (and arrays of them); struct-free types are
  // in types::TypeTable::Global(). Shared so compiled kernels' layouts can
  // keep the types alive after the Module is gone.
  std::shared_ptr<types::TypeTable> types = std::make_shared<types::TypeTable>();
  std::string name;
  // Compile the backward pass too (codegen/adjoint.h).
  bool backward = false;
  std::vector<std::string> files;  // Span::file indexes this
  // A deque: sema appends instances of generic functions while it holds
  // references to functions under analysis.
  std::deque<Function> functions;
  // Filled by sema, in module order: the kernels and functions that failed
  // (user errors), each dropped from the module while the others compile.
  std::vector<FunctionFailure> failures;

  const std::string& FileOf(const Span& s) const {
    static const std::string kUnknown = "<unknown>";
    return s.file < files.size() ? files[s.file] : kUnknown;
  }
  // "file:line:col"
  std::string Where(const Span& s) const;
};

}  // namespace warpd::ir
