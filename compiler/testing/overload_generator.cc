#include "compiler/testing/overload_generator.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "common/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "compiler/testing/ir_builder.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "warpd/native/array.h"

namespace warpd::testing {
namespace {

using builtins::Pattern;
using types::ScalarKind;
using types::TypeRef;

types::TypeTable& Types() { return ModuleBuilder::Types(); }

v1::ScalarType ProtoScalar(ScalarKind s) { return ir::TypeToProto(types::Scalar(s)).scalar(); }

// A literal of dtype `s` with value x: untyped (its default type decides),
// or with an explicit dtype (an inlined Python constant).
v1::Expr ScalarConst(ScalarKind s, double x, bool typed) {
  v1::Expr e;
  if (s == ScalarKind::kBool) {
    e = BoolConst(x != 0);
  } else if (types::IsFloat(s)) {
    e = Float(x);
  } else {
    e = Int(static_cast<int64_t>(x));
  }
  if (typed) e.mutable_constant()->set_dtype(ProtoScalar(s));
  return e;
}

// Sets the line of every span under `m` (so a diagnostic names the call).
void SetLines(google::protobuf::Message& m, int line) {
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  if (d == v1::SourceSpan::descriptor()) {
    static_cast<v1::SourceSpan&>(m).set_line(line);
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int k = 0; k < r->FieldSize(m, f); ++k) SetLines(*r->MutableRepeatedMessage(&m, f, k), line);
    } else if (r->HasField(m, f)) {
      SetLines(*r->MutableMessage(&m, f), line);
    }
  }
}

bool NamedConstructor(TypeRef t) { return types::TypeFromWarpName(t->ToString()) == t; }

void PutScalar(ScalarKind s, double x, uint8_t* out) {
  auto put = [&](auto v) { std::memcpy(out, &v, sizeof(v)); };
  switch (s) {
    case ScalarKind::kBool: put(static_cast<uint8_t>(x != 0)); break;
    case ScalarKind::kInt8: put(static_cast<int8_t>(x)); break;
    case ScalarKind::kUInt8: put(static_cast<uint8_t>(x)); break;
    case ScalarKind::kInt16: put(static_cast<int16_t>(x)); break;
    case ScalarKind::kUInt16: put(static_cast<uint16_t>(x)); break;
    case ScalarKind::kInt32: put(static_cast<int32_t>(x)); break;
    case ScalarKind::kUInt32: put(static_cast<uint32_t>(x)); break;
    case ScalarKind::kInt64: put(static_cast<int64_t>(x)); break;
    case ScalarKind::kUInt64: put(static_cast<uint64_t>(x)); break;
    case ScalarKind::kFloat32: put(static_cast<float>(x)); break;
    case ScalarKind::kFloat64: put(x); break;
    case ScalarKind::kBFloat16: {
      // The upper half of the float32 (values are short multiples of 1/64: exact).
      uint32_t bits;
      const float f = static_cast<float>(x);
      std::memcpy(&bits, &f, 4);
      put(static_cast<uint16_t>(bits >> 16));
      break;
    }
    case ScalarKind::kFloat16: {
      // Values are multiples of 1/64 below 2^15: normal halves, exact.
      uint16_t bits = 0;
      if (x != 0) {
        int e = 0;
        double m = std::frexp(std::fabs(x), &e);  // x = m * 2^e, m in [0.5, 1)
        bits = static_cast<uint16_t>(((e - 1 + 15) << 10) | (static_cast<int>(std::ldexp(m, 11)) & 0x3ff));
        if (x < 0) bits |= 0x8000;
      }
      put(bits);
      break;
    }
  }
}

}  // namespace

v1::Expr BoolConst(bool b) {
  v1::Expr e;
  *e.mutable_span() = Span(1);
  e.mutable_constant()->set_bool_value(b);
  return e;
}

v1::Expr StrConst(const std::string& s) {
  v1::Expr e;
  *e.mutable_span() = Span(1);
  e.mutable_constant()->set_string_value(s);
  return e;
}

v1::Expr TypeValue(TypeRef t) {
  v1::Expr e;
  *e.mutable_span() = Span(1);
  *e.mutable_type_value() = ir::TypeToProto(t);
  return e;
}

v1::Expr WithKeyword(v1::Expr call, const std::string& name, v1::Expr value) {
  auto* kw = call.mutable_call()->add_keywords();
  kw->set_name(name);
  *kw->mutable_value() = std::move(value);
  return call;
}

const char* ArgFormName(ArgForm f) {
  switch (f) {
    case ArgForm::kLiteral: return "literal";
    case ArgForm::kLocal: return "local";
    case ArgForm::kArrayElement: return "array element";
    case ArgForm::kStructMember: return "struct member";
    case ArgForm::kFuncResult: return "func result";
    case ArgForm::kComponent: return "component";
    case ArgForm::kArrayParam: return "array parameter";
    case ArgForm::kArrayLocal: return "array local";
    case ArgForm::kArrayMember: return "array struct member";
    case ArgForm::kOutLocal: return "out local";
    case ArgForm::kOutElement: return "out array element";
    case ArgForm::kOutMember: return "out struct member";
  }
  return "?";
}

