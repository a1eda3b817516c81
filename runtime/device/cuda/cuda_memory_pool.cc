#include "runtime/device/cuda/cuda_memory_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::runtime::cuda {

namespace {

constexpr CUresult kCudaErrorNotSupported = 801;

CUmemPoolProps PoolProps(int ordinal, bool exportable) {
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof(props));
  props.allocType = kMemAllocationTypePinned;
  props.handleTypes = exportable ? kMemHandleTypePosixFd : 0;
  props.location.type = kMemLocationTypeDevice;
  props.location.id = ordinal;
  return props;
}

std::atomic<uint64_t> next_serial{1};

}  // namespace

CudaMemoryPool::CudaMemoryPool(ContextUser user, CUmemoryPool pool, bool exportable, std::shared_ptr<Usage> usage)
    : user_(std::move(user)),
      pool_(pool),
      exportable_(exportable),
      serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      usage_(std::move(usage)) {}

absl::StatusOr<std::unique_ptr<CudaMemoryPool>> CudaMemoryPool::Create(CudaContext& ctx, const Options& options,
                                                                       std::shared_ptr<Usage> usage,
                                                                       Export export_mode) {
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  CUmemoryPool pool = nullptr;
  bool exportable = export_mode != Export::kNo;
  CUmemPoolProps props = PoolProps(ctx.ordinal(), exportable);
  CUresult first = kCudaSuccess;
  absl::Status s = ctx.Call("cuMemPoolCreate", [&] {
    first = ctx.api().cuMemPoolCreate(&pool, &props);
    return first;
  });
  if (exportable && first == kCudaErrorNotSupported && export_mode == Export::kRequire) {
    return absl::UnimplementedError(absl::StrCat(ctx.name(), "'s driver cannot make exportable memory pools"));
  }
  if (exportable && first == kCudaErrorNotSupported) {
    // No IPC here: a pool for this process only.
    exportable = false;
    props = PoolProps(ctx.ordinal(), false);
    s = ctx.Call("cuMemPoolCreate", [&] { return ctx.api().cuMemPoolCreate(&pool, &props); });
  }
  if (!s.ok()) return s;
  if (usage == nullptr) usage = std::make_shared<Usage>(options.quota_bytes);
  std::unique_ptr<CudaMemoryPool> p(new CudaMemoryPool(*std::move(user), pool, exportable, std::move(usage)));
  if (absl::Status t = p->SetReleaseThreshold(options.release_threshold); !t.ok()) return t;
  return p;
}

CudaMemoryPool::~CudaMemoryPool() {
  CudaContext& ctx = context();
  if (!ctx.poisoned()) ctx.Call("cuMemPoolDestroy", [&] { return ctx.api().cuMemPoolDestroy(pool_); }).IgnoreError();
}

absl::StatusOr<CUdeviceptr> CudaMemoryPool::Allocate(uint64_t bytes, CudaStream& stream) {
  if (bytes == 0) return CUdeviceptr{0};
  CudaContext& ctx = context();
  if (&stream.context() != &ctx) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaMemoryPool::Allocate: a stream of ", stream.context().name(), " for ", ctx.name(), "'s pool"));
  }
  uint64_t in_use = 0;
  Usage& u = *usage_;
  {
    absl::MutexLock lock(&u.mu_);
    if (u.quota_ != 0 && (bytes > u.quota_ || u.in_use_ > u.quota_ - bytes)) {
      return absl::ResourceExhaustedError(absl::StrCat(ctx.name(), " memory quota exceeded: ", bytes,
                                                       " bytes requested with ", u.in_use_, " of ", u.quota_,
                                                       " bytes in use"));
    }
    // Counted before the call, so concurrent allocations cannot pass the
    // quota together.
    u.in_use_ += bytes;
    in_use = u.in_use_ - bytes;
  }
  CUdeviceptr ptr = 0;
  absl::Status s = ctx.Call("cuMemAllocFromPoolAsync", [&] {
    return ctx.api().cuMemAllocFromPoolAsync(&ptr, static_cast<size_t>(bytes), pool_, stream.get());
  });
  if (!s.ok()) {
    absl::MutexLock lock(&u.mu_);
    u.in_use_ -= bytes;
    if (s.code() == absl::StatusCode::kResourceExhausted) {
      return absl::ResourceExhaustedError(
          absl::StrCat(s.message(), ": allocating ", bytes, " bytes with ", in_use, " in use in ", ctx.name(), "'s pool"));
    }
    return s;
  }
  {
    absl::MutexLock lock(&u.mu_);
    u.peak_ = std::max(u.peak_, u.in_use_);
  }
  absl::MutexLock lock(&mu_);
  sizes_[ptr] = bytes;
  return ptr;
}

