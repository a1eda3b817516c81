// warpd: the compute daemon. Parses flags, builds the shared state, serves
// warpd.v1.Runtime (plus health and reflection) until SIGTERM or SIGINT, then
// shuts down cleanly and exits 0.
#include <pthread.h>
#include <signal.h>
#include <grp.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#include <sanitizer/lsan_interface.h>
#define WARPD_LEAK_CHECK 1
#endif
#endif
#ifndef WARPD_LEAK_CHECK
#define WARPD_LEAK_CHECK 0
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpc/grpc.h"
#include "runtime/exec/matmul.h"
#include "server/admin/admin_service.h"
#include "server/auth/login_socket.h"
#include "server/local/command_socket.h"
#include "server/local/local_commands.h"
#include "server/local/share_arrays.h"
#include "server/local/share_socket.h"
#include "common/sha256.h"
#include "runtime/memory/huge_pages.h"
#include "server/auth/token.h"
#include "server/auth/token_file.h"
#include "server/daemon_state.h"
#include "server/device_health.h"
#include "server/metrics/http_server.h"
#include "server/print_config.h"
#include "server/flags.h"
#include "server/listen.h"
#include "server/logging.h"
#include "server/runtime_service.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace warpd::server {
namespace {

// Message limits: transfers move at most 4 MiB per message, so 64 MiB leaves
// room for large modules and batches while staying far below protobuf's 2 GB.
constexpr int kMaxMessageBytes = 64 << 20;
// How long in-flight calls get to finish after SIGTERM before work is cancelled.
constexpr auto kShutdownGrace = std::chrono::seconds(5);
// After the grace the daemon cancels all work itself, so a call waiting on
// a kernel ends with that kernel's CANCELLED status, over gRPC as over the
// command socket. gRPC's own cancel (UNAVAILABLE "Cancelling all calls")
// comes this much later, for calls that still have not ended; and
// command-socket requests get as long to send their replies.
constexpr absl::Duration kAfterCancelWait = absl::Seconds(2);

// --parent-pid: the daemon asks the kernel for SIGTERM when the process that
// started it exits, so a private daemon does not outlive a killed client.
// (Set here, after exec, rather than by the client between fork and exec: a
// client that uses gRPC must not run code in a forked child, where gRPC's
// fork handlers restart its poller and the child's descriptor clean-up then
// closes the poller's epoll fd, aborting the child.) False when the parent
// is already gone.
bool WatchParent(int parent_pid) {
#if defined(__linux__)
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    spdlog::warn("--parent-pid: cannot set a parent-death signal: {}", std::strerror(errno));
  }
#endif
  // Checked after arming, so a parent that died before cannot be missed.
  return getppid() == parent_pid;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0 && out.size() < (16 << 20)) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Transfers move a 2-4 MiB message per chunk, so gRPC allocates and frees
// receive buffers and send slices of that size once per chunk. Under glibc's
// default (dynamic) thresholds such blocks are mmapped, or trimmed off the
// heap's top, when freed, and the next chunk faults its pages in again: that
// cost more than the copies (1.0 s of daemon CPU per GB uploaded over TCP,
// 0.45 s without it). Blocks under 8 MiB come from the heap, and a heap keeps
// up to 32 MiB free at its top; malloc_trim (load_module_request.cc) still
// hands large requests' memory back.
void TuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

