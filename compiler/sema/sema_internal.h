// warpd compiler: internal: the state of semantic analysis, shared by
// sema.cc (modules, functions, statements), sema_expr.cc (expressions) and
// sema_call.cc (calls of builtins and user functions).
#pragma once

#include <optional>

#include "common/str_cat.h"
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/builtins/builtins.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/sema.h"

namespace warpd::sema::internal {

#define SEMA_TRY(x)                \
  do {                             \
    if (auto _st = (x); !_st.ok()) \
      return _st;                  \
  } while (0)

class ModuleSema;

class FunctionSema {
 public:
  FunctionSema(ModuleSema& ms, ir::Module& m, ir::Function& f) : ms_(ms), m_(m), f_(f) {}
  absl::Status Run();

  // A user error at `s` (ir/diagnostic.h). The category picks the Python
  // exception class a client raises: the one Warp raises for the same
  // mistake; `msg` is Warp's wording where Warp's tests check it.
  absl::Status Err(const ir::Span& s, std::string_view msg,
                   ir::ErrorCategory category = ir::ErrorCategory::kGeneral) const {
    const char* what = f_.kind == ir::FunctionKind::kKernel ? "kernel" : "function";
    std::string where = m_.Where(s);
    std::string message = Cat(where, ": error: ", msg, " (in ", what, " '", f_.display_name, "')");
    return ir::UserError({category, std::move(where), std::string(msg)}, message);
  }
  // A hook's (or other located-later) error at `s`, keeping its category and text.
  absl::Status ErrFrom(const ir::Span& s, const absl::Status& st) const {
    ir::UserErrorParts p = ir::PartsOf(st);
    return Err(s, p.text, p.category);
  }

  // sema.cc: statements.
  absl::Status BlockSema(ir::Block& b);
  absl::Status StmtSema(ir::Stmt& s);
  absl::Status Assign(ir::Stmt& s);
  absl::Status AssignName(ir::Expr& target, ir::TypeRef t, const ir::Span& span);
  absl::Status AugAssign(ir::Stmt& s);
  absl::Status Unpack(ir::Stmt& s);
  absl::Status ForSema(ir::Stmt& s);
  // sema_unroll.cc: b[i], a for loop over a constant range() whose body
  // indexes a tuple with the loop variable, replaced by one copy of the body
  // per iteration (the variable a constant in each); false: left alone.
  absl::StatusOr<bool> Unroll(ir::Block& b, size_t i);
  absl::Status ReturnSema(ir::Stmt& s);
  // Warp 1.19's message for a return of type `t` that the function's return
  // annotation does not admit.
  std::string ReturnMismatchText(ir::TypeRef t) const;
  absl::Status Condition(ir::Expr& e, std::string_view what);
  // The type check of a condition, for an expression already analysed.
  absl::Status ConditionType(const ir::Expr& e, std::string_view what);
  // A place a value may be stored into: a local, or a component/member path
  // of a local (v[i], m[i][j], m[i, j], s.pos.x), or an array element.
  absl::Status CheckPlace(ir::Expr& target, const ir::Span& span);
  // sema_slice_assign.cc: v[1:] = w, m[:2, 1:] += n (target analysed, a
  // component slice): its owner must be a place, the value fit the slice.
  absl::Status SliceAssign(ir::Stmt& s);
  absl::Status SliceAugAssign(ir::Stmt& s);
  // Whether a value of type `value` may be stored into component slice
  // `target` (Warp's rules and ValueError messages).
  absl::Status CheckSliceValue(const ir::Expr& target, ir::TypeRef value, const ir::Span& span);

  // sema_expr.cc
  absl::Status ExprSema(ir::Expr& e);
  absl::Status SubscriptSema(ir::Expr& e);
  // a[1:3], v[::2], m[:, 1]: slices (sema_expr.cc).
  absl::Status SliceSema(ir::Expr& slice);
  absl::Status SliceSubscript(ir::Expr& e);
  absl::Status AttributeSema(ir::Expr& e);
  absl::Status ResolveOperator(ir::Expr& e, std::string_view builtin, std::string_view symbol);

