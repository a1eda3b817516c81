#include "server/flags.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace warpd::server {
namespace {

FlagEnvironment FakeEnv(std::map<std::string, std::string> vars, unsigned uid = 1234) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return FlagEnvironment{[shared](const char* name) -> const char* {
                           auto it = shared->find(name);
                           return it == shared->end() ? nullptr : it->second.c_str();
                         },
                         uid};
}

TEST(FlagsTest, DefaultsFromXdg) {
  auto f = ParseFlags({}, FakeEnv({{"XDG_RUNTIME_DIR", "/run/user/1234"},
                                   {"XDG_CACHE_HOME", "/home/u/.xdgcache"},
                                   {"HOME", "/home/u"}}));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->listen, (std::vector<std::string>{"127.0.0.1:7788", "unix:/run/user/1234/warpd.sock"}));
  EXPECT_EQ(f->cache_dir, "/home/u/.xdgcache/warpd");
  EXPECT_EQ(f->log_level, "info");
  EXPECT_FALSE(f->allow_client_cache_dir);
  EXPECT_FALSE(f->verify_cuda);
  EXPECT_FALSE(f->cuda_execution);
  EXPECT_TRUE(f->compile_pch);
  EXPECT_EQ(f->max_array_bytes, uint64_t{16} << 30);
}

TEST(FlagsTest, DefaultsWithoutXdg) {
  auto f = ParseFlags({}, FakeEnv({{"HOME", "/home/u"}}, 42));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->listen[1], "unix:/tmp/warpd-42.sock");
  EXPECT_EQ(f->cache_dir, "/home/u/.cache/warpd");
}

TEST(FlagsTest, ExplicitValuesBothSpellings) {
  auto f = ParseFlags({"--listen", "unix:/tmp/a.sock", "--listen=127.0.0.1:0", "--cache-dir=/c",
                       "--log-level", "DEBUG", "--allow-client-cache-dir", "--verify-cuda",
                       "--cuda-execution", "--max-array-bytes", "64M", "--cpu-threads=3", "--no-compile-pch"},
                      FakeEnv({}));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->listen, (std::vector<std::string>{"unix:/tmp/a.sock", "127.0.0.1:0"}));
  EXPECT_EQ(f->cache_dir, "/c");
  EXPECT_EQ(f->log_level, "debug");
  EXPECT_TRUE(f->allow_client_cache_dir);
  EXPECT_TRUE(f->verify_cuda);
  EXPECT_TRUE(f->cuda_execution);
  EXPECT_EQ(f->max_array_bytes, uint64_t{64} << 20);
  EXPECT_EQ(f->cpu_threads, 3);
  EXPECT_FALSE(f->compile_pch);
}

TEST(FlagsTest, VersionAndHelp) {
  EXPECT_TRUE(ParseFlags({"--version"}, FakeEnv({}))->version);
  EXPECT_TRUE(ParseFlags({"--help"}, FakeEnv({}))->help);
  EXPECT_TRUE(ParseFlags({"-h"}, FakeEnv({}))->help);
  EXPECT_NE(UsageText().find("--allow-client-cache-dir"), std::string::npos);
}

TEST(FlagsTest, Errors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--bogus"}, "unknown flag '--bogus' (see --help)"},
      {{"--listen"}, "--listen needs a value (see --help)"},
      {{"--listen", "nohost"}, "--listen 'nohost': expected HOST:PORT (127.0.0.1:7788) or unix:/path"},
      {{"--listen", "127.0.0.1:99999"}, "--listen '127.0.0.1:99999': port must be a number in [0, 65535]"},
      {{"--listen", "127.0.0.1:-1"}, "--listen '127.0.0.1:-1': port must be a number in [0, 65535]"},
      {{"--listen", "unix:"}, "--listen unix: needs a path, e.g. unix:/tmp/warpd.sock"},
      {{"--log-level", "loud"},
       "--log-level 'loud': expected one of trace, debug, info, warn, error, critical, off"},
      {{"--verify-cuda=yes"}, "--verify-cuda takes no value"},
      {{"--no-compile-pch=1"}, "--no-compile-pch takes no value"},
      {{"--max-array-bytes", "12Q"}, "--max-array-bytes: bad byte size '12Q'"},
      {{"--max-array-bytes", "99999999999T"}, "--max-array-bytes: byte size '99999999999T' is too large"},
      {{"--cache-dir="}, "--cache-dir must not be empty"},
      {{"--cpu-threads", "x"}, "--cpu-threads 'x': expected a number in [0, 4096]"},
  };
  for (const auto& c : cases) {
    auto f = ParseFlags(c.args, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << c.message;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.status().message(), c.message);
  }
}

TEST(FlagsTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("1024"), 1024u);
  EXPECT_EQ(*ParseByteSize("4k"), 4096u);
  EXPECT_EQ(*ParseByteSize("2GiB"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("1TB"), uint64_t{1} << 40);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("G").ok());
}

}  // namespace
}  // namespace warpd::server

namespace warpd::server {
namespace {

TEST(FlagsTest, KernelTimeout) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->kernel_timeout, absl::Seconds(300));
  EXPECT_EQ(ParseFlags({"--kernel-timeout", "2"}, FakeEnv({}))->kernel_timeout, absl::Seconds(2));
  EXPECT_EQ(ParseFlags({"--kernel-timeout=1.5"}, FakeEnv({}))->kernel_timeout, absl::Milliseconds(1500));
  EXPECT_EQ(ParseFlags({"--kernel-timeout", "250ms"}, FakeEnv({}))->kernel_timeout, absl::Milliseconds(250));
  EXPECT_EQ(ParseFlags({"--kernel-timeout", "0"}, FakeEnv({}))->kernel_timeout, absl::ZeroDuration());
  for (const char* bad : {"-1", "soon", "inf"}) {
    auto f = ParseFlags({"--kernel-timeout", bad}, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("--kernel-timeout"), std::string::npos);
  }
}

