#include "compiler/tir/builder.h"

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"

namespace warpd::tir {

using types::ScalarKind;

Builder::Builder(const ir::Module& module, Function& f) : m_(module), f_(f), block_(&f.body) {}

void Builder::Fail(const ir::Span& span, std::string_view what) {
  if (!status_.ok()) return;
  status_ = absl::InternalError(Cat("ill-typed TIR at line ", span.line, " of '", f_.source->name, "': ", what));
}

template <class T>
T& Builder::Append(const ir::Span& span) {
  auto node = std::make_unique<T>();
  node->span = span;
  T& ref = *node;
  (status_.ok() ? *block_ : discard_).push_back(std::move(node));
  return ref;
}

VarId Builder::NewVar(VarKind kind, TypeRef type, std::string name) {
  if (type == nullptr || type->is_void()) Fail(f_.source->span, "a variable without a value type");
  f_.vars.push_back(Var{kind, type, std::move(name)});
  return static_cast<VarId>(f_.vars.size() - 1);
}

TypeRef Builder::TypeOf(VarId v) const {
  if (v < 0 || static_cast<size_t>(v) >= f_.vars.size()) return nullptr;
  return f_.vars[static_cast<size_t>(v)].type;
}

VarId Builder::Slot(TypeRef type, const ir::Span& span) {
  VarId v = NewVar(VarKind::kSlot, type);
  Append<Declare>(span).var = v;
  return v;
}

bool Builder::CheckOperand(const Operand& o, const ir::Span& span, std::string_view what) {
  if (o.type == nullptr) {
    Fail(span, Cat(what, " has no type"));
    return false;
  }
  if (o.is_var()) {
    TypeRef t = TypeOf(o.var);
    if (t == nullptr || !types::SameType(t, o.type)) {
      Fail(span, Cat(what, ": operand type ", o.type->ToString(), " differs from its variable's"));
      return false;
    }
    return true;
  }
  if (!o.type->is_scalar() || std::holds_alternative<std::string>(o.value)) {
    Fail(span, Cat(what, ": a constant must be a scalar, not ", o.type->ToString()));
    return false;
  }
  return true;
}

bool Builder::CheckIndexOperand(const Operand& o, const ir::Span& span) {
  if (!CheckOperand(o, span, "an index")) return false;
  if (!o.type->is_int()) {
    Fail(span, Cat("an index of type ", o.type->ToString()));
    return false;
  }
  return true;
}

bool Builder::CheckArray(const Operand& a, const ir::Span& span) {
  if (!CheckOperand(a, span, "an array") || !a.is_var() || !a.type->is_array()) {
    Fail(span, "an array operand that is not an array variable");
    return false;
  }
  return true;
}

// -------------------------------------------------------------------- places

Place Builder::Root(VarId v) {
  Place p;
  p.root = v;
  p.type = TypeOf(v);
  if (p.type == nullptr) Fail(f_.source->span, "a place rooted at an unknown variable");
  return p;
}

Place Builder::AddStep(Place p, Step s) {
  p.type = s.type;
  p.steps.push_back(std::move(s));
  return p;
}

Place Builder::Component(Place p, Operand index) {
  CheckIndexOperand(index, f_.source->span);
  // m[i][j] and m[i].x: the element of the row, not a component of a copy.
  if (!p.steps.empty() && p.steps.back().kind == Step::Kind::kMatrixRow) {
    Operand row = p.steps.back().index;
    TypeRef elem = types::Scalar(p.type->scalar());
    p.steps.pop_back();
    return AddStep(std::move(p), Step{Step::Kind::kMatrixElement, row, index, "", elem});
  }
  if (p.type == nullptr || !(p.type->is_vector() || p.type->is_quat())) {
    Fail(f_.source->span, Cat("a component of ", p.type ? p.type->ToString() : "nothing"));
    return p;
  }
  TypeRef elem = types::Scalar(p.type->scalar());
  return AddStep(std::move(p), Step{Step::Kind::kComponent, index, {}, "", elem});
}

Place Builder::MatrixRow(Place p, Operand index) {
  CheckIndexOperand(index, f_.source->span);
  if (p.type == nullptr || !p.type->is_matrix()) {
    Fail(f_.source->span, "a matrix row of a non-matrix");
    return p;
  }
  TypeRef row = types::Vector(p.type->cols(), p.type->scalar());
  return AddStep(std::move(p), Step{Step::Kind::kMatrixRow, index, {}, "", row});
}

Place Builder::MatrixElement(Place p, Operand row, Operand col) {
  CheckIndexOperand(row, f_.source->span);
  CheckIndexOperand(col, f_.source->span);
  if (p.type == nullptr || !p.type->is_matrix()) {
    Fail(f_.source->span, "a matrix element of a non-matrix");
    return p;
  }
  TypeRef elem = types::Scalar(p.type->scalar());
  return AddStep(std::move(p), Step{Step::Kind::kMatrixElement, row, col, "", elem});
}

Place Builder::TransformIndex(Place p, Operand index) {
  CheckIndexOperand(index, f_.source->span);
  if (p.type == nullptr || !p.type->is_transform()) {
    Fail(f_.source->span, "a transform index of a non-transform");
    return p;
  }
  TypeRef elem = types::Scalar(p.type->scalar());
  return AddStep(std::move(p), Step{Step::Kind::kTransformIndex, index, {}, "", elem});
}

Place Builder::Member(Place p, const std::string& name) {
  if (p.type != nullptr && p.type->is_struct()) {
    if (const types::Member* m = p.type->FindMember(name)) {
      TypeRef t = m->type;
      return AddStep(std::move(p), Step{Step::Kind::kMember, {}, {}, name, t});
    }
  } else if (p.type != nullptr && p.type->is_query() && p.type->FindMember(name) != nullptr) {
    // A query result's field (MeshQueryPoint.face): a plain C++ field.
    TypeRef t = p.type->FindMember(name)->type;
    return AddStep(std::move(p), Step{Step::Kind::kField, {}, {}, name, t});
  } else if (p.type != nullptr && p.type->is_transform() && (name == "p" || name == "q")) {
    TypeRef t = name == "p" ? types::Vector(3, p.type->scalar()) : types::Quat(p.type->scalar());
    return AddStep(std::move(p), Step{Step::Kind::kField, {}, {}, name, t});
  }
  Fail(f_.source->span, Cat("no member '", name, "' in ", p.type ? p.type->ToString() : "nothing"));
  return p;
}

Place Builder::TupleElement(Place p, int element) {
  if (p.type == nullptr || !p.type->is_tuple() || element < 0 ||
      static_cast<size_t>(element) >= p.type->elements().size()) {
    Fail(f_.source->span, "a tuple element out of range");
    return p;
  }
  Step s;
  s.kind = Step::Kind::kTupleElement;
  s.element = element;
  s.type = p.type->elements()[static_cast<size_t>(element)];
  return AddStep(std::move(p), std::move(s));
}

// -------------------------------------------------------------- instructions

Operand Builder::Load(Place p, const ir::Span& span) {
  if (p.type == nullptr || p.type->is_void()) {
    Fail(span, "a load of a place without a value");
    return Operand::Of(kNoVar, p.type);
  }
  if (p.steps.empty() && TypeOf(p.root) && f_.var(p.root).kind != VarKind::kElementRef)
    return Operand::Of(p.root, p.type);
  VarId dst = NewVar(VarKind::kTemp, p.type);
  auto& l = Append<tir::Load>(span);
  l.dst = dst;
  l.place = std::move(p);
  return Operand::Of(dst, TypeOf(dst));
}

void Builder::Store(Place p, Operand value, const ir::Span& span) {
  if (!CheckOperand(value, span, "a stored value")) return;
  // A query into its family's erased query (the same native type) is the one conversion.
  if (p.type == nullptr || !types::QueryAccepts(p.type, value.type)) {
    Fail(span, Cat("a store of ", value.type->ToString(), " into a place of ", p.type ? p.type->ToString() : "nothing"));
    return;
  }
  if (p.steps.empty() && f_.var(p.root).kind == VarKind::kTemp) {
    Fail(span, "a store into a temporary");
    return;
  }
  auto& s = Append<tir::Store>(span);
  s.place = std::move(p);
  s.value = std::move(value);
}

Operand Builder::CallBuiltin(const builtins::Overload* overload, std::string callee, std::vector<Arg> args,
                             TypeRef result, const ir::Span& span) {
  if (overload == nullptr || callee.empty() || result == nullptr) {
    Fail(span, "a builtin call without a resolved overload");
    return Operand::Of(kNoVar, types::Void());
  }
  for (const Arg& a : args) {
    switch (a.mode) {
      case Arg::Mode::kValue:
        CheckOperand(a.value, span, Cat("an argument of ", overload->name));
        break;
      case Arg::Mode::kOut:
        if (a.place.type == nullptr) Fail(span, "an output argument without a place");
        break;
      case Arg::Mode::kAddress:
        if (!a.value.is_var() || f_.var(a.value.var).kind != VarKind::kElementRef)
          Fail(span, "an address argument that is not an element reference");
        break;
      case Arg::Mode::kType:
        break;
    }
  }
  VarId dst = result->is_void() ? kNoVar : NewVar(VarKind::kTemp, result);
  auto& b = Append<tir::Builtin>(span);
  b.dst = dst;
  b.overload = overload;
  b.callee = std::move(callee);
  b.args = std::move(args);
  return Operand::Of(dst, result);
}

Operand Builder::CallFunction(int function, std::vector<Operand> args, const ir::Span& span) {
  if (function < 0 || static_cast<size_t>(function) >= m_.functions.size()) {
    Fail(span, "a call of an unknown function");
    return Operand::Of(kNoVar, types::Void());
  }
  const ir::Function& fn = m_.functions[static_cast<size_t>(function)];
  if (fn.kind != ir::FunctionKind::kFunc || fn.return_type == nullptr || args.size() != fn.params.size()) {
    Fail(span, Cat("a call of '", fn.name, "' that does not fit it"));
    return Operand::Of(kNoVar, types::Void());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!CheckOperand(args[i], span, "a function argument")) break;
    if (!types::QueryAccepts(fn.params[i].type, args[i].type))
      Fail(span, Cat("argument ", i, " of '", fn.name, "' has type ", args[i].type->ToString()));
  }
  VarId dst = fn.return_type->is_void() ? kNoVar : NewVar(VarKind::kTemp, fn.return_type);
  auto& c = Append<tir::CallFunc>(span);
  c.dst = dst;
  c.function = function;
  c.args = std::move(args);
  return Operand::Of(dst, fn.return_type);
}

