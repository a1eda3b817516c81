// CudaDevice::RecordWork: a graph's launches, copies and fills captured into
// one CUDA graph (recorded_work.h; cuda/cuda_graph.h). CudaDevice::BatchWork:
// a stream's queued launches, copies and fills run once, issued on one CUDA
// stream back to back with a single wait at the end (CudaBatchedWork below).
//
// The recorder only notes the work; Finish lays out one device block for
// all of it: each kernel's launch context twice, a pristine copy and the
// one the kernels use, each in a 256-byte slot, then the argument blocks
// too large for the parameter space. It uploads the block, then captures,
// on a stream of its own: a device-to-device copy of the pristine contexts
// over the used ones (so each replay starts with no fault and no cancel),
// then every operation in order. A replay is one cuGraphLaunch and one wait
// (CudaDevice::AwaitWork, with the time limit of every kernel recorded and
// the cancel forwarded to each context), then one download of the used
// contexts. The block is freed, and the executable graph destroyed, with
// the CudaRecordedWork; the modules it launches are held as long.
//
// Bounds, as a replay cannot be stopped between its operations: the whole
// replay gets the device's launch time limit (not one per kernel; a graph
// whose work takes longer replays command by command if it is split, or
// raises the limit), and a recording takes at most kMaxRecordedMoves bytes
// of copies and fills, which a cancel cannot stop but which end within
// milliseconds on any GPU: a graph moving more replays command by command.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/abi/compiled_module.h"
#include "common/status_macros.h"
#include "runtime/device/cuda/cuda_copy.h"
#include "runtime/device/cuda/cuda_graph.h"
#include "runtime/device/cuda/cuda_launch.h"
#include "runtime/device/cuda_device.h"
#include "runtime/device/cuda_work_timer.h"
#include "runtime/device/recorded_work.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

namespace {

constexpr uint64_t kSlot = 256;  // one launch context, aligned
static_assert(sizeof(wp::launch_ctx) <= kSlot);
constexpr uint64_t Aligned(uint64_t n) { return (n + kSlot - 1) / kSlot * kSlot; }

// The most device memory one recording lays out (contexts and argument
// blocks); a larger graph replays command by command. It is the daemon's,
// like a launch's scratch, and proportional to the graph's commands, which
// the session's quotas bound.
constexpr uint64_t kMaxRecordedBytes = uint64_t{64} << 20;
// Kernel runs one batch issues (one mark event each, CudaBatchedWork::Run):
// a client's run of identical launches (at most 65,536) fits.
constexpr uint64_t kMaxBatchRuns = uint64_t{1} << 16;
// The most bytes a recording's copies and fills move in all.
constexpr uint64_t kMaxRecordedMoves = uint64_t{16} << 30;

struct KernelOp {
  std::shared_ptr<const cuda::CudaModule> module;
  std::string display_name;  // the kernel as the user wrote it, for messages
  cuda::CUfunction function = nullptr;
  std::string entry;
  cuda::LaunchDims dims;
  uint32_t runs = 1;
  bool adjoint = false;
  size_t slot = 0;
  // The parameters after the context: the block by value (forward, and the
  // adjoints' for an adjoint), or its device address at `block_at`.
  std::shared_ptr<const abi::CompiledModule> compiled;  // holds `layout`
  const abi::KernelLayout* layout = nullptr;
  std::string block;
  bool by_pointer = false;
  uint64_t block_at = 0;
  // The launch's object table (its entries as the launch had them; their
  // descriptors are device addresses), at `objects_at` among the blocks.
  std::string objects;
  uint64_t objects_at = 0;
};
struct CopyOp {
  uint64_t dst, src, n;
};
struct FillOp {
  uint64_t dst, n;
  std::string pattern;
};
using Op = std::variant<KernelOp, CopyOp, FillOp>;

// The contexts of `n` kernels at `contexts` (kSlot apart), downloaded into
// `ctxs`, their cancel words cleared: the cancel reached every context,
// finished or not, and the caller reports it once.
absl::Status DownloadContexts(cuda::CudaStream& stream, cuda::CUdeviceptr contexts, absl::Span<wp::launch_ctx> ctxs) {
  if (ctxs.empty()) return absl::OkStatus();
  std::vector<std::byte> bytes(ctxs.size() * kSlot);
  WARPD_RETURN_IF_ERROR(cuda::CopyDeviceToHost(stream, bytes.data(), contexts, bytes.size()));
  for (size_t k = 0; k < ctxs.size(); ++k) {
    std::memcpy(&ctxs[k], bytes.data() + k * kSlot, sizeof(wp::launch_ctx));
    ctxs[k].cancel = 0;
  }
  return absl::OkStatus();
}

// What a stopped run returns, from the cancel word it ended with.
absl::Status StopStatus(int32_t stopped, const std::string& what, absl::Duration limit) {
  if (stopped == abi::kCancelTimeout) {
    return absl::DeadlineExceededError(absl::StrCat(what, " ran longer than this server's launch time limit of ",
                                                    absl::FormatDuration(limit), " and was stopped"));
  }
  if (stopped != 0) return absl::CancelledError(absl::StrCat(what, " was cancelled"));
  return absl::OkStatus();
}

std::vector<cuda::CUdeviceptr> ContextAddresses(cuda::CUdeviceptr contexts, size_t n) {
  std::vector<cuda::CUdeviceptr> live(n);
  for (size_t k = 0; k < n; ++k) live[k] = contexts + k * kSlot;
  return live;
}

}  // namespace

