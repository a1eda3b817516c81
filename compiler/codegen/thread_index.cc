#include "compiler/codegen/thread_index.h"

#include <cstdint>
#include <variant>

#include "compiler/builtins/random_state.h"

namespace warpd::codegen {
namespace {

bool IsZero(const tir::Operand& o) {
  const int64_t* k = std::get_if<int64_t>(&o.value);
  return !o.is_var() && k != nullptr && *k == 0 && o.type->is_int();
}

// Which thread index a variable holds exactly: the linear id, or coordinate
// k of an n-dimensional TidCoords.
constexpr int kTop = -2;      // no definition seen yet (optimistic)
constexpr int kNotExact = -1;
constexpr int kLinear = 1;
int Coord(int k, int n) { return 100 + 10 * n + k; }

// Every definition of every variable: a thread index (`consts`: kLinear for
// a Tid, Coord(k, n) for a TidCoords), a copy of another variable
// (`copies`), a store of the constant 0 (`zero_store`: like the
// zero-initialization), or anything else (`other`, a random state a builtin
// advances included); `nested_store`: written inside a branch or loop.
struct Defs : tir::Visitor<Defs> {
  explicit Defs(const tir::Function& f)
      : consts(f.vars.size()),
        copies(f.vars.size()),
        zero_store(f.vars.size(), false),
        other(f.vars.size(), false),
        nested_store(f.vars.size(), false) {}

  void Other(tir::VarId v) {
    if (v != tir::kNoVar) other[static_cast<size_t>(v)] = true;
  }
  bool HasCoords(size_t v) const {
    for (int c : consts[v])
      if (c != kLinear) return true;
    return false;
  }
  void VisitTid(const tir::Tid& i) { consts[static_cast<size_t>(i.dst)].push_back(kLinear); }
  void VisitTidCoords(const tir::TidCoords& i) {
    const int n = static_cast<int>(i.dsts.size());
    for (int k = 0; k < n; ++k) {
      const size_t v = static_cast<size_t>(i.dsts[static_cast<size_t>(k)]);
      consts[v].push_back(Coord(k, n));
      if (depth > 0) nested_store[v] = true;
    }
  }
  void VisitLoad(const tir::Load& i) {
    if (i.place.steps.empty()) {
      copies[static_cast<size_t>(i.dst)].push_back(i.place.root);
    } else {
      Other(i.dst);
    }
  }
  void VisitStore(const tir::Store& i) {
    const size_t root = static_cast<size_t>(i.place.root);
    if (depth > 0) nested_store[root] = true;
    if (i.place.steps.empty() && i.value.is_var()) {
      copies[root].push_back(i.value.var);
    } else if (i.place.steps.empty() && IsZero(i.value)) {
      zero_store[root] = true;
    } else {
      Other(i.place.root);
    }
  }
  void VisitBuiltin(const tir::Builtin& i) {
    Other(i.dst);
    for (size_t k = 0; k < i.args.size(); ++k) {
      if (i.args[k].mode == tir::Arg::Mode::kOut) Other(i.args[k].place.root);
      if (i.args[k].mode == tir::Arg::Mode::kValue && i.args[k].value.is_var() &&
          builtins::AdvancesState(*i.overload, k))
        Other(i.args[k].value.var);  // a random state, advanced in place
    }
  }
  void VisitMakeTuple(const tir::MakeTuple& i) { Other(i.dst); }
  void VisitCallFunc(const tir::CallFunc& i) { Other(i.dst); }
  void VisitGrad(const tir::Grad& i) { Other(i.dst); }
  void VisitElementAddr(const tir::ElementAddr& i) { Other(i.dst); }
  void VisitSubview(const tir::Subview& i) { Other(i.dst); }
  void VisitLocalArray(const tir::LocalArray& i) { Other(i.dst); }
  void VisitArrayShape(const tir::ArrayShape& i) { Other(i.dst); }
  void VisitCheckIndex(const tir::CheckIndex& i) { Other(i.dst); }
  void VisitIf(const tir::If& i) {
    ++depth;
    VisitBlock(i.then_body);
    VisitBlock(i.else_body);
    --depth;
  }
  void VisitFor(const tir::For& i) {
    Other(i.var);
    ++depth;
    VisitBlock(i.body);
    --depth;
  }
  void VisitWhile(const tir::While& i) {
    ++depth;
    VisitBlock(i.cond_body);
    VisitBlock(i.body);
    --depth;
  }

