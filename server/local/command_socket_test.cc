#include "server/local/command_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace warpd::server {
namespace {

// Answers every request with "<kind>:<body>" ("sleep <ms>": after that
// long, with "<ms>"); HELLO "bad" is refused, HELLO "tenant <name>" speaks
// for that tenant, any other for tenant "t".
class Echo final : public CommandSocket::Handler {
 public:
  explicit Echo(std::string tenant) : tenant_(std::move(tenant)) {}
  CommandSocket::Reply Handle(CommandSocket::Kind kind, std::string_view body) override {
    if (body == "fail") return {absl::StatusCode::kNotFound, "no such thing"};
    absl::string_view rest(body.data(), body.size());
    int ms = 0;
    if (absl::ConsumePrefix(&rest, "sleep ") && absl::SimpleAtoi(rest, &ms)) {
      absl::SleepFor(absl::Milliseconds(ms));
      body = std::string_view(rest.data(), rest.size());
    }
    return {absl::StatusCode::kOk, absl::StrCat(static_cast<int>(kind), ":", absl::string_view(body.data(), body.size()))};
  }
  std::string_view tenant() const override { return tenant_; }

 private:
  const std::string tenant_;
};

CommandSocket::Open EchoOpen() {
  return [](std::string_view hello) -> absl::StatusOr<std::unique_ptr<CommandSocket::Handler>> {
    if (hello == "bad") return absl::PermissionDeniedError("go away");
    absl::string_view rest(hello.data(), hello.size());
    if (absl::ConsumePrefix(&rest, "tenant ")) return std::make_unique<Echo>(std::string(rest));
    return std::make_unique<Echo>("t");
  };
}

std::string Frame(uint8_t kind, std::string_view body, uint8_t pad = 0) {
  std::string f(CommandSocket::kHeaderBytes, '\0');
  const uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  f[4] = static_cast<char>(kind);
  f[5] = static_cast<char>(pad);
  return f + std::string(body);
}

class Client {
 public:
  explicit Client(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() { close(fd_); }
  bool connected() const { return connected_; }

  // False when the daemon already hung up (e.g. refused the connection).
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  // The next reply as (code, body); code -1 when the daemon hung up.
  std::pair<int, std::string> Reply() {
    unsigned char h[CommandSocket::kHeaderBytes];
    if (!ReadAll(h, sizeof(h))) return {-1, ""};
    const uint32_t n = h[0] | h[1] << 8 | h[2] << 16 | uint32_t{h[3]} << 24;
    std::string body(n, '\0');
    if (n > 0 && !ReadAll(body.data(), n)) return {-1, ""};
    return {h[4], body};
  }

  // True when the daemon closed the connection (nothing more to read).
  bool HungUp() {
    char c;
    return recv(fd_, &c, 1, 0) == 0;
  }

  bool Hello(std::string_view body = "tokens") {
    return Send(Frame(CommandSocket::kHello, body)) && Reply().first == 0;
  }

 private:
  bool ReadAll(void* p, size_t n) {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = recv(fd_, static_cast<char*>(p) + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  int fd_;
  bool connected_ = false;
};

// Every test runs twice: with connection threads that sleep at once, and
// with threads that poll for the next frame (2 ms, longer than most gaps
// between a test's frames), so the polling reads see the same frames,
// hang-ups and garbage.
class CommandSocketTest : public ::testing::TestWithParam<absl::Duration> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/warpd-cmd-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/warpd.sock.cmd";
    auto s = CommandSocket::Start(path_, 0600, static_cast<gid_t>(-1), EchoOpen(), GetParam());
    ASSERT_TRUE(s.ok()) << s.status();
    socket_ = *std::move(s);
  }
  void TearDown() override {
    socket_.reset();
    rmdir(dir_.c_str());
  }

  // A fresh connection still gets served (connections just closed may
  // hold their slots for a moment: their threads are still finishing).
  void ExpectServing() {
    for (int attempt = 0; attempt < 100; ++attempt) {
      Client c(path_);
      if (!c.Hello()) {
        usleep(20000);
        continue;
      }
      ASSERT_TRUE(c.Send(Frame(CommandSocket::kSubmit, "ok?")));
      EXPECT_EQ(c.Reply(), std::make_pair(0, std::string("2:ok?")));
      return;
    }
    ADD_FAILURE() << "the socket no longer serves";
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<CommandSocket> socket_;
};

TEST_P(CommandSocketTest, RepliesInOrderToPipelinedFrames) {
  Client c(path_);
  ASSERT_TRUE(c.Hello());
  ASSERT_TRUE(c.Send(Frame(CommandSocket::kSubmit, "a") + Frame(CommandSocket::kSynchronize, "") +
         Frame(CommandSocket::kSubmit, "fail") + Frame(CommandSocket::kSubmit, std::string(100000, 'x'))));
  EXPECT_EQ(c.Reply(), std::make_pair(0, std::string("2:a")));
  EXPECT_EQ(c.Reply(), std::make_pair(0, std::string("3:")));
  // A failed request leaves the connection open.
  EXPECT_EQ(c.Reply(), std::make_pair(static_cast<int>(absl::StatusCode::kNotFound), std::string("no such thing")));
  EXPECT_EQ(c.Reply(), std::make_pair(0, "2:" + std::string(100000, 'x')));
  EXPECT_EQ(socket_->connections(), 1);
}

TEST_P(CommandSocketTest, ARefusedHelloIsTheLastReply) {
  Client c(path_);
  ASSERT_TRUE(c.Send(Frame(CommandSocket::kHello, "bad") + Frame(CommandSocket::kSubmit, "a")));
  EXPECT_EQ(c.Reply(), std::make_pair(static_cast<int>(absl::StatusCode::kPermissionDenied), std::string("go away")));
  EXPECT_TRUE(c.HungUp());
  ExpectServing();
}

TEST_P(CommandSocketTest, TheFirstFrameMustBeHello) {
  Client c(path_);
  ASSERT_TRUE(c.Send(Frame(CommandSocket::kSubmit, "a")));
  auto [code, message] = c.Reply();
  EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(message.find("HELLO"), std::string::npos) << message;
  EXPECT_TRUE(c.HungUp());
}

TEST_P(CommandSocketTest, MalformedFramesGetAnErrorAndAHangUp) {
  const std::string too_long = [] {
    std::string f = Frame(CommandSocket::kSubmit, "");
    const uint32_t n = CommandSocket::kMaxFrame + 1;
    for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f;
  }();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Frame(CommandSocket::kSubmit, "x", /*pad=*/1), "padding"},
      {too_long, "at most"},
      {Frame(9, "x"), "unknown frame kind 9"},
      {Frame(CommandSocket::kHello, "again"), "unknown frame kind 1"},
  };
  for (const auto& [frame, expect] : cases) {
    Client c(path_);
    ASSERT_TRUE(c.Hello());
    ASSERT_TRUE(c.Send(frame));
    auto [code, message] = c.Reply();
    EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kInvalidArgument)) << expect;
    EXPECT_NE(message.find(expect), std::string::npos) << message;
    EXPECT_TRUE(c.HungUp()) << expect;
  }
  ExpectServing();
}