// TLS for TCP listeners when --tls-cert/--tls-key are set, else plaintext
// (flags.cc allows that only on loopback; every call still needs a token).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpCredentials(const Flags& flags) {
  if (flags.tls_cert.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadFile(flags.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(flags.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

// The group Unix sockets are made for (--socket-group), or -1.
absl::StatusOr<gid_t> SocketGroup(const Flags& flags) {
  if (flags.socket_group.empty()) return static_cast<gid_t>(-1);
  char buf[16384];
  group g, *found = nullptr;
  if (getgrnam_r(flags.socket_group.c_str(), &g, buf, sizeof(buf), &found) != 0 || found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--socket-group: no group named '", flags.socket_group, "'"));
  }
  return found->gr_gid;
}

int Serve(const Flags& flags, const sigset_t& signals) {
  if (flags.parent_pid != 0 && !WatchParent(flags.parent_pid)) {
    spdlog::info("parent process {} is gone; not starting", flags.parent_pid);
    return 0;
  }
  absl::StatusOr<std::unique_ptr<DaemonState>> state = DaemonState::Create(flags);
  if (!state.ok()) {
    spdlog::critical("cannot start: {}", state.status().ToString());
    return 1;
  }
  RuntimeService service(state->get());
  // warpctl's service; a finished drain ends the daemon as SIGTERM does.
  admin::AdminService admin_service(state->get(), [] { kill(getpid(), SIGTERM); });
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (!flags.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<metrics::MetricsHttpServer>> m = metrics::MetricsHttpServer::Start(
        flags.metrics_listen, [m = &(*state)->metrics()] { return m->Render(); });
    if (!m.ok()) {
      spdlog::critical("cannot serve metrics on {}: {}", flags.metrics_listen, std::string(m.status().message()));
      return 1;
    }
    metrics_server = *std::move(m);
    spdlog::info("metrics: http://{}/metrics", metrics_server->address());
    if (!IsLocalAddress(flags.metrics_listen)) {
      // Only with --metrics-insecure (flags.cc refuses it otherwise).
      spdlog::warn("metrics: serving http://{}/metrics beyond loopback without TLS or authentication "
                   "(--metrics-insecure): whoever can reach it reads every tenant's name, sessions and usage",
                   metrics_server->address());
    }
  }
  TenantRegistry& tenants = (*state)->tenants();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tcp_credentials = TcpCredentials(flags);
  absl::StatusOr<gid_t> socket_group = SocketGroup(flags);
  if (!tcp_credentials.ok() || !socket_group.ok()) {
    spdlog::critical("cannot start: {}", std::string((!tcp_credentials.ok() ? tcp_credentials.status() : socket_group.status()).message()));
    return 1;
  }
  const mode_t socket_mode = flags.socket_group.empty() ? 0600 : 0660;

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // HTTP/2 keepalive: a client that vanished without closing its connection
  // (a network partition, a suspended VM) drops its HoldSession stream
  // within a minute, so its session's lease can lapse.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  std::vector<int> ports(flags.listen.size(), 0);
  std::vector<std::string> unix_paths;
  for (size_t i = 0; i < flags.listen.size(); ++i) {
    const std::string path = UnixSocketPath(flags.listen[i]);
    if (!path.empty()) {
      if (absl::Status s = PrepareUnixSocket(path); !s.ok()) {
        spdlog::critical("cannot listen on {}: {}", flags.listen[i], std::string(s.message()));
        return 1;
      }
      unix_paths.push_back(path);
    }
    builder.AddListeningPort(flags.listen[i],
                             path.empty() ? *tcp_credentials : grpc::InsecureServerCredentials(), &ports[i]);
  }
  builder.RegisterService(&service);
  builder.RegisterService(&admin_service);
  // Unix sockets are created 0600 (only the daemon's user may connect),
  // whatever the umask: gRPC binds them in BuildAndStart.
  const mode_t old_umask = umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_umask);
  std::vector<std::string> failed, bound;
  for (size_t i = 0; i < flags.listen.size(); ++i) {
    if (ports[i] == 0) {
      failed.push_back(flags.listen[i]);
    } else if (UnixSocketPath(flags.listen[i]).empty()) {
      // Show the port picked for ":0".
      const std::string& a = flags.listen[i];
      bound.push_back(absl::StrCat(a.substr(0, a.rfind(':')), ":", ports[i]));
    } else {
      bound.push_back(flags.listen[i]);
    }
  }
  if (server == nullptr || !failed.empty()) {
    spdlog::critical("cannot listen on {} (address in use or not available)",
                     failed.empty() ? absl::StrJoin(flags.listen, ", ") : absl::StrJoin(failed, ", "));
    if (server) server->Shutdown();
    for (const auto& p : unix_paths) RemoveUnixSocket(p);
    return 1;
  }
  // Unix sockets: exactly 0600 (or 0660 for --socket-group), and a login
  // socket beside each, where local users get their tenant's token.
  std::vector<std::unique_ptr<LoginSocket>> logins;
  // And a share socket, where local clients map their arrays' memory.
  std::vector<std::unique_ptr<ShareSocket>> shares;
  // And a command socket: local clients' fast path for launches and
  // synchronize.
  std::vector<std::unique_ptr<CommandSocket>> commands;
  for (const auto& p : unix_paths) {
    absl::Status s = SetSocketAccess(p, socket_mode, *socket_group);
    absl::StatusOr<std::unique_ptr<LoginSocket>> login;
    if (s.ok()) {
      login = LoginSocket::Start(LoginSocketPath(p), socket_mode, *socket_group,
                                 [&tenants](uint32_t uid) -> absl::StatusOr<std::string> {
                                   std::shared_ptr<Tenant> t = tenants.ForUid(uid);
                                   if (t == nullptr) {
                                     return absl::PermissionDeniedError(
                                         absl::StrCat("uid ", uid, " is not a tenant of this daemon"));
                                   }
                                   return tenants.PeerToken(*t);
                                 });
      s = login.status();
    }
    absl::StatusOr<std::unique_ptr<ShareSocket>> share;
    if (s.ok()) {
      share = ShareSocket::Start(ShareSocketPath(p), socket_mode, *socket_group,
                                 ShareArrays(tenants, (*state)->sessions(), (*state)->devices()));
      s = share.status();
    }
    absl::StatusOr<std::unique_ptr<CommandSocket>> command;
    if (s.ok()) {
      command = CommandSocket::Start(CommandSocketPath(p), socket_mode, *socket_group, LocalCommands(state->get()),
                                     flags.command_spin);
      s = command.status();
    }
    if (!s.ok()) {
      spdlog::critical("cannot serve unix:{}: {}", p, std::string(s.message()));
      server->Shutdown();
      for (const auto& q : unix_paths) RemoveUnixSocket(q);
      return 1;
    }
    logins.push_back(*std::move(login));
    shares.push_back(*std::move(share));
    commands.push_back(*std::move(command));
  }
  // The default mode's token, for loopback TCP clients of this user.
  std::string file_token;
  if (tenants.default_mode()) {
    file_token = tenants.PeerToken(*tenants.All().front());
    if (absl::Status s = WriteTokenFile(flags.token_file, file_token); !s.ok()) {
      spdlog::warn("cannot write the token file ({}); TCP clients need WARPD_TOKEN", std::string(s.message()));
      file_token.clear();
    } else {
      spdlog::info("token for TCP clients: {}", flags.token_file);
    }
  } else {
    spdlog::info("tenants: {} from {}", tenants.All().size(), flags.tenants_file);
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  // Each device's own status ("cpu", "cuda:0"): a GPU whose context a
  // kernel lost is NOT_SERVING until it is reset; the daemon stays SERVING.
  std::optional<DeviceHealth> device_health;
  device_health.emplace((*state)->devices(), [&server](const std::string& device, bool serving) {
    server->GetHealthCheckService()->SetServingStatus(device, serving);
  });
  spdlog::info("warpd {} listening on {}", kVersion, absl::StrJoin(bound, ", "));
  spdlog::info("kernel cache: {}", (*state)->compiler()->cache_dir());
  if (runtime::HostShmemHugePages() == runtime::ShmemHugePages::kNone) {
    // Arrays live in memory files: without huge pages for them, kernels that
    // stream tens of MiB run slower (docs/operations.md, "Huge pages").
    spdlog::info("memory files get 4 KiB pages (transparent_hugepage/shmem_enabled: {}); "
                 "'advise' lets large arrays use huge pages",
                 runtime::HostShmemHugePagesText());
  }

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    if (absl::Status s = (*state)->ReloadTenants(); !s.ok()) {
      spdlog::error("SIGHUP: keeping the current tenants: {}", std::string(s.message()));
    }
  }
  spdlog::info("received {}, shutting down{}", sig == SIGINT ? "SIGINT" : "SIGTERM",
               admin_service.draining() ? " (drain)" : "");
  admin_service.Stop();  // a drain still waiting answers now
  device_health.reset();
  server->GetHealthCheckService()->SetServingStatus(false);
  // No new local connections or requests; a request running finishes (or
  // is cancelled below, like a gRPC call).
  for (auto& c : commands) c->Stop();

  // Calls in flight, over gRPC and over the command sockets alike, get
  // kShutdownGrace to finish. If one is still waiting on device work then
  // (a long kernel under Synchronize), cancel all sessions' work so it
  // returns (CANCELLED, to either kind of client) and the server can stop.
  const absl::Time deadline = absl::Now() + absl::FromChrono(kShutdownGrace);
  absl::Notification stopped;
  std::thread watchdog([&] {
    if (!stopped.WaitForNotificationWithDeadline(deadline)) {
      spdlog::warn("calls still running after {}s; cancelling all work",
                   kShutdownGrace.count());
      (*state)->sessions().CloseAll();
    }
  });
  server->Shutdown(absl::ToChronoTime(deadline + kAfterCancelWait));
  server->Wait();
  bool local_done = true;
  for (auto& c : commands) local_done = c->AwaitRequests(deadline) && local_done;
  if (local_done) stopped.Notify();  // else the watchdog cancels at the deadline
  watchdog.join();
  // Requests cancelled just now send their replies before the sockets go.
  for (auto& c : commands) (void)c->AwaitRequests(absl::Now() + kAfterCancelWait);
  server.reset();
  metrics_server.reset();
  shares.clear();  // they answer from the sessions
  (*state)->sessions().CloseAll();
  commands.clear();  // their threads' waits ended with the sessions' work
  // Durable persistent arrays keep what the sessions last wrote.
  if (absl::Status s = (*state)->persistent().SaveAll(); !s.ok()) {
    spdlog::error("saving persistent arrays: {}", std::string(s.message()));
  }
  state->reset();
  logins.clear();
  for (const auto& p : unix_paths) RemoveUnixSocket(p);
  if (!file_token.empty()) RemoveTokenFile(flags.token_file, file_token);
  FlushLogSummaries();  // what the per-tenant log limit held back
  spdlog::info("warpd stopped");
  return 0;
}

}  // namespace
}  // namespace warpd::server