  std::vector<std::vector<int>> consts;
  std::vector<std::vector<tir::VarId>> copies;
  std::vector<bool> zero_store, other, nested_store;
  int depth = 0;
};

bool IndexType(types::TypeRef t) {
  if (!t->is_scalar()) return false;
  switch (t->scalar()) {
    case types::ScalarKind::kInt32:
    case types::ScalarKind::kUInt32:
    case types::ScalarKind::kInt64:
    case types::ScalarKind::kUInt64: return true;
    default: return false;
  }
}

struct Accesses : tir::Visitor<Accesses> {
  void VisitElementAddr(const tir::ElementAddr& i) { all.push_back(&i); }
  std::vector<const tir::ElementAddr*> all;
};

}  // namespace

ThreadIndexed FindThreadIndexed(const tir::Function& kernel) {
  Defs defs(kernel);
  defs.VisitBlock(kernel.body);
  const size_t n = kernel.vars.size();
  // The greatest set closed under the rules: start from every candidate and
  // drop variables with a source outside the set until nothing changes.
  std::vector<bool> tid(n, false);
  for (size_t v = 0; v < n; ++v) {
    const tir::Var& var = kernel.vars[v];
    // A thread coordinate is not the thread id (FindThreadIndexed is 1-D).
    if (!IndexType(var.type) || defs.other[v] || defs.HasCoords(v)) continue;
    const bool tid_result = !defs.consts[v].empty();
    if (var.kind == tir::VarKind::kTemp) {
      // Defined once: by a Tid, or by a copy.
      tid[v] = tid_result || defs.copies[v].size() == 1;
    } else if (var.kind == tir::VarKind::kLocal || var.kind == tir::VarKind::kSlot) {
      tid[v] = true;  // zero-initialized; checked against its writes below
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < n; ++v) {
      if (!tid[v]) continue;
      for (tir::VarId s : defs.copies[v]) {
        if (!tid[static_cast<size_t>(s)]) {
          tid[v] = false;
          changed = true;
          break;
        }
      }
    }
  }

  ThreadIndexed out;
  std::set<tir::VarId> arrays;
  Accesses accesses;
  accesses.VisitBlock(kernel.body);
  for (const tir::ElementAddr* a : accesses.all) {
    if (a->indices.size() != 1 || !a->indices[0].is_var() || !a->array.is_var()) continue;
    if (!tid[static_cast<size_t>(a->indices[0].var)]) continue;
    tir::VarId array = a->array.var;
    // A temporary holding a copy of a parameter (an adjoint's explicit
    // reads, tir::MakeReadsExplicit) indexes the parameter's memory.
    if (kernel.var(array).kind == tir::VarKind::kTemp && !defs.other[static_cast<size_t>(array)] &&
        defs.copies[static_cast<size_t>(array)].size() == 1)
      array = defs.copies[static_cast<size_t>(array)][0];
    const tir::Var& var = kernel.var(array);
    // A parameter never written: its descriptor is the argument block's.
    if (var.kind != tir::VarKind::kParam || defs.other[static_cast<size_t>(array)] ||
        !defs.copies[static_cast<size_t>(array)].empty() || var.type->ndim() != 1 ||
        var.type->is_indexed_array()) {  // its element i is data[indices[i]]: checked per access
      continue;
    }
    out.accesses.insert(a);
    arrays.insert(array);
  }
  for (tir::VarId v : arrays) out.arrays.push_back(kernel.var(v).name);  // params come first, in order
  return out;
}

}  // namespace warpd::codegen

