#include "compiler/codegen/codegen.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "compiler/builtins/builtins.h"
#include "compiler/codegen/client_text.h"
#include "compiler/codegen/layout.h"
#include "compiler/codegen/print_sites.h"

namespace warpd::codegen {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ScalarKind;
using ir::Stmt;
using ir::StmtKind;
using ir::TypeRef;

std::string Local(const std::string& name) { return "v_" + name; }
std::string FuncSymbol(const std::string& name) { return "f_" + name; }
std::string ArgsStruct(const std::string& kernel) { return "wpa_" + kernel; }
std::string BodySymbol(const std::string& kernel) { return "wpb_" + kernel; }

// Writes indented lines.
class Writer {
 public:
  void Line(const std::string& s) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << s << "\n";
  }
  void Open(const std::string& s) {
    Line(s);
    ++indent_;
  }
  void Close(const std::string& s = "}") {
    --indent_;
    Line(s);
  }
  // Closes one block and opens the next: "} else {".
  void Reopen(const std::string& s) {
    --indent_;
    Line(s);
    ++indent_;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

std::string FloatLiteral(double v, ScalarKind k) {
  char buf[64];
  if (k == ScalarKind::kFloat64) {
    if (std::isfinite(v)) {
      std::snprintf(buf, sizeof buf, "%a", v);
      return buf;
    }
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    std::snprintf(buf, sizeof buf, "wp::float64_from_bits(0x%" PRIx64 "ull)", bits);
    return buf;
  }
  float f = static_cast<float>(v);
  std::string lit;
  if (std::isfinite(f)) {
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
    lit = buf;
  } else {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::snprintf(buf, sizeof buf, "wp::float32_from_bits(0x%" PRIx32 "u)", bits);
    lit = buf;
  }
  if (k == ScalarKind::kFloat16) return "wp::float_to_half(" + lit + ")";
  return lit;
}

std::string IntLiteral(int64_t v, ScalarKind k) {
  std::string cpp(types::ScalarCppName(k));
  if (!types::IsSigned(k)) return "((" + cpp + ")" + std::to_string(static_cast<uint64_t>(v)) + "ull)";
  if (v == INT64_MIN) return "((" + cpp + ")(-9223372036854775807ll - 1))";
  return "((" + cpp + ")" + std::to_string(v) + "ll)";
}

std::string ConstantText(const Expr& e) {
  ScalarKind k = e.type->scalar();
  if (const bool* b = std::get_if<bool>(&e.value)) {
    if (k == ScalarKind::kBool) return *b ? "true" : "false";
    return IntLiteral(*b ? 1 : 0, k);
  }
  if (const int64_t* i = std::get_if<int64_t>(&e.value)) {
    if (types::IsFloat(k)) return FloatLiteral(static_cast<double>(*i), k);
    if (k == ScalarKind::kBool) return *i ? "true" : "false";
    return IntLiteral(*i, k);
  }
  double d = std::get<double>(e.value);
  if (types::IsFloat(k)) return FloatLiteral(d, k);
  return "wp::cast<" + std::string(types::ScalarCppName(k)) + ">(" + FloatLiteral(d, ScalarKind::kFloat64) + ")";
}

// A resolved builtin's spelling applied to argument expressions: a template
// with $0.. / $* placeholders, or a callee followed by the argument list.
std::string Spell(const std::string& callee, const std::vector<std::string>& args) {
  return builtins::Spell(callee, {.args = &args});
}

class FunctionEmitter {
 public:
  FunctionEmitter(const ir::Module& m, const ir::Function& f, Writer& w, const PrintSites& prints)
      : m_(m), f_(f), w_(w), prints_(prints) {
    fail_ = f.kind == ir::FunctionKind::kKernel || f.return_type->is_void() ? "return;" : "return {};";
  }

  void Body() {
    for (const auto& l : f_.locals)
      if (!l.is_param) w_.Line(l.type->CppName() + " " + Local(l.name) + "{};");
    for (const auto& s : f_.body) Statement(*s);
    if (f_.kind == ir::FunctionKind::kFunc && !f_.return_type->is_void()) w_.Line("return {};");
  }

 private:
  std::string Temp() { return "t" + std::to_string(next_temp_++); }
  std::string Line(const ir::Span& s) { return std::to_string(s.line); }

  // Declares `const T tN = value;` and returns tN.
  std::string Bind(TypeRef t, const std::string& value) {
    std::string name = Temp();
    w_.Line("const " + t->CppName() + " " + name + " = " + value + ";");
    return name;
  }

  // Evaluates the index operands of a subscript (in order) as int64 values.
  std::vector<std::string> Indices(const Expr& sub) {
    std::vector<std::string> out;
    for (size_t i = 1; i < sub.operands.size(); ++i) out.push_back("(wp::int64)" + Emit(*sub.operands[i]));
    return out;
  }

  // The bounds-checked address of an array element (all indices given).
  std::string Address(const std::string& arr, const std::vector<std::string>& idx, TypeRef elem, const ir::Span& span) {
    std::string args = "ctx, " + arr + ", " + Line(span);
    for (const auto& i : idx) args += ", " + i;
    std::string p = Temp();
    w_.Line(elem->CppName() + "* " + p + " = wp::address(" + args + ");");
    w_.Line("if (WP_UNLIKELY(!" + p + ")) " + fail_);
    return p;
  }

  // A checked dynamic index `k` in [0, n).
  void CheckIndex(const std::string& k, int n, const ir::Span& span) {
    std::string ns = std::to_string(n);
    w_.Line("if (WP_UNLIKELY((wp::uint64)(" + k + ") >= " + ns + "u)) { (void)wp::record_index_fault(ctx, " +
            Line(span) + ", 0, (wp::int64)(" + k + "), " + ns + "); " + fail_ + " }");
  }

  std::string IndexText(const Expr& index, int extent) {
    if (index.kind == ExprKind::Constant) return std::to_string(std::get<int64_t>(index.value));
    std::string k = Emit(index);
    CheckIndex(k, extent, index.span);
    return k;
  }

  static int ComponentIndex(const std::string& name) {
    return name == "x" ? 0 : name == "y" ? 1 : name == "z" ? 2 : 3;
  }

  // An lvalue (or readable path) for a place: a local, a component/member
  // path of one, or an element of an array (and paths inside it).
  std::string Place(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name:
        return Local(e.name);
      case ExprKind::Attribute: {
        const Expr& owner = *e.operands[0];
        std::string base = Place(owner);
        TypeRef t = owner.type;
        if (t->is_struct()) return base + ".m_" + e.name;
        if (t->is_transform()) return base + "." + e.name;
        return base + ".c[" + std::to_string(ComponentIndex(e.name)) + "]";
      }
      case ExprKind::Subscript: {
        const Expr& owner = *e.operands[0];
        TypeRef t = owner.type;
        if (t->is_array()) {
          std::string arr = Emit(owner);
          std::vector<std::string> idx = Indices(e);
          return "(*" + Address(arr, idx, e.type, e.span) + ")";
        }
        if (t->is_matrix()) {
          std::string base = Place(owner);
          std::string i = IndexText(*e.operands[1], t->rows());
          if (e.operands.size() == 3) return base + ".c[" + i + "][" + IndexText(*e.operands[2], t->cols()) + "]";
          return "wp::mat_row_ref(" + base + ", " + i + ")";
        }
        // A component of a matrix row m[i][j]: address the element directly.
        if (owner.kind == ExprKind::Subscript && owner.operands[0]->type->is_matrix() && owner.operands.size() == 2) {
          TypeRef mt = owner.operands[0]->type;
          std::string base = Place(*owner.operands[0]);
          std::string i = IndexText(*owner.operands[1], mt->rows());
          return base + ".c[" + i + "][" + IndexText(*e.operands[1], mt->cols()) + "]";
        }
        std::string base = Place(owner);
        if (t->is_transform()) return "wp::transform_ref(" + base + ", " + IndexText(*e.operands[1], 7) + ")";
        return base + ".c[" + IndexText(*e.operands[1], t->length()) + "]";
      }
      default:
        return Emit(e);
    }
  }

  // True when a read of `e` is a path of a local or array element (no copy needed).
  static bool IsPath(const Expr& e) {
    if (e.kind == ExprKind::Name) return true;
    if (e.kind == ExprKind::Attribute) return !e.operands[0]->type->is_array() && IsPath(*e.operands[0]);
    if (e.kind == ExprKind::Subscript) {
      const Expr& owner = *e.operands[0];
      if (owner.kind == ExprKind::Attribute && owner.name == "shape") return false;
      if (owner.type->is_array()) return static_cast<int>(e.operands.size() - 1) == owner.type->ndim();
      return IsPath(owner) || owner.type->is_array();
    }
    return false;
  }

  std::string Emit(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name:
        return Local(e.name);
      case ExprKind::Constant:
        if (std::holds_alternative<std::string>(e.value)) return CppStringLiteral(std::get<std::string>(e.value));
        return ConstantText(e);
      case ExprKind::Binary: {
        std::string a = Emit(*e.operands[0]);
        std::string b = Emit(*e.operands[1]);
        return Bind(e.type, Spell(e.callee, {a, b}));
      }
      case ExprKind::Unary: {
        if (e.unary_op == ir::UnaryOp::kNeg && e.operands[0]->kind == ExprKind::Constant && e.type->is_scalar() &&
            !std::holds_alternative<bool>(e.operands[0]->value)) {
          // A negated literal: fold into one constant of the (possibly coerced) type.
          Expr c;
          c.kind = ExprKind::Constant;
          c.type = e.type;
          const auto& v = e.operands[0]->value;
          if (auto* i = std::get_if<int64_t>(&v)) c.value = static_cast<int64_t>(0 - static_cast<uint64_t>(*i));
          else if (auto* d = std::get_if<double>(&v)) c.value = -*d;
          return ConstantText(c);
        }
        return Bind(e.type, Spell(e.callee, {Emit(*e.operands[0])}));
      }
      case ExprKind::Compare: {
        std::string result = Temp();
        std::string left = Emit(*e.operands[0]);
        w_.Line("bool " + result + " = false;");
        // a < b < c: each comparison only if the previous held; b evaluated once.
        int opened = 0;
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          std::string right = Emit(*e.operands[i + 1]);
          w_.Line(result + " = " + Spell(e.callees[i], {left, right}) + ";");
          if (i + 1 < e.compare_ops.size()) {
            w_.Open("if (" + result + ") {");
            ++opened;
          }
          left = right;
        }
        while (opened--) w_.Close();
        return result;
      }
      case ExprKind::BoolOp: {
        std::string result = Temp();
        w_.Line("bool " + result + " = (bool)(" + Emit(*e.operands[0]) + ");");
        int opened = 0;
        for (size_t i = 1; i < e.operands.size(); ++i) {
          w_.Open(e.bool_op == ir::BoolOpKind::kAnd ? "if (" + result + ") {" : "if (!" + result + ") {");
          ++opened;
          w_.Line(result + " = (bool)(" + Emit(*e.operands[i]) + ");");
        }
        while (opened--) w_.Close();
        return result;
      }
      case ExprKind::Call:
        return Call(e);
      case ExprKind::Subscript: {
        const Expr& owner = *e.operands[0];
        if (owner.kind == ExprKind::Attribute && owner.name == "shape" && owner.operands[0]->type->is_array())
          return "(" + Emit(*owner.operands[0]) + ").shape[" + std::to_string(std::get<int64_t>(e.operands[1]->value)) +
                 "]";
        if (owner.type->is_array()) {
          std::string arr = Emit(owner);
          std::vector<std::string> idx = Indices(e);
          if (static_cast<int>(idx.size()) < owner.type->ndim()) {
            // A slice: a view of the remaining dimensions (bounds-checked).
            std::string v = Temp();
            std::string args = "ctx, " + arr + ", " + Line(e.span);
            for (const auto& i : idx) args += ", " + i;
            w_.Line(e.type->CppName() + " " + v + ";");
            w_.Line("if (WP_UNLIKELY(!wp::subview(" + args + ", &" + v + "))) " + fail_);
            return v;
          }
          return Bind(e.type, "*" + Address(arr, idx, e.type, e.span));
        }
        if (owner.type->is_matrix() && e.operands.size() == 2) {
          std::string m = Emit(owner);
          return Bind(e.type, "wp::mat_row(" + m + ", " + IndexText(*e.operands[1], owner.type->rows()) + ")");
        }
        if (owner.type->is_matrix()) {
          std::string m = Emit(owner);
          std::string i = IndexText(*e.operands[1], owner.type->rows());
          return Bind(e.type, m + ".c[" + i + "][" + IndexText(*e.operands[2], owner.type->cols()) + "]");
        }
        std::string v = Emit(owner);
        if (owner.type->is_transform())
          return Bind(e.type, "wp::transform_get(" + v + ", " + IndexText(*e.operands[1], 7) + ")");
        return Bind(e.type, v + ".c[" + IndexText(*e.operands[1], owner.type->length()) + "]");
      }
      case ExprKind::Attribute: {
        std::string v = Emit(*e.operands[0]);
        TypeRef t = e.operands[0]->type;
        if (t->is_struct()) return v + ".m_" + e.name;
        if (t->is_transform()) return v + "." + e.name;
        return v + ".c[" + std::to_string(ComponentIndex(e.name)) + "]";
      }
      case ExprKind::IfExp: {
        std::string result = Temp();
        w_.Line(e.type->CppName() + " " + result + "{};");
        w_.Open("if (" + Emit(*e.operands[0]) + ") {");
        w_.Line(result + " = " + Emit(*e.operands[1]) + ";");
        w_.Reopen("} else {");
        w_.Line(result + " = " + Emit(*e.operands[2]) + ";");
        w_.Close();
        return result;
      }
      case ExprKind::Tuple:
      case ExprKind::TypeValue:
        break;
    }
    return "/* unreachable */ {}";
  }

  std::string Call(const Expr& e) {
    if (e.callee_kind == ir::CalleeKind::kFunction) {
      const ir::Function& fn = m_.functions[e.function_index];
      std::string args = "ctx, _tid";
      for (const auto& a : e.operands) args += ", " + Emit(*a);
      std::string call = FuncSymbol(fn.name) + "(" + args + ")";
      std::string result;
      if (fn.return_type->is_void()) {
        w_.Line(call + ";");
      } else {
        result = Bind(fn.return_type, call);
      }
      w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
      return result;
    }
    const builtins::Overload& o = *e.overload;
    switch (o.form) {
      case builtins::Form::kTid:
        return "((wp::int32)_tid)";
      case builtins::Form::kLen: {
        TypeRef t = e.operands[0]->type;
        if (t->is_array()) return "((wp::int32)(" + Emit(*e.operands[0]) + ").shape[0])";
        return "((wp::int32)" + std::to_string(t->is_matrix() ? t->rows() : t->length()) + ")";
      }
      case builtins::Form::kAtomic: {
        // Evaluate indices and values, then take the address (like a[i] += v).
        size_t trailing = o.name == "atomic_cas" ? 2 : 1;
        size_t nidx = e.operands.size() - 1 - trailing;
        std::string arr = Emit(*e.operands[0]);
        std::vector<std::string> idx;
        for (size_t i = 1; i <= nidx; ++i) idx.push_back("(wp::int64)" + Emit(*e.operands[i]));
        std::vector<std::string> vals;
        for (size_t i = 1 + nidx; i < e.operands.size(); ++i) vals.push_back(Emit(*e.operands[i]));
        std::string p = Address(arr, idx, e.type, e.span);
        std::vector<std::string> args = {p};
        args.insert(args.end(), vals.begin(), vals.end());
        return Bind(e.type, Spell(e.callee, args));
      }
      case builtins::Form::kPrint:
      case builtins::Form::kPrintf:
        return PrintCall(e);
      case builtins::Form::kRange:
      case builtins::Form::kClient:
      case builtins::Form::kCall:
        break;
    }
    // Output arguments are passed as places (references); the rest as values.
    std::vector<std::string> args;
    const size_t npos = e.operands.size() - e.keywords.size();
    for (size_t i = 0; i < npos; ++i) {
      bool out = !o.hook && i < o.sig.params.size() && o.sig.params[i].out;
      args.push_back(out ? Place(*e.operands[i]) : Emit(*e.operands[i]));
    }
    std::string call = Spell(e.callee, args);
    if (e.type->is_void()) {
      w_.Line(call + ";");
      return "";
    }
    return Bind(e.type, call);
  }

  // print(), printf() and expect_near(): one output record of the call's
  // site (print_sites.h, runtime/native/warpd/native/print.h). Operands are
  // evaluated in order (string constants are text of the site, not values).
  std::string PrintCall(const Expr& e) {
    auto it = prints_.calls.find(&e);
    if (it == prints_.calls.end()) return "";
    const PrintCallSite& call = it->second;
    std::vector<std::string> operands(e.operands.size());
    for (size_t i = 0; i < e.operands.size(); ++i) {
      const Expr& a = *e.operands[i];
      if (a.kind == ExprKind::Constant && std::holds_alternative<std::string>(a.value)) continue;
      operands[i] = Emit(a);
      if (a.type->is_array())
        operands[i] = "wp::print_shape<" + std::to_string(a.type->ndim()) + ">(" + operands[i] + ")";
    }
    // expect_near's difference is computed before the test that guards the record.
    const bool expect = e.overload->name == "expect_near";
    const std::string diff =
        expect ? Bind(e.operands[2]->type, "wp::expect_near_diff(" + operands[0] + ", " + operands[1] + ")") : "";
    std::string record = "wp::print_record<" + std::to_string(call.site) + "u, " +
                         std::to_string(prints_.table.sites[call.site].payload) + "u>(ctx, _tid";
    for (int v : call.values) record += ", " + (v == kExpectNearDiff ? diff : operands[v]);
    record += ");";
    w_.Line(expect ? "if (wp::expect_near_failed(" + diff + ", " + operands[2] + ")) " + record : record);
    return "";
  }

  void Statement(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Assign:
        return Assign(s);
      case StmtKind::AugAssign:
        return AugAssign(s);
      case StmtKind::ExprStmt: {
        std::string v = Emit(*s.value);
        if (!v.empty() && !s.value->type->is_void()) w_.Line("(void)" + v + ";");
        return;
      }
      case StmtKind::If: {
        std::string c = Emit(*s.value);
        w_.Open("if (" + c + ") {");
        for (const auto& b : s.body) Statement(*b);
        if (s.orelse.empty()) {
          w_.Close();
        } else {
          w_.Reopen("} else {");
          for (const auto& b : s.orelse) Statement(*b);
          w_.Close();
        }
        return;
      }
      case StmtKind::For:
        return For(s);
      case StmtKind::While: {
        w_.Open("for (;;) {");
        std::string c = Emit(*s.value);
        w_.Line("if (!(" + c + ")) break;");
        w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
        for (const auto& b : s.body) Statement(*b);
        w_.Close();
        return;
      }
      case StmtKind::Return:
        if (s.value && f_.kind == ir::FunctionKind::kFunc) {
          w_.Line("return " + Emit(*s.value) + ";");
        } else {
          w_.Line("return;");
        }
        return;
      case StmtKind::Break:
        w_.Line("break;");
        return;
      case StmtKind::Continue:
        w_.Line("continue;");
        return;
      case StmtKind::Pass:
        return;
    }
  }

  void For(const Stmt& s) {
    const Expr& range = *s.value;
    std::string t = range.type->CppName();
    std::string start = "0", stop, step = "1";
    if (range.operands.size() == 1) {
      stop = Emit(*range.operands[0]);
    } else {
      start = Emit(*range.operands[0]);
      stop = Emit(*range.operands[1]);
      if (range.operands.size() == 3) step = Emit(*range.operands[2]);
    }
    // A 64-bit counter so `it += step` cannot overflow; step 0 runs no iterations.
    std::string it = Temp(), lo = Temp(), hi = Temp(), st = Temp();
    w_.Line("const wp::int64 " + lo + " = (wp::int64)" + start + ", " + hi + " = (wp::int64)" + stop + ", " + st +
            " = (wp::int64)" + step + ";");
    w_.Open("for (wp::int64 " + it + " = " + lo + "; " + st + " > 0 ? " + it + " < " + hi + " : (" + st + " < 0 && " +
            it + " > " + hi + "); " + it + " += " + st + ") {");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
    w_.Line(Local(s.target->name) + " = (" + t + ")" + it + ";");
    for (const auto& b : s.body) Statement(*b);
    w_.Close();
  }

  // Stores `value` into the place `target` (evaluated after the value).
  void Store(const Expr& target, const std::string& value) {
    if (target.kind == ExprKind::Subscript && target.operands[0]->type->is_matrix() && target.operands.size() == 2) {
      std::string m = Place(*target.operands[0]);
      w_.Line("wp::mat_set_row(" + m + ", " + IndexText(*target.operands[1], target.operands[0]->type->rows()) + ", " +
              value + ");");
      return;
    }
    w_.Line(Place(target) + " = " + value + ";");
  }

  void Assign(const Stmt& s) {
    const Expr& target = *s.target;
    if (target.kind == ExprKind::Tuple) {
      std::string c = Temp();
      size_t n = target.operands.size();
      w_.Line("wp::int32 " + c + "[" + std::to_string(n) + "];");
      w_.Line("wp::tid_coords(ctx->bounds, _tid, " + c + ", " + std::to_string(n) + ");");
      for (size_t i = 0; i < n; ++i) w_.Line(Local(target.operands[i]->name) + " = " + c + "[" + std::to_string(i) + "];");
      return;
    }
    std::string value = Emit(*s.value);
    Store(target, value);
  }

  void AugAssign(const Stmt& s) {
    const Expr& target = *s.target;
    std::string value = Emit(*s.value);
    if (s.overload && s.overload->form == builtins::Form::kAtomic) {
      // a[i] += v / a[i] -= v: atomic on the element.
      const Expr& owner = *target.operands[0];
      std::string arr = Emit(owner);
      std::string p = Address(arr, Indices(target), target.type, target.span);
      w_.Line("(void)" + Spell(s.callee, {p, value}) + ";");
      return;
    }
    if (target.kind == ExprKind::Subscript && target.operands[0]->type->is_matrix() && target.operands.size() == 2) {
      std::string m = Place(*target.operands[0]);
      std::string i = IndexText(*target.operands[1], target.operands[0]->type->rows());
      w_.Line("wp::mat_set_row(" + m + ", " + i + ", " + Spell(s.callee, {"wp::mat_row(" + m + ", " + i + ")", value}) +
              ");");
      return;
    }
    std::string place = Place(target);
    if (target.kind == ExprKind::Name) {
      w_.Line(place + " = " + Spell(s.callee, {place, value}) + ";");
      return;
    }
    // Evaluate the place once: bind a reference to it.
    std::string r = Temp();
    w_.Line("auto& " + r + " = " + place + ";");
    w_.Line(r + " = " + Spell(s.callee, {r, value}) + ";");
  }

  const ir::Module& m_;
  const ir::Function& f_;
  Writer& w_;
  const PrintSites& prints_;
  std::string fail_;
  int next_temp_ = 0;
};