// Issues recorded operations on a stream (for the graph capture and for
// batches); a friend of CudaDevice for the launch parameters.
class CudaWorkIssuer {
 public:
  // Issues `ops` on `stream` in order: kernel k with its context at
  // contexts + k.slot * kSlot and a by-pointer block at blocks + k.block_at;
  // with `marks` (one per kernel run, in order), each recorded after its run.
  static absl::Status IssueOps(cuda::CudaStream& stream, const std::vector<Op>& ops, cuda::CUdeviceptr contexts,
                               cuda::CUdeviceptr blocks, absl::Span<cuda::CudaEvent> marks = {}) {
    size_t mark = 0;
    for (const Op& op : ops) {
      if (const auto* k = std::get_if<KernelOp>(&op)) {
        WARPD_RETURN_IF_ERROR(LaunchRuns(stream, *k, contexts + k->slot * kSlot, blocks + k->block_at,
                                         marks.empty() ? marks : marks.subspan(mark, k->runs)));
        if (!marks.empty()) mark += k->runs;
      } else if (const auto* c = std::get_if<CopyOp>(&op)) {
        WARPD_RETURN_IF_ERROR(cuda::CopyDeviceToDevice(stream, c->dst, c->src, c->n));
      } else {
        const auto& f = std::get<FillOp>(op);
        WARPD_RETURN_IF_ERROR(cuda::Fill(stream, f.dst, f.pattern.data(), f.pattern.size(), f.n / f.pattern.size()));
      }
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status LaunchRuns(cuda::CudaStream& stream, const KernelOp& k, cuda::CUdeviceptr ctx,
                                 cuda::CUdeviceptr block, absl::Span<cuda::CudaEvent> marks) {
    cuda::KernelArgs params;
    params.Add(uint64_t{ctx});
    CudaDevice::AddBlockParams(params, *k.layout, k.adjoint, k.block.data(), k.by_pointer, block);
    for (uint32_t run = 0; run < k.runs; ++run) {
      WARPD_RETURN_IF_ERROR(cuda::Launch(stream, k.function, k.entry, k.dims, params));
      if (!marks.empty()) WARPD_RETURN_IF_ERROR(marks[run].Record(stream));
    }
    return absl::OkStatus();
  }
};

// A recording's device block: the contexts and the argument blocks passed by
// pointer, uploaded when it is made and freed in stream order when it goes
// (a poisoned context's reset frees it instead: a kernel may still use it).
class DeviceBlock {
 public:
  // `image` once `patch` has seen the block's address (to point what the
  // image holds at its own parts).
  static absl::StatusOr<DeviceBlock> Upload(
      std::shared_ptr<cuda::CudaMemory> memory, absl::Span<std::byte> image,
      absl::FunctionRef<void(cuda::CUdeviceptr, absl::Span<std::byte>)> patch =
          [](cuda::CUdeviceptr, absl::Span<std::byte>) {}) {
    DeviceBlock block(std::move(memory));
    if (image.empty()) return block;
    WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, block.memory_->streams().Acquire());
    cuda::CudaStream& stream = lease.stream();
    WARPD_ASSIGN_OR_RETURN(block.address_, block.memory_->pool().Allocate(image.size(), stream));
    patch(block.address_, image);
    WARPD_RETURN_IF_ERROR(cuda::CopyHostToDevice(stream, block.address_, image.data(), image.size()));
    WARPD_RETURN_IF_ERROR(stream.Synchronize());  // usable on any stream from now on
    return block;
  }

  DeviceBlock(DeviceBlock&& other) noexcept
      : memory_(std::move(other.memory_)), address_(std::exchange(other.address_, 0)) {}
  DeviceBlock& operator=(DeviceBlock&&) = delete;
  ~DeviceBlock() {
    if (address_ == 0 || memory_->context().poisoned()) return;
    absl::StatusOr<cuda::StreamPool::Lease> lease = memory_->streams().Acquire();
    if (lease.ok()) memory_->pool().Free(address_, lease->stream()).IgnoreError();
  }

  cuda::CUdeviceptr address() const { return address_; }

 private:
  explicit DeviceBlock(std::shared_ptr<cuda::CudaMemory> memory) : memory_(std::move(memory)) {}
  std::shared_ptr<cuda::CudaMemory> memory_;
  cuda::CUdeviceptr address_ = 0;
};

class CudaRecordedWork final : public RecordedWork {
 public:
  CudaRecordedWork(CudaDevice* device, std::shared_ptr<cuda::CudaMemory> memory, cuda::CudaGraph graph,
                   DeviceBlock block, size_t kernels, std::string what,
                   std::vector<std::shared_ptr<const cuda::CudaModule>> modules)
      : device_(device), memory_(std::move(memory)), block_(std::move(block)), modules_(std::move(modules)),
        graph_(std::move(graph)), kernels_(kernels), what_(std::move(what)) {}

