#include "compiler/backend/compile_pool.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log_text.h"
#include "common/posix_error.h"
#include "compiler/backend/compile_protocol.h"
#include "compiler/backend/compile_worker.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace warpd::compiler {

absl::StatusOr<std::unique_ptr<CompilePool>> CompilePool::Create(const Options& options) {
  std::unique_ptr<CompilePool> pool(new CompilePool(options));
  if (options.workers < 1) return absl::InvalidArgumentError("a compile pool needs at least one worker");
  for (int i = 0; i < options.workers; ++i) {
    absl::StatusOr<Worker> w = pool->Spawn();
    if (!w.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot start the compile worker '", options.worker_path, "': ", w.status().message()));
    }
    absl::MutexLock lock(&pool->mu_);
    pool->idle_.push_back(*w);
    ++pool->live_;
  }
  return pool;
}

CompilePool::~CompilePool() {
  absl::MutexLock lock(&mu_);
  for (Worker& w : idle_) {
    int code = 0;
    Reap(w, /*kill=*/false, &code);  // closing its socket makes it exit
  }
  // Busy workers belong to compiles still running, which must not outlive
  // the pool; kill them so nothing is left behind if one does.
  for (pid_t pid : busy_) ::kill(pid, SIGKILL);
}

absl::StatusOr<CompilePool::Worker> CompilePool::Spawn() const {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return PosixError("socketpair", errno);
  absl::Cleanup close_child_end = [&] { close(sv[1]); };
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  absl::Cleanup destroy = [&] { posix_spawn_file_actions_destroy(&actions); };
  // The worker's fds 0 and 1 are its end of the socket (dup2 clears
  // close-on-exec); stderr stays the daemon's, for LLVM's fatal messages.
  posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
  // The worker sends what it logs at the daemon's level with its replies.
  const auto level = spdlog::level::to_string_view(spdlog::get_level());
  std::vector<std::string> args = {options_.worker_path, "--memory-bytes", std::to_string(options_.memory_bytes),
                                   "--log-level", std::string(level.data(), level.size())};
  if (!options_.precompiled_header) {
    args.push_back("--no-pch");
  } else if (options_.pch_target) {
    args.insert(args.end(), {"--pch-triple", options_.pch_target->triple, "--pch-cpu", options_.pch_target->cpu,
                             "--pch-features", absl::StrJoin(options_.pch_target->features, ",")});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, options_.worker_path.c_str(), &actions, nullptr, argv.data(), environ);
  if (err != 0) {
    close(sv[0]);
    return PosixError(absl::StrCat("spawning ", options_.worker_path), err);
  }
  return Worker{pid, sv[0]};
}

std::string CompilePool::Reap(Worker& w, bool kill, int* exit_code) const {
  if (kill) ::kill(w.pid, SIGKILL);
  close(w.fd);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(w.pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  *exit_code = -1;
  if (r < 0) return "not found";
  if (WIFEXITED(status)) {
    *exit_code = WEXITSTATUS(status);
    return absl::StrCat("exit status ", *exit_code);
  }
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return "unknown status";
}

absl::StatusOr<CompilePool::Worker> CompilePool::Acquire() {
  ReplaceDeadIdleWorkers();
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !idle_.empty() || live_ < options_.workers; };
  mu_.Await(absl::Condition(&ready));
  if (!idle_.empty()) {
    Worker w = idle_.back();
    idle_.pop_back();
    busy_.push_back(w.pid);
    return w;
  }
  // A worker was lost and not replaced yet: start one for this compile.
  ++live_;
  mu_.Unlock();
  absl::StatusOr<Worker> w = Spawn();
  mu_.Lock();
  if (!w.ok()) {
    --live_;
    return absl::UnavailableError(absl::StrCat("no compile worker: ", w.status().message()));
  }
  busy_.push_back(w->pid);
  return w;
}

void CompilePool::ReplaceDeadIdleWorkers() {
  // An idle worker's socket is readable only when the worker is gone (it
  // writes nothing unasked): it crashed or was killed while idle.
  std::vector<Worker> dead;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < idle_.size();) {
      pollfd p{idle_[i].fd, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) {
        dead.push_back(idle_[i]);
        idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
        --live_;
      } else {
        ++i;
      }
    }
  }
  for (Worker& w : dead) {
    int code = 0;
    Reap(w, /*kill=*/true, &code);
    Replace();
  }
}

void CompilePool::Release(Worker w) {
  absl::MutexLock lock(&mu_);
  busy_.erase(std::find(busy_.begin(), busy_.end(), w.pid));
  idle_.push_back(w);
}

void CompilePool::Replace() {
  absl::StatusOr<Worker> w = Spawn();
  absl::MutexLock lock(&mu_);
  if (w.ok()) {
    idle_.push_back(*w);
    ++live_;
  }
  // Otherwise the next Acquire tries again and reports the error.
}

absl::StatusOr<std::string> CompilePool::Compile(const CpuTarget& target, std::string_view source,
                                                 std::string_view unit_name, std::string_view what_view) {
  const std::string what(what_view);
  const std::string request =
      EncodeCompileRequest(CompileRequest{target, std::string(unit_name), std::string(source)});
  // A worker that died while idle fails the write; the compile then gets one
  // more (fresh) worker.
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Worker> acquired = Acquire();
    if (!acquired.ok()) return acquired.status();
    Worker w = *acquired;
    auto lose = [&](bool kill, int* code) {
      std::string how = Reap(w, kill, code);
      {
        absl::MutexLock lock(&mu_);
        busy_.erase(std::find(busy_.begin(), busy_.end(), w.pid));
        --live_;
      }
      Replace();
      return how;
    };
    const absl::Time deadline = absl::Now() + options_.timeout;
    if (absl::Status s = WriteFrame(w.fd, request); !s.ok()) {
      int code = 0;
      std::string how = lose(/*kill=*/true, &code);
      if (attempt == 0) continue;
      return absl::InternalError(absl::StrCat("the compile worker for ", what, " failed (", how, "): ", s.message()));
    }
    absl::StatusOr<std::string> reply = ReadFrame(w.fd, kMaxCompileFrame, deadline);
    if (reply.ok()) {
      Release(w);
      std::vector<WorkerLog> logs;
      absl::StatusOr<std::string> object = DecodeCompileReply(*reply, &logs);
      for (const WorkerLog& log : logs)
        spdlog::log(static_cast<spdlog::level::level_enum>(log.level), "compile worker {}: {}", w.pid,
                    LogText(log.text, kLogStatusMax));  // a worker runs clang on client code: not trusted
      return object;
    }
    int code = 0;
    if (absl::IsDeadlineExceeded(reply.status())) {
      lose(/*kill=*/true, &code);
      return absl::DeadlineExceededError(absl::StrCat("compiling ", what, " took longer than the compile time limit of ",
                                                      absl::FormatDuration(options_.timeout),
                                                      " and was stopped (--compile-timeout)"));
    }
    std::string how = lose(/*kill=*/false, &code);
    if (code == kExitOutOfMemory) {
      return absl::ResourceExhaustedError(absl::StrCat("compiling ", what, " needed more than the compile memory limit of ",
                                                       options_.memory_bytes, " bytes (--compile-memory)"));
    }
    return absl::InternalError(absl::StrCat("the compiler crashed compiling ", what, " (", how, ")"));
  }
}

std::vector<pid_t> CompilePool::WorkerPids() const {
  absl::MutexLock lock(&mu_);
  std::vector<pid_t> out = busy_;
  for (const Worker& w : idle_) out.push_back(w.pid);
  return out;
}

}  // namespace warpd::compiler
