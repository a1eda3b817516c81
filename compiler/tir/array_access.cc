#include "compiler/tir/array_access.h"

#include <map>
#include <set>

#include "compiler/builtins/builtins.h"

namespace warpd::tir {
namespace {

using Origins = std::map<VarId, std::set<int>>;  // variable -> the parameters it may hold (or point into)

class Access : public Visitor<Access> {
 public:
  Access(const Function& f, const std::vector<std::vector<uint8_t>>& done) : f_(f), done_(done) {
    for (size_t p = 0; p < f.source->params.size(); ++p)
      if (f.vars[p].type && f.vars[p].type->is_array()) arrays_[static_cast<VarId>(p)].insert(static_cast<int>(p));
  }

  std::vector<uint8_t> Run() {
    // Which variables hold which parameters: to a fixpoint (loops carry them).
    for (changed_ = true; changed_;) {
      changed_ = false;
      collecting_ = true;
      VisitBlock(f_.body);
    }
    collecting_ = false;
    bits_.assign(f_.source->params.size(), 0);
    VisitBlock(f_.body);
    return bits_;
  }

  void VisitLoad(const Load& i) {
    if (collecting_) {
      if (i.place.steps.empty()) Flow(arrays_, i.dst, Of(arrays_, i.place.root));
      return;
    }
    Mark(refs_, i.place.root, kAccessRead);
  }
  void VisitStore(const Store& i) {
    if (collecting_) {
      if (i.place.steps.empty() && i.value.is_var()) Flow(arrays_, i.place.root, Of(arrays_, i.value.var));
      return;
    }
    Mark(refs_, i.place.root, kAccessWritten);
  }
  void VisitSubview(const Subview& i) {
    if (collecting_ && i.array.is_var()) Flow(arrays_, i.dst, Of(arrays_, i.array.var));
  }
  void VisitElementAddr(const ElementAddr& i) {
    if (collecting_ && i.array.is_var()) Flow(refs_, i.dst, Of(arrays_, i.array.var));
  }
  void VisitBuiltin(const Builtin& i) {
    if (collecting_) return;
    for (const Arg& a : i.args) {
      if (a.mode == Arg::Mode::kAddress) {
        const std::string_view n = i.overload->name;
        Mark(refs_, a.value.var,
             n == "atomic_add" || n == "atomic_sub" ? kAccessAccumulated : kAccessWritten | kAccessRead);
      } else if (a.mode == Arg::Mode::kValue && a.value.is_var() && a.value.type && a.value.type->is_array()) {
        Mark(arrays_, a.value.var, kAccessRead);  // a builtin reading an array (lower_bound, ...)
      } else if (a.mode == Arg::Mode::kOut) {
        Mark(refs_, a.place.root, kAccessWritten);
      }
    }
  }
  void VisitCallFunc(const CallFunc& i) {
    if (collecting_) return;
    const std::vector<uint8_t>& callee = done_[static_cast<size_t>(i.function)];
    for (size_t k = 0; k < i.args.size() && k < callee.size(); ++k)
      if (i.args[k].is_var()) Mark(arrays_, i.args[k].var, callee[k]);
  }

 private:
  static const std::set<int>* Of(const Origins& o, VarId v) {
    auto it = o.find(v);
    return it == o.end() ? nullptr : &it->second;
  }
  void Flow(Origins& o, VarId to, const std::set<int>* from) {
    if (!from) return;
    for (int p : *from) changed_ |= o[to].insert(p).second;
  }
  void Mark(const Origins& o, VarId v, uint8_t bits) {
    if (const std::set<int>* ps = Of(o, v))
      for (int p : *ps) bits_[static_cast<size_t>(p)] |= bits;
  }

  const Function& f_;
  const std::vector<std::vector<uint8_t>>& done_;
  Origins arrays_;  // array-typed variables
  Origins refs_;    // element references
  std::vector<uint8_t> bits_;
  bool changed_ = false;
  bool collecting_ = true;
};

}  // namespace

std::vector<std::vector<uint8_t>> AnalyzeArrayAccess(const Module& m) {
  std::vector<std::vector<uint8_t>> out(m.functions.size());
  for (int i : CallGraphOf(m).callees_first) {
    const Function& f = m.functions[static_cast<size_t>(i)];
    out[static_cast<size_t>(i)].assign(f.source->params.size(), 0);
    if (ir::IsEmitted(*f.source)) out[static_cast<size_t>(i)] = Access(f, out).Run();
  }
  return out;
}

}  // namespace warpd::tir
