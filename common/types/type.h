// warpd: the value types of the kernel language, interned.
//
// One type table below both the compiler and the runtime: sema types
// expressions with it, codegen spells it, layout sizes argument blocks with
// it, and the runtime's arrays record their dtype with it. It includes nothing
// from the compiler or the proto.
//
//   types::TypeRef v = types::Vector(3, types::ScalarKind::kFloat32);  // "vec3f"
//   types::TypeRef m = types::Matrix(3, 3, types::ScalarKind::kFloat64); // "mat33d"
//   v->size() == 12; v->CppName() == "wp::vec_t<3, wp::float32>"
//
// Families: void, scalar, vector(length, dtype), matrix(rows, cols, dtype),
// quaternion(dtype), transformation(dtype), struct (named, members in order,
// C layout) and array(dtype, ndim). Sizes and alignments follow the C layout of
// runtime/native (docs/native_headers.md), so the server lays out argument
// blocks and array elements without compiling anything.
//
// Interning: a TypeRef is a pointer to an immutable node; within one table
// (and the global table it forwards to) equal types are the same pointer.
// Types without structs live in the process-wide Global() table (bounded by
// the size limits below, never freed). Structs, and arrays of them, are
// interned in a local TypeTable owned by whoever owns the definition (a
// module, an array): hostile clients cannot grow process-wide state, and a
// module's structs die with it. Types from different tables compare with
// SameType (structurally).
//
// Thread-safety: TypeTable is thread-safe; Type nodes are immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace warpd::types {

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
  kBFloat16,  // Warp's bfloat16 (last: the kinds' numbering predates it)
};
constexpr int kNumScalarKinds = 13;

// Warp's names: "bool", "int8", ..., "float64".
std::string_view ScalarName(ScalarKind s);
std::optional<ScalarKind> ScalarFromName(std::string_view name);
size_t ScalarSize(ScalarKind s);
bool IsFloat(ScalarKind s);
bool IsInteger(ScalarKind s);  // not bool
bool IsSigned(ScalarKind s);   // signed integers and floats
// The C++ spelling in runtime/native ("wp::float32", "wp::half", "bool").
std::string_view ScalarCppName(ScalarKind s);
// Warp's suffix of named vector/matrix types: vec3f, vec3d, vec3h, vec3bf, vec3i, ...
std::string_view ScalarSuffix(ScalarKind s);

enum class Kind : uint8_t { kVoid, kScalar, kVector, kMatrix, kQuat, kTransform, kStruct, kArray, kTuple, kQuery };

// The opaque traversal states of object queries (Kind::kQuery): values of
// kernels and functions only (never kernel arguments, array elements or
// struct members), made by their query builtin and advanced by its _next.
enum class QueryKind : uint8_t {
  kHashGrid = 1,  // Warp's HashGridQuery: wp::hash_grid_query_t<T> (hash_grid.h)
  // Warp's BvhQuery of each query builtin (its _BvhQueryAabb, ...): one
  // wp::bvh_query_t (bvh.h), float32 only; the kind picks the overload of
  // bvh_query_next, as Warp's codegen does.
  kBvhAabb = 2,
  kBvhRay = 3,
  kBvhCapsule = 4,
  kBvhSphere = 5,
  // Warp's MeshQueryPoint / MeshQueryRay: results whose fields kernels read
  // by name (members(), spelled without the m_ prefix of structs:
  // wp::mesh_query_point_t, wp::mesh_query_ray_t in mesh.h), and
  // MeshQueryAABB (a wp::bvh_query_t of the mesh's tree); float32.
  kMeshPoint = 6,
  kMeshRay = 7,
  kMeshAabb = 8,
  // Warp's _MeshQuerySphere (mesh_query_sphere: the faces within a radius,
  // tested exactly), a wp::bvh_query_t of the mesh's tree.
  kMeshSphere = 9,
  // Warp's erased parents: BvhQuery (a query of any BVH kind) and MeshQuery
  // (a mesh box or sphere query). The native query keeps its kind at run
  // time (bvh_query_t::kind), so the erased type is the same wp::bvh_query_t
  // and its _next dispatches on that kind. A variable assigned queries of
  // two kinds of one family, and a function parameter annotated with the
  // parent, take the erased type (QueryAccepts).
  kBvhAny = 10,
  kMeshAny = 11,
  // Warp's Mesh value of mesh_get(id): fields points, velocities (1-d
  // vec3f arrays) and indices (1-d int32 array), the mesh's own arrays
  // (wp::mesh_view_t in mesh.h).
  kMesh = 12,
};

class Type;
using TypeRef = const Type*;

struct Member {
  std::string name;
  TypeRef type = nullptr;
  uint64_t offset = 0;
};