  size_t kernels() const override { return kernels_; }

  absl::Status Run(absl::Span<wp::launch_ctx> ctxs, int32_t* cancel) override {
    if (ctxs.size() != kernels_) return absl::InternalError("recorded work: wrong number of contexts");
    WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, memory_->streams().Acquire());
    cuda::CudaStream& stream = lease.stream();
    CudaWorkTimer timer(lease);  // the scheduler charges the replay's device time
    WARPD_RETURN_IF_ERROR(graph_.Launch(stream));
    timer.Issued();
    const cuda::CUdeviceptr live = block_.address() + kernels_ * kSlot;  // the used contexts
    const absl::Duration limit = device_->launch_time_limit();
    WARPD_RETURN_IF_ERROR(device_->AwaitWork(*memory_, stream, cancel, ContextAddresses(live, kernels_), limit, what_));
    timer.Done();
    WARPD_RETURN_IF_ERROR(DownloadContexts(stream, live, ctxs));
    return StopStatus(__atomic_load_n(cancel, __ATOMIC_RELAXED), what_, limit);
  }

 private:
  CudaDevice* const device_;  // devices live as long as the daemon
  const std::shared_ptr<cuda::CudaMemory> memory_;
  const DeviceBlock block_;
  // Declared before graph_: the executable graph goes before the modules it launches.
  const std::vector<std::shared_ptr<const cuda::CudaModule>> modules_;
  cuda::CudaGraph graph_;
  const size_t kernels_;
  const std::string what_;  // "a graph replay of 3 kernel launches ('inc', 'scale')"
};

// A batch (CudaDevice::BatchWork), its block uploaded by Finish: Run issues
// every operation on one pooled stream, with an event after each kernel's
// runs when the device has a time limit, waits once (each kernel's time
// limit restarting as the one before completes, CudaDevice::AwaitWork) and
// downloads the contexts. No graph: nothing to instantiate for work that
// runs once.
class CudaBatchedWork final : public RecordedWork {
 public:
  CudaBatchedWork(CudaDevice* device, std::shared_ptr<cuda::CudaMemory> memory, DeviceBlock block,
                  std::vector<Op> ops, size_t kernels, uint64_t blocks_at, std::string what)
      : device_(device), memory_(std::move(memory)), block_(std::move(block)), ops_(std::move(ops)),
        kernels_(kernels), runs_(CountRuns(ops_)), blocks_at_(blocks_at), what_(std::move(what)) {}

  size_t kernels() const override { return kernels_; }

