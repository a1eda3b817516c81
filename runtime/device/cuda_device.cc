#include "runtime/device/cuda_device.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/abi/compiled_module.h"
#include "common/status_macros.h"
#include "runtime/device/cuda/cuda_copy.h"
#include "runtime/device/cuda/cuda_launch.h"
#include "runtime/memory/memory_charge.h"
#include "runtime/device/cuda_work_timer.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_bytes.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {
namespace {

// Host bytes standing in for a strided array's span while it is packed or
// unpacked (array_bytes.h works on host memory).
class HostBytes final : public Buffer {
 public:
  static std::shared_ptr<HostBytes> Make(uint64_t n) {
    auto bytes = std::make_unique_for_overwrite<std::byte[]>(n);
    std::byte* p = bytes.get();
    return std::shared_ptr<HostBytes>(new HostBytes(p, n, std::move(bytes)));
  }
  std::byte* data() const { return host_data(); }

 private:
  HostBytes(std::byte* p, uint64_t n, std::unique_ptr<std::byte[]> bytes)
      : Buffer(reinterpret_cast<uint64_t>(p), n, /*host_addressable=*/true), bytes_(std::move(bytes)) {}
  std::unique_ptr<std::byte[]> bytes_;
};

// The bytes from `array`'s element 0 (its lowest address: strides are never
// negative) to the end of its last element, in its buffer.
uint64_t SpanBytes(const Array& array) {
  if (array.layout().num_elements == 0) return 0;
  uint64_t span = array.dtype()->size();
  for (int d = 0; d < array.ndim(); ++d) span += uint64_t(array.shape()[d] - 1) * uint64_t(array.strides()[d]);
  return span;
}

// Seed of a fill the driver's memsets cannot do: whole patterns, about 64 KiB.
constexpr uint64_t kFillSeedBytes = uint64_t{64} << 10;

}  // namespace

CudaDevice::CudaDevice(const cuda::CudaDeviceInfo& gpu) : CudaDevice(gpu, nullptr, {}, {}, nullptr) {}

CudaDevice::CudaDevice(const cuda::CudaDeviceInfo& gpu, const cuda::CudaDriver* driver,
                       const cuda::CudaMemory::Options& options, const LaunchOptions& launch,
                       std::shared_ptr<cuda::CudaMemory> memory)
    : driver_(driver), ordinal_(gpu.ordinal), options_(options), launch_(launch), memory_(std::move(memory)) {
  info_.name = absl::StrCat("cuda:", gpu.ordinal);
  info_.alias = gpu.name;
  info_.kind = "cuda";
  info_.arch = gpu.arch();
  info_.uuid = gpu.uuid;
  info_.sm_count = gpu.sm_count;
  info_.memory_bytes = gpu.memory_bytes;
  info_.mempool_release_threshold = options.pool.release_threshold;
  info_.unavailable = memory_ == nullptr ? kNotYet : "";
}

absl::StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Open(const cuda::CudaDriver& driver,
                                                             const cuda::CudaDeviceInfo& gpu,
                                                             const cuda::CudaMemory::Options& options,
                                                             const LaunchOptions& launch) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> memory,
                         cuda::CudaMemory::Open(driver, gpu.ordinal, options));
  return std::unique_ptr<CudaDevice>(new CudaDevice(gpu, &driver, options, launch, std::move(memory)));
}

absl::Status CudaDevice::NotYet() const {
  return absl::FailedPreconditionError(absl::StrCat("device '", info_.name, "' (", info_.alias, ") cannot run work: ",
                                                    info_.unavailable));
}

absl::StatusOr<std::shared_ptr<cuda::CudaMemory>> CudaDevice::Memory() const {
  absl::MutexLock lock(&mu_);
  if (memory_ != nullptr) return memory_;
  return lost_.ok() ? NotYet() : lost_;
}

bool CudaDevice::healthy() const {
  absl::MutexLock lock(&mu_);
  if (driver_ == nullptr) return true;  // listed only: it has nothing to lose
  return memory_ != nullptr && !memory_->context().poisoned();
}

