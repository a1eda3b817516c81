#include "compiler/codegen/thread_index.h"

#include <cstdint>
#include <variant>

namespace warpd::codegen {
namespace {

bool IsZero(const tir::Operand& o) {
  const int64_t* k = std::get_if<int64_t>(&o.value);
  return !o.is_var() && k != nullptr && *k == 0 && o.type->is_int();
}

// How each variable gets its values: `plain` is false once any write could
// give it something other than 0 or another variable's value (a constant 0
// is like the zero-initialization); `sources` are
// the variables it copies.
struct Defs : tir::Visitor<Defs> {
  explicit Defs(const tir::Function& f) : plain(f.vars.size(), true), sources(f.vars.size()) {}

  void Other(tir::VarId v) {
    if (v != tir::kNoVar) plain[static_cast<size_t>(v)] = false;
  }
  void Copy(tir::VarId dst, const tir::Place& from) {
    if (from.steps.empty()) {
      sources[static_cast<size_t>(dst)].push_back(from.root);
    } else {
      Other(dst);
    }
  }

  void VisitTid(const tir::Tid& i) { tids.insert(i.dst); }
  void VisitLoad(const tir::Load& i) { Copy(i.dst, i.place); }
  void VisitStore(const tir::Store& i) {
    if (i.place.steps.empty() && i.value.is_var()) {
      sources[static_cast<size_t>(i.place.root)].push_back(i.value.var);
    } else if (i.place.steps.empty() && IsZero(i.value)) {
      // Like the zero-initialization.
    } else {
      Other(i.place.root);
    }
  }
  void VisitBuiltin(const tir::Builtin& i) {
    Other(i.dst);
    for (const tir::Arg& a : i.args)
      if (a.mode == tir::Arg::Mode::kOut) Other(a.place.root);
  }
  void VisitMakeTuple(const tir::MakeTuple& i) { Other(i.dst); }
  void VisitCallFunc(const tir::CallFunc& i) { Other(i.dst); }
  void VisitElementAddr(const tir::ElementAddr& i) { Other(i.dst); }
  void VisitSubview(const tir::Subview& i) { Other(i.dst); }
  void VisitLocalArray(const tir::LocalArray& i) { Other(i.dst); }
  void VisitArrayShape(const tir::ArrayShape& i) { Other(i.dst); }
  void VisitCheckIndex(const tir::CheckIndex& i) { Other(i.dst); }
  void VisitTidCoords(const tir::TidCoords& i) {
    for (tir::VarId v : i.dsts) Other(v);
  }
  void VisitFor(const tir::For& i) {
    Other(i.var);
    VisitBlock(i.body);
  }

  std::vector<bool> plain;
  std::vector<std::vector<tir::VarId>> sources;
  std::set<tir::VarId> tids;
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
    if (!IndexType(var.type) || !defs.plain[v]) continue;
    const bool tid_result = defs.tids.contains(static_cast<tir::VarId>(v));
    if (var.kind == tir::VarKind::kTemp) {
      // Defined once: by a Tid, or by a copy.
      tid[v] = tid_result || defs.sources[v].size() == 1;
    } else if (var.kind == tir::VarKind::kLocal || var.kind == tir::VarKind::kSlot) {
      tid[v] = true;  // zero-initialized; checked against its writes below
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < n; ++v) {
      if (!tid[v]) continue;
      for (tir::VarId s : defs.sources[v]) {
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
    const tir::VarId array = a->array.var;
    const tir::Var& var = kernel.var(array);
    // A parameter never written: its descriptor is the argument block's.
    if (var.kind != tir::VarKind::kParam || !defs.plain[static_cast<size_t>(array)] ||
        !defs.sources[static_cast<size_t>(array)].empty() || var.type->ndim() != 1 ||
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
