#include "compiler/ir/type.h"

#include <array>

namespace warpd::ir {
namespace {

struct ScalarRow {
  ScalarKind kind;
  std::string_view name;
  std::string_view cpp;
  std::string_view vec_suffix;  // Warp's vector type suffix: vec3f, vec3d, vec3h, vec3i...
  size_t size;
};

constexpr std::array<ScalarRow, 12> kScalars = {{
    {ScalarKind::kBool, "bool", "bool", "bool", 1},
    {ScalarKind::kInt8, "int8", "wp::int8", "b", 1},
    {ScalarKind::kUInt8, "uint8", "wp::uint8", "ub", 1},
    {ScalarKind::kInt16, "int16", "wp::int16", "s", 2},
    {ScalarKind::kUInt16, "uint16", "wp::uint16", "us", 2},
    {ScalarKind::kInt32, "int32", "wp::int32", "i", 4},
    {ScalarKind::kUInt32, "uint32", "wp::uint32", "ui", 4},
    {ScalarKind::kInt64, "int64", "wp::int64", "l", 8},
    {ScalarKind::kUInt64, "uint64", "wp::uint64", "ul", 8},
    {ScalarKind::kFloat16, "float16", "wp::half", "h", 2},
    {ScalarKind::kFloat32, "float32", "wp::float32", "f", 4},
    {ScalarKind::kFloat64, "float64", "wp::float64", "d", 8},
}};

const ScalarRow& Row(ScalarKind s) { return kScalars[static_cast<size_t>(s)]; }

}  // namespace

std::string_view ScalarName(ScalarKind s) { return Row(s).name; }
std::string_view ScalarCppName(ScalarKind s) { return Row(s).cpp; }
size_t ScalarSize(ScalarKind s) { return Row(s).size; }

std::optional<ScalarKind> ScalarFromName(std::string_view name) {
  for (const auto& row : kScalars)
    if (row.name == name) return row.kind;
  return std::nullopt;
}

bool IsFloat(ScalarKind s) {
  return s == ScalarKind::kFloat16 || s == ScalarKind::kFloat32 || s == ScalarKind::kFloat64;
}
bool IsInteger(ScalarKind s) { return s != ScalarKind::kBool && !IsFloat(s); }
bool IsSigned(ScalarKind s) {
  switch (s) {
    case ScalarKind::kInt8:
    case ScalarKind::kInt16:
    case ScalarKind::kInt32:
    case ScalarKind::kInt64:
      return true;
    default:
      return IsFloat(s);
  }
}

std::string Type::ToString() const {
  switch (kind_) {
    case Kind::kVoid:
      return "None";
    case Kind::kScalar:
      return std::string(ScalarName(scalar_));
    case Kind::kVector:
      return "vec" + std::to_string(length_) + std::string(Row(scalar_).vec_suffix);
    case Kind::kArray:
      return "array(dtype=" + element().ToString() + ", ndim=" + std::to_string(ndim_) + ")";
  }
  return "?";
}

std::string Type::CppName() const {
  switch (kind_) {
    case Kind::kVoid:
      return "void";
    case Kind::kScalar:
      return std::string(ScalarCppName(scalar_));
    case Kind::kVector:
      return "wp::vec_t<" + std::to_string(length_) + ", " + std::string(ScalarCppName(scalar_)) + ">";
    case Kind::kArray:
      return "wp::array_t<" + element().CppName() + ">";
  }
  return "void";
}

size_t Type::Size() const {
  switch (kind_) {
    case Kind::kVoid:
      return 0;
    case Kind::kScalar:
      return ScalarSize(scalar_);
    case Kind::kVector:
      return ScalarSize(scalar_) * length_;
    case Kind::kArray:
      return kArrayDescriptorSize;
  }
  return 0;
}

size_t Type::Align() const {
  switch (kind_) {
    case Kind::kVoid:
      return 1;
    case Kind::kScalar:
    case Kind::kVector:
      return ScalarSize(scalar_);
    case Kind::kArray:
      return 8;
  }
  return 1;
}

}  // namespace warpd::ir