absl::Status CudaDevice::Recover() {
  absl::MutexLock lock(&mu_);
  if (driver_ == nullptr || (memory_ != nullptr && !memory_->context().poisoned())) return absl::OkStatus();
  if (memory_ != nullptr) {
    {
      absl::MutexLock blas(&blas_mu_);  // a Gemm running holds the memory: the check below refuses then
      blas_.reset();
    }
    // Every handle made in the context dies with its reset: nothing may
    // hold one (arrays' buffers and running operations hold the memory,
    // launches their module).
    if (memory_.use_count() > 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          info_.name, " lost its CUDA context; it is reset once the ", memory_.use_count() - 1,
          " arrays and operations still holding its memory are gone (free them or close their sessions)"));
    }
    {
      absl::MutexLock modules(&modules_mu_);
      for (const auto& [key, module] : modules_) {
        if (module.use_count() > 1) {
          return absl::FailedPreconditionError(
              absl::StrCat(info_.name, " lost its CUDA context; a launch still holds one of its modules"));
        }
      }
      modules_.clear();
    }
    absl::Status reset = memory_->ResetContext();
    memory_.reset();  // its stream, pool and staging are gone either way
    if (!reset.ok()) {
      lost_ = absl::FailedPreconditionError(
          absl::StrCat(info_.name, " lost its CUDA context and could not reset it: ", reset.message()));
      return lost_;
    }
  }
  absl::StatusOr<std::shared_ptr<cuda::CudaMemory>> reopened = cuda::CudaMemory::Open(*driver_, ordinal_, options_);
  if (!reopened.ok()) {
    lost_ = absl::FailedPreconditionError(
        absl::StrCat(info_.name, " lost its CUDA context and could not reopen it: ", reopened.status().message()));
    return lost_;
  }
  memory_ = *std::move(reopened);
  lost_ = absl::OkStatus();
  return absl::OkStatus();
}

uint64_t CudaDevice::FreeMemoryBytes() const {
  absl::StatusOr<std::shared_ptr<cuda::CudaMemory>> m = Memory();
  if (!m.ok()) return 0;
  const uint64_t quota = (*m)->pool().quota();
  const uint64_t used = (*m)->pool().bytes_in_use();
  return quota > used ? quota - used : 0;
}

absl::StatusOr<std::shared_ptr<Buffer>> CudaDevice::Allocate(uint64_t bytes, std::string_view, SegmentPool* pool,
                                                             Fill) {
  return AllocateFrom(bytes, pool, /*shareable=*/false);
}

absl::StatusOr<std::shared_ptr<Buffer>> CudaDevice::AllocateShareable(uint64_t bytes, std::string_view,
                                                                      SegmentPool* pool, Fill) {
  return AllocateFrom(bytes, pool, /*shareable=*/true);
}

absl::StatusOr<std::shared_ptr<Buffer>> CudaDevice::AllocateFrom(uint64_t bytes, SegmentPool* pool, bool shareable) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  if (pool == nullptr) return absl::FailedPreconditionError("no memory account to charge GPU memory to");
  std::shared_ptr<cuda::CudaMemoryPool> from;  // null: the device's pool
  if (shareable) {
    WARPD_ASSIGN_OR_RETURN(from, m->SessionPool(pool->account()));
  }
  WARPD_ASSIGN_OR_RETURN(MemoryCharge charge, MemoryCharge::Take(pool->account(), bytes));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaBuffer> buffer,
                         cuda::CudaBuffer::Allocate(m, bytes, std::move(charge), std::move(from)));
  // Always zeroed, whatever `fill` asks: the device's pool is every
  // session's, and memory a session's pool gives back to the driver may
  // come back to any pool.
  if (bytes > 0) {
    const unsigned char zero = 0;
    WARPD_RETURN_IF_ERROR(cuda::Fill(m->stream(), buffer->address(), &zero, 1, bytes));
    WARPD_RETURN_IF_ERROR(m->stream().Synchronize());
  }
  return buffer;
}

