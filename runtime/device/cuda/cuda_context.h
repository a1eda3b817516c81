// warpd runtime: one GPU's primary context as the CUDA device uses it:
// made current around each driver call, poisoned by a sticky error, reset
// once nothing uses it any more.
//
//   absl::StatusOr<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(driver, 0);
//   absl::StatusOr<ContextUser> user = (*ctx)->AddUser();  // a stream, pool, module, ... holds one
//   absl::Status s = (*ctx)->Call("cuStreamSynchronize", [&] { return api.cuStreamSynchronize(stream); });
//   ...
//   if ((*ctx)->poisoned() && (*ctx)->users() == 0) (*ctx)->Recover();
//
// Every operation of the CUDA building blocks (cuda_stream.h, cuda_event.h,
// cuda_memory_pool.h, cuda_module.h, cuda_launch.h, pinned_staging.h,
// cuda_graph.h) runs through Call: it fails fast once the context is
// poisoned, pushes the primary context current on the calling thread
// (cuCtxPushCurrent), makes the call, pops it again and maps the result
// with CudaError, naming the call and the device ("cuMemFreeAsync (cuda:0):
// ...").
//
// Poisoning. A sticky error (IsContextLost: an illegal address, a
// device-side assert, a launch failure, an uncorrectable ECC error, ...)
// leaves the driver's context unusable: every later call on it returns the
// same error until the primary context is reset. The first such result any
// call reports marks this object poisoned, and from then on every operation
// (Call, MakeCurrent, AddUser) fails with FAILED_PRECONDITION naming the
// device and that first error, without calling the driver. Destructors of
// the building blocks skip their driver calls on a poisoned context: the
// reset frees everything that was made in it.
//
// Recovery. Recover resets the primary context (cuDevicePrimaryCtxReset,
// then its reference is released and retained afresh) and clears the poison.
// It refuses (FAILED_PRECONDITION) while any user exists: every object made
// in the context holds a ContextUser, and their handles would dangle after
// the reset, so the device first fails its sessions and drops their streams,
// arrays, modules and graphs. A healthy context is left alone. A reset that
// fails leaves the context poisoned (Recover may be tried again).
//
// Ownership: the device owns its CudaContext; it must outlive every user
// (users() is 0 when it is destroyed), and the CudaDriver it came from must
// outlive it. Thread-safety: every method may be called from any thread.
// The CUcontext handle changes only in Recover, which runs with no users, so
// users may read it without further locking; MakeCurrent and Call are for
// users (an object holding a ContextUser) only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda/driver_api.h"
#include "runtime/device/cuda/primary_context.h"

namespace warpd::runtime::cuda {

class CudaContext;

// One registered use of a context (RAII; move-only): counted by
// CudaContext::users until destroyed. A default-made one holds nothing.
class ContextUser {
 public:
  ContextUser() = default;
  ContextUser(ContextUser&& other) noexcept : context_(std::exchange(other.context_, nullptr)) {}
  ContextUser& operator=(ContextUser&& other) noexcept;
  ContextUser(const ContextUser&) = delete;
  ContextUser& operator=(const ContextUser&) = delete;
  ~ContextUser() { Reset(); }

  // Stops counting (the handle then holds nothing).
  void Reset();
  CudaContext* context() const { return context_; }

 private:
  friend class CudaContext;
  explicit ContextUser(CudaContext* context) : context_(context) {}

  CudaContext* context_ = nullptr;
};

// The context current on this thread for a scope: pushed when made, popped
// when destroyed (RAII; move-only). Made by CudaContext::MakeCurrent.
class ScopedCurrent {
 public:
  ScopedCurrent(ScopedCurrent&& other) noexcept : api_(std::exchange(other.api_, nullptr)) {}
  ScopedCurrent& operator=(ScopedCurrent&&) = delete;
  ScopedCurrent(const ScopedCurrent&) = delete;
  ScopedCurrent& operator=(const ScopedCurrent&) = delete;
  ~ScopedCurrent();

 private:
  friend class CudaContext;
  explicit ScopedCurrent(const DriverApi* api) : api_(api) {}

  const DriverApi* api_ = nullptr;  // null once moved from
};

class CudaContext {
 public:
  // Retains cuda:`ordinal`'s primary context (CudaDriver::RetainPrimaryContext's
  // errors).
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(const CudaDriver& driver, int ordinal);

  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  ~CudaContext() = default;

  const DriverApi& api() const { return *api_; }
  int ordinal() const { return ordinal_; }
  // "cuda:0"
  const std::string& name() const { return name_; }

  // OK, or FAILED_PRECONDITION naming the device and the first sticky
  // error once poisoned.
  absl::Status Usable() const ABSL_LOCKS_EXCLUDED(mu_);
  bool poisoned() const ABSL_LOCKS_EXCLUDED(mu_);

  // CudaError for `result` of `call` on this device ("<call> (cuda:N): ...");
  // a sticky result poisons the context.
  absl::Status Check(CUresult result, std::string_view call) ABSL_LOCKS_EXCLUDED(mu_);
  // Poisons the context for a reason the driver did not report (a kernel
  // that does not stop when cancelled holds the GPU): as a sticky error.
  void MarkLost(std::string_view why) ABSL_LOCKS_EXCLUDED(mu_);

  // Registers a user; FAILED_PRECONDITION (Usable's) when poisoned.
  absl::StatusOr<ContextUser> AddUser() ABSL_LOCKS_EXCLUDED(mu_);
  // The users registered now.
  int users() const ABSL_LOCKS_EXCLUDED(mu_);

  // The context current on this thread until the result goes: Usable's
  // error when poisoned, cuCtxPushCurrent's as CudaError.
  absl::StatusOr<ScopedCurrent> MakeCurrent() ABSL_LOCKS_EXCLUDED(mu_);

  // One driver call: `fn` (returning its CUresult) runs with the context
  // current, its result checked as `call`.
  template <typename Fn>
  absl::Status Call(std::string_view call, Fn&& fn) {
    absl::StatusOr<ScopedCurrent> current = MakeCurrent();
    if (!current.ok()) return current.status();
    return Check(std::forward<Fn>(fn)(), call);
  }

  // Resets a poisoned primary context once it has no users (see above).
  // OK and nothing done for a healthy one.
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);
  // How many times Recover reset the context.
  int resets() const ABSL_LOCKS_EXCLUDED(mu_);

  // The primary context's handle (changes only in Recover).
  CUcontext handle() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class ContextUser;
  CudaContext(const CudaDriver& driver, int ordinal, PrimaryContext primary);
  absl::Status PoisonedStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveUser() ABSL_LOCKS_EXCLUDED(mu_);

  const CudaDriver* const driver_;
  const DriverApi* const api_;
  const int ordinal_;
  const std::string name_;

  mutable absl::Mutex mu_;
  PrimaryContext primary_ ABSL_GUARDED_BY(mu_);
  int users_ ABSL_GUARDED_BY(mu_) = 0;
  bool poisoned_ ABSL_GUARDED_BY(mu_) = false;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
  int resets_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::runtime::cuda