  absl::Status Run(absl::Span<wp::launch_ctx> ctxs, int32_t* cancel) override {
    if (ctxs.size() != kernels_) return absl::InternalError("batched work: wrong number of contexts");
    WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, memory_->streams().Acquire());
    cuda::CudaStream& stream = lease.stream();
    const absl::Duration limit = device_->launch_time_limit();
    // With a time limit, an event after each kernel run (the stream's own,
    // reused), so every run gets the limit of its own, as one by one.
    absl::Span<cuda::CudaEvent> events;
    std::vector<CudaDevice::KernelMark> marks;
    std::vector<size_t> slot_of;  // each mark's kernel
    if (limit > absl::ZeroDuration() && kernels_ > 0) {
      WARPD_ASSIGN_OR_RETURN(events, lease.MarkEvents(runs_));
      marks.reserve(runs_);
      slot_of.reserve(runs_);
      for (const Op& op : ops_) {
        const auto* k = std::get_if<KernelOp>(&op);
        if (k == nullptr) continue;
        for (uint32_t run = 0; run < k->runs; ++run) {
          marks.push_back(CudaDevice::KernelMark{&events[marks.size()], limit});
          slot_of.push_back(k->slot);
        }
      }
    }
    const cuda::CUdeviceptr contexts = block_.address();
    CudaWorkTimer timer(lease);  // the scheduler charges the batch's device time
    absl::Status issued = CudaWorkIssuer::IssueOps(stream, ops_, contexts, contexts + blocks_at_, events);
    timer.Issued();
    // What was issued before a failure still runs: wait for it either way,
    // so the faults of the commands that ran come first.
    size_t late = marks.size();
    WARPD_RETURN_IF_ERROR(
        device_->AwaitWork(*memory_, stream, cancel, ContextAddresses(contexts, kernels_), limit, what_, marks, &late));
    timer.Done();
    WARPD_RETURN_IF_ERROR(DownloadContexts(stream, contexts, ctxs));
    WARPD_RETURN_IF_ERROR(issued);
    const int32_t stopped = __atomic_load_n(cancel, __ATOMIC_RELAXED);
    // The kernel that ran past its limit reports it as its own launch would
    // (its file and line); the batch's message is the caller's fallback.
    if (stopped == abi::kCancelTimeout && late < marks.size()) ctxs[slot_of[late]].cancel = stopped;
    return StopStatus(stopped, what_, limit);
  }

 private:
  CudaDevice* const device_;  // devices live as long as the daemon
  const std::shared_ptr<cuda::CudaMemory> memory_;
  const DeviceBlock block_;
  static size_t CountRuns(const std::vector<Op>& ops) {
    size_t runs = 0;
    for (const Op& op : ops) {
      if (const auto* k = std::get_if<KernelOp>(&op)) runs += k->runs;
    }
    return runs;
  }

  const std::vector<Op> ops_;  // holds the modules it launches
  const size_t kernels_;
  const size_t runs_;  // kernel runs in all: one time-limit mark each
  const uint64_t blocks_at_;
  const std::string what_;  // "a batch of 3 kernel launches ('inc', 'scale')"
};

class CudaWorkRecorder final : public WorkRecorder {
 public:
  // `once`: a batch (BatchWork), run as issued; else a graph to replay.
  CudaWorkRecorder(CudaDevice* device, std::shared_ptr<cuda::CudaMemory> memory, bool once)
      : device_(device), memory_(std::move(memory)), once_(once) {}

  absl::Status Kernel(std::shared_ptr<const abi::CompiledModule> module, const abi::CompiledKernel& kernel,
                      const wp::launch_ctx& ctx, const void* args, Device::Pass pass, uint32_t runs,
                      const Device::LaunchShape& shape = {}) override {
    const abi::KernelLayout& layout = kernel.layout;
    if (ctx.output.data != nullptr) {
      return absl::UnimplementedError(absl::StrCat("kernel '", layout.display_name, "' prints: it is not recorded"));
    }
    KernelOp op;
    op.display_name = layout.display_name;
    op.adjoint = pass == Device::Pass::kAdjoint;
    op.compiled = module;
    op.layout = &layout;
    WARPD_ASSIGN_OR_RETURN(op.entry, device_->EntryFor(*module, kernel, pass));
    WARPD_ASSIGN_OR_RETURN(op.module, device_->LoadedModule(*memory_, *module));
    WARPD_ASSIGN_OR_RETURN(op.function, op.module->Function(op.entry));
    WARPD_ASSIGN_OR_RETURN(op.dims, device_->GridFor(uint64_t(ctx.bounds.size), shape));
    // A batch marks every run with an event (its own time limit): at most
    // kMaxBatchRuns; past that the launch runs on its own.
    if (once_ && runs_ + runs > kMaxBatchRuns) {
      return absl::UnimplementedError(absl::StrCat(Kind(), " takes at most ", kMaxBatchRuns, " kernel runs"));
    }
    op.runs = runs;
    op.slot = contexts_.size();
    const uint64_t block_bytes = CudaDevice::BlockBytes(layout, op.adjoint);
    op.by_pointer = CudaDevice::BlockByPointer(block_bytes);
    const uint64_t objects_bytes =
        ctx.objects != nullptr ? uint64_t(ctx.num_objects) * sizeof(wp::object_entry) : 0;
    const uint64_t more_blocks = (op.by_pointer ? Aligned(block_bytes) : 0) + Aligned(objects_bytes);
    if (ContextsBytes(contexts_.size() + 1) + blocks_bytes_ + more_blocks > kMaxRecordedBytes) {
      return absl::UnimplementedError(absl::StrCat(Kind(), "'s launches need more device memory than one recording takes"));
    }
    if (layout.args_size > 0) op.block.assign(static_cast<const char*>(args), block_bytes);
    op.block_at = blocks_bytes_;
    op.objects_at = blocks_bytes_ + (op.by_pointer ? Aligned(block_bytes) : 0);
    if (objects_bytes > 0) op.objects.assign(reinterpret_cast<const char*>(ctx.objects), objects_bytes);
    blocks_bytes_ += more_blocks;
    wp::launch_ctx c = ctx;
    std::memset(&c.fault, 0, sizeof(c.fault));
    c.cancel = 0;
    c.output = wp::print_buffer{};
    contexts_.push_back(c);
    runs_ += runs;
    ops_.push_back(std::move(op));
    return absl::OkStatus();
  }