std::string FuncSignature(const ir::Function& f) {
  std::string sig = "static WP_DEVICE_FUNC " + f.return_type->CppName() + " " + FuncSymbol(f.name) +
                    "(wp::launch_ctx* ctx, wp::int64 _tid";
  for (const auto& p : f.params) sig += ", " + p.type->CppName() + " " + Local(p.name);
  return sig + ")";
}

void EmitKernel(const ir::Module& m, const ir::Function& k, Writer& w, const PrintSites& prints) {
  compiler::KernelLayout layout = compiler::ComputeLayout(m, k);
  std::string args = ArgsStruct(k.name);
  // No file name here (client_text.h): the user's lines are numbers, and a
  // kernel moved to another file still hits the cache.
  w.Line("// kernel " + k.name + " (line " + std::to_string(layout.line) + ")");
  w.Open("struct " + args + " {");
  for (const auto& p : k.params) w.Line(p.type->CppName() + " p_" + p.name + ";");
  if (k.params.empty()) w.Line("wp::int32 unused_;");
  w.Close("};");
  // NVRTC has no __builtin_offsetof; the CPU compile pins every offset, and
  // nvcc lays structs out like the host compiler.
  w.Line("#if !WP_CUDA");
  for (const auto& p : layout.params)
    w.Line("static_assert(__builtin_offsetof(" + args + ", p_" + p.name + ") == " + std::to_string(p.offset) +
           ", " + CppStringLiteral("launch ABI: offset of " + p.name) + ");");
  w.Line("#endif");
  if (!k.params.empty())
    w.Line("static_assert(sizeof(" + args + ") == " + std::to_string(layout.args_size) +
           ", \"launch ABI: argument block size\");");
  w.Line("");
  w.Open("static WP_DEVICE_FUNC void " + BodySymbol(k.name) + "(wp::launch_ctx* ctx, const " + args +
         "& args, wp::int64 _tid) {");
  for (const auto& p : k.params) w.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
  FunctionEmitter(m, k, w, prints).Body();
  w.Close();
  w.Line("");
  w.Line("#if !WP_CUDA");
  w.Open("extern \"C\" void " + CpuEntrySymbol(k.name) +
         "(wp::launch_ctx* ctx, const void* args, wp::int64 begin, wp::int64 end) {");
  w.Line("const " + args + "& a = *(const " + args + "*)args;");
  // Faults and cancels are polled once per block of thread ids, not per id:
  // the poll is two atomic loads, and per id it cost about a third of a
  // memory-bound kernel's time. Loops inside the body still poll per iteration.
  w.Open("for (wp::int64 block = begin; block < end; block += 256) {");
  w.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
  w.Line("const wp::int64 block_end = end - block < 256 ? end : block + 256;");
  w.Line("for (wp::int64 t = block; t < block_end; ++t) " + BodySymbol(k.name) + "(ctx, a, t);");
  w.Close();
  w.Close();
  w.Line("#else");
  w.Open("extern \"C\" __global__ void " + CudaEntrySymbol(k.name) + "(wp::launch_ctx* ctx, " + args + " args) {");
  w.Line("const wp::int64 stride = (wp::int64)blockDim.x * gridDim.x;");
  w.Open("for (wp::int64 t = (wp::int64)blockIdx.x * blockDim.x + threadIdx.x; t < ctx->bounds.size; t += stride) {");
  w.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
  w.Line(BodySymbol(k.name) + "(ctx, args, t);");
  w.Close();
  w.Close();
  w.Line("#endif");
  w.Line("");
}

}  // namespace