absl::StatusOr<Device::MemoryExport> CudaDevice::ExportMemory(const Buffer& buffer, const SegmentPool& owner) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  std::shared_ptr<cuda::CudaMemoryPool> pool = m->FindSessionPool(owner.account().get());
  if (pool == nullptr || !pool->exportable()) {
    if (m->exports_unsupported()) {
      return absl::UnimplementedError(
          absl::StrCat(info_.name, "'s driver cannot export memory to other processes (no CUDA IPC)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("this memory is not in the session's shareable memory on ", info_.name));
  }
  // Only an allocation of the session's own pool, whole: never another
  // session's, a descriptor's or an object's memory (those come from the
  // device's pool).
  if (buffer.size() == 0 || pool->AllocationBytes(buffer.address()) != buffer.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("this memory is not in the session's shareable memory on ", info_.name));
  }
  WARPD_ASSIGN_OR_RETURN(cuda::CUmemPoolPtrExportData data, pool->ExportPointer(buffer.address()));
  WARPD_ASSIGN_OR_RETURN(int fd, pool->ExportHandle());
  MemoryExport out;
  out.fd = fd;
  out.allocation.assign(reinterpret_cast<const char*>(data.reserved), sizeof(data.reserved));
  out.pool_serial = pool->serial();
  out.device_uuid = info_.uuid;
  return out;
}

size_t CudaDevice::loaded_modules() const {
  absl::MutexLock lock(&modules_mu_);
  return modules_.size();
}

absl::StatusOr<std::shared_ptr<const cuda::CudaModule>> CudaDevice::LoadedModule(cuda::CudaMemory& m,
                                                                             const abi::CompiledModule& module) {
  {
    absl::MutexLock lock(&modules_mu_);
    if (auto it = modules_.find(module.cache_key()); it != modules_.end()) return it->second;
  }
  // Loaded outside the lock (the driver's JIT may take a while); two
  // launches of a new module may both load it, and one copy is kept.
  WARPD_ASSIGN_OR_RETURN(cuda::CudaModule loaded, cuda::CudaModule::Load(m.context(), module.cuda_image()));
  auto shared = std::make_shared<const cuda::CudaModule>(std::move(loaded));
  absl::MutexLock lock(&modules_mu_);
  auto [it, inserted] = modules_.try_emplace(module.cache_key(), shared);
  if (inserted && modules_.size() > kMaxLoadedModules) {
    // Unloaded when the launches using it (each holds it until its stream
    // has synchronized) are done.
    for (auto other = modules_.begin(); other != modules_.end(); ++other) {
      if (other != it) {
        modules_.erase(other);
        break;
      }
    }
  }
  return it->second;
}

absl::StatusOr<std::string> CudaDevice::EntryFor(const abi::CompiledModule& module, const abi::CompiledKernel& kernel,
                                                 Pass pass) const {
  if (module.target() != abi::Target::kCuda || module.cuda_image().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel.layout.display_name,
                                                   "' was not compiled for CUDA: it cannot run on ", info_.name));
  }
  const std::string& entry = pass == Pass::kAdjoint ? kernel.cuda_adjoint : kernel.cuda_entry;
  if (entry.empty()) return absl::InternalError("the kernel has no CUDA entry point for this pass");
  return entry;
}

void CudaDevice::AddBlockParams(cuda::KernelArgs& params, const abi::KernelLayout& layout, bool adjoint,
                                const void* block, bool by_pointer, cuda::CUdeviceptr block_address) {
  if (by_pointer) {
    params.Add(uint64_t{block_address});
    return;
  }
  static constexpr int32_t kNoParams[2] = {0, 0};
  const bool empty = layout.args_size == 0;
  const size_t size = empty ? sizeof(int32_t) : layout.args_size;
  const size_t align = empty ? alignof(int32_t) : layout.args_align;
  params.Add(empty ? static_cast<const void*>(kNoParams) : block, size, align);
  if (adjoint) {
    params.Add(empty ? static_cast<const void*>(kNoParams + 1)
                     : static_cast<const void*>(static_cast<const std::byte*>(block) + layout.args_size),
               size, align);
  }
}

