#include "compiler/codegen/adjoint.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/str_cat.h"
#include "compiler/builtins/adjoint.h"
#include "compiler/builtins/builtins.h"
#include "compiler/builtins/random_state.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/function_emitter.h"
#include "compiler/codegen/layout.h"
#include "compiler/codegen/thread_index.h"

namespace warpd::codegen {
namespace {

using namespace internal;  // NOLINT: codegen's own internals

std::string AdjBodySymbol(const std::string& kernel) { return "wpr_" + kernel; }

// Whether values of `t` can carry a gradient (a float somewhere in them).
bool CarriesGradient(TypeRef t) {
  if (!t) return false;
  switch (t->kind()) {
    case types::Kind::kScalar: return types::IsFloat(t->scalar());
    case types::Kind::kVector:
    case types::Kind::kMatrix:
    case types::Kind::kQuat:
    case types::Kind::kTransform: return types::IsFloat(t->scalar());
    case types::Kind::kArray: return CarriesGradient(t->element());
    case types::Kind::kStruct:
      for (const auto& m : t->members())
        if (CarriesGradient(m.type)) return true;
      return false;
    case types::Kind::kTuple:
      for (TypeRef e : t->elements())
        if (CarriesGradient(e)) return true;
      return false;
    case types::Kind::kQuery:
      // MeshQueryPoint / MeshQueryRay results (their u, v, t...; wp::adj_acc
      // in mesh.h); mesh_get's Mesh carries its arrays' gradients as arrays do.
      for (const auto& m : t->members())
        if (!m.type->is_array() && CarriesGradient(m.type)) return true;
      return false;
    default: return false;
  }
}

// How many scalars a flat value type holds (vectors, matrices,
// quaternions, transforms; 1 for a scalar; 0 for anything else).
int FlatSize(TypeRef t) {
  switch (t->kind()) {
    case types::Kind::kScalar: return 1;
    case types::Kind::kVector: return t->length();
    case types::Kind::kMatrix: return t->rows() * t->cols();
    case types::Kind::kQuat: return 4;
    case types::Kind::kTransform: return 7;
    default: return 0;
  }
}

class AdjointEmitter : public FunctionEmitter {
 public:
  // `loop_budget`: the bytes of a thread's stack each loop may keep its
  // iterations' starting values in.
  AdjointEmitter(const tir::Module& m, const tir::Function& f, Writer& w, std::vector<std::string>& errors,
                 size_t loop_budget, bool lanes = false)
      : FunctionEmitter(m, f, w, nullptr, lanes), errors_(errors), loop_budget_(loop_budget) {
    SetReplay();
    NumberSites(f.body);
    FindLocalArrays();
    if (lanes) {
      for (const auto& inst : f_.body) {  // what a lane loop runs at its top level
        lane_top_.insert(inst.get());
        if (inst->kind == tir::InstKind::For)
          for (const auto& b : tir::Cast<tir::For>(*inst).body) lane_top_.insert(b.get());
      }
      FindLaneUniform();
      FindReplayDead();
    }
  }

  // A kernel's element references that are the thread's own (thread_index.h).
  void SetExclusive(ThreadExclusive exclusive) { exclusive_ = std::move(exclusive); }

  // Lanes: the thread-indexed accesses (thread_index.h), taken without
  // checks; the lane body then runs only in blocks where every one of them
  // (and its gradient's) is in bounds (EmitKernelAdjoint's fast_end).
  void SetUnchecked(const std::set<const tir::ElementAddr*>* accesses) {
    unchecked_ = accesses;
    for (const tir::ElementAddr* a : *accesses) fast_refs_.insert(a->dst);
  }

  // The whole adjoint body: declarations, the forward replay, the reverse sweep.
  void AdjointBody() {
    for (size_t v = 0; v < f_.vars.size(); ++v) {
      const tir::Var& var = f_.vars[v];
      const tir::VarId id = static_cast<tir::VarId>(v);
      if (var.kind == tir::VarKind::kParam) continue;
      if (var.kind == tir::VarKind::kElementRef) {
        w_.Line(Type(id) + "* " + Name(id) + " = nullptr; " + Type(id) + "* " + Adj(id) + " = nullptr; bool " +
                Consume(id) + " = false;" +
                (exclusive_.refs.contains(id) ? " bool " + Exclusive(id) + " = false;" : std::string()));
      } else {
        w_.Line(Type(id) + " " + Name(id) + "{}; " + Type(id) + " " + Adj(id) + "{};");
      }
    }
    DeclareFrame(/*locals=*/false);
    for (const auto& [inst, name] : storage_) {
      int n = 1;
      for (int d : inst->shape) n *= d;
      w_.Line(f_.var(inst->dst).type->element()->CppName() + " a" + name + "[" + std::to_string(n) + "];");
    }
    w_.Line("wp::int32 _rs = 2147483647;");
    for (int l = 0; l < loops_; ++l) {
      w_.Line("wp::int64 _n" + std::to_string(l) + " = 0; wp::int32 _ls" + std::to_string(l) + " = 2147483647;");
      if (capacity_[static_cast<size_t>(l)] == 0) continue;
      for (tir::VarId v : carried_[static_cast<size_t>(l)]) {
        const std::string cap = std::to_string(capacity_[static_cast<size_t>(l)]);
        w_.Line(Type(v) + " " + SnapName(l, v, false) + "[" + cap + "];");
        if (f_.var(v).type->is_array()) w_.Line(Type(v) + " " + SnapName(l, v, true) + "[" + cap + "];");
      }
    }
    w_.Line("(void)_rs;");
    // The forward replay; a return jumps past it.
    frames_.clear();
    w_.Open("{");
    VisitBlock(f_.body);
    w_.Close();
    w_.Line("wp_fwd_end:;");
    Reverse(f_.body, -1);
  }

  // The stack a lane-blocked adjoint body takes: every variable and its
  // adjoint (and flags) per lane, and the loops' kept values.
  uint64_t LaneBytes() const {
    uint64_t bytes = 0;
    for (const tir::Var& v : f_.vars)
      bytes += v.kind == tir::VarKind::kElementRef ? 2 * sizeof(void*) + 2 : 2 * std::max<uint64_t>(v.type->size(), 1);
    for (size_t l = 0; l < carried_.size(); ++l)
      for (tir::VarId v : carried_[l])
        if (!Dead(v)) bytes += capacity_[l] * f_.var(v).type->size() * (f_.var(v).type->is_array() ? 2 : 1);
    for (const tir::Inst* inst : lane_top_)  // the other function a lane sin or cos keeps (_gp)
      if (inst->kind == tir::InstKind::Builtin && IsLaneTrig(tir::Cast<tir::Builtin>(*inst))) bytes += 4;
    return bytes * static_cast<uint64_t>(kLanes);
  }

  // The lane-blocked adjoint body (a kernel for which
  // AdjointRunsLaneBlocked holds; lane_blocks.h): kLanes thread ids from
  // _t0, every variable and adjoint an array indexed by the lane. As the
  // forward lane-blocked body, each stretch of the kernel's top-level
  // instructions between its loops is one loop over the lanes and each loop
  // runs its iterations (all lanes the same ones) around a loop over the
  // lanes: in the forward replay, then in the reverse sweep (each
  // iteration's restore, replay and reverse in one lane loop). Each lane
  // runs the scalar adjoint's operations in the scalar adjoint's order.
  void LanesAdjointBody() {
    const std::string lanes = std::to_string(kLanes);
    for (size_t v = 0; v < f_.vars.size(); ++v) {
      const tir::Var& var = f_.vars[v];
      const tir::VarId id = static_cast<tir::VarId>(v);
      const std::string base = BaseName(id);
      // Zeroing the lane arrays costs as much as a small kernel's work: only
      // what may be read before it is written starts at zero (locals, slots,
      // adjoints that accumulate); temporaries and element references are
      // written first (an array temporary's adjoint, its gradient array, too).
      const std::string n = "[" + lanes + "]";
      if (var.kind == tir::VarKind::kParam) {
        w_.Line(Type(id) + " a" + base + (UniformAdj(id) ? " = adj.p_" + var.name : n) + ";");
      } else if (var.kind == tir::VarKind::kElementRef && fast_refs_.contains(id)) {
        // Its gradient's presence and flags are the array's: one copy.
        w_.Line(Type(id) + "* " + base + n + "; " + Type(id) + "* a" + base + n + "; bool p" + base + " = false, c" +
                base + " = false" + (exclusive_.refs.contains(id) ? ", x" + base + " = false;" : ";"));
      } else if (var.kind == tir::VarKind::kElementRef) {
        w_.Line(Type(id) + "* " + base + n + "; " + Type(id) + "* a" + base + n + "; bool c" + base + n + ";" +
                (exclusive_.refs.contains(id) ? " bool x" + base + n + ";" : ""));
      } else if (lane_uniform_.contains(id)) {
        w_.Line(Type(id) + " " + base + "; " + Type(id) + " a" + base + ";");
      } else if (var.kind == tir::VarKind::kTemp) {
        // A dead value (FindReplayDead) is never computed, but a native
        // adjoint may still take it as an argument: zero, not indeterminate.
        w_.Line(Type(id) + " " + base + n + (Dead(id) ? "{}" : "") + "; " + Type(id) + " a" + base + n +
                (var.type->is_array() ? ";" : "{};"));
      } else {
        w_.Line(Type(id) + " " + base + n + "{}; " + Type(id) + " a" + base + n + "{};");
      }
    }
    std::string params;
    for (size_t v = 0; v < f_.source->params.size(); ++v)
      if (!UniformAdj(static_cast<tir::VarId>(v)))
        params += " a" + BaseName(static_cast<tir::VarId>(v)) + "[_l] = adj.p_" + f_.source->params[v].name + ";";
    if (!params.empty()) w_.Line("for (int _l = 0; _l < " + lanes + "; ++_l) {" + params + " }");
    w_.Line("wp::float32 _gsc[" + lanes + "];  // sin or cos for an adjoint (ReverseBuiltin)");
    auto partners = [&](const tir::Block& block) {
      for (const auto& inst : block)
        if (inst->kind == tir::InstKind::Builtin && IsLaneTrig(tir::Cast<tir::Builtin>(*inst)))
          w_.Line("wp::float32 " + PartnerName(tir::Cast<tir::Builtin>(*inst)) + "[" + lanes + "];");
    };
    partners(f_.body);
    for (const auto& inst : f_.body)
      if (inst->kind == tir::InstKind::For) partners(tir::Cast<tir::For>(*inst).body);
    for (int l = 0; l < loops_; ++l) {
      w_.Line("wp::int64 _n" + std::to_string(l) + " = 0;");
      if (capacity_[static_cast<size_t>(l)] == 0) continue;
      for (tir::VarId v : carried_[static_cast<size_t>(l)]) {
        if (Dead(v)) continue;  // never kept (Snapshot)
        const std::string dims = "[" + std::to_string(capacity_[static_cast<size_t>(l)]) + "][" + lanes + "]";
        w_.Line(Type(v) + " " + SnapName(l, v, false) + dims + ";");
        if (f_.var(v).type->is_array()) w_.Line(Type(v) + " " + SnapName(l, v, true) + dims + ";");
      }
    }
    frames_.clear();
    std::vector<const tir::Inst*> stretch;
    auto flush = [&](bool reverse) {
      if (stretch.empty()) return;
      OpenLanes();
      for (const tir::Inst* inst : stretch) reverse ? ReverseInst(*inst, -1) : Visit(*inst);
      w_.Close();
      stretch.clear();
    };
    for (const auto& inst : f_.body) {  // the forward replay
      if (inst->kind != tir::InstKind::For) {
        stretch.push_back(inst.get());
        continue;
      }
      flush(false);
      LanesReplayFor(tir::Cast<tir::For>(*inst));
    }
    flush(false);
    for (size_t k = f_.body.size(); k-- > 0;) {  // the reverse sweep
      const tir::Inst& inst = *f_.body[k];
      if (inst.kind != tir::InstKind::For) {
        stretch.push_back(&inst);
        continue;
      }
      flush(true);
      LanesReverseFor(tir::Cast<tir::For>(inst));
    }
    flush(true);
  }

