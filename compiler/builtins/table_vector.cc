// The builtin table: vector and matrix math.
#include "common/str_cat.h"
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddVectorMath(Builder& b) {
  b.Group("Vector Math");
  b.Add("argmax", "a: vec(N, T)", "uint32").NoDiff();
  b.Add("argmin", "a: vec(N, T)", "uint32").NoDiff();
  b.Add("cross", "a: vec(3, T), b: vec(3, T)", "vec(3, T)").Diff();
  b.Add("cw_mul", "a: vec(N, T), b: vec(N, T)", "vec(N, T)").Diff();
  b.Add("cw_div", "a: vec(N, T), b: vec(N, T)", "vec(N, T)").Diff();
  b.Add("dot", "a: vec(N, T), b: vec(N, T)", "T").Diff();
  b.Add("dot", "a: quat(T), b: quat(T)", "T", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("length", "a: vec(N, T)", "T", "T: Float").Diff();
  b.Add("length", "a: quat(T)", "T", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("length_sq", "a: vec(N, T)", "T").Diff();
  b.Add("length_sq", "a: quat(T)", "T", "T: Float").Diff().Header("warpd/native/quat.h");
  b.Add("normalize", "a: vec(N, T)", "vec(N, T)", "T: Float").Diff();
  b.Add("normalize", "a: quat(T)", "quat(T)", "T: Float").Diff().Header("warpd/native/quat.h");

  b.Group("Vector Math", "warpd/native/mat.h");
  b.Add("cw_mul", "a: mat(R, C, T), b: mat(R, C, T)", "mat(R, C, T)").Diff();
  b.Add("cw_div", "a: mat(R, C, T), b: mat(R, C, T)", "mat(R, C, T)").Diff();
  b.Add("ddot", "a: mat(R, C, T), b: mat(R, C, T)", "T").Diff();
  for (int n = 2; n <= 4; ++n) {
    static const char* kSq[] = {"", "", "a: mat(2, 2, T)", "a: mat(3, 3, T)", "a: mat(4, 4, T)"};
    static const char* kRes[] = {"", "", "mat(2, 2, T)", "mat(3, 3, T)", "mat(4, 4, T)"};
    b.Add("determinant", kSq[n], "T", "T: Float").Diff();
    b.Add("inverse", kSq[n], kRes[n], "T: Float").Diff();
    b.Add("inverse_approx", kSq[n], kRes[n], "T: Float").Diff();
  }
  b.Add("diag", "vec: vec(N, T)", "mat(N, N, T)").Diff();
  b.Add("get_diag", "mat: mat(N, N, T)", "vec(N, T)").Diff();
  b.Add("outer", "a: vec(R, T), b: vec(C, T)", "mat(R, C, T)").Diff();
  b.Add("skew", "vec: vec(3, T)", "mat(3, 3, T)").Diff();
  b.Add("trace", "a: mat(N, N, T)", "T").Diff();
  b.Add("transpose", "a: mat(R, C, T)", "mat(C, R, T)").Diff();
  for (const char* f : {"norm_l1", "norm_l2"}) b.Add(f, "v: vec(N, T)", "T", "T: Float").Diff();
  // Warp's delta defaults to 1 (one overload, as in Warp: the default is
  // passed as a constant, so the adjoint is the two-argument one).
  for (const char* f : {"norm_huber", "norm_pseudo_huber"}) b.Add(f, "v: vec(N, T), delta: T = 1.0", "T", "T: Float").Diff();
  b.Add("smooth_normalize", "v: vec(N, T), delta: T = 1.0", "vec(N, T)", "T: Float").Diff();

  b.Group("Vector Math", "warpd/native/svd.h");  // the decompositions
  b.Add("svd2", "A: mat(2, 2, T)", "tuple(mat(2, 2, T), vec(2, T), mat(2, 2, T))", "T: Float").Diff();
  b.Add("svd2", "A: mat(2, 2, T), U: out mat(2, 2, T), sigma: out vec(2, T), V: out mat(2, 2, T)", "", "T: Float")
      .Diff();
  b.Add("svd3", "A: mat(3, 3, T)", "tuple(mat(3, 3, T), vec(3, T), mat(3, 3, T))", "T: Float").Diff();
  b.Add("svd3", "A: mat(3, 3, T), U: out mat(3, 3, T), sigma: out vec(3, T), V: out mat(3, 3, T)", "", "T: Float")
      .Diff();
  b.Add("qr3", "A: mat(3, 3, T)", "tuple(mat(3, 3, T), mat(3, 3, T))", "T: Float").Diff();
  b.Add("qr3", "A: mat(3, 3, T), Q: out mat(3, 3, T), R: out mat(3, 3, T)", "", "T: Float").Diff();
  b.Add("eig3", "A: mat(3, 3, T)", "tuple(mat(3, 3, T), vec(3, T))", "T: Float").Diff();
  b.Add("eig3", "A: mat(3, 3, T), Q: out mat(3, 3, T), d: out vec(3, T)", "", "T: Float").Diff();
}

}  // namespace warpd::builtins::internal