absl::Status CudaDevice::RunKernel(const abi::CompiledModule& module, const abi::CompiledKernel& kernel,
                                   wp::launch_ctx* ctx, const void* args, Pass pass, const LaunchShape& shape) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  const abi::KernelLayout& layout = kernel.layout;
  const bool adjoint = pass == Pass::kAdjoint;
  WARPD_ASSIGN_OR_RETURN(const std::string entry, EntryFor(module, kernel, pass));
  if (ctx->bounds.size == 0) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const cuda::CudaModule> loaded, LoadedModule(*m, module));
  WARPD_ASSIGN_OR_RETURN(cuda::CUfunction function, loaded->Function(entry));
  WARPD_ASSIGN_OR_RETURN(cuda::LaunchDims dims, GridFor(uint64_t(ctx->bounds.size), shape));

  // Device scratch for this launch: the context, the print records, the
  // object table (its entries name the objects' descriptors in their
  // mirrors on this device, runtime/objects/device_mirror.h) and, when it
  // does not fit the parameter space, the argument block (an adjoint's is
  // the forward block and the adjoints' block after it).
  constexpr uint64_t kAlign = 256;
  auto aligned = [](uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  const uint64_t block_bytes = BlockBytes(layout, adjoint);
  const bool by_pointer = BlockByPointer(block_bytes);
  const uint64_t records = ctx->output.data != nullptr ? ctx->output.capacity : 0;
  const uint64_t objects = ctx->objects != nullptr ? uint64_t(ctx->num_objects) * sizeof(wp::object_entry) : 0;
  const uint64_t ctx_at = 0, records_at = aligned(sizeof(wp::launch_ctx)), objects_at = records_at + aligned(records),
                 block_at = objects_at + aligned(objects);
  const uint64_t scratch_bytes = block_at + (by_pointer ? block_bytes : 0);
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  cuda::CudaStream& stream = lease.stream();
  WARPD_ASSIGN_OR_RETURN(cuda::CUdeviceptr scratch, m->pool().Allocate(scratch_bytes, stream));
  absl::Status status = [&]() -> absl::Status {
    wp::launch_ctx device_ctx = *ctx;
    device_ctx.output = wp::print_buffer{};
    if (records > 0) {
      device_ctx.output.data = reinterpret_cast<wp::uint8*>(scratch + records_at);
      device_ctx.output.capacity = records;
    }
    device_ctx.objects = nullptr;
    device_ctx.num_objects = 0;
    if (objects > 0) {
      WARPD_RETURN_IF_ERROR(cuda::CopyHostToDevice(stream, scratch + objects_at, ctx->objects, objects));
      device_ctx.objects = reinterpret_cast<const wp::object_entry*>(scratch + objects_at);
      device_ctx.num_objects = ctx->num_objects;
    }
    WARPD_RETURN_IF_ERROR(cuda::CopyHostToDevice(stream, scratch + ctx_at, &device_ctx, sizeof(device_ctx)));
    if (by_pointer) WARPD_RETURN_IF_ERROR(cuda::CopyHostToDevice(stream, scratch + block_at, args, block_bytes));
    cuda::KernelArgs params;
    params.Add(uint64_t{scratch + ctx_at});
    AddBlockParams(params, layout, adjoint, args, by_pointer, scratch + block_at);
    CudaWorkTimer timer(lease);  // the scheduler charges the kernel's device time
    WARPD_RETURN_IF_ERROR(cuda::Launch(stream, function, entry, dims, params));
    timer.Issued();
    const cuda::CUdeviceptr ctx_address = scratch + ctx_at;
    if (absl::Status s = AwaitWork(*m, stream, &ctx->cancel, absl::MakeConstSpan(&ctx_address, 1),
                                   launch_.time_limit, absl::StrCat("kernel '", layout.display_name, "'"));
        !s.ok()) {
      if (m->context().poisoned()) scratch = 0;  // a kernel may still use it: the context's reset frees it
      return s;
    }
    timer.Done();
    WARPD_RETURN_IF_ERROR(cuda::CopyDeviceToHost(stream, &device_ctx, scratch + ctx_at, sizeof(device_ctx)));
    ctx->fault = device_ctx.fault;
    if (records > 0) {
      const uint64_t committed = std::min<uint64_t>(device_ctx.output.committed, records);
      WARPD_RETURN_IF_ERROR(cuda::CopyDeviceToHost(stream, ctx->output.data, scratch + records_at, committed));
      ctx->output.used = device_ctx.output.used;
      ctx->output.committed = committed;
      ctx->output.dropped = device_ctx.output.dropped;
    }
    return absl::OkStatus();
  }();
  absl::Status freed = scratch != 0 ? m->pool().Free(scratch, stream) : absl::OkStatus();
  return status.ok() ? freed : status;
}