  // ------------------------------------------------------------ forward replay

  // The replay prints as the forward pass did (Warp's adjoints do too), once:
  // a loop iteration replayed again for its reverse sweep prints nothing.
  void VisitPrint(const tir::Print& i) override {
    if (!quiet_) FunctionEmitter::VisitPrint(i);
  }

  // A function with a custom replay (@wp.func_replay) recomputes through it.
  void VisitCallFunc(const tir::CallFunc& i) override {
    const ir::Function& callee = m_.source->functions[static_cast<size_t>(i.function)];
    const ir::Function* replay = callee.custom_replay.empty() ? nullptr : FunctionNamed(callee.custom_replay);
    if (!callee.custom_replay.empty() &&
        (!replay || replay->params.size() != callee.params.size() ||
         !types::SameType(replay->return_type, callee.return_type))) {
      Error(i.span, Cat("the custom replay of '", callee.display_name, "' does not take its parameters and "
                        "return its result type"));
      return;
    }
    if (!replay) return FunctionEmitter::VisitCallFunc(i);
    std::string args = "ctx, _tid";
    for (const auto& a : i.args) args += ", " + Op(a);
    const std::string call = FuncSymbol(replay->name) + "(" + args + ")";
    if (i.dst == tir::kNoVar) {
      w_.Line(call + ";");
    } else {
      Define(i.dst, call);
    }
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
  }

  void VisitBuiltin(const tir::Builtin& i) override {
    if (IsLaneTrig(i)) {
      // Where this instruction's reverse follows this replay (not in a
      // loop's first replay: the reverse sweep replays each iteration
      // again), the function its adjoint needs (cos for sin, sin for cos)
      // comes from the same call, kept in _gp<N> (ReverseBuiltin).
      const bool sin = LaneMathOf(f_, i) == LaneMath::kSin;
      const bool value = !Dead(i.dst), partner = !in_loop_replay_;
      if (!value && !partner) return;
      const std::string k = std::to_string(kLanes), dst = value ? BaseName(i.dst) : "nullptr";
      const std::string other = partner ? PartnerName(i) : "nullptr";
      if (partner) partnered_.insert(&i);
      const std::string sin_out = sin ? dst : other, cos_out = sin ? other : dst;
      LaneTrig(i, std::string("wp::sincos_lanes<") + k + (sin_out != "nullptr" ? ", true, " : ", false, ") +
                      (cos_out != "nullptr" ? "true>(" : "false>(") + sin_out + ", " + cos_out + ", " +
                      BaseName(i.args[0].value.var) + ");");
      return;
    }
    if (i.dst != tir::kNoVar && Dead(i.dst) && ReplaySkippable(i)) return;
    if (i.overload->form == builtins::Form::kAtomic) {
      // Not applied again; an atomic's result (the old value) reads as the
      // element's value now.
      const tir::Arg* ref = nullptr;
      for (const tir::Arg& a : i.args)
        if (a.mode == tir::Arg::Mode::kAddress) ref = &a;
      if (ref && local_refs_.contains(ref->value.var)) return FunctionEmitter::VisitBuiltin(i);
      if (i.dst != tir::kNoVar) Define(i.dst, ref ? "*" + Name(ref->value.var) : Type(i.dst) + "{}");
      return;
    }
    FunctionEmitter::VisitBuiltin(i);
    if (!i.overload->grad_arrays.empty() && i.dst != tir::kNoVar) {
      std::vector<std::string> args;
      for (const tir::Arg& a : i.args) args.push_back(a.mode == tir::Arg::Mode::kValue ? Op(a.value) : "{}");
      w_.Line(Adj(i.dst) + " = " + builtins::Spell(std::string(i.overload->grad_arrays), {.args = &args}) + ";");
    }
    if (i.overload->name == "struct" && i.dst != tir::kNoVar && HoldsArray(f_.var(i.dst).type)) {
      const auto& members = f_.var(i.dst).type->members();
      for (const auto& [m, k] : StructConstructorArgs(i))
        if (HoldsArray(members[m].type))
          CopyArrayAdjoints(members[m].type, Adj(i.dst) + ".m_" + members[m].name, Adj(i.args[k].value.var));
    }
  }

  // An array's adjoint is its gradient array, which goes where the array goes
  // in the replay: loaded into a variable, stored into a struct member, put
  // into a struct by its constructor. Values holding arrays (structs with array
  // members, at any depth) carry their arrays' gradients the same way.
  void VisitLoad(const tir::Load& i) override {
    if (Dead(i.dst)) return;
    FunctionEmitter::VisitLoad(i);
    const TypeRef t = f_.var(i.dst).type;
    if (!HoldsArray(t)) return;
    if (f_.var(i.place.root).kind == tir::VarKind::kElementRef) {
      if (t->is_array()) w_.Line(Adj(i.dst) + " = {};");
    } else {
      CopyArrayAdjoints(t, Adj(i.dst), AdjPlace(i.place, false));
    }
  }

  void VisitStore(const tir::Store& i) override {
    // The forward launch wrote the arrays; the replay only recomputes values
    // (a kernel's own local arrays excepted: it reads them back).
    if (f_.var(i.place.root).kind == tir::VarKind::kElementRef && !local_refs_.contains(i.place.root)) return;
    if (Dead(i.place.root)) return;
    FunctionEmitter::VisitStore(i);
    if (!HoldsArray(i.place.type) || f_.var(i.place.root).kind == tir::VarKind::kElementRef) return;
    if (i.value.is_var()) {
      CopyArrayAdjoints(i.place.type, AdjPlace(i.place, true), Adj(i.value.var));
    } else if (i.place.type->is_array()) {
      w_.Line(AdjPlace(i.place, true) + " = {};");
    }
  }

  // Whether values of `t` hold an array (an array, or a struct or query
  // value with one at any depth: mesh_get's Mesh).
  static bool HoldsArray(TypeRef t) {
    if (t->is_array()) return true;
    if (!t->is_struct() && !t->is_query()) return false;
    for (const auto& m : t->members())
      if (HoldsArray(m.type)) return true;
    return false;
  }

  // dst's array members (or dst itself, an array) = src's: their gradients.
  void CopyArrayAdjoints(TypeRef t, const std::string& dst, const std::string& src) {
    if (t->is_array()) {
      w_.Line(dst + " = " + src + ";");
      return;
    }
    const std::string dot = t->is_query() ? "." : ".m_";  // a query's fields keep their names
    for (const auto& m : t->members())
      if (HoldsArray(m.type)) CopyArrayAdjoints(m.type, dst + dot + m.name, src + dot + m.name);
  }

  // S(a, b, ...)'s spelling "S{${0}, {}, ${1}}" (members in order, {} where
  // none was given): for each member given by a value argument, (member, argument).
  std::vector<std::pair<size_t, size_t>> StructConstructorArgs(const tir::Builtin& i) const {
    std::vector<std::pair<size_t, size_t>> out;
    TypeRef t = f_.var(i.dst).type;
    const std::string& cpp = i.callee;
    size_t open = cpp.find('{');
    if (!t->is_struct() || open == std::string::npos) return out;
    std::vector<std::string> entries;
    int depth = 0;
    std::string cur;
    for (size_t k = open + 1; k < cpp.size(); ++k) {
      char c = cpp[k];
      if (c == '{') ++depth;
      if (c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) {
        entries.push_back(cur);
        cur.clear();
        continue;
      }
      if (c != ' ') cur += c;
    }
    entries.push_back(cur);
    for (size_t m = 0; m < t->members().size() && m < entries.size(); ++m) {
      const std::string& e = entries[m];
      if (e.size() < 4 || e[0] != '$' || e[1] != '{') continue;
      const size_t k = static_cast<size_t>(std::atoi(e.c_str() + 2));
      if (k >= i.args.size() || i.args[k].mode != tir::Arg::Mode::kValue || !i.args[k].value.is_var()) continue;
      out.emplace_back(m, k);
    }
    return out;
  }

  void VisitElementAddr(const tir::ElementAddr& i) override {
    if (lanes_ && fast_refs_.contains(i.dst) && unchecked_ != nullptr && unchecked_->contains(&i) && i.array.is_var() &&
        UniformAdj(i.array.var)) {
      // A fast block's thread-indexed access: in bounds, as its gradient's
      // (absent, or long enough: fast_end); flags the same in every lane.
      FunctionEmitter::VisitElementAddr(i);
      const std::string g = AdjOp(i.array), b = BaseName(i.dst), idx = "(wp::int64)" + Op(i.indices[0]);
      w_.Line("p" + b + " = wp::adj_present(" + g + ");");
      w_.Line(Adj(i.dst) + " = p" + b + " ? wp::element_in_block(" + g + ", " + idx + ") : nullptr;");
      w_.Line("c" + b + " = " + (local_refs_.contains(i.dst) ? std::string("true") : "wp::adj_consumes(" + g + ")") +
              ";");
      if (exclusive_.refs.contains(i.dst)) w_.Line("x" + b + " = wp::adj_exclusive(" + g + ");");
      return;
    }
    FunctionEmitter::VisitElementAddr(i);
    std::string args = "ctx, " + AdjOp(i.array) + ", " + Line(i.span);
    for (const auto& k : i.indices) args += ", (wp::int64)" + Op(k);
    w_.Line(Adj(i.dst) + " = wp::adj_address(" + args + ");");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    // A function's own local arrays are its to consume, like its locals.
    w_.Line(Consume(i.dst) + " = " +
            (local_refs_.contains(i.dst) ? std::string("true") : "wp::adj_consumes(" + AdjOp(i.array) + ")") + ";");
    // The thread's own element of a gradient no other thread touches
    // (thread_index.h): accumulated without an atomic when the runtime says
    // the launch's gradient arrays do not share memory.
    if (exclusive_.refs.contains(i.dst)) w_.Line(Exclusive(i.dst) + " = wp::adj_exclusive(" + AdjOp(i.array) + ");");
  }

  void VisitSubview(const tir::Subview& i) override {
    FunctionEmitter::VisitSubview(i);
    // The same view of the gradient array (none without one).
    const std::string adj = AdjOp(i.array);
    w_.Line(Adj(i.dst) + " = {};");
    w_.Open("if (wp::adj_present(" + adj + ")) {");
    if (!i.slices.empty()) {
      std::string values, kinds;
      for (const auto& k : i.indices) values += (values.empty() ? "" : ", ") + std::string("(wp::int64)") + Op(k);
      for (bool s : i.slices) kinds += (kinds.empty() ? "" : ", ") + std::string(s ? "1" : "0");
      w_.Line("const wp::int64 sv[] = {" + values + "};");
      w_.Line("const wp::int32 sk[] = {" + kinds + "};");
      w_.Line("if (WP_UNLIKELY(!wp::slice_view(ctx, " + adj + ", " + Line(i.span) + ", sv, sk, " +
              std::to_string(i.slices.size()) + ", &" + Adj(i.dst) + "))) return;");
    } else {
      std::string args = "ctx, " + adj + ", " + Line(i.span);
      for (const auto& k : i.indices) args += ", (wp::int64)" + Op(k);
      w_.Line("if (WP_UNLIKELY(!wp::subview(" + args + ", &" + Adj(i.dst) + "))) return;");
    }
    w_.Close();
  }

