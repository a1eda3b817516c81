#include "compiler/codegen/lane_blocks.h"

#include <algorithm>
#include <set>
#include <variant>

#include "compiler/builtins/builtins.h"

namespace warpd::codegen {
namespace {

bool IntegerScalar(tir::TypeRef t) {
  if (t == nullptr || !t->is_scalar()) return false;
  switch (t->scalar()) {
    case types::ScalarKind::kInt8:
    case types::ScalarKind::kInt16:
    case types::ScalarKind::kInt32:
    case types::ScalarKind::kInt64:
    case types::ScalarKind::kUInt8:
    case types::ScalarKind::kUInt16:
    case types::ScalarKind::kUInt32:
    case types::ScalarKind::kUInt64: return true;
    default: return false;
  }
}

bool Float32Scalar(tir::TypeRef t) {
  return t != nullptr && t->is_scalar() && t->scalar() == types::ScalarKind::kFloat32;
}

// Variables that some instruction writes (other than their declaration).
struct Writes : tir::Visitor<Writes> {
  void VisitStore(const tir::Store& i) { vars.insert(i.place.root); }
  void VisitBuiltin(const tir::Builtin& i) {
    for (const tir::Arg& a : i.args)
      if (a.mode == tir::Arg::Mode::kOut) vars.insert(a.place.root);
  }
  void VisitFor(const tir::For& i) {
    vars.insert(i.var);
    VisitBlock(i.body);
  }
  std::set<tir::VarId> vars;
};

// Walks the kernel: counts its loops and the ones lanes can share, and
// notes what rules lane blocks out.
class Scan : public tir::Visitor<Scan> {
 public:
  Scan(const tir::Function& kernel, const ThreadIndexed& fast) : kernel_(kernel), fast_(fast) {
    writes_.VisitBlock(kernel.body);
  }

  void VisitFor(const tir::For& i) {
    ++loops;
    if (Uniform(i)) ++uniform_loops;
    if (depth_ > 0 || nested_ > 0) nested_loops = true;
    ++depth_;
    VisitBlock(i.body);
    --depth_;
  }
  void VisitIf(const tir::If& i) {
    ++nested_;
    VisitBlock(i.then_body);
    VisitBlock(i.else_body);
    --nested_;
  }
  void VisitBreak(const tir::Break&) { early_exit = true; }
  void VisitContinue(const tir::Continue&) { early_exit = true; }
  void VisitReturn(const tir::Return&) { early_exit = true; }
  void VisitTidCoords(const tir::TidCoords&) { ordered_effects = true; }
  void VisitWhile(const tir::While& i) {
    ++loops;
    ++depth_;
    VisitBlock(i.cond_body);
    VisitBlock(i.body);
    --depth_;
  }
  void VisitElementAddr(const tir::ElementAddr& i) {
    if (!fast_.accesses.contains(&i)) ordered_effects = true;
  }
  void VisitBuiltin(const tir::Builtin& i) {
    if (nested_ == 0 && LaneMathOf(kernel_, i) != LaneMath::kNone) ++lane_math_calls;
    if (i.overload == nullptr || i.overload->form != builtins::Form::kCall) ordered_effects = true;
    for (const tir::Arg& a : i.args) {
      if (a.mode == tir::Arg::Mode::kAddress) ordered_effects = true;
      if (a.mode == tir::Arg::Mode::kValue && a.value.type != nullptr && a.value.type->is_array()) {
        ordered_effects = true;
      }
    }
  }
  void VisitCallFunc(const tir::CallFunc&) { ordered_effects = true; }
  void VisitGrad(const tir::Grad&) { ordered_effects = true; }  // calls adjoints
  void VisitSubview(const tir::Subview&) { ordered_effects = true; }
  void VisitLocalArray(const tir::LocalArray&) { ordered_effects = true; }
  void VisitCheckIndex(const tir::CheckIndex&) { ordered_effects = true; }
  void VisitPrint(const tir::Print&) { ordered_effects = true; }

