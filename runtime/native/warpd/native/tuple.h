// warpd device runtime: tuples tuple_t<T...>, the values of Python tuples in
// kernels and functions (`return a, b`, `t = (x, y)`, `q, r = wp.qr3(A)`).
//
// Layout: tuple_t<H, T...> is { H head; tuple_t<T...> tail; }, and tuple_t<>
// is empty. Tuples never cross the launch ABI (they are not kernel
// arguments, array dtypes or struct members), so only generated code sees
// it. Generated code builds them with tuple_make(...) and reads or writes
// element K with tuple_get<K>(t).
#pragma once

#include "warpd/native/core.h"

namespace wp {

template <typename... T>
struct tuple_t {};

template <typename H, typename... T>
struct tuple_t<H, T...> {
  H head;
  tuple_t<T...> tail;
};

template <int K>
struct tuple_at {
  template <typename H, typename... T>
  static WP_FUNC auto& get(tuple_t<H, T...>& t) {
    return tuple_at<K - 1>::get(t.tail);
  }
  template <typename H, typename... T>
  static WP_FUNC const auto& get(const tuple_t<H, T...>& t) {
    return tuple_at<K - 1>::get(t.tail);
  }
};

template <>
struct tuple_at<0> {
  template <typename H, typename... T>
  static WP_FUNC H& get(tuple_t<H, T...>& t) {
    return t.head;
  }
  template <typename H, typename... T>
  static WP_FUNC const H& get(const tuple_t<H, T...>& t) {
    return t.head;
  }
};

template <int K, typename... T>
WP_FUNC auto& tuple_get(tuple_t<T...>& t) {
  static_assert(K >= 0 && K < (int)sizeof...(T), "tuple index out of range");
  return tuple_at<K>::get(t);
}

template <int K, typename... T>
WP_FUNC const auto& tuple_get(const tuple_t<T...>& t) {
  static_assert(K >= 0 && K < (int)sizeof...(T), "tuple index out of range");
  return tuple_at<K>::get(t);
}

WP_FUNC tuple_t<> tuple_make() { return tuple_t<>{}; }

template <typename H, typename... T>
WP_FUNC tuple_t<H, T...> tuple_make(const H& head, const T&... tail) {
  tuple_t<H, T...> t;
  t.head = head;
  t.tail = tuple_make(tail...);
  return t;
}

}  // namespace wp
