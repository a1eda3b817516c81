#include "server/flags.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace warpd::server {

namespace {

constexpr const char* kLogLevels[] = {"trace", "debug", "info", "warn",
                                      "error", "critical", "off"};

std::string Env(const FlagEnvironment& env, const char* name) {
  const char* v = env.getenv ? env.getenv(name) : nullptr;
  return v != nullptr ? std::string(v) : std::string();
}

std::vector<std::string> DefaultListen(const FlagEnvironment& env) {
  const std::string runtime_dir = Env(env, "XDG_RUNTIME_DIR");
  const std::string socket = runtime_dir.empty()
                                 ? absl::StrCat("/tmp/warpd-", env.uid, ".sock")
                                 : absl::StrCat(runtime_dir, "/warpd.sock");
  return {"127.0.0.1:7788", "unix:" + socket};
}

std::string DefaultTokenFile(const FlagEnvironment& env) {
  const std::string runtime_dir = Env(env, "XDG_RUNTIME_DIR");
  return runtime_dir.empty() ? absl::StrCat("/tmp/warpd-", env.uid, ".token")
                             : absl::StrCat(runtime_dir, "/warpd.token");
}

std::string DefaultStateDir(const FlagEnvironment& env) {
  const std::string xdg = Env(env, "XDG_STATE_HOME");
  if (!xdg.empty()) return xdg + "/warpd";
  const std::string home = Env(env, "HOME");
  if (!home.empty()) return home + "/.local/state/warpd";
  return absl::StrCat("/tmp/warpd-state-", env.uid);
}

std::string DefaultCacheDir(const FlagEnvironment& env) {
  const std::string xdg = Env(env, "XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/warpd";
  const std::string home = Env(env, "HOME");
  if (!home.empty()) return home + "/.cache/warpd";
  return absl::StrCat("/tmp/warpd-cache-", env.uid);
}

}  // namespace

FlagEnvironment FlagEnvironment::Process() {
  return FlagEnvironment{[](const char* name) -> const char* { return std::getenv(name); },
                         static_cast<unsigned>(getuid())};
}

absl::Status CheckListenAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) {
    if (address.size() == 5) {
      return absl::InvalidArgumentError("--listen unix: needs a path, e.g. unix:/tmp/warpd.sock");
    }
    return absl::OkStatus();
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen '", address, "': expected HOST:PORT (127.0.0.1:7788) or unix:/path"));
  }
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  uint32_t p = 0;
  if (port.empty() || !absl::SimpleAtoi(port, &p) || p > 65535 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen '", address, "': port must be a number in [0, 65535]"));
  }
  if (host.front() == '[' && host.back() != ']') {
    return absl::InvalidArgumentError(absl::StrCat("--listen '", address, "': unbalanced '['"));
  }
  return absl::OkStatus();
}

bool IsLocalAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return true;
  const std::string host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host == "[::1]" || absl::StartsWith(host, "127.");
}

namespace {

// A bare number is seconds; "500ms", "2m", "1.5s" are durations.
absl::Status ParseTimeout(const std::string& flag, const std::string& text, bool zero_ok, absl::Duration* out) {
  double seconds = 0;
  absl::Duration d;
  const bool ok = absl::SimpleAtod(text, &seconds) ? (d = absl::Seconds(seconds), true) : absl::ParseDuration(text, &d);
  if (!ok || d < absl::ZeroDuration() || d == absl::InfiniteDuration() || (!zero_ok && d == absl::ZeroDuration())) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " '", text, "': expected seconds or a duration like 500ms",
                                                   zero_ok ? " (0: no limit)" : ""));
  }
  *out = d;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  uint64_t shift = 0;
  absl::string_view digits = s;
  const size_t end = s.find_first_not_of("0123456789");
  if (end != absl::string_view::npos) {
    digits = s.substr(0, end);
    std::string unit = absl::AsciiStrToUpper(s.substr(end));
    if (absl::EndsWith(unit, "IB")) unit = unit.substr(0, unit.size() - 2);
    else if (absl::EndsWith(unit, "B")) unit = unit.substr(0, unit.size() - 1);
    if (unit == "") shift = 0;
    else if (unit == "K") shift = 10;
    else if (unit == "M") shift = 20;
    else if (unit == "G") shift = 30;
    else if (unit == "T") shift = 40;
    else return absl::InvalidArgumentError(absl::StrCat("bad byte size '", text, "'"));
  }
  uint64_t value = 0;
  if (digits.empty() || !absl::SimpleAtoi(digits, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("bad byte size '", text, "'"));
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat("byte size '", text, "' is too large"));
  }
  return value << shift;
}

absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args,
                                 const FlagEnvironment& env) {
  Flags flags;
  bool cache_dir_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); absl::StartsWith(name, "--") && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    // Takes the value from "--name=value" or the next argument.
    auto take = [&](std::string* out) -> absl::Status {
      if (has_value) {
        *out = value;
        return absl::OkStatus();
      }
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value (see --help)"));
      }
      *out = args[++i];
      return absl::OkStatus();
    };
    auto no_value = [&]() -> absl::Status {
      if (has_value) {
        return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
      }
      return absl::OkStatus();
    };
    absl::Status s;
    if (name == "--listen") {
      std::string addr;
      s = take(&addr);
      if (s.ok()) s = CheckListenAddress(addr);
      if (s.ok()) flags.listen.push_back(addr);
    } else if (name == "--cache-dir") {
      s = take(&flags.cache_dir);
      if (s.ok() && flags.cache_dir.empty()) {
        s = absl::InvalidArgumentError("--cache-dir must not be empty");
      }
      cache_dir_set = true;
    } else if (name == "--cache-max") {
      std::string text;
      s = take(&text);
      if (s.ok()) {
        auto bytes = ParseByteSize(text);
        if (bytes.ok()) {
          flags.cache_max_bytes = *bytes;
        } else {
          s = absl::InvalidArgumentError(
              absl::StrCat("--cache-max '", text, "': expected a size such as 2G or 512M (0: no limit)"));
        }
      }
    } else if (name == "--log-level") {
      s = take(&flags.log_level);
      if (s.ok()) {
        flags.log_level = absl::AsciiStrToLower(flags.log_level);
        bool known = false;
        for (const char* l : kLogLevels) known |= flags.log_level == l;
        if (!known) {
          s = absl::InvalidArgumentError(absl::StrCat(
              "--log-level '", flags.log_level,
              "': expected one of trace, debug, info, warn, error, critical, off"));
        }
      }
    } else if (name == "--max-array-bytes") {
      std::string text;
      s = take(&text);
      if (s.ok()) {
        auto bytes = ParseByteSize(text);
        if (bytes.ok()) {
          flags.max_array_bytes = *bytes;
        } else {
          s = absl::InvalidArgumentError(absl::StrCat("--max-array-bytes: ", bytes.status().message()));
        }
      }
    } else if (name == "--max-memory") {
      std::string text;
      s = take(&text);
      if (s.ok()) {
        auto bytes = ParseByteSize(text);
        if (bytes.ok() && *bytes > 0) {
          flags.max_memory_bytes = *bytes;
        } else {
          s = absl::InvalidArgumentError(absl::StrCat("--max-memory '", text, "': expected a size such as 8G"));
        }
      }
    } else if (name == "--cpu-threads") {
      std::string text;
      s = take(&text);
      if (s.ok() && (!absl::SimpleAtoi(text, &flags.cpu_threads) || flags.cpu_threads < 0 ||
                     flags.cpu_threads > 4096)) {
        s = absl::InvalidArgumentError(
            absl::StrCat("--cpu-threads '", text, "': expected a number in [0, 4096]"));
      }
    } else if (name == "--kernel-timeout") {
      std::string text;
      s = take(&text);
      if (s.ok()) s = ParseTimeout(name, text, /*zero_ok=*/true, &flags.kernel_timeout);
    } else if (name == "--compile-timeout") {
      std::string text;
      s = take(&text);
      if (s.ok()) s = ParseTimeout(name, text, /*zero_ok=*/false, &flags.compile_timeout);
    } else if (name == "--command-spin") {
      std::string text;
      s = take(&text);
      if (s.ok()) s = ParseTimeout(name, text, /*zero_ok=*/true, &flags.command_spin);
      if (s.ok() && flags.command_spin > absl::Milliseconds(10)) {
        s = absl::InvalidArgumentError(absl::StrCat("--command-spin '", text, "': at most 10ms"));
      }
    } else if (name == "--compile-workers") {
      std::string text;
      s = take(&text);
      if (s.ok() && (!absl::SimpleAtoi(text, &flags.compile_workers) || flags.compile_workers < 1 ||
                     flags.compile_workers > 256)) {
        s = absl::InvalidArgumentError(absl::StrCat("--compile-workers '", text, "': expected a number in [1, 256]"));
      }
    } else if (name == "--compile-memory") {
      std::string text;
      s = take(&text);
      if (s.ok()) {
        auto bytes = ParseByteSize(text);
        if (bytes.ok() && *bytes >= (uint64_t{64} << 20)) {
          flags.compile_memory_bytes = *bytes;
        } else {
          s = absl::InvalidArgumentError(absl::StrCat("--compile-memory '", text, "': expected a size of at least 64M"));
        }
      }
    } else if (name == "--compile-worker") {
      s = take(&flags.compile_worker);
      if (s.ok() && (flags.compile_worker.empty() || flags.compile_worker[0] != '/')) {
        s = absl::InvalidArgumentError("--compile-worker must be an absolute path");
      }
    } else if (name == "--parent-pid") {
      std::string text;
      s = take(&text);
      if (s.ok() && (!absl::SimpleAtoi(text, &flags.parent_pid) || flags.parent_pid <= 1)) {
        s = absl::InvalidArgumentError(absl::StrCat("--parent-pid '", text, "': expected a process id > 1"));
      }
    } else if (name == "--tenants" || name == "--token-file" || name == "--tls-cert" || name == "--tls-key" ||
               name == "--state-dir") {
      std::string* out = name == "--tenants"      ? &flags.tenants_file
                         : name == "--token-file" ? &flags.token_file
                         : name == "--tls-cert"   ? &flags.tls_cert
                         : name == "--tls-key"    ? &flags.tls_key
                                                  : &flags.state_dir;
      s = take(out);
      if (s.ok() && (out->empty() || (*out)[0] != '/')) {
        s = absl::InvalidArgumentError(absl::StrCat(name, " must be an absolute path"));
      }
    } else if (name == "--session-grace") {
      std::string text;
      s = take(&text);
      if (s.ok()) s = ParseTimeout(name, text, /*zero_ok=*/false, &flags.session_grace);
    } else if (name == "--max-sessions") {
      std::string text;
      s = take(&text);
      if (s.ok() && (!absl::SimpleAtoi(text, &flags.max_sessions) || flags.max_sessions < 1 ||
                     flags.max_sessions > 1000000)) {
        s = absl::InvalidArgumentError(absl::StrCat("--max-sessions '", text, "': expected a number in [1, 1000000]"));
      }
    } else if (name == "--socket-group") {
      s = take(&flags.socket_group);
      if (s.ok() && flags.socket_group.empty()) s = absl::InvalidArgumentError("--socket-group must not be empty");
    } else if (name == "--metrics-listen") {
      s = take(&flags.metrics_listen);
      if (s.ok()) s = CheckListenAddress(flags.metrics_listen);
      if (s.ok() && absl::StartsWith(flags.metrics_listen, "unix:")) {
        s = absl::InvalidArgumentError("--metrics-listen takes HOST:PORT");
      }
    } else if (name == "--metrics-insecure") {
      s = no_value();
      flags.metrics_insecure = true;
    } else if (name == "--print-config") {
      s = no_value();
      flags.print_config = true;
    } else if (name == "--new-token") {
      s = no_value();
      flags.new_token = true;
    } else if (name == "--allow-client-cache-dir") {
      s = no_value();
      flags.allow_client_cache_dir = true;
    } else if (name == "--verify-cuda") {
      s = no_value();
      flags.verify_cuda = true;
    } else if (name == "--cuda-execution") {
      s = no_value();
      flags.cuda_execution = true;
    } else if (name == "--no-compile-pch") {
      s = no_value();
      flags.compile_pch = false;
    } else if (name == "--version") {
      s = no_value();
      flags.version = true;
    } else if (name == "--help" || name == "-h") {
      s = no_value();
      flags.help = true;
    } else {
      s = absl::InvalidArgumentError(absl::StrCat("unknown flag '", name, "' (see --help)"));
    }
    if (!s.ok()) return s;
  }
  if (flags.listen.empty()) flags.listen = DefaultListen(env);
  if (!cache_dir_set) flags.cache_dir = DefaultCacheDir(env);
  if (flags.token_file.empty()) flags.token_file = DefaultTokenFile(env);
  if (flags.state_dir.empty()) flags.state_dir = DefaultStateDir(env);
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (flags.tls_cert.empty()) {
    for (const std::string& a : flags.listen) {
      if (!IsLocalAddress(a)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--listen ", a, " is reachable beyond this machine: serving it needs TLS (--tls-cert and "
            "--tls-key); loopback addresses and Unix sockets do not"));
      }
    }
  }
  // The metrics endpoint has neither TLS nor authentication (Debian's
  // civetweb crashes in a TLS handshake with OpenSSL 3), and it names every
  // tenant: beyond loopback only by the operator's explicit choice.
  if (!flags.metrics_listen.empty() && !IsLocalAddress(flags.metrics_listen) && !flags.metrics_insecure) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen ", flags.metrics_listen,
        " is reachable beyond this machine, and the metrics endpoint has no TLS or authentication while its "
        "labels name every tenant with its sessions and usage: use a loopback address (127.0.0.1:9788), or add "
        "--metrics-insecure to serve it in the clear anyway"));
  }
  flags.test_cpu_target = Env(env, "WARPD_TEST_CPU_TARGET");
  return flags;
}