TEST(FlagsTest, CommandSpin) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->command_spin, absl::Microseconds(50));
  EXPECT_EQ(ParseFlags({"--command-spin", "200us"}, FakeEnv({}))->command_spin, absl::Microseconds(200));
  EXPECT_EQ(ParseFlags({"--command-spin", "0"}, FakeEnv({}))->command_spin, absl::ZeroDuration());
  for (const char* bad : {"-1us", "11ms", "1", "often"}) {
    auto f = ParseFlags({"--command-spin", bad}, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("--command-spin"), std::string::npos) << f.status();
  }
}

TEST(FlagsTest, ParentPid) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->parent_pid, 0);
  EXPECT_EQ(ParseFlags({"--parent-pid", "4242"}, FakeEnv({}))->parent_pid, 4242);
  for (const char* bad : {"0", "1", "-5", "x", "99999999999"}) {
    auto f = ParseFlags({"--parent-pid", bad}, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("--parent-pid"), std::string::npos);
  }
}

TEST(FlagsTest, TestCpuTargetComesFromTheEnvironmentOnly) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->test_cpu_target, "");
  EXPECT_EQ(ParseFlags({}, FakeEnv({{"WARPD_TEST_CPU_TARGET", "x86-64:+sse2"}}))->test_cpu_target,
            "x86-64:+sse2");
  EXPECT_FALSE(ParseFlags({"--test-cpu-target", "x"}, FakeEnv({})).ok());
}

TEST(FlagsTest, MaxMemory) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->max_memory_bytes, 0u);  // half of physical memory
  EXPECT_EQ(ParseFlags({"--max-memory", "8G"}, FakeEnv({}))->max_memory_bytes, uint64_t{8} << 30);
  for (const char* bad : {"0", "lots", "-1"}) {
    auto f = ParseFlags({"--max-memory", bad}, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("--max-memory"), std::string::npos);
  }
}

}  // namespace
}  // namespace warpd::server

namespace warpd::server {
namespace {

TEST(FlagsTest, MetricsBeyondLoopbackNeedsTheExplicitOptIn) {
  const std::string expected =
      "--metrics-listen 0.0.0.0:9788 is reachable beyond this machine, and the metrics endpoint has no TLS or "
      "authentication while its labels name every tenant with its sessions and usage: use a loopback address "
      "(127.0.0.1:9788), or add --metrics-insecure to serve it in the clear anyway";
  auto f = ParseFlags({"--metrics-listen", "0.0.0.0:9788"}, FakeEnv({}));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(), expected);
  // TLS for the gRPC listeners does not cover the metrics endpoint.
  f = ParseFlags({"--listen", "0.0.0.0:7788", "--tls-cert", "/etc/c.pem", "--tls-key", "/etc/k.pem",
                  "--metrics-listen=10.1.2.3:9788"},
                 FakeEnv({}));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message().substr(0, 42), "--metrics-listen 10.1.2.3:9788 is reachabl");
  // The operator's explicit choice, before or after the address.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--metrics-insecure", "--metrics-listen", "0.0.0.0:9788"},
           {"--metrics-listen=10.1.2.3:0", "--metrics-insecure"}}) {
    f = ParseFlags(args, FakeEnv({}));
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(f->metrics_insecure);
    EXPECT_EQ(f->metrics_listen, args[0] == "--metrics-insecure" ? "0.0.0.0:9788" : "10.1.2.3:0");
  }
  // Loopback needs no opt-in.
  for (const char* local : {"127.0.0.1:9788", "127.0.0.1:0", "localhost:9788"}) {
    f = ParseFlags({"--metrics-listen", local}, FakeEnv({}));
    ASSERT_TRUE(f.ok()) << local << ": " << f.status();
    EXPECT_EQ(f->metrics_listen, local);
    EXPECT_FALSE(f->metrics_insecure);
  }
  f = ParseFlags({"--metrics-insecure=yes"}, FakeEnv({}));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "--metrics-insecure takes no value");
  EXPECT_NE(UsageText().find("--metrics-insecure"), std::string::npos);
}

}  // namespace
}  // namespace warpd::server

namespace warpd::server {
namespace {

TEST(FlagsTest, CacheMax) {
  EXPECT_EQ(ParseFlags({}, FakeEnv({}))->cache_max_bytes, uint64_t{2} << 30);
  EXPECT_EQ(ParseFlags({"--cache-max", "64K"}, FakeEnv({}))->cache_max_bytes, uint64_t{64} << 10);
  EXPECT_EQ(ParseFlags({"--cache-max=10GiB"}, FakeEnv({}))->cache_max_bytes, uint64_t{10} << 30);
  EXPECT_EQ(ParseFlags({"--cache-max", "0"}, FakeEnv({}))->cache_max_bytes, 0u);  // no limit
  for (const char* bad : {"-1", "lots", "2Q", ""}) {
    auto f = ParseFlags({"--cache-max", bad}, FakeEnv({}));
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.status().message(),
              absl::StrCat("--cache-max '", bad, "': expected a size such as 2G or 512M (0: no limit)"));
  }
  EXPECT_NE(UsageText().find("--cache-max SIZE"), std::string::npos);
}

}  // namespace
}  // namespace warpd::server
