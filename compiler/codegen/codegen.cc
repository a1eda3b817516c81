#include "compiler/codegen/codegen.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "compiler/builtins/builtins.h"
#include "compiler/codegen/client_text.h"
#include "compiler/codegen/layout.h"

namespace warpd::codegen {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ScalarKind;
using ir::Stmt;
using ir::StmtKind;
using ir::Type;

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
  std::string cpp(ir::ScalarCppName(k));
  if (!ir::IsSigned(k)) return "((" + cpp + ")" + std::to_string(static_cast<uint64_t>(v)) + "ull)";
  if (v == INT64_MIN) return "((" + cpp + ")(-9223372036854775807ll - 1))";
  return "((" + cpp + ")" + std::to_string(v) + "ll)";
}

std::string ConstantText(const Expr& e) {
  ScalarKind k = e.type.scalar();
  if (const bool* b = std::get_if<bool>(&e.value)) {
    if (k == ScalarKind::kBool) return *b ? "true" : "false";
    return IntLiteral(*b ? 1 : 0, k);
  }
  if (const int64_t* i = std::get_if<int64_t>(&e.value)) {
    if (ir::IsFloat(k)) return FloatLiteral(static_cast<double>(*i), k);
    if (k == ScalarKind::kBool) return *i ? "true" : "false";
    return IntLiteral(*i, k);
  }
  double d = std::get<double>(e.value);
  if (ir::IsFloat(k)) return FloatLiteral(d, k);
  return "wp::cast<" + std::string(ir::ScalarCppName(k)) + ">(" + FloatLiteral(d, ScalarKind::kFloat64) + ")";
}

// The C++ function for a regular builtin applied to `args` (operators of
// augmented assignments are resolved here; sema checked they exist).
std::string_view ResolveCpp(std::string_view name, std::initializer_list<Type> args) {
  std::vector<Type> v(args);
  for (const auto* o : builtins::Lookup(name))
    if (builtins::MatchOverload(*o, v)) return o->cpp;
  return "wp::unresolved";
}

class FunctionEmitter {
 public:
  FunctionEmitter(const ir::Module& m, const ir::Function& f, Writer& w) : m_(m), f_(f), w_(w) {
    fail_ = f.kind == ir::FunctionKind::kKernel || f.return_type.is_void() ? "return;" : "return {};";
  }

  void Body() {
    for (const auto& l : f_.locals)
      if (!l.is_param) w_.Line(l.type.CppName() + " " + Local(l.name) + "{};");
    for (const auto& s : f_.body) Statement(*s);
    if (f_.kind == ir::FunctionKind::kFunc && !f_.return_type.is_void()) w_.Line("return {};");
  }

 private:
  std::string Temp() { return "t" + std::to_string(next_temp_++); }
  std::string Line(const ir::Span& s) { return std::to_string(s.line); }

  // Declares `const T tN = value;` and returns tN.
  std::string Bind(const Type& t, const std::string& value) {
    std::string name = Temp();
    w_.Line("const " + t.CppName() + " " + name + " = " + value + ";");
    return name;
  }

  // Emits the bounds-checked address of an array element; returns the pointer.
  std::string Address(const Expr& sub) {
    std::string arr = Emit(*sub.operands[0]);
    std::string args = "ctx, " + arr + ", " + Line(sub.span);
    for (size_t i = 1; i < sub.operands.size(); ++i) args += ", (wp::int64)" + Emit(*sub.operands[i]);
    std::string p = Temp();
    w_.Line(sub.type.CppName() + "* " + p + " = wp::address(" + args + ");");
    w_.Line("if (WP_UNLIKELY(!" + p + ")) " + fail_);
    return p;
  }

  // Component `index` of a vector value `vec` of type `vt`; dynamic indices are checked.
  std::string Component(const std::string& vec, const Type& vt, const Expr& index) {
    if (index.kind == ExprKind::Constant) return vec + ".c[" + std::to_string(std::get<int64_t>(index.value)) + "]";
    std::string k = Emit(index);
    std::string n = std::to_string(vt.length());
    w_.Line("if (WP_UNLIKELY((wp::uint64)(" + k + ") >= " + n + "u)) { (void)wp::record_index_fault(ctx, " +
            Line(index.span) + ", 0, (wp::int64)(" + k + "), " + n + "); " + fail_ + " }");
    return vec + ".c[" + k + "]";
  }

  static int AttributeIndex(const std::string& name) {
    return name == "x" ? 0 : name == "y" ? 1 : name == "z" ? 2 : 3;
  }