std::string UsageText() {
  return R"(usage: warpd [flags]

The warpd compute daemon: runs Warp kernels for clients over gRPC.

  --listen ADDR             where to serve; repeatable. HOST:PORT (127.0.0.1:7788)
                            or unix:/path. Default: 127.0.0.1:7788 and
                            unix:$XDG_RUNTIME_DIR/warpd.sock (unix:/tmp/warpd-$UID.sock
                            when XDG_RUNTIME_DIR is unset)
  --cache-dir DIR           kernel cache directory. Default: $XDG_CACHE_HOME/warpd,
                            else ~/.cache/warpd
  --cache-max SIZE          size limit of the kernel cache directory; the least
                            recently used kernels are deleted past it (default
                            2G; suffixes K, M, G, T; 0: no limit)
  --log-level LEVEL         trace, debug, info (default), warn, error, critical, off
  --allow-client-cache-dir  let clients change the kernel cache directory
                            (for private daemons started by a client)
  --verify-cuda             also compile every module's CUDA source with NVRTC and
                            check it with ptxas (test suites)
  --cuda-execution          run arrays and kernels on the GPUs (experimental: not
                            yet run on a real GPU); without it GPUs are listed only
  --max-array-bytes N       largest array one request may create (default 16G;
                            suffixes K, M, G, T)
  --max-memory N            CPU array memory of all sessions together (default:
                            half of physical memory, or of the cgroup limit)
  --cpu-threads N           CPU worker threads (default: one per core but one,
                            the launching thread takes part)
  --kernel-timeout TIME     stop a launch that runs longer (DEADLINE_EXCEEDED);
                            seconds or a duration (500ms, 2m); default 300, 0: none
  --compile-workers N       compile worker processes (default 2)
  --compile-timeout TIME    stop a kernel compile that runs longer (default 60s)
  --compile-memory N        address-space limit of a compile worker (default 4G)
  --compile-worker PATH     the worker binary (default: warpd-compile-worker
                            beside warpd)
  --no-compile-pch          parse the runtime headers in every kernel compile
                            instead of loading them precompiled (slower; for
                            diagnosing the compiler)
  --parent-pid PID          shut down when process PID, which started the daemon,
                            exits (private daemons of a client; Linux)

Tenants and access (docs/operations.md):
  --tenants FILE            tenants, token hashes, local uids, weights and limits
                            (JSON; reloaded on SIGHUP). Default: serve only this
                            user, with a token in --token-file for TCP clients
  --token-file PATH         where the default mode writes its token (0600).
                            Default: $XDG_RUNTIME_DIR/warpd.token, else
                            /tmp/warpd-$UID.token
  --session-grace TIME      close a session this long after its client went away
                            (no HoldSession stream and no call); default 60s
  --max-sessions N          open sessions of all tenants together (default 4096)
  --socket-group NAME       Unix sockets 0660 owned by group NAME (default 0600)
  --tls-cert FILE           TLS certificate chain (PEM) for TCP listeners;
  --tls-key FILE            and its key. Required to listen beyond loopback
  --state-dir DIR           where durable persistent arrays are kept. Default:
                            $XDG_STATE_HOME/warpd, else ~/.local/state/warpd
  --command-spin TIME       how long a local client's command connection polls for
                            its next request before sleeping (default 50us, at
                            most 10ms; 0: never; at most half the cores poll)
  --metrics-listen ADDR     serve Prometheus metrics at http://ADDR/metrics
                            (e.g. 127.0.0.1:9788; default off). Plain HTTP with
                            no authentication, and the labels name every tenant:
                            an address beyond loopback needs --metrics-insecure
  --metrics-insecure        allow --metrics-listen beyond loopback (logs a warning)
  --print-config            print the effective settings and exit
  --new-token               print a new random token and its SHA-256 (for a
                            tenants file) and exit

  --version                 print the version and exit
  --help                    print this help and exit
)";
}

}  // namespace warpd::server