absl::Status CudaDevice::AwaitWork(cuda::CudaMemory& m, cuda::CudaStream& stream, int32_t* cancel_cell,
                                   absl::Span<const cuda::CUdeviceptr> device_ctxs, absl::Duration limit,
                                   const std::string& what, absl::Span<const KernelMark> marks, size_t* late) {
  const bool limited = limit > absl::ZeroDuration();
  size_t next = 0;  // the first mark not reached
  absl::Time deadline = !limited        ? absl::InfiniteFuture()
                        : marks.empty() ? absl::Now() + limit
                                        : absl::Now() + marks[0].budget;
  absl::Time stop_by = absl::InfiniteFuture();  // once the cancel reached the device
  absl::Time sent_at = absl::InfinitePast();
  absl::Duration nap = absl::ZeroDuration();
  // A kernel nothing stops holds the GPU (and its stream, which must not go
  // back to the pool as idle): the context is lost until its reset.
  auto lose = [&](const std::string& why) {
    m.context().MarkLost(why);
    return absl::UnavailableError(why);
  };
  for (int polls = 0;; ++polls) {
    WARPD_ASSIGN_OR_RETURN(bool done, stream.Query());
    if (done) return stream.Synchronize();  // the kernel's error, if any
    const absl::Time now = absl::Now();
    int32_t cancel = __atomic_load_n(cancel_cell, __ATOMIC_RELAXED);
    while (cancel == 0 && next < marks.size()) {
      WARPD_ASSIGN_OR_RETURN(bool reached, marks[next].done->Query());
      if (!reached) break;
      ++next;
      if (limited) deadline = now + (next < marks.size() ? marks[next].budget : limit);
    }
    if (cancel == 0 && now >= deadline) {
      cancel = abi::kCancelTimeout;
      __atomic_store_n(cancel_cell, cancel, __ATOMIC_RELAXED);
      if (late != nullptr) *late = next;
    }
    // Sent again every so often: work queued on the stream before the
    // kernels (a graph's reset of its contexts) may have cleared it.
    if (cancel != 0 && !device_ctxs.empty() && now - sent_at >= absl::Milliseconds(50)) {
      // Over the control stream: the kernels' own stream is busy running them.
      cuda::CudaStream& control = m.control_stream();
      absl::Status sent;
      for (cuda::CUdeviceptr device_ctx : device_ctxs) {
        if (sent.ok()) {
          sent = cuda::CopyHostToDevice(control, device_ctx + offsetof(wp::launch_ctx, cancel), &cancel,
                                        sizeof(cancel));
        }
      }
      if (sent.ok()) sent = control.Synchronize();
      if (!sent.ok()) {
        return lose(absl::StrCat(what, " could not be cancelled on ", info_.name, ": ", sent.message()));
      }
      sent_at = now;
    }
    if (cancel != 0 && stop_by == absl::InfiniteFuture()) stop_by = now + launch_.cancel_grace;
    if (now > stop_by) {
      return lose(absl::StrCat(what, " did not stop within ", absl::FormatDuration(launch_.cancel_grace),
                               " of being cancelled on ", info_.name, "; the device is reset once its sessions end"));
    }
    // Spin briefly (a short kernel ends within microseconds), then back off
    // to at most 1 ms between polls.
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      nap = std::min(absl::Milliseconds(1), std::max(absl::Microseconds(5), nap * 2));
      absl::SleepFor(nap);
    }
  }
}

