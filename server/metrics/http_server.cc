#include "server/metrics/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "civetweb.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace warpd::server::metrics {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextContentType[] = "text/plain; charset=utf-8";

struct HostPort {
  std::string host;  // an IPv4 literal
  int port = 0;
};

absl::StatusOr<HostPort> ParseListen(const std::string& listen) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics listen address '", listen,
        "': expected IPV4:PORT or localhost:PORT (127.0.0.1:9788; port 0 picks a free one)"));
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return invalid();
  HostPort result;
  result.host = listen.substr(0, colon);
  const std::string_view port = std::string_view(listen).substr(colon + 1);
  if (result.host == "localhost") result.host = "127.0.0.1";
  in_addr addr;
  if (inet_pton(AF_INET, result.host.c_str(), &addr) != 1) return invalid();
  if (port.empty() || port.size() > 5 || !std::isdigit(static_cast<unsigned char>(port[0]))) {
    return invalid();
  }
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), result.port);
  if (error != std::errc() || end != port.data() + port.size() || result.port > 65535) {
    return invalid();
  }
  return result;
}

// civetweb reports why mg_start failed through the log callback, on the
// thread that calls mg_start; Start collects those messages here.
thread_local std::string* start_messages = nullptr;

int LogMessage(const mg_connection*, const char* message) {
  if (start_messages != nullptr) {
    if (!start_messages->empty()) *start_messages += "; ";
    *start_messages += message;
  } else {
    spdlog::debug("metrics http: {}", LogText(message, kLogStatusMax));  // may quote a request
  }
  return 1;  // handled: civetweb writes nothing itself
}

int Reply(mg_connection* conn, int status, const char* content_type, std::string_view body,
          bool head, const char* allow = nullptr) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", content_type, -1);
  const std::string length = std::to_string(body.size());
  mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
  if (allow != nullptr) mg_response_header_add(conn, "Allow", allow, -1);
  mg_response_header_send(conn);
  if (!head) mg_write(conn, body.data(), body.size());
  return status;
}

// Opens and closes a TCP connection to `host:port`, waiting at most 100 ms
// for it to be accepted. Errors are ignored.
void Poke(const std::string& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    poll(&pfd, 1, 100);
  }
  close(fd);
}

}  // namespace

absl::Status CheckMetricsListenAddress(const std::string& listen) {
  return ParseListen(listen).status();
}

MetricsHttpServer::MetricsHttpServer(std::function<std::string()> render)
    : render_(std::move(render)) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  absl::StatusOr<HostPort> host_port = ParseListen(listen);
  if (!host_port.ok()) return host_port.status();
  // Once per process, never undone (civetweb's global state; no TLS).
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(render)));
  const std::string ports = absl::StrCat(host_port->host, ":", host_port->port);
  // Everything not named keeps civetweb's default; document_root stays unset,
  // so civetweb never serves or executes a file.
  const char* options[] = {
      "listening_ports", ports.c_str(),
      "num_threads", "2",
      "request_timeout_ms", "5000",
      "enable_keep_alive", "no",
      "max_request_size", "8192",
      "enable_directory_listing", "no",
      "access_control_allow_origin", "",
      nullptr,
  };
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = LogMessage;
  // begin_request sees every request first (before civetweb would look for
  // handlers or files) and answers them all, from the first one on.
  callbacks.begin_request = &MetricsHttpServer::HandleRequest;
  mg_init_data init_data{&callbacks, server.get(), options};
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};

  std::string messages;
  start_messages = &messages;
  server->context_ = mg_start2(&init_data, &error);
  start_messages = nullptr;
  if (server->context_ == nullptr) {
    std::string why = messages.empty() ? std::string(error_text) : messages;
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ",
                                               why.empty() ? "civetweb failed to start" : why));
  }
  mg_server_port bound[4];
  const int n = mg_get_server_ports(server->context_, 4, bound);
  if (n < 1) return absl::InternalError("metrics http: civetweb reports no listening port");
  server->port_ = bound[0].port;
  server->address_ = absl::StrCat(host_port->host, ":", server->port_);
  server->wake_host_ = host_port->host == "0.0.0.0" ? "127.0.0.1" : host_port->host;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_ == nullptr) return;
  // civetweb's accept loop polls its listening socket in 2 s steps and only
  // between them sees that mg_stop asked it to stop, so mg_stop would take up
  // to 2 s. A connection wakes the poll: connect to ourselves until it is done.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      Poke(wake_host_, port_);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  mg_stop(context_);
  stopped.store(true);
  waker.join();
}

int MetricsHttpServer::HandleRequest(mg_connection* conn) {
  const mg_request_info* request = mg_get_request_info(conn);
  auto* server = static_cast<MetricsHttpServer*>(request->user_data);
  const std::string_view method = request->request_method ? request->request_method : "";
  // local_uri: decoded, without the query string, "." and ".." resolved.
  const std::string_view path = request->local_uri ? request->local_uri : "";
  const bool head = method == "HEAD";
  if (path != "/metrics" && path != "/healthz") {
    return Reply(conn, 404, kTextContentType, "not found\n", head);
  }
  if (method != "GET" && !head) {
    return Reply(conn, 405, kTextContentType, "method not allowed\n", head, "GET, HEAD");
  }
  if (path == "/healthz") return Reply(conn, 200, kTextContentType, "ok\n", head);
  // No exception may cross civetweb's C frames.
  std::string body;
  try {
    body = server->render_();
  } catch (const std::exception& e) {
    spdlog::warn("metrics http: rendering /metrics failed: {}", e.what());
    return Reply(conn, 500, kTextContentType, "internal error\n", head);
  }
  return Reply(conn, 200, kMetricsContentType, body, head);
}

}  // namespace warpd::server::metrics