  void VisitLocalArray(const tir::LocalArray& i) override {
    FunctionEmitter::VisitLocalArray(i);
    std::string args = "a" + storage_.at(&i) + ", " + std::to_string(i.shape.size());
    for (size_t d = 0; d < 4; ++d) args += ", " + std::to_string(d < i.shape.size() ? i.shape[d] : 0);
    w_.Line(Adj(i.dst) + " = wp::local_array(" + args + ");");
  }

  void VisitFor(const tir::For& i) override {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l);
    std::string it = "it" + std::to_string(next_coords_++);
    std::string lo = it + "_lo", hi = it + "_hi", st = it + "_st";
    w_.Line("const wp::int64 " + lo + " = (wp::int64)" + Op(i.start) + ", " + hi + " = (wp::int64)" + Op(i.stop) +
            ", " + st + " = (wp::int64)" + Op(i.step) + ";");
    w_.Line(n + " = 0;");
    w_.Open("for (wp::int64 " + it + " = " + lo + "; " + st + " > 0 ? " + it + " < " + hi + " : (" + st + " < 0 && " +
            it + " > " + hi + "); " + it + " += " + st + ") {");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    Snapshot(l, n);
    w_.Line("++" + n + ";");
    w_.Line(Name(i.var) + " = (" + Type(i.var) + ")" + it + ";");
    frames_.push_back(-1);  // a loop running natively: break and continue are C++'s
    VisitBlock(i.body);
    frames_.pop_back();
    w_.Close();
  }

  void VisitWhile(const tir::While& i) override {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l);
    w_.Line(n + " = 0;");
    w_.Open("for (;;) {");
    Snapshot(l, n);
    frames_.push_back(-1);
    VisitBlock(i.cond_body);
    w_.Line("if (!(" + Op(i.cond) + ")) break;");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    w_.Line("++" + n + ";");
    VisitBlock(i.body);
    frames_.pop_back();
    w_.Close();
  }

  void VisitBreak(const tir::Break& i) override { Exit(i, "break;"); }
  void VisitContinue(const tir::Continue& i) override { Exit(i, "continue;"); }

