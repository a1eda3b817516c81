// warpd: the compute daemon. Parses flags, builds the shared state, serves
// warpd.v1.Runtime (plus health and reflection) until SIGTERM or SIGINT, then
// shuts down cleanly and exits 0.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/daemon_state.h"
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

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
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
    builder.AddListeningPort(flags.listen[i], grpc::InsecureServerCredentials(), &ports[i]);
  }
  builder.RegisterService(&service);
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
  server->GetHealthCheckService()->SetServingStatus(true);
  spdlog::info("warpd {} listening on {}", kVersion, absl::StrJoin(bound, ", "));
  spdlog::info("kernel cache: {}", (*state)->compiler()->cache_dir());

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server->GetHealthCheckService()->SetServingStatus(false);

  // Calls in flight get kShutdownGrace to finish. If one is still waiting on
  // device work then (a long kernel under Synchronize), cancel all sessions'
  // work so it returns and the server can stop.
  absl::Notification stopped;
  std::thread watchdog([&] {
    if (!stopped.WaitForNotificationWithTimeout(absl::FromChrono(kShutdownGrace))) {
      spdlog::warn("calls still running after {}s; cancelling all work",
                   kShutdownGrace.count());
      (*state)->sessions().CloseAll();
    }
  });
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->Wait();
  stopped.Notify();
  watchdog.join();
  server.reset();
  (*state)->sessions().CloseAll();
  state->reset();
  for (const auto& p : unix_paths) RemoveUnixSocket(p);
  spdlog::info("warpd stopped");
  return 0;
}

}  // namespace
}  // namespace warpd::server

int main(int argc, char** argv) {
  using namespace warpd::server;
  // Signals are taken with sigwait: block them before any thread starts so
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

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
  if (flags->version) {
    std::printf("warpd %s\n", kVersion);
    return 0;
  }
  SetUpLogging(flags->log_level);
  return Serve(*flags, signals);
}