  int loops = 0;
  int uniform_loops = 0;  // loops every lane runs the same iterations of
  int lane_math_calls = 0;  // sin/cos calls outside any `if` (LaneMathOf)
  bool ordered_effects = false;
  bool nested_loops = false;  // a loop inside a loop or an `if`
  bool early_exit = false;    // break, continue or return

 private:
  // A constant, or an integer parameter nothing writes.
  bool Uniform(const tir::Operand& o) const {
    if (!o.is_var()) return std::holds_alternative<int64_t>(o.value);
    const tir::Var& v = kernel_.var(o.var);
    return v.kind == tir::VarKind::kParam && IntegerScalar(v.type) && !writes_.vars.contains(o.var);
  }

  bool Uniform(const tir::For& i) const {
    const int64_t* step = std::get_if<int64_t>(&i.step.value);
    if (i.step.is_var() || step == nullptr || *step == 0) return false;
    return Uniform(i.start) && Uniform(i.stop);
  }

  const tir::Function& kernel_;
  const ThreadIndexed& fast_;
  Writes writes_;
  int depth_ = 0;   // loops around the instruction visited
  int nested_ = 0;  // ifs around it
};

}  // namespace

bool RunsLaneBlocked(const tir::Function& kernel, const ThreadIndexed& fast) {
  if (fast.accesses.empty()) return false;  // no fast blocks
  uint64_t bytes = 0;
  for (const tir::Var& v : kernel.vars) {
    if (v.kind == tir::VarKind::kParam) continue;
    bytes += kLanes * (v.kind == tir::VarKind::kElementRef ? sizeof(void*) : std::max<uint64_t>(v.type->size(), 1));
  }
  if (bytes > kMaxLaneBytes) return false;
  Scan scan(kernel, fast);
  scan.VisitBlock(kernel.body);
  return (scan.loops > 0 || scan.lane_math_calls > 0) && scan.uniform_loops == scan.loops && !scan.nested_loops &&
         !scan.early_exit && !scan.ordered_effects;
}

bool AdjointRunsLaneBlocked(const tir::Function& kernel) {
  if (!RunsLaneBlocked(kernel, FindThreadIndexed(kernel))) return false;
  struct ParamWrites : tir::Visitor<ParamWrites> {
    const tir::Function& f;
    bool found = false;
    explicit ParamWrites(const tir::Function& fn) : f(fn) {}
    void Root(tir::VarId v) { found |= f.var(v).kind == tir::VarKind::kParam; }
    void VisitStore(const tir::Store& i) { Root(i.place.root); }
    void VisitBuiltin(const tir::Builtin& i) {
      for (const tir::Arg& a : i.args)
        if (a.mode == tir::Arg::Mode::kOut) Root(a.place.root);
    }
  } writes(kernel);
  writes.VisitBlock(kernel.body);
  return !writes.found;
}

LaneMath LaneMathOf(const tir::Function& kernel, const tir::Builtin& call) {
  if (call.overload == nullptr || call.dst == tir::kNoVar || call.args.size() != 1) return LaneMath::kNone;
  const LaneMath kind = call.overload->name == "sin"   ? LaneMath::kSin
                        : call.overload->name == "cos" ? LaneMath::kCos
                                                       : LaneMath::kNone;
  if (kind == LaneMath::kNone) return kind;
  const tir::Arg& a = call.args[0];
  // The lane call writes dst while it reads x: never the same variable.
  if (a.mode != tir::Arg::Mode::kValue || !a.value.is_var() || a.value.var == call.dst) return LaneMath::kNone;
  const tir::Var& arg = kernel.var(a.value.var);
  if (arg.kind == tir::VarKind::kParam || arg.kind == tir::VarKind::kElementRef) return LaneMath::kNone;
  if (!Float32Scalar(arg.type) || !Float32Scalar(kernel.var(call.dst).type)) return LaneMath::kNone;
  return kind;
}

}  // namespace warpd::codegen