namespace warpd::codegen {
namespace {


// Loads of variables anywhere inside an instruction.
struct LoadsIn : tir::Visitor<LoadsIn> {
  void VisitLoad(const tir::Load& i) { roots.insert(i.place.root); }
  std::set<tir::VarId> roots;
};

// Every operand use of a variable, with whether the use keeps an array
// parameter thread-exclusive (ElementAddr's array with exact indices, its
// shape, a plain copy into a temporary).
struct ArrayUses : tir::Visitor<ArrayUses> {
  ArrayUses(const tir::Function& f, const std::vector<int>& cls) : f_(f), cls_(cls), bad(f.vars.size(), false) {}

  void Use(const tir::Operand& o) {
    if (o.is_var()) bad[static_cast<size_t>(o.var)] = true;
  }
  void Steps(const tir::Place& p) {
    for (const tir::Step& s : p.steps) {
      Use(s.index);
      Use(s.index2);
    }
  }
  bool ExactIndices(const tir::ElementAddr& i) const {
    if (i.indices.empty()) return false;
    const int n = static_cast<int>(i.indices.size());
    for (int k = 0; k < n; ++k) {
      const tir::Operand& o = i.indices[static_cast<size_t>(k)];
      if (!o.is_var()) return false;
      const int c = cls_[static_cast<size_t>(o.var)];
      if (!(n == 1 && c == kLinear) && c != Coord(k, n)) return false;
    }
    return true;
  }

  void VisitLoad(const tir::Load& i) {
    // A copy of the whole variable is followed through `copies`; anything
    // else reads part of it.
    if (!i.place.steps.empty() && f_.var(i.place.root).type->is_array()) bad[static_cast<size_t>(i.place.root)] = true;
    Steps(i.place);
  }
  void VisitStore(const tir::Store& i) {
    Steps(i.place);
    Use(i.value);
  }
  void VisitBuiltin(const tir::Builtin& i) {
    for (const tir::Arg& a : i.args) {
      if (a.mode == tir::Arg::Mode::kValue) Use(a.value);
      if (a.mode == tir::Arg::Mode::kOut) Steps(a.place);
    }
  }
  void VisitMakeTuple(const tir::MakeTuple& i) {
    for (const auto& o : i.elements) Use(o);
  }
  void VisitCallFunc(const tir::CallFunc& i) {
    for (const auto& o : i.args) Use(o);
  }
  void VisitElementAddr(const tir::ElementAddr& i) {
    if (!ExactIndices(i)) Use(i.array);
    addrs.push_back(&i);
  }
  void VisitSubview(const tir::Subview& i) {
    Use(i.array);
    for (const auto& o : i.indices) Use(o);
  }
  void VisitCheckIndex(const tir::CheckIndex& i) { Use(i.index); }
  void VisitPrint(const tir::Print& i) {
    for (const auto& o : i.values) Use(o);
  }
  void VisitReturn(const tir::Return& i) {
    if (i.has_value) Use(i.value);
  }
  void VisitIf(const tir::If& i) {
    Use(i.cond);
    VisitBlock(i.then_body);
    VisitBlock(i.else_body);
  }
  void VisitFor(const tir::For& i) {
    Use(i.start);
    Use(i.stop);
    Use(i.step);
    VisitBlock(i.body);
  }
  void VisitWhile(const tir::While& i) {
    VisitBlock(i.cond_body);
    Use(i.cond);
    VisitBlock(i.body);
  }

