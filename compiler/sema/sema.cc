// Semantic analysis: modules, functions and statements.
#include "common/str_cat.h"
#include "compiler/sema/sema.h"

#include "absl/cleanup/cleanup.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/sema/sema_internal.h"

namespace warpd::sema {
namespace internal {

using ir::Block;
using ir::Expr;
using ir::ExprKind;
using ir::FunctionKind;
using ir::Span;
using ir::Stmt;
using ir::StmtKind;
using ir::TypeRef;
using types::ScalarKind;

// Warp's words for a kernel returning a value (or declaring one).
constexpr char kKernelReturnText[] =
    "Warp kernels cannot return values. Write results to output arguments, and omit the return annotation or use "
    "`-> None`.";

absl::Status ModuleSema::Run() {
  // Templates (generic functions) are analysed through their instances only;
  // instances are appended as calls need them, and analysed there. A
  // failure is recorded below; the loop goes on with the next function.
  const size_t declared = m_.functions.size();
  for (size_t i = 0; i < declared; ++i)
    if (!m_.functions[i].is_generic()) (void)Ensure(static_cast<int>(i), nullptr);
  std::vector<absl::Status> kernel_errors;
  bool any_kernel = false;
  for (size_t i = 0; i < m_.functions.size(); ++i) {
    ir::Function& f = m_.functions[i];
    if (f.is_generic()) continue;
    f.dropped = state_[i] != kDone;
    const bool kernel = f.kind == FunctionKind::kKernel;
    if (kernel && !f.dropped) any_kernel = true;
    // An instance's error names its template's code; its callers report it.
    if (state_[i] != kFailed || instance_of_[i] >= 0) continue;
    m_.failures.push_back(ir::FunctionFailure{f.name, f.display_name, kernel, std::string(errors_[i].message()),
                                              ir::PartsOf(errors_[i])});
    if (kernel) kernel_errors.push_back(errors_[i]);
  }
  // One kernel: its own error, parts included (ir/diagnostic.h).
  if (!any_kernel && kernel_errors.size() == 1) return kernel_errors[0];
  if (!any_kernel) {
    std::vector<std::string> messages;
    for (const absl::Status& st : kernel_errors) messages.push_back(std::string(st.message()));
    return absl::InvalidArgumentError(absl::StrJoin(messages, "\n"));
  }
  // A local array's descriptor points into a kernel's frame: stored into an
  // array element (inside a struct), a later launch would read freed stack.
  // Which function's local array can reach which store is not tracked, so
  // a module does one or the other.
  if (local_array_span_ && descriptor_store_) {
    return absl::InvalidArgumentError(
        Cat(m_.Where(*descriptor_store_), ": error: a struct holding arrays is stored here, and the module makes a "
            "local array (wp.zeros) at ", m_.Where(*local_array_span_),
            ": a local array could outlive its kernel inside an array element; put these kernels in separate "
            "modules"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ModuleSema::Instance(int tmpl, const std::vector<TypeRef>& args, const Expr& call) {
  // Types are interned (globally, or in this module's table): their
  // addresses identify them.
  std::string key = Cat(tmpl, ":");
  for (TypeRef t : args) CatAppend(&key, reinterpret_cast<uintptr_t>(t), ",");
  if (auto it = instances_.find(key); it != instances_.end()) return it->second;
  const ir::Function& t = m_.functions[static_cast<size_t>(tmpl)];
  // An instance of `tmpl` under analysis that needs another one: recursion
  // (each step could ask for new types forever).
  for (size_t i = 0; i < state_.size(); ++i)
    if (instance_of_[i] == tmpl && state_[i] == kActive)
      return absl::InvalidArgumentError(
          Cat(m_.Where(call.span), ": error: recursive call of '", t.display_name,
              "': recursion is not supported in kernels and functions"));
  if (instances_.size() >= kMaxInstances)
    return absl::InvalidArgumentError(Cat(m_.Where(call.span), ": error: more than ", kMaxInstances,
                                          " instances of generic functions in one module"));
  ir::Function inst = ir::CopyForInstance(t);
  // A C identifier no function of the module has.
  for (int n = static_cast<int>(instances_.size());; ++n) {
    inst.name = Cat(t.name, "_wpi", n);
    if (!by_name_.count(inst.name)) break;
  }
  for (size_t i = 0; i < inst.params.size(); ++i) {
    if (!inst.params[i].generic) continue;
    inst.params[i].type = args[i];
    inst.params[i].generic = false;
  }
  const int index = static_cast<int>(m_.functions.size());
  by_name_[inst.name] = index;
  m_.functions.push_back(std::move(inst));
  state_.push_back(kNone);
  errors_.emplace_back();
  instance_of_.push_back(tmpl);
  instances_[key] = index;
  return index;
}

absl::Status ModuleSema::Ensure(int i, const Expr* call) {
  if (state_[i] == kDone) return absl::OkStatus();
  if (state_[i] == kFailed) return errors_[i];
  if (state_[static_cast<size_t>(i)] == kActive)
    return absl::InvalidArgumentError(
        Cat(m_.Where(call->span), ": error: recursive call of '", m_.functions[i].display_name,
                     "': recursion is not supported in kernels and functions"));
  state_[i] = kActive;
  if (absl::Status st = FunctionSema(*this, m_, m_.functions[i]).Run(); !st.ok()) {
    state_[i] = kFailed;
    errors_[i] = st;
    return st;
  }
  state_[i] = kDone;
  return absl::OkStatus();
}

absl::Status ModuleSema::AddLocalArray(uint64_t bytes, const Expr& call) {
  if (!local_array_span_) local_array_span_ = call.span;
  local_array_bytes_ += bytes;
  if (local_array_bytes_ > builtins::kMaxLocalArrayBytes)
    return absl::InvalidArgumentError(Cat(m_.Where(call.span), ": error: the module's local arrays (wp.zeros) take ",
                                          local_array_bytes_, " bytes; at most ", builtins::kMaxLocalArrayBytes,
                                          " bytes are allowed per module"));
  return absl::OkStatus();
}

absl::Status FunctionSema::Run() {
  for (const auto& p : f_.params) {
    f_.locals.push_back(ir::Local{p.name, p.type, true});
  }
  if (f_.kind == FunctionKind::kKernel && f_.declared_return && !f_.declared_return->is_void())
    return Err(f_.span, kKernelReturnText, ir::ErrorCategory::kType);
  f_.return_type = types::Void();
  SEMA_TRY(BlockSema(f_.body));
  if (f_.kind == FunctionKind::kKernel) {
    f_.return_type = types::Void();
  } else if (f_.declared_return) {
    if (!f_.declared_return->is_void() && !saw_return_value_)
      return Err(f_.span, Cat("function is declared to return ", f_.declared_return->ToString(),
                                       " but has no return statement with a value"));
    f_.return_type = f_.declared_return;
  }
  // A local array lives in this function's frame: it must not leave it.
  if (local_array_ && (f_.return_type->is_array() || f_.return_type->holds_array()))
    return Err(local_array_->span, Cat("a function that makes a local array (wp.zeros) cannot return ",
                                       f_.return_type->ToString(), ": the array lives only until the function returns"));
  return absl::OkStatus();
}

absl::Status FunctionSema::BlockSema(Block& b) {
  blocks_.push_back(&b);
  absl::Cleanup pop = [this] { blocks_.pop_back(); };
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i]->kind == StmtKind::For) {
      auto unrolled = Unroll(b, i);  // b[i] is then the first statement of the copies
      if (!unrolled.ok()) return unrolled.status();
    }
    SEMA_TRY(StmtSema(*b[i]));
  }
  return absl::OkStatus();
}

absl::Status FunctionSema::Condition(Expr& e, std::string_view what) {
  SEMA_TRY(ExprSema(e));
  if (e.type && e.type->is_array() && !e.type->is_indexed_array()) {
    // `if arr:` is true for an array with data (Warp): not (not arr), with
    // Warp's unot(array).
    auto inner = std::make_unique<Expr>(std::move(e));
    auto mid = std::make_unique<Expr>();
    mid->kind = ExprKind::Unary;
    mid->unary_op = ir::UnaryOp::kNot;
    mid->span = inner->span;
    mid->operands.push_back(std::move(inner));
    SEMA_TRY(ResolveOperator(*mid, "unot", "not"));
    e = Expr();
    e.kind = ExprKind::Unary;
    e.unary_op = ir::UnaryOp::kNot;
    e.span = mid->span;
    e.operands.push_back(std::move(mid));
    SEMA_TRY(ResolveOperator(e, "unot", "not"));
  }
  return ConditionType(e, what);
}

absl::Status FunctionSema::ConditionType(const Expr& e, std::string_view what) {
  if (!e.type || !e.type->is_scalar() || e.type->scalar() == ScalarKind::kFloat16 ||
      e.type->scalar() == ScalarKind::kBFloat16)  // the 16-bit floats are structs in C++
    return Err(e.span, Cat(what, " must be a bool or an integer/float scalar, not ", TypeText(e.type)));
  return absl::OkStatus();
}

absl::Status FunctionSema::StmtSema(Stmt& s) {
  switch (s.kind) {
    case StmtKind::Assign:
      return Assign(s);
    case StmtKind::AugAssign:
      return AugAssign(s);
    case StmtKind::ExprStmt:
      return ExprSema(*s.value);
    case StmtKind::If:
      SEMA_TRY(Condition(*s.value, "an if condition"));
      SEMA_TRY(BlockSema(s.body));
      return BlockSema(s.orelse);
    case StmtKind::For:
      return ForSema(s);
    case StmtKind::While:
      SEMA_TRY(Condition(*s.value, "a while condition"));
      ++loop_depth_;
      SEMA_TRY(BlockSema(s.body));
      --loop_depth_;
      return absl::OkStatus();
    case StmtKind::Return:
      return ReturnSema(s);
    case StmtKind::Break:
    case StmtKind::Continue:
      if (loop_depth_ == 0)
        return Err(s.span, Cat("'", s.kind == StmtKind::Break ? "break" : "continue", "' outside a loop"));
      return absl::OkStatus();
    case StmtKind::Pass:
      return absl::OkStatus();
  }
  return Err(s.span, "unknown statement");
}

std::string FunctionSema::ReturnMismatchText(TypeRef t) const {
  const TypeRef want = f_.declared_return;
  const std::string head = Cat("The function `", f_.display_name, "` has its return type annotated as ");
  const std::string annotated =
      Cat("`", f_.return_annotation.empty() ? want->ToString() : f_.return_annotation, "`");
  if (t->is_tuple()) {
    const size_t n = t->elements().size();
    if (want->is_tuple() && want->elements().size() != n) {
      return Cat(head, "a tuple of ", want->elements().size(), " elements but the code returns ", n, " values.");
    }
    if (!want->is_tuple()) return Cat(head, annotated, " but the code returns ", n, " values.");
    std::string types;
    for (size_t k = 0; k < n; ++k) types += Cat(k ? ", " : "", t->elements()[k]->ToString());
    return Cat(head, annotated, " but the code returns a tuple with types `(", types, ")`.");
  }
  return Cat(head, annotated, " but the code returns a value of type `", t->ToString(), "`.");
}

absl::Status FunctionSema::ReturnSema(Stmt& s) {
  if (f_.kind == FunctionKind::kKernel) {
    if (s.value) return Err(s.span, kKernelReturnText, ir::ErrorCategory::kType);
    return absl::OkStatus();
  }
  TypeRef t = types::Void();
  if (s.value) {
    SEMA_TRY(ExprSema(*s.value));
    t = s.value->type;
    if (t->is_void()) return Err(s.span, "return of an expression without a value");
    saw_return_value_ = true;
  }
  if (f_.declared_return) {
    if (!types::SameType(f_.declared_return, t)) return Err(s.span, ReturnMismatchText(t));
  } else if (!f_.return_type->is_void() || saw_return_value_) {
    if (f_.return_type->is_void()) {
      f_.return_type = t;
    } else if (!types::SameType(f_.return_type, t)) {
      return Err(s.span, Cat("returns ", t->ToString(), " here but ", f_.return_type->ToString(),
                                      " elsewhere; all return statements must return the same type"));
    }
  }
  return absl::OkStatus();
}

absl::Status FunctionSema::AssignName(Expr& target, TypeRef t, const Span& span) {
  target.type = t;
  if (auto r = renamed_.find(target.name); r != renamed_.end()) target.name = r->second;
  int i = FindLocal(target.name);
  if (i < 0) {
    if (t->is_void()) return Err(span, Cat("cannot assign an expression without a value to '", target.name, "'"));
    f_.locals.push_back(ir::Local{target.name, t, false});
    if (!blocks_.empty()) declared_in_[target.name] = blocks_.back();
    return absl::OkStatus();
  }
  // An array local may be bound again to an array of the same dtype and
  // another ndim (Warp compares arrays by dtype: `sub = a[:2]` then
  // `sub = a[:2, 1]`): from here on the name is a new local. Only in the
  // block that declared it, so every later use sees one type.
  const TypeRef old = f_.locals[i].type;
  if (old->is_array() && t->is_array() && old->ndim() != t->ndim() &&
      old->is_indexed_array() == t->is_indexed_array() && types::SameType(old->element(), t->element()) &&
      !blocks_.empty() && declared_in_[target.name] == blocks_.back()) {
    const std::string source = f_.locals[i].name;
    std::string fresh;
    for (int n = 1;; ++n) {
      fresh = Cat(source, "__", t->ndim(), "d", n);
      if (FindLocal(fresh) < 0) break;
    }
    f_.locals.push_back(ir::Local{fresh, t, false});
    declared_in_[fresh] = blocks_.back();
    // Every spelling that reached `source` now reaches `fresh`.
    for (auto& [from, to] : renamed_)
      if (to == source) to = fresh;
    renamed_[source] = fresh;
    target.name = fresh;
    return absl::OkStatus();
  }
  // Queries of two kinds of one family (a bvh_query_ray in one branch, a
  // bvh_query_aabb in the other) make the variable the family's erased
  // query (Warp's BvhQuery / MeshQuery): the same native query, whose _next
  // dispatches on the kind it keeps.
  if (TypeRef erased = types::ErasedQuery(old); erased != nullptr && !types::SameType(old, t) &&
                                                 types::QueryAccepts(erased, t)) {
    f_.locals[i].type = erased;
    target.type = erased;
    return absl::OkStatus();
  }
  if (!types::SameType(f_.locals[i].type, t))
    return Err(span, Cat("cannot assign a value of type ", t->ToString(), " to '", target.name, "' of type ",
                                  f_.locals[i].type->ToString(),
                                  "; Warp variables keep their type (convert explicitly, e.g. ",
                                  f_.locals[i].type->is_scalar() ? f_.locals[i].type->ToString() : std::string("float32"),
                                  "(x))"),
               ir::ErrorCategory::kType);
  return absl::OkStatus();
}

absl::Status FunctionSema::CheckPlace(Expr& target, const Span& span) {
  // Walk down to the root of the path; it must be a local, or an array element.
  Expr* node = &target;
  while (node->kind == ExprKind::Subscript || node->kind == ExprKind::Attribute) {
    for (size_t i = 1; node->kind == ExprKind::Subscript && i < node->operands.size(); ++i)
      if (ir::IsSlice(*node->operands[i])) return Err(span, "a slice cannot be assigned; assign its elements");
    Expr& owner = *node->operands[0];
    if (owner.type && owner.type->is_tuple()) return Err(span, "tuples are immutable: their elements cannot be assigned");
    if (owner.type && owner.type->is_array()) {
      if (node->kind == ExprKind::Attribute) return Err(span, "array attributes cannot be assigned");
      return absl::OkStatus();  // an array element (or a member path inside one)
    }
    node = &owner;
  }
  if (node->kind != ExprKind::Name)
    return Err(span, "only local variables, their components and members, and array elements can be assigned");
  return absl::OkStatus();
}

absl::Status FunctionSema::Assign(Stmt& s) {
  Expr& target = *s.target;
  Expr& value = *s.value;
  if (target.kind == ExprKind::Tuple &&
      !(value.kind == ExprKind::Call && value.callee_kind == ir::CalleeKind::kBuiltin &&
        (value.name == "tid" || value.name == "wp.tid")))
    return Unpack(s);
  if (target.kind == ExprKind::Tuple) {
    int n = static_cast<int>(target.operands.size());
    if (n < 1 || n > 4) return Err(s.span, "wp.tid() unpacks into 1 to 4 variables");
    value.tuple_arity = n;
    SEMA_TRY(ExprSema(value));
    for (auto& t : target.operands) {
      if (t->kind != ExprKind::Name) return Err(t->span, "wp.tid() must be unpacked into plain names");
      SEMA_TRY(AssignName(*t, types::Scalar(ScalarKind::kInt32), t->span));
    }
    if (f_.kind == FunctionKind::kKernel) {
      if (f_.tid_ndim > 1 && f_.tid_ndim != n)
        return Err(s.span, Cat("wp.tid() is unpacked into ", n, " variables here but into ", f_.tid_ndim,
                                        " elsewhere in the kernel"));
      f_.tid_ndim = n;
    }
    return absl::OkStatus();
  }
  SEMA_TRY(ExprSema(value));
  if (value.type->is_void()) return Err(value.span, "the assigned expression has no value");
  if (target.kind == ExprKind::Name) {
    TypeRef t = value.type;
    if (s.annotation && !types::SameType(s.annotation, t))
      return Err(s.span, Cat("'", target.name, "' is annotated as ", s.annotation->ToString(), " but assigned ",
                             t->ToString(), " (no implicit conversion)"));
    return AssignName(target, t, s.span);
  }
  if (target.kind != ExprKind::Subscript && target.kind != ExprKind::Attribute)
    return Err(s.span, Cat("cannot assign to a ", ir::ExprKindName(target.kind), " expression"));
  SEMA_TRY(ExprSema(target));
  if (ir::IsComponentSlice(target)) return SliceAssign(s);
  SEMA_TRY(CheckPlace(target, s.span));
  // A struct member of array type takes another array (as in Warp); a
  // sub-array (a[i] of a 2-D array) is a view, not a place.
  if (target.type->is_array() && target.kind != ExprKind::Attribute)
    return Err(s.span, "array slices cannot be assigned; assign their elements");
  if (!types::SameType(target.type, value.type)) {
    return Err(s.span, Cat("cannot store a value of type ", value.type->ToString(), " into a place of type ",
                                    target.type->ToString(), " (no implicit conversion)"));
  }
  if (value.type->holds_array() || value.type->is_array()) ms_.NoteDescriptorStore(s.span);
  return absl::OkStatus();
}

// a, b = value: the value is a tuple of as many elements; each target (a
// name or a place) takes its element.
absl::Status FunctionSema::Unpack(Stmt& s) {
  Expr& target = *s.target;
  Expr& value = *s.value;
  SEMA_TRY(ExprSema(value));
  const size_t n = target.operands.size();
  if (!value.type->is_tuple())
    return Err(s.span, Cat("cannot unpack a value of type ", TypeText(value.type), " into ", n, " targets"));
  const auto& elements = value.type->elements();
  if (elements.size() != n)
    return Err(s.span, Cat("cannot unpack a tuple of ", elements.size(), " values into ", n, " targets"));
  for (size_t k = 0; k < n; ++k) {
    Expr& t = *target.operands[k];
    if (t.kind == ExprKind::Name) {
      SEMA_TRY(AssignName(t, elements[k], t.span));
      continue;
    }
    if (t.kind != ExprKind::Subscript && t.kind != ExprKind::Attribute)
      return Err(t.span, Cat("cannot assign to a ", ir::ExprKindName(t.kind), " expression"));
    SEMA_TRY(ExprSema(t));
    SEMA_TRY(CheckPlace(t, t.span));
    if (t.type->is_array() && t.kind != ExprKind::Attribute)
      return Err(t.span, "array slices cannot be assigned; assign their elements");
    if (!types::SameType(t.type, elements[k]))
      return Err(t.span, Cat("cannot store a value of type ", elements[k]->ToString(), " into a place of type ",
                             t.type->ToString(), " (no implicit conversion)"));
    if (elements[k]->holds_array() || elements[k]->is_array()) ms_.NoteDescriptorStore(t.span);
  }
  return absl::OkStatus();
}

namespace {

// Whether Warp 1.19 may call a user operator function for `target op= value`
// (its emit_AugAssign): for a member or component, yes; for an array
// element, only where it has no atomic (add, sub, and, or, xor; narrow
// integers have none); for a component of a local vector or matrix
// (v[i], m[i, j]), only where it has no in-place builtin for the operator;
// for one of an array element (a[i][j]), yes.
bool UserOperatorTarget(const Expr& target, ir::BinaryOp op) {
  if (target.kind == ExprKind::Attribute) return true;
  if (target.kind != ExprKind::Subscript) return false;
  const bool in_place = op == ir::BinaryOp::kAdd || op == ir::BinaryOp::kSub || op == ir::BinaryOp::kBitAnd ||
                        op == ir::BinaryOp::kBitOr || op == ir::BinaryOp::kBitXor;
  TypeRef base = target.operands[0]->type;
  if (base->is_array()) {
    TypeRef t = target.type;
    const bool numeric = t->is_scalar() || t->is_vector() || t->is_matrix() || t->is_quat() || t->is_transform();
    const ScalarKind k = numeric ? t->scalar() : ScalarKind::kFloat32;
    const bool narrow = k == ScalarKind::kInt8 || k == ScalarKind::kUInt8 || k == ScalarKind::kInt16 ||
                        k == ScalarKind::kUInt16;
    return narrow || !in_place;
  }
  if (!base->is_vector() && !base->is_matrix() && !base->is_quat() && !base->is_transform()) return false;
  if (!in_place) return true;
  // Warp indexes a[i][j] as a[i] (a reference to the element) then [j].
  const Expr* owner = target.operands[0].get();
  while (owner->kind == ExprKind::Subscript && !owner->operands[0]->type->is_array()) owner = owner->operands[0].get();
  return owner->kind == ExprKind::Subscript;
}

}  // namespace

absl::Status FunctionSema::AugAssign(Stmt& s) {
  Expr& target = *s.target;
  SEMA_TRY(ExprSema(*s.value));
  if (target.kind != ExprKind::Name && target.kind != ExprKind::Subscript && target.kind != ExprKind::Attribute)
    return Err(s.span, "invalid target of an augmented assignment");
  SEMA_TRY(ExprSema(target));
  if (ir::IsComponentSlice(target)) return SliceAugAssign(s);
  if (target.kind != ExprKind::Name) SEMA_TRY(CheckPlace(target, s.span));
  bool array_element = target.kind == ExprKind::Subscript && target.operands[0]->type->is_array();
  // Warp 1.19: elements of 8- and 16-bit integers (and values made of them)
  // have no atomics; a[i] += x is then a[i] = a[i] + x, like other operators.
  const auto narrow = [](TypeRef t) {
    if (!t->is_scalar() && !t->is_vector() && !t->is_matrix() && !t->is_quat() && !t->is_transform()) return false;
    const ScalarKind k = t->scalar();
    return k == ScalarKind::kInt8 || k == ScalarKind::kUInt8 || k == ScalarKind::kInt16 || k == ScalarKind::kUInt16;
  };
  if (array_element && narrow(target.type)) array_element = false;
  if (array_element && (s.binary_op == ir::BinaryOp::kAdd || s.binary_op == ir::BinaryOp::kSub)) {
    // a[i] += x is an atomic add (Warp's semantics), a[i] -= x an atomic sub.
    TypeRef t = target.type;
    std::string_view name = s.binary_op == ir::BinaryOp::kAdd ? "atomic_add" : "atomic_sub";
    if (!builtins::AtomicSupports(name, t))
      return Err(s.span, Cat("atomic ", ir::BinaryOpSymbol(s.binary_op), "= on an array of ", t->ToString(),
                                      " is not supported (int32, uint32, int64, uint64, float16, bfloat16, float32, float64 "
                                      "and their vectors, matrices, quaternions and transforms are)"));
    if (!types::SameType(s.value->type, t))
      return Err(s.span, Cat("cannot add ", s.value->type->ToString(), " to an element of type ",
                                      t->ToString(), " (no implicit conversion)"));
    s.overload = builtins::Lookup(name).front();
    s.callee = builtins::AtomicCallee(name, t);
    return absl::OkStatus();
  }
  if (UserOperatorTarget(target, s.binary_op) && !s.user_function.empty()) {
    // Warp 1.19 calls a user operator for a member or component when one of
    // its overloads takes (target, value): x.a = f(x.a, value).
    ir::Expr call;
    call.kind = ExprKind::Call;
    call.callee_kind = ir::CalleeKind::kFunction;
    call.name = s.user_function;
    call.span = s.span;
    for (const Expr* operand : {&target, s.value.get()}) {
      auto typed = std::make_unique<Expr>();  // only the type counts (and the span, for errors)
      typed->span = operand->span;
      typed->type = operand->type;
      call.operands.push_back(std::move(typed));
    }
    if (ms_.OverloadFits(call.name, call.operands)) {
      SEMA_TRY(UserCall(call));
      if (!types::SameType(call.type, target.type))
        return Err(s.span, Cat("'", ir::BinaryOpSymbol(s.binary_op), "=' calls the user function '", s.user_function,
                               "', which returns ", call.type->ToString(), "; the target is ",
                               target.type->ToString()));
      s.function_index = call.function_index;
      return absl::OkStatus();
    }
  }
  // Anything else is x = x op value; check the operator like an expression.
  auto overloads = builtins::Lookup(builtins::BinaryOpBuiltin(s.binary_op));
  TypeRef args[2] = {target.type, s.value->type};
  auto r = builtins::Resolve(overloads, args, table());
  if (!r)
    return Err(s.span, Cat("unsupported operand types for ", ir::BinaryOpSymbol(s.binary_op), "=: ",
                                    target.type->ToString(), " and ", s.value->type->ToString(),
                                    " (Warp does not convert implicitly)"));
  if (!types::SameType(r->result, target.type))
    return Err(s.span, Cat("'", ir::BinaryOpSymbol(s.binary_op), "=' would change the type of the target from ",
                                    target.type->ToString(), " to ", r->result->ToString()));
  s.overload = r->overload;
  s.callee = r->cpp;
  return absl::OkStatus();
}

absl::Status FunctionSema::ForSema(Stmt& s) {
  const auto builtin_call = [](const Expr& e, std::string_view name) {
    return e.kind == ExprKind::Call && e.callee_kind == ir::CalleeKind::kBuiltin &&
           (e.name == name || e.name == Cat("builtins.", name));
  };
  // reversed(range(...)), reversed(reversed(range(...))), ...: each layer
  // takes exactly the one range; lowering unwraps them (FunctionLowering::ForLoop).
  Expr* outer = s.value.get();
  while (builtin_call(*outer, "reversed")) {
    if (!outer->keywords.empty() || outer->operands.size() != 1)
      return Err(outer->span, "reversed() takes exactly one argument, a range(...)");
    outer->overload = builtins::Lookup("reversed").front();
    outer->type = types::Void();
    outer = outer->operands[0].get();
  }
  Expr& iter = *outer;
  if (outer == s.value.get() && !builtin_call(iter, "range")) {
    // for index in wp.hash_grid_query(...): the query's points (Warp's
    // iterator form); lowering advances a copy of the query
    // (FunctionLowering::QueryLoop).
    SEMA_TRY(ExprSema(iter));
    if (iter.type == nullptr || !iter.type->is_query())
      return Err(iter.span, "for loops iterate over range(...) or a query (wp.hash_grid_query(...)) only");
    if (iter.type->query_kind() != types::QueryKind::kHashGrid &&
        types::ErasedQuery(iter.type) != types::Query(types::QueryKind::kMeshAny, ScalarKind::kFloat32))
      return Err(iter.span, Cat("for loops cannot iterate over a ", iter.type->ToString(),
                                " (use its _next builtin in a while loop)"));
    if (s.target->kind != ExprKind::Name) return Err(s.target->span, "the loop variable must be a plain name");
    SEMA_TRY(AssignName(*s.target, types::Scalar(ScalarKind::kInt32), s.target->span));
    ++loop_depth_;
    SEMA_TRY(BlockSema(s.body));
    --loop_depth_;
    return absl::OkStatus();
  }
  if (!builtin_call(iter, "range")) return Err(iter.span, "for loops iterate over range(...) only");
  size_t n = iter.operands.size();
  if (!iter.keywords.empty() || n < 1 || n > 3) return Err(iter.span, "range() takes 1 to 3 positional arguments");
  for (auto& a : iter.operands) {
    SEMA_TRY(ExprSema(*a));
    if (a->kind == ExprKind::Constant && std::holds_alternative<bool>(a->value)) {
      // range(True), e.g. from wp.static(flag): a bool literal counts as 0 or 1 (Warp).
      a->value = int64_t{std::get<bool>(a->value) ? 1 : 0};
      a->const_dtype.reset();
      SEMA_TRY(ExprSema(*a));
    }
    if (!a->type->is_int())
      return Err(a->span, Cat("range() arguments must be integers, not ", a->type->ToString()));
  }
  // One integer type (as in Warp: range(int64_value, 10) is an error).
  TypeRef t = iter.operands[0]->type;
  for (auto& a : iter.operands) {
    if (types::SameType(a->type, t)) continue;
    return Err(a->span, Cat("range() arguments must have one type; got ", t->ToString(), " and ",
                                     a->type->ToString()));
  }
  iter.type = t;
  iter.overload = builtins::Lookup("range").front();
  if (s.target->kind != ExprKind::Name) return Err(s.target->span, "the loop variable must be a plain name");
  SEMA_TRY(AssignName(*s.target, t, s.target->span));
  ++loop_depth_;
  SEMA_TRY(BlockSema(s.body));
  --loop_depth_;
  return absl::OkStatus();
}

}  // namespace internal

absl::Status Analyze(ir::Module& module) {
  bool any_kernel = false;
  for (const auto& f : module.functions) any_kernel |= f.kind == ir::FunctionKind::kKernel;
  if (!any_kernel) return absl::InvalidArgumentError("module '" + module.name + "' has no kernels");
  return internal::ModuleSema(module).Run();
}

}  // namespace warpd::sema