  absl::Status Copy(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset,
                    uint64_t n) override {
    WARPD_RETURN_IF_ERROR(device_->CheckRange(dst, dst_offset, n, "copy destination"));
    WARPD_RETURN_IF_ERROR(device_->CheckRange(src, src_offset, n, "copy source"));
    if (n == 0) return absl::OkStatus();
    const uint64_t d = dst.address() + dst_offset, s = src.address() + src_offset;
    if (!dst.contiguous() || !src.contiguous() || (d < s ? s - d < n : d - s < n)) {
      return absl::UnimplementedError("a strided or overlapping copy is not recorded");
    }
    WARPD_RETURN_IF_ERROR(Moves(n));
    ops_.push_back(CopyOp{d, s, n});
    return absl::OkStatus();
  }

  absl::Status Fill(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern) override {
    WARPD_RETURN_IF_ERROR(device_->CheckRange(array, offset, n, "fill"));
    if (n == 0) return absl::OkStatus();
    if (pattern.empty() || n % pattern.size() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("fill: ", n, " bytes are not a whole number of ", pattern.size(), "-byte patterns"));
    }
    if (!array.contiguous()) return absl::UnimplementedError("a strided fill is not recorded");
    const uint64_t dst = array.address() + offset;
    if (!cuda::FillWritable(dst, pattern.data(), pattern.size())) {
      return absl::UnimplementedError("a fill pattern that memset cannot write is not recorded");
    }
    WARPD_RETURN_IF_ERROR(Moves(n));
    ops_.push_back(FillOp{dst, n, std::string(pattern)});
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<RecordedWork>> Finish() override {
    const size_t kernels = contexts_.size();
    const uint64_t blocks_at = ContextsBytes(kernels);
    const uint64_t bytes = blocks_at + blocks_bytes_;
    // The (pristine) contexts, then the blocks passed by pointer.
    std::vector<std::byte> image(bytes);
    for (size_t k = 0; k < kernels; ++k) std::memcpy(image.data() + k * kSlot, &contexts_[k], sizeof(wp::launch_ctx));
    for (const Op& op : ops_) {
      const auto* k = std::get_if<KernelOp>(&op);
      if (k != nullptr && k->by_pointer) std::memcpy(image.data() + blocks_at + k->block_at, k->block.data(), k->block.size());
      if (k != nullptr && !k->objects.empty()) {
        std::memcpy(image.data() + blocks_at + k->objects_at, k->objects.data(), k->objects.size());
      }
    }
    // Each context with objects points at its table in the block.
    auto patch = [&](cuda::CUdeviceptr base, absl::Span<std::byte> bytes) {
      for (const Op& op : ops_) {
        const auto* k = std::get_if<KernelOp>(&op);
        if (k == nullptr || k->objects.empty()) continue;
        const uint64_t table = base + blocks_at + k->objects_at;
        std::memcpy(bytes.data() + k->slot * kSlot + offsetof(wp::launch_ctx, objects), &table, sizeof(table));
      }
    };
    // Uploaded once; each replay of a graph copies the pristine contexts
    // over the used ones.
    WARPD_ASSIGN_OR_RETURN(DeviceBlock block, DeviceBlock::Upload(memory_, absl::MakeSpan(image), patch));
    if (once_) {
      return std::make_unique<CudaBatchedWork>(device_, memory_, std::move(block), std::move(ops_), kernels, blocks_at,
                                               Describe());
    }
    std::vector<std::shared_ptr<const cuda::CudaModule>> modules;
    WARPD_ASSIGN_OR_RETURN(cuda::StreamPool::Lease lease, memory_->streams().Acquire());
    WARPD_ASSIGN_OR_RETURN(cuda::CudaGraph graph, Capture(lease.stream(), block.address(), blocks_at, &modules));
    return std::make_unique<CudaRecordedWork>(device_, memory_, std::move(graph), std::move(block), kernels,
                                              Describe(), std::move(modules));
  }

