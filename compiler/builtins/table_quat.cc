// The builtin table: quaternions, transformations and spatial math.
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddQuaternionAndSpatial(Builder& b) {
  b.Group("Quaternion Math", "warpd/native/quat.h");
  b.Add("quat_from_axis_angle", "axis: vec(3, T), angle: T", "quat(T)", "T: Float").Diff();
  b.Add("quat_from_euler", "e: vec(3, float32), i: int32, j: int32, k: int32", "quat(float32)").Diff();
  b.Add("quat_from_matrix", "mat: mat(3, 3, T)", "quat(T)", "T: Float").Diff();
  b.Add("quat_from_matrix", "mat: mat(4, 4, T)", "quat(T)", "T: Float").Diff();
  b.Add("quat_inverse", "quat: quat(T)", "quat(T)", "T: Float").Diff();
  b.Add("quat_rotate", "quat: quat(T), vec: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("quat_rotate_inv", "quat: quat(T), vec: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("quat_rpy", "roll: T, pitch: T, yaw: T", "quat(T)", "T: Float").Diff();
  b.Add("quat_slerp", "a: quat(T), b: quat(T), t: T", "quat(T)", "T: Float").Diff();
  b.Add("quat_to_axis_angle", "quat: quat(T)", "tuple(vec(3, T), T)", "T: Float").Diff();
  b.Add("quat_to_axis_angle", "quat: quat(T), axis: out vec(3, T), angle: out T", "", "T: Float").Diff();
  b.Add("quat_to_euler", "q: quat(float32), i: int32, j: int32, k: int32", "vec(3, float32)").Diff();
  b.Add("quat_to_matrix", "quat: quat(T)", "mat(3, 3, T)", "T: Float").Diff();
  b.Add("quat_to_rpy", "q: quat(float32)", "vec(3, float32)").Diff();
  b.Add("quat_twist", "axis: vec(3, float32), q: quat(float32)", "quat(float32)").Diff();
  b.Add("quat_twist_angle", "axis: vec(3, float32), q: quat(float32)", "float32").Diff();
  b.Add("quat_twist_angle_signed", "axis: vec(3, float32), q: quat(float32)", "float32").Diff();

  b.Group("Transformations", "warpd/native/transform.h");
  // Warp's registry lists these for float32; its code (and its tests) take
  // every float type.
  b.Add("transform_compose", "position: vec(3, T), rotation: quat(T), scale: vec(3, T)", "mat(4, 4, T)", "T: Float")
      .Diff();
  b.Add("transform_decompose", "m: mat(4, 4, T)", "tuple(vec(3, T), quat(T), vec(3, T))", "T: Float").Diff();
  b.Add("transform_from_matrix", "mat: mat(4, 4, T)", "transform(T)", "T: Float").Diff();
  b.Add("transform_get_rotation", "xform: transform(T)", "quat(T)", "T: Float").Diff();
  b.Add("transform_get_translation", "xform: transform(T)", "vec(3, T)", "T: Float").Diff();
  b.Add("transform_inverse", "xform: transform(T)", "transform(T)", "T: Float").Diff();
  b.Add("transform_multiply", "a: transform(T), b: transform(T)", "transform(T)", "T: Float").Diff();
  b.Add("transform_point", "xform: transform(T), point: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("transform_point", "mat: mat(4, 4, T), point: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("transform_vector", "xform: transform(T), vec: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("transform_vector", "mat: mat(4, 4, T), vec: vec(3, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("transform_set_rotation", "xform: out transform(T), q: quat(T)", "", "T: Float").Diff();
  b.Add("transform_set_translation", "xform: out transform(T), p: vec(3, T)", "", "T: Float").Diff();
  b.Add("transform_to_matrix", "xform: transform(T)", "mat(4, 4, T)", "T: Float").Diff();

  b.Group("Spatial Math", "warpd/native/spatial.h");
  b.Add("spatial_adjoint", "r: mat(3, 3, T), s: mat(3, 3, T)", "mat(6, 6, T)", "T: Float").Diff();
  b.Add("spatial_bottom", "svec: vec(6, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("spatial_top", "svec: vec(6, T)", "vec(3, T)", "T: Float").Diff();
  b.Add("spatial_cross", "a: vec(6, T), b: vec(6, T)", "vec(6, T)", "T: Float").Diff();
  b.Add("spatial_cross_dual", "a: vec(6, T), b: vec(6, T)", "vec(6, T)", "T: Float").Diff();
  b.Add("spatial_dot", "a: vec(6, T), b: vec(6, T)", "T", "T: Float").Diff();
  b.Add("transform_twist", "t: transform(float32), x: vec(6, float32)", "vec(6, float32)").Diff();
  b.Add("transform_wrench", "t: transform(float32), x: vec(6, float32)", "vec(6, float32)").Diff();
  b.Add("velocity_at_point", "qd: vec(6, float32), r: vec(3, float32)", "vec(3, float32)").Diff();
}

}  // namespace warpd::builtins::internal
