#include "runtime/device/cuda/cuda_module.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace warpd::runtime::cuda {

namespace {

bool IsElf(std::string_view image) { return image.size() >= 4 && image.substr(0, 4) == "\x7f" "ELF"; }

// The text the driver wrote into a log buffer: at most `written` bytes (the
// size it reports, NUL included), and never past the buffer's NUL.
std::string LogText(const std::vector<char>& buffer, void* written) {
  size_t n = std::min(static_cast<size_t>(reinterpret_cast<uintptr_t>(written)), buffer.size());
  n = strnlen(buffer.data(), n);
  std::string text(buffer.data(), n);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

absl::StatusOr<CudaModule> CudaModule::Load(CudaContext& ctx, std::string_view image) {
  if (image.empty()) return absl::InvalidArgumentError("CudaModule::Load: an empty image");
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  // PTX must end in a NUL for the driver; a CUBIN carries its own size.
  std::string terminated;
  const void* data = image.data();
  if (!IsElf(image) && image.back() != '\0') {
    terminated.assign(image.data(), image.size());
    data = terminated.c_str();
  }
  std::vector<char> error_log(kLogBytes, '\0'), info_log(kLogBytes, '\0');
  CUjit_option options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes, kJitInfoLogBuffer,
                            kJitInfoLogBufferSizeBytes};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(uintptr_t{kLogBytes}), info_log.data(),
                    reinterpret_cast<void*>(uintptr_t{kLogBytes})};
  CUmodule module = nullptr;
  absl::Status s = ctx.Call("cuModuleLoadDataEx", [&] {
    return ctx.api().cuModuleLoadDataEx(&module, data, 4, options, values);
  });
  if (!s.ok()) {
    std::string log = LogText(error_log, values[1]);
    if (log.empty()) return s;
    return absl::Status(s.code(), absl::StrCat(s.message(), "; the JIT's error log:\n", log));
  }
  return CudaModule(*std::move(user), module, LogText(info_log, values[3]));
}

CudaModule::CudaModule(CudaModule&& other) noexcept
    : user_(std::move(other.user_)),
      module_(std::exchange(other.module_, nullptr)),
      info_log_(std::move(other.info_log_)) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  if (this != &other) {
    Unload();
    user_ = std::move(other.user_);
    module_ = std::exchange(other.module_, nullptr);
    info_log_ = std::move(other.info_log_);
  }
  return *this;
}

CudaModule::~CudaModule() { Unload(); }

void CudaModule::Unload() {
  CUmodule module = std::exchange(module_, nullptr);
  if (module == nullptr) return;
  CudaContext& ctx = context();
  if (!ctx.poisoned()) ctx.Call("cuModuleUnload", [&] { return ctx.api().cuModuleUnload(module); }).IgnoreError();
  user_.Reset();
}

absl::StatusOr<CUfunction> CudaModule::Function(std::string_view name) const {
  CudaContext& ctx = context();
  const std::string n(name);
  CUfunction f = nullptr;
  absl::Status s = ctx.Call(absl::StrCat("cuModuleGetFunction(\"", n, "\")"),
                            [&] { return ctx.api().cuModuleGetFunction(&f, module_, n.c_str()); });
  if (!s.ok()) return s;
  return f;
}

}  // namespace warpd::runtime::cuda