absl::Status CudaDevice::Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  WARPD_RETURN_IF_ERROR(CheckRange(dst, offset, bytes.size(), "upload"));
  if (bytes.empty()) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  cuda::CudaStream& stream = lease.stream();
  if (!dst.contiguous()) return StridedWrite(*m, stream, dst, offset, bytes);
  WARPD_RETURN_IF_ERROR(m->staging().Upload(stream, dst.address() + offset, bytes.data(), bytes.size()));
  return stream.Synchronize();
}

absl::Status CudaDevice::Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  WARPD_RETURN_IF_ERROR(CheckRange(src, offset, out.size(), "download"));
  if (out.empty()) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  if (!src.contiguous()) return StridedRead(*m, lease.stream(), src, offset, out);
  return m->staging().Download(lease.stream(), out.data(), src.address() + offset, out.size());
}

absl::Status CudaDevice::CheckStaged(uint64_t bytes, const char* op) const {
  if (bytes <= options_.max_staged_bytes) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      op, " of a strided view on ", info_.name, " stages ", bytes, " bytes in host memory; at most ",
      options_.max_staged_bytes, " are supported: use a contiguous array, or views over less memory"));
}

absl::Status CudaDevice::StridedRead(cuda::CudaMemory& m, cuda::CudaStream& stream, const Array& src,
                                     uint64_t offset, absl::Span<std::byte> out) {
  const uint64_t span = SpanBytes(src);
  WARPD_RETURN_IF_ERROR(CheckStaged(span, "download"));
  std::shared_ptr<HostBytes> host = HostBytes::Make(span);
  WARPD_RETURN_IF_ERROR(m.staging().Download(stream, host->data(), src.address(), span));
  const Array mirror(src.device(), src.layout(), host, 0, src.held());
  ReadArrayBytes(mirror, offset, out.size(), out.data());
  return absl::OkStatus();
}

absl::Status CudaDevice::StridedWrite(cuda::CudaMemory& m, cuda::CudaStream& stream, const Array& dst,
                                      uint64_t offset, absl::Span<const std::byte> in) {
  const uint64_t span = SpanBytes(dst);
  WARPD_RETURN_IF_ERROR(CheckStaged(span, "write"));
  std::shared_ptr<HostBytes> host = HostBytes::Make(span);
  WARPD_RETURN_IF_ERROR(m.staging().Download(stream, host->data(), dst.address(), span));
  const Array mirror(dst.device(), dst.layout(), host, 0, dst.held());
  WriteArrayBytes(mirror, offset, in.data(), in.size());
  WARPD_RETURN_IF_ERROR(m.staging().Upload(stream, dst.address(), host->data(), span));
  return stream.Synchronize();
}

absl::Status CudaDevice::MoveDeviceBytes(cuda::CudaMemory& m, cuda::CudaStream& stream, uint64_t dst, uint64_t src,
                                         uint64_t n) {
  if (dst == src) return absl::OkStatus();
  const bool overlap = dst < src ? src - dst < n : dst - src < n;
  if (!overlap) return cuda::CopyDeviceToDevice(stream, dst, src, n);
  // cuMemcpyDtoD leaves overlapping copies undefined: through a temporary
  // (charged to nobody: it lives for this call only, within the quota).
  WARPD_ASSIGN_OR_RETURN(cuda::CUdeviceptr tmp, m.pool().Allocate(n, stream));
  absl::Status s = cuda::CopyDeviceToDevice(stream, tmp, src, n);
  if (s.ok()) s = cuda::CopyDeviceToDevice(stream, dst, tmp, n);
  absl::Status freed = m.pool().Free(tmp, stream);
  return s.ok() ? freed : s;
}

