// warpd: string concatenation that takes std::string_view (this abseil's
// absl::StrCat does not: its string_view is its own type).
//
//   std::string s = warpd::Cat("vec", 3, types::ScalarSuffix(k));
//   std::string l = warpd::Join(names, ", ");
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace warpd {
namespace str_cat_internal {

inline void Append(std::string& out, std::string_view s) { out.append(s.data(), s.size()); }
inline void Append(std::string& out, const std::string& s) { out += s; }
inline void Append(std::string& out, const char* s) { out += s; }
inline void Append(std::string& out, char c) { out += c; }
template <typename T, typename = std::enable_if_t<!std::is_same_v<T, std::string_view> && !std::is_same_v<T, std::string> &&
                                                  !std::is_same_v<T, char>>>
void Append(std::string& out, const T& v) {
  if constexpr (std::is_same_v<T, absl::string_view>) {
    out.append(v.data(), v.size());
  } else if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else {
    out += std::to_string(v);
  }
}

}  // namespace str_cat_internal

template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  (str_cat_internal::Append(out, args), ...);
  return out;
}

template <typename... Args>
void CatAppend(std::string* out, const Args&... args) {
  (str_cat_internal::Append(*out, args), ...);
}

// Joins strings or string_views with `sep`.
template <typename Range>
std::string Join(const Range& parts, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& p : parts) {
    if (!first) out.append(sep.data(), sep.size());
    first = false;
    str_cat_internal::Append(out, p);
  }
  return out;
}

}  // namespace warpd
