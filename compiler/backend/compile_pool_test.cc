#include "compiler/backend/compile_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/cpu_jit.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace warpd::compiler {
namespace {

CompilePool::Options Opts(int workers = 2, absl::Duration timeout = absl::Seconds(60)) {
  CompilePool::Options o;
  o.worker_path = WARPD_COMPILE_WORKER;
  o.workers = workers;
  o.timeout = timeout;
  return o;
}

const CpuTarget& Host() {
  static const CpuTarget t = SelectCpuTarget(DetectHostCpu());
  return t;
}

constexpr char kSmall[] = R"(
  #include "warpd/native/builtin.h"
  extern "C" float wp_pool_f(float x) { return wp::sqrt(x) * 2.0f; }
)";

// Enough code that clang -O2 takes well over a second here.
std::string SlowSource() {
  std::string s = "#include \"warpd/native/builtin.h\"\n";
  for (int i = 0; i < 3000; ++i) {
    s += absl::StrCat("extern \"C\" float slow", i, "(const float* x, int n) { float a = 0; ",
                      "for (int k = 0; k < n; ++k) a += wp::sin(x[k] * ", i, ".0f) * x[(k * 7) % n]; return a; }\n");
  }
  return s;
}

std::string ProcStatus(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (absl::StartsWith(line, key + ":")) return std::string(absl::StripAsciiWhitespace(line.substr(key.size() + 1)));
  return "";
}

TEST(CompilePoolTest, CompilesObjectsThatRun) {
  auto pool = CompilePool::Create(Opts());
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto obj = (*pool)->Compile(Host(), kSmall, "small", "a test module");
  ASSERT_TRUE(obj.ok()) << obj.status();
  auto jit = CpuJit::Create(Host());
  ASSERT_TRUE(jit.ok());
  auto mod = (*jit)->Load(*obj, "small");
  ASSERT_TRUE(mod.ok()) << mod.status();
  auto f = reinterpret_cast<float (*)(float)>(*(*mod)->Lookup("wp_pool_f"));
  EXPECT_EQ(f(16.0f), 8.0f);
}

TEST(CompilePoolTest, WorkersWithAndWithoutThePchMakeTheSameObject) {
  auto plain = CpuJit::Create(Host(), nullptr);
  ASSERT_TRUE(plain.ok());
  auto expected = (*plain)->CompileToObject(kSmall, "small");
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (bool pch : {true, false}) {
    CompilePool::Options o = Opts(1);
    o.precompiled_header = pch;
    o.pch_target = Host();  // built at start when pch
    auto pool = CompilePool::Create(o);
    ASSERT_TRUE(pool.ok()) << pool.status();
    auto obj = (*pool)->Compile(Host(), kSmall, "small", "a test module");
    ASSERT_TRUE(obj.ok()) << obj.status();
    EXPECT_TRUE(*obj == *expected) << "pch " << pch;
  }
}

TEST(CompilePoolTest, AWorkerThatCannotBuildThePchWarnsThroughTheDaemonAndStillCompiles) {
  // What the pool logs, captured.
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  absl::Cleanup restore_logger = [&] { spdlog::set_default_logger(previous); };
  // The worker's stderr is a regular file, which its RLIMIT_FSIZE 0 forbids
  // writing: a worker that logged there would die of SIGXFSZ.
  char path[] = "/tmp/warpd-pool-test-XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  const int saved_stderr = dup(2);
  dup2(file, 2);
  absl::Cleanup restore_stderr = [&] {
    dup2(saved_stderr, 2);
    close(saved_stderr);
    close(file);
  };

  CompilePool::Options o = Opts(1);
  o.pch_target = Host();
  o.pch_target->cpu = "no-such-cpu";  // clang refuses it: the worker warns
  auto pool = CompilePool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  const pid_t pid = (*pool)->WorkerPids().at(0);
  for (int i = 0; i < 2; ++i) {
    auto obj = (*pool)->Compile(Host(), kSmall, "small", "a test module");
    ASSERT_TRUE(obj.ok()) << obj.status();
    EXPECT_EQ(obj->substr(0, 4), "\x7f" "ELF");
  }
  EXPECT_EQ((*pool)->WorkerPids().at(0), pid);
  EXPECT_EQ(lseek(file, 0, SEEK_END), 0) << "the worker wrote to its stderr";
  std::string logged = absl::StrJoin(sink->last_formatted(), "");
  EXPECT_NE(logged.find(absl::StrCat("compile worker ", pid, ": precompiled header: none for no-such-cpu")),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("[warning]"), std::string::npos) << logged;
}

TEST(CompilePoolTest, ConcurrentCompilesShareTheWorkers) {
  auto pool = CompilePool::Create(Opts(2));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::vector<pid_t> before = (*pool)->WorkerPids();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      std::string src = absl::StrCat(kSmall, "extern \"C\" int wp_pool_id() { return ", t, "; }\n");
      if ((*pool)->Compile(Host(), src, "c", "a test module").ok()) ++ok;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, 6);
  EXPECT_EQ((*pool)->WorkerPids().size(), 2u);
  auto after = (*pool)->WorkerPids();
  std::sort(after.begin(), after.end());
  auto sorted_before = before;
  std::sort(sorted_before.begin(), sorted_before.end());
  EXPECT_EQ(after, sorted_before);  // reused, not restarted
}