  void VisitReturn(const tir::Return& i) override {
    // Out of every loop: to the end of the iteration being replayed, or of
    // the forward pass.
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
      if (*f >= 0) {
        w_.Line("{ _ls" + std::to_string(*f) + " = " + std::to_string(sites_.at(&i)) + "; goto wp_iter" +
                std::to_string(*f) + "; }");
        return;
      }
    }
    w_.Line("{ _rs = " + std::to_string(sites_.at(&i)) + "; goto wp_fwd_end; }");
  }

 private:
  // ---------------------------------------------------------------- naming

  // In a lane-blocked adjoint every adjoint (a parameter's too) and flag
  // is an array indexed by the lane.
  std::string Lane(std::string s) const { return lanes_ ? s + "[_l]" : s; }
  std::string Adj(tir::VarId v) const { return UniformAdj(v) ? "a" + BaseName(v) : Lane("a" + BaseName(v)); }
  std::string Consume(tir::VarId v) const { return FastRef(v) ? "c" + BaseName(v) : Lane("c" + BaseName(v)); }
  std::string Exclusive(tir::VarId v) const { return FastRef(v) ? "x" + BaseName(v) : Lane("x" + BaseName(v)); }
  // Whether an element reference's gradient element exists (a pointer, or
  // for a fast lane access its array's presence).
  std::string Present(tir::VarId v) const { return FastRef(v) ? "p" + BaseName(v) : Adj(v); }
  bool FastRef(tir::VarId v) const { return lanes_ && fast_refs_.contains(v); }
  // Lanes: an array parameter's adjoint (its gradient array's descriptor)
  // and a variable holding the same value in every lane, with its adjoint.
  bool UniformAdj(tir::VarId v) const {
    if (!lanes_) return false;
    const tir::Var& var = f_.var(v);
    return (var.kind == tir::VarKind::kParam && var.type->is_array()) || lane_uniform_.contains(v);
  }

  // Lanes: the array temporaries that copy an array parameter (the explicit
  // reads of tir::MakeReadsExplicit; a lane-blocked kernel never writes its
  // parameters): the same descriptor in every lane, kept once.
  void FindLaneUniform() {
    struct Loads : tir::Visitor<Loads> {
      const tir::Function& f;
      std::map<tir::VarId, int> defs;
      std::set<tir::VarId> copies;
      explicit Loads(const tir::Function& fn) : f(fn) {}
      void VisitLoad(const tir::Load& i) {
        ++defs[i.dst];
        if (i.place.steps.empty() && f.var(i.place.root).kind == tir::VarKind::kParam && f.var(i.dst).type->is_array())
          copies.insert(i.dst);
      }
      void VisitBuiltin(const tir::Builtin& i) {
        if (i.dst != tir::kNoVar) ++defs[i.dst];
      }
    } loads(f_);
    loads.VisitBlock(f_.body);
    for (tir::VarId v : loads.copies)
      if (f_.var(v).kind == tir::VarKind::kTemp && loads.defs[v] == 1) lane_uniform_.insert(v);
  }
  // Lanes: the variables whose values the adjoint needs, the rest of the
  // replay being dead (replay_dead_): the reverse sweep reads a builtin's
  // arguments (none for add, sub, neg and pos; for mul, an argument only
  // when the other is a variable; for a lane sin or cos, the argument, whose
  // other function it takes), loops their bounds, accesses their arrays and
  // indices, branches their conditions; a value computed for a needed one
  // is needed. A replay that skips a dead value's computation gives the
  // same gradients: in `for k in range(n): s += sin(v * k)`, the sum and
  // each sin are dead (only each cos is needed), so the lanes' replay runs
  // no sin at all. Kernels with instructions outside that set keep every
  // value.
  void FindReplayDead() {
    std::vector<bool> needed(f_.vars.size(), false);
    bool all = false;
    auto need = [&](const tir::Operand& o) {
      if (o.is_var()) needed[static_cast<size_t>(o.var)] = true;
    };
    auto need_steps = [&](const tir::Place& p) {
      for (const tir::Step& st : p.steps) {
        need(st.index);
        need(st.index2);
      }
    };
    std::vector<const tir::Inst*> insts;
    std::function<void(const tir::Block&)> collect = [&](const tir::Block& b) {
      for (const auto& inst : b) {
        insts.push_back(inst.get());
        if (inst->kind == tir::InstKind::For) collect(tir::Cast<tir::For>(*inst).body);
        if (inst->kind == tir::InstKind::If) {
          collect(tir::Cast<tir::If>(*inst).then_body);
          collect(tir::Cast<tir::If>(*inst).else_body);
        }
      }
    };
    collect(f_.body);
    for (const tir::Inst* inst : insts) {  // what the reverse sweep and the control need
      switch (inst->kind) {
        case tir::InstKind::Builtin: {
          const auto& i = tir::Cast<tir::Builtin>(*inst);
          const std::string_view name = i.overload ? std::string_view(i.overload->name) : std::string_view();
          if (!ReplaySkippable(i) || IsLaneTrig(i)) {
            for (const tir::Arg& a : i.args) need(a.value);
          } else if (name == "add" || name == "sub" || name == "neg" || name == "pos") {
          } else if (name == "mul" && i.args.size() == 2) {
            if (i.args[1].value.is_var()) need(i.args[0].value);
            if (i.args[0].value.is_var()) need(i.args[1].value);
          } else {
            for (const tir::Arg& a : i.args) need(a.value);
          }
          for (const tir::Arg& a : i.args)
            if (a.mode == tir::Arg::Mode::kOut) {
              needed[static_cast<size_t>(a.place.root)] = true;
              need_steps(a.place);
            }
          break;
        }
        case tir::InstKind::ElementAddr: {
          const auto& i = tir::Cast<tir::ElementAddr>(*inst);
          need(i.array);
          for (const auto& k : i.indices) need(k);
          needed[static_cast<size_t>(i.dst)] = true;
          break;
        }
        case tir::InstKind::For: {
          const auto& i = tir::Cast<tir::For>(*inst);
          need(i.start);
          need(i.stop);
          need(i.step);
          break;
        }
        case tir::InstKind::If: need(tir::Cast<tir::If>(*inst).cond); break;
        case tir::InstKind::Store: {
          const auto& i = tir::Cast<tir::Store>(*inst);
          if (f_.var(i.place.root).kind == tir::VarKind::kElementRef || HoldsArray(i.place.type)) {
            need_steps(i.place);
            if (HoldsArray(i.place.type) || local_refs_.contains(i.place.root)) need(i.value);
          }
          break;
        }
        case tir::InstKind::Load: {
          const auto& i = tir::Cast<tir::Load>(*inst);
          if (HoldsArray(f_.var(i.dst).type)) {
            needed[static_cast<size_t>(i.dst)] = true;
            needed[static_cast<size_t>(i.place.root)] = true;
            need_steps(i.place);
          }
          break;
        }
        case tir::InstKind::Declare:
        case tir::InstKind::Tid: break;
        default: all = true;
      }
    }
    if (all) return;
    for (bool changed = true; changed;) {  // what the needed values are computed from
      changed = false;
      auto mark = [&](const tir::Operand& o) {
        if (o.is_var() && !needed[static_cast<size_t>(o.var)]) {
          needed[static_cast<size_t>(o.var)] = true;
          changed = true;
        }
      };
      auto mark_steps = [&](const tir::Place& p) {
        for (const tir::Step& st : p.steps) {
          mark(st.index);
          mark(st.index2);
        }
      };
      for (const tir::Inst* inst : insts) {
        if (inst->kind == tir::InstKind::Builtin) {
          const auto& i = tir::Cast<tir::Builtin>(*inst);
          if (i.dst != tir::kNoVar && needed[static_cast<size_t>(i.dst)])
            for (const tir::Arg& a : i.args) mark(a.value);
        } else if (inst->kind == tir::InstKind::Load) {
          const auto& i = tir::Cast<tir::Load>(*inst);
          if (needed[static_cast<size_t>(i.dst)]) {
            mark(tir::Operand::Of(i.place.root, f_.var(i.place.root).type));
            mark_steps(i.place);
          }
        } else if (inst->kind == tir::InstKind::Store) {
          const auto& i = tir::Cast<tir::Store>(*inst);
          if (f_.var(i.place.root).kind != tir::VarKind::kElementRef && needed[static_cast<size_t>(i.place.root)]) {
            mark(i.value);
            mark_steps(i.place);
          }
        }
      }
    }
    for (size_t v = 0; v < needed.size(); ++v)
      if (!needed[v] && f_.vars[v].kind != tir::VarKind::kParam) replay_dead_.insert(static_cast<tir::VarId>(v));
  }
  bool Dead(tir::VarId v) const { return lanes_ && replay_dead_.contains(v); }
  // Whether a builtin's replay may be left out when its result is dead: no
  // output arguments, no state it advances, no fault it may record.
  static bool ReplaySkippable(const tir::Builtin& i) {
    if (i.dst == tir::kNoVar || i.overload == nullptr || i.overload->form == builtins::Form::kAtomic) return false;
    if (i.callee.find("$L") != std::string::npos) return false;
    for (size_t k = 0; k < i.args.size(); ++k)
      if (i.args[k].mode != tir::Arg::Mode::kValue || builtins::AdvancesState(*i.overload, k)) return false;
    return true;
  }

  std::string AdjOp(const tir::Operand& o) const { return o.is_var() ? Adj(o.var) : "{}"; }
  std::string AdjPlace(const tir::Place& p, bool lvalue) const {
    const std::string root = Adj(p.root);
    return PlaceText(p, lvalue, &root);
  }

  void Error(const ir::Span& span, const std::string& message) {
    errors_.push_back(Cat(m_.source->Where(span), ": error: ", message));
  }

  // Element references into the function's own local arrays (wp.zeros in
  // kernels): the variables holding such arrays (through array locals and
  // subviews, to a fixpoint), then the references taken from them.
  void FindLocalArrays() {
    struct Walk : tir::Visitor<Walk> {
      std::set<tir::VarId>& arrays;
      std::set<tir::VarId>& refs;
      const tir::Function& f;
      bool changed = false;
      Walk(std::set<tir::VarId>& a, std::set<tir::VarId>& r, const tir::Function& fn) : arrays(a), refs(r), f(fn) {}
      void Add(std::set<tir::VarId>& s, tir::VarId v) { changed |= s.insert(v).second; }
      void VisitLocalArray(const tir::LocalArray& i) { Add(arrays, i.dst); }
      void VisitLoad(const tir::Load& i) {
        if (i.place.steps.empty() && arrays.contains(i.place.root)) Add(arrays, i.dst);
      }
      void VisitStore(const tir::Store& i) {
        if (i.place.steps.empty() && i.value.is_var() && arrays.contains(i.value.var)) Add(arrays, i.place.root);
      }
      void VisitSubview(const tir::Subview& i) {
        if (i.array.is_var() && arrays.contains(i.array.var)) Add(arrays, i.dst);
      }
      void VisitElementAddr(const tir::ElementAddr& i) {
        if (i.array.is_var() && arrays.contains(i.array.var)) Add(refs, i.dst);
      }
    };
    std::set<tir::VarId> arrays;
    for (;;) {
      Walk w(arrays, local_refs_, f_);
      w.VisitBlock(f_.body);
      if (!w.changed) break;
    }
  }

  // ---------------------------------------------------- exits and their sites

  // Numbers returns, breaks and continues in order, and the loops.
  void NumberSites(const tir::Block& b) {
    for (const auto& inst : b) {
      switch (inst->kind) {
        case tir::InstKind::Break:
        case tir::InstKind::Continue:
        case tir::InstKind::Return: sites_[inst.get()] = next_site_++; break;
        case tir::InstKind::If:
          NumberSites(tir::Cast<tir::If>(*inst).then_body);
          NumberSites(tir::Cast<tir::If>(*inst).else_body);
          break;
        case tir::InstKind::For:
          loop_of_[inst.get()] = loops_++;
          Carried(*inst);
          NumberSites(tir::Cast<tir::For>(*inst).body);
          break;
        case tir::InstKind::While:
          loop_of_[inst.get()] = loops_++;
          Carried(*inst);
          NumberSites(tir::Cast<tir::While>(*inst).cond_body);
          NumberSites(tir::Cast<tir::While>(*inst).body);
          break;
        default: break;
      }
    }
  }

  // The highest site in `inst` that ends the block it is in, for a block of
  // the function's body (loop -1: returns only) or of loop `loop`'s body
  // (returns, and breaks and continues outside nested loops); -1 if none.
  int MaxSite(const tir::Inst& inst, int loop, bool nested = false) const {
    switch (inst.kind) {
      case tir::InstKind::Return: return sites_.at(&inst);
      case tir::InstKind::Break:
      case tir::InstKind::Continue: return loop >= 0 && !nested ? sites_.at(&inst) : -1;
      case tir::InstKind::If: {
        int m = -1;
        for (const auto& i : tir::Cast<tir::If>(inst).then_body) m = std::max(m, MaxSite(*i, loop, nested));
        for (const auto& i : tir::Cast<tir::If>(inst).else_body) m = std::max(m, MaxSite(*i, loop, nested));
        return m;
      }
      case tir::InstKind::For: {
        int m = -1;
        for (const auto& i : tir::Cast<tir::For>(inst).body) m = std::max(m, MaxSite(*i, loop, true));
        return m;
      }
      case tir::InstKind::While: {
        int m = -1;
        for (const auto& i : tir::Cast<tir::While>(inst).cond_body) m = std::max(m, MaxSite(*i, loop, true));
        for (const auto& i : tir::Cast<tir::While>(inst).body) m = std::max(m, MaxSite(*i, loop, true));
        return m;
      }
      default: return -1;
    }
  }

  // The mutable variables a loop writes (its own variable aside): their
  // values at the start of each iteration are kept, up to a capacity, so
  // the reverse sweep replays each iteration from the values it started
  // with. Past the capacity an iteration replays from the values the
  // variables have then (Warp's rule for every dynamic loop).
  void Carried(const tir::Inst& loop) {
    struct Writes : tir::Visitor<Writes> {
      const tir::Function& f;
      std::set<tir::VarId> vars;
      explicit Writes(const tir::Function& fn) : f(fn) {}
      void Add(tir::VarId v) {
        const tir::VarKind k = f.var(v).kind;
        if (k == tir::VarKind::kLocal || k == tir::VarKind::kParam || k == tir::VarKind::kSlot) vars.insert(v);
      }
      void VisitStore(const tir::Store& i) { Add(i.place.root); }
      void VisitBuiltin(const tir::Builtin& i) {
        for (size_t k = 0; k < i.args.size(); ++k) {
          const tir::Arg& a = i.args[k];
          if (a.mode == tir::Arg::Mode::kOut) Add(a.place.root);
          // A random state the call advances (builtins/random_state.h).
          if (a.mode == tir::Arg::Mode::kValue && a.value.is_var() && builtins::AdvancesState(*i.overload, k))
            Add(a.value.var);
        }
      }
      void VisitFor(const tir::For& i) {
        Add(i.var);
        VisitBlock(i.body);
      }
    } writes(f_);
    if (loop.kind == tir::InstKind::For) {
      writes.VisitBlock(tir::Cast<tir::For>(loop).body);
      writes.vars.erase(tir::Cast<tir::For>(loop).var);
    } else {
      writes.VisitBlock(tir::Cast<tir::While>(loop).cond_body);
      writes.VisitBlock(tir::Cast<tir::While>(loop).body);
    }
    // Whether the gradient depends on the values of those variables: a
    // value read from one is used other than added, subtracted or copied.
    struct Uses : tir::Visitor<Uses> {
      std::set<tir::VarId> valued;  // temporaries whose value an adjoint or the control flow reads
      std::map<tir::VarId, tir::VarId> read_from;  // temporary -> the variable it was loaded from
      const std::set<tir::VarId>& written;
      explicit Uses(const std::set<tir::VarId>& w) : written(w) {}
      void Mark(const tir::Operand& o) {
        if (o.is_var()) valued.insert(o.var);
      }
      void Steps(const tir::Place& p) {
        for (const tir::Step& st : p.steps) {
          Mark(st.index);
          Mark(st.index2);
        }
      }
      void VisitLoad(const tir::Load& i) {
        if (written.contains(i.place.root)) read_from[i.dst] = i.place.root;
        Steps(i.place);
      }
      void VisitStore(const tir::Store& i) { Steps(i.place); }
      void VisitBuiltin(const tir::Builtin& i) {
        const std::string_view n = i.overload->name;
        const bool linear = n == "add" || n == "sub" || n == "neg" || n == "pos";
        for (size_t k = 0; k < i.args.size(); ++k) {
          const tir::Arg& a = i.args[k];
          // A state advanced in the loop: what the iteration draws depends on its value.
          if (a.mode == tir::Arg::Mode::kValue && a.value.is_var() && written.contains(a.value.var) &&
              builtins::AdvancesState(*i.overload, k))
            state_read = true;
          if (a.mode == tir::Arg::Mode::kValue && !linear) Mark(a.value);
          if (a.mode == tir::Arg::Mode::kValue && linear && a.value.is_var() && i.dst != tir::kNoVar)
            linear_edges.emplace_back(i.dst, a.value.var);
          if (a.mode == tir::Arg::Mode::kOut) Steps(a.place);
        }
      }
      std::vector<std::pair<tir::VarId, tir::VarId>> linear_edges;  // (sum, a term of it)
      bool state_read = false;  // a carried random state is advanced
      // A term of a sum whose value is read is read too.
      void Close() {
        for (bool changed = true; changed;) {
          changed = false;
          for (const auto& [sum, term] : linear_edges)
            if (valued.contains(sum)) changed |= valued.insert(term).second;
        }
      }
      void VisitMakeTuple(const tir::MakeTuple& i) {
        for (const auto& e : i.elements) Mark(e);
      }
      void VisitCallFunc(const tir::CallFunc& i) {
        for (const auto& a : i.args) Mark(a);
      }
      void VisitGrad(const tir::Grad& i) {
        for (const auto& a : i.args) Mark(a);
      }
      void VisitElementAddr(const tir::ElementAddr& i) {
        for (const auto& k : i.indices) Mark(k);
      }
      void VisitSubview(const tir::Subview& i) {
        for (const auto& k : i.indices) Mark(k);
      }
      void VisitCheckIndex(const tir::CheckIndex& i) { Mark(i.index); }
      void VisitReturn(const tir::Return& i) {
        if (i.has_value) Mark(i.value);
      }
      void VisitIf(const tir::If& i) {
        Mark(i.cond);
        VisitBlock(i.then_body);
        VisitBlock(i.else_body);
      }
      void VisitFor(const tir::For& i) {
        Mark(i.start);
        Mark(i.stop);
        Mark(i.step);
        VisitBlock(i.body);
      }
      void VisitWhile(const tir::While& i) {
        VisitBlock(i.cond_body);
        Mark(i.cond);
        VisitBlock(i.body);
      }
    } uses(writes.vars);
    if (loop.kind == tir::InstKind::For) {
      uses.VisitBlock(tir::Cast<tir::For>(loop).body);
    } else {
      uses.Visit(loop);
    }
    uses.Close();
    bool exact = uses.state_read;
    for (tir::VarId t : uses.valued) exact |= uses.read_from.contains(t);
    needs_exact_.push_back(exact);
    size_t bytes = 0;
    for (tir::VarId v : writes.vars) bytes += f_.var(v).type->size() * (f_.var(v).type->is_array() ? 2 : 1);
    // The loop's share of kAdjointSnapshotBytes, at most 256 iterations (0:
    // nothing kept, when one iteration's values do not fit).
    const size_t per_iteration = bytes * (lanes_ ? static_cast<size_t>(kLanes) : 1);
    const size_t cap = bytes == 0 ? 0 : std::min<size_t>(loop_budget_ / per_iteration, 256);
    carried_.push_back(bytes == 0 ? std::vector<tir::VarId>{} : std::vector<tir::VarId>(writes.vars.begin(), writes.vars.end()));
    capacity_.push_back(cap);
  }

  std::string SnapName(int l, tir::VarId v, bool adj) const {
    return (adj ? "_sa" : "_s") + std::to_string(l) + "_" + BaseName(v);
  }

  // Keeps iteration `n`'s starting values (n counts the iterations begun before).
  void Snapshot(int l, const std::string& n) {
    const auto& vars = carried_[static_cast<size_t>(l)];
    if (vars.empty() || capacity_[static_cast<size_t>(l)] == 0) return;
    std::string body;
    for (tir::VarId v : vars) {
      if (Dead(v)) continue;
      body += " " + Lane(SnapName(l, v, false) + "[" + n + "]") + " = " + Name(v) + ";";
      if (f_.var(v).type->is_array()) body += " " + Lane(SnapName(l, v, true) + "[" + n + "]") + " = " + Adj(v) + ";";
    }
    if (!body.empty()) w_.Line("if (" + n + " < " + std::to_string(capacity_[static_cast<size_t>(l)]) + ") {" + body + " }");
  }

  // Restores iteration k's starting values. Past the capacity, where the
  // gradient depends on them, the launch faults (FAULT_ADJOINT_LOOP) rather
  // than give a wrong gradient; where it does not (sums), it goes on.
  void Restore(int l, const std::string& k, const ir::Span& span) {
    const auto& vars = carried_[static_cast<size_t>(l)];
    if (vars.empty()) return;
    std::string body;
    for (tir::VarId v : vars) {
      if (Dead(v)) continue;
      body += " " + Name(v) + " = " + Lane(SnapName(l, v, false) + "[" + k + "]") + ";";
      if (f_.var(v).type->is_array()) body += " " + Adj(v) + " = " + Lane(SnapName(l, v, true) + "[" + k + "]") + ";";
    }
    const std::string cap = std::to_string(capacity_[static_cast<size_t>(l)]);
    const std::string fault = "{ (void)wp::record_adjoint_loop_fault(ctx, " + Line(span) + ", _n" + std::to_string(l) +
                              ", " + cap + "); return; }";
    if (capacity_[static_cast<size_t>(l)] == 0) {
      if (needs_exact_[static_cast<size_t>(l)]) w_.Line(fault);
      return;
    }
    w_.Line("if (" + k + " < " + cap + ") {" + body + " }");
    if (needs_exact_[static_cast<size_t>(l)]) w_.Line("else " + fault);
  }

  // -------------------------------------------------------------- lanes

  void OpenLanes() {
    w_.Open("for (int _l = 0; _l < " + std::to_string(kLanes) + "; ++_l) {");
    w_.Line("const wp::int64 _tid = _t0 + _l;");
  }

  // A loop bound, the same for every lane (AdjointRunsLaneBlocked): a
  // constant, a parameter, or a temporary loaded from one (lane 0's copy).
  std::string Uniform(const tir::Operand& o) const {
    if (!o.is_var() || f_.var(o.var).kind == tir::VarKind::kParam) return Op(o);
    return BaseName(o.var) + "[0]";
  }

  void LanesReplayFor(const tir::For& i) {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l), it = "it" + std::to_string(next_coords_++);
    const std::string lo = it + "_lo", trips = it + "_n", st = "(wp::int64)" + Uniform(i.step);
    w_.Line("const wp::int64 " + lo + " = (wp::int64)" + Uniform(i.start) + ";");
    w_.Line("const wp::int64 " + trips + " = (wp::int64)wp::loop_trips(" + lo + ", (wp::int64)" + Uniform(i.stop) +
            ", " + st + ");");
    w_.Line(n + " = 0;");
    // The lanes keep fewer iterations' values than the scalar body: where the
    // gradient depends on them and they do not fit, these threads run one at
    // a time instead (nothing was written yet: the reverse sweep comes after
    // every loop), so lanes never fault where the scalar adjoint would not.
    if (needs_exact_[static_cast<size_t>(l)] && !carried_[static_cast<size_t>(l)].empty())
      w_.Line("if (" + trips + " > " + std::to_string(capacity_[static_cast<size_t>(l)]) +
              ") { _scalar = true; return; }");
    w_.Open("for (wp::int64 " + it + " = 0; " + it + " < " + trips + "; ++" + it + ") {");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    OpenLanes();
    Snapshot(l, n);
    w_.Line(Name(i.var) + " = (" + Type(i.var) + ")(" + lo + " + " + it + " * " + st + ");");
    frames_.push_back(-1);
    in_loop_replay_ = true;
    VisitBlock(i.body);
    in_loop_replay_ = false;
    frames_.pop_back();
    w_.Close();
    w_.Line("++" + n + ";");
    w_.Close();
  }

  void LanesReverseFor(const tir::For& i) {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l), k = "_k" + std::to_string(l);
    w_.Open("for (wp::int64 " + k + " = " + n + " - 1; " + k + " >= 0; --" + k + ") {");
    OpenLanes();
    w_.Line(Name(i.var) + " = (" + Type(i.var) + ")((wp::int64)" + Uniform(i.start) + " + " + k + " * (wp::int64)" +
            Uniform(i.step) + ");");
    Restore(l, k, i.span);
    std::vector<int> saved = frames_;
    frames_ = {l};
    const bool quiet = quiet_;
    quiet_ = true;
    VisitBlock(i.body);  // no block around it: a lane loop may be split in it (LaneTrig)
    quiet_ = quiet;
    frames_ = std::move(saved);
    Reverse(i.body, l);
    w_.Close();
    w_.Close();
  }

  // A float32 sin or cos of a lane array at the top level of a lane loop
  // (LaneMathOf): the loop is split there and `call` runs for all lanes at
  // once (wp::sincos_lanes: the float path for every lane, the exact values
  // the scalar functions give), as in the forward lane-blocked body.
  bool LaneTrig(const tir::Inst& inst, const std::string& call) {
    w_.Close();
    w_.Line(call);
    OpenLanes();
    (void)inst;
    return true;
  }
  // The lane array keeping the other function of a lane sin or cos's
  // argument for its adjoint.
  std::string PartnerName(const tir::Builtin& i) const { return "_gp" + BaseName(i.dst); }
  bool IsLaneTrig(const tir::Builtin& i) const {
    return lanes_ && lane_top_.contains(&i) && LaneMathOf(f_, i) != LaneMath::kNone;
  }

  // A break or continue: C++'s inside a loop running natively, else the
  // end of the iteration being replayed.
  void Exit(const tir::Inst& i, const std::string& native) {
    if (frames_.empty() || frames_.back() < 0) {
      w_.Line(native);
      return;
    }
    const std::string l = std::to_string(frames_.back());
    w_.Line("{ _ls" + l + " = " + std::to_string(sites_.at(&i)) + "; goto wp_iter" + l + "; }");
  }

  // --------------------------------------------------------------- reverse

  std::string Flag(int loop) const { return loop < 0 ? "_rs" : "_ls" + std::to_string(loop); }

  // The reverse sweep of `b` (in the function's body, or loop `loop`'s):
  // the instructions after one that may exit ran only when the exit that
  // happened (the flag) comes later.
  void Reverse(const tir::Block& b, int loop) { ReverseRange(b, b.size(), loop); }

  void ReverseRange(const tir::Block& b, size_t end, int loop) {
    size_t split = 0;
    int site = -1;
    for (size_t k = end; k-- > 0;) {
      int m = k + 1 < end ? MaxSite(*b[k], loop) : -1;  // the last one has nothing after it to guard
      if (m >= 0) {
        split = k + 1;
        site = m;
        break;
      }
    }
    if (site >= 0 && split < end) {
      w_.Open("if (" + Flag(loop) + " > " + std::to_string(site) + ") {");
      for (size_t k = end; k-- > split;) ReverseInst(*b[k], loop);
      w_.Close();
      ReverseRange(b, split, loop);
      return;
    }
    for (size_t k = end; k-- > 0;) ReverseInst(*b[k], loop);
  }

  void ReverseInst(const tir::Inst& inst, int loop) {
    switch (inst.kind) {
      case tir::InstKind::Declare: {
        const auto& i = tir::Cast<tir::Declare>(inst);
        w_.Line(Adj(i.var) + " = {};");
        break;
      }
      case tir::InstKind::Load: ReverseLoad(tir::Cast<tir::Load>(inst)); break;
      case tir::InstKind::Store: ReverseStore(tir::Cast<tir::Store>(inst)); break;
      case tir::InstKind::Builtin: ReverseBuiltin(tir::Cast<tir::Builtin>(inst)); break;
      case tir::InstKind::MakeTuple: {
        const auto& i = tir::Cast<tir::MakeTuple>(inst);
        for (size_t k = 0; k < i.elements.size(); ++k)
          if (i.elements[k].is_var())
            w_.Line("wp::adj_acc(" + Adj(i.elements[k].var) + ", wp::tuple_get<" + std::to_string(k) + ">(" +
                    Adj(i.dst) + "));");
        w_.Line(Adj(i.dst) + " = {};");
        break;
      }
      case tir::InstKind::CallFunc: ReverseCall(tir::Cast<tir::CallFunc>(inst)); break;
      case tir::InstKind::Print: ReversePrint(tir::Cast<tir::Print>(inst)); break;
      case tir::InstKind::If: {
        const auto& i = tir::Cast<tir::If>(inst);
        w_.Open("if (" + Op(i.cond) + ") {");
        Reverse(i.then_body, loop);
        if (!i.else_body.empty()) {
          w_.Reopen("} else {");
          Reverse(i.else_body, loop);
        }
        w_.Close();
        break;
      }
      case tir::InstKind::For: ReverseFor(tir::Cast<tir::For>(inst)); break;
      case tir::InstKind::While: ReverseWhile(tir::Cast<tir::While>(inst)); break;
      case tir::InstKind::Return: {
        const auto& i = tir::Cast<tir::Return>(inst);
        if (i.has_value && i.value.is_var() && !f_.is_kernel() && !f_.source->return_type->is_void())
          w_.Line("if (" + Flag(loop) + " == " + std::to_string(sites_.at(&inst)) + ") wp::adj_acc(" +
                  Adj(i.value.var) + ", adj_ret);");
        break;
      }
      default: break;  // no adjoint: addresses, shapes, indices, tid, print, break, continue
    }
  }

  // print() prints again in the replay; here, as Warp's adj_print, its line
  // "adj: <adjoint>" per value (tir/print_sites.h), with the adjoints the
  // values have at this point of the sweep. A value read from a variable for
  // the print (tir::MakeReadsExplicit's load just before it) shows the
  // variable's adjoint, as Warp's print(x) shows x's.
  void ReversePrint(const tir::Print& i) {
    if (i.adjoint_site < 0) return;
    std::map<tir::VarId, tir::VarId> read_from;
    struct Reads : tir::Visitor<Reads> {
      std::map<tir::VarId, tir::VarId>& out;
      const tir::Function& f;
      Reads(std::map<tir::VarId, tir::VarId>& o, const tir::Function& fn) : out(o), f(fn) {}
      void VisitLoad(const tir::Load& l) {
        const tir::VarKind k = f.var(l.place.root).kind;
        if (l.place.steps.empty() && (k == tir::VarKind::kParam || k == tir::VarKind::kLocal)) out[l.dst] = l.place.root;
      }
    } reads(read_from, f_);
    reads.VisitBlock(f_.body);
    std::string record = "wp::print_record<" + std::to_string(i.adjoint_site) + "u, " +
                         std::to_string(m_.prints.sites[static_cast<size_t>(i.adjoint_site)].payload) + "u>(ctx, _tid";
    for (const auto& v : i.values) {
      if (v.type->is_array()) continue;
      auto from = v.is_var() ? read_from.find(v.var) : read_from.end();
      record += ", " + (!v.is_var() ? v.type->CppName() + "{}" : Adj(from != read_from.end() ? from->second : v.var));
    }
    w_.Line(record + ");");
  }

  // Lanes, a fast access at a lane loop's top level: its gradient's
  // accumulation (or read and consumption) in loops of its own, the array's
  // flags tested once outside them, so the lane loops around stay
  // vectorizable (a branch on a flag, or an atomic, inside one stops clang).
  bool SplitsLanes(const tir::Inst& i, tir::VarId root) const {
    return FastRef(root) && lane_top_.contains(&i);
  }
  void LaneLoop(const std::string& body) {
    w_.Line("for (int _l = 0; _l < " + std::to_string(kLanes) + "; ++_l) { " + body + " }");
  }

  void ReverseLoad(const tir::Load& i) {
    TypeRef t = f_.var(i.dst).type;
    if (t->is_array() || !CarriesGradient(t)) return;
    if (SplitsLanes(i, i.place.root)) {
      const std::string place = "&" + AdjPlace(i.place, true), v = Adj(i.dst);
      w_.Close();
      w_.Open("if (" + Present(i.place.root) + ") {");
      if (exclusive_.refs.contains(i.place.root)) {
        w_.Open("if (" + Exclusive(i.place.root) + ") {");
        LaneLoop("wp::adj_acc(*" + place + ", " + v + ");");
        w_.Close();
        w_.Open("else {");
      }
      LaneLoop("wp::adj_atomic_add(" + place + ", " + v + ");");
      if (exclusive_.refs.contains(i.place.root)) w_.Close();
      w_.Close();
      OpenLanes();
      w_.Line(v + " = {};");
      return;
    }
    if (f_.var(i.place.root).kind == tir::VarKind::kElementRef && exclusive_.refs.contains(i.place.root)) {
      w_.Line("if (" + Present(i.place.root) + ") wp::adj_add_to(&" + AdjPlace(i.place, true) + ", " + Adj(i.dst) +
              ", " + Exclusive(i.place.root) + ");");
    } else if (f_.var(i.place.root).kind == tir::VarKind::kElementRef) {
      w_.Line("if (" + Present(i.place.root) + ") wp::adj_atomic_add(&" + AdjPlace(i.place, true) + ", " +
              Adj(i.dst) + ");");
    } else {
      w_.Line("wp::adj_acc(" + AdjPlace(i.place, true) + ", " + Adj(i.dst) + ");");
    }
    w_.Line(Adj(i.dst) + " = {};");
  }

  void ReverseStore(const tir::Store& i) {
    TypeRef t = i.place.type;
    if (t->is_array() || !CarriesGradient(t)) return;
    if (f_.var(i.place.root).kind == tir::VarKind::kElementRef) {
      // The gradient of an array element flows to the stored value; a
      // store consumes it where the array is its argument's own gradient
      // (Warp 1.19: final write wins, unless retain_grad).
      if (SplitsLanes(i, i.place.root)) {
        w_.Close();
        w_.Open("if (" + Present(i.place.root) + ") {");
        if (i.value.is_var()) LaneLoop("wp::adj_acc(" + Adj(i.value.var) + ", " + AdjPlace(i.place, false) + ");");
        w_.Line("if (" + Consume(i.place.root) + ") for (int _l = 0; _l < " + std::to_string(kLanes) + "; ++_l) " +
                AdjPlace(i.place, true) + " = {};");
        w_.Close();
        OpenLanes();
        return;
      }
      w_.Open("if (" + Present(i.place.root) + ") {");
      if (i.value.is_var()) w_.Line("wp::adj_acc(" + Adj(i.value.var) + ", " + AdjPlace(i.place, false) + ");");
      w_.Line("if (" + Consume(i.place.root) + ") " + AdjPlace(i.place, true) + " = {};");
      w_.Close();
      return;
    }
    if (i.value.is_var()) w_.Line("wp::adj_acc(" + Adj(i.value.var) + ", " + AdjPlace(i.place, false) + ");");
    if (!i.place.steps.empty() && i.place.steps.back().kind == tir::Step::Kind::kMatrixRow) {
      tir::Place base = i.place;
      base.steps.pop_back();
      w_.Line("wp::mat_set_row(" + AdjPlace(base, true) + ", " + Op(i.place.steps.back().index) + ", " +
              i.value.type->CppName() + "{});");
      return;
    }
    w_.Line(AdjPlace(i.place, true) + " = {};");
  }

  // An lvalue for the adjoint of argument `o`: its adjoint variable, or a
  // scratch one for a constant (declared in the enclosing block).
  std::string AdjArg(const tir::Operand& o, std::vector<std::string>& scratch) {
    if (o.is_var()) return Adj(o.var);
    const std::string name = "_s" + std::to_string(scratch.size());
    scratch.push_back(o.type->CppName() + " " + name + "{};");
    return name;
  }

  void ReverseBuiltin(const tir::Builtin& i) {
    const builtins::Overload& o = *i.overload;
    if (IsLaneTrig(i)) {  // adj_sin / adj_cos with the other function from sincos_lanes
      const bool sin = LaneMathOf(f_, i) == LaneMath::kSin;
      const std::string k = std::to_string(kLanes), x = BaseName(i.args[0].value.var);
      std::string other = "_gsc";
      if (partnered_.contains(&i)) {
        other = PartnerName(i);  // computed with the value in the replay just before
      } else {
        LaneTrig(i, std::string("wp::sincos_lanes<") + k +
                        (sin ? ", false, true>(nullptr, _gsc, " : ", true, false>(_gsc, nullptr, ") + x + ");");
      }
      const std::string term = "wp::mul(" + other + "[_l], " + Adj(i.dst) + ")";
      w_.Line("wp::accumulate_adjoint(" + Adj(i.args[0].value.var) + ", " + (sin ? term : "wp::neg(" + term + ")") + ");");
      w_.Line(Adj(i.dst) + " = {};");
      return;
    }
    if (o.name == "struct" && i.dst != tir::kNoVar) return ReverseStructConstructor(i);
    if (!o.differentiable) return;
    bool carries = i.dst != tir::kNoVar && CarriesGradient(f_.var(i.dst).type);
    for (const tir::Arg& a : i.args) carries |= a.mode == tir::Arg::Mode::kValue && CarriesGradient(a.value.type);
    if (!carries) return;
    if (o.form == builtins::Form::kAtomic) return ReverseAtomic(i);
    const std::string dst_adj = i.dst != tir::kNoVar ? Adj(i.dst) : "";
    if (o.group == "Constructors" || o.name == "matrix_from_rows") {  // rows: the flat layout
      ReverseConstructor(i);
      if (!dst_adj.empty()) w_.Line(dst_adj + " = {};");
      return;
    }
    if (o.name == "matrix_from_cols" && i.dst != tir::kNoVar) {
      int k = 0;
      for (const tir::Arg& a : i.args) {
        if (a.mode != tir::Arg::Mode::kValue) continue;
        if (a.value.is_var())
          w_.Line("wp::adj_matrix_column(" + dst_adj + ", " + std::to_string(k) + ", " + Adj(a.value.var) + ");");
        ++k;
      }
      w_.Line(dst_adj + " = {};");
      return;
    }
    std::vector<TypeRef> types;
    for (const tir::Arg& a : i.args) {
      const bool out = a.mode == tir::Arg::Mode::kOut;
      // A result and output arguments together only with an explicit
      // adjoint spelling (volume_sample_grad's), which takes both.
      if ((a.mode != tir::Arg::Mode::kValue && !out) || ((i.dst == tir::kNoVar) != HasOut(i) && o.adjoint.empty())) {
        Error(i.span, Cat("warpd cannot differentiate ", o.name, "() yet (a type argument)"));
        return;
      }
      types.push_back(out ? a.place.type : a.value.type);
    }
    std::optional<builtins::AdjointSpelling> adj = o.hook ? std::nullopt : builtins::AdjointOf(o, types);
    if (!adj) {
      std::string sig;
      for (TypeRef t : types) sig += (sig.empty() ? "" : ", ") + t->ToString();
      Error(i.span, Cat("warpd cannot differentiate ", o.name, "(", sig, ") yet: no adjoint for it (launches "
                        "without adjoint=True and kernels outside a Tape are not affected)"));
      return;
    }
    // Output arguments (Warp's form): the places, then their adjoints among
    // the others', and no adj_ret.
    std::vector<std::string> scratch;
    std::string args;
    for (const tir::Arg& a : i.args)
      args += (args.empty() ? "" : ", ") + (a.mode == tir::Arg::Mode::kOut ? PlaceText(a.place, true) : Op(a.value));
    if (adj->takes_result && i.dst != tir::kNoVar) args += ", " + Name(i.dst);
    for (const tir::Arg& a : i.args)
      args += ", " + (a.mode == tir::Arg::Mode::kOut ? AdjPlace(a.place, true) : AdjArg(a.value, scratch));
    if (i.dst != tir::kNoVar) args += ", " + dst_adj;
    if (!scratch.empty()) w_.Open("{");
    for (const auto& s : scratch) w_.Line(s);
    w_.Line(adj->callee + "(" + args + ");");
    if (!scratch.empty()) w_.Close();
    if (i.dst != tir::kNoVar) w_.Line(dst_adj + " = {};");
  }

  static bool HasOut(const tir::Builtin& i) {
    for (const tir::Arg& a : i.args)
      if (a.mode == tir::Arg::Mode::kOut) return true;
    return false;
  }

  // Constructors and conversions, by the shapes of their values: the same
  // type (a copy), a conversion (another dtype, same shape), one scalar
  // filling every component, or components laid out in order.
  void ReverseConstructor(const tir::Builtin& i) {
    if (i.dst == tir::kNoVar) return;
    TypeRef r = f_.var(i.dst).type;
    std::vector<const tir::Operand*> values;
    for (const tir::Arg& a : i.args)
      if (a.mode == tir::Arg::Mode::kValue) values.push_back(&a.value);
    const std::string adj_ret = Adj(i.dst);
    if (values.empty()) return;
    if (values.size() == 1) {
      const tir::Operand& x = *values[0];
      if (!x.is_var()) return;
      if (types::SameType(x.type, r)) {
        w_.Line("wp::adj_acc(" + Adj(x.var) + ", " + adj_ret + ");");
        return;
      }
      if (x.type->kind() == r->kind() && FlatSize(x.type) == FlatSize(r) && FlatSize(r) > 0) {
        w_.Line("wp::adj_convert(" + adj_ret + ", " + Adj(x.var) + ");");
        return;
      }
      if (x.type->is_scalar() && FlatSize(r) > 1) {
        w_.Line("wp::adj_splat(" + adj_ret + ", " + Adj(x.var) + ");");
        return;
      }
    }
    int total = 0;
    for (const tir::Operand* x : values) {
      const int n = FlatSize(x->type);
      if (n == 0 || !types::SameType(types::Scalar(x->type->scalar()), types::Scalar(r->scalar()))) total = -1;
      if (total >= 0) total += n;
    }
    if (FlatSize(r) == 0 || total < 0 || total > FlatSize(r)) {
      Error(i.span, Cat("warpd cannot differentiate this ", i.overload->name, "() construction yet"));
      return;
    }
    int offset = 0;
    for (const tir::Operand* x : values) {
      if (x->is_var())
        w_.Line("wp::adj_flat_extract(" + adj_ret + ", " + std::to_string(offset) + ", " + Adj(x->var) + ");");
      offset += FlatSize(x->type);
    }
  }

  // S(a, b, ...): member m took the argument its spelling names there.
  void ReverseStructConstructor(const tir::Builtin& i) {
    const auto& members = f_.var(i.dst).type->members();
    for (const auto& [m, k] : StructConstructorArgs(i))
      w_.Line("wp::adj_acc(" + Adj(i.args[k].value.var) + ", " + Adj(i.dst) + ".m_" + members[m].name + ");");
    w_.Line(Adj(i.dst) + " = {};");
  }

  // atomic_add/sub/min/max(arr, i..., value) on an element: the element's
  // gradient flows to the value.
  void ReverseAtomic(const tir::Builtin& i) {
    const tir::Arg* ref = nullptr;
    const tir::Arg* value = nullptr;
    for (const tir::Arg& a : i.args) {
      if (a.mode == tir::Arg::Mode::kAddress) ref = &a;
      if (a.mode == tir::Arg::Mode::kValue) value = &a;
    }
    if (!ref || !value || !value->value.is_var()) return;
    const std::string g = Adj(ref->value.var), v = Adj(value->value.var);
    const std::string_view name = i.overload->name;
    if (name == "atomic_add") {
      w_.Line("if (" + g + ") wp::adj_acc(" + v + ", *" + g + ");");
    } else if (name == "atomic_sub") {
      w_.Line("if (" + g + ") wp::adj_acc(" + v + ", wp::neg(*" + g + "));");
    } else if (name == "atomic_min" || name == "atomic_max") {
      w_.Line("if (" + g + ") wp::adj_atomic_minmax(" + Name(ref->value.var) + ", " + g + ", " + Op(value->value) +
              ", " + v + ");");
    }
  }

  // The emitted function of the module named `name`; null when none.
  const ir::Function* FunctionNamed(const std::string& name) const {
    for (const auto& f : m_.source->functions)
      if (f.name == name && ir::IsEmitted(f)) return &f;
    return nullptr;
  }

  // A call of a function with a custom gradient g (@wp.func_grad): g(args...,
  // adjoints of the result..., zeroed accumulators...) returns the
  // accumulators, which go to the arguments' adjoints.
  void ReverseCustomGrad(const tir::CallFunc& i, const ir::Function& callee) {
    const ir::Function* g = FunctionNamed(callee.custom_grad);
    const size_t n = callee.params.size();
    std::vector<std::string> adj_ret;
    if (i.dst != tir::kNoVar && callee.return_type->is_tuple()) {
      for (size_t j = 0; j < callee.return_type->elements().size(); ++j)
        adj_ret.push_back("wp::tuple_get<" + std::to_string(j) + ">(" + Adj(i.dst) + ")");
    } else if (i.dst != tir::kNoVar) {
      adj_ret.push_back(Adj(i.dst));
    }
    std::string why;
    if (!g) {
      why = "it is not in the module";
    } else if (g->params.size() != 2 * n + adj_ret.size()) {
      why = Cat("it takes ", g->params.size(), " parameters, not ", 2 * n + adj_ret.size(), " (the function's ",
                n, ", the result's adjoints, then the accumulators)");
    } else {
      for (size_t k = 0; k < n && why.empty(); ++k)
        if (!types::SameType(g->params[k].type, callee.params[k].type) ||
            !types::SameType(g->params[n + adj_ret.size() + k].type, callee.params[k].type))
          why = Cat("parameter '", g->params[k].name, "' is not of type ", callee.params[k].type->ToString());
    }
    // Arrays' accumulators are their gradient arrays (written in place); the
    // others come back, in order: one value, a tuple, or nothing.
    std::vector<size_t> returned;
    for (size_t k = 0; k < n; ++k)
      if (!callee.params[k].type->is_array()) returned.push_back(k);
    if (why.empty()) {
      const bool fits = returned.empty()   ? g->return_type->is_void()
                        : returned.size() == 1 ? types::SameType(g->return_type, callee.params[returned[0]].type)
                                               : g->return_type->is_tuple() &&
                                                     g->return_type->elements().size() == returned.size();
      if (!fits) why = "its result is not the adjoints of the non-array parameters";
    }
    if (!why.empty()) {
      Error(i.span, Cat("the custom gradient of '", callee.display_name, "' does not fit: ", why));
      return;
    }
    std::string args = "ctx, _tid";
    for (const auto& a : i.args) args += ", " + Op(a);
    for (const auto& r : adj_ret) args += ", " + r;
    for (size_t k = 0; k < n; ++k)
      args += ", " + (callee.params[k].type->is_array() ? AdjOp(i.args[k])
                                                         : callee.params[k].type->CppName() + "{}");
    w_.Open("{");
    w_.Line((returned.empty() ? "" : "const auto _g = ") + FuncSymbol(g->name) + "(" + args + ");");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    for (size_t r = 0; r < returned.size(); ++r) {
      const size_t k = returned[r];
      if (!i.args[k].is_var()) continue;
      w_.Line("wp::adj_acc(" + Adj(i.args[k].var) + ", " +
              (returned.size() == 1 ? std::string("_g") : "wp::tuple_get<" + std::to_string(r) + ">(_g)") + ");");
    }
    w_.Close();
    if (i.dst != tir::kNoVar) w_.Line(Adj(i.dst) + " = {};");
  }

  void ReverseCall(const tir::CallFunc& i) {
    const ir::Function& callee = m_.source->functions[static_cast<size_t>(i.function)];
    // Warp 1.19: a function calling wp.grad() has no adjoint; its calls pass nothing back.
    if (tir::CallsGrad(m_.functions[static_cast<size_t>(i.function)])) {
      if (i.dst != tir::kNoVar) w_.Line(Adj(i.dst) + " = {};");
      return;
    }
    if (!callee.custom_grad.empty()) return ReverseCustomGrad(i, callee);
    std::vector<std::string> scratch;
    std::string args = "ctx, _tid";
    for (const auto& a : i.args) args += ", " + Op(a);
    for (const auto& a : i.args) args += ", " + AdjArg(a, scratch);
    if (!callee.return_type->is_void()) args += ", " + Adj(i.dst);
    if (!scratch.empty()) w_.Open("{");
    for (const auto& s : scratch) w_.Line(s);
    w_.Line(AdjFuncSymbol(callee.name) + "(" + args + ");");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
    if (!scratch.empty()) w_.Close();
    if (i.dst != tir::kNoVar) w_.Line(Adj(i.dst) + " = {};");
  }

  // Iterations backwards; each replays forward (from the values the
  // variables have now), then runs its reverse sweep.
  void ReverseFor(const tir::For& i) {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l), k = "_k" + std::to_string(l);
    w_.Open("for (wp::int64 " + k + " = " + n + " - 1; " + k + " >= 0; --" + k + ") {");
    w_.Line(Name(i.var) + " = (" + Type(i.var) + ")((wp::int64)" + Op(i.start) + " + " + k + " * (wp::int64)" +
            Op(i.step) + ");");
    ReplayIteration(l, i.body, nullptr, i.span);
    Reverse(i.body, l);
    w_.Close();
  }

  void ReverseWhile(const tir::While& i) {
    const int l = loop_of_.at(&i);
    const std::string n = "_n" + std::to_string(l), k = "_k" + std::to_string(l);
    w_.Open("for (wp::int64 " + k + " = " + n + " - 1; " + k + " >= 0; --" + k + ") {");
    ReplayIteration(l, i.body, &i.cond_body, i.span);
    Reverse(i.body, l);
    Reverse(i.cond_body, l);
    w_.Close();
  }

  void ReplayIteration(int l, const tir::Block& body, const tir::Block* cond_body, const ir::Span& span) {
    const std::string ls = "_ls" + std::to_string(l);
    w_.Line(ls + " = 2147483647;");
    Restore(l, "_k" + std::to_string(l), span);
    std::vector<int> saved = frames_;
    frames_ = {l};
    const bool quiet = quiet_;
    quiet_ = true;  // the forward replay printed this iteration's values
    w_.Open("{");
    if (cond_body) VisitBlock(*cond_body);
    VisitBlock(body);
    w_.Close();
    quiet_ = quiet;
    frames_ = std::move(saved);
    w_.Line("wp_iter" + std::to_string(l) + ":;");
  }

  std::vector<std::string>& errors_;
  const size_t loop_budget_;
  bool quiet_ = false;  // replaying a loop iteration for its reverse sweep: prints were printed
  std::set<const tir::Inst*> lane_top_;  // lanes: the instructions a lane loop runs at its top level
  std::set<tir::VarId> fast_refs_;        // lanes: element references of unchecked accesses
  std::set<tir::VarId> replay_dead_;      // lanes: values the adjoint does not need (FindReplayDead)
  bool in_loop_replay_ = false;           // lanes: in a loop's first replay (LanesReplayFor)
  std::set<const tir::Builtin*> partnered_;  // lanes: sin/cos whose replay kept the other function
  std::set<tir::VarId> local_refs_;           // references into local arrays
  ThreadExclusive exclusive_;                 // kernels: their own elements of arrays (thread_index.h)
  std::map<const tir::Inst*, int> sites_;     // returns, breaks, continues, in order
  std::map<const tir::Inst*, int> loop_of_;   // loops, in order
  std::vector<std::vector<tir::VarId>> carried_;  // per loop: the variables it writes
  std::vector<size_t> capacity_;                  // per loop: iterations whose starts are kept
  std::vector<bool> needs_exact_;                 // per loop: the gradient depends on those values
  int next_site_ = 0;
  int loops_ = 0;
  // Loops being replayed around the current instruction, innermost last: a
  // loop's number while one of its iterations is replayed by the reverse
  // sweep, -1 for a loop running natively.
  std::vector<int> frames_;
};

