#include "compiler/tir/lower.h"

#include <unordered_map>

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"
#include "compiler/tir/builder.h"
#include "compiler/tir/print_sites.h"

namespace warpd::tir {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::StmtKind;
using types::ScalarKind;

using ir::IsStringConstant;

class FunctionLowering {
 public:
  FunctionLowering(const ir::Module& m, const PrintSites& prints, Function& out)
      : prints_(prints), f_(*out.source), b_(m, out) {}

  absl::Status Run() {
    // Vars 0..n-1 are the function's locals in sema's order (params first).
    for (const auto& l : f_.locals)
      b_.NewVar(l.is_param ? VarKind::kParam : VarKind::kLocal, l.type, l.name);
    for (size_t i = 0; i < f_.locals.size(); ++i) locals_[f_.locals[i].name] = static_cast<VarId>(i);
    Block(f_.body);
    return b_.status();
  }

 private:
  VarId LocalVar(const std::string& name, const ir::Span& span) {
    auto it = locals_.find(name);
    if (it != locals_.end()) return it->second;
    b_.Fail(span, Cat("unknown local '", name, "'"));
    return kNoVar;
  }

  static Operand Constant(const Expr& e) { return Operand::Constant(e.value, e.type); }

  // ------------------------------------------------------------ statements

  void Block(const ir::Block& block) {
    for (const auto& s : block) Stmt(*s);
  }

  void Stmt(const ir::Stmt& s) {
    switch (s.kind) {
      case StmtKind::Assign: return Assign(s);
      case StmtKind::AugAssign: return AugAssign(s);
      case StmtKind::ExprStmt:
        if (!IsStringConstant(*s.value)) (void)Value(*s.value);  // a string statement (docstring) does nothing
        return;
      case StmtKind::If: {
        Operand c = Value(*s.value);
        If& i = b_.MakeIf(c, s.span);
        {
          Builder::Scope in(b_, i.then_body);
          Block(s.body);
        }
        Builder::Scope in(b_, i.else_body);
        Block(s.orelse);
        return;
      }
      case StmtKind::For: return ForLoop(s);
      case StmtKind::While: {
        While& w = b_.MakeWhile(s.span);
        {
          Builder::Scope in(b_, w.cond_body);
          w.cond = Value(*s.value);
        }
        Builder::Scope in(b_, w.body);
        Block(s.body);
        return;
      }
      case StmtKind::Return:
        if (s.value && f_.kind == ir::FunctionKind::kFunc) {
          Operand v = Value(*s.value);
          b_.MakeReturn(&v, s.span);
        } else {
          b_.MakeReturn(nullptr, s.span);
        }
        return;
      case StmtKind::Break: b_.MakeBreak(s.span); return;
      case StmtKind::Continue: b_.MakeContinue(s.span); return;
      case StmtKind::Pass: return;
    }
  }

  void Assign(const ir::Stmt& s) {
    const Expr& target = *s.target;
    if (target.kind == ExprKind::Tuple && s.value->type->is_tuple()) {  // a, b = tuple
      Operand v = Value(*s.value);
      if (!v.is_var()) return b_.Fail(s.span, "a tuple that is not a variable");
      for (size_t k = 0; k < target.operands.size(); ++k) {
        Operand element = b_.Load(b_.TupleElement(b_.Root(v.var), static_cast<int>(k)), s.span);
        b_.Store(PlaceOf(*target.operands[k]), element, s.span);
      }
      return;
    }
    if (target.kind == ExprKind::Tuple) {  // i, j = wp.tid()
      std::vector<VarId> dsts;
      for (const auto& t : target.operands) dsts.push_back(LocalVar(t->name, t->span));
      b_.TidCoords(std::move(dsts), s.span);
      return;
    }
    Operand v = Value(*s.value);
    if (ir::IsComponentSlice(target)) {  // v[1:] = w: component by component
      StoreSlice(SliceComponentPlaces(target, PlaceOf(*target.operands[0])), v, s.span);
      return;
    }
    b_.Store(PlaceOf(target), v, s.span);
  }