absl::Status CudaDevice::CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset,
                                   uint64_t n, const std::atomic<bool>* cancel) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  WARPD_RETURN_IF_ERROR(CheckRange(dst, dst_offset, n, "copy destination"));
  WARPD_RETURN_IF_ERROR(CheckRange(src, src_offset, n, "copy source"));
  if (n == 0) return absl::OkStatus();
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return absl::CancelledError("copy: cancelled");
  if (dst.contiguous() && src.contiguous()) {
    WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
    WARPD_RETURN_IF_ERROR(MoveDeviceBytes(*m, lease.stream(), dst.address() + dst_offset, src.address() + src_offset, n));
    return lease.stream().Synchronize();
  }
  // A strided side: through the host, all of the source read before any of
  // the destination is written.
  WARPD_RETURN_IF_ERROR(CheckStaged(n, "copy"));
  std::vector<std::byte> bytes(n);
  WARPD_RETURN_IF_ERROR(Download(src, src_offset, absl::MakeSpan(bytes)));
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return absl::CancelledError("copy: cancelled");
  return Upload(dst, dst_offset, bytes);
}

absl::Status CudaDevice::CopyFromDevice(const Array& dst, Device& from, const Array& src,
                                        const std::atomic<bool>* cancel) {
  if (from.info().kind != "cuda" || &from == this || !dst.contiguous() || !src.contiguous()) {
    return absl::UnimplementedError("only contiguous arrays move between GPUs directly");
  }
  auto& other = static_cast<CudaDevice&>(from);  // every "cuda" device is one
  if (dst.size_bytes() != src.size_bytes()) return absl::InvalidArgumentError("copy between GPUs: sizes differ");
  WARPD_RETURN_IF_ERROR(CheckRange(dst, 0, src.size_bytes(), "copy destination"));
  WARPD_RETURN_IF_ERROR(other.CheckRange(src, 0, src.size_bytes(), "copy source"));
  if (src.size_bytes() == 0) return absl::OkStatus();
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
    return absl::CancelledError("copy between GPUs: cancelled");
  }
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> source, other.Memory());
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  WARPD_RETURN_IF_ERROR(
      cuda::CopyPeer(lease.stream(), dst.address(), source->control_stream(), src.address(), src.size_bytes()));
  return lease.stream().Synchronize();
}

absl::Status CudaDevice::FillDeviceBytes(cuda::CudaMemory& m, cuda::CudaStream& stream, uint64_t dst, uint64_t n,
                                         std::string_view pattern) {
  absl::Status s = cuda::Fill(stream, dst, pattern.data(), pattern.size(), n / pattern.size());
  if (s.code() != absl::StatusCode::kUnimplemented) return s;
  // A pattern no memset writes: a seed of whole patterns, uploaded, then
  // doubled on the device.
  const uint64_t seed_patterns = std::max<uint64_t>(1, kFillSeedBytes / pattern.size());
  const uint64_t seed = std::min<uint64_t>(n, seed_patterns * pattern.size());
  std::vector<std::byte> host(seed);
  for (uint64_t i = 0; i < seed; i += pattern.size()) std::memcpy(host.data() + i, pattern.data(), pattern.size());
  WARPD_RETURN_IF_ERROR(m.staging().Upload(stream, dst, host.data(), seed));
  for (uint64_t filled = seed; filled < n;) {
    const uint64_t chunk = std::min(filled, n - filled);
    WARPD_RETURN_IF_ERROR(cuda::CopyDeviceToDevice(stream, dst + filled, dst, chunk));
    filled += chunk;
  }
  return absl::OkStatus();
}

absl::Status CudaDevice::FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                                   const std::atomic<bool>* cancel) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  WARPD_RETURN_IF_ERROR(CheckRange(array, offset, n, "fill"));
  if (n == 0) return absl::OkStatus();
  if (pattern.empty() || n % pattern.size() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fill: ", n, " bytes are not a whole number of ", pattern.size(), "-byte patterns"));
  }
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return absl::CancelledError("fill: cancelled");
  WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, m->streams().Acquire());
  if (array.contiguous()) {
    WARPD_RETURN_IF_ERROR(FillDeviceBytes(*m, lease.stream(), array.address() + offset, n, pattern));
    return lease.stream().Synchronize();
  }
  WARPD_RETURN_IF_ERROR(CheckStaged(n, "fill"));
  std::vector<std::byte> bytes(n);
  for (uint64_t i = 0; i < n; i += pattern.size()) std::memcpy(bytes.data() + i, pattern.data(), pattern.size());
  return StridedWrite(*m, lease.stream(), array, offset, bytes);
}

}  // namespace warpd::runtime