// Limits on what a client may declare (checked by TypeTable's Checked* makers).
constexpr int kMaxVectorLength = 1024;  // as the elements of a matrix
constexpr int kMaxMatrixDim = 64;
constexpr int kMaxMatrixElements = 1024;
constexpr int kMaxArrayDims = 4;
constexpr int kMaxStructMembers = 256;
constexpr int kMaxTupleElements = 16;
constexpr uint64_t kMaxStructSize = 1 << 20;
constexpr size_t kArrayDescriptorSize = 64;
// Warp's indexedarray_t: the data array's descriptor, int32* indices[4],
// int32 shape[4] (docs/launch_abi.md).
constexpr size_t kIndexedArrayDescriptorSize = 112;

class Type {
 public:
  Kind kind() const { return kind_; }
  bool is_void() const { return kind_ == Kind::kVoid; }
  bool is_scalar() const { return kind_ == Kind::kScalar; }
  bool is_vector() const { return kind_ == Kind::kVector; }
  bool is_matrix() const { return kind_ == Kind::kMatrix; }
  bool is_quat() const { return kind_ == Kind::kQuat; }
  bool is_transform() const { return kind_ == Kind::kTransform; }
  bool is_struct() const { return kind_ == Kind::kStruct; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_query() const { return kind_ == Kind::kQuery; }
  // A query's kind (is_query() only); its coordinate precision is scalar().
  QueryKind query_kind() const { return static_cast<QueryKind>(a_); }
  bool is_scalar_of(ScalarKind s) const { return is_scalar() && scalar_ == s; }
  bool is_int() const { return is_scalar() && IsInteger(scalar_); }
  bool is_float() const { return is_scalar() && IsFloat(scalar_); }
  // A value a kernel variable can hold by value: not void (arrays are values too).
  bool is_value() const { return kind_ != Kind::kVoid; }
  // Scalars, vectors, matrices, quaternions and transforms: fixed-size
  // aggregates of one scalar dtype.
  bool has_dtype() const {
    return kind_ == Kind::kScalar || kind_ == Kind::kVector || kind_ == Kind::kMatrix ||
           kind_ == Kind::kQuat || kind_ == Kind::kTransform;
  }

  // The scalar dtype of a has_dtype() type; of an array, its element's (if any).
  ScalarKind scalar() const { return scalar_; }
  // Vector length; 4 for a quaternion, 7 for a transform.
  int length() const { return a_; }
  int rows() const { return a_; }
  int cols() const { return b_; }
  // Arrays.
  int ndim() const { return a_; }
  // An array type of Warp's indexedarray: its elements picked through int32
  // index arrays (an array in every other respect, but for slicing).
  bool is_indexed_array() const { return kind_ == Kind::kArray && b_ != 0; }
  TypeRef element() const { return element_; }
  // Structs.
  const std::string& struct_name() const { return name_; }
  const std::string& display_name() const { return display_; }
  const std::vector<Member>& members() const { return members_; }
  const Member* FindMember(std::string_view name) const;
  bool contains_struct() const { return contains_struct_; }
  // Tuples (values of kernels and functions only: never arguments, array
  // dtypes or struct members).
  const std::vector<TypeRef>& elements() const { return elements_; }
  // A struct with an array member at any depth (its bytes hold array
  // descriptors, which clients must not supply raw).
  bool holds_array() const { return holds_array_; }

  uint64_t size() const { return size_; }
  uint32_t align() const { return align_; }
  // Warp's spelling: "float32", "vec3f", "vector(length=5, dtype=float64)",
  // "mat33f", "quatf", "transformf", "Particle", "array(dtype=vec3f, ndim=2)",
  // "tuple(float32, vec3f)".
  const std::string& ToString() const { return text_; }
  // The C++ spelling in generated code: "wp::vec_t<3, wp::float32>".
  const std::string& CppName() const { return cpp_; }

  // Made only by TypeTable (the fields are private to it).
  Type() = default;

 private:
  friend class TypeTable;

  Kind kind_ = Kind::kVoid;
  ScalarKind scalar_ = ScalarKind::kFloat32;
  int a_ = 0;
  int b_ = 0;
  TypeRef element_ = nullptr;
  bool contains_struct_ = false;
  bool holds_array_ = false;
  uint64_t size_ = 0;
  uint32_t align_ = 1;
  std::string name_, display_;
  std::vector<Member> members_;
  std::vector<TypeRef> elements_;
  std::string text_, cpp_;
};

// True when a and b are the same type, also across tables (structs compare
// by name and members).
bool SameType(TypeRef a, TypeRef b);

class TypeTable {
 public:
  // The process-wide table of all struct-free types.
  static TypeTable& Global();

  // A local table for struct types; struct-free types forward to Global().
  TypeTable() = default;
  TypeTable(const TypeTable&) = delete;
  TypeTable& operator=(const TypeTable&) = delete;

