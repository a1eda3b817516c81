#include "compiler/tir/explicit_reads.h"

#include <memory>
#include <utility>

#include "compiler/builtins/random_state.h"

namespace warpd::tir {
namespace {

bool IsMutable(VarKind k) { return k == VarKind::kParam || k == VarKind::kLocal || k == VarKind::kSlot; }

class ExplicitReads : public Mutator<ExplicitReads> {
 public:
  explicit ExplicitReads(Function& f) : f_(f) {}

  bool MutateLoad(Load& i, Block& out) {
    Steps(i.place, i.span, out);
    return true;
  }
  bool MutateStore(Store& i, Block& out) {
    Steps(i.place, i.span, out);
    Read(i.value, i.span, out);
    return true;
  }
  bool MutateBuiltin(Builtin& i, Block& out) {
    for (size_t k = 0; k < i.args.size(); ++k) {
      Arg& a = i.args[k];
      // A random state stays the variable it advances (random_state.h).
      const bool state = i.overload != nullptr && builtins::AdvancesState(*i.overload, k);
      if (a.mode == Arg::Mode::kValue && !state) Read(a.value, i.span, out);
      if (a.mode == Arg::Mode::kOut) Steps(a.place, i.span, out);
    }
    return true;
  }
  bool MutateMakeTuple(MakeTuple& i, Block& out) {
    for (Operand& o : i.elements) Read(o, i.span, out);
    return true;
  }
  bool MutateCallFunc(CallFunc& i, Block& out) {
    for (Operand& o : i.args) Read(o, i.span, out);
    return true;
  }
  bool MutateGrad(Grad& i, Block& out) {
    for (Operand& o : i.args) Read(o, i.span, out);
    return true;
  }
  bool MutateElementAddr(ElementAddr& i, Block& out) {
    Read(i.array, i.span, out);
    for (Operand& o : i.indices) Read(o, i.span, out);
    return true;
  }
  bool MutateSubview(Subview& i, Block& out) {
    Read(i.array, i.span, out);
    for (Operand& o : i.indices) Read(o, i.span, out);
    return true;
  }
  bool MutateArrayShape(ArrayShape& i, Block& out) {
    Read(i.array, i.span, out);
    return true;
  }
  bool MutateCheckIndex(CheckIndex& i, Block& out) {
    Read(i.index, i.span, out);
    return true;
  }
  bool MutatePrint(Print& i, Block& out) {
    for (Operand& o : i.values) Read(o, i.span, out);
    return true;
  }
  bool MutateReturn(Return& i, Block& out) {
    if (i.has_value) Read(i.value, i.span, out);
    return true;
  }
  bool MutateIf(If& i, Block& out) {
    Read(i.cond, i.span, out);
    MutateBlock(i.then_body);
    MutateBlock(i.else_body);
    return true;
  }
  bool MutateFor(For& i, Block& out) {
    Read(i.start, i.span, out);
    Read(i.stop, i.span, out);
    Read(i.step, i.span, out);
    MutateBlock(i.body);
    return true;
  }
  bool MutateWhile(While& i, Block&) {
    MutateBlock(i.cond_body);
    Read(i.cond, i.span, i.cond_body);  // after the condition's own instructions
    MutateBlock(i.body);
    return true;
  }

 private:
  // Replaces a read of a mutable variable by a temporary loaded into `out`.
  void Read(Operand& o, const ir::Span& span, Block& out) {
    if (!o.is_var() || !IsMutable(f_.var(o.var).kind)) return;
    auto load = std::make_unique<Load>();
    load->span = span;
    load->place.root = o.var;
    load->place.type = f_.var(o.var).type;
    load->dst = static_cast<VarId>(f_.vars.size());
    f_.vars.push_back(Var{VarKind::kTemp, f_.var(o.var).type, ""});
    o.var = load->dst;
    out.push_back(std::move(load));
  }
  void Steps(Place& p, const ir::Span& span, Block& out) {
    for (Step& s : p.steps) {
      Read(s.index, span, out);
      Read(s.index2, span, out);
    }
  }

  Function& f_;
};

}  // namespace

void MakeReadsExplicit(Function& f) { ExplicitReads(f).MutateBlock(f.body); }

}  // namespace warpd::tir