Operand Builder::Grad(const builtins::Overload* overload, std::string callee, int function, std::vector<Operand> args,
                      TypeRef gradient, TypeRef result, const ir::Span& span) {
  if ((overload == nullptr) == (function < 0) || static_cast<size_t>(function + 1) > m_.functions.size() ||
      args.empty() || gradient == nullptr || result == nullptr || result->is_void()) {
    Fail(span, "a gradient call without one callee, arguments and a result");
    return Operand::Of(kNoVar, gradient ? gradient : types::Void());
  }
  if (function >= 0) {
    const ir::Function& fn = m_.functions[static_cast<size_t>(function)];
    if (fn.kind != ir::FunctionKind::kFunc || args.size() != fn.params.size() ||
        !types::SameType(fn.return_type, result)) {
      Fail(span, Cat("a gradient call of '", fn.name, "' that does not fit it"));
      return Operand::Of(kNoVar, gradient);
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!CheckOperand(args[i], span, "a gradient argument")) break;
    TypeRef want = args.size() == 1 ? gradient : gradient->is_tuple() && gradient->elements().size() == args.size()
                                                     ? gradient->elements()[i]
                                                     : nullptr;
    if (want == nullptr || !types::SameType(args[i].type, want))
      Fail(span, Cat("gradient argument ", i, " has type ", args[i].type->ToString()));
  }
  VarId dst = NewVar(VarKind::kTemp, gradient);
  auto& g = Append<tir::Grad>(span);
  g.dst = dst;
  g.overload = overload;
  g.callee = std::move(callee);
  g.function = function;
  g.args = std::move(args);
  g.result = result;
  return Operand::Of(dst, gradient);
}

