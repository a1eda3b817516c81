// warpd device runtime: what the adjoint codegen's generated code calls
// besides the builtins' adjoints: constructors' adjoints over flat
// components, accumulation into gradient arrays, gradient element
// addresses, and the adjoints of the array atomics.
//
// Included only by modules with a backward pass (compiler/codegen/adjoint.cc).
// Conventions: adj_scalar.h.
#pragma once

#include "warpd/native/adjoint/adj_mat.h"
#include "warpd/native/adjoint/adj_spatial.h"
#include "warpd/native/adjoint/adj_svd.h"
#include "warpd/native/adjoint/adj_noise.h"
#include "warpd/native/array.h"
#include "warpd/native/atomic.h"
#include "warpd/native/quat.h"
#include "warpd/native/transform.h"
#include "warpd/native/tuple.h"

namespace wp {

// --- Flat components --------------------------------------------------------

// A value type as `n` contiguous scalars of type S (vectors, matrices row
// by row, quaternions, transforms p then q).
template <typename T>
struct flat_of {
  typedef T S;
  static constexpr int n = 1;
};
template <int N, typename T>
struct flat_of<vec_t<N, T>> {
  typedef T S;
  static constexpr int n = N;
};
template <int R, int C, typename T>
struct flat_of<mat_t<R, C, T>> {
  typedef T S;
  static constexpr int n = R * C;
};

template <typename T>
struct flat_of<quat_t<T>> {
  typedef T S;
  static constexpr int n = 4;
};
template <typename T>
struct flat_of<transform_t<T>> {
  typedef T S;
  static constexpr int n = 7;
};

template <typename T>
WP_FUNC typename flat_of<T>::S* flat_ptr(T& v) {
  static_assert(sizeof(T) == sizeof(typename flat_of<T>::S) * flat_of<T>::n, "contiguous components");
  return (typename flat_of<T>::S*)&v;
}
template <typename T>
WP_FUNC const typename flat_of<T>::S* flat_ptr(const T& v) {
  static_assert(sizeof(T) == sizeof(typename flat_of<T>::S) * flat_of<T>::n, "contiguous components");
  return (const typename flat_of<T>::S*)&v;
}

// A constructor from components: argument `adj_arg` took the flat
// components [offset, offset + its size) of the result.
template <typename R, typename A>
WP_FUNC void adj_flat_extract(const R& adj_ret, int offset, A& adj_arg) {
  const typename flat_of<R>::S* r = flat_ptr(adj_ret);
  typename flat_of<A>::S* a = flat_ptr(adj_arg);
  for (int i = 0; i < flat_of<A>::n; ++i) accumulate_adjoint(a[i], r[offset + i]);
}

// A constructor filling every component with one scalar.
template <typename R, typename S>
WP_FUNC void adj_splat(const R& adj_ret, S& adj_x) {
  const typename flat_of<R>::S* r = flat_ptr(adj_ret);
  for (int i = 0; i < flat_of<R>::n; ++i) accumulate_adjoint(adj_x, r[i]);
}

// matrix_from_cols(v0, v1, ...): column k came from v_k.
template <int R, int C, typename T>
WP_FUNC void adj_matrix_column(const mat_t<R, C, T>& adj_ret, int k, vec_t<R, T>& adj_v) {
  for (int r = 0; r < R; ++r) accumulate_adjoint(adj_v.c[r], adj_ret.c[r][k]);
}

// where(arr, a, b): an array condition is its data pointer.
template <typename W, typename T>
WP_FUNC void adj_where(const array_t<W>& cond, const T&, const T&, array_t<W>&, T& adj_if_true, T& adj_if_false,
                       const T& adj_ret) {
  if (cond.data) accumulate_adjoint(adj_if_true, adj_ret);
  else accumulate_adjoint(adj_if_false, adj_ret);
}

// Conversions: the adjoint converts back.
template <typename R, typename X>
WP_FUNC void adj_convert(const R& adj_ret, X& adj_x) {
  accumulate_adjoint(adj_x, cast<X>(adj_ret));
}

// wp.grad(f)(args) (compiler/codegen/function_emitter.h VisitGrad): the
// adjoint of f's result it starts from, Warp 1.19's T(1): every component 1
// for scalars, vectors, matrices and transforms; quat_t(1), i.e. (1, 0, 0,
// 0), for a quaternion; tuples element by element.
template <typename T>
struct grad_seed_of {
  static WP_FUNC T make() {
    T v{};
    typename flat_of<T>::S* p = flat_ptr(v);
    for (int i = 0; i < flat_of<T>::n; ++i) p[i] = cast<typename flat_of<T>::S>(1);
    return v;
  }
};
template <typename T>
struct grad_seed_of<quat_t<T>> {
  static WP_FUNC quat_t<T> make() {
    quat_t<T> q{};
    flat_ptr(q)[0] = cast<T>(1);
    return q;
  }
};
template <typename... T>
struct grad_seed_of<tuple_t<T...>> {
  static WP_FUNC tuple_t<T...> make() { return tuple_make(grad_seed_of<T>::make()...); }
};
template <typename T>
WP_FUNC T grad_seed() {
  return grad_seed_of<T>::make();
}

// adj += v for any value type: scalars and the flat types component by
// component; arrays carry no adjoint value (their gradients are arrays);
// tuples element by element. Generated code adds overloads for its structs.
template <typename T>
WP_FUNC void adj_acc(T& adj, const T& v) {
  typename flat_of<T>::S* a = flat_ptr(adj);
  const typename flat_of<T>::S* b = flat_ptr(v);
  for (int i = 0; i < flat_of<T>::n; ++i) accumulate_adjoint(a[i], b[i]);
}
template <typename T>
WP_FUNC void adj_acc(array_t<T>&, const array_t<T>&) {}
template <typename T>
WP_FUNC void adj_acc(indexedarray_t<T>&, const indexedarray_t<T>&) {}
WP_FUNC void adj_acc(tuple_t<>&, const tuple_t<>&) {}
template <typename H, typename... T>
WP_FUNC void adj_acc(tuple_t<H, T...>& adj, const tuple_t<H, T...>& v) {
  adj_acc(adj.head, v.head);
  adj_acc(adj.tail, v.tail);
}

// --- Arrays and gradient memory ---------------------------------------------

template <typename T>
WP_FUNC bool adj_present(const array_t<T>& a) {
  return a.data != nullptr;
}
template <typename T>
WP_FUNC bool adj_present(const indexedarray_t<T>& a) {
  return a.data.data != nullptr;
}

// A gradient array in a lane-blocked adjoint's fast block (codegen
// adjoint.cc): its thread-indexed elements are taken without checks when
// it is absent (nothing flows) or contiguous, and the block ends within
// its length (an absent one bounds nothing).
template <typename T>
WP_FUNC bool adj_contiguous(const array_t<T>& g) {
  return !adj_present(g) || contiguous(g);
}
template <typename T>
WP_FUNC int32 adj_length(const array_t<T>& g) {
  return adj_present(g) ? g.shape[0] : 2147483647;
}

// Whether stores consume this gradient array's elements (it is its
// argument's own gradient, without retain_grad: Warp's final-write-wins;
// the runtime sets bit 0 of the descriptor's reserved word; a view of an
// own gradient consumes whatever retain_grad says, array.h view_reserved).
template <typename T>
WP_FUNC bool adj_consumes(const array_t<T>& a) {
  return (a.reserved & 1) != 0;
}
template <typename T>
WP_FUNC bool adj_consumes(const indexedarray_t<T>& a) {
  return (a.data.reserved & 1) != 0;
}

// Whether this gradient array's elements each have one writer: the kernel
// accesses the array only at the thread's own index (the compiler's
// judgement, codegen/thread_index.h) and no other gradient array of the
// launch shares its memory (the runtime's, which then sets bit 1 of the
// descriptor's reserved word). Indexed arrays never qualify.
template <typename T>
WP_FUNC bool adj_exclusive(const array_t<T>& a) {
  return (a.reserved & 2) != 0;
}
template <typename T>
WP_FUNC bool adj_exclusive(const indexedarray_t<T>&) {
  return false;
}

// The gradient element of an access: null when no gradient array was
// given (nothing flows); bounds-checked like the access itself, so a
// gradient array of another shape faults instead of reading past its end.
template <typename A, typename... I>
WP_FUNC auto adj_address(launch_ctx* ctx, const A& adj, int32 line, I... idx) -> decltype(address(ctx, adj, line, idx...)) {
  if (!adj_present(adj)) return nullptr;
  return address(ctx, adj, line, idx...);
}

template <typename T>
struct is_float_scalar {
  static constexpr bool value = false;
};
template <>
struct is_float_scalar<float32> {
  static constexpr bool value = true;
};
template <>
struct is_float_scalar<float64> {
  static constexpr bool value = true;
};
template <>
struct is_float_scalar<half> {
  static constexpr bool value = true;
};
template <>
struct is_float_scalar<bfloat16> {
  static constexpr bool value = true;
};

// Gradient memory is shared by every thread of the launch: adds are atomic.
template <typename T>
WP_FUNC void adj_atomic_add(T* p, const T& v) {
  typedef typename flat_of<T>::S S;
  if constexpr (is_float_scalar<S>::value) {
    S* ps = flat_ptr(*p);
    const S* vs = flat_ptr(v);
    for (int i = 0; i < flat_of<T>::n; ++i) atomic_add(&ps[i], vs[i]);
  }
}

// Accumulation into a gradient element: a plain add where the element has
// one writer (adj_exclusive), else atomic.
template <typename T>
WP_FUNC void adj_add_to(T* p, const T& v, bool exclusive) {
  if (exclusive) {
    adj_acc(*p, v);
  } else {
    adj_atomic_add(p, v);
  }
}

// atomic_min/max: the gradient flows to the value that is the result.
template <typename T>
WP_FUNC void adj_atomic_minmax(const T* addr, const T* adj_addr, const T& value, T& adj_value) {
  typedef typename flat_of<T>::S S;
  const S* a = flat_ptr(*addr);
  const S* g = flat_ptr(*adj_addr);
  const S* v = flat_ptr(value);
  S* av = flat_ptr(adj_value);
  // Both NaN: the forward wrote the value's NaN (Warp 1.19's rule).
  for (int i = 0; i < flat_of<T>::n; ++i)
    if (eq(a[i], v[i]) || (isnan(a[i]) && isnan(v[i]))) accumulate_adjoint(av[i], g[i]);
}

}  // namespace wp
