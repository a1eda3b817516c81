#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins {
namespace internal {

Builder::Entry Builder::Add(std::string_view name, std::string_view params, std::string_view result,
                            std::string_view constraints) {
  Overload o;
  o.name = name;
  o.group = group_;
  o.header = header_;
  o.params_text = std::string(params);
  o.result_text = std::string(result);
  o.constraints_text = std::string(constraints);
  auto sig = ParseSignature(params, result, constraints);
  if (!sig.ok()) {
    std::fprintf(stderr, "warpd: malformed builtin table entry %.*s: %s\n", static_cast<int>(name.size()),
                 name.data(), std::string(sig.status().message()).c_str());
    std::abort();
  }
  o.sig = *std::move(sig);
  o.cpp = Cat("wp::", name);
  out_.push_back(std::move(o));
  decisions_.push_back(0);
  return Entry(*this, out_.size() - 1);
}

Builder::Entry Builder::Hook(std::string_view name, TypeHook hook, std::string_view params_text,
                             std::string_view result_text) {
  Overload o;
  o.name = name;
  o.group = group_;
  o.header = header_;
  o.params_text = std::string(params_text);
  o.result_text = std::string(result_text);
  o.hook = hook;
  out_.push_back(std::move(o));
  decisions_.push_back(0);
  return Entry(*this, out_.size() - 1);
}

Builder::Entry& Builder::Entry::Decide(bool differentiable) {
  o().differentiable = differentiable;
  ++b_.decisions_[i_];
  return *this;
}

absl::Status Builder::Finish() const {
  std::vector<std::string> bad;
  for (size_t i = 0; i < out_.size(); ++i) {
    if (decisions_[i] == 1) continue;
    const Overload& o = out_[i];
    bad.push_back(Cat(o.name, "(", o.params_text, ")", decisions_[i] ? " [decided twice]" : ""));
  }
  if (bad.empty()) return absl::OkStatus();
  return absl::InternalError(Cat("builtin table entries without exactly one Diff()/NoDiff(): ", Join(bad, "; ")));
}

}  // namespace internal