  // As in Python (and Warp 1.19): the target's place (its indices, with
  // their side effects) first, then its current value, then the value.
  void AugAssign(const ir::Stmt& s) {
    const Expr& target = *s.target;
    if (s.overload && s.overload->form == builtins::Form::kAtomic) {
      // a[i] += v / a[i] -= v: atomic on the element.
      VarId p = ElementOf(target);
      Operand v = Value(*s.value);
      b_.CallBuiltin(s.overload, s.callee, {AddressArg(p, target.type), ValueArg(v)}, types::Void(), s.span);
      return;
    }
    if (ir::IsComponentSlice(target)) {  // v[1:] += w: load the slice, combine, store it back
      std::vector<Place> places = SliceComponentPlaces(target, PlaceOf(*target.operands[0]));
      Operand current = LoadSlice(target, places);
      Operand v = Value(*s.value);
      Operand updated = b_.CallBuiltin(s.overload, s.callee, {ValueArg(current), ValueArg(v)}, target.type, s.span);
      StoreSlice(places, updated, s.span);
      return;
    }
    Place place = PlaceOf(target);
    Operand current = b_.Load(place, s.span);
    Operand v = Value(*s.value);
    Operand updated = s.function_index >= 0
                          ? b_.CallFunction(s.function_index, {current, v}, s.span)  // a user operator
                          : b_.CallBuiltin(s.overload, s.callee, {ValueArg(current), ValueArg(v)}, target.type, s.span);
    b_.Store(std::move(place), updated, s.span);
  }

  // for index in <query>: a copy of the query advanced by its _next builtin
  // into `index` until it is exhausted (Warp's iter_next / iter_cmp).
  void QueryLoop(const ir::Stmt& s) {
    const TypeRef qt = s.value->type;
    const builtins::Overload* next = nullptr;
    const bool mesh = qt->query_kind() != types::QueryKind::kHashGrid;  // a mesh box or sphere query
    const char* next_name = mesh ? "mesh_query_next" : "hash_grid_query_next";
    for (const builtins::Overload* o : builtins::Lookup(next_name)) {
      if (o->sig.params.size() != 2) continue;
      const builtins::Pattern& p = o->sig.params[0].pattern;
      if (p.query == qt->query_kind() && p.scalar == qt->scalar()) next = o;
    }
    if (next == nullptr)
      return b_.Fail(s.span, Cat("for loops cannot iterate over a ", qt->ToString()));
    Operand init = Value(*s.value);
    VarId state = b_.Slot(qt, s.span);
    b_.Store(b_.Root(state), init, s.span);
    VarId index = LocalVar(s.target->name, s.target->span);
    While& w = b_.MakeWhile(s.span);
    {
      Builder::Scope in(b_, w.cond_body);
      std::vector<Arg> args(2);
      args[0].mode = Arg::Mode::kOut;
      args[0].place = b_.Root(state);
      args[1].mode = Arg::Mode::kOut;
      args[1].place = b_.Root(index);
      w.cond = b_.CallBuiltin(next, next->cpp, std::move(args), types::Scalar(ScalarKind::kBool), s.span);
    }
    Builder::Scope in(b_, w.body);
    Block(s.body);
  }

  void ForLoop(const ir::Stmt& s) {
    if (s.value->type != nullptr && s.value->type->is_query()) return QueryLoop(s);
    // reversed(...) layers around the range (sema checked them): an odd
    // number runs the range's values last first.
    const Expr* iter = s.value.get();
    const builtins::Overload* reversed = nullptr;
    bool reverse = false;
    while (iter->overload != nullptr && iter->overload->name == "reversed") {
      reversed = iter->overload;
      reverse = !reverse;
      iter = iter->operands[0].get();
    }
    const Expr& range = *iter;
    TypeRef t = range.type;
    Operand start = Operand::Constant(int64_t{0}, t), stop, step = Operand::Constant(int64_t{1}, t);
    if (range.operands.size() == 1) {
      stop = Value(*range.operands[0]);
    } else {
      start = Value(*range.operands[0]);
      stop = Value(*range.operands[1]);
      if (range.operands.size() == 3) step = Value(*range.operands[2]);
    }
    if (reverse) {
      // The same arithmetic progression backwards, its bounds in 64 bits
      // (the loop's counter; the values themselves are the range's).
      TypeRef i64 = types::Scalar(ScalarKind::kInt64);
      Operand lo = start, hi = stop, st = step;
      start = b_.CallBuiltin(reversed, "wp::reversed_range_start", {ValueArg(lo), ValueArg(hi), ValueArg(st)}, i64,
                             s.span);
      stop = b_.CallBuiltin(reversed, "wp::reversed_range_stop", {ValueArg(lo), ValueArg(hi), ValueArg(st)}, i64,
                            s.span);
      step = b_.CallBuiltin(reversed, "wp::reversed_range_step", {ValueArg(st)}, i64, s.span);
    }
    For& loop = b_.MakeFor(LocalVar(s.target->name, s.target->span), start, stop, step, s.span);
    Builder::Scope in(b_, loop.body);
    Block(s.body);
  }

