#include "compiler/tir/tir.h"

#include <cinttypes>
#include <cstdio>
#include <functional>

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"

namespace warpd::tir {

const char* VarKindName(VarKind k) {
  switch (k) {
    case VarKind::kParam: return "param";
    case VarKind::kLocal: return "local";
    case VarKind::kTemp: return "temp";
    case VarKind::kSlot: return "slot";
    case VarKind::kElementRef: return "element-ref";
  }
  return "?";
}

const char* StepKindName(Step::Kind k) {
  switch (k) {
    case Step::Kind::kComponent: return "component";
    case Step::Kind::kMatrixRow: return "matrix-row";
    case Step::Kind::kMatrixElement: return "matrix-element";
    case Step::Kind::kTransformIndex: return "transform-index";
    case Step::Kind::kMember: return "member";
    case Step::Kind::kField: return "field";
    case Step::Kind::kTupleElement: return "tuple-element";
  }
  return "?";
}

const char* InstKindName(InstKind k) {
  switch (k) {
#define X(name)            \
  case InstKind::name: \
    return #name;
    WARPD_TIR_INSTS(X, X)
#undef X
  }
  return "?";
}

namespace {

class Dumper : public Visitor<Dumper> {
 public:
  Dumper(const Module& m, const Function& f) : m_(m), f_(f) {}

  std::string Run() {
    const ir::Function& src = *f_.source;
    std::string head = Cat(src.kind == ir::FunctionKind::kKernel ? "kernel " : "func ", src.name, "(");
    for (size_t i = 0; i < src.params.size(); ++i)
      head += Cat(i ? ", " : "", src.params[i].name, ": ", src.params[i].type->ToString());
    head += ")";
    if (src.return_type && !src.return_type->is_void()) head += " -> " + src.return_type->ToString();
    Line(head);
    ++depth_;
    for (size_t v = 0; v < f_.vars.size(); ++v)
      if (f_.vars[v].kind == VarKind::kLocal) Line(Cat("local ", f_.vars[v].name, ": ", f_.vars[v].type->ToString()));
    VisitBlock(f_.body);
    --depth_;
    return out_;
  }

  void VisitDeclare(const Declare& i) { Line(Cat("declare ", Def(i.var))); }
  void VisitLoad(const Load& i) { Line(Cat(Def(i.dst), " = ", PlaceText(i.place))); }
  void VisitStore(const Store& i) { Line(Cat(PlaceText(i.place), " = ", Op(i.value))); }
  void VisitBuiltin(const Builtin& i) {
    std::string args;
    for (size_t k = 0; k < i.args.size(); ++k) {
      const Arg& a = i.args[k];
      if (k) args += ", ";
      switch (a.mode) {
        case Arg::Mode::kValue: args += Op(a.value); break;
        case Arg::Mode::kOut: args += "out " + PlaceText(a.place); break;
        case Arg::Mode::kAddress: args += "&*" + Op(a.value); break;
        case Arg::Mode::kType: args += "<type>"; break;
      }
    }
    std::string call = Cat(i.overload->name, "(", args, ") [", i.callee, "]");
    Line(i.dst == kNoVar ? call : Cat(Def(i.dst), " = ", call));
  }
  void VisitMakeTuple(const MakeTuple& i) {
    std::string els;
    for (size_t k = 0; k < i.elements.size(); ++k) els += Cat(k ? ", " : "", Op(i.elements[k]));
    Line(Cat(Def(i.dst), " = (", els, ")"));
  }
  void VisitCallFunc(const CallFunc& i) {
    std::string args;
    for (size_t k = 0; k < i.args.size(); ++k) args += Cat(k ? ", " : "", Op(i.args[k]));
    std::string call = Cat("call ", m_.source->functions[static_cast<size_t>(i.function)].name, "(", args, ")");
    Line(i.dst == kNoVar ? call : Cat(Def(i.dst), " = ", call));
  }
  void VisitGrad(const Grad& i) {
    std::string args;
    for (size_t k = 0; k < i.args.size(); ++k) args += Cat(k ? ", " : "", Op(i.args[k]));
    const std::string callee =
        i.function >= 0 ? m_.source->functions[static_cast<size_t>(i.function)].name : Cat(i.overload->name);
    Line(Cat(Def(i.dst), " = grad ", callee, "(", args, ") of ", i.result->ToString()));
  }
  void VisitElementAddr(const ElementAddr& i) { Line(Cat(Def(i.dst), " = &", Op(i.array), Indices(i.indices))); }
  void VisitSubview(const Subview& i) {
    Line(Cat(Def(i.dst), " = view ", Op(i.array), Indices(i.indices), i.slices.empty() ? "" : " (slices)"));
  }
  void VisitLocalArray(const LocalArray& i) {
    std::string shape;
    for (size_t k = 0; k < i.shape.size(); ++k) shape += Cat(k ? ", " : "", i.shape[k]);
    Line(Cat(Def(i.dst), " = local_array(", shape, ")"));
  }
  void VisitArrayShape(const ArrayShape& i) { Line(Cat(Def(i.dst), " = ", Op(i.array), ".shape[", i.dim, "]")); }
  void VisitCheckIndex(const CheckIndex& i) { Line(Cat(Def(i.dst), " = check ", Op(i.index), " < ", i.extent)); }
  void VisitTid(const Tid& i) { Line(Cat(Def(i.dst), " = tid")); }
  void VisitTidCoords(const TidCoords& i) {
    std::string names;
    for (size_t k = 0; k < i.dsts.size(); ++k) names += Cat(k ? ", " : "", Name(i.dsts[k]));
    Line(Cat(names, " = tid_coords"));
  }
  void VisitPrint(const Print& i) {
    std::string vals;
    for (size_t k = 0; k < i.values.size(); ++k) vals += Cat(k ? ", " : "", Op(i.values[k]));
    static constexpr const char* kNames[] = {"print", "expect_near", "expect_eq", "expect_neq"};
    Line(Cat(kNames[static_cast<int>(i.guard)], " #", i.site, " (", vals, ")"));
  }
  void VisitIf(const If& i) {
    Line(Cat("if ", Op(i.cond), ":"));
    Nested(i.then_body);
    if (!i.else_body.empty()) {
      Line("else:");
      Nested(i.else_body);
    }
  }
  void VisitFor(const For& i) {
    Line(Cat("for ", Name(i.var), " in range(", Op(i.start), ", ", Op(i.stop), ", ", Op(i.step), "):"));
    Nested(i.body);
  }
  void VisitWhile(const While& i) {
    Line("while:");
    Nested(i.cond_body);
    Line(Cat("test ", Op(i.cond), ":"));
    Nested(i.body);
  }
  void VisitBreak(const Break&) { Line("break"); }
  void VisitContinue(const Continue&) { Line("continue"); }
  void VisitReturn(const Return& i) { Line(i.has_value ? "return " + Op(i.value) : "return"); }

