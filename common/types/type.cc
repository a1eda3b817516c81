#include "common/str_cat.h"
#include "common/types/type.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "absl/strings/str_cat.h"

namespace warpd::types {
namespace {

struct ScalarRow {
  ScalarKind kind;
  std::string_view name;
  std::string_view cpp;
  std::string_view suffix;
  size_t size;
};

constexpr std::array<ScalarRow, kNumScalarKinds> kScalars = {{
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
    {ScalarKind::kBFloat16, "bfloat16", "wp::bfloat16", "bf", 2},
}};

const ScalarRow& Row(ScalarKind s) { return kScalars[static_cast<size_t>(s)]; }

bool IsIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

uint64_t RoundUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Warp's short names for the sizes it predefines ("vec3f", "mat33d").
std::string ValueName(Kind k, ScalarKind s, int a, int b) {
  std::string dtype(ScalarName(s));
  std::string suffix(Row(s).suffix);
  switch (k) {
    case Kind::kVector:
      if (a >= 2 && a <= 4 && s != ScalarKind::kBool) return Cat("vec", a, suffix);
      return Cat("vector(length=", a, ", dtype=", dtype, ")");
    case Kind::kMatrix:
      if (a == b && a >= 2 && a <= 4 && s != ScalarKind::kBool) return Cat("mat", a, b, suffix);
      return Cat("matrix(shape=(", a, ", ", b, "), dtype=", dtype, ")");
    case Kind::kQuat:
      return IsFloat(s) ? Cat("quat", suffix) : Cat("quaternion(dtype=", dtype, ")");
    case Kind::kTransform:
      return IsFloat(s) ? Cat("transform", suffix) : Cat("transformation(dtype=", dtype, ")");
    default:
      return dtype;
  }
}

std::unique_ptr<Type> NewType() { return std::unique_ptr<Type>(new Type()); }

}  // namespace

std::string_view ScalarName(ScalarKind s) { return Row(s).name; }
std::string_view ScalarCppName(ScalarKind s) { return Row(s).cpp; }
std::string_view ScalarSuffix(ScalarKind s) { return Row(s).suffix; }
size_t ScalarSize(ScalarKind s) { return Row(s).size; }

std::optional<ScalarKind> ScalarFromName(std::string_view name) {
  for (const auto& row : kScalars)
    if (row.name == name) return row.kind;
  return std::nullopt;
}

bool IsFloat(ScalarKind s) {
  return s == ScalarKind::kFloat16 || s == ScalarKind::kBFloat16 || s == ScalarKind::kFloat32 ||
         s == ScalarKind::kFloat64;
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

const Member* Type::FindMember(std::string_view name) const {
  for (const Member& m : members_)
    if (m.name == name) return &m;
  return nullptr;
}

bool SameType(TypeRef a, TypeRef b) {
  if (a == b) return true;
  if (!a || !b || a->kind() != b->kind()) return false;
  switch (a->kind()) {
    case Kind::kArray:
      return a->ndim() == b->ndim() && a->is_indexed_array() == b->is_indexed_array() &&
             SameType(a->element(), b->element());
    case Kind::kStruct: {
      if (a->struct_name() != b->struct_name() || a->members().size() != b->members().size()) return false;
      for (size_t i = 0; i < a->members().size(); ++i) {
        const Member& x = a->members()[i];
        const Member& y = b->members()[i];
        if (x.name != y.name || !SameType(x.type, y.type)) return false;
      }
      return true;
    }
    case Kind::kTuple: {
      if (a->elements().size() != b->elements().size()) return false;
      for (size_t i = 0; i < a->elements().size(); ++i)
        if (!SameType(a->elements()[i], b->elements()[i])) return false;
      return true;
    }
    default:
      // Struct-free types are interned globally: distinct pointers differ.
      return false;
  }
}

TypeTable& TypeTable::Global() {
  static TypeTable* table = new TypeTable();
  return *table;
}

size_t TypeTable::size() const {
  absl::MutexLock lock(&mu_);
  return types_.size();
}

uint64_t TypeTable::MemoryBytes() const {
  absl::MutexLock lock(&mu_);
  uint64_t bytes = sizeof(*this);
  for (const auto& [key, t] : types_) {
    // The index slot and its key, then the type itself.
    bytes += sizeof(key) + sizeof(t) + 16 + key.name.capacity();
    bytes += sizeof(Type) + t->name_.capacity() + t->display_.capacity() + t->text_.capacity() + t->cpp_.capacity();
    bytes += t->members_.capacity() * sizeof(Member) + t->elements_.capacity() * sizeof(TypeRef);
    for (const Member& m : t->members_) bytes += m.name.capacity();
  }
  return bytes;
}

TypeRef TypeTable::Intern(Key key, std::unique_ptr<Type> (*make)(const Key&)) {
  absl::MutexLock lock(&mu_);
  auto it = types_.find(key);
  if (it != types_.end()) return it->second.get();
  std::unique_ptr<Type> t = make(key);
  TypeRef out = t.get();
  types_.emplace(std::move(key), std::move(t));
  return out;
}

TypeRef TypeTable::Void() {
  if (!is_global()) return Global().Void();
  return Intern(Key{Kind::kVoid, ScalarKind::kBool, 0, 0, nullptr, ""}, [](const Key&) {
    auto t = NewType();
    t->text_ = "None";
    t->cpp_ = "void";
    return t;
  });
}

TypeRef TypeTable::Scalar(ScalarKind s) {
  if (!is_global()) return Global().Scalar(s);
  return Intern(Key{Kind::kScalar, s, 0, 0, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kScalar;
    t->scalar_ = k.scalar;
    t->size_ = ScalarSize(k.scalar);
    t->align_ = static_cast<uint32_t>(t->size_);
    t->text_ = std::string(ScalarName(k.scalar));
    t->cpp_ = std::string(ScalarCppName(k.scalar));
    return t;
  });
}

TypeRef TypeTable::Vector(int length, ScalarKind s) {
  assert(length >= 0 && length <= kMaxVectorLength);
  if (!is_global()) return Global().Vector(length, s);
  return Intern(Key{Kind::kVector, s, length, 0, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kVector;
    t->scalar_ = k.scalar;
    t->a_ = k.a;
    // A zero-length vector still holds one (unused) element, as in native vec_t.
    t->size_ = ScalarSize(k.scalar) * std::max(k.a, 1);
    t->align_ = static_cast<uint32_t>(ScalarSize(k.scalar));
    t->text_ = ValueName(Kind::kVector, k.scalar, k.a, 0);
    t->cpp_ = Cat("wp::vec_t<", k.a, ", ", ScalarCppName(k.scalar), ">");
    return t;
  });
}

TypeRef TypeTable::Matrix(int rows, int cols, ScalarKind s) {
  assert(rows >= 0 && cols >= 0 && rows <= kMaxMatrixDim && cols <= kMaxMatrixDim &&
         rows * cols <= kMaxMatrixElements);
  if (!is_global()) return Global().Matrix(rows, cols, s);
  return Intern(Key{Kind::kMatrix, s, rows, cols, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kMatrix;
    t->scalar_ = k.scalar;
    t->a_ = k.a;
    t->b_ = k.b;
    t->size_ = ScalarSize(k.scalar) * std::max(k.a, 1) * std::max(k.b, 1);  // as native mat_t
    t->align_ = static_cast<uint32_t>(ScalarSize(k.scalar));
    t->text_ = ValueName(Kind::kMatrix, k.scalar, k.a, k.b);
    t->cpp_ = Cat("wp::mat_t<", k.a, ", ", k.b, ", ", ScalarCppName(k.scalar), ">");
    return t;
  });
}

TypeRef TypeTable::Quat(ScalarKind s) {
  if (!is_global()) return Global().Quat(s);
  return Intern(Key{Kind::kQuat, s, 4, 0, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kQuat;
    t->scalar_ = k.scalar;
    t->a_ = 4;
    t->size_ = ScalarSize(k.scalar) * 4;
    t->align_ = static_cast<uint32_t>(ScalarSize(k.scalar));
    t->text_ = ValueName(Kind::kQuat, k.scalar, 4, 0);
    t->cpp_ = Cat("wp::quat_t<", ScalarCppName(k.scalar), ">");
    return t;
  });
}

namespace {
// The field types of the mesh query results, made before Query's Intern
// (which holds the table's lock, so its maker cannot intern them).
struct QueryFieldTypes {
  TypeRef f32, i32, b, v3, v3_array, i32_array;
};
thread_local QueryFieldTypes query_fields;
}  // namespace

TypeRef TypeTable::Query(QueryKind kind, ScalarKind s) {
  if (!is_global()) return Global().Query(kind, s);
  if (kind == QueryKind::kMeshPoint || kind == QueryKind::kMeshRay || kind == QueryKind::kMesh) {
    const TypeRef v3 = Vector(3, ScalarKind::kFloat32), i32 = Scalar(ScalarKind::kInt32);
    query_fields = {Scalar(ScalarKind::kFloat32), i32, Scalar(ScalarKind::kBool), v3, Array(v3, 1), Array(i32, 1)};
  }
  return Intern(Key{Kind::kQuery, s, static_cast<int>(kind), 0, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kQuery;
    t->scalar_ = k.scalar;
    t->a_ = k.a;
    // Sizes of the native structs (not ABI: queries never cross the launch
    // boundary; static_asserts in the native headers keep them equal).
    t->align_ = 8;
    const QueryKind kind = static_cast<QueryKind>(k.a);
    if (kind == QueryKind::kHashGrid) {
      t->size_ = 88;  // wp::hash_grid_query_t<T>: two pointers and 18 int32
      t->text_ = "HashGridQuery";
      t->cpp_ = Cat("wp::hash_grid_query_t<", ScalarCppName(k.scalar), ">");
    } else if (kind == QueryKind::kMeshPoint || kind == QueryKind::kMeshRay) {
      // Fields at their native offsets (bool, then 4-byte fields).
      const bool ray = kind == QueryKind::kMeshRay;
      t->align_ = 4;
      t->size_ = ray ? 36 : 20;  // wp::mesh_query_ray_t / wp::mesh_query_point_t
      t->text_ = ray ? "MeshQueryRay" : "MeshQueryPoint";
      t->cpp_ = ray ? "wp::mesh_query_ray_t" : "wp::mesh_query_point_t";
      const TypeRef f32 = query_fields.f32, i32 = query_fields.i32;
      t->members_.push_back(Member{"result", query_fields.b, 0});
      t->members_.push_back(Member{"sign", f32, 4});
      t->members_.push_back(Member{"face", i32, 8});
      if (ray) {
        t->members_.push_back(Member{"t", f32, 12});
        t->members_.push_back(Member{"u", f32, 16});
        t->members_.push_back(Member{"v", f32, 20});
        t->members_.push_back(Member{"normal", query_fields.v3, 24});
      } else {
        t->members_.push_back(Member{"u", f32, 12});
        t->members_.push_back(Member{"v", f32, 16});
      }
    } else if (kind == QueryKind::kMesh) {
      t->size_ = 3 * kArrayDescriptorSize;  // wp::mesh_view_t: three array descriptors
      t->text_ = "Mesh";
      t->cpp_ = "wp::mesh_view_t";
      t->members_.push_back(Member{"points", query_fields.v3_array, 0});
      t->members_.push_back(Member{"velocities", query_fields.v3_array, kArrayDescriptorSize});
      t->members_.push_back(Member{"indices", query_fields.i32_array, 2 * kArrayDescriptorSize});
    } else if (kind == QueryKind::kMeshAabb || kind == QueryKind::kMeshSphere || kind == QueryKind::kMeshAny) {
      t->size_ = 344;  // wp::bvh_query_t
      t->text_ = kind == QueryKind::kMeshAabb ? "MeshQueryAABB"
                 : kind == QueryKind::kMeshSphere ? "_MeshQuerySphere"
                                                  : "MeshQuery";
      t->cpp_ = "wp::bvh_query_t";
    } else {
      // Warp's names: _BvhQueryAabb, ... and the erased BvhQuery.
      t->size_ = 344;  // wp::bvh_query_t
      t->text_ = kind == QueryKind::kBvhAabb      ? "_BvhQueryAabb"
                 : kind == QueryKind::kBvhRay     ? "_BvhQueryRay"
                 : kind == QueryKind::kBvhCapsule ? "_BvhQueryCapsule"
                 : kind == QueryKind::kBvhSphere  ? "_BvhQuerySphere"
                                                  : "BvhQuery";
      t->cpp_ = "wp::bvh_query_t";
    }
    return t;
  });
}

namespace {
// The erased kind of a query kind's family, or 0 for none.
QueryKind ErasedKind(QueryKind k) {
  switch (k) {
    case QueryKind::kBvhAabb:
    case QueryKind::kBvhRay:
    case QueryKind::kBvhCapsule:
    case QueryKind::kBvhSphere:
    case QueryKind::kBvhAny: return QueryKind::kBvhAny;
    case QueryKind::kMeshAabb:
    case QueryKind::kMeshSphere:
    case QueryKind::kMeshAny: return QueryKind::kMeshAny;
    default: return static_cast<QueryKind>(0);
  }
}
}  // namespace

TypeRef ErasedQuery(TypeRef t) {
  if (t == nullptr || !t->is_query()) return nullptr;
  const QueryKind e = ErasedKind(t->query_kind());
  if (e == static_cast<QueryKind>(0)) return nullptr;
  return Query(e, ScalarKind::kFloat32);
}

bool QueryAccepts(TypeRef to, TypeRef from) {
  if (SameType(to, from)) return true;
  if (to == nullptr || from == nullptr || !to->is_query() || !from->is_query()) return false;
  const QueryKind e = ErasedKind(from->query_kind());
  return e != static_cast<QueryKind>(0) && to->query_kind() == e;
}

TypeRef TypeTable::Transform(ScalarKind s) {
  if (!is_global()) return Global().Transform(s);
  return Intern(Key{Kind::kTransform, s, 7, 0, nullptr, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kTransform;
    t->scalar_ = k.scalar;
    t->a_ = 7;
    t->size_ = ScalarSize(k.scalar) * 7;
    t->align_ = static_cast<uint32_t>(ScalarSize(k.scalar));
    t->text_ = ValueName(Kind::kTransform, k.scalar, 7, 0);
    t->cpp_ = Cat("wp::transform_t<", ScalarCppName(k.scalar), ">");
    return t;
  });
}

TypeRef TypeTable::Array(TypeRef element, int ndim, bool indexed) {
  assert(element && !element->is_void() && !element->is_array() && ndim >= 1 && ndim <= kMaxArrayDims);
  if (!element->contains_struct() && !is_global()) return Global().Array(element, ndim, indexed);
  assert(!(element->contains_struct() && is_global()));
  return Intern(Key{Kind::kArray, element->scalar(), ndim, indexed ? 1 : 0, element, ""}, [](const Key& k) {
    auto t = NewType();
    t->kind_ = Kind::kArray;
    t->scalar_ = k.element->scalar();
    t->a_ = k.a;
    t->b_ = k.b;
    t->element_ = k.element;
    t->contains_struct_ = k.element->contains_struct();
    t->size_ = k.b ? kIndexedArrayDescriptorSize : kArrayDescriptorSize;
    t->align_ = 8;
    t->text_ = Cat(k.b ? "indexedarray" : "array", "(dtype=", k.element->ToString(), ", ndim=", k.a, ")");
    t->cpp_ = Cat(k.b ? "wp::indexedarray_t<" : "wp::array_t<", k.element->CppName(), ">");
    return t;
  });
}

absl::StatusOr<TypeRef> TypeTable::CheckedVector(int64_t length, ScalarKind s) {
  if (length < 0 || length > kMaxVectorLength)
    return absl::InvalidArgumentError(
        Cat("vector length ", length, " is out of range [0, ", kMaxVectorLength, "]"));
  return Vector(static_cast<int>(length), s);
}

absl::StatusOr<TypeRef> TypeTable::CheckedMatrix(int64_t rows, int64_t cols, ScalarKind s) {
  if (rows < 0 || cols < 0 || rows > kMaxMatrixDim || cols > kMaxMatrixDim || rows * cols > kMaxMatrixElements)
    return absl::InvalidArgumentError(Cat("matrix shape (", rows, ", ", cols,
                                                   ") is out of range (each dimension 0..", kMaxMatrixDim,
                                                   ", at most ", kMaxMatrixElements, " elements)"));
  return Matrix(static_cast<int>(rows), static_cast<int>(cols), s);
}

absl::StatusOr<TypeRef> TypeTable::CheckedQuat(ScalarKind s) {
  if (!IsFloat(s))
    return absl::InvalidArgumentError(Cat("quaternions need a float dtype, not ", ScalarName(s)));
  return Quat(s);
}

absl::StatusOr<TypeRef> TypeTable::CheckedTransform(ScalarKind s) {
  if (!IsFloat(s))
    return absl::InvalidArgumentError(Cat("transformations need a float dtype, not ", ScalarName(s)));
  return Transform(s);
}

absl::StatusOr<TypeRef> TypeTable::CheckedArray(TypeRef element, int64_t ndim, bool indexed) {
  if (!element || element->is_void() || element->is_array())
    return absl::InvalidArgumentError("an array's dtype must be a value type (not an array)");
  if (ndim < 1 || ndim > kMaxArrayDims)
    return absl::InvalidArgumentError(Cat("array ndim ", ndim, " is out of range [1, ", kMaxArrayDims, "]"));
  if (element->contains_struct() && is_global())
    return absl::InternalError("arrays of structs belong in a local type table");
  return Array(element, static_cast<int>(ndim), indexed);
}

absl::StatusOr<TypeRef> TypeTable::Struct(std::string name, std::string display_name,
                                          std::vector<std::pair<std::string, TypeRef>> members) {
  if (is_global()) return absl::InternalError("structs belong in a local type table");
  if (!IsIdentifier(name)) return absl::InvalidArgumentError("a struct name must be a C identifier");
  if (members.size() > kMaxStructMembers)
    return absl::InvalidArgumentError(
        Cat("struct ", display_name, " has more than ", kMaxStructMembers, " members"));
  std::vector<Member> laid;
  uint64_t offset = 0;
  uint32_t align = 1;
  for (auto& [mname, mtype] : members) {
    if (!IsIdentifier(mname))
      return absl::InvalidArgumentError(Cat("struct ", display_name, ": a member name must be a C identifier"));
    for (const Member& m : laid)
      if (m.name == mname)
        return absl::InvalidArgumentError(Cat("struct ", display_name, ": duplicate member '", mname, "'"));
    if (!mtype || mtype->is_void())
      return absl::InvalidArgumentError(Cat("struct ", display_name, ": member '", mname, "' has no type"));
    offset = RoundUp(offset, mtype->align());
    laid.push_back(Member{mname, mtype, offset});
    offset += mtype->size();
    align = std::max(align, mtype->align());
    if (offset > kMaxStructSize)
      return absl::InvalidArgumentError(
          Cat("struct ", display_name, " is larger than ", kMaxStructSize, " bytes"));
  }
  // Interned by name; a second definition under one name must be identical.
  std::string key_name = name;
  {
    absl::MutexLock lock(&mu_);
    auto it = types_.find(Key{Kind::kStruct, ScalarKind::kBool, 0, 0, nullptr, key_name});
    if (it != types_.end()) {
      const Type& old = *it->second;
      bool same = old.members_.size() == laid.size();
      for (size_t i = 0; same && i < laid.size(); ++i)
        same = old.members_[i].name == laid[i].name && SameType(old.members_[i].type, laid[i].type);
      if (!same)
        return absl::InvalidArgumentError(
            Cat("struct ", display_name, " is defined twice with different members"));
      return it->second.get();
    }
    auto t = NewType();
    t->kind_ = Kind::kStruct;
    t->contains_struct_ = true;
    for (const Member& m : laid) t->holds_array_ |= m.type->is_array() || m.type->holds_array();
    t->name_ = name;
    t->display_ = display_name.empty() ? name : display_name;
    t->members_ = std::move(laid);
    t->align_ = align;
    t->size_ = std::max<uint64_t>(RoundUp(offset, align), 1);  // an empty struct takes a byte, as in C++
    t->text_ = t->display_;
    t->cpp_ = "wps_" + name;
    TypeRef out = t.get();
    types_.emplace(Key{Kind::kStruct, ScalarKind::kBool, 0, 0, nullptr, key_name}, std::move(t));
    return out;
  }
}

absl::StatusOr<TypeRef> TypeTable::Tuple(std::vector<TypeRef> elements) {
  if (is_global()) return absl::InternalError("tuples belong in a local type table");
  if (elements.empty() || elements.size() > kMaxTupleElements)
    return absl::InvalidArgumentError(Cat("a tuple has 1 to ", kMaxTupleElements, " elements, not ", elements.size()));
  std::string key_name, text = "tuple(", cpp = "wp::tuple_t<";
  for (size_t i = 0; i < elements.size(); ++i) {
    TypeRef e = elements[i];
    if (!e || e->is_void() || e->is_array())
      return absl::InvalidArgumentError("tuple elements must be values (not arrays or nothing)");
    // Elements are interned (here or globally): their addresses identify them.
    CatAppend(&key_name, reinterpret_cast<uintptr_t>(e), ",");
    CatAppend(&text, i ? ", " : "", e->ToString());
    CatAppend(&cpp, i ? ", " : "", e->CppName());
  }
  absl::MutexLock lock(&mu_);
  Key key{Kind::kTuple, ScalarKind::kBool, static_cast<int>(elements.size()), 0, nullptr, key_name};
  auto it = types_.find(key);
  if (it != types_.end()) return it->second.get();
  auto t = NewType();
  t->kind_ = Kind::kTuple;
  t->a_ = static_cast<int>(elements.size());
  for (TypeRef e : elements) {
    t->contains_struct_ |= e->contains_struct();
    t->holds_array_ |= e->holds_array();
  }
  // wp::tuple_t<H, T...> is { H head; tuple_t<T...> tail; } and the empty
  // tuple_t<> takes one byte: lay it out from the back, as C++ does.
  uint64_t size = 1;
  uint32_t align = 1;
  for (size_t i = elements.size(); i-- > 0;) {
    TypeRef e = elements[i];
    const uint64_t tail_offset = RoundUp(e->size(), align);
    align = std::max(align, e->align());
    size = RoundUp(tail_offset + size, align);
  }
  t->size_ = size;
  t->align_ = align;
  t->elements_ = std::move(elements);
  t->text_ = text + ")";
  t->cpp_ = cpp + ">";
  TypeRef out = t.get();
  types_.emplace(std::move(key), std::move(t));
  return out;
}

TypeRef TypeFromWarpName(std::string_view name) {
  if (name == "int") return Scalar(ScalarKind::kInt32);
  if (name == "float") return Scalar(ScalarKind::kFloat32);
  if (auto s = ScalarFromName(name)) return Scalar(*s);
  if (name == "half") return Scalar(ScalarKind::kFloat16);
  auto suffix_kind = [](std::string_view suffix) -> std::optional<ScalarKind> {
    if (suffix.empty()) return ScalarKind::kFloat32;
    for (const auto& row : kScalars)
      if (row.kind != ScalarKind::kBool && row.suffix == suffix) return row.kind;
    return std::nullopt;
  };
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (starts("spatial_vector")) {
    auto s = suffix_kind(name.substr(14));
    return s && IsFloat(*s) ? Vector(6, *s) : nullptr;
  }
  if (starts("spatial_matrix")) {
    auto s = suffix_kind(name.substr(14));
    return s && IsFloat(*s) ? Matrix(6, 6, *s) : nullptr;
  }
  if (starts("transform")) {
    auto s = suffix_kind(name.substr(9));
    return s && IsFloat(*s) ? Transform(*s) : nullptr;
  }
  if (starts("quat")) {
    auto s = suffix_kind(name.substr(4));
    return s && IsFloat(*s) ? Quat(*s) : nullptr;
  }
  if (starts("vec") && name.size() >= 4 && name[3] >= '2' && name[3] <= '4') {
    auto s = suffix_kind(name.substr(4));
    return s ? Vector(name[3] - '0', *s) : nullptr;
  }
  if (starts("mat") && name.size() >= 5 && name[3] >= '2' && name[3] <= '4' && name[4] == name[3]) {
    auto s = suffix_kind(name.substr(5));
    return s ? Matrix(name[3] - '0', name[4] - '0', *s) : nullptr;
  }
  return nullptr;
}

}  // namespace warpd::types
