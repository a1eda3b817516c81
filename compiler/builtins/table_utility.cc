// The builtin table: utilities (tid, atomics, print, select, lerp, ...) and
// the value constructors.
#include <set>
#include <string_view>

#include "compiler/builtins/hooks.h"
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddUtility(Builder& b) {
  b.Group("Utility");
  b.Hook("tid", HookTid, "", "int32 | (int32, ...)").NoDiff().Form(Form::kTid);
  b.Hook("range", HookRange, "start: Int, stop: Int, step: Int").NoDiff().Form(Form::kRange);
  // Warp's hidden reversed(range(...)): the same values, last first.
  b.Hook("reversed", HookRange, "range: range(...)").NoDiff().Form(Form::kRange);
  // Warp 1.19 differentiates add/sub/min/max; the bitwise ones and exch
  // (like cas) have no adjoint.
  for (const char* op : {"atomic_add", "atomic_sub", "atomic_min", "atomic_max"})
    b.Hook(op, HookAtomic, "arr: array(V), i: Int, ..., value: V", "V")
        .Diff().Cpp(std::string("wp::") + op).Form(Form::kAtomic);
  for (const char* op : {"atomic_and", "atomic_or", "atomic_xor", "atomic_exch"})
    b.Hook(op, HookAtomic, "arr: array(V), i: Int, ..., value: V", "V")
        .NoDiff()
        .Cpp(std::string("wp::") + op)
        .Form(Form::kAtomic);
  b.Hook("atomic_cas", HookAtomic, "arr: array(V), i: Int, ..., compare: V, value: V", "V")
      .Cpp("wp::atomic_cas").Form(Form::kAtomic).NoDiff();
  b.Hook("print", HookPrint, "value: Any", "").Diff().Form(Form::kPrint).Variadic();
  b.Hook("printf", HookPrintf, "fmt: str, *args: Scalar", "").Form(Form::kPrintf).NoDiff().Variadic();
  b.Hook("len", HookLen, "a: vector | matrix | quat | transform | array", "int32").Form(Form::kLen).NoDiff();
  b.Hook("cast", HookCast, "a: Any, dtype: Any", "dtype").NoDiff();
  // Warp 1.19 differentiates where but not the deprecated select.
  for (const char* f : {"select", "where"}) {
    bool where = std::string_view(f) == "where";
    const char* params = where ? "cond: T, value_if_true: V, value_if_false: V"
                               : "cond: T, value_if_false: V, value_if_true: V";
    auto value = b.Add(f, params, "V", "T: Cond").Cpp(where ? "(($0) ? ($1) : ($2))" : "(($0) ? ($2) : ($1))");
    const char* arr = where ? "arr: array(W, 1), value_if_true: V, value_if_false: V"
                            : "arr: array(W, 1), value_if_false: V, value_if_true: V";
    auto array = b.Add(f, arr, "V").Cpp(where ? "((($0).data) ? ($1) : ($2))" : "((($0).data) ? ($2) : ($1))");
    if (where) {
      value.Diff().Adj("wp::adj_where");
      array.Diff().Adj("wp::adj_where");
    } else {
      value.NoDiff();
      array.NoDiff();
    }
  }
  b.Add("lerp", "a: T, b: T, t: T", "T", "T: Float").Diff();
  b.Add("lerp", "a: vec(N, T), b: vec(N, T), t: T", "vec(N, T)", "T: Float").Diff();
  b.Add("lerp", "a: mat(R, C, T), b: mat(R, C, T), t: T", "mat(R, C, T)", "T: Float")
      .Diff().Header("warpd/native/mat.h");
  b.Add("lerp", "a: quat(T), b: quat(T), t: T", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("lerp", "a: transform(T), b: transform(T), t: T", "transform(T)", "T: Float").Diff()
      .Header("warpd/native/transform.h");
  b.Add("smoothstep", "a: T, b: T, x: T", "T", "T: Float").Diff();
  b.Add("expect_near", "a: T, b: T, tolerance: T = 1.0e-6", "", "T: Float").NoDiff().Form(Form::kPrint);
  b.Add("expect_near", "a: vec(N, T), b: vec(N, T), tolerance: T = 1.0e-6", "", "T: Float").NoDiff().Form(Form::kPrint);
  b.Add("expect_near", "a: quat(T), b: quat(T), tolerance: T = 1.0e-6", "", "T: Float")
      .NoDiff()
      .Form(Form::kPrint)
      .Header("warpd/native/quat.h");
  b.Add("expect_near", "a: mat(R, C, T), b: mat(R, C, T), tolerance: T = 1.0e-6", "", "T: Float")
      .NoDiff()
      .Form(Form::kPrint)
      .Header("warpd/native/mat.h");
  // Not in Warp's documented list (hidden there), but used by Warp's own tests and programs:
  // print an error when `a` and `b` differ (expect_eq) or are equal (expect_neq).
  // Vectors and matrices (of Scalar or of bool, as Warp's four overloads)
  // that differ in length, shape or dtype fail with Warp's sametypes error.
  static constexpr std::string_view kDifferent = "Can't test equality for objects with different types";
  for (const char* f : {"expect_eq", "expect_neq"}) {
    b.Add(f, "a: T, b: T", "", "T: Cond").NoDiff().Form(Form::kPrint);
    b.Add(f, "a: T, b: T", "", "T: Float").NoDiff().Form(Form::kPrint);
    b.Add(f, "a: vec(N, T), b: vec(N, T)", "").NoDiff().Form(Form::kPrint).SameTypes(kDifferent);
    b.Add(f, "a: mat(R, C, T), b: mat(R, C, T)", "")
        .NoDiff()
        .Form(Form::kPrint)
        .Header("warpd/native/mat.h")
        .SameTypes(kDifferent);
    b.Add(f, "a: vec(N, bool), b: vec(N, bool)", "").NoDiff().Form(Form::kPrint).SameTypes(kDifferent);
    b.Add(f, "a: mat(R, C, bool), b: mat(R, C, bool)", "")
        .NoDiff()
        .Form(Form::kPrint)
        .Header("warpd/native/mat.h")
        .SameTypes(kDifferent);
    b.Add(f, "a: quat(T), b: quat(T)", "", "T: Float").NoDiff().Form(Form::kPrint).Header("warpd/native/quat.h");
    b.Add(f, "a: transform(T), b: transform(T)", "", "T: Float")
        .NoDiff()
        .Form(Form::kPrint)
        .Header("warpd/native/transform.h");
  }
  b.Add("block_dim", "", "int32").NoDiff().Cpp("wp::block_dim()");
  b.Add("breakpoint", "", "").NoDiff().Cpp("((void)0)");
  b.Hook("array", HookUnsupported, "ptr: uint64, shape: tuple, dtype: Any").NoDiff();
  b.Hook("zeros", HookZeros, "shape: int | tuple, dtype: Any", "array(dtype, len(shape))")
      .NoDiff()
      .Form(Form::kLocalArray);

  b.Group("Other");
  b.Add("lower_bound", "arr: array(T, 1), value: T", "int32").NoDiff().Cpp("wp::lower_bound(ctx, $0, $1)");
  b.Add("lower_bound", "arr: array(T, 1), arr_begin: int32, arr_end: int32, value: T", "int32")
      .NoDiff().Cpp("wp::lower_bound(ctx, $0, $1, $2, $3)");

  b.Group("Code Generation");
  b.Hook("static", HookUnsupported, "expr: Any", "Any").NoDiff().Form(Form::kClient);

  // Constructors: every value type's name, and the generic ones.
  b.Group("Constructors");
  static const std::set<std::string_view> kIntegerOrBoolCasts = {
      "bool", "int", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"};
  for (std::string_view name : ConstructorNames()) {
    std::string_view header;
    if (name.substr(0, 3) == "mat" || name.substr(0, 14) == "spatial_matrix" || name == "matrix") header = "warpd/native/mat.h";
    if (name.substr(0, 4) == "quat") header = "warpd/native/quat.h";
    if (name.substr(0, 9) == "transform") header = "warpd/native/transform.h";
    // Warp 1.19: casts to integers and bool are not differentiable, casts to
    // floats and the vector/matrix/quaternion/transformation constructors are.
    auto e = b.Hook(name, HookConstruct, "*args, **kwargs").Header(header).Variadic();
    if (kIntegerOrBoolCasts.count(name))
      e.NoDiff();
    else
      e.Diff();
  }
  // warpd's own (not a Warp name): the client spells `S()` of a @wp.struct so.
  b.Hook("struct", HookStruct, "dtype: a @wp.struct type", "dtype").NoDiff();
  // type(x)(args), a.dtype(args): the client's spelling of Warp's generic
  // constructors, differentiable as Warp's vector/matrix/float constructors
  // are (an integer result simply carries no gradient).
  b.Hook("construct_like", HookConstructLike, "x: Any, *args, element: bool", "type(x)").Diff().Variadic();
  b.Group("Vector Math", "warpd/native/mat.h");
  b.Hook("identity", HookConstruct, "n: int32, dtype: Scalar", "mat(n, n, dtype)").NoDiff();
  b.Hook("matrix_from_rows", HookConstruct, "*args: vec(N, T)", "mat(len(args), N, T)").Diff().Variadic();
  b.Hook("matrix_from_cols", HookConstruct, "*args: vec(N, T)", "mat(N, len(args), T)").Diff().Variadic();
  b.Group("Quaternion Math", "warpd/native/quat.h");
  b.Hook("quat_identity", HookConstruct, "dtype: Float", "quat(dtype)").NoDiff();
  b.Group("Transformations", "warpd/native/transform.h");
  b.Hook("transform_identity", HookConstruct, "dtype: Float", "transform(dtype)").NoDiff();
}

}  // namespace warpd::builtins::internal
