// warpd server: the HTTP endpoint that Prometheus scrapes.
//
//   GET /metrics   200, "text/plain; version=0.0.4; charset=utf-8", render()
//   GET /healthz   200, "ok\n" (the HTTP server answers; the daemon's real
//                  health is grpc.health.v1)
//   HEAD           as GET, without the body
//   other paths    404;  other methods on those two paths: 405 (Allow: GET, HEAD)
//
// Built on civetweb (Debian's libcivetweb-dev) with everything that touches
// the file system left off: no document root (so no files, directory
// listings or CGI), no log files; one callback answers every request. Two
// worker threads, no keep-alive (a scraper cannot hold a worker between
// scrapes), 5 s to read a request and send the reply, requests of at most
// 8 KiB, no CORS headers (a web page cannot read the metrics cross-origin).
// civetweb's own messages go to spdlog at debug level (escaped and cut by
// LogText: they may quote a request). Plain HTTP: no TLS (Debian's civetweb
// 1.15 crashed in a TLS handshake against OpenSSL 3) and no authentication,
// so the daemon serves it beyond loopback only with --metrics-insecure
// (server/flags.h). Starting it sets SIGPIPE to ignored (the daemon does
// that anyway); it leaves SIGCHLD alone.
// Start it after blocking the signals the daemon takes with sigwait: its
// threads inherit the mask.
//
// Ownership: the server owns `render` and calls it on its worker threads, at
// most two at once, so it must be thread-safe; what it uses must outlive the
// server. The destructor stops accepting, waits for requests in flight and
// joins the threads; with no request in flight it returns within tens of
// milliseconds. Thread-safe: the accessors may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct mg_context;
struct mg_connection;

namespace warpd::server::metrics {

// OK for "HOST:PORT" where HOST is an IPv4 address (127.0.0.1, 0.0.0.0 for
// every interface) or "localhost", and PORT is in [0, 65535] (0: a free
// port, see MetricsHttpServer::port). INVALID_ARGUMENT naming the address
// otherwise (this civetweb build has no IPv6).
absl::Status CheckMetricsListenAddress(const std::string& listen);

class MetricsHttpServer {
 public:
  // Listens on `listen` (see CheckMetricsListenAddress) and serves until
  // destroyed. INVALID_ARGUMENT for a malformed address; UNAVAILABLE when it
  // cannot listen there (address in use, not an address of this host), with
  // civetweb's reason.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> render);

  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port bound (the one picked for port 0).
  int port() const { return port_; }
  // "127.0.0.1:9788", with the bound port.
  const std::string& address() const { return address_; }

 private:
  explicit MetricsHttpServer(std::function<std::string()> render);
  // civetweb's begin_request callback: answers every request.
  static int HandleRequest(mg_connection* conn);

  const std::function<std::string()> render_;
  mg_context* context_ = nullptr;
  int port_ = 0;
  std::string address_;
  std::string wake_host_;  // where the destructor connects to (see there)
};

}  // namespace warpd::server::metrics