  std::string Emit(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name:
        return Local(e.name);
      case ExprKind::Constant:
        return ConstantText(e);
      case ExprKind::Binary: {
        std::string a = Emit(*e.operands[0]);
        std::string b = Emit(*e.operands[1]);
        return Bind(e.type, std::string(e.overload->cpp) + "(" + a + ", " + b + ")");
      }
      case ExprKind::Unary: {
        if (e.unary_op == ir::UnaryOp::kNot) return Bind(e.type, "!(" + Emit(*e.operands[0]) + ")");
        if (e.unary_op == ir::UnaryOp::kPos) return Emit(*e.operands[0]);
        if (e.operands[0]->kind == ExprKind::Constant && e.type.is_scalar()) {
          // A negated literal: fold into one constant of the (possibly coerced) type.
          Expr c;
          c.kind = ExprKind::Constant;
          c.type = e.type;
          const auto& v = e.operands[0]->value;
          if (auto* i = std::get_if<int64_t>(&v)) c.value = static_cast<int64_t>(0 - static_cast<uint64_t>(*i));
          else if (auto* d = std::get_if<double>(&v)) c.value = -*d;
          else c.value = v;
          if (!std::holds_alternative<bool>(v)) return ConstantText(c);
        }
        return Bind(e.type, std::string(e.overload->cpp) + "(" + Emit(*e.operands[0]) + ")");
      }
      case ExprKind::Compare: {
        std::string result = Temp();
        std::string left = Emit(*e.operands[0]);
        w_.Line("bool " + result + " = false;");
        // a < b < c: each comparison only if the previous held; b evaluated once.
        int opened = 0;
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          std::string right = Emit(*e.operands[i + 1]);
          std::string cpp(ResolveCpp(builtins::CompareOpBuiltin(static_cast<int>(e.compare_ops[i])),
                                     {e.operands[i]->type, e.operands[i + 1]->type}));
          w_.Line(result + " = " + cpp + "(" + left + ", " + right + ");");
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
        if (owner.kind == ExprKind::Attribute && owner.name == "shape" && owner.operands[0]->type.is_array())
          return "(" + Emit(*owner.operands[0]) + ").shape[" +
                 std::to_string(std::get<int64_t>(e.operands[1]->value)) + "]";
        if (owner.type.is_array()) {
          std::string p = Address(e);
          return Bind(e.type, "*" + p);
        }
        std::string v = Emit(owner);
        return Bind(e.type, Component(v, owner.type, *e.operands[1]));
      }
      case ExprKind::Attribute:
        return Emit(*e.operands[0]) + ".c[" + std::to_string(AttributeIndex(e.name)) + "]";
      case ExprKind::IfExp: {
        std::string result = Temp();
        w_.Line(e.type.CppName() + " " + result + "{};");
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
      if (fn.return_type.is_void()) {
        w_.Line(call + ";");
      } else {
        result = Bind(fn.return_type, call);
      }
      w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
      return result;
    }
    const builtins::Overload& o = *e.overload;
    switch (o.special) {
      case builtins::Special::kTid:
        return "((wp::int32)_tid)";
      case builtins::Special::kConvert:
        return Bind(e.type, "wp::cast<" + e.type.CppName() + ">(" + Emit(*e.operands[0]) + ")");
      case builtins::Special::kVecCtor: {
        size_t n = e.operands.size();
        if (n == 0) return Bind(e.type, e.type.CppName() + "{}");
        if (n == 1 && e.operands[0]->type.is_vector())
          return Bind(e.type, "wp::cast<" + e.type.CppName() + ">(" + Emit(*e.operands[0]) + ")");
        std::string comp(ir::ScalarCppName(e.type.scalar()));
        if (n == 1)
          return Bind(e.type, "wp::vec_splat<" + std::to_string(e.type.length()) + ", " + comp + ">(" +
                                  Emit(*e.operands[0]) + ")");
        std::string items;
        for (size_t i = 0; i < n; ++i) items += (i ? ", " : "") + Emit(*e.operands[i]);
        return Bind(e.type, e.type.CppName() + "{{" + items + "}}");
      }
      case builtins::Special::kAtomicAdd: {
        // Evaluate indices and value, then take the address (like a[i] += v).
        std::string value = Emit(*e.operands.back());
        std::string arr = Emit(*e.operands[0]);
        std::string args = "ctx, " + arr + ", " + Line(e.span);
        for (size_t i = 1; i + 1 < e.operands.size(); ++i) args += ", (wp::int64)" + Emit(*e.operands[i]);
        std::string p = Temp();
        w_.Line(e.type.CppName() + "* " + p + " = wp::address(" + args + ");");
        w_.Line("if (WP_UNLIKELY(!" + p + ")) " + fail_);
        return Bind(e.type, "wp::atomic_add(" + p + ", " + value + ")");
      }
      case builtins::Special::kRange:
      case builtins::Special::kNone:
        break;
    }
    std::string args;
    for (size_t i = 0; i < e.operands.size(); ++i) args += (i ? ", " : "") + Emit(*e.operands[i]);
    return Bind(e.type, std::string(o.cpp) + "(" + args + ")");
  }

