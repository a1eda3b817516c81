// warpd runtime: a module (PTX or CUBIN) loaded on one device (RAII).
//
//   absl::StatusOr<CudaModule> m = CudaModule::Load(ctx, ptx);   // NVRTC's output
//   absl::StatusOr<CUfunction> f = m->Function("wpk_saxpy_cuda");
//
// cuModuleLoadDataEx with the JIT's error and info log buffers (16 KiB
// each): PTX is compiled by the driver for the device, a CUBIN (an ELF
// image) is loaded as is. When loading fails, the Status is the driver's
// error (CUDA_ERROR_INVALID_PTX, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
// CUDA_ERROR_NO_BINARY_FOR_GPU, ...) with the JIT's error log appended,
// which says where and why ("ptxas application ptx input, line 12; error :
// ..."); the info log of a successful load is kept (info_log). PTX need not
// be NUL-terminated here (a terminated copy is made when it is not).
// Every call fails fast once the context is poisoned.
//
// Ownership: move-only; holds a ContextUser (the CudaContext outlives it and
// is not reset while it exists). Its functions are valid while it lives;
// destroying it unloads the module (cuModuleUnload; nothing on a poisoned
// context). Unloading a module while launches of its functions are still
// queued is undefined in the driver, so its owner first synchronizes the
// streams (or events after the launches) that used it; graphs that captured
// its launches must go first too.
// Thread-safety: Function may be called from any thread; moving or
// destroying must not race with it.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class CudaModule {
 public:
  // The size of each JIT log buffer.
  static constexpr size_t kLogBytes = 16 * 1024;

  // Loads `image` (PTX text or an ELF CUBIN) in `ctx`'s primary context.
  // INVALID_ARGUMENT for an empty image.
  static absl::StatusOr<CudaModule> Load(CudaContext& ctx, std::string_view image);

  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  ~CudaModule();

  // The kernel entry `name` (cuModuleGetFunction); NOT_FOUND naming it.
  absl::StatusOr<CUfunction> Function(std::string_view name) const;

  // What the JIT said while loading (may be empty).
  const std::string& info_log() const { return info_log_; }
  CUmodule get() const { return module_; }
  CudaContext& context() const { return *user_.context(); }

 private:
  CudaModule(ContextUser user, CUmodule module, std::string info_log)
      : user_(std::move(user)), module_(module), info_log_(std::move(info_log)) {}
  void Unload();

  ContextUser user_;
  CUmodule module_ = nullptr;  // null once moved from
  std::string info_log_;
};

}  // namespace warpd::runtime::cuda