  // ------------------------------------------------------------ places

  // An index of a value of `extent` elements: constants were range-checked
  // by sema; anything else is checked here.
  Operand Index(const Expr& index, int extent) {
    if (index.kind == ExprKind::Constant) return Constant(index);
    return b_.CheckIndex(Value(index), extent, index.span);
  }

  // The element reference of a fully indexed array element (array, then
  // indices, evaluated in order).
  VarId ElementOf(const Expr& sub) {
    Operand arr = Value(*sub.operands[0]);
    std::vector<Operand> idx;
    for (size_t i = 1; i < sub.operands.size(); ++i) idx.push_back(Value(*sub.operands[i]));
    return b_.ElementAddr(arr, std::move(idx), sub.span);
  }

  // The place of a path expression (a local, a component/member/row of a
  // place, an array element); any other expression is evaluated into a
  // temporary that becomes the root.
  Place PlaceOf(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name:
        return b_.Root(LocalVar(e.name, e.span));
      case ExprKind::Attribute: {
        const Expr& owner = *e.operands[0];
        TypeRef t = owner.type;
        if (t->is_struct() || t->is_transform() || t->is_query()) return b_.Member(PlaceOf(owner), e.name);
        static const char kNames[] = "xyzw";
        int k = 0;
        while (k < 4 && e.name.size() == 1 && e.name[0] != kNames[k]) ++k;
        return b_.Component(PlaceOf(owner), Operand::Constant(int64_t{k}, types::Scalar(ScalarKind::kInt32)));
      }
      case ExprKind::Subscript: {
        const Expr& owner = *e.operands[0];
        TypeRef t = owner.type;
        if (!e.slice_components.empty() || HasSlice(e)) break;  // a slice is a value
        if (t->is_array() && static_cast<int>(e.operands.size() - 1) == t->ndim())
          return b_.Root(ElementOf(e));
        if (t->is_array()) break;  // a slice is a value
        if (t->is_tuple()) return b_.TupleElement(PlaceOf(owner), e.element_index);
        if (t->is_matrix()) {
          Place base = PlaceOf(owner);
          Operand i = Index(*e.operands[1], t->rows());
          if (e.operands.size() == 3) return b_.MatrixElement(std::move(base), i, Index(*e.operands[2], t->cols()));
          return b_.MatrixRow(std::move(base), i);
        }
        if (t->is_transform()) {
          Place base = PlaceOf(owner);
          return b_.TransformIndex(std::move(base), Index(*e.operands[1], 7));
        }
        Place base = PlaceOf(owner);
        return b_.Component(std::move(base), Index(*e.operands[1], t->length()));
      }
      default:
        break;
    }
    Operand v = Value(e);
    if (!v.is_var()) {
      b_.Fail(e.span, "a path into a constant");
      return b_.Root(kNoVar);
    }
    return b_.Root(v.var);
  }

  // ------------------------------------------------------------ values

  static bool HasSlice(const Expr& sub) {
    for (size_t i = 1; i < sub.operands.size(); ++i)
      if (ir::IsSlice(*sub.operands[i])) return true;
    return false;
  }