  void Statement(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Assign:
        return Assign(s);
      case StmtKind::AugAssign:
        return AugAssign(s);
      case StmtKind::ExprStmt: {
        std::string v = Emit(*s.value);
        if (!v.empty() && !s.value->type.is_void()) w_.Line("(void)" + v + ";");
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
    std::string t = range.type.CppName();
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

  void Assign(const Stmt& s) {
    const Expr& target = *s.target;
    if (target.kind == ExprKind::Tuple) {
      std::string c = Temp();
      size_t n = target.operands.size();
      w_.Line("wp::int32 " + c + "[" + std::to_string(n) + "];");
      w_.Line("wp::tid_coords(ctx->bounds, _tid, " + c + ", " + std::to_string(n) + ");");
      for (size_t i = 0; i < n; ++i)
        w_.Line(Local(target.operands[i]->name) + " = " + c + "[" + std::to_string(i) + "];");
      return;
    }
    std::string value = Emit(*s.value);
    switch (target.kind) {
      case ExprKind::Name:
        w_.Line(Local(target.name) + " = " + value + ";");
        return;
      case ExprKind::Subscript: {
        const Expr& owner = *target.operands[0];
        if (owner.type.is_array()) {
          std::string p = Address(target);
          w_.Line("*" + p + " = " + value + ";");
        } else {
          w_.Line(Component(Local(owner.name), owner.type, *target.operands[1]) + " = " + value + ";");
        }
        return;
      }
      case ExprKind::Attribute:
        w_.Line(Local(target.operands[0]->name) + ".c[" + std::to_string(AttributeIndex(target.name)) +
                "] = " + value + ";");
        return;
      default:
        return;
    }
  }

  void AugAssign(const Stmt& s) {
    const Expr& target = *s.target;
    std::string value = Emit(*s.value);
    std::string op(builtins::BinaryOpBuiltin(static_cast<int>(s.binary_op)));
    std::string cpp(ResolveCpp(op, {target.type, s.value->type}));
    if (target.kind == ExprKind::Name) {
      w_.Line(Local(target.name) + " = " + cpp + "(" + Local(target.name) + ", " + value + ");");
      return;
    }
    if (target.kind == ExprKind::Attribute) {
      std::string c = Local(target.operands[0]->name) + ".c[" + std::to_string(AttributeIndex(target.name)) + "]";
      w_.Line(c + " = " + cpp + "(" + c + ", " + value + ");");
      return;
    }
    const Expr& owner = *target.operands[0];
    if (!owner.type.is_array()) {
      std::string c = Component(Local(owner.name), owner.type, *target.operands[1]);
      w_.Line(c + " = " + cpp + "(" + c + ", " + value + ");");
      return;
    }
    std::string p = Address(target);
    if (s.binary_op == ir::BinaryOp::kAdd) {
      w_.Line("wp::atomic_add(" + p + ", " + value + ");");
    } else if (s.binary_op == ir::BinaryOp::kSub) {
      w_.Line("wp::atomic_add(" + p + ", wp::neg(" + value + "));");
    } else {
      w_.Line("*" + p + " = " + cpp + "(*" + p + ", " + value + ");");
    }
  }

  const ir::Module& m_;
  const ir::Function& f_;
  Writer& w_;
  std::string fail_;
  int next_temp_ = 0;
};

std::string FuncSignature(const ir::Function& f) {
  std::string sig = "static WP_DEVICE_FUNC " + f.return_type.CppName() + " " + FuncSymbol(f.name) +
                    "(wp::launch_ctx* ctx, wp::int64 _tid";
  for (const auto& p : f.params) sig += ", " + p.type.CppName() + " " + Local(p.name);
  return sig + ")";
}

void EmitKernel(const ir::Module& m, const ir::Function& k, Writer& w) {
  compiler::KernelLayout layout = compiler::ComputeLayout(m, k);
  std::string args = ArgsStruct(k.name);
  // No file name here (client_text.h): the user's lines are numbers, and a
  // kernel moved to another file still hits the cache.
  w.Line("// kernel " + k.name + " (line " + std::to_string(layout.line) + ")");
  w.Open("struct " + args + " {");
  for (const auto& p : k.params) w.Line(p.type.CppName() + " p_" + p.name + ";");
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
  for (const auto& p : k.params) w.Line(p.type.CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
  FunctionEmitter(m, k, w).Body();
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

std::string GenerateModule(const ir::Module& module) {
  Writer w;
  w.Line("// Generated by warpd codegen. Do not edit.");
  w.Line("#include \"warpd/native/builtin.h\"");
  w.Line("");
  for (const auto& f : module.functions)
    if (f.kind == ir::FunctionKind::kFunc) w.Line(FuncSignature(f) + ";");
  w.Line("");
  for (const auto& f : module.functions) {
    if (f.kind != ir::FunctionKind::kFunc) continue;
    w.Line("// function " + f.name + " (line " + std::to_string(f.span.line) + ")");
    w.Open(FuncSignature(f) + " {");
    FunctionEmitter(module, f, w).Body();
    w.Close();
    w.Line("");
  }
  for (const auto& f : module.functions)
    if (f.kind == ir::FunctionKind::kKernel) EmitKernel(module, f, w);
  return w.str();
}

}  // namespace warpd::codegen
