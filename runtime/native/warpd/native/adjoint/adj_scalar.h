// warpd device runtime: reverse-mode adjoints of the scalar builtins
// (scalar.h): arithmetic operators, the Scalar Math group, lerp, smoothstep,
// where/select and the scalar conversions.
//
// Included only by modules that have a backward pass (codegen adds it), never
// by builtin.h, so a forward-only module does not parse it.
//
// Conventions (Warp 1.19's, warp/native/builtin.h), shared by every header in
// adjoint/:
// - adj_<name>(forward args..., [ret,] adj_<arg>&..., adj_ret): the forward
//   arguments in order; the forward result `ret` only for the builtins whose
//   Warp adjoint takes it (div, div_approx, sqrt, cbrt, exp, tanh, pow,
//   erfinv, erfcinv here); one adjoint reference per argument; the adjoint of
//   the result last. The name is adj_ + warpd's forward function name (Warp's
//   approx_div is warpd's div_approx, so its adjoint is adj_div_approx).
// - Adjoints accumulate: adj_x += d(ret)/dx * adj_ret; nothing is overwritten.
// - Integer (and bool) adjoints are no-ops: integers carry no gradient.
// - half and bfloat16 compute as their forward functions do: each operation
//   in float32, rounded back to the 16-bit type.
// - Non-smooth points take Warp's subgradients: d|x|/dx = 1 at x = 0 (-0
//   too); min/max pass the gradient to b on a tie (a only when strictly
//   smaller/larger) and to the non-NaN operand when one is NaN; clamp is
//   min(max(lo, x), hi) differentiated through those; d mod(a, b)/db is taken
//   as 0 (Warp's choice); acos/asin/atan2/tan give no gradient where their
//   derivative is infinite (|x| >= 1, (0, 0), cos x == 0); smoothstep gives
//   none where it is clamped (u <= 0 or u >= 1, ends included); copysign's
//   d/dy is 0 and its d/dx is +1 when the sign bits of x and y agree, else -1.
#pragma once

#include "warpd/native/scalar.h"

