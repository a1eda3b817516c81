#include "compiler/builtins/builtins.h"

#include <string>

namespace warpd::builtins {
namespace {

using S = Slot;
using C = TClass;

std::vector<Overload> BuildTable() {
  std::vector<Overload> t;
  auto add = [&](std::string_view name, std::vector<Slot> params, Slot result, TClass c,
                 std::string_view cpp, bool diff = true) {
    t.push_back(Overload{name, std::move(params), result, c, cpp, diff, Special::kNone});
  };
  auto special = [&](std::string_view name, Special s, std::string_view cpp, bool diff) {
    t.push_back(Overload{name, {}, Slot::kVoid, TClass::kAny, cpp, diff, s});
  };

  // Arithmetic operators.
  add("add", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::add");
  add("add", {S::kVec, S::kVec}, S::kVec, C::kNumeric, "wp::add");
  add("sub", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::sub");
  add("sub", {S::kVec, S::kVec}, S::kVec, C::kNumeric, "wp::sub");
  add("mul", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::mul");
  add("mul", {S::kVec, S::kT}, S::kVec, C::kNumeric, "wp::mul");
  add("mul", {S::kT, S::kVec}, S::kVec, C::kNumeric, "wp::mul");
  add("div", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::div");
  add("div", {S::kVec, S::kT}, S::kVec, C::kNumeric, "wp::div");
  add("floordiv", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::floordiv", false);
  add("mod", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::mod");
  add("pow", {S::kT, S::kT}, S::kT, C::kFloat, "wp::pow");
  add("neg", {S::kT}, S::kT, C::kNumeric, "wp::neg");
  add("neg", {S::kVec}, S::kVec, C::kNumeric, "wp::neg");
  add("pos", {S::kT}, S::kT, C::kNumeric, "");
  add("pos", {S::kVec}, S::kVec, C::kNumeric, "");
  add("bit_and", {S::kT, S::kT}, S::kT, C::kInt, "wp::bit_and", false);
  add("bit_or", {S::kT, S::kT}, S::kT, C::kInt, "wp::bit_or", false);
  add("bit_xor", {S::kT, S::kT}, S::kT, C::kInt, "wp::bit_xor", false);
  add("lshift", {S::kT, S::kT}, S::kT, C::kInt, "wp::lshift", false);
  add("rshift", {S::kT, S::kT}, S::kT, C::kInt, "wp::rshift", false);
  add("invert", {S::kT}, S::kT, C::kInt, "wp::invert", false);
  add("logical_not", {S::kBool}, S::kBool, C::kAny, "wp::logical_not", false);

  // Comparisons.
  for (auto [name, cpp] : {std::pair{"eq", "wp::eq"}, {"ne", "wp::ne"}}) {
    add(name, {S::kT, S::kT}, S::kBool, C::kAny, cpp, false);
    add(name, {S::kVec, S::kVec}, S::kBool, C::kNumeric, cpp, false);
  }
  for (auto [name, cpp] : {std::pair{"lt", "wp::lt"}, {"le", "wp::le"}, {"gt", "wp::gt"}, {"ge", "wp::ge"}})
    add(name, {S::kT, S::kT}, S::kBool, C::kNumeric, cpp, false);

  // Scalar math.
  for (auto [name, cpp] : {std::pair{"sqrt", "wp::sqrt"}, {"sin", "wp::sin"}, {"cos", "wp::cos"},
                           {"tan", "wp::tan"}, {"asin", "wp::asin"}, {"acos", "wp::acos"},
                           {"atan", "wp::atan"}, {"sinh", "wp::sinh"}, {"cosh", "wp::cosh"},
                           {"tanh", "wp::tanh"}, {"exp", "wp::exp"}, {"log", "wp::log"},
                           {"log2", "wp::log2"}, {"log10", "wp::log10"}})
    add(name, {S::kT}, S::kT, C::kFloat, cpp);
  for (auto [name, cpp] : {std::pair{"floor", "wp::floor"}, {"ceil", "wp::ceil"},
                           {"trunc", "wp::trunc"}, {"round", "wp::round"}})
    add(name, {S::kT}, S::kT, C::kFloat, cpp, false);
  add("atan2", {S::kT, S::kT}, S::kT, C::kFloat, "wp::atan2");
  add("abs", {S::kT}, S::kT, C::kNumeric, "wp::abs");
  add("sign", {S::kT}, S::kT, C::kNumeric, "wp::sign", false);
  add("min", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::min");
  add("min", {S::kVec, S::kVec}, S::kVec, C::kNumeric, "wp::min");
  add("max", {S::kT, S::kT}, S::kT, C::kNumeric, "wp::max");
  add("max", {S::kVec, S::kVec}, S::kVec, C::kNumeric, "wp::max");
  add("clamp", {S::kT, S::kT, S::kT}, S::kT, C::kNumeric, "wp::clamp");

  // Vectors.
  add("dot", {S::kVec, S::kVec}, S::kT, C::kNumeric, "wp::dot");
  add("cross", {S::kVec3, S::kVec3}, S::kVec3, C::kNumeric, "wp::cross");
  add("length", {S::kVec}, S::kT, C::kFloat, "wp::length");
  add("length_sq", {S::kVec}, S::kT, C::kNumeric, "wp::length_sq");
  add("normalize", {S::kVec}, S::kVec, C::kFloat, "wp::normalize");
  add("cw_mul", {S::kVec, S::kVec}, S::kVec, C::kNumeric, "wp::cw_mul");

  // Irregular builtins, typed by sema.
  special("tid", Special::kTid, "", false);
  special("range", Special::kRange, "", false);
  special("atomic_add", Special::kAtomicAdd, "wp::atomic_add", true);
  for (std::string_view n : {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                             "uint64", "float16", "float32", "float64", "int", "float"})
    special(n, Special::kConvert, "wp::cast", true);
  static const char* kVecNames[] = {
      "vec2", "vec3", "vec4", "vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d", "vec2h", "vec3h",
      "vec4h", "vec2i", "vec3i", "vec4i", "vec2ui", "vec3ui", "vec4ui", "vec2l", "vec3l", "vec4l",
      "vec2ul", "vec3ul", "vec4ul", "vec2b", "vec3b", "vec4b", "vec2ub", "vec3ub", "vec4ub",
      "vec2s", "vec3s", "vec4s", "vec2us", "vec3us", "vec4us"};
  for (const char* n : kVecNames) special(n, Special::kVecCtor, "", true);
  return t;
}

const std::vector<Overload>& TableStorage() {
  static const std::vector<Overload> table = BuildTable();
  return table;
}

std::string_view SlotText(Slot s) {
  switch (s) {
    case Slot::kVoid: return "None";
    case Slot::kT: return "T";
    case Slot::kVec: return "vec<N,T>";
    case Slot::kVec3: return "vec<3,T>";
    case Slot::kBool: return "bool";
  }
  return "?";
}

std::string_view ClassText(TClass c) {
  switch (c) {
    case TClass::kNumeric: return "T: int or float scalar";
    case TClass::kFloat: return "T: float32 or float64";
    case TClass::kInt: return "T: integer";
    case TClass::kAny: return "T: any scalar";
  }
  return "";
}

}  // namespace

std::span<const Overload> Table() { return TableStorage(); }

std::vector<const Overload*> Lookup(std::string_view name) {
  std::vector<const Overload*> out;
  for (const auto& o : TableStorage())
    if (o.name == name) out.push_back(&o);
  return out;
}

bool InClass(ir::ScalarKind s, TClass c) {
  using K = ir::ScalarKind;
  switch (c) {
    case TClass::kNumeric: return s != K::kBool && s != K::kFloat16;
    case TClass::kFloat: return s == K::kFloat32 || s == K::kFloat64;
    case TClass::kInt: return ir::IsInteger(s);
    case TClass::kAny: return s != K::kFloat16;
  }
  return false;
}

std::optional<Match> MatchOverload(const Overload& o, std::span<const ir::Type> args) {
  if (o.special != Special::kNone || args.size() != o.params.size()) return std::nullopt;
  std::optional<ir::ScalarKind> t;
  int n = 0;
  auto bind_t = [&](ir::ScalarKind s) {
    if (!InClass(s, o.tclass)) return false;
    if (t && *t != s) return false;
    t = s;
    return true;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type& a = args[i];
    switch (o.params[i]) {
      case Slot::kT:
        if (!a.is_scalar() || !bind_t(a.scalar())) return std::nullopt;
        break;
      case Slot::kVec:
      case Slot::kVec3:
        if (!a.is_vector() || !bind_t(a.scalar())) return std::nullopt;
        if (o.params[i] == Slot::kVec3 && a.length() != 3) return std::nullopt;
        if (n && n != a.length()) return std::nullopt;
        n = a.length();
        break;
      case Slot::kBool:
        if (!a.is_scalar_of(ir::ScalarKind::kBool)) return std::nullopt;
        break;
      case Slot::kVoid:
        return std::nullopt;
    }
  }
  Match m;
  switch (o.result) {
    case Slot::kVoid: m.result = ir::Type::Void(); break;
    case Slot::kT: m.result = ir::Type::Scalar(*t); break;
    case Slot::kVec: m.result = ir::Type::Vector(n, *t); break;
    case Slot::kVec3: m.result = ir::Type::Vector(3, *t); break;
    case Slot::kBool: m.result = ir::Type::Scalar(ir::ScalarKind::kBool); break;
  }
  return m;
}

std::string Signature(const Overload& o) {
  std::string s(o.name);
  s += "(";
  for (size_t i = 0; i < o.params.size(); ++i) {
    if (i) s += ", ";
    s += SlotText(o.params[i]);
  }
  s += ") -> ";
  s += SlotText(o.result);
  bool uses_t = o.result == Slot::kT || o.result == Slot::kVec || o.result == Slot::kVec3;
  for (Slot p : o.params) uses_t |= p == Slot::kT || p == Slot::kVec || p == Slot::kVec3;
  if (uses_t) {
    s += "  [";
    s += ClassText(o.tclass);
    s += "]";
  }
  return s;
}

std::string_view BinaryOpBuiltin(int op) {
  static const std::string_view kNames[] = {"add", "sub", "mul", "div", "floordiv", "mod", "pow",
                                            "bit_and", "bit_or", "bit_xor", "lshift", "rshift", "matmul"};
  return kNames[op];
}

std::string_view CompareOpBuiltin(int op) {
  static const std::string_view kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return kNames[op];
}

std::optional<ir::Type> VectorTypeFromName(std::string_view name) {
  if (name.size() < 4 || name.substr(0, 3) != "vec") return std::nullopt;
  char len = name[3];
  if (len < '2' || len > '4') return std::nullopt;
  std::string_view suffix = name.substr(4);
  using K = ir::ScalarKind;
  static const std::pair<std::string_view, K> kSuffixes[] = {
      {"", K::kFloat32}, {"f", K::kFloat32}, {"d", K::kFloat64}, {"h", K::kFloat16},
      {"i", K::kInt32},  {"ui", K::kUInt32}, {"l", K::kInt64},   {"ul", K::kUInt64},
      {"b", K::kInt8},   {"ub", K::kUInt8},  {"s", K::kInt16},   {"us", K::kUInt16}};
  for (auto [s, k] : kSuffixes)
    if (s == suffix) return ir::Type::Vector(len - '0', k);
  return std::nullopt;
}

}  // namespace warpd::builtins
