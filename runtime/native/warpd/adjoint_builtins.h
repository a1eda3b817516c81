// Which differentiable builtins have native adjoints (warpd/native/adjoint/),
// for the adjoint codegen and the coverage tests. Host-side; not embedded and
// not a device header.
//
// kAdjointBuiltins: builtin names (the builtin table's, which are Warp's)
// whose differentiable overloads on the family named beside it have
// adj_<native name> functions in adj_<family>.h, with Warp 1.19's argument order (forward args,
// the forward result where Warp's adjoint takes it, adjoint references, then
// adj_ret). native_adjoint_test fails if a name here has no finite-difference
// (or explicit) check, or if a checked name is missing here.
//
// kAdjointPending: differentiable in Warp 1.19 (tests/fixtures/
// warp_builtins_1.19.json), with no native adjoint yet for that family. The
// coverage test fails if a differentiable builtin of Warp's value-type groups
// (all but tiles, geometry, volumes, textures, random, arrays) is named in
// neither list, or if a pending entry has become covered.
#pragma once

#include <span>
#include <string_view>

namespace warpd::native {

// A builtin's overloads on one family of value types: "scalar", "vec", "mat",
// "quat", "transform", "spatial", and "noise" (noise.h's Perlin noise); their
// adjoints are in warpd/native/adjoint/adj_<family>.h (the decompositions',
// family "mat", in adj_svd.h).
struct AdjointBuiltin {
  std::string_view name;
  std::string_view family;
  // The adjoint takes the forward result after the forward arguments
  // (adj_<name>(args..., ret, adj_args&..., adj_ret)); the adjoint codegen
  // passes it. False: adj_<name>(args..., adj_args&..., adj_ret).
  bool takes_result = false;
};

inline constexpr AdjointBuiltin kAdjointBuiltins[] = {
    // Operators and Scalar Math on scalars; Utility on scalars; conversions.
    {"add", "scalar"},
    {"sub", "scalar"},
    {"mul", "scalar"},
    {"div", "scalar", true},
    {"div_approx", "scalar", true},
    {"mod", "scalar"},
    {"neg", "scalar"},
    {"pos", "scalar"},
    {"abs", "scalar"},
    {"min", "scalar"},
    {"max", "scalar"},
    {"clamp", "scalar"},
    {"copysign", "scalar"},
    {"sqrt", "scalar", true},
    {"cbrt", "scalar", true},
    {"exp", "scalar", true},
    {"log", "scalar"},
    {"log2", "scalar"},
    {"log10", "scalar"},
    {"pow", "scalar", true},
    {"sin", "scalar"},
    {"cos", "scalar"},
    {"tan", "scalar"},
    {"asin", "scalar"},
    {"acos", "scalar"},
    {"atan", "scalar"},
    {"atan2", "scalar"},
    {"sinh", "scalar"},
    {"cosh", "scalar"},
    {"tanh", "scalar", true},
    {"erf", "scalar"},
    {"erfc", "scalar"},
    {"erfinv", "scalar", true},
    {"erfcinv", "scalar", true},
    {"degrees", "scalar"},
    {"radians", "scalar"},
    {"lerp", "scalar"},
    {"smoothstep", "scalar"},
    {"where", "scalar"},
    {"select", "scalar"},
    {"float", "scalar"},
    {"float16", "scalar"},
    {"half", "scalar"},
    {"bfloat16", "scalar"},
    {"float32", "scalar"},
    {"float64", "scalar"},
    // Vectors (and the vector norms of mat.h).
    {"add", "vec"},
    {"sub", "vec"},
    {"neg", "vec"},
    {"pos", "vec"},
    {"abs", "vec"},
    {"min", "vec"},
    {"max", "vec"},
    {"cw_mul", "vec"},
    {"cw_div", "vec", true},
    {"mul", "vec"},
    {"div", "vec"},
    {"div_approx", "vec"},
    {"dot", "vec"},
    {"cross", "vec"},
    {"length", "vec", true},
    {"length_sq", "vec"},
    {"normalize", "vec", true},
    {"lerp", "vec"},
    {"norm_l1", "vec"},
    {"norm_l2", "vec"},
    {"norm_huber", "vec"},
    {"norm_pseudo_huber", "vec"},
    {"smooth_normalize", "vec"},
    {"where", "vec"},
    // Matrices (outer, diag and skew build one from vectors).
    {"add", "mat"},
    {"sub", "mat"},
    {"neg", "mat"},
    {"pos", "mat"},
    {"cw_mul", "mat"},
    {"cw_div", "mat", true},
    {"mul", "mat"},
    {"div", "mat"},
    {"div_approx", "mat"},
    {"lerp", "mat"},
    {"ddot", "mat"},
    {"transpose", "mat"},
    {"outer", "mat"},
    {"where", "mat"},
    {"trace", "mat"},
    {"diag", "mat"},
    {"get_diag", "mat"},
    {"determinant", "mat"},
    {"inverse", "mat", true},
    {"inverse_approx", "mat", true},
    {"skew", "mat"},
    // The decompositions (adj_svd.h): the tuple forms take the forward's
    // tuple; the forms with output arguments take the outputs' values.
    {"svd3", "mat", true},
    {"svd2", "mat", true},
    {"qr3", "mat", true},
    {"eig3", "mat", true},
    // Quaternions (the operators, Vector Math and Quaternion Math on quat).
    {"add", "quat"},
    {"div", "quat"},
    {"div_approx", "quat"},
    {"dot", "quat"},
    {"length", "quat", true},
    {"length_sq", "quat"},
    {"lerp", "quat"},
    {"mul", "quat"},
    {"neg", "quat"},
    {"normalize", "quat"},
    {"pos", "quat"},
    {"quat_from_axis_angle", "quat"},
    {"quat_from_euler", "quat"},
    {"quat_from_matrix", "quat"},
    {"quat_inverse", "quat"},
    {"quat_rotate", "quat"},
    {"quat_rotate_inv", "quat"},
    {"quat_rpy", "quat"},
    {"quat_slerp", "quat", true},
    {"quat_to_axis_angle", "quat"},
    {"quat_to_euler", "quat"},
    {"quat_to_matrix", "quat"},
    {"quat_to_rpy", "quat"},
    {"quat_twist", "quat"},
    {"quat_twist_angle", "quat"},
    {"quat_twist_angle_signed", "quat"},
    {"sub", "quat"},
    // Transformations (and transform_point / transform_vector on 4x4 matrices).
    {"add", "transform"},
    {"lerp", "transform"},
    {"mul", "transform"},
    {"sub", "transform"},
    {"transform_compose", "transform"},
    {"transform_decompose", "transform"},
    {"transform_from_matrix", "transform"},
    {"transform_get_rotation", "transform"},
    {"transform_get_translation", "transform"},
    {"transform_inverse", "transform"},
    {"transform_multiply", "transform"},
    {"transform_point", "transform"},
    {"transform_set_rotation", "transform"},
    {"transform_set_translation", "transform"},
    {"transform_to_matrix", "transform"},
    {"transform_vector", "transform"},
    // Spatial vectors and matrices.
    {"spatial_adjoint", "spatial"},
    {"spatial_bottom", "spatial"},
    {"spatial_cross", "spatial"},
    {"spatial_cross_dual", "spatial"},
    {"spatial_dot", "spatial"},
    {"spatial_top", "spatial"},
    {"transform_twist", "spatial"},
    {"transform_wrench", "spatial"},
    {"velocity_at_point", "spatial"},
    // Perlin noise (Warp's Random group; adj_noise.h): float32 only, no
    // gradient for the rng state, periods, octaves, lacunarity or gain.
    {"noise", "noise"},
    {"pnoise", "noise"},
    {"curlnoise", "noise"},
};

// Empty since the decompositions got theirs (a span: no array has size 0).
inline constexpr std::span<const AdjointBuiltin> kAdjointPending{};

// Differentiated by the adjoint codegen itself (compiler/codegen/adjoint.cc),
// with no native adjoint function: constructors (hook-emitted initializers,
// their adjoints distribute over flat components: vector, matrix,
// matrix_from_rows, quaternion, transformation, spatial_vector; columns for
// matrix_from_cols) and print (nothing to differentiate; the backward pass
// prints nothing).
inline constexpr AdjointBuiltin kAdjointInCodegen[] = {
    {"print", "scalar"},
    {"vector", "vec"},
    {"matrix", "mat"},
    {"matrix_from_cols", "mat"},
    {"matrix_from_rows", "mat"},
    {"quaternion", "quat"},
    {"transformation", "transform"},
    {"spatial_vector", "spatial"},
};

}  // namespace warpd::native