float HalfToFloat(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v;
  if (e == 0)
    v = std::ldexp(static_cast<float>(m), -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}

std::vector<double> ValueComponents(TypeRef t, const Value& v) {
  const ScalarKind s = t->scalar();
  auto comp = [&](int c) -> double {
    if (v.all) return *v.all;
    if (s == ScalarKind::kBool) return (v.seed + c) % 2 == 0 ? 1 : 0;
    if (types::IsFloat(s)) return 0.5 + 0.125 * v.seed + 0.0625 * c;
    return 1 + v.seed + c;
  };
  auto quat = [&](int c) -> double { return v.all ? *v.all : 0.1875 + 0.125 * c - 0.0625 * (v.seed % 2); };
  std::vector<double> out;
  switch (t->kind()) {
    case types::Kind::kScalar: out.push_back(comp(0)); break;
    case types::Kind::kVector:
      for (int c = 0; c < t->length(); ++c) out.push_back(comp(c));
      break;
    case types::Kind::kMatrix:
      for (int i = 0; i < t->rows(); ++i)
        for (int j = 0; j < t->cols(); ++j) {
          // bool: alternating with the seed (a diagonal would be all true).
          if (s == ScalarKind::kBool) {
            out.push_back(v.all ? *v.all : comp(i * t->cols() + j));
            continue;
          }
          // Off the diagonal 1/2, 1 or 3/2 times a base by (i + j) % 3:
          // symmetric with unequal entries, so no eigenvalue repeats and
          // eig3/svd3 have one answer (up to signs) on every device.
          double off = types::IsFloat(s) ? 0.0625 * (1 + v.seed % 2) * (1 + (i + j) % 3) / 2 : 1;
          out.push_back(v.all ? *v.all : i == j ? comp(0) + 1 : off);
        }
      break;
    case types::Kind::kQuat:
      for (int c = 0; c < 4; ++c) out.push_back(quat(c));
      break;
    case types::Kind::kTransform:
      for (int c = 0; c < 3; ++c) out.push_back(comp(c));
      for (int c = 0; c < 4; ++c) out.push_back(quat(c));
      break;
    default: break;
  }
  return out;
}

void EncodeValue(TypeRef t, const Value& v, uint8_t* out) {
  if (t->is_struct()) {
    const auto& ms = t->members();
    for (size_t m = 0; m < ms.size(); ++m) {
      if (ms[m].type->is_array()) continue;
      EncodeValue(ms[m].type, Value{v.seed + static_cast<int>(m), v.all}, out + ms[m].offset);
    }
    return;
  }
  const size_t w = types::ScalarSize(t->scalar());
  std::vector<double> comps = ValueComponents(t, v);
  for (size_t c = 0; c < comps.size(); ++c) PutScalar(t->scalar(), comps[c], out + c * w);
}

// --------------------------------------------------------------- the builder

struct ModuleBuilder::Impl {
  std::string module_name;
  struct Kernel {
    std::string name;
    std::vector<v1::Stmt> body;
    std::set<int> inputs, outputs;
    bool uses_struct = false;
    KernelInfo info;
  };
  std::vector<Kernel> kernels;
  std::vector<InputArray> inputs;
  std::vector<StructMemberSpec> members;
  std::vector<OutputArray> outputs;
  std::vector<Expectation> expectations;
  std::vector<TypeRef> id_funcs;    // id_<n>(x: T) -> T
  std::vector<v1::Function> funcs;  // c_<n>(p0, p1, ...): call sites
  int line = 0;
  int calls = 0;
  int literals = 0;
  int locals = 0;
  std::string what;
  int group = -1;
  int result_index = 0;

  Kernel& cur() { return kernels.back(); }

  int Input(TypeRef t) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].type == t) return static_cast<int>(i);
    inputs.push_back({t, {}});
    return static_cast<int>(inputs.size() - 1);
  }
  // The element of in_<n> holding v (added when new).
  int InputElement(int n, const Value& v) {
    auto& vals = inputs[n].values;
    for (size_t i = 0; i < vals.size(); ++i)
      if (vals[i].seed == v.seed && vals[i].all == v.all) return static_cast<int>(i);
    vals.push_back(v);
    return static_cast<int>(vals.size() - 1);
  }
  std::string Member(TypeRef t, const Value& v) {
    for (const auto& m : members)
      if (m.input < 0 && m.type == t && m.value.seed == v.seed && m.value.all == v.all) return m.name;
    members.push_back({Cat("v", members.size()), t, v, -1});
    return members.back().name;
  }
  std::string ArrayMember(int input) {
    for (const auto& m : members)
      if (m.input == input) return m.name;
    members.push_back({Cat("a", members.size()), Types().Array(inputs[input].type, 1), {}, input});
    return members.back().name;
  }
  int Output(TypeRef t) {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].type == t) return static_cast<int>(i);
    outputs.push_back({t, 0});
    return static_cast<int>(outputs.size() - 1);
  }
  std::string IdFunc(TypeRef t) {
    for (size_t i = 0; i < id_funcs.size(); ++i)
      if (id_funcs[i] == t) return Cat("id_", i);
    id_funcs.push_back(t);
    return Cat("id_", id_funcs.size() - 1);
  }
  // A new slot of out_<n>.
  v1::Expr Slot(TypeRef t, int* out, int* slot) {
    *out = Output(t);
    *slot = outputs[*out].slots++;
    cur().outputs.insert(*out);
    return Sub(Name(Cat("out_", *out)), {Int(*slot)});
  }
  void Expect(int out, int slot, const std::string& label, bool finite) {
    Expectation e;
    e.output = out;
    e.slot = slot;
    e.what = Cat(what, ": ", label);
    e.finite = finite;
    e.agreement_group = group;
    e.result_index = result_index++;
    expectations.push_back(std::move(e));
  }
};

ModuleBuilder::ModuleBuilder(std::string module_name) : impl_(new Impl) { impl_->module_name = std::move(module_name); }
ModuleBuilder::~ModuleBuilder() = default;

