// The client's version and the compatibility rule, as the Python client's
// (clients/python/warpd/versions.py): same major, and before 1.0 same minor.
#include <regex>
#include <string>

#include "warpd/client/client.h"

#ifndef WARPD_CLIENT_VERSION
#error "WARPD_CLIENT_VERSION must be defined (the project version)"
#endif

namespace warpd {
namespace {

bool Parse(std::string_view v, int out[3]) {
  static const std::regex re(R"(^(\d+)\.(\d+)\.(\d+))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(v.begin(), v.end(), m, re)) return false;
  for (int i = 0; i < 3; ++i) out[i] = std::stoi(m[i + 1].str());
  return true;
}

}  // namespace

const char* ClientVersion() { return WARPD_CLIENT_VERSION; }

bool VersionsCompatible(std::string_view client, std::string_view daemon) {
  int c[3], d[3];
  if (!Parse(client, c) || !Parse(daemon, d)) return true;
  if (c[0] != d[0]) return false;
  return c[0] >= 1 || c[1] == d[1];
}

}  // namespace warpd