  // Preconditions (callers validate client input first, or use the Checked
  // forms): 0 <= length <= kMaxVectorLength; matrix dims within the limits
  // (0 allowed: Warp's empty slices v[4:], m[9:] have such types);
  // 1 <= ndim <= kMaxArrayDims; an array element is not void or an array.
  TypeRef Void();
  TypeRef Scalar(ScalarKind s);
  TypeRef Vector(int length, ScalarKind s);
  TypeRef Matrix(int rows, int cols, ScalarKind s);
  TypeRef Quat(ScalarKind s);
  TypeRef Transform(ScalarKind s);
  TypeRef Array(TypeRef element, int ndim, bool indexed = false);
  // Warp's HashGridQuery of precision s (float16, float32 or float64):
  // "HashGridQuery" whatever the precision, as Warp spells it.
  TypeRef HashGridQuery(ScalarKind s) { return Query(QueryKind::kHashGrid, s); }
  // The query type of kind k and precision s (BVH queries: float32).
  TypeRef Query(QueryKind k, ScalarKind s);

  // The same, with the limits checked: INVALID_ARGUMENT naming the problem.
  absl::StatusOr<TypeRef> CheckedVector(int64_t length, ScalarKind s);
  absl::StatusOr<TypeRef> CheckedMatrix(int64_t rows, int64_t cols, ScalarKind s);
  absl::StatusOr<TypeRef> CheckedQuat(ScalarKind s);
  absl::StatusOr<TypeRef> CheckedTransform(ScalarKind s);
  absl::StatusOr<TypeRef> CheckedArray(TypeRef element, int64_t ndim, bool indexed = false);
  // A struct: `name` must be a C identifier; member names C identifiers,
  // unique; member types values (not void). Interned by (name, members): the
  // same definition twice gives the same TypeRef; the same name with other
  // members is INVALID_ARGUMENT.
  absl::StatusOr<TypeRef> Struct(std::string name, std::string display_name,
                                 std::vector<std::pair<std::string, TypeRef>> members);
  // A tuple of 1..kMaxTupleElements value types (not void, not arrays).
  // Local tables only: which tuples exist is up to clients, so they must not
  // accumulate in the table every tenant shares. INVALID_ARGUMENT when the
  // limits are not met, INTERNAL in the global table.
  absl::StatusOr<TypeRef> Tuple(std::vector<TypeRef> elements);

  // Number of types interned here (tests).
  size_t size() const;
  // What the table's types occupy (objects, names, member lists, the
  // index), for charging a client that made them.
  uint64_t MemoryBytes() const;

 private:
  struct Key {
    Kind kind;
    ScalarKind scalar;
    int a, b;
    TypeRef element;
    std::string name;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.kind, k.scalar, k.a, k.b, k.element, k.name);
    }
    friend bool operator==(const Key& x, const Key& y) {
      return x.kind == y.kind && x.scalar == y.scalar && x.a == y.a && x.b == y.b && x.element == y.element &&
             x.name == y.name;
    }
  };
  TypeRef Intern(Key key, std::unique_ptr<Type> (*make)(const Key&));
  bool is_global() const { return this == &Global(); }

  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, std::unique_ptr<Type>> types_ ABSL_GUARDED_BY(mu_);
};

// Shorthands for the global table.
inline TypeRef Void() { return TypeTable::Global().Void(); }
inline TypeRef Scalar(ScalarKind s) { return TypeTable::Global().Scalar(s); }
inline TypeRef Vector(int n, ScalarKind s) { return TypeTable::Global().Vector(n, s); }
inline TypeRef Matrix(int r, int c, ScalarKind s) { return TypeTable::Global().Matrix(r, c, s); }
inline TypeRef Quat(ScalarKind s) { return TypeTable::Global().Quat(s); }
inline TypeRef Transform(ScalarKind s) { return TypeTable::Global().Transform(s); }
inline TypeRef HashGridQuery(ScalarKind s) { return TypeTable::Global().HashGridQuery(s); }
inline TypeRef Query(QueryKind k, ScalarKind s) { return TypeTable::Global().Query(k, s); }

// Whether a value of query type `from` may be stored in (or passed as) a
// `to`: the same type, or a query of `to`'s family when `to` is erased.
bool QueryAccepts(TypeRef to, TypeRef from);
// The erased parent of `t`'s family (kBvhAny, kMeshAny), or null when `t`
// is no query of a family with one.
TypeRef ErasedQuery(TypeRef t);

// Parses Warp's names of the named value types: "float32", "int", "vec3",
// "vec3d", "mat33f", "mat22h", "quatf", "transformd", "spatial_vectorf",
// "spatial_matrixd" (no suffix: float32). Unknown: null.
TypeRef TypeFromWarpName(std::string_view name);

}  // namespace warpd::types