Operand Builder::MakeTuple(TypeRef tuple, std::vector<Operand> elements, const ir::Span& span) {
  if (tuple == nullptr || !tuple->is_tuple() || tuple->elements().size() != elements.size()) {
    Fail(span, "a tuple of another arity than its type");
    return Operand::Of(kNoVar, tuple);
  }
  for (size_t i = 0; i < elements.size(); ++i)
    if (CheckOperand(elements[i], span, "a tuple element") && !types::SameType(elements[i].type, tuple->elements()[i]))
      Fail(span, Cat("tuple element ", i, " has type ", elements[i].type->ToString()));
  VarId dst = NewVar(VarKind::kTemp, tuple);
  auto& t = Append<tir::MakeTuple>(span);
  t.dst = dst;
  t.elements = std::move(elements);
  return Operand::Of(dst, tuple);
}

VarId Builder::ElementAddr(Operand array, std::vector<Operand> indices, const ir::Span& span) {
  if (!CheckArray(array, span)) return kNoVar;
  for (const auto& i : indices) CheckIndexOperand(i, span);
  if (static_cast<int>(indices.size()) != array.type->ndim()) Fail(span, "an element address without all indices");
  VarId dst = NewVar(VarKind::kElementRef, array.type->element());
  auto& e = Append<tir::ElementAddr>(span);
  e.dst = dst;
  e.array = std::move(array);
  e.indices = std::move(indices);
  return dst;
}