// Structs (the V struct, each module's input struct) live here for the life
// of the process; struct-free types forward to the global table, so equal
// types are equal pointers.
types::TypeTable& ModuleBuilder::Types() {
  static types::TypeTable* table = new types::TypeTable();
  return *table;
}

TypeRef ModuleBuilder::ValueStruct() {
  static TypeRef t = [] {
    auto s = Types().Struct("VStruct", "VStruct",
                            {{"f", types::Scalar(ScalarKind::kFloat32)},
                             {"v", types::Vector(3, ScalarKind::kFloat64)},
                             {"i", types::Scalar(ScalarKind::kInt8)},
                             {"h", types::Vector(2, ScalarKind::kFloat16)}});
    return *s;
  }();
  return t;
}

void ModuleBuilder::BeginKernel(const std::string& name) {
  impl_->kernels.push_back({});
  impl_->cur().name = name;
  impl_->cur().info.name = name;
}

void ModuleBuilder::BeginCall(const CallCase& call) {
  impl_->what = call.what;
  impl_->group = call.agreement_group;
  impl_->literals = call.seed;
  impl_->result_index = 0;
  impl_->line = ++impl_->calls;
  impl_->cur().info.calls.push_back(call.what);
}

void ModuleBuilder::MarkPrints() { impl_->cur().info.prints = true; }

v1::Expr ModuleBuilder::Literal(TypeRef t, const Value& v) {
  const int style = impl_->literals++;
  const ScalarKind s = t->scalar();
  if (t->is_struct()) {
    v1::Expr call = Call("struct", {});
    const auto& ms = t->members();
    for (size_t m = 0; m < ms.size(); ++m)
      *call.mutable_call()->add_args() = Literal(ms[m].type, Value{v.seed + static_cast<int>(m), v.all});
    return WithKeyword(std::move(call), "dtype", TypeValue(t));
  }
  std::vector<double> comps = ValueComponents(t, v);
  if (t->is_scalar()) {
    const bool default_type = s == ScalarKind::kBool || s == ScalarKind::kFloat32 || s == ScalarKind::kInt32;
    if (style % 2 == 1) return ScalarConst(s, comps[0], /*typed=*/true);
    if (default_type) return ScalarConst(s, comps[0], false);
    return Call(std::string(types::ScalarName(s)), {ScalarConst(s, comps[0], false)});
  }
  std::vector<v1::Expr> args;
  for (double c : comps) args.push_back(ScalarConst(s, c, false));
  if (style % 2 == 0 && NamedConstructor(t)) return Call(t->ToString(), std::move(args));
  v1::Expr call;
  switch (t->kind()) {
    case types::Kind::kVector: call = WithKeyword(Call("vector", std::move(args)), "length", Int(t->length())); break;
    case types::Kind::kMatrix:
      call = WithKeyword(Call("matrix", std::move(args)), "shape", TupleOf({Int(t->rows()), Int(t->cols())}));
      break;
    case types::Kind::kQuat: call = Call("quaternion", std::move(args)); break;
    case types::Kind::kTransform: call = Call("transformation", std::move(args)); break;
    default: break;
  }
  return WithKeyword(std::move(call), "dtype", TypeValue(types::Scalar(s)));
}

std::string ModuleBuilder::Function(std::vector<v1::TypeRef> params, std::vector<v1::Stmt> body) {
  std::vector<P> ps;
  for (size_t i = 0; i < params.size(); ++i) ps.push_back({Cat("p", i), std::move(params[i])});
  const std::string name = Cat("c_", impl_->funcs.size());
  v1::Function f = Func(name, std::move(ps), std::move(body));
  SetLines(f, impl_->line);
  impl_->funcs.push_back(std::move(f));
  return name;
}

std::string ModuleBuilder::FreshName() { return Cat("v", impl_->locals++); }

std::string ModuleBuilder::Local(v1::Expr value) {
  std::string name = FreshName();
  Emit(Assign(Name(name), std::move(value)));
  return name;
}

v1::Expr ModuleBuilder::Arg(TypeRef t, const Value& v, ArgForm form) {
  switch (form) {
    case ArgForm::kLocal: return Name(Local(Literal(t, v)));
    case ArgForm::kArrayElement: {
      int n = impl_->Input(t);
      int k = impl_->InputElement(n, v);
      impl_->cur().inputs.insert(n);
      return Sub(Name(Cat("in_", n)), {Int(k)});
    }
    case ArgForm::kStructMember: impl_->cur().uses_struct = true; return Attr(Name("s"), impl_->Member(t, v));
    case ArgForm::kFuncResult: return Call(impl_->IdFunc(t), {Literal(t, v)}, 1, v1::CALLEE_FUNCTION);
    case ArgForm::kComponent:
      if (t->is_scalar() && t->scalar() != ScalarKind::kBool) {
        const double x = ValueComponents(t, v)[0];
        v1::Expr pair = Literal(types::Vector(2, t->scalar()), Value{0, x});
        if (impl_->literals % 2) return Attr(std::move(pair), "y");
        return Sub(std::move(pair), {Int(1)});
      }
      if (t->is_vector()) return Sub(Call("matrix_from_rows", {Literal(t, v), Literal(t, v)}), {Int(1)});
      return Name(Local(Literal(t, v)));  // no components to take
    default: return Literal(t, v);
  }
}