TEST_P(CommandSocketTest, APeerThatHangsUpInsideAFrameEndsOnlyItsConnection) {
  {
    Client c(path_);
    ASSERT_TRUE(c.Hello());
    std::string f = Frame(CommandSocket::kSubmit, std::string(1000, 'y'));
    ASSERT_TRUE(c.Send(f.substr(0, 500)));
  }
  ExpectServing();
}

TEST_P(CommandSocketTest, ASilentPeerIsDroppedAtTheHelloDeadline) {
  Client c(path_);
  const auto start = std::chrono::steady_clock::now();
  auto [code, message] = c.Reply();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kDeadlineExceeded)) << message;
  EXPECT_GE(waited, 1.5);
  EXPECT_LT(waited, 8.0);
  EXPECT_TRUE(c.HungUp());
}

TEST_P(CommandSocketTest, ATenantsConnectionsDoNotLockOutAnotherTenantOfTheSameUid) {
  // Every client here has this process's uid. Tenant a takes all one uid
  // may hold within a tenant.
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < CommandSocket::kMaxConnectionsPerTenantUid; ++i) {
    held.push_back(std::make_unique<Client>(path_));
    ASSERT_TRUE(held.back()->Hello("tenant a")) << i;
  }
  {
    Client extra(path_);
    ASSERT_TRUE(extra.Send(Frame(CommandSocket::kHello, "tenant a")));
    auto [code, message] = extra.Reply();
    EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kResourceExhausted)) << message;
    EXPECT_EQ(message, absl::StrCat("too many command connections for tenant 'a' from uid ", getuid(), ": ",
                                    CommandSocket::kMaxConnectionsPerTenantUid,
                                    " are open, the most one uid may hold within a tenant (",
                                    CommandSocket::kMaxConnectionsPerTenant, " per tenant, ",
                                    CommandSocket::kMaxConnectionsPerTenantUid, " per uid within it); use gRPC"));
    EXPECT_TRUE(extra.HungUp());
  }
  // Tenant b, same uid, is served; so is a again once a slot is free.
  Client b(path_);
  ASSERT_TRUE(b.Hello("tenant b"));
  ASSERT_TRUE(b.Send(Frame(CommandSocket::kSubmit, "b")));
  EXPECT_EQ(b.Reply(), std::make_pair(0, std::string("2:b")));
  held.pop_back();
  for (int attempt = 0;; ++attempt) {  // the freed slot goes when its thread ends
    Client again(path_);
    if (again.Hello("tenant a")) break;
    ASSERT_LT(attempt, 100) << "tenant a never got its slot back";
    usleep(20000);
  }
}