namespace {

std::vector<Overload> BuildTable() {
  std::vector<Overload> t;
  t.reserve(1024);
  internal::Builder b(t);
  internal::AddOperators(b);
  internal::AddScalarMath(b);
  internal::AddVectorMath(b);
  internal::AddQuaternionAndSpatial(b);
  internal::AddRandom(b);
  internal::AddUtility(b);
  internal::AddGeometry(b);
  internal::AddVolumes(b);
  if (absl::Status s = b.Finish(); !s.ok()) {
    std::fprintf(stderr, "warpd: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
  // Group overloads by name, keeping table order within a name.
  std::stable_sort(t.begin(), t.end(), [](const Overload& x, const Overload& y) { return x.name < y.name; });
  return t;
}

const std::vector<Overload>& TableStorage() {
  static const std::vector<Overload>* table = new std::vector<Overload>(BuildTable());
  return *table;
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::span<const Overload> Table() { return TableStorage(); }

std::vector<const Overload*> Lookup(std::string_view name) {
  if (name.substr(0, 3) == "wp.") name = name.substr(3);
  const auto& t = TableStorage();
  auto lo = std::lower_bound(t.begin(), t.end(), name, [](const Overload& o, std::string_view n) { return o.name < n; });
  std::vector<const Overload*> out;
  for (auto it = lo; it != t.end() && it->name == name; ++it) out.push_back(&*it);
  return out;
}

std::vector<std::string_view> Names() {
  std::vector<std::string_view> out;
  for (const auto& o : TableStorage())
    if (out.empty() || out.back() != o.name) out.push_back(o.name);
  return out;
}

std::vector<std::string_view> Suggest(std::string_view name) {
  if (name.substr(0, 3) == "wp.") name = name.substr(3);
  std::vector<std::pair<int, std::string_view>> scored;
  for (std::string_view n : Names()) {
    int d = EditDistance(name, n);
    if (d <= 2 && d < static_cast<int>(std::max(name.size(), n.size()))) scored.push_back({d, n});
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<std::string_view> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

std::string Spell(std::string_view s, const SpellInput& in) {
  // A callee (an identifier, possibly with template arguments) is called
  // with the arguments; other templates without placeholders (constants,
  // `((void)0)`, `wp::vec_t<3, wp::float32>{}`) are used as they are.
  bool callee = !s.empty() && (std::isalnum(static_cast<unsigned char>(s.back())) || s.back() == '_' || s.back() == '>');
  if (in.args && callee && s.find('$') == std::string_view::npos) {
    std::string out = Cat(s, "(", Join(*in.args, ", "), ")");
    return out;
  }
  constexpr std::string_view kInts = "nmrck";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    char c = s[i + 1];
    bool arg = (c >= '0' && c <= '9') || c == '*' || c == '{' || c == 'L';
    if (arg != (in.args != nullptr)) {  // the other phase's placeholder
      out += '$';
      continue;
    }
    ++i;
    if (c == 'L') {  // the call's source line (for faults it records)
      out += std::to_string(in.line);
    } else if (c == '*') {
      out += Join(*in.args, ", ");
    } else if (c == '{') {  // ${12}: argument 12
      size_t close = s.find('}', i + 1);
      size_t k = 0;
      for (size_t j = i + 1; j < close && j < s.size(); ++j) k = k * 10 + static_cast<size_t>(s[j] - '0');
      if (k < in.args->size()) out += (*in.args)[k];
      i = close == std::string_view::npos ? s.size() : close;
    } else if (arg) {
      size_t k = static_cast<size_t>(c - '0');
      if (k < in.args->size()) out += (*in.args)[k];
    } else if (c == 'R') {
      out += in.result ? in.result->CppName() : "void";
    } else if (in.bindings && (c == 'T' || c == 'S')) {
      out += types::ScalarCppName(in.bindings->dtypes[c == 'T' ? 0 : 1].value_or(types::ScalarKind::kFloat32));
    } else if (in.bindings && (c == 'V' || c == 'W')) {
      types::TypeRef v = in.bindings->values[c == 'V' ? 0 : 1];
      out += v ? v->CppName() : "void";
    } else if (in.bindings && kInts.find(c) != std::string_view::npos) {
      out += std::to_string(in.bindings->ints[kInts.find(c)]);
    } else {
      out += '$';  // not resolvable here: left for a later phase (and caught by the compile)
      --i;
    }
  }
  return out;
}

std::optional<Resolution> Resolve(std::span<const Overload* const> overloads, std::span<const types::TypeRef> args,
                                  types::TypeTable& table) {
  for (const Overload* o : overloads) {
    if (o->hook) continue;
    Bindings b;
    if (!Match(o->sig, args, &b)) continue;
    Resolution r;
    r.overload = o;
    r.result = o->sig.result ? Instantiate(*o->sig.result, b, table) : types::Void();
    r.cpp = Spell(o->cpp, {.bindings = &b, .result = r.result});
    for (size_t i = args.size(); i < o->sig.params.size(); ++i)
      r.defaults.push_back(Instantiate(o->sig.params[i].pattern, b, table));
    return r;
  }
  return std::nullopt;
}

std::string_view SameTypesError(std::span<const Overload* const> overloads, std::span<const types::TypeRef> args) {
  for (const Overload* o : overloads) {
    if (o->hook || o->same_types_error.empty() || args.size() != o->sig.params.size()) continue;
    bool each = true;
    for (size_t i = 0; i < args.size() && each; ++i) {
      Signature alone = o->sig;
      alone.params = {o->sig.params[i]};
      Bindings b;
      each = args[i] && Match(alone, args.subspan(i, 1), &b);
    }
    if (each) return o->same_types_error;
  }
  return {};
}

std::string AtomicCallee(std::string_view name, types::TypeRef elem) {
  if (elem->is_scalar()) return Cat("wp::", name);
  const uint64_t n = elem->size() / types::ScalarSize(elem->scalar());
  return Cat("wp::", name, "_n<", types::ScalarCppName(elem->scalar()), ", ", n, ">");
}

bool AtomicScalarSupported(std::string_view name, types::ScalarKind s) {
  using types::ScalarKind;
  const bool wide = s == ScalarKind::kInt32 || s == ScalarKind::kUInt32 || s == ScalarKind::kInt64 ||
                    s == ScalarKind::kUInt64 || s == ScalarKind::kFloat32 || s == ScalarKind::kFloat64;
  if (name == "atomic_add" || name == "atomic_sub") return wide || s == ScalarKind::kFloat16 || s == ScalarKind::kBFloat16;
  if (name == "atomic_min" || name == "atomic_max") return wide || s == ScalarKind::kBFloat16;
  if (name == "atomic_and" || name == "atomic_or" || name == "atomic_xor") return wide && types::IsInteger(s);
  return wide;  // atomic_cas, atomic_exch
}

std::string_view AtomicScalarsText(std::string_view name) {
  if (name == "atomic_add" || name == "atomic_sub") return "[u]int32, [u]int64, float16, bfloat16, float32, or float64";
  if (name == "atomic_min" || name == "atomic_max") return "[u]int32, [u]int64, bfloat16, float32, or float64";
  if (name == "atomic_and" || name == "atomic_or" || name == "atomic_xor") return "[u]int32 or [u]int64";
  return "[u]int32, [u]int64, float32, or float64";
}

bool AtomicSupports(std::string_view name, types::TypeRef elem) {
  if (!elem->has_dtype()) return false;
  if (!AtomicScalarSupported(name, elem->scalar())) return false;
  if (name == "atomic_cas" || name == "atomic_exch") return elem->is_scalar();
  // Warp 1.19's native code adds transforms (its atomic_sub adds the
  // negation) and has no other atomic on them.
  if (elem->is_transform()) return name == "atomic_add" || name == "atomic_sub";
  if (name == "atomic_min" || name == "atomic_max") return !elem->is_quat();
  return true;
}

std::string SignatureText(const Overload& o) {
  std::string s = Cat(o.name, "(");
  if (o.hook) {
    CatAppend(&s, o.params_text, ")");
    if (!o.result_text.empty()) CatAppend(&s, " -> ", o.result_text);
    return s;
  }
  std::vector<std::string> params;
  bool uses[2] = {false, false};
  auto note = [&](const Pattern& p) {
    if (p.dtype_var >= 0) uses[p.dtype_var] = true;
    for (const Pattern& e : p.elements)
      if (e.dtype_var >= 0) uses[e.dtype_var] = true;
  };
  for (const Param& p : o.sig.params) {
    params.push_back(Cat(p.name, ": ", p.out ? "out " : "", PatternText(p.pattern),
                         p.default_value ? Cat(" = ", *p.default_value) : std::string()));
    note(p.pattern);
  }
  CatAppend(&s, absl::StrJoin(params, ", "), ")");
  if (o.sig.result) {
    CatAppend(&s, " -> ", PatternText(*o.sig.result));
    note(*o.sig.result);
  }
  std::vector<std::string> fams;
  for (int v = 0; v < 2; ++v)
    if (uses[v]) fams.push_back(Cat(v ? "S" : "T", ": ", FamilyName(o.sig.families[v])));
  if (!fams.empty()) CatAppend(&s, "  [", absl::StrJoin(fams, ", "), "]");
  return s;
}

std::string_view BinaryOpBuiltin(ir::BinaryOp op) {
  switch (op) {
    case ir::BinaryOp::kAdd: return "add";
    case ir::BinaryOp::kSub: return "sub";
    case ir::BinaryOp::kMul: return "mul";
    case ir::BinaryOp::kDiv: return "div";
    case ir::BinaryOp::kFloorDiv: return "floordiv";
    case ir::BinaryOp::kMod: return "mod";
    case ir::BinaryOp::kPow: return "pow";
    case ir::BinaryOp::kBitAnd: return "bit_and";
    case ir::BinaryOp::kBitOr: return "bit_or";
    case ir::BinaryOp::kBitXor: return "bit_xor";
    case ir::BinaryOp::kLShift: return "lshift";
    case ir::BinaryOp::kRShift: return "rshift";
    case ir::BinaryOp::kMatMul: return "mul";
  }
  return "";
}

std::string_view UnaryOpBuiltin(ir::UnaryOp op) {
  switch (op) {
    case ir::UnaryOp::kNeg: return "neg";
    case ir::UnaryOp::kPos: return "pos";
    case ir::UnaryOp::kNot: return "unot";
    case ir::UnaryOp::kInvert: return "invert";
  }
  return "";
}

std::string_view CompareOpBuiltin(ir::CompareOp op) {
  switch (op) {
    case ir::CompareOp::kEq: return "eq";
    case ir::CompareOp::kNe: return "ne";
    case ir::CompareOp::kLt: return "lt";
    case ir::CompareOp::kLe: return "le";
    case ir::CompareOp::kGt: return "gt";
    case ir::CompareOp::kGe: return "ge";
  }
  return "";
}

bool IsLiteral(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::Constant)  // untyped numbers (not bools, not strings)
    return !e.const_dtype && (std::holds_alternative<int64_t>(e.value) || std::holds_alternative<double>(e.value));
  if (e.kind == ir::ExprKind::Unary && (e.unary_op == ir::UnaryOp::kNeg || e.unary_op == ir::UnaryOp::kPos))
    return IsLiteral(*e.operands[0]);
  return false;
}

bool CoerceLiteral(ir::Expr& e, types::ScalarKind to) {
  if (!IsLiteral(e) || to == types::ScalarKind::kBool) return false;
  const ir::Expr* leaf = &e;
  while (leaf->kind != ir::ExprKind::Constant) leaf = leaf->operands[0].get();
  if (std::holds_alternative<double>(leaf->value) && !types::IsFloat(to)) return false;
  types::TypeRef t = types::Scalar(to);
  // Re-resolve the unary operators on the way down for the new type.
  ir::Expr* node = &e;
  while (node->kind == ir::ExprKind::Unary) {
    auto overloads = Lookup(UnaryOpBuiltin(node->unary_op));
    types::TypeRef arg[1] = {t};
    auto r = Resolve(overloads, arg, types::TypeTable::Global());
    if (!r) return false;
    node->type = t;
    node->overload = r->overload;
    node->callee = r->cpp;
    node = node->operands[0].get();
  }
  node->type = t;
  return true;
}

}  // namespace warpd::builtins