v1::Expr ModuleBuilder::ArrayArg(TypeRef element, ArgForm form) {
  int n = impl_->Input(element);
  if (impl_->inputs[n].values.empty()) impl_->InputElement(n, Value{0});
  switch (form) {
    case ArgForm::kArrayLocal: impl_->cur().inputs.insert(n); return Name(Local(Name(Cat("in_", n))));
    case ArgForm::kArrayMember: impl_->cur().uses_struct = true; return Attr(Name("s"), impl_->ArrayMember(n));
    default: impl_->cur().inputs.insert(n); return Name(Cat("in_", n));
  }
}

namespace {

// The name of the Holder struct of type `t`, one per distinct type in the
// process-wide table: "Holder_" and the type's spelling as an identifier,
// numbered when another type already took that spelling.
std::string HolderName(TypeRef t) {
  static std::mutex mu;
  static std::map<TypeRef, std::string>* names = new std::map<TypeRef, std::string>;
  static std::map<std::string, int>* taken = new std::map<std::string, int>;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = names->find(t); it != names->end()) return it->second;
  std::string id = t->ToString();
  for (char& ch : id)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  const int n = (*taken)[id]++;
  std::string name = n == 0 ? Cat("Holder_", id) : Cat("Holder_", id, "_", n);
  (*names)[t] = name;
  return name;
}

}  // namespace

ModuleBuilder::OutPlace ModuleBuilder::Out(TypeRef t, const Value& initial, ArgForm form, const std::string& label,
                                           bool finite) {
  OutPlace p;
  if (form == ArgForm::kOutElement) {
    int out = 0, slot = 0;
    p.arg = impl_->Slot(t, &out, &slot);
    Emit(Assign(p.arg, Literal(t, initial)));  // the same start as an out local (in-out arguments)
    p.finish = [this, out, slot, label, finite] { impl_->Expect(out, slot, label, finite); };
    return p;
  }
  if (form == ArgForm::kOutMember) {
    // Holder_<type> {pad: int8, m: t}: a struct of its own per type (types
    // whose spellings sanitize alike, e.g. two query kinds, get numbered names).
    auto holder = Types().Struct(HolderName(t), "Holder", {{"pad", types::Scalar(ScalarKind::kInt8)}, {"m", t}});
    std::string name = Local(WithKeyword(Call("struct", {}), "dtype", TypeValue(*holder)));
    Emit(Assign(Attr(Name(name), "m"), Literal(t, initial)));
    p.arg = Attr(Name(name), "m");
    p.finish = [this, name, t, label, finite] { Store(Attr(Name(name), "m"), t, label, finite); };
    return p;
  }
  std::string name = Local(Literal(t, initial));
  p.arg = Name(name);
  p.finish = [this, name, t, label, finite] { Store(Name(name), t, label, finite); };
  return p;
}

void ModuleBuilder::Store(v1::Expr value, TypeRef t, const std::string& label, bool finite) {
  int out = 0, slot = 0;
  v1::Expr place = impl_->Slot(t, &out, &slot);
  Emit(Assign(std::move(place), std::move(value)));
  impl_->Expect(out, slot, label, finite);
}

void ModuleBuilder::StoreExact(v1::Expr value, TypeRef t, const std::string& label, std::optional<double> f,
                               std::optional<int64_t> i) {
  Store(std::move(value), t, label, f ? std::isfinite(*f) : true);
  impl_->expectations.back().exact_float = f;
  impl_->expectations.back().exact_int = i;
}

void ModuleBuilder::Emit(v1::Stmt s) {
  SetLines(s, impl_->line);
  impl_->cur().body.push_back(std::move(s));
}

void ModuleBuilder::EmitExpr(v1::Expr e) {
  v1::Stmt s;
  *s.mutable_span() = Span(1);
  *s.mutable_expr()->mutable_value() = std::move(e);
  Emit(std::move(s));
}

GeneratedModule ModuleBuilder::Finish() {
  Impl& im = *impl_;
  GeneratedModule g;
  for (auto& in : im.inputs)  // at least 4 elements (lower_bound ranges)
    for (int k = 0; in.values.size() < 4; ++k) im.InputElement(static_cast<int>(&in - im.inputs.data()), Value{k});
  TypeRef s_type = nullptr;
  if (!im.members.empty()) {
    std::vector<std::pair<std::string, TypeRef>> ms;
    for (const auto& m : im.members) ms.push_back({m.name, m.type});
    // Interned by name in a table every module shares: a new name for each.
    static std::atomic<int> serial{0};
    auto st = Types().Struct(Cat("Inputs_", serial++), "Inputs", std::move(ms));
    s_type = st.ok() ? *st : nullptr;
  }
  std::vector<v1::Function> fns;
  for (size_t i = 0; i < im.id_funcs.size(); ++i)
    fns.push_back(Func(Cat("id_", i), {{"x", ir::TypeToProto(im.id_funcs[i])}}, {Return(Name("x"))}));
  for (auto& f : im.funcs) fns.push_back(std::move(f));
  for (auto& k : im.kernels) {
    std::vector<P> params;
    for (int n : k.inputs) params.push_back({Cat("in_", n), Arr(ir::TypeToProto(im.inputs[n].type))});
    if (k.uses_struct && s_type) params.push_back({"s", ir::TypeToProto(s_type)});
    for (int n : k.outputs) params.push_back({Cat("out_", n), Arr(ir::TypeToProto(im.outputs[n].type))});
    fns.push_back(Kernel(k.name, std::move(params), std::move(k.body)));
    g.kernels.push_back(std::move(k.info));
  }
  g.proto = ModuleOf(std::move(fns), im.module_name);
  g.inputs = std::move(im.inputs);
  g.members = std::move(im.members);
  g.outputs = std::move(im.outputs);
  g.expectations = std::move(im.expectations);
  g.calls = im.calls;
  return g;
}