std::string AdjFuncSignature(const ir::Function& f) {
  std::string sig = "static WP_DEVICE_FUNC void " + AdjFuncSymbol(f.name) + "(wp::launch_ctx* ctx, wp::int64 _tid";
  for (const auto& p : f.params) sig += ", " + p.type->CppName() + " " + Local(p.name);
  for (const auto& p : f.params) sig += ", " + p.type->CppName() + "& a" + Local(p.name);
  if (!f.return_type->is_void()) sig += ", " + f.return_type->CppName() + " adj_ret";
  return sig + ")";
}

// Returns the parameters whose gradients the adjoint may add to without
// atomics (Adjoints::exclusive).
std::set<int> EmitKernelAdjoint(const tir::Module& m, const tir::Function& f, Writer& w,
                                std::vector<std::string>& errors, size_t loop_budget, bool lanes) {
  const ir::Function& k = *f.source;
  compiler::KernelLayout layout = compiler::ComputeLayout(*m.source, k);
  const std::string args = ArgsStruct(k.name);
  w.Line("// adjoint of kernel " + k.name);
  w.Open("static WP_DEVICE_FUNC void " + AdjBodySymbol(k.name) + "(wp::launch_ctx* ctx, const " + args +
         "& args, const " + args + "& adj, wp::int64 _tid) {");
  for (const auto& p : k.params) {
    w.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
    w.Line(p.type->CppName() + " a" + Local(p.name) + " = adj.p_" + p.name + ";");
  }
  ThreadExclusive exclusive = FindThreadExclusive(f);
  std::set<int> params;
  for (tir::VarId p : exclusive.params) params.insert(static_cast<int>(p));  // parameters come first
  AdjointEmitter emitter(m, f, w, errors, loop_budget);
  emitter.SetExclusive(exclusive);
  emitter.AdjointBody();
  w.Close();
  w.Line("");
  // kLanes thread ids at a time (CPU only), where the kernel allows it
  // (AdjointRunsLaneBlocked) and the lane arrays fit. A lane block whose
  // loop outgrows what the lanes keep of it sets _scalar and runs one thread
  // at a time (LanesReplayFor).
  Writer lane_text;
  // The lane body takes the thread-indexed accesses (and their gradients')
  // without checks, and runs only in blocks within all of them.
  const ThreadIndexed fast = FindThreadIndexed(f);
  if (lanes && errors.empty()) {
    std::vector<std::string> lane_errors;
    AdjointEmitter lane(m, f, lane_text, lane_errors, loop_budget, /*lanes=*/true);
    lane.SetExclusive(exclusive);
    if (!fast.accesses.empty()) lane.SetUnchecked(&fast.accesses);
    if (lane.LaneBytes() <= kMaxLaneBytes) {
      lane_text.Open("static WP_DEVICE_FUNC void " + AdjBodySymbol(k.name) + "_lanes(wp::launch_ctx* ctx, const " +
                     args + "& args, const " + args + "& adj, wp::int64 _t0, bool& _scalar) {");
      for (const auto& p : k.params) lane_text.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
      lane.LanesAdjointBody();
      lane_text.Close();
      lane_text.Line("");
    }
    lanes = lane_errors.empty() && !lane_text.str().empty();
  }
  // The adjoint block follows the forward block at args_size (a multiple of
  // the block's alignment).
  const std::string off = std::to_string(layout.args_size);
  w.Line("#if !WP_CUDA");
  if (lanes) w.Line(lane_text.str());
  w.Open("extern \"C\" void " + AdjointCpuEntrySymbol(k.name) +
         "(wp::launch_ctx* ctx, const void* args, wp::int64 begin, wp::int64 end) {");
  w.Line("const " + args + " a = *(const " + args + "*)args;");
  w.Line("const " + args + " d = *(const " + args + "*)((const char*)args + " + off + ");");
  const bool gated = lanes && !fast.accesses.empty();
  if (gated) {
    // Thread ids below fast_end index every thread-indexed array and its
    // gradient array in bounds (0 when one of them is not contiguous).
    std::string contiguous, length;
    for (const std::string& name : fast.arrays) {
      contiguous += (contiguous.empty() ? "" : " && ") + std::string("wp::contiguous(a.p_") + name +
                    ") && wp::adj_contiguous(d.p_" + name + ")";
      length += (length.empty() ? "" : ", ") + std::string("a.p_") + name + ".shape[0], wp::adj_length(d.p_" + name +
                ")";
    }
    w.Line("const wp::int64 fast_end = (" + contiguous + ") ? wp::min_length({" + length + "}) : 0;");
  }
  w.Open("for (wp::int64 block = begin; block < end; block += 256) {");
  w.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
  w.Line("const wp::int64 block_end = end - block < 256 ? end : block + 256;");
  w.Line("wp::int64 t = block;");
  if (lanes) {
    const std::string n = std::to_string(kLanes);
    w.Open("if (" + std::string(gated ? "block_end <= fast_end" : "true") + ") for (; t + " + n +
           " <= block_end; t += " + n + ") {");
    w.Line("bool scalar = false;");
    w.Line(AdjBodySymbol(k.name) + "_lanes(ctx, a, d, t, scalar);");
    w.Line("if (scalar) for (wp::int64 u = t; u < t + " + n + "; ++u) " + AdjBodySymbol(k.name) + "(ctx, a, d, u);");
    w.Close();
  }
  w.Line("for (; t < block_end; ++t) " + AdjBodySymbol(k.name) + "(ctx, a, d, t);");
  w.Close();
  w.Close();
  w.Line("#else");
  // Both blocks by value when they fit CUDA's parameter space, else their
  // address in device memory (docs/launch_abi.md).
  const bool by_pointer = 2 * layout.args_size + sizeof(void*) > kMaxCudaParamBytes;
  w.Open("extern \"C\" __global__ void " + AdjointCudaEntrySymbol(k.name) + "(wp::launch_ctx* ctx, " +
         (by_pointer ? "const char* __restrict__ block" : args + " args, " + args + " adj") + ") {");
  if (by_pointer) {
    w.Line("const " + args + "& args = *(const " + args + "*)block;");
    w.Line("const " + args + "& adj = *(const " + args + "*)(block + " + off + ");");
  }
  w.Line("wp::grid_stride(ctx, [&](wp::int64 t) { " + AdjBodySymbol(k.name) + "(ctx, args, adj, t); });");
  w.Close();
  w.Line("#endif");
  w.Line("");
  return params;
}