 private:
  // A graph keeps each context twice (pristine and used), a batch once.
  uint64_t ContextsBytes(size_t kernels) const { return (once_ ? 1 : 2) * kernels * kSlot; }
  const char* Kind() const { return once_ ? "the batch" : "the graph"; }

  absl::Status Moves(uint64_t n) {
    if (n > kMaxRecordedMoves - moved_) {
      return absl::UnimplementedError(absl::StrCat(Kind(), "'s copies and fills move more bytes than one recording takes"));
    }
    moved_ += n;
    return absl::OkStatus();
  }

  // "a graph replay of 3 kernel launches ('inc', 'scale')", "a batch of 2
  // kernel launches ('inc')", "kernel 'inc'", for messages.
  std::string Describe() const {
    // A batch with one kernel launch (and copies or fills) is named as the
    // launch alone would be.
    if (once_ && runs_ == 1) {
      for (const Op& op : ops_) {
        if (const auto* k = std::get_if<KernelOp>(&op)) return absl::StrCat("kernel '", k->display_name, "'");
      }
    }
    std::string names;
    int listed = 0;
    for (const Op& op : ops_) {
      const auto* k = std::get_if<KernelOp>(&op);
      if (k == nullptr || names.find("'" + k->display_name + "'") != std::string::npos) continue;
      if (++listed > 3) {
        absl::StrAppend(&names, ", ...");
        break;
      }
      absl::StrAppend(&names, names.empty() ? "" : ", ", "'", k->display_name, "'");
    }
    return absl::StrCat(once_ ? "a batch of " : "a graph replay of ", runs_,
                        runs_ == 1 ? " kernel launch" : " kernel launches",
                        names.empty() ? "" : absl::StrCat(" (", names, ")"));
  }

  // Captures the operations on `stream`; the capture has ended whatever
  // happens.
  absl::StatusOr<cuda::CudaGraph> Capture(cuda::CudaStream& stream, cuda::CUdeviceptr block, uint64_t blocks_at,
                                          std::vector<std::shared_ptr<const cuda::CudaModule>>* modules) {
    const size_t kernels = contexts_.size();
    for (const Op& op : ops_) {
      if (const auto* k = std::get_if<KernelOp>(&op)) modules->push_back(k->module);
    }
    WARPD_RETURN_IF_ERROR(cuda::CudaGraph::BeginCapture(stream));
    absl::Status status =
        kernels > 0 ? cuda::CopyDeviceToDevice(stream, block + kernels * kSlot, block, kernels * kSlot)
                    : absl::OkStatus();
    if (status.ok()) status = CudaWorkIssuer::IssueOps(stream, ops_, block + kernels * kSlot, block + blocks_at);
    absl::StatusOr<cuda::CudaGraph> graph = cuda::CudaGraph::EndCapture(stream);
    if (!status.ok()) return status;  // the capture ended above; its graph, if any, is dropped
    return graph;
  }

  CudaDevice* const device_;
  const std::shared_ptr<cuda::CudaMemory> memory_;
  const bool once_;
  std::vector<Op> ops_;
  std::vector<wp::launch_ctx> contexts_;
  uint64_t blocks_bytes_ = 0;
  uint64_t runs_ = 0;   // kernel launches in all
  uint64_t moved_ = 0;  // bytes the copies and fills move
};

absl::StatusOr<std::unique_ptr<WorkRecorder>> CudaDevice::RecordWork() {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  return std::make_unique<CudaWorkRecorder>(this, std::move(m), /*once=*/false);
}

absl::StatusOr<std::unique_ptr<WorkRecorder>> CudaDevice::BatchWork() {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaMemory> m, Memory());
  return std::make_unique<CudaWorkRecorder>(this, std::move(m), /*once=*/true);
}

}  // namespace warpd::runtime