 private:
  void Line(const std::string& s) {
    out_.append(2 * static_cast<size_t>(depth_), ' ');
    out_ += s;
    out_ += '\n';
  }
  void Nested(const Block& b) {
    ++depth_;
    VisitBlock(b);
    --depth_;
  }
  std::string Name(VarId v) const {
    if (v == kNoVar) return "<none>";
    const Var& var = f_.var(v);
    return var.name.empty() ? Cat("%", v) : var.name;
  }
  std::string Def(VarId v) const {
    if (v == kNoVar) return "<none>";
    const Var& var = f_.var(v);
    return Cat(Name(v), var.kind == VarKind::kElementRef ? ": ref " : ": ", var.type->ToString());
  }
  static std::string ConstantText(const Operand& o) {
    if (const bool* b = std::get_if<bool>(&o.value)) return *b ? "True" : "False";
    if (const int64_t* i = std::get_if<int64_t>(&o.value)) return std::to_string(*i);
    if (const double* d = std::get_if<double>(&o.value)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      return buf;
    }
    return "<string>";
  }
  std::string Op(const Operand& o) const {
    if (o.is_var()) return Name(o.var);
    return Cat(ConstantText(o), ":", o.type ? o.type->ToString() : "?");
  }
  std::string Indices(const std::vector<Operand>& idx) const {
    std::string s = "[";
    for (size_t k = 0; k < idx.size(); ++k) s += Cat(k ? ", " : "", Op(idx[k]));
    return s + "]";
  }
  std::string PlaceText(const Place& p) const {
    std::string s = p.root != kNoVar && f_.var(p.root).kind == VarKind::kElementRef ? "*" + Name(p.root) : Name(p.root);
    for (const Step& st : p.steps) {
      switch (st.kind) {
        case Step::Kind::kComponent: s += Cat("[", Op(st.index), "]"); break;
        case Step::Kind::kMatrixRow: s += Cat(".row[", Op(st.index), "]"); break;
        case Step::Kind::kMatrixElement: s += Cat("[", Op(st.index), ", ", Op(st.index2), "]"); break;
        case Step::Kind::kTransformIndex: s += Cat(".elem[", Op(st.index), "]"); break;
        case Step::Kind::kMember:
        case Step::Kind::kField: s += "." + st.name; break;
        case Step::Kind::kTupleElement: s += Cat("<", st.element, ">"); break;
      }
    }
    return s;
  }

  const Module& m_;
  const Function& f_;
  std::string out_;
  int depth_ = 0;
};

}  // namespace

std::string Dump(const Module& m, const Function& f) { return Dumper(m, f).Run(); }

namespace {

// The functions called, and those whose adjoints wp.grad() calls.
struct Calls : Visitor<Calls> {
  std::vector<int> functions;
  void Add(int function) {
    for (int f : functions)
      if (f == function) return;
    functions.push_back(function);
  }
  void VisitCallFunc(const CallFunc& i) { Add(i.function); }
  void VisitGrad(const Grad& i) {
    if (i.function >= 0) Add(i.function);
  }
};

struct FindsGrad : Visitor<FindsGrad> {
  bool found = false;
  void VisitGrad(const Grad&) { found = true; }
};

}  // namespace

CallGraph CallGraphOf(const Module& m) {
  const size_t n = m.functions.size();
  CallGraph g;
  g.callees.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Calls c;
    c.VisitBlock(m.functions[i].body);
    g.callees[i] = std::move(c.functions);
  }
  std::vector<char> seen(n, 0);
  std::function<void(int)> visit = [&](int i) {
    if (seen[static_cast<size_t>(i)]) return;
    seen[static_cast<size_t>(i)] = 1;
    for (int c : g.callees[static_cast<size_t>(i)]) visit(c);
    g.callees_first.push_back(i);
  };
  for (size_t i = 0; i < n; ++i) visit(static_cast<int>(i));
  return g;
}

bool CallsGrad(const Function& f) {
  FindsGrad finds;
  finds.VisitBlock(f.body);
  return finds.found;
}

}  // namespace warpd::tir