  // sema_call.cc
  absl::Status CallSema(ir::Expr& e);
  absl::Status UserCall(ir::Expr& e);
  // An operator whose user overload takes its (typed) operands: made a call of it.
  absl::Status OperatorCall(ir::Expr& e);
  absl::Status BuiltinCall(ir::Expr& e);
  // f(*v): v's elements become arguments (v[0], v[1], ...).
  absl::Status SpreadArguments(ir::Expr& e);
  absl::Status KeywordCall(ir::Expr& e, const std::vector<const builtins::Overload*>& overloads,
                           std::vector<ir::TypeRef>& args, std::optional<builtins::Resolution>& r);
  // sema_grad.cc: wp.grad(f)(args).
  absl::Status GradCall(ir::Expr& e);

  int FindLocal(const std::string& name) const {
    for (size_t i = 0; i < f_.locals.size(); ++i)
      if (f_.locals[i].name == name) return static_cast<int>(i);
    return -1;
  }
  ir::Function& function() { return f_; }
  ir::Module& module() { return m_; }
  types::TypeTable& table() { return *m_.types; }

 private:
  ModuleSema& ms_;
  ir::Module& m_;
  ir::Function& f_;
  int loop_depth_ = 0;
  bool saw_return_value_ = false;
  const ir::Expr* local_array_ = nullptr;  // the first wp.zeros() call here
  // Blocks being analysed, innermost last; where each local was declared;
  // names bound again to an array of another ndim (AssignName) and the
  // local each now means.
  std::vector<const ir::Block*> blocks_;
  std::unordered_map<std::string, const ir::Block*> declared_in_;
  std::unordered_map<std::string, std::string> renamed_;
};

class ModuleSema {
 public:
  explicit ModuleSema(ir::Module& m)
      : m_(m), state_(m.functions.size(), kNone), errors_(m.functions.size()), instance_of_(m.functions.size(), -1) {
    for (size_t i = 0; i < m.functions.size(); ++i) {
      by_name_[m.functions[i].name] = static_cast<int>(i);
      if (m.functions[i].kind == ir::FunctionKind::kFunc)
        overloads_[m.functions[i].overload_set].push_back(static_cast<int>(i));
    }
  }

  // Analyzes every kernel and function; one that fails is recorded in
  // Module::failures and dropped (with the kernels that call it), so the
  // others still compile. INVALID_ARGUMENT when no kernel is left.
  absl::Status Run();

  int Find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
  }
  // The functions a call of `set` may mean (its overloads), in module order.
  const std::vector<int>& Overloads(const std::string& set) const {
    static const std::vector<int> kNone;
    auto it = overloads_.find(set);
    return it == overloads_.end() ? kNone : it->second;
  }
  // Whether an overload of `set` takes the (typed) operands.
  bool OverloadFits(const std::string& set, const std::vector<std::unique_ptr<ir::Expr>>& operands) const;
  // The instance of generic function `tmpl` for argument types `args` (made
  // and appended to the module on first use).
  absl::StatusOr<int> Instance(int tmpl, const std::vector<ir::TypeRef>& args, const ir::Expr& call);

  // Analyzes function `i` if needed (callees before callers, so inferred
  // return types are known); a call back into a function under analysis is
  // recursion, which kernels may not use. A function that failed fails
  // every later call with its first error.
  absl::Status Ensure(int i, const ir::Expr* call);

  // Counts a local array's bytes against the module's limit.
  absl::Status AddLocalArray(uint64_t bytes, const ir::Expr& call);
  // A store of a value holding arrays (a struct with array members) into a
  // place other than a plain local: it may reach an array's elements, which
  // outlive the kernel, so the module must make no local array (checked
  // once every function is analysed).
  void NoteDescriptorStore(const ir::Span& span) {
    if (!descriptor_store_) descriptor_store_ = span;
  }

 private:
  enum State { kNone, kActive, kDone, kFailed };
  static constexpr size_t kMaxInstances = 256;
  ir::Module& m_;
  std::vector<State> state_;
  std::vector<absl::Status> errors_;  // kFailed: why
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<std::string, std::vector<int>> overloads_;
  std::vector<int> instance_of_;                     // the template of each instance; -1 otherwise
  std::unordered_map<std::string, int> instances_;   // (template, argument types) -> instance
  uint64_t local_array_bytes_ = 0;
  std::optional<ir::Span> local_array_span_;  // the module's first wp.zeros() in a kernel or function
  std::optional<ir::Span> descriptor_store_;
};

// The printable name of a possibly missing type.
inline std::string TypeText(ir::TypeRef t) { return t ? t->ToString() : "no value"; }

}  // namespace warpd::sema::internal