// Member-wise accumulation for a struct (arrays in it accumulate nothing).
void EmitStructAdjoint(TypeRef t, Writer& w) {
  const std::string s = t->CppName();
  w.Open("namespace wp {");
  w.Open("WP_FUNC void adj_acc(" + s + "& adj, const " + s + "& v) {");
  for (const auto& m : t->members()) w.Line("adj_acc(adj.m_" + m.name + ", v.m_" + m.name + ");");
  w.Close();
  w.Open("WP_FUNC void adj_atomic_add(" + s + "* p, const " + s + "& v) {");
  for (const auto& m : t->members())
    if (!m.type->is_array()) w.Line("adj_atomic_add(&p->m_" + m.name + ", v.m_" + m.name + ");");
  w.Line("(void)p; (void)v;");
  w.Close();
  w.Close("}  // namespace wp");
  // Found by argument-dependent lookup from the generic native adjoints
  // (where, select: accumulate_adjoint on any value type).
  w.Line("WP_FUNC void accumulate_adjoint(" + s + "& adj, const " + s + "& v) { wp::adj_acc(adj, v); }");
}

void CollectStructs(TypeRef t, std::vector<TypeRef>& out) {
  if (!t) return;
  if (t->is_array()) return CollectStructs(t->element(), out);
  if (t->is_tuple()) {
    for (TypeRef e : t->elements()) CollectStructs(e, out);
    return;
  }
  if (!t->is_struct()) return;
  for (TypeRef done : out)
    if (done == t) return;
  for (const auto& m : t->members()) CollectStructs(m.type, out);
  out.push_back(t);
}

}  // namespace