namespace wp {

// --- Accumulation -------------------------------------------------------------

// adj += v for a float type; nothing for integers and bool. The value-type
// headers (adj_vec.h, ...) overload it for their types, so the generic
// adjoints (where, select, cast) work for every value type.
WP_FUNC void accumulate_adjoint(float32& adj, float32 v) { adj += v; }
WP_FUNC void accumulate_adjoint(float64& adj, float64 v) { adj += v; }
WP_FUNC void accumulate_adjoint(half& adj, half v) { adj = add(adj, v); }
WP_FUNC void accumulate_adjoint(bfloat16& adj, bfloat16 v) { adj = add(adj, v); }
WP_FUNC void accumulate_adjoint(bool&, bool) {}
#define WP_ADJ_ACC_INT(T) \
  WP_FUNC void accumulate_adjoint(T&, T) {}
WP_ADJ_ACC_INT(int8)
WP_ADJ_ACC_INT(uint8)
WP_ADJ_ACC_INT(int16)
WP_ADJ_ACC_INT(uint16)
WP_ADJ_ACC_INT(int32)
WP_ADJ_ACC_INT(uint32)
WP_ADJ_ACC_INT(int64)
WP_ADJ_ACC_INT(uint64)
#undef WP_ADJ_ACC_INT

// --- Integers: the Scalar-family builtins, without gradient -----------------------

#define WP_ADJ_INT(T)                                                     \
  WP_FUNC void adj_add(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_sub(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_mul(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_div(T, T, T, T&, T&, T) {}                             \
  WP_FUNC void adj_mod(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_neg(T, T&, T) {}                                       \
  WP_FUNC void adj_pos(T, T&, T) {}                                       \
  WP_FUNC void adj_abs(T, T&, T) {}                                       \
  WP_FUNC void adj_min(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_max(T, T, T&, T&, T) {}                                \
  WP_FUNC void adj_clamp(T, T, T, T&, T&, T&, T) {}
WP_ADJ_INT(int8)
WP_ADJ_INT(uint8)
WP_ADJ_INT(int16)
WP_ADJ_INT(uint16)
WP_ADJ_INT(int32)
WP_ADJ_INT(uint32)
WP_ADJ_INT(int64)
WP_ADJ_INT(uint64)
#undef WP_ADJ_INT

// --- Floats: float32, float64, half, bfloat16 ----------------------------------

// One definition for the four float types. Every operation goes through the
// wp:: functions, so half and bfloat16 round as their forward functions do.
#define WP_ADJ_FLOAT(T)                                                                      \
  WP_FUNC void adj_add(T, T, T& adj_a, T& adj_b, T adj_ret) {                                \
    accumulate_adjoint(adj_a, adj_ret);                                                      \
    accumulate_adjoint(adj_b, adj_ret);                                                      \
  }                                                                                          \
  WP_FUNC void adj_sub(T, T, T& adj_a, T& adj_b, T adj_ret) {                                \
    accumulate_adjoint(adj_a, adj_ret);                                                      \
    accumulate_adjoint(adj_b, neg(adj_ret));                                                 \
  }                                                                                          \
  WP_FUNC void adj_mul(T a, T b, T& adj_a, T& adj_b, T adj_ret) {                            \
    accumulate_adjoint(adj_a, mul(b, adj_ret));                                              \
    accumulate_adjoint(adj_b, mul(a, adj_ret));                                              \
  }                                                                                          \
  /* d(a/b)/da = 1/b, d(a/b)/db = -ret/b. */                                                 \
  WP_FUNC void adj_div(T, T b, T ret, T& adj_a, T& adj_b, T adj_ret) {                       \
    accumulate_adjoint(adj_a, div(adj_ret, b));                                              \
    accumulate_adjoint(adj_b, neg(div(mul(adj_ret, ret), b)));                               \
  }                                                                                          \
  WP_FUNC void adj_div_approx(T, T b, T ret, T& adj_a, T& adj_b, T adj_ret) {                \
    accumulate_adjoint(adj_a, div_approx(adj_ret, b));                                       \
    accumulate_adjoint(adj_b, neg(div_approx(mul(adj_ret, ret), b)));                        \
  }                                                                                          \
  /* fmod: d/da = 1; Warp leaves d/db (= -trunc(a/b)) at 0. */                               \
  WP_FUNC void adj_mod(T, T, T& adj_a, T&, T adj_ret) { accumulate_adjoint(adj_a, adj_ret); } \
  WP_FUNC void adj_neg(T, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, neg(adj_ret)); }  \
  WP_FUNC void adj_pos(T, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, adj_ret); }       \
  WP_FUNC void adj_abs(T x, T& adj_x, T adj_ret) {                                           \
    accumulate_adjoint(adj_x, lt(x, cast<T>(0)) ? neg(adj_ret) : adj_ret);                   \
  }                                                                                          \
  WP_FUNC void adj_min(T a, T b, T& adj_a, T& adj_b, T adj_ret) {                            \
    if (isnan(a)) accumulate_adjoint(adj_b, adj_ret);                                        \
    else if (isnan(b) || lt(a, b)) accumulate_adjoint(adj_a, adj_ret);                       \
    else accumulate_adjoint(adj_b, adj_ret);                                                 \
  }                                                                                          \
  WP_FUNC void adj_max(T a, T b, T& adj_a, T& adj_b, T adj_ret) {                            \
    if (isnan(a)) accumulate_adjoint(adj_b, adj_ret);                                        \
    else if (isnan(b) || gt(a, b)) accumulate_adjoint(adj_a, adj_ret);                       \
    else accumulate_adjoint(adj_b, adj_ret);                                                 \
  }                                                                                          \
  /* clamp(x, lo, hi) = min(max(lo, x), hi): the chain rule through both. */                 \
  WP_FUNC void adj_clamp(T x, T lo, T hi, T& adj_x, T& adj_lo, T& adj_hi, T adj_ret) {       \
    T adj_m = cast<T>(0);                                                                    \
    adj_min(max(lo, x), hi, adj_m, adj_hi, adj_ret);                                         \
    adj_max(lo, x, adj_lo, adj_x, adj_m);                                                    \
  }                                                                                          \
  WP_FUNC void adj_copysign(T x, T y, T& adj_x, T&, T adj_ret) {                             \
    const bool same = eq(copysign(cast<T>(1), x), copysign(cast<T>(1), y));                  \
    accumulate_adjoint(adj_x, same ? adj_ret : neg(adj_ret));                                \
  }                                                                                          \
  WP_FUNC void adj_sqrt(T, T ret, T& adj_x, T adj_ret) {                                     \
    accumulate_adjoint(adj_x, mul(mul(cast<T>(0.5), div(cast<T>(1), ret)), adj_ret));        \
  }                                                                                          \
  WP_FUNC void adj_cbrt(T, T ret, T& adj_x, T adj_ret) {                                     \
    const T inv3 = div(cast<T>(1), cast<T>(3));                                              \
    accumulate_adjoint(adj_x, mul(mul(inv3, div(cast<T>(1), mul(ret, ret))), adj_ret));      \
  }                                                                                          \
  WP_FUNC void adj_exp(T, T ret, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, mul(ret, adj_ret)); } \
  WP_FUNC void adj_log(T x, T& adj_x, T adj_ret) {                                           \
    accumulate_adjoint(adj_x, mul(div(cast<T>(1), x), adj_ret));                             \
  }                                                                                          \
  WP_FUNC void adj_log2(T x, T& adj_x, T adj_ret) {                                          \
    const T inv_ln2 = cast<T>(1.44269504088896340736);                                       \
    accumulate_adjoint(adj_x, mul(mul(div(cast<T>(1), x), inv_ln2), adj_ret));               \
  }                                                                                          \
  WP_FUNC void adj_log10(T x, T& adj_x, T adj_ret) {                                         \
    const T inv_ln10 = cast<T>(0.43429448190325182765);                                      \
    accumulate_adjoint(adj_x, mul(mul(div(cast<T>(1), x), inv_ln10), adj_ret));              \
  }                                                                                          \
  /* Warp's formulas as they are: at x <= 0, d/dy is log(x) * ret (NaN or -inf * 0). */      \
  WP_FUNC void adj_pow(T x, T y, T ret, T& adj_x, T& adj_y, T adj_ret) {                     \
    accumulate_adjoint(adj_x, mul(mul(y, pow(x, sub(y, cast<T>(1)))), adj_ret));             \
    accumulate_adjoint(adj_y, mul(mul(log(x), ret), adj_ret));                               \
  }                                                                                          \
  WP_FUNC void adj_sin(T x, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, mul(cos(x), adj_ret)); } \
  WP_FUNC void adj_cos(T x, T& adj_x, T adj_ret) {                                           \
    accumulate_adjoint(adj_x, neg(mul(sin(x), adj_ret)));                                    \
  }                                                                                          \
  WP_FUNC void adj_tan(T x, T& adj_x, T adj_ret) {                                           \
    const T c = cos(x);                                                                      \
    if (ne(c, cast<T>(0))) accumulate_adjoint(adj_x, mul(div(cast<T>(1), mul(c, c)), adj_ret)); \
  }                                                                                          \
  /* acos/asin: no gradient where sqrt(1 - x^2) is 0 or NaN (|x| >= 1, clamped). */          \
  WP_FUNC void adj_asin(T x, T& adj_x, T adj_ret) {                                          \
    const T d = sqrt(sub(cast<T>(1), mul(x, x)));                                            \
    if (gt(d, cast<T>(0))) accumulate_adjoint(adj_x, mul(div(cast<T>(1), d), adj_ret));      \
  }                                                                                          \
  WP_FUNC void adj_acos(T x, T& adj_x, T adj_ret) {                                          \
    const T d = sqrt(sub(cast<T>(1), mul(x, x)));                                            \
    if (gt(d, cast<T>(0))) accumulate_adjoint(adj_x, neg(mul(div(cast<T>(1), d), adj_ret))); \
  }                                                                                          \
  WP_FUNC void adj_atan(T x, T& adj_x, T adj_ret) {                                          \
    accumulate_adjoint(adj_x, div(adj_ret, add(mul(x, x), cast<T>(1))));                     \
  }                                                                                          \
  WP_FUNC void adj_atan2(T y, T x, T& adj_y, T& adj_x, T adj_ret) {                          \
    const T d = add(mul(x, x), mul(y, y));                                                   \
    if (gt(d, cast<T>(0))) {                                                                 \
      accumulate_adjoint(adj_x, neg(mul(div(y, d), adj_ret)));                               \
      accumulate_adjoint(adj_y, mul(div(x, d), adj_ret));                                    \
    }                                                                                        \
  }                                                                                          \
  WP_FUNC void adj_sinh(T x, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, mul(cosh(x), adj_ret)); } \
  WP_FUNC void adj_cosh(T x, T& adj_x, T adj_ret) { accumulate_adjoint(adj_x, mul(sinh(x), adj_ret)); } \
  WP_FUNC void adj_tanh(T, T ret, T& adj_x, T adj_ret) {                                     \
    accumulate_adjoint(adj_x, mul(sub(cast<T>(1), mul(ret, ret)), adj_ret));                 \
  }                                                                                          \
  /* erf' = 2/sqrt(pi) exp(-x^2); erfinv' = sqrt(pi)/2 exp(ret^2). */                        \
  WP_FUNC void adj_erf(T x, T& adj_x, T adj_ret) {                                           \
    const T d = mul(cast<T>(1.12837916709551257390), exp(neg(mul(x, x))));                   \
    accumulate_adjoint(adj_x, mul(d, adj_ret));                                              \
  }                                                                                          \
  WP_FUNC void adj_erfc(T x, T& adj_x, T adj_ret) {                                          \
    const T d = mul(cast<T>(1.12837916709551257390), exp(neg(mul(x, x))));                   \
    accumulate_adjoint(adj_x, neg(mul(d, adj_ret)));                                         \
  }                                                                                          \
  WP_FUNC void adj_erfinv(T, T ret, T& adj_x, T adj_ret) {                                   \
    const T d = mul(cast<T>(0.88622692545275801365), exp(mul(ret, ret)));                    \
    accumulate_adjoint(adj_x, mul(d, adj_ret));                                              \
  }                                                                                          \
  WP_FUNC void adj_erfcinv(T, T ret, T& adj_x, T adj_ret) {                                  \
    const T d = mul(cast<T>(0.88622692545275801365), exp(mul(ret, ret)));                    \
    accumulate_adjoint(adj_x, neg(mul(d, adj_ret)));                                         \
  }                                                                                          \
  WP_FUNC void adj_degrees(T, T& adj_x, T adj_ret) {                                         \
    accumulate_adjoint(adj_x, mul(cast<T>(57.29577951308232087679), adj_ret));               \
  }                                                                                          \
  WP_FUNC void adj_radians(T, T& adj_x, T adj_ret) {                                         \
    accumulate_adjoint(adj_x, mul(cast<T>(0.01745329251994329577), adj_ret));                \
  }                                                                                          \
  /* lerp(a, b, t) = a (1 - t) + b t. */                                                     \
  WP_FUNC void adj_lerp(T a, T b, T t, T& adj_a, T& adj_b, T& adj_t, T adj_ret) {            \
    accumulate_adjoint(adj_a, mul(adj_ret, sub(cast<T>(1), t)));                             \
    accumulate_adjoint(adj_b, mul(adj_ret, t));                                              \
    accumulate_adjoint(adj_t, sub(mul(b, adj_ret), mul(a, adj_ret)));                        \
  }                                                                                          \
  /* smoothstep = u^2 (3 - 2u), u = (x - e0) / (e1 - e0) clamped to [0, 1]: */               \
  /* d/du = 6u(1 - u); zero where clamped, ends included (as Warp).          */              \
  WP_FUNC void adj_smoothstep(T e0, T e1, T x, T& adj_e0, T& adj_e1, T& adj_x, T adj_ret) {  \
    const T w = sub(e1, e0);                                                                 \
    const T u = div(sub(x, e0), w);                                                          \
    if (ge(u, cast<T>(1)) || le(u, cast<T>(0))) return;                                      \
    const T g = mul(mul(mul(cast<T>(6), u), sub(cast<T>(1), u)), adj_ret);                   \
    const T gw = div(g, w);                                                                  \
    accumulate_adjoint(adj_x, gw);                                                           \
    accumulate_adjoint(adj_e0, mul(gw, div(sub(x, e1), w)));                                 \
    accumulate_adjoint(adj_e1, neg(mul(gw, u)));                                             \
  }

WP_ADJ_FLOAT(float32)
WP_ADJ_FLOAT(float64)
WP_ADJ_FLOAT(half)
WP_ADJ_FLOAT(bfloat16)
#undef WP_ADJ_FLOAT

// --- Generic: every value type ----------------------------------------------------

// where(cond, value_if_true, value_if_false): the gradient goes to the value
// the forward picked; cond gets none. select has the values swapped.
template <typename C, typename T>
WP_FUNC void adj_where(const C& cond, const T&, const T&, C&, T& adj_if_true, T& adj_if_false,
                       const T& adj_ret) {
  if (!!cond) accumulate_adjoint(adj_if_true, adj_ret);
  else accumulate_adjoint(adj_if_false, adj_ret);
}

template <typename C, typename T>
WP_FUNC void adj_select(const C& cond, const T&, const T&, C&, T& adj_if_false, T& adj_if_true,
                        const T& adj_ret) {
  if (!!cond) accumulate_adjoint(adj_if_true, adj_ret);
  else accumulate_adjoint(adj_if_false, adj_ret);
}

// The scalar constructors (float32(x), float16(x), ...) are cast<To>(x): the
// gradient converts back to the argument's type (Warp's adj_float32 & co.);
// none flows into or out of an integer.
template <typename T>
struct adj_is_float {
  static constexpr bool value = false;
};
template <>
struct adj_is_float<float32> {
  static constexpr bool value = true;
};
template <>
struct adj_is_float<float64> {
  static constexpr bool value = true;
};
template <>
struct adj_is_float<half> {
  static constexpr bool value = true;
};
template <>
struct adj_is_float<bfloat16> {
  static constexpr bool value = true;
};

template <typename To, typename From>
WP_FUNC void adj_cast(From, From& adj_x, To adj_ret) {
  if (adj_is_float<To>::value) accumulate_adjoint(adj_x, cast<From>(adj_ret));
}

}  // namespace wp
