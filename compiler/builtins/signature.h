// warpd compiler: type patterns of builtin signatures.
//
// A builtin's parameters and result are written as text in the table, close
// to Warp's documentation, and parsed once when the table is built:
//
//   "a: vec(N, T), b: vec(N, T)"  ->  "T"          with "T: Scalar"
//   "A: mat(3, 3, T), U: out mat(3, 3, T)"         (an output argument)
//   "cond: bool, value_if_false: V, value_if_true: V" -> "V"
//
// Pattern syntax:
//   T, S                  a scalar dtype variable (its family from the
//                         constraints: Scalar (default), Float, Int, Cond, Any)
//   N, M, R, C, K         an integer variable (vector length, matrix dims)
//   V, W                  any value type (not an array)
//   bool, int32, float32, ...   a concrete scalar
//   vec(len, dtype)  mat(rows, cols, dtype)  quat(dtype)  transform(dtype)
//   array(dtype)          an array of any ndim; array(dtype, ndim)
//   tuple(p1, p2, ...)    results only: several values (Warp's tuple returns)
//   hash_grid_query(dtype)  Warp's HashGridQuery of that precision
//   bvh_query_aabb(float32), bvh_query_ray(..), bvh_query_capsule(..),
//   bvh_query_sphere(..)    Warp's BvhQuery of each query builtin
//   mesh_query_point(float32), mesh_query_ray(..), mesh_query_aabb(..)
//                         Warp's MeshQueryPoint, MeshQueryRay, MeshQueryAABB
//   name: T = 1.0e-6      a trailing scalar parameter with a default (a number
//                         of the parameter's type; a call may leave it out)
// A variable binds on first use; later uses must agree (no implicit
// conversions: Warp has none).
// Thread-compatible values.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types/type.h"

namespace warpd::builtins {

// Warp's dtype families.
enum class Family : uint8_t {
  kScalar,  // integers and floats (float16 included), not bool
  kFloat,   // float16, float32, float64
  kInt,     // the eight integer types
  kCond,    // what a condition may be: bool and the integers
  kAny,     // any scalar, bool included
};
bool InFamily(types::ScalarKind s, Family f);
std::string_view FamilyName(Family f);

struct Pattern {
  enum class Kind : uint8_t { kScalar, kVector, kMatrix, kQuat, kTransform, kArray, kValue, kTuple, kQuery };
  Kind kind = Kind::kScalar;
  // The dtype: a concrete scalar (dtype_var < 0) or a variable (0: T, 1: S).
  int dtype_var = -1;
  types::ScalarKind scalar = types::ScalarKind::kFloat32;
  // Vector length / matrix rows, cols / array ndim: > 0 fixed, < 0 the
  // integer variable -(i+1), 0 any (array ndim only).
  int dims[2] = {0, 0};
  // kValue (V, W), or an array's element when it is a V/W: which one.
  int value_var = -1;
  // kTuple (results only): the elements.
  std::vector<Pattern> elements;
  // kQuery: which query (its precision is the dtype).
  types::QueryKind query = types::QueryKind::kHashGrid;
};

struct Param {
  std::string name;
  Pattern pattern;
  bool out = false;  // an output argument: passed by reference, must be assignable
  // A default (trailing scalar parameters only): a call that leaves the
  // parameter out passes this number, of the parameter's bound type.
  std::optional<double> default_value;
};

struct Signature {
  std::vector<Param> params;
  std::optional<Pattern> result;  // none: returns nothing
  Family families[2] = {Family::kScalar, Family::kScalar};
};

// Parses the table's text; INTERNAL on a malformed table entry.
absl::StatusOr<Signature> ParseSignature(std::string_view params, std::string_view result,
                                         std::string_view constraints);

struct Bindings {
  std::optional<types::ScalarKind> dtypes[2];
  int ints[5] = {0, 0, 0, 0, 0};
  types::TypeRef values[2] = {nullptr, nullptr};
};

// Matches argument types; fills *b. Structs and struct arrays match only V/W.
bool Match(const Signature& sig, std::span<const types::TypeRef> args, Bindings* b);

// The concrete type of a pattern under bindings (all its variables bound).
// Struct-containing values come back as bound; arrays are made in `table`.
types::TypeRef Instantiate(const Pattern& p, const Bindings& b, types::TypeTable& table);

// "vec(N, T)" as written in docs and messages.
std::string PatternText(const Pattern& p);

}  // namespace warpd::builtins
