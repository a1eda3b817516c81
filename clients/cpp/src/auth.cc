#include "auth.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace warpd::internal {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string ResolveAddress(const std::string& requested) {
  if (!requested.empty()) return requested;
  std::string env = Env("WARPD_ADDRESS");
  if (!env.empty()) return env;
  std::string xdg = Env("XDG_RUNTIME_DIR");
  std::string sock = xdg.empty() ? absl::StrCat("/tmp/warpd-", getuid(), ".sock") : xdg + "/warpd.sock";
  struct stat st;
  if (stat(sock.c_str(), &st) == 0) return "unix:" + sock;
  return "127.0.0.1:7788";
}

std::optional<std::string> UnixPath(const std::string& address) {
  if (!absl::StartsWith(address, "unix:")) return std::nullopt;
  std::string path = address.substr(5);
  if (absl::StartsWith(path, "//")) path = path.substr(2);
  return path;
}

bool IsLoopback(const std::string& address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return host == "localhost" || host == "[::1]" || absl::StartsWith(host, "127.");
}

std::string DefaultTokenFile() {
  std::string xdg = Env("XDG_RUNTIME_DIR");
  return xdg.empty() ? absl::StrCat("/tmp/warpd-", getuid(), ".token") : xdg + "/warpd.token";
}

std::optional<std::string> ReadTokenFile(const std::string& path, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<std::string> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? "no such file" : std::strerror(errno));
  struct stat st;
  std::string text;
  std::optional<std::string> out;
  if (fstat(fd, &st) != 0) {
    out = fail(std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    out = fail("not a regular file");
  } else if (st.st_uid != getuid()) {
    out = fail(absl::StrCat("it belongs to uid ", st.st_uid, ", not to this user (", getuid(), ")"));
  } else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%o", static_cast<unsigned>(st.st_mode & 07777));
    out = fail(absl::StrCat("its mode ", mode, " lets others read it (it must be 600)"));
  } else {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) text.assign(buf, static_cast<size_t>(n));
    text = std::string(absl::StripAsciiWhitespace(text));
    out = text.empty() ? fail("it is empty") : std::optional<std::string>(text);
  }
  close(fd);
  return out;
}

absl::StatusOr<std::string> Login(const std::string& socket_path) {
  std::string path = socket_path + ".login";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string data;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("could not log in at the warpd login socket ", path, ": ", std::strerror(e)));
  }
  char buf[1024];
  while (data.size() < 1024 && (data.empty() || data.back() != '\n')) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::string line(absl::StripAsciiWhitespace(data));
  if (absl::StartsWith(line, "token ")) return line.substr(6);
  std::string reason = absl::StartsWith(line, "error ") ? line.substr(6) : (line.empty() ? "no answer" : line);
  return absl::PermissionDeniedError(
      absl::StrCat("the warpd daemon at unix:", socket_path, " refused this user: ", reason,
                   "; ask the daemon's operator to map your uid to a tenant, or set WARPD_TOKEN to a token "
                   "they gave you (docs/operations.md, 'Who may call: tokens and tenants')"));
}

absl::StatusOr<FoundToken> FindToken(const std::string& address, const std::string& option_token,
                                     const std::string& option_token_file) {
  if (!option_token.empty()) {
    return FoundToken{std::string(absl::StripAsciiWhitespace(option_token)), "ConnectOptions::token"};
  }
  std::string env = Env("WARPD_TOKEN");
  if (!env.empty()) return FoundToken{std::string(absl::StripAsciiWhitespace(env)), "WARPD_TOKEN"};
  if (auto path = UnixPath(address)) {
    auto token = Login(*path);
    if (!token.ok()) return token.status();
    return FoundToken{*token, absl::StrCat("the login socket ", *path, ".login")};
  }
  if (IsLoopback(address)) {
    std::string file = option_token_file.empty() ? DefaultTokenFile() : option_token_file;
    std::string why;
    if (auto token = ReadTokenFile(file, &why)) return FoundToken{*token, "the token file " + file};
    return FoundToken{"", absl::StrCat("the token file ", file, ": ", why)};
  }
  return FoundToken{"", "none: the address is not on this machine, so no token file is read"};
}

std::string RefusalHelp(const std::string& address, const std::string& daemon_message, const std::string& source) {
  std::string why;
  if (absl::StrContains(daemon_message, "no bearer token")) {
    why = absl::StrCat("this client has no bearer token (it looked at ConnectOptions::token, WARPD_TOKEN and ",
                       source, ")");
  } else {
    why = absl::StrCat(daemon_message, ": the token from ", source,
                       " was revoked, or belongs to another daemon or to an earlier start of this one");
  }
  return absl::StrCat("the warpd daemon at ", address, " was reached, but it refused this client: ", why,
                      ". Set WARPD_TOKEN (or ConnectOptions::token) to a token this daemon accepts: a shared "
                      "daemon's operator gives each tenant one; a daemon without a tenants file writes its "
                      "token, readable by its user only, to $XDG_RUNTIME_DIR/warpd.token on its host (else "
                      "/tmp/warpd-<uid>.token, or its --token-file). See docs/operations.md, 'Who may call: "
                      "tokens and tenants'.");
}

}  // namespace warpd::internal