Operand Builder::Subview(Operand array, std::vector<Operand> indices, const ir::Span& span) {
  if (!CheckArray(array, span)) return Operand::Of(kNoVar, types::Void());
  for (const auto& i : indices) CheckIndexOperand(i, span);
  const int nd = array.type->ndim();
  if (indices.empty() || static_cast<int>(indices.size()) >= nd) {
    Fail(span, "a subview needs fewer indices than dimensions");
    return Operand::Of(kNoVar, types::Void());
  }
  TypeRef view =
      m_.types->Array(array.type->element(), nd - static_cast<int>(indices.size()), array.type->is_indexed_array());
  VarId dst = NewVar(VarKind::kTemp, view);
  auto& s = Append<tir::Subview>(span);
  s.dst = dst;
  s.array = std::move(array);
  s.indices = std::move(indices);
  return Operand::Of(dst, view);
}

Operand Builder::SliceView(Operand array, std::vector<bool> slices, std::vector<Operand> operands,
                           const ir::Span& span) {
  if (!CheckArray(array, span)) return Operand::Of(kNoVar, types::Void());
  for (const auto& o : operands) CheckIndexOperand(o, span);
  const int nd = array.type->ndim();
  size_t want = 0;
  int ints = 0;
  for (bool s : slices) {
    want += s ? 3 : 1;
    ints += s ? 0 : 1;
  }
  if (slices.empty() || static_cast<int>(slices.size()) > nd || want != operands.size() || ints >= nd) {
    Fail(span, "a slice view whose indices do not fit the array");
    return Operand::Of(kNoVar, types::Void());
  }
  TypeRef view = m_.types->Array(array.type->element(), nd - ints);
  VarId dst = NewVar(VarKind::kTemp, view);
  auto& s = Append<tir::Subview>(span);
  s.dst = dst;
  s.array = std::move(array);
  s.indices = std::move(operands);
  s.slices = std::move(slices);
  return Operand::Of(dst, view);
}

Operand Builder::LocalArray(TypeRef array, std::vector<int> shape, const ir::Span& span) {
  if (array == nullptr || !array->is_array() || static_cast<int>(shape.size()) != array->ndim()) {
    Fail(span, "a local array whose shape does not fit its type");
    return Operand::Of(kNoVar, array);
  }
  for (int n : shape)
    if (n < 1) Fail(span, "a local array with an empty dimension");
  VarId dst = NewVar(VarKind::kTemp, array);
  auto& l = Append<tir::LocalArray>(span);
  l.dst = dst;
  l.shape = std::move(shape);
  return Operand::Of(dst, array);
}

Operand Builder::ArrayShape(Operand array, int dim, const ir::Span& span) {
  TypeRef i32 = types::Scalar(ScalarKind::kInt32);
  if (!CheckArray(array, span)) return Operand::Of(kNoVar, i32);
  if (dim < 0 || dim >= 4) Fail(span, "a shape index out of range");  // 0 past ndim
  VarId dst = NewVar(VarKind::kTemp, i32);
  auto& s = Append<tir::ArrayShape>(span);
  s.dst = dst;
  s.array = std::move(array);
  s.dim = dim;
  return Operand::Of(dst, i32);
}

