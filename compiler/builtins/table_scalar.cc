// The builtin table: operators, comparisons and scalar math.
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddOperators(Builder& b) {
  b.Group("Operators");
  for (const char* op : {"add", "sub"}) {
    b.Add(op, "a: T, b: T", "T").Diff();
    b.Add(op, "a: vec(N, T), b: vec(N, T)", "vec(N, T)").Diff();
    b.Add(op, "a: mat(R, C, T), b: mat(R, C, T)", "mat(R, C, T)").Diff().Header("warpd/native/mat.h");
    b.Add(op, "a: quat(T), b: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
    b.Add(op, "a: transform(T), b: transform(T)", "transform(T)", "T: Float").Diff().Header("warpd/native/transform.h");
  }
  b.Add("mul", "a: T, b: T", "T").Diff();
  b.Add("mul", "a: vec(N, T), b: T", "vec(N, T)").Diff();
  b.Add("mul", "a: T, b: vec(N, T)", "vec(N, T)").Diff();
  b.Add("mul", "a: quat(T), b: T", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("mul", "a: T, b: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("mul", "a: quat(T), b: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("mul", "a: T, b: mat(R, C, T)", "mat(R, C, T)").Diff().Header("warpd/native/mat.h");
  b.Add("mul", "a: mat(R, C, T), b: T", "mat(R, C, T)").Diff().Header("warpd/native/mat.h");
  b.Add("mul", "a: mat(R, C, T), b: vec(C, T)", "vec(R, T)").Diff().Header("warpd/native/mat.h");
  b.Add("mul", "a: vec(R, T), b: mat(R, C, T)", "vec(C, T)").Diff().Header("warpd/native/mat.h");
  b.Add("mul", "a: mat(R, K, T), b: mat(K, C, T)", "mat(R, C, T)").Diff().Header("warpd/native/mat.h");
  b.Add("mul", "a: transform(T), b: transform(T)", "transform(T)", "T: Float")
      .Diff().Header("warpd/native/transform.h");
  b.Add("mul", "a: T, b: transform(T)", "transform(T)", "T: Float").Diff().Header("warpd/native/transform.h");
  b.Add("mul", "a: transform(T), b: T", "transform(T)", "T: Float").Diff().Header("warpd/native/transform.h");
  for (const char* op : {"div", "div_approx"}) {
    const char* fam = std::string_view(op) == "div" ? "" : "T: Float";
    b.Add(op, "a: T, b: T", "T", fam).Diff();
    b.Add(op, "a: vec(N, T), b: T", "vec(N, T)", fam).Diff();
    b.Add(op, "a: T, b: vec(N, T)", "vec(N, T)", fam).Diff();
    b.Add(op, "a: mat(R, C, T), b: T", "mat(R, C, T)", fam).Diff().Header("warpd/native/mat.h");
    b.Add(op, "a: T, b: mat(R, C, T)", "mat(R, C, T)", fam).Diff().Header("warpd/native/mat.h");
    b.Add(op, "a: quat(T), b: T", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
    b.Add(op, "a: T, b: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  }
  b.Add("floordiv", "a: T, b: T", "T").NoDiff();
  b.Add("mod", "a: T, b: T", "T").Diff();
  b.Add("mod", "a: vec(N, T), b: vec(N, T)", "vec(N, T)").NoDiff();
  b.Add("neg", "x: T", "T").Diff();
  b.Add("neg", "x: vec(N, T)", "vec(N, T)").Diff();
  b.Add("neg", "x: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("neg", "x: mat(R, C, T)", "mat(R, C, T)").Diff().Header("warpd/native/mat.h");
  // Unary plus is the value itself.
  b.Add("pos", "x: T", "T").Diff().Cpp("$0");
  b.Add("pos", "x: vec(N, T)", "vec(N, T)").Diff().Cpp("$0");
  b.Add("pos", "x: quat(T)", "quat(T)", "T: Float").Diff().Cpp("$0");
  b.Add("pos", "x: mat(R, C, T)", "mat(R, C, T)").Diff().Cpp("$0");
  for (const char* op : {"bit_and", "bit_or", "bit_xor", "lshift", "rshift"}) {
    b.Add(op, "a: T, b: T", "T", "T: Int").NoDiff();
    b.Add(op, "a: vec(N, T), b: vec(N, T)", "vec(N, T)", "T: Int").NoDiff();
    b.Add(op, "a: mat(R, C, T), b: mat(R, C, T)", "mat(R, C, T)", "T: Int").NoDiff().Header("warpd/native/mat.h");
  }
  b.Add("invert", "a: T", "T", "T: Int").NoDiff();
  b.Add("invert", "a: vec(N, T)", "vec(N, T)", "T: Int").NoDiff();
  b.Add("invert", "a: mat(R, C, T)", "mat(R, C, T)", "T: Int").NoDiff().Header("warpd/native/mat.h");
  // `not x`: bool, or an integer compared with zero.
  b.Add("unot", "a: T", "bool", "T: Cond").NoDiff().Cpp("(!$0)");
  b.Add("unot", "a: array(V)", "bool").NoDiff().Cpp("((($0).data) == nullptr)");

  // Comparisons (Python operators; Warp has no builtin names for them).
  b.Group("Comparison");
  for (const char* op : {"eq", "ne"}) {
    b.Add(op, "a: T, b: T", "bool", "T: Any").NoDiff();
    b.Add(op, "a: vec(N, T), b: vec(N, T)", "bool", "T: Scalar").NoDiff();
    b.Add(op, "a: mat(R, C, T), b: mat(R, C, T)", "bool", "T: Scalar").NoDiff().Header("warpd/native/mat.h");
    b.Add(op, "a: quat(T), b: quat(T)", "bool", "T: Float").NoDiff().Header("warpd/native/quat.h");
    b.Add(op, "a: transform(T), b: transform(T)", "bool", "T: Float").NoDiff().Header("warpd/native/transform.h");
  }
  // Bools order as integers (False < True), as in Python and Warp.
  for (const char* op : {"lt", "le", "gt", "ge"}) b.Add(op, "a: T, b: T", "bool", "T: Any").NoDiff();
}

void AddScalarMath(Builder& b) {
  b.Group("Scalar Math");
  b.Add("abs", "x: T", "T").Diff();
  b.Add("abs", "x: vec(N, T)", "vec(N, T)").Diff();
  for (const char* f : {"acos", "asin", "atan", "cbrt", "cos", "cosh", "degrees", "erf", "erfc", "erfcinv", "erfinv",
                        "exp", "log", "log10", "log2", "radians", "sin", "sinh", "sqrt", "tan", "tanh"})
    b.Add(f, "x: T", "T", "T: Float").Diff();
  for (const char* f : {"ceil", "floor", "frac", "rint", "round", "trunc"}) b.Add(f, "x: T", "T", "T: Float").NoDiff();
  b.Add("atan2", "y: T, x: T", "T", "T: Float").Diff();
  b.Add("copysign", "x: T, y: T", "T", "T: Float").Diff();
  b.Add("pow", "x: T, y: T", "T", "T: Float").Diff();
  b.Add("bit_count", "x: T", "int32", "T: Int").NoDiff();
  b.Add("clamp", "x: T, low: T, high: T", "T").Diff();
  for (const char* f : {"isfinite", "isinf", "isnan"}) {
    b.Add(f, "a: T", "bool", "T: Float").NoDiff();
    b.Add(f, "a: vec(N, T)", "bool", "T: Float").NoDiff();
    b.Add(f, "a: quat(T)", "bool", "T: Float").NoDiff().Header("warpd/native/quat.h");
    b.Add(f, "a: mat(R, C, T)", "bool", "T: Float").NoDiff().Header("warpd/native/mat.h");
  }
  for (const char* f : {"max", "min"}) {
    b.Add(f, "a: T, b: T", "T").Diff();
    b.Add(f, "a: vec(N, T), b: vec(N, T)", "vec(N, T)").Diff();
    b.Add(f, "a: vec(N, T)", "T").Diff();
  }
  b.Add("nonzero", "x: T", "T").NoDiff();
  b.Add("sign", "x: T", "T").NoDiff();
  b.Add("sign", "x: vec(N, T)", "vec(N, T)").NoDiff();
  b.Add("step", "x: T", "T").NoDiff();
}

}  // namespace warpd::builtins::internal