std::string AdjointCpuEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_adj_cpu"; }
std::string AdjointCudaEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_adj_cuda"; }

namespace {

// The loops of the emitted functions of `m` (their adjoints' snapshot
// storage shares kAdjointSnapshotBytes).
int CountLoops(const tir::Module& m) {
  struct Loops : tir::Visitor<Loops> {
    int n = 0;
    void VisitFor(const tir::For& i) {
      ++n;
      VisitBlock(i.body);
    }
    void VisitWhile(const tir::While& i) {
      ++n;
      VisitBlock(i.cond_body);
      VisitBlock(i.body);
    }
  } loops;
  for (const auto& f : m.functions)
    if (ir::IsEmitted(*f.source)) loops.VisitBlock(f.body);
  return loops.n;
}

// The functions whose adjoints the module's wp.grad() calls run (those
// calling wp.grad() themselves have none), and every function those call.
std::set<int> GradTargets(const tir::Module& module, const tir::CallGraph& calls) {
  struct Targets : tir::Visitor<Targets> {
    std::vector<int> found;
    void VisitGrad(const tir::Grad& i) {
      if (i.function >= 0) found.push_back(i.function);
    }
  } targets;
  for (const auto& f : module.functions)
    if (ir::IsEmitted(*f.source)) targets.VisitBlock(f.body);
  std::set<int> out;
  std::vector<int> work;
  for (int t : targets.found)
    if (!tir::CallsGrad(module.functions[static_cast<size_t>(t)])) work.push_back(t);
  while (!work.empty()) {
    const int f = work.back();
    work.pop_back();
    if (!out.insert(f).second) continue;
    for (int c : calls.callees[static_cast<size_t>(f)]) work.push_back(c);
  }
  return out;
}

// The adjoints of `module`'s emitted functions and kernels; with `only`,
// of those functions alone (no kernels).
Adjoints Generate(const tir::Module& module, const std::set<int>* only, const std::set<std::string>& lane_kernels) {
  Writer w;
  w.Line("// ---- adjoints (backward pass)");
  w.Line("#include \"warpd/native/adjoint/adj_codegen.h\"");
  std::vector<TypeRef> structs;
  for (const auto& f : module.functions) {
    if (!ir::IsEmitted(*f.source)) continue;
    for (const auto& v : f.vars) CollectStructs(v.type, structs);
  }
  for (TypeRef t : structs) EmitStructAdjoint(t, w);
  // Callees first, so a function whose adjoint failed fails its callers.
  const tir::CallGraph calls = tir::CallGraphOf(module);
  const size_t loop_budget = kAdjointSnapshotBytes / static_cast<size_t>(std::max(1, CountLoops(module)));
  std::map<int, std::string> failed;  // function index -> its first error
  Adjoints out;
  std::string declarations, bodies;
  for (int i : calls.callees_first) {
    const tir::Function& f = module.functions[static_cast<size_t>(i)];
    if (!ir::IsEmitted(*f.source)) continue;
    if (only && (f.is_kernel() || !only->contains(i))) continue;
    // Warp 1.19: a function calling wp.grad() has no adjoint (nothing calls one).
    if (!f.is_kernel() && tir::CallsGrad(f)) continue;
    std::vector<std::string> errors;
    for (int c : calls.callees[static_cast<size_t>(i)]) {
      auto it = failed.find(c);
      // A callee with a custom gradient is not differentiated itself.
      if (it != failed.end() && module.functions[static_cast<size_t>(c)].source->custom_grad.empty())
        errors.push_back(it->second);
    }
    Writer body;
    if (errors.empty()) {
      if (f.is_kernel()) {
        std::set<int> exclusive =
            EmitKernelAdjoint(module, f, body, errors, loop_budget, lane_kernels.contains(f.source->name));
        if (errors.empty()) out.exclusive[f.source->name] = std::move(exclusive);
      } else {
        body.Line("// adjoint of function " + f.source->name);
        body.Open(AdjFuncSignature(*f.source) + " {");
        AdjointEmitter(module, f, body, errors, loop_budget).AdjointBody();
        body.Close();
        body.Line("");
      }
    }
    if (!errors.empty()) {
      failed[i] = errors.front();
      if (f.is_kernel()) out.failed[f.source->name] = errors.front();
      continue;
    }
    if (!f.is_kernel()) declarations += AdjFuncSignature(*f.source) + ";\n";
    bodies += body.str();
  }
  out.source = w.str() + declarations + "\n" + bodies;
  // A wp.grad() call needs its callee's adjoint in the forward text.
  for (int t : GradTargets(module, calls)) {
    auto it = failed.find(t);
    if (it == failed.end()) continue;
    out.grad_error = Cat(it->second, " (wp.grad() of '", module.functions[static_cast<size_t>(t)].source->display_name,
                         "' needs this adjoint, or of a function it calls)");
    break;
  }
  return out;
}

}  // namespace

Adjoints GenerateAdjoints(const tir::Module& module, const std::set<std::string>& lane_kernels) {
  return Generate(module, nullptr, lane_kernels);
}

Adjoints GenerateGradAdjoints(const tir::Module& module) {
  const std::set<int> targets = GradTargets(module, tir::CallGraphOf(module));
  if (targets.empty()) return Adjoints{};
  return Generate(module, &targets, {});
}

std::string GradAdjointDeclarations(const tir::Module& module) {
  std::string out;
  for (int t : GradTargets(module, tir::CallGraphOf(module)))
    out += AdjFuncSignature(*module.functions[static_cast<size_t>(t)].source) + ";\n";
  return out;
}

}  // namespace warpd::codegen