// ----------------------------------------------------------- enumeration

namespace {

struct VarUse {
  bool dtype[2] = {false, false};
  bool ints[5] = {false, false, false, false, false};
  bool values[2] = {false, false};
};

void Note(const Pattern& p, VarUse& u) {
  if (p.dtype_var >= 0 && p.value_var < 0 && p.kind != Pattern::Kind::kValue) u.dtype[p.dtype_var] = true;
  if (p.value_var >= 0) u.values[p.value_var] = true;
  for (int d : p.dims)
    if (d < 0) u.ints[-d - 1] = true;
  for (const Pattern& e : p.elements) Note(e, u);
}

// The bound: what each variable ranges over.
std::vector<int> IntDomain(int var, bool wide) {
  if (wide) return var == 0 ? std::vector<int>{1, 2, 3, 4, 5, 8} : std::vector<int>{1, 2, 3, 4, 5, 6};
  switch (var) {
    case 0: return {2, 3, 4, 5};  // N: Warp's named lengths and one more
    case 1: return {2, 3};        // M
    default: return {2, 3, 4};    // R, C, K
  }
}

std::vector<TypeRef> ValueTypes(bool short_list) {
  std::vector<TypeRef> out;
  if (short_list) {
    return {types::Scalar(ScalarKind::kFloat32), types::Vector(3, ScalarKind::kFloat16), ModuleBuilder::ValueStruct()};
  }
  for (int k = 0; k < types::kNumScalarKinds; ++k) out.push_back(types::Scalar(static_cast<ScalarKind>(k)));
  out.push_back(types::Vector(3, ScalarKind::kFloat32));
  out.push_back(types::Vector(2, ScalarKind::kFloat16));
  out.push_back(types::Vector(4, ScalarKind::kFloat64));
  out.push_back(types::Vector(5, ScalarKind::kInt16));
  out.push_back(types::Matrix(2, 2, ScalarKind::kFloat32));
  out.push_back(types::Matrix(3, 3, ScalarKind::kFloat64));
  out.push_back(types::Matrix(2, 3, ScalarKind::kFloat16));
  out.push_back(types::Quat(ScalarKind::kFloat32));
  out.push_back(types::Quat(ScalarKind::kFloat64));
  out.push_back(types::Transform(ScalarKind::kFloat32));
  out.push_back(types::Transform(ScalarKind::kFloat16));
  out.push_back(ModuleBuilder::ValueStruct());
  return out;
}

struct Binding {
  builtins::Bindings b;
  std::vector<TypeRef> args;
  TypeRef result = nullptr;
  std::string text;  // "T=float16, N=5"
};

std::vector<Binding> Enumerate(const builtins::Overload& o, bool wide, std::vector<std::string>* shadowed) {
  VarUse u;
  for (const auto& p : o.sig.params) Note(p.pattern, u);
  if (o.sig.result) Note(*o.sig.result, u);
  // Each variable: a name and its choices (as setters on Bindings).
  struct Var {
    std::string name;
    std::vector<std::function<void(builtins::Bindings&)>> set;
    std::vector<std::string> text;
  };
  std::vector<Var> vars;
  for (int d = 0; d < 2; ++d) {
    if (!u.dtype[d]) continue;
    Var v{d ? "S" : "T", {}, {}};
    for (int k = 0; k < types::kNumScalarKinds; ++k) {
      auto s = static_cast<ScalarKind>(k);
      if (!builtins::InFamily(s, o.sig.families[d])) continue;
      if (wide && s != ScalarKind::kFloat16 && s != ScalarKind::kFloat64 && s != ScalarKind::kInt8 &&
          s != ScalarKind::kUInt64 && s != ScalarKind::kBool)
        continue;
      v.set.push_back([d, s](builtins::Bindings& b) { b.dtypes[d] = s; });
      v.text.push_back(std::string(types::ScalarName(s)));
    }
    vars.push_back(std::move(v));
  }
  static const char* kIntNames[] = {"N", "M", "R", "C", "K"};
  for (int i = 0; i < 5; ++i) {
    if (!u.ints[i]) continue;
    Var v{kIntNames[i], {}, {}};
    for (int n : IntDomain(i, wide)) {
      v.set.push_back([i, n](builtins::Bindings& b) { b.ints[i] = n; });
      v.text.push_back(std::to_string(n));
    }
    vars.push_back(std::move(v));
  }
  for (int w = 0; w < 2; ++w) {
    if (!u.values[w]) continue;
    Var v{w ? "W" : "V", {}, {}};
    for (TypeRef t : ValueTypes(w == 1 && u.values[0])) {
      v.set.push_back([w, t](builtins::Bindings& b) { b.values[w] = t; });
      v.text.push_back(t->ToString());
    }
    vars.push_back(std::move(v));
  }
  std::vector<Binding> out;
  std::vector<size_t> at(vars.size(), 0);
  const auto overloads = builtins::Lookup(o.name);
  while (true) {
    Binding bd;
    std::vector<std::string> parts;
    for (size_t i = 0; i < vars.size(); ++i) {
      vars[i].set[at[i]](bd.b);
      parts.push_back(Cat(vars[i].name, "=", vars[i].text[at[i]]));
    }
    bd.text = Join(parts, ", ");
    for (const auto& p : o.sig.params) bd.args.push_back(builtins::Instantiate(p.pattern, bd.b, Types()));
    bd.result = o.sig.result ? builtins::Instantiate(*o.sig.result, bd.b, Types()) : types::Void();
    auto r = builtins::Resolve(overloads, bd.args, Types());
    if (r && r->overload == &o) {
      out.push_back(std::move(bd));
    } else {
      shadowed->push_back(Cat(builtins::SignatureText(o), " with ", bd.text, ": ",
                              r ? Cat("resolves to ", builtins::SignatureText(*r->overload)) : "does not resolve"));
    }
    size_t i = 0;
    for (; i < vars.size(); ++i) {
      if (++at[i] < vars[i].set.size()) break;
      at[i] = 0;
    }
    if (i == vars.size()) break;
  }
  return out;
}

// Arguments whose builtin needs particular values (the domain table).
Value ArgValue(const builtins::Overload& o, size_t param) {
  const std::string_view n = o.name;
  if ((n == "quat_from_euler" || n == "quat_to_euler") && param >= 1)
    return Value{0, double(param - 1)};                                                      // axes 0, 1, 2
  if (n == "expect_eq" || n == "expect_near") return param == 2 ? Value{0, 0.5} : Value{0};  // equal, tolerance
  if (n == "lower_bound" && o.sig.params.size() == 4 && (param == 1 || param == 2))
    return Value{0, param == 1 ? 0.0 : 3.0};  // [begin, end) inside the array
  return Value{static_cast<int>(param)};
}

// Builtins whose inlined bodies are large (see CallCase::own_kernel).
bool Heavy(const builtins::Overload& o) {
  for (std::string_view h : {"curlnoise", "pnoise", "noise", "svd2", "svd3", "qr3", "eig3", "quat_slerp", "inverse",
                             "inverse_approx", "transform_decompose", "quat_rpy"})
    if (o.name == h) return true;
  return false;
}

// Builtins whose results may be NaN or infinite at the generated inputs
// (none so far: the inputs are chosen inside every builtin's domain).
bool MayBeNonFinite(const builtins::Overload&) { return false; }

struct OperatorSyntax {
  const char* name;
  int binary = 0, unary = 0, compare = 0;  // v1 enum values
  bool warp_name;                          // wp.<name> exists in Warp too
};
const OperatorSyntax* FindOperator(std::string_view name) {
  static const OperatorSyntax kOps[] = {
      {"add", v1::BINOP_ADD, 0, 0, true},
      {"sub", v1::BINOP_SUB, 0, 0, true},
      {"mul", v1::BINOP_MUL, 0, 0, true},
      {"div", v1::BINOP_DIV, 0, 0, true},
      {"floordiv", v1::BINOP_FLOOR_DIV, 0, 0, true},
      {"mod", v1::BINOP_MOD, 0, 0, true},
      {"pow", v1::BINOP_POW, 0, 0, true},
      {"bit_and", v1::BINOP_BIT_AND, 0, 0, true},
      {"bit_or", v1::BINOP_BIT_OR, 0, 0, true},
      {"bit_xor", v1::BINOP_BIT_XOR, 0, 0, true},
      {"lshift", v1::BINOP_LSHIFT, 0, 0, true},
      {"rshift", v1::BINOP_RSHIFT, 0, 0, true},
      {"neg", 0, v1::UNARY_NEG, 0, true},
      {"pos", 0, v1::UNARY_POS, 0, true},
      {"unot", 0, v1::UNARY_NOT, 0, true},
      {"invert", 0, v1::UNARY_INVERT, 0, true},
      {"eq", 0, 0, v1::CMP_EQ, false},
      {"ne", 0, 0, v1::CMP_NE, false},
      {"lt", 0, 0, v1::CMP_LT, false},
      {"le", 0, 0, v1::CMP_LE, false},
      {"gt", 0, 0, v1::CMP_GT, false},
      {"ge", 0, 0, v1::CMP_GE, false},
  };
  for (const auto& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

// How a call is spelled and where it is made; rotated over a binding's calls.
struct CallStyle {
  bool operator_syntax = false;  // a + b (a @ b with `matmul`), -a, a < b
  bool matmul = false;
  bool keywords = false;   // name(a=x, b=y)
  bool in_func = false;    // inside a generated @wp.func taking the arguments
  bool generic = false;    // ... whose value parameters are typing.Any
  bool via_local = false;  // r = call; out[i] = r

  std::string Text() const {
    std::vector<std::string> s;
    if (operator_syntax) s.push_back(matmul ? "operator @" : "operator syntax");
    if (keywords) s.push_back("keyword arguments");
    if (in_func) s.push_back(generic ? "called in a generic @wp.func" : "called in a @wp.func");
    if (via_local) s.push_back("result through a local");
    return s.empty() ? "" : Cat("; ", Join(s, ", "));
  }
};

CallStyle StyleFor(const builtins::Overload& o, const std::vector<TypeRef>& args, TypeRef result, int s) {
  CallStyle st;
  const OperatorSyntax* op = FindOperator(o.name);
  st.operator_syntax = op && (s % 2 == 0 || !op->warp_name);
  st.matmul = st.operator_syntax && op->binary == v1::BINOP_MUL && s % 4 == 2 && !args[0]->is_scalar() &&
              !args[1]->is_scalar() && (args[0]->is_matrix() || args[1]->is_matrix());
  st.keywords = !st.operator_syntax && !args.empty() && (s / 2) % 2 == 1;
  const bool single = !result->is_void() && !result->is_tuple();
  st.in_func = s % 5 == 3;
  st.generic = st.in_func && (s / 5) % 2 == 1;
  st.via_local = !st.in_func && s % 3 == 1 && single;
  return st;
}

v1::Expr MakeCall(const builtins::Overload& o, std::vector<v1::Expr> args, const CallStyle& st) {
  const OperatorSyntax* op = FindOperator(o.name);
  if (st.operator_syntax) {
    if (op->binary) {
      return Bin(st.matmul ? v1::BINOP_MATMUL : static_cast<v1::BinaryOperator>(op->binary), std::move(args[0]),
                 std::move(args[1]));
    }
    if (op->unary) {
      v1::Expr e;
      *e.mutable_span() = Span(1);
      e.mutable_unary()->set_op(static_cast<v1::UnaryOperator>(op->unary));
      *e.mutable_unary()->mutable_operand() = std::move(args[0]);
      return e;
    }
    return Cmp(static_cast<v1::CompareOperator>(op->compare), std::move(args[0]), std::move(args[1]));
  }
  if (!st.keywords) return Call(std::string(o.name), std::move(args));
  v1::Expr call = Call(std::string(o.name), {});
  for (size_t i = 0; i < args.size(); ++i) {
    auto* kw = call.mutable_call()->add_keywords();
    kw->set_name(o.sig.params[i].name);
    *kw->mutable_value() = std::move(args[i]);
  }
  return call;
}

ArgForm FormFor(const builtins::Param& p, TypeRef t, int rotation) {
  static const ArgForm kValue[] = {ArgForm::kLiteral,      ArgForm::kLocal,      ArgForm::kArrayElement,
                                   ArgForm::kStructMember, ArgForm::kFuncResult, ArgForm::kComponent};
  static const ArgForm kArray[] = {ArgForm::kArrayParam, ArgForm::kArrayLocal, ArgForm::kArrayMember};
  static const ArgForm kOut[] = {ArgForm::kOutLocal, ArgForm::kOutElement, ArgForm::kOutMember};
  if (p.out) return kOut[rotation % kOutForms];
  if (t->is_array()) return kArray[rotation % kArrayForms];
  return kValue[rotation % kValueForms];
}

// Stores the values of `call` (of `types`: one value, or a tuple unpacked
// into fresh locals); none: the call is a statement.
void StoreAll(ModuleBuilder& b, v1::Expr call, const std::vector<TypeRef>& types,
              const std::vector<std::string>& labels, bool finite) {
  if (types.empty()) return b.EmitExpr(std::move(call));
  if (types.size() == 1) return b.Store(std::move(call), types[0], labels[0], finite);
  std::vector<v1::Expr> targets;
  std::vector<std::string> names;
  for (size_t k = 0; k < types.size(); ++k) {
    names.push_back(b.FreshName());
    targets.push_back(Name(names.back()));
  }
  b.Emit(Assign(TupleOf(std::move(targets)), std::move(call)));
  for (size_t k = 0; k < names.size(); ++k) b.Store(Name(names[k]), types[k], labels[k], finite);
}

// The call made inside a generated @wp.func c_<n>(p0, p1, ...) that takes
// the input arguments (typing.Any for values when `style.generic`), holds
// the output arguments in its own locals and returns the result and the
// outputs (a tuple when several); the kernel calls it and stores what it
// returns.
void EmitInFunction(const builtins::Overload& o, const Binding& bd, const std::vector<ArgForm>& forms,
                    const CallStyle& style, bool finite, ModuleBuilder& b) {
  std::vector<v1::TypeRef> params;
  std::vector<v1::Expr> kernel_args, call_args;
  std::vector<v1::Stmt> body;
  std::vector<TypeRef> returned;
  std::vector<std::string> labels;
  std::vector<v1::Expr> outs;
  if (!bd.result->is_void() && !bd.result->is_tuple()) {
    returned.push_back(bd.result);
    labels.push_back("result");
  }
  for (size_t i = 0; i < o.sig.params.size(); ++i) {
    const auto& p = o.sig.params[i];
    const Value v = ArgValue(o, i);
    if (p.out) {
      const std::string name = Cat("o", i);
      body.push_back(Assign(Name(name), b.Literal(bd.args[i], v)));
      call_args.push_back(Name(name));
      outs.push_back(Name(name));
      returned.push_back(bd.args[i]);
      labels.push_back(Cat("output ", p.name));
      continue;
    }
    call_args.push_back(Name(Cat("p", params.size())));
    const bool array = bd.args[i]->is_array();
    params.push_back(style.generic && !array ? AnyT() : ir::TypeToProto(bd.args[i]));
    kernel_args.push_back(array ? b.ArrayArg(bd.args[i]->element(), forms[i]) : b.Arg(bd.args[i], v, forms[i]));
  }
  v1::Expr call = MakeCall(o, std::move(call_args), style);
  if (bd.result->is_tuple()) {
    body.push_back(Return(std::move(call)));
    returned = bd.result->elements();
    for (size_t k = 0; k < returned.size(); ++k) labels.push_back(Cat("result ", k));
  } else {
    if (returned.size() > outs.size()) {  // a result first
      body.push_back(Assign(Name("r"), std::move(call)));
      outs.insert(outs.begin(), Name("r"));
    } else {
      v1::Stmt s;
      *s.mutable_span() = Span(1);
      *s.mutable_expr()->mutable_value() = std::move(call);
      body.push_back(std::move(s));
    }
    if (outs.size() == 1) body.push_back(Return(std::move(outs[0])));
    if (outs.size() > 1) body.push_back(Return(TupleOf(std::move(outs))));
  }
  const std::string f = b.Function(std::move(params), std::move(body));
  StoreAll(b, Call(f, std::move(kernel_args), 1, v1::CALLEE_FUNCTION), returned, labels, finite);
}

void AddOverload(const builtins::Overload& o, int overload_index, const CatalogOptions& options, Catalog& c) {
  std::vector<Binding> bindings = Enumerate(o, options.wide, &c.shadowed);
  if (bindings.empty()) return;
  ++c.overloads;
  c.bindings += static_cast<int>(bindings.size());
  const int nb = static_cast<int>(bindings.size());
  const int per = std::max(options.calls_per_binding, (kValueForms + nb - 1) / nb);
  const std::string sig = builtins::SignatureText(o);
  const bool finite = !MayBeNonFinite(o);
  for (int j = 0; j < nb; ++j) {
    const int group = per > 1 ? static_cast<int>(c.calls.size()) : -1;
    for (int r = 0; r < per; ++r) {
      const Binding& bd = bindings[j];
      std::vector<ArgForm> forms;
      std::vector<std::string> form_text;
      for (size_t i = 0; i < o.sig.params.size(); ++i) {
        forms.push_back(FormFor(o.sig.params[i], bd.args[i], j + r + static_cast<int>(i)));
        form_text.push_back(ArgFormName(forms.back()));
      }
      const CallStyle style = StyleFor(o, bd.args, bd.result, j + r);
      CallCase cc;
      cc.what = Cat(sig, " with ", bd.text.empty() ? "no variables" : bd.text,
                    "; arguments: ", form_text.empty() ? "none" : Join(form_text, ", "), style.Text());
      cc.kernel_group = Cat("o", overload_index);
      cc.agreement_group = group;
      cc.own_kernel = Heavy(o);
      const builtins::Overload* op = &o;
      cc.emit = [op, bd, forms, style, finite](ModuleBuilder& b) {
        if (style.in_func) return EmitInFunction(*op, bd, forms, style, finite, b);
        std::vector<v1::Expr> args;
        std::vector<ModuleBuilder::OutPlace> outs;
        for (size_t i = 0; i < op->sig.params.size(); ++i) {
          const auto& p = op->sig.params[i];
          const Value v = ArgValue(*op, i);
          if (p.out) {
            outs.push_back(b.Out(bd.args[i], v, forms[i], Cat("output ", p.name), finite));
            args.push_back(outs.back().arg);
          } else if (bd.args[i]->is_array()) {
            args.push_back(b.ArrayArg(bd.args[i]->element(), forms[i]));
          } else {
            args.push_back(b.Arg(bd.args[i], v, forms[i]));
          }
        }
        v1::Expr call = MakeCall(*op, std::move(args), style);
        if (bd.result->is_tuple()) {
          std::vector<TypeRef> types = bd.result->elements();
          std::vector<std::string> labels;
          for (size_t k = 0; k < types.size(); ++k) labels.push_back(Cat("result ", k));
          StoreAll(b, std::move(call), types, labels, finite);
        } else if (!bd.result->is_void()) {
          b.Store(style.via_local ? Name(b.Local(std::move(call))) : std::move(call), bd.result, "result", finite);
        } else {
          b.EmitExpr(std::move(call));
        }
        for (auto& out : outs) out.finish();
      };
      c.calls.push_back(std::move(cc));
    }
  }
}

}  // namespace

// A hash grid, BVH or mesh query needs a live object of the launching
// session, which a generated module has none of (every id would be an
// "unknown object" fault).
bool QueriesObjects(const builtins::Overload& o) {
  for (const builtins::Param& p : o.sig.params) {
    if (p.pattern.kind == builtins::Pattern::Kind::kQuery) return true;
    if (p.name == "id") return true;
  }
  return o.sig.result && o.sig.result->kind == builtins::Pattern::Kind::kQuery;
}

Catalog BuildCatalog(const CatalogOptions& options) {
  Catalog c;
  int index = 0;
  for (const builtins::Overload& o : builtins::Table()) {
    ++index;
    if (o.hook) continue;
    if (o.form == builtins::Form::kClient) {
      c.skipped.push_back(Cat(o.name, ": evaluated by the client"));
      continue;
    }
    if (QueriesObjects(o)) {
      c.skipped.push_back(Cat(o.name, ": queries a server-side object (compiler_test and its e2e tests)"));
      continue;
    }
    AddOverload(o, index, options, c);
  }
  AddHookCases(c);
  for (size_t i = 0; i < c.calls.size(); ++i) c.calls[i].seed = static_cast<int>(i);
  return c;
}

GeneratedModule BuildModule(const std::vector<const CallCase*>& calls, const std::string& name, int calls_per_kernel) {
  ModuleBuilder b(name);
  std::string group;
  int in_kernel = 0, kernels = 0;
  bool alone = false;
  for (const CallCase* c : calls) {
    if (c->kernel_group != group || in_kernel >= calls_per_kernel || c->own_kernel || alone) {
      b.BeginKernel(Cat("k", kernels++, "_", c->kernel_group));
      group = c->kernel_group;
      in_kernel = 0;
    }
    ++in_kernel;
    alone = c->own_kernel;
    b.BeginCall(*c);
    c->emit(b);
  }
  return b.Finish();
}

void WriteArrayDescriptor(uint8_t* dst, void* data, int64_t n, uint64_t elem_size) {
  wp::array_t<uint8_t> a{};
  a.data = static_cast<uint8_t*>(data);
  a.shape[0] = static_cast<int32_t>(n);
  a.ndim = 1;
  a.strides[0] = static_cast<int64_t>(elem_size);
  std::memcpy(dst, &a, sizeof(a));
}

}  // namespace warpd::testing
