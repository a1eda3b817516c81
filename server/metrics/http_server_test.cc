#include "server/metrics/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/metrics/registry.h"

namespace warpd::server::metrics {
namespace {

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  return fd;
}

struct Response {
  std::string status_line;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Sends `request` as is and reads until the server closes the connection
// (it never keeps connections alive).
Response Send(int port, const std::string& request) {
  const int fd = Connect(port);
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) raw.append(buf, n);
  close(fd);
  Response response;
  const size_t end = raw.find("\r\n\r\n");
  EXPECT_NE(end, std::string::npos) << raw;
  if (end == std::string::npos) return response;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  response.status_line = lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    response.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  response.body = raw.substr(end + 4);
  return response;
}

Response Get(int port, const std::string& path, const std::string& method = "GET") {
  return Send(port, method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

TEST(MetricsHttpServerTest, ServesMetrics) {
  Registry registry;
  Counter& scrapes = registry.AddCounter("test_scrapes_total", "Scrapes.").Get();
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("127.0.0.1:0", [&] {
        scrapes.Increment();
        return registry.Render();
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_GT(port, 0);
  EXPECT_EQ((*server)->address(), "127.0.0.1:" + std::to_string(port));

  Response r = Get(port, "/metrics");
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers["content-length"], std::to_string(r.body.size()));
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);
  EXPECT_EQ(r.body,
            "# HELP test_scrapes_total Scrapes.\n"
            "# TYPE test_scrapes_total counter\n"
            "test_scrapes_total 1\n");
  // Rendered anew for each request; a query string does not matter.
  r = Get(port, "/metrics?name[]=x");
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_NE(r.body.find("test_scrapes_total 2\n"), std::string::npos) << r.body;
  // HTTP/1.0 clients get HTTP/1.0 replies.
  r = Send(port, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.status_line, "HTTP/1.0 200 OK");
  EXPECT_NE(r.body.find("test_scrapes_total 3\n"), std::string::npos) << r.body;
}

TEST(MetricsHttpServerTest, HealthzHeadNotFoundAndMethodNotAllowed) {
  int renders = 0;
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("localhost:0", [&] {
        ++renders;
        return std::string("body\n");
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_EQ((*server)->address(), "127.0.0.1:" + std::to_string(port));

  Response r = Get(port, "/healthz");
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(r.body, "ok\n");

  r = Get(port, "/metrics", "HEAD");
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers["content-length"], "5");
  EXPECT_EQ(r.body, "");

  // Nothing else is served: no files, no directory listings, no traversal.
  for (const char* path : {"/", "/metrics/", "/metricsx", "/favicon.ico", "/index.html",
                           "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/CMakeCache.txt"}) {
    r = Get(port, path);
    EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found") << path;
    EXPECT_EQ(r.body, "not found\n") << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
    for (const char* path : {"/metrics", "/healthz"}) {
      r = Get(port, path, method);
      EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed") << method << " " << path;
      EXPECT_EQ(r.headers["allow"], "GET, HEAD") << method;
      EXPECT_EQ(r.body, "method not allowed\n") << method;
    }
  }
  // Only the GET and HEAD of /metrics rendered.
  EXPECT_EQ(renders, 1);
}

TEST(MetricsHttpServerTest, RenderThatThrowsGives500) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server = MetricsHttpServer::Start(
      "127.0.0.1:0", []() -> std::string { throw std::runtime_error("no"); });
  ASSERT_TRUE(server.ok()) << server.status();
  Response r = Get((*server)->port(), "/metrics");
  EXPECT_EQ(r.status_line, "HTTP/1.1 500 Internal Server Error");
  // Still serving.
  EXPECT_EQ(Get((*server)->port(), "/healthz").body, "ok\n");
}

TEST(MetricsHttpServerTest, StopAndStartAgainOnTheSamePort) {
  int port = 0;
  {
    auto server = MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string("one\n"); });
    ASSERT_TRUE(server.ok()) << server.status();
    port = (*server)->port();
    EXPECT_EQ(Get(port, "/metrics").body, "one\n");
    // Stopping does not wait out civetweb's 2 s poll step.
    const auto start = std::chrono::steady_clock::now();
    server->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  }
  // Stopped: nothing listens any more.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  // The same port again at once (the closed connections' TIME_WAIT does not
  // stop a restarted daemon from listening).
  auto again = MetricsHttpServer::Start("127.0.0.1:" + std::to_string(port),
                                        [] { return std::string("two\n"); });
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->port(), port);
  EXPECT_EQ(Get(port, "/metrics").body, "two\n");
}

TEST(MetricsHttpServerTest, AllInterfaces) {
  auto server = MetricsHttpServer::Start("0.0.0.0:0", [] { return std::string("all\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->address(), "0.0.0.0:" + std::to_string((*server)->port()));
  EXPECT_EQ(Get((*server)->port(), "/metrics").body, "all\n");
  const auto start = std::chrono::steady_clock::now();
  server->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
}

TEST(MetricsHttpServerTest, AddressInUse) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto server = MetricsHttpServer::Start(listen, [] { return std::string(); });
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(server.status().message().find("cannot serve metrics on " + listen),
            std::string::npos)
      << server.status();
  EXPECT_NE(server.status().message().find("Address already in use"), std::string::npos)
      << server.status();
  close(fd);
}

TEST(MetricsHttpServerTest, ListenAddresses) {
  for (const char* ok : {"127.0.0.1:0", "127.0.0.1:9788", "localhost:9788", "0.0.0.0:65535",
                         "10.1.2.3:80"}) {
    EXPECT_TRUE(CheckMetricsListenAddress(ok).ok()) << ok;
  }
  for (const char* bad : {"", "9788", ":9788", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "127.0.0.1:080000",
                          "[::1]:9788", "::1:9788", "example.com:80", "unix:/tmp/m.sock",
                          "127.0.0.1:9788s", "127.0.0.1:80,127.0.0.1:81"}) {
    const absl::Status s = CheckMetricsListenAddress(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(MetricsHttpServer::Start(bad, [] { return std::string(); }).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(CheckMetricsListenAddress("nope").message(),
            "metrics listen address 'nope': expected IPV4:PORT or localhost:PORT "
            "(127.0.0.1:9788; port 0 picks a free one)");
}

TEST(MetricsHttpServerTest, ConcurrentScrapes) {
  std::atomic<int> renders{0};
  auto server = MetricsHttpServer::Start("127.0.0.1:0", [&] {
    ++renders;
    return std::string(100000, 'x');  // larger than a socket buffer
  });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        Response r = Get(port, "/metrics");
        if (r.status_line == "HTTP/1.1 200 OK" && r.body.size() == 100000) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 60);
  EXPECT_EQ(renders.load(), 60);
}

TEST(MetricsHttpServerTest, IdleConnectionsTimeOut) {
  auto server = MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string("m\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // Two connections that never send a request hold both workers, until the
  // request timeout (5 s) frees them; then a scrape gets through.
  const int idle1 = Connect(port);
  const int idle2 = Connect(port);
  const auto start = std::chrono::steady_clock::now();
  Response r = Get(port, "/metrics");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.body, "m\n");
  EXPECT_LT(waited, 9.0);
  // The idle connections were closed by the server.
  char c;
  EXPECT_EQ(read(idle1, &c, 1), 0);
  EXPECT_EQ(read(idle2, &c, 1), 0);
  close(idle1);
  close(idle2);
}

}  // namespace
}  // namespace warpd::server::metrics