  // a[1:3, j]: a view; a slice's missing start and stop are INT64_MIN (the
  // ends, by the step's sign: wp::slice_view), a missing step 1.
  Operand ArraySlice(const Expr& e) {
    Operand arr = Value(*e.operands[0]);
    TypeRef i64 = types::Scalar(ScalarKind::kInt64);
    std::vector<bool> slices;
    std::vector<Operand> operands;
    for (size_t i = 1; i < e.operands.size(); ++i) {
      const Expr& ix = *e.operands[i];
      if (!ir::IsSlice(ix)) {
        slices.push_back(false);
        operands.push_back(Value(ix));
        continue;
      }
      Operand part[3] = {Operand::Constant(INT64_MIN, i64), Operand::Constant(INT64_MIN, i64),
                         Operand::Constant(int64_t{1}, i64)};
      for (size_t k = 0; k < ix.operands.size(); ++k) {
        const std::string& name = ix.keywords[k];
        part[name == "start" ? 0 : name == "stop" ? 1 : 2] = Value(*ix.operands[k]);
      }
      slices.push_back(true);
      for (auto& p : part) operands.push_back(std::move(p));
    }
    return b_.SliceView(arr, std::move(slices), std::move(operands), e.span);
  }

  // v[1:3], m[:, j], m[0:2, 1:3]: the places of the selected components of
  // `base` (the owner's place) in order (row-major for a 2-D block); sema
  // listed them. A run-time row or column index is checked once, here.
  std::vector<Place> SliceComponentPlaces(const Expr& e, const Place& base) {
    TypeRef t = e.operands[0]->type;
    TypeRef i32 = types::Scalar(ScalarKind::kInt32);
    auto k = [&](int c) { return Operand::Constant(int64_t{c}, i32); };
    std::vector<Place> out;
    const auto& sc = e.slice_components;
    if (t->is_vector() || t->is_quat()) {
      for (int c : sc[0]) out.push_back(b_.Component(base, k(c)));
      return out;
    }
    if (t->is_transform()) {
      for (int c : sc[0]) out.push_back(b_.TransformIndex(base, k(c)));
      return out;
    }
    const bool row_slice = ir::IsSlice(*e.operands[1]);
    const bool col_slice = e.operands.size() == 3 && ir::IsSlice(*e.operands[2]);
    if (row_slice && (col_slice || e.operands.size() == 2)) {  // a block (m[1:3] takes every column)
      for (int r : sc[0])
        for (int c : sc[1]) out.push_back(b_.MatrixElement(base, k(r), k(c)));
    } else if (row_slice) {  // m[1:3, j]: part of a column
      Operand j = Index(*e.operands[2], t->cols());
      for (int r : sc[0]) out.push_back(b_.MatrixElement(base, k(r), j));
    } else {  // m[i, 1:3]: part of a row
      Operand i = Index(*e.operands[1], t->rows());
      for (int c : sc[1]) out.push_back(b_.MatrixElement(base, i, k(c)));
    }
    return out;
  }

  // The places of the components of `v` (a vector or matrix value, made a
  // variable when it is not one), in the order SliceComponentPlaces lists a
  // slice of its type.
  std::vector<Place> ValueComponentPlaces(Operand v, const ir::Span& span) {
    if (!v.is_var()) {
      VarId slot = b_.Slot(v.type, span);
      b_.Store(b_.Root(slot), v, span);
      v = Operand::Of(slot, v.type);
    }
    const Place root = b_.Root(v.var);
    TypeRef i32 = types::Scalar(ScalarKind::kInt32);
    auto k = [&](int c) { return Operand::Constant(int64_t{c}, i32); };
    std::vector<Place> out;
    if (v.type->is_matrix()) {
      for (int r = 0; r < v.type->rows(); ++r)
        for (int c = 0; c < v.type->cols(); ++c) out.push_back(b_.MatrixElement(root, k(r), k(c)));
    } else {
      for (int c = 0; c < v.type->length(); ++c) out.push_back(b_.Component(root, k(c)));
    }
    return out;
  }

  // The slice's components loaded from `places`, constructed into a value of its type.
  Operand LoadSlice(const Expr& e, const std::vector<Place>& places) {
    std::vector<Arg> parts;
    for (const Place& p : places) parts.push_back(ValueArg(b_.Load(p, e.span)));
    const builtins::Overload* ctor = builtins::Lookup("vector").front();
    return b_.CallBuiltin(ctor, builtins::Spell("$R{{$*}}", {.result = e.type}), std::move(parts), e.type, e.span);
  }