Operand Builder::CheckIndex(Operand index, int extent, const ir::Span& span) {
  if (!CheckIndexOperand(index, span)) return index;
  if (extent <= 0) Fail(span, "an index check of an empty extent");
  TypeRef t = index.type;
  VarId dst = NewVar(VarKind::kTemp, t);
  auto& c = Append<tir::CheckIndex>(span);
  c.dst = dst;
  c.index = std::move(index);
  c.extent = extent;
  return Operand::Of(dst, t);
}

Operand Builder::Tid(const ir::Span& span) {
  TypeRef i32 = types::Scalar(ScalarKind::kInt32);
  VarId dst = NewVar(VarKind::kTemp, i32);
  Append<tir::Tid>(span).dst = dst;
  return Operand::Of(dst, i32);
}

void Builder::TidCoords(std::vector<VarId> dsts, const ir::Span& span) {
  if (dsts.empty() || dsts.size() > 4) Fail(span, "thread coordinates of 1 to 4 dimensions");
  for (VarId v : dsts)
    if (TypeOf(v) == nullptr || !TypeOf(v)->is_scalar_of(ScalarKind::kInt32) || f_.var(v).kind != VarKind::kLocal)
      Fail(span, "thread coordinates go into int32 locals");
  Append<tir::TidCoords>(span).dsts = std::move(dsts);
}

void Builder::Print(uint32_t site, std::vector<Operand> values, PrintGuard guard, const ir::Span& span,
                    int32_t adjoint_site) {
  for (const auto& v : values) CheckOperand(v, span, "a printed value");
  if (guard == PrintGuard::kExpectNear && values.size() != 3) Fail(span, "expect_near records three values");
  if ((guard == PrintGuard::kExpectEq || guard == PrintGuard::kExpectNeq) &&
      (values.size() != 2 || !types::SameType(values[0].type, values[1].type)))
    Fail(span, "expect_eq/expect_neq record two values of one type");
  auto& p = Append<tir::Print>(span);
  p.site = site;
  p.values = std::move(values);
  p.guard = guard;
  p.adjoint_site = adjoint_site;
}

If& Builder::MakeIf(Operand cond, const ir::Span& span) {
  if (CheckOperand(cond, span, "a condition") &&
      (!cond.type->is_scalar() || cond.type->is_scalar_of(ScalarKind::kFloat16) ||
       cond.type->is_scalar_of(ScalarKind::kBFloat16)))
    Fail(span, Cat("a condition of type ", cond.type->ToString()));
  auto& i = Append<tir::If>(span);
  i.cond = std::move(cond);
  return i;
}

For& Builder::MakeFor(VarId var, Operand start, Operand stop, Operand step, const ir::Span& span) {
  TypeRef t = TypeOf(var);
  if (t == nullptr || !t->is_int()) Fail(span, "a loop variable that is not an integer");
  // Bounds are of the loop variable's type, or int64 (a reversed range's,
  // computed in the counter's 64 bits).
  for (const Operand* o : {&start, &stop, &step})
    if (CheckOperand(*o, span, "a range bound") && t && !types::SameType(o->type, t) &&
        !types::SameType(o->type, types::Scalar(types::ScalarKind::kInt64)))
      Fail(span, "range bounds of another type than the loop variable");
  auto& f = Append<tir::For>(span);
  f.var = var;
  f.start = std::move(start);
  f.stop = std::move(stop);
  f.step = std::move(step);
  return f;
}

While& Builder::MakeWhile(const ir::Span& span) { return Append<tir::While>(span); }

void Builder::MakeBreak(const ir::Span& span) { Append<tir::Break>(span); }
void Builder::MakeContinue(const ir::Span& span) { Append<tir::Continue>(span); }

void Builder::MakeReturn(const Operand* value, const ir::Span& span) {
  TypeRef want = f_.source->return_type;
  if (value == nullptr) {
    if (!f_.is_kernel() && want && !want->is_void()) Fail(span, "a return without the function's value");
    Append<tir::Return>(span);
    return;
  }
  if (f_.is_kernel() || !CheckOperand(*value, span, "a returned value") || !types::SameType(value->type, want))
    Fail(span, "a returned value of another type than the function's");
  auto& r = Append<tir::Return>(span);
  r.has_value = true;
  r.value = *value;
}

}  // namespace warpd::tir
