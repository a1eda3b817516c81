#include "compiler/backend/compile_worker.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <llvm/Support/ErrorHandling.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "compiler/backend/clang_compile.h"
#include "compiler/backend/compile_protocol.h"
#include "compiler/backend/native_pch.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WARPD_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WARPD_ASAN 1
#endif

namespace warpd::compiler {
namespace {

[[noreturn]] void OutOfMemory() {
  static const char kMsg[] = "warpd-compile-worker: out of memory\n";
  (void)!write(2, kMsg, sizeof(kMsg) - 1);
  _exit(kExitOutOfMemory);
}

absl::Status SetLimit(int resource, rlim_t value, const char* what) {
  rlimit r{value, value};
  if (setrlimit(resource, &r) != 0) return PosixError(absl::StrCat("setrlimit(", what, ")"), errno);
  return absl::OkStatus();
}

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

// System calls a compile worker never makes. Refused with EPERM rather than
// killing the worker, so a surprise shows up as an error, not a crash.
const std::vector<int>& DeniedSyscalls() {
  static const std::vector<int> calls = {
      SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
      SYS_execve, SYS_execveat, SYS_process_vm_readv, SYS_process_vm_writev, SYS_mount, SYS_umount2,
      SYS_pivot_root, SYS_chroot, SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid,
      SYS_setresgid, SYS_unshare, SYS_setns, SYS_init_module, SYS_finit_module, SYS_delete_module,
      SYS_kexec_load, SYS_bpf, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_personality, SYS_reboot,
      SYS_swapon, SYS_swapoff, SYS_perf_event_open, SYS_userfaultfd,
#if !defined(WARPD_ASAN)
      SYS_ptrace, SYS_kill, SYS_tkill,  // LeakSanitizer stops the world with these at exit
#endif
  };
  return calls;
}

absl::Status InstallSeccompFilter() {
#if defined(__x86_64__) || defined(__aarch64__)
  std::vector<sock_filter> prog;
  // Another architecture's system call numbers mean other calls: refuse them all.
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  for (int nr : DeniedSyscalls()) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) return PosixError("installing the seccomp filter", errno);
#endif
  return absl::OkStatus();
}

// Keeps what the worker logs until the next reply takes it.
class ReplyLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<WorkerLog> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(logs_, {});
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (logs_.size() >= kMaxWorkerLogs) return;
    logs_.push_back(WorkerLog{static_cast<int>(msg.level), std::string(msg.payload.data(), msg.payload.size())});
  }
  void flush_() override {}

 private:
  std::vector<WorkerLog> logs_;
};

}  // namespace

absl::Status ConfineCompileWorker(const WorkerLimits& limits) {
  // Descriptors the daemon may have leaked into the exec are not ours.
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return PosixError("PR_SET_NO_NEW_PRIVS", errno);
  if (absl::Status s = SetLimit(RLIMIT_CORE, 0, "RLIMIT_CORE"); !s.ok()) return s;
  if (absl::Status s = SetLimit(RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"); !s.ok()) return s;
  if (absl::Status s = SetLimit(RLIMIT_NOFILE, 16, "RLIMIT_NOFILE"); !s.ok()) return s;
#if !defined(WARPD_ASAN)
  if (limits.memory_bytes != 0) {
    if (absl::Status s = SetLimit(RLIMIT_AS, static_cast<rlim_t>(limits.memory_bytes), "RLIMIT_AS"); !s.ok())
      return s;
  }
#endif
  std::set_new_handler([] { OutOfMemory(); });
  llvm::install_bad_alloc_error_handler([](void*, const char*, bool) { OutOfMemory(); });
  return InstallSeccompFilter();
}

int ServeCompileRequests(int in_fd, int out_fd, const WorkerOptions& options) {
  auto sink = std::make_shared<ReplyLogSink>();
  auto logger = std::make_shared<spdlog::logger>("warpd-compile-worker", sink);
  logger->set_level(spdlog::level::from_str(options.log_level));
  spdlog::set_default_logger(std::move(logger));
  InitializeNativeLlvm();
  NativePchCache* pch = options.precompiled_header ? &NativePchCache::Shared() : nullptr;
  if (pch != nullptr && options.pch_target) (void)pch->Get(*options.pch_target);  // failure: logged, compiles parse
  for (;;) {
    absl::StatusOr<std::string> frame = ReadFrame(in_fd, kMaxCompileFrame, absl::InfiniteFuture());
    if (!frame.ok()) return absl::IsUnavailable(frame.status()) ? 0 : 1;
    absl::StatusOr<CompileRequest> request = DecodeCompileRequest(*frame);
    frame->clear();
    absl::StatusOr<std::string> object =
        request.ok() ? CompileCppToObject(request->target, request->source, request->unit_name, pch) : request.status();
    if (!WriteFrame(out_fd, EncodeCompileReply(object, sink->Take())).ok()) return 1;
  }
}

}  // namespace warpd::compiler