  // Stores each component of `v` (the slice's type) into `places`. A value
  // that is a variable the stores may change (v[::-1] = v) is copied first,
  // as Warp passes it by value.
  void StoreSlice(const std::vector<Place>& places, Operand v, const ir::Span& span) {
    if (v.is_var() && b_.function().var(v.var).kind != VarKind::kTemp) {
      VarId copy = b_.Slot(v.type, span);
      b_.Store(b_.Root(copy), v, span);
      v = Operand::Of(copy, v.type);
    }
    std::vector<Place> from = ValueComponentPlaces(std::move(v), span);
    if (from.size() != places.size()) return b_.Fail(span, "a slice stored from a value of another size");
    for (size_t i = 0; i < places.size(); ++i) b_.Store(places[i], b_.Load(from[i], span), span);
  }

  // v[1:3] as a value: the owner's value, then its selected components.
  Operand ComponentSlice(const Expr& e) {
    const Expr& owner = *e.operands[0];
    Operand base = Value(owner);
    if (!base.is_var()) {
      VarId slot = b_.Slot(owner.type, e.span);
      b_.Store(b_.Root(slot), base, e.span);
      base = Operand::Of(slot, owner.type);
    }
    return LoadSlice(e, SliceComponentPlaces(e, b_.Root(base.var)));
  }

  static Arg ValueArg(Operand v) {
    Arg a;
    a.value = std::move(v);
    return a;
  }
  static Arg AddressArg(VarId ref, TypeRef elem) {
    Arg a;
    a.mode = Arg::Mode::kAddress;
    a.value = Operand::Of(ref, elem);
    return a;
  }

