// Small helpers shared by the examples: failing loudly, writing results.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

inline void Check(const absl::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, std::string(st.ToString()).c_str());
    std::exit(1);
  }
}

template <class T>
T Check(absl::StatusOr<T> v, const char* what) {
  Check(v.status(), what);
  return *std::move(v);
}

// The value after `flag` in argv, or "".
inline std::string Flag(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

// Writes `values` as raw float32 to `path` (when given): the test compares them.
inline void WriteFloats(const std::string& path, const std::vector<float>& values) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
}