absl::Status CudaMemoryPool::Free(CUdeviceptr ptr, CudaStream& stream) {
  if (ptr == 0) return absl::OkStatus();
  CudaContext& ctx = context();
  if (&stream.context() != &ctx) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaMemoryPool::Free: a stream of ", stream.context().name(), " for ", ctx.name(), "'s pool"));
  }
  uint64_t bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("CudaMemoryPool::Free: 0x", absl::Hex(ptr),
                                                     " is not an allocation of ", ctx.name(),
                                                     "'s pool (or was freed already)"));
    }
    bytes = it->second;
    sizes_.erase(it);
  }
  absl::Status s = ctx.Call("cuMemFreeAsync", [&] { return ctx.api().cuMemFreeAsync(ptr, stream.get()); });
  if (!s.ok() && !ctx.poisoned()) {
    // Not freed: still counted. (A poisoned context's memory goes with its
    // reset.)
    absl::MutexLock lock(&mu_);
    sizes_[ptr] = bytes;
    return s;
  }
  absl::MutexLock lock(&usage_->mu_);
  usage_->in_use_ -= bytes;
  return s;
}

absl::Status CudaMemoryPool::SetReleaseThreshold(uint64_t bytes) {
  CudaContext& ctx = context();
  uint64_t value = bytes;
  return ctx.Call("cuMemPoolSetAttribute", [&] {
    return ctx.api().cuMemPoolSetAttribute(pool_, kMemPoolAttrReleaseThreshold, &value);
  });
}

absl::StatusOr<uint64_t> CudaMemoryPool::ReservedBytes() {
  CudaContext& ctx = context();
  uint64_t value = 0;
  absl::Status s = ctx.Call("cuMemPoolGetAttribute", [&] {
    return ctx.api().cuMemPoolGetAttribute(pool_, kMemPoolAttrReservedMemCurrent, &value);
  });
  if (!s.ok()) return s;
  return value;
}

void CudaMemoryPool::SetQuota(uint64_t bytes) {
  absl::MutexLock lock(&usage_->mu_);
  usage_->quota_ = bytes;
}

uint64_t CudaMemoryPool::quota() const {
  absl::MutexLock lock(&usage_->mu_);
  return usage_->quota_;
}

uint64_t CudaMemoryPool::bytes_in_use() const {
  absl::MutexLock lock(&usage_->mu_);
  return usage_->in_use_;
}

uint64_t CudaMemoryPool::peak_bytes() const {
  absl::MutexLock lock(&usage_->mu_);
  return usage_->peak_;
}

uint64_t CudaMemoryPool::AllocationBytes(CUdeviceptr ptr) const {
  absl::MutexLock lock(&mu_);
  auto it = sizes_.find(ptr);
  return it == sizes_.end() ? 0 : it->second;
}

absl::StatusOr<int> CudaMemoryPool::ExportHandle() {
  CudaContext& ctx = context();
  if (!exportable_) {
    return absl::FailedPreconditionError(absl::StrCat(ctx.name(), "'s memory pool cannot be exported"));
  }
  int fd = -1;
  WARPD_RETURN_IF_ERROR(ctx.Call("cuMemPoolExportToShareableHandle", [&] {
    return ctx.api().cuMemPoolExportToShareableHandle(&fd, pool_, kMemHandleTypePosixFd, 0);
  }));
  return fd;
}

absl::StatusOr<CUmemPoolPtrExportData> CudaMemoryPool::ExportPointer(CUdeviceptr ptr) {
  CudaContext& ctx = context();
  if (AllocationBytes(ptr) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("0x", absl::Hex(ptr), " is not an allocation of this ", ctx.name(), " memory pool"));
  }
  CUmemPoolPtrExportData data;
  std::memset(&data, 0, sizeof(data));
  WARPD_RETURN_IF_ERROR(
      ctx.Call("cuMemPoolExportPointer", [&] { return ctx.api().cuMemPoolExportPointer(&data, ptr); }));
  return data;
}

size_t CudaMemoryPool::allocations() const {
  absl::MutexLock lock(&mu_);
  return sizes_.size();
}

}  // namespace warpd::runtime::cuda