TEST_P(CommandSocketTest, AUidHoldsFewConnectionsBeforeHello) {
  std::vector<std::unique_ptr<Client>> silent;
  for (int i = 0; i < CommandSocket::kMaxPendingPerUid; ++i) silent.push_back(std::make_unique<Client>(path_));
  // Accepted in order: wait until the socket holds them all.
  for (int i = 0; i < 200 && socket_->connections() < CommandSocket::kMaxPendingPerUid; ++i) usleep(5000);
  ASSERT_EQ(socket_->connections(), CommandSocket::kMaxPendingPerUid);
  {
    Client extra(path_);
    auto [code, message] = extra.Reply();
    EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kResourceExhausted)) << message;
    EXPECT_EQ(message, absl::StrCat("too many command connections from uid ", getuid(),
                                    " that have not authenticated yet: ", CommandSocket::kMaxPendingPerUid,
                                    ", the most one uid may have; use gRPC"));
  }
  // Once they say HELLO their slots are their tenant's, and new
  // connections of the uid are let in again.
  for (auto& c : silent) ASSERT_TRUE(c->Hello());
  Client next(path_);
  ASSERT_TRUE(next.Hello());
}

TEST_P(CommandSocketTest, StopHangsUpIdleConnectionsAndLetsARequestInFlightFinish) {
  Client idle(path_);
  Client busy(path_);
  ASSERT_TRUE(idle.Hello());
  ASSERT_TRUE(busy.Hello());
  ASSERT_TRUE(busy.Send(Frame(CommandSocket::kSubmit, "sleep 400")));
  for (int i = 0; i < 200 && socket_->requests_in_flight() == 0; ++i) usleep(1000);
  ASSERT_EQ(socket_->requests_in_flight(), 1);
  const auto start = std::chrono::steady_clock::now();
  socket_->Stop();
  EXPECT_TRUE(idle.HungUp());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  // The request in flight is answered, and that is the connection's last reply.
  EXPECT_TRUE(socket_->AwaitRequests(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(busy.Reply(), std::make_pair(0, std::string("2:400")));
  EXPECT_TRUE(busy.HungUp());
  EXPECT_EQ(socket_->requests_in_flight(), 0);
  socket_.reset();  // joins the connections' threads
}

TEST_P(CommandSocketTest, AwaitRequestsGivesUpAtItsDeadline) {
  Client busy(path_);
  ASSERT_TRUE(busy.Hello());
  ASSERT_TRUE(busy.Send(Frame(CommandSocket::kSubmit, "sleep 1000")));
  for (int i = 0; i < 200 && socket_->requests_in_flight() == 0; ++i) usleep(1000);
  ASSERT_EQ(socket_->requests_in_flight(), 1);
  socket_->Stop();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(socket_->AwaitRequests(absl::Now() + absl::Milliseconds(100)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(800));
  EXPECT_TRUE(socket_->AwaitRequests(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(busy.Reply(), std::make_pair(0, std::string("2:1000")));
}

TEST_P(CommandSocketTest, GarbageNeverStopsTheSocket) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 200; ++i) {
    Client c(path_);
    if (i % 2 == 0) c.Send(Frame(CommandSocket::kHello, "tokens"));
    std::string junk(rng() % 64, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    if (!junk.empty()) c.Send(junk);
  }
  ExpectServing();
}

INSTANTIATE_TEST_SUITE_P(SleepOrPoll, CommandSocketTest,
                         ::testing::Values(absl::ZeroDuration(), absl::Milliseconds(2)),
                         [](const ::testing::TestParamInfo<absl::Duration>& info) {
                           return info.param == absl::ZeroDuration() ? std::string("Sleeping")
                                                                     : std::string("Polling");
                         });

}  // namespace
}  // namespace warpd::server