  const tir::Function& f_;
  const std::vector<int>& cls_;
  std::vector<bool> bad;
  std::vector<const tir::ElementAddr*> addrs;
};

}  // namespace

ThreadExclusive FindThreadExclusive(const tir::Function& kernel) {
  const size_t n = kernel.vars.size();
  Defs defs(kernel);
  defs.VisitBlock(kernel.body);

  // Locals and slots: written only at the top level, never read before their
  // first write (else they hold their zero-initialization somewhere).
  std::vector<bool> unfit(n, false);
  {
    std::set<tir::VarId> written;
    for (const auto& inst : kernel.body) {
      LoadsIn loads;
      loads.Visit(*inst);
      for (tir::VarId v : loads.roots)
        if (!written.contains(v)) unfit[static_cast<size_t>(v)] = true;
      if (inst->kind == tir::InstKind::Store) written.insert(tir::Cast<tir::Store>(*inst).place.root);
      if (inst->kind == tir::InstKind::TidCoords)
        for (tir::VarId d : tir::Cast<tir::TidCoords>(*inst).dsts) written.insert(d);
    }
  }

  // The greatest solution: start optimistic, meet over definitions.
  std::vector<int> cls(n, kTop);
  for (size_t v = 0; v < n; ++v) {
    const tir::Var& var = kernel.vars[v];
    const bool local = var.kind == tir::VarKind::kLocal || var.kind == tir::VarKind::kSlot;
    if (var.kind == tir::VarKind::kParam || !IndexType(var.type) || defs.other[v] || defs.zero_store[v] ||
        (local && (defs.nested_store[v] || unfit[v])) ||
        (var.kind != tir::VarKind::kTemp && !local) || (defs.consts[v].empty() && defs.copies[v].empty()))
      cls[v] = kNotExact;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < n; ++v) {
      if (cls[v] == kNotExact) continue;
      int c = kTop;
      auto meet = [&](int x) {
        if (x == kTop) return;
        c = (c == kTop || c == x) ? x : kNotExact;
      };
      for (int k : defs.consts[v]) meet(k);
      for (tir::VarId s : defs.copies[v]) meet(cls[static_cast<size_t>(s)] == kNotExact ? kNotExact : cls[static_cast<size_t>(s)]);
      if (c != cls[v] && c != kTop) {
        cls[v] = c;
        changed = true;
      }
    }
  }
  for (int& c : cls)
    if (c == kTop) c = kNotExact;

  ArrayUses uses(kernel, cls);
  uses.VisitBlock(kernel.body);
  // Which parameter each array variable holds: the parameter itself, or a
  // temporary copied from it (explicit reads, tir/explicit_reads.h).
  std::vector<tir::VarId> holds(n, tir::kNoVar);
  std::vector<bool> param_ok(n, false);
  for (size_t v = 0; v < n; ++v) {
    const tir::Var& var = kernel.vars[v];
    if (var.kind != tir::VarKind::kParam || !var.type || !var.type->is_array() || var.type->is_indexed_array())
      continue;
    // Never reassigned.
    if (defs.other[v] || !defs.copies[v].empty()) continue;
    holds[v] = static_cast<tir::VarId>(v);
    param_ok[v] = !uses.bad[v];
  }
  for (size_t v = 0; v < n; ++v) {
    const tir::Var& var = kernel.vars[v];
    if (var.kind != tir::VarKind::kTemp || !var.type || !var.type->is_array()) continue;
    if (defs.other[v] || defs.copies[v].size() != 1) continue;
    const tir::VarId from = defs.copies[v][0];
    if (holds[static_cast<size_t>(from)] == tir::kNoVar || kernel.vars[static_cast<size_t>(from)].kind != tir::VarKind::kParam)
      continue;
    holds[v] = from;
    if (uses.bad[v]) param_ok[static_cast<size_t>(from)] = false;
  }
  // Anything else holding a parameter (a local alias, a struct) disqualifies it.
  for (size_t v = 0; v < n; ++v) {
    for (tir::VarId s : defs.copies[v]) {
      const tir::VarId p = holds[static_cast<size_t>(s)];
      if (p != tir::kNoVar && holds[v] != p) param_ok[static_cast<size_t>(p)] = false;
    }
  }

  ThreadExclusive out;
  for (size_t v = 0; v < n; ++v)
    if (param_ok[v]) out.params.insert(static_cast<tir::VarId>(v));
  for (const tir::ElementAddr* a : uses.addrs) {
    if (!a->array.is_var()) continue;
    const tir::VarId p = holds[static_cast<size_t>(a->array.var)];
    if (p != tir::kNoVar && out.params.contains(p)) out.refs.insert(a->dst);
  }
  return out;
}

}  // namespace warpd::codegen
