// warpd compiler: the types of the kernel language.
//
// Type is a small value: a scalar, a fixed-length vector of a scalar, or an
// array (1-4 dims) of scalars or vectors. Sizes and alignments follow the C
// layout that runtime/native uses, so the server can lay out argument blocks
// without compiling anything. Thread-compatible (a plain value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warpd::ir {

enum class ScalarKind : uint8_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat16,
  kFloat32,
  kFloat64,
};

// Warp's names: "bool", "int8", ..., "float64".
std::string_view ScalarName(ScalarKind s);
std::optional<ScalarKind> ScalarFromName(std::string_view name);
size_t ScalarSize(ScalarKind s);
bool IsFloat(ScalarKind s);
bool IsInteger(ScalarKind s);  // not bool
bool IsSigned(ScalarKind s);
// The C++ spelling in runtime/native ("wp::float32", "wp::half", "bool").
std::string_view ScalarCppName(ScalarKind s);

class Type {
 public:
  enum class Kind : uint8_t { kVoid, kScalar, kVector, kArray };

  static constexpr int kMaxVectorLength = 16;
  static constexpr int kMaxArrayDims = 4;

  Type() = default;  // void
  static Type Void() { return Type(); }
  static Type Scalar(ScalarKind s) { return Type(Kind::kScalar, s, 0, 0); }
  // length in [1, kMaxVectorLength].
  static Type Vector(int length, ScalarKind s) { return Type(Kind::kVector, s, length, 0); }
  // element must be a scalar or a vector; ndim in [1, kMaxArrayDims].
  static Type Array(Type element, int ndim) {
    return Type(Kind::kArray, element.scalar_, element.kind_ == Kind::kVector ? element.length_ : 0,
                ndim);
  }

  Kind kind() const { return kind_; }
  bool is_void() const { return kind_ == Kind::kVoid; }
  bool is_scalar() const { return kind_ == Kind::kScalar; }
  bool is_vector() const { return kind_ == Kind::kVector; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_scalar_of(ScalarKind s) const { return is_scalar() && scalar_ == s; }

  // Scalar: itself. Vector: its component. Array: its element's scalar.
  ScalarKind scalar() const { return scalar_; }
  // Vector length (also for an array of vectors: its element's length).
  int length() const { return length_; }
  int ndim() const { return ndim_; }
  // Array element type (scalar or vector).
  Type element() const {
    return length_ ? Vector(length_, scalar_) : Scalar(scalar_);
  }

  // Warp's spelling: "float32", "vec3f", "vec5d", "array(dtype=vec3f, ndim=2)".
  std::string ToString() const;
  // The C++ spelling in generated code: "wp::vec_t<3, wp::float32>".
  std::string CppName() const;
  // Size and alignment in a kernel's argument block / an array's storage.
  // Arrays are their 64-byte descriptor (runtime/native/warpd/native/array.h).
  size_t Size() const;
  size_t Align() const;

  friend bool operator==(const Type& a, const Type& b) {
    return a.kind_ == b.kind_ && a.scalar_ == b.scalar_ && a.length_ == b.length_ &&
           a.ndim_ == b.ndim_;
  }
  friend bool operator!=(const Type& a, const Type& b) { return !(a == b); }

 private:
  Type(Kind k, ScalarKind s, int length, int ndim)
      : kind_(k), scalar_(s), length_(static_cast<uint8_t>(length)), ndim_(static_cast<uint8_t>(ndim)) {}

  Kind kind_ = Kind::kVoid;
  ScalarKind scalar_ = ScalarKind::kFloat32;
  uint8_t length_ = 0;
  uint8_t ndim_ = 0;
};

constexpr size_t kArrayDescriptorSize = 64;

}  // namespace warpd::ir