#if defined(__SANITIZE_ADDRESS__)
#define WARPD_ASAN 1
#elif defined(__has_feature)
#define WARPD_ASAN __has_feature(address_sanitizer)
#else
#define WARPD_ASAN 0
#endif

int main(int argc, char** argv) {
  using namespace warpd::server;
  // Signals are taken with sigwait: block them before any thread starts so
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  warpd::runtime::StopBlasThreads();  // started at load, before the mask
  signal(SIGPIPE, SIG_IGN);
  TuneMalloc();
#if !WARPD_ASAN
  // Debian's absl checks the lock order on every Mutex acquisition (its
  // deadlock detector, a graph update per lock). The unit tests and the
  // sanitized daemon of the test suite keep the check; a release daemon
  // does not pay for it on every launch.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif

  absl::StatusOr<Flags> flags =
      ParseFlags(std::vector<std::string>(argv + 1, argv + argc), FlagEnvironment::Process());
  if (!flags.ok()) {
    std::fprintf(stderr, "warpd: %s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(UsageText().c_str(), stdout);
    return 0;
  }
  if (flags->new_token) {
    absl::StatusOr<std::string> token = NewToken();
    if (!token.ok()) {
      std::fprintf(stderr, "warpd: %s\n", std::string(token.status().message()).c_str());
      return 1;
    }
    std::printf("token:  %s\nsha256: %s\n", token->c_str(), warpd::HexSha256(*token).c_str());
    return 0;
  }
  if (flags->print_config) {
    absl::StatusOr<std::string> text = EffectiveConfig(*flags);
    if (!text.ok()) {
      std::fprintf(stderr, "warpd: %s\n", std::string(text.status().message()).c_str());
      return 2;
    }
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("warpd %s\n", kVersion);
    return 0;
  }
  SetUpLogging(flags->log_level);
  // One reference to the gRPC library for the whole process: without it the
  // last gRPC object destroyed at the end of Serve runs the library's
  // shutdown there, which joins gRPC's executor thread and can sit out a
  // pending ~10 s poll timeout (seen in tests) before the daemon exits.
  grpc_init();
  const int code = Serve(*flags, signals);
  // Everything the daemon owns is released by now. What is left is
  // gRPC's library shutdown in static destructors, which joins its
  // executor thread and can sit out a pending timer (~10 s seen on a loaded
  // machine) before the process ends: skip it. Sanitizer builds still check
  // for leaks first.
  spdlog::shutdown();
  std::fflush(nullptr);
#if WARPD_LEAK_CHECK
  __lsan_do_leak_check();
#endif
  std::_Exit(code);
}