std::string CpuEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_cpu"; }
std::string CudaEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_cuda"; }

namespace {

// What a module needs from runtime/native and which structs it defines.
class ModuleUses {
 public:
  explicit ModuleUses(const ir::Module& m) {
    for (const auto& f : m.functions) {
      for (const auto& p : f.params) Type(p.type);
      for (const auto& l : f.locals) Type(l.type);
      if (f.return_type) Type(f.return_type);
      Block(f.body);
    }
  }
  const std::set<std::string>& headers() const { return headers_; }
  const std::vector<TypeRef>& structs() const { return structs_; }

 private:
  void Type(TypeRef t) {
    if (!t) return;
    switch (t->kind()) {
      case types::Kind::kMatrix: headers_.insert("warpd/native/mat.h"); break;
      case types::Kind::kQuat: headers_.insert("warpd/native/quat.h"); break;
      case types::Kind::kTransform: headers_.insert("warpd/native/transform.h"); break;
      case types::Kind::kArray: Type(t->element()); break;
      case types::Kind::kStruct:
        for (TypeRef done : structs_)
          if (done == t) return;
        for (const auto& m : t->members()) Type(m.type);  // members first
        structs_.push_back(t);
        break;
      default: break;
    }
  }
  void Expr(const ir::Expr& e) {
    Type(e.type);
    if (e.overload && !e.overload->header.empty()) headers_.insert(std::string(e.overload->header));
    for (const auto& o : e.operands) Expr(*o);
  }
  void Block(const ir::Block& b) {
    for (const auto& s : b) {
      if (s->target) Expr(*s->target);
      if (s->value) Expr(*s->value);
      if (s->overload && !s->overload->header.empty()) headers_.insert(std::string(s->overload->header));
      Block(s->body);
      Block(s->orelse);
    }
  }