  Operand Value(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name:
        return Operand::Of(LocalVar(e.name, e.span), e.type);
      case ExprKind::Constant:
        if (IsStringConstant(e)) {
          b_.Fail(e.span, "a string outside print");
          return Operand::Of(kNoVar, types::Void());
        }
        return Constant(e);
      case ExprKind::Binary: {
        Operand a = Value(*e.operands[0]);
        Operand b = Value(*e.operands[1]);
        return b_.CallBuiltin(e.overload, e.callee, {ValueArg(a), ValueArg(b)}, e.type, e.span);
      }
      case ExprKind::Unary: {
        const Expr& x = *e.operands[0];
        if (e.unary_op == ir::UnaryOp::kNeg && x.kind == ExprKind::Constant && e.type->is_scalar() &&
            !std::holds_alternative<bool>(x.value)) {
          // A negated literal: one constant of the (possibly coerced) type.
          if (const int64_t* i = std::get_if<int64_t>(&x.value))
            return Operand::Constant(static_cast<int64_t>(0 - static_cast<uint64_t>(*i)), e.type);
          if (const double* d = std::get_if<double>(&x.value)) return Operand::Constant(-*d, e.type);
        }
        Operand v = Value(x);
        return b_.CallBuiltin(e.overload, e.callee, {ValueArg(v)}, e.type, e.span);
      }
      case ExprKind::Compare:
        return Compare(e);
      case ExprKind::BoolOp:
        return BoolOp(e);
      case ExprKind::Call:
        return Call(e);
      case ExprKind::Subscript: {
        const Expr& owner = *e.operands[0];
        if (owner.kind == ExprKind::Attribute && owner.name == "shape" && owner.operands[0]->type->is_array()) {
          Operand arr = Value(*owner.operands[0]);
          return b_.ArrayShape(arr, static_cast<int>(std::get<int64_t>(e.operands[1]->value)), e.span);
        }
        if (owner.type->is_array() && HasSlice(e)) return ArraySlice(e);
        if (!e.slice_components.empty()) return ComponentSlice(e);
        if (owner.type->is_array() && static_cast<int>(e.operands.size() - 1) < owner.type->ndim()) {
          Operand arr = Value(owner);
          std::vector<Operand> idx;
          for (size_t i = 1; i < e.operands.size(); ++i) idx.push_back(Value(*e.operands[i]));
          return b_.Subview(arr, std::move(idx), e.span);
        }
        return b_.Load(PlaceOf(e), e.span);
      }
      case ExprKind::Attribute:
        return b_.Load(PlaceOf(e), e.span);
      case ExprKind::IfExp: {
        VarId r = b_.Slot(e.type, e.span);
        Operand c = Value(*e.operands[0]);
        If& i = b_.MakeIf(c, e.span);
        {
          Builder::Scope in(b_, i.then_body);
          b_.Store(b_.Root(r), Value(*e.operands[1]), e.span);
        }
        {
          Builder::Scope in(b_, i.else_body);
          b_.Store(b_.Root(r), Value(*e.operands[2]), e.span);
        }
        return Operand::Of(r, e.type);
      }
      case ExprKind::Tuple: {
        std::vector<Operand> elements;
        for (const auto& o : e.operands) elements.push_back(Value(*o));
        return b_.MakeTuple(e.type, std::move(elements), e.span);
      }
      case ExprKind::TypeValue:
        break;
    }
    b_.Fail(e.span, Cat("a ", ir::ExprKindName(e.kind), " expression as a value"));
    return Operand::Of(kNoVar, types::Void());
  }

  // a < b < c: each comparison only if the previous held; b evaluated once.
  Operand Compare(const Expr& e) {
    Operand left = Value(*e.operands[0]);
    Operand right = Value(*e.operands[1]);
    Operand r = b_.CallBuiltin(e.compare_overloads[0], e.callees[0], {ValueArg(left), ValueArg(right)}, e.type, e.span);
    if (e.compare_ops.size() == 1) return r;
    VarId result = b_.Slot(e.type, e.span);
    b_.Store(b_.Root(result), r, e.span);
    std::vector<std::unique_ptr<Builder::Scope>> scopes;
    for (size_t i = 1; i < e.compare_ops.size(); ++i) {
      If& next = b_.MakeIf(r, e.span);
      scopes.push_back(std::make_unique<Builder::Scope>(b_, next.then_body));
      left = right;
      right = Value(*e.operands[i + 1]);
      r = b_.CallBuiltin(e.compare_overloads[i], e.callees[i], {ValueArg(left), ValueArg(right)}, e.type, e.span);
      b_.Store(b_.Root(result), r, e.span);
    }
    while (!scopes.empty()) scopes.pop_back();  // innermost first
    return Operand::Of(result, e.type);
  }

  // a and b and c: b only if a held, c only if b held; `or` the reverse.
  Operand BoolOp(const Expr& e) {
    TypeRef t = types::Scalar(ScalarKind::kBool);
    VarId result = b_.Slot(t, e.span);  // false
    const bool is_and = e.bool_op == ir::BoolOpKind::kAnd;
    std::vector<std::unique_ptr<Builder::Scope>> scopes;
    for (size_t i = 0; i < e.operands.size(); ++i) {
      Operand v = Value(*e.operands[i]);
      If& test = b_.MakeIf(v, e.span);
      if (is_and) {
        scopes.push_back(std::make_unique<Builder::Scope>(b_, test.then_body));
        if (i + 1 == e.operands.size()) b_.Store(b_.Root(result), Operand::Constant(true, t), e.span);
      } else {
        {
          Builder::Scope in(b_, test.then_body);
          b_.Store(b_.Root(result), Operand::Constant(true, t), e.span);
        }
        scopes.push_back(std::make_unique<Builder::Scope>(b_, test.else_body));
      }
    }
    while (!scopes.empty()) scopes.pop_back();
    return Operand::Of(result, t);
  }

  Operand Call(const Expr& e) {
    if (e.grad) {  // wp.grad(f)(args): arguments are values (sema allows no outputs, types or arrays)
      std::vector<Operand> args;
      for (const auto& a : e.operands) args.push_back(Value(*a));
      const bool user = e.callee_kind == ir::CalleeKind::kFunction;
      return b_.Grad(user ? nullptr : e.overload, user ? std::string() : e.callee, user ? e.function_index : -1,
                     std::move(args), e.type, e.grad_result, e.span);
    }
    if (e.callee_kind == ir::CalleeKind::kFunction) {
      std::vector<Operand> args;
      for (const auto& a : e.operands) args.push_back(Value(*a));
      return b_.CallFunction(e.function_index, std::move(args), e.span);
    }
    const builtins::Overload& o = *e.overload;
    switch (o.form) {
      case builtins::Form::kTid:
        return b_.Tid(e.span);
      case builtins::Form::kLen: {
        const Expr& x = *e.operands[0];
        TypeRef t = x.type;
        if (t->is_array()) return b_.ArrayShape(Value(x), 0, e.span);
        return Operand::Constant(int64_t{t->is_matrix() ? t->rows() : t->length()}, e.type);
      }
      case builtins::Form::kAtomic: {
        // Indices and values first, then the element's address (like a[i] += v).
        size_t trailing = o.name == "atomic_cas" ? 2 : 1;
        size_t nidx = e.operands.size() - 1 - trailing;
        Operand arr = Value(*e.operands[0]);
        std::vector<Operand> idx;
        for (size_t i = 1; i <= nidx; ++i) idx.push_back(Value(*e.operands[i]));
        std::vector<Arg> args(1);
        for (size_t i = 1 + nidx; i < e.operands.size(); ++i) args.push_back(ValueArg(Value(*e.operands[i])));
        VarId p = b_.ElementAddr(arr, std::move(idx), e.span);
        args[0] = AddressArg(p, e.type);
        return b_.CallBuiltin(e.overload, e.callee, std::move(args), e.type, e.span);
      }
      case builtins::Form::kLocalArray:
        return b_.LocalArray(e.type, builtins::LocalArrayShape(e), e.span);
      case builtins::Form::kPrint:
      case builtins::Form::kPrintf:
        PrintCall(e);
        return Operand::Of(kNoVar, types::Void());
      case builtins::Form::kRange:
      case builtins::Form::kClient:
        b_.Fail(e.span, Cat(o.name, "() outside its place"));
        return Operand::Of(kNoVar, types::Void());
      case builtins::Form::kCall:
        break;
    }
    // Output arguments are places (passed by reference); keyword operands
    // (dtype=, shape=) were read by typing.
    std::vector<Arg> args;
    const size_t npos = e.operands.size() - e.keywords.size();
    for (size_t i = 0; i < npos; ++i) {
      const Expr& a = *e.operands[i];
      Arg arg;
      if (a.kind == ExprKind::TypeValue || a.kind == ExprKind::Tuple) {
        arg.mode = Arg::Mode::kType;
      } else if (!o.hook && i < o.sig.params.size() && o.sig.params[i].out) {
        arg.mode = Arg::Mode::kOut;
        arg.place = PlaceOf(a);
      } else {
        arg.value = Value(a);
      }
      args.push_back(std::move(arg));
    }
    return b_.CallBuiltin(e.overload, e.callee, std::move(args), e.type, e.span);
  }

  // print(), printf(), expect_near(), expect_eq() and expect_neq(): operands in order (string
  // constants are text of the site, not values), then one record.
  void PrintCall(const Expr& e) {
    auto it = prints_.calls.find(&e);
    std::vector<Operand> operands(e.operands.size());
    for (size_t i = 0; i < e.operands.size(); ++i)
      if (!IsStringConstant(*e.operands[i])) operands[i] = Value(*e.operands[i]);
    if (it == prints_.calls.end()) return;
    const PrintCallSite& call = it->second;
    PrintGuard guard = PrintGuard::kNone;
    if (e.overload->name == "expect_near") guard = PrintGuard::kExpectNear;
    if (e.overload->name == "expect_eq") guard = PrintGuard::kExpectEq;
    if (e.overload->name == "expect_neq") guard = PrintGuard::kExpectNeq;
    std::vector<Operand> values;
    for (int v : call.values)
      if (v != kExpectNearDiff) values.push_back(operands[static_cast<size_t>(v)]);
    b_.Print(call.site, std::move(values), guard, e.span, call.adjoint_site);
  }

  const PrintSites& prints_;
  const ir::Function& f_;
  Builder b_;
  std::unordered_map<std::string, VarId> locals_;
};

}  // namespace

absl::StatusOr<Module> Lower(const ir::Module& module) {
  const PrintSites prints = CollectPrintSites(module);
  Module out;
  out.source = &module;
  out.functions.resize(module.functions.size());
  for (size_t i = 0; i < module.functions.size(); ++i) {
    out.functions[i].source = &module.functions[i];
    // A template's instances are functions of their own; a dropped function failed sema.
    if (!ir::IsEmitted(module.functions[i])) continue;
    if (auto st = FunctionLowering(module, prints, out.functions[i]).Run(); !st.ok()) return st;
  }
  out.prints = prints.table;
  return out;
}

}  // namespace warpd::tir