TEST(CompilePoolTest, CompileErrorLeavesTheWorkerServing) {
  auto pool = CompilePool::Create(Opts(1));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const pid_t pid = (*pool)->WorkerPids().at(0);
  auto bad = (*pool)->Compile(Host(), "int f() { return undefined_thing; }", "bad", "a test module");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("undefined_thing"), std::string::npos) << bad.status();
  EXPECT_TRUE((*pool)->Compile(Host(), kSmall, "small", "a test module").ok());
  EXPECT_EQ((*pool)->WorkerPids().at(0), pid);
}

TEST(CompilePoolTest, OverrunningCompileIsStoppedAndTheWorkerReplaced) {
  // No compile with the embedded headers takes less than a millisecond.
  auto pool = CompilePool::Create(Opts(1, absl::Milliseconds(1)));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const pid_t pid = (*pool)->WorkerPids().at(0);
  auto r = (*pool)->Compile(Host(), kSmall, "small", "module 'm'");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_NE(r.status().message().find("module 'm'"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("compile time limit"), std::string::npos) << r.status();
  ASSERT_EQ((*pool)->WorkerPids().size(), 1u);
  EXPECT_NE((*pool)->WorkerPids().at(0), pid);
  EXPECT_NE(kill(pid, 0), 0) << "the overrunning worker is gone";
}

TEST(CompilePoolTest, WorkerKilledMidCompileIsAnErrorAndIsReplaced) {
  auto pool = CompilePool::Create(Opts(1));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const pid_t pid = (*pool)->WorkerPids().at(0);
  std::thread killer([pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(pid, SIGKILL);
  });
  auto r = (*pool)->Compile(Host(), SlowSource(), "slow", "module 'slow'");
  killer.join();
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
  EXPECT_NE(r.status().message().find("crashed compiling module 'slow'"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("signal 9"), std::string::npos) << r.status();
  // The replacement serves.
  EXPECT_TRUE((*pool)->Compile(Host(), kSmall, "small", "a test module").ok());
  EXPECT_NE((*pool)->WorkerPids().at(0), pid);
}

TEST(CompilePoolTest, WorkersKilledWhileIdleAreReplacedBeforeUse) {
  auto pool = CompilePool::Create(Opts(2));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::vector<pid_t> before = (*pool)->WorkerPids();
  for (pid_t pid : before) kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE((*pool)->Compile(Host(), kSmall, "small", "a test module").ok());
  const std::vector<pid_t> after = (*pool)->WorkerPids();
  ASSERT_EQ(after.size(), 2u);
  for (pid_t pid : after) EXPECT_EQ(std::count(before.begin(), before.end(), pid), 0) << pid;
}

TEST(CompilePoolTest, OutOfMemoryIsResourceExhausted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer needs unlimited address space, so workers run without RLIMIT_AS";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer needs unlimited address space, so workers run without RLIMIT_AS";
#endif
#endif
  CompilePool::Options o = Opts(1);
  o.memory_bytes = uint64_t{320} << 20;  // enough to start, not to compile 3000 functions
  auto pool = CompilePool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto r = (*pool)->Compile(Host(), SlowSource(), "slow", "module 'big'");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("compile memory limit"), std::string::npos) << r.status();
}

TEST(CompilePoolTest, WorkersAreConfined) {
  auto pool = CompilePool::Create(Opts(1));
  ASSERT_TRUE(pool.ok()) << pool.status();
  // Let the worker finish confining itself before looking.
  ASSERT_TRUE((*pool)->Compile(Host(), kSmall, "small", "a test module").ok());
  const pid_t pid = (*pool)->WorkerPids().at(0);
  EXPECT_EQ(ProcStatus(pid, "NoNewPrivs"), "1");
  EXPECT_EQ(ProcStatus(pid, "Seccomp"), "2");  // filter mode
  // Only stdin/stdout/stderr are open.
  int fds = 0;
  for (int fd = 0; fd < 64; ++fd)
    if (access(("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd)).c_str(), F_OK) == 0) ++fds;
  EXPECT_EQ(fds, 3);
}

TEST(CompilePoolTest, MissingWorkerBinaryIsFailedPrecondition) {
  CompilePool::Options o = Opts(1);
  o.worker_path = "/nonexistent/warpd-compile-worker";
  auto pool = CompilePool::Create(o);
  ASSERT_EQ(pool.status().code(), absl::StatusCode::kFailedPrecondition) << pool.status();
  EXPECT_NE(pool.status().message().find("/nonexistent/warpd-compile-worker"), std::string::npos);
}

}  // namespace
}  // namespace warpd::compiler
