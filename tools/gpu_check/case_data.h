// tools/gpu_check: the byte encodings and deterministic inputs the cases'
// launches are built from.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tools/gpu_check/cases.h"

namespace warpd::gpu_check {

// Raw little-endian element bytes of `v`.
template <typename T>
std::string Bytes(const std::vector<T>& v) {
  std::string out(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A value parameter holding `values` (its components, in storage order).
template <typename T>
ScalarArg ScalarOf(const std::string& param, std::vector<T> values) {
  ScalarArg s{param, Bytes(values), {}};
  for (T v : values) s.shown.push_back(static_cast<double>(v));
  return s;
}

// Deterministic inputs: multiples of 2^-20 in [-1, 1), exact in float32.
class Inputs {
 public:
  explicit Inputs(uint64_t seed) : state_(seed) {}
  float Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int64_t>(state_ >> 43) - (int64_t{1} << 20)) / float(1 << 20);
  }

 private:
  uint64_t state_;
};

// The adjoint cases (adjoint_cases.cc).
std::vector<CheckCase> AdjointCases();

}  // namespace warpd::gpu_check