  std::set<std::string> headers_;
  std::vector<TypeRef> structs_;
};

void EmitStruct(TypeRef t, Writer& w) {
  w.Line("// struct " + t->struct_name());
  w.Open("struct " + t->CppName() + " {");
  for (const auto& m : t->members()) w.Line(m.type->CppName() + " m_" + m.name + ";");
  w.Close("};");
  w.Line("#if !WP_CUDA");
  for (const auto& m : t->members())
    w.Line("static_assert(__builtin_offsetof(" + t->CppName() + ", m_" + m.name + ") == " + std::to_string(m.offset) +
           ", \"struct layout\");");
  w.Line("#endif");
  w.Line("static_assert(sizeof(" + t->CppName() + ") == " + std::to_string(t->size()) + ", \"struct size\");");
  w.Line("");
}

}  // namespace

std::string GenerateModule(const ir::Module& module) {
  ModuleUses uses(module);
  const PrintSites prints = CollectPrintSites(module);
  Writer w;
  w.Line("// Generated by warpd codegen. Do not edit.");
  w.Line("#include \"warpd/native/builtin.h\"");
  for (const std::string& h : uses.headers()) w.Line("#include \"" + h + "\"");
  w.Line("");
  for (TypeRef t : uses.structs()) EmitStruct(t, w);
  for (const auto& f : module.functions)
    if (f.kind == ir::FunctionKind::kFunc) w.Line(FuncSignature(f) + ";");
  w.Line("");
  for (const auto& f : module.functions) {
    if (f.kind != ir::FunctionKind::kFunc) continue;
    w.Line("// function " + f.name + " (line " + std::to_string(f.span.line) + ")");
    w.Open(FuncSignature(f) + " {");
    FunctionEmitter(module, f, w, prints).Body();
    w.Close();
    w.Line("");
  }
  for (const auto& f : module.functions)
    if (f.kind == ir::FunctionKind::kKernel) EmitKernel(module, f, w, prints);
  return w.str();
}

}  // namespace warpd::codegen
