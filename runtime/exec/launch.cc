#include "runtime/exec/launch.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "runtime/device/device.h"
#include "runtime/device/recorded_work.h"
#include "runtime/exec/kernel_output.h"
#include "runtime/exec/output_buffer.h"
#include "runtime/memory/size_math.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {

namespace {

using abi::CompiledKernel;
using abi::CompiledModule;
using abi::ParamLayout;

using abi::kCancelShutdown;
using abi::kCancelTimeout;

// The most kernel output one repeated launch keeps (as much as a stream
// keeps waiting); later runs' text is dropped and counted.
constexpr size_t kMaxRepeatOutput = size_t{1} << 20;

// Where an array descriptor keeps its flags (wp::array_t::reserved).
constexpr size_t kDescriptorFlagsOffset = 28;
// Its bits: kGradConsume and kGradOwn (launch.h, from the caller), and 2:
// the gradient's elements each have one writer (docs/launch_abi.md).
constexpr int32_t kDescriptorExclusive = 2;

// Argument blocks are 64-byte aligned (the ABI asks for >= 16).
constexpr std::align_val_t kArgsAlign{64};

struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete[](p, kArgsAlign); }
};
using ArgsBuffer = std::unique_ptr<std::byte[], AlignedFree>;

class LaunchCommand final : public Command {
 public:
  LaunchCommand(std::shared_ptr<const CompiledModule> module, const CompiledKernel* kernel,
                ArgsBuffer args, std::vector<std::shared_ptr<const Array>> arrays,
                const wp::launch_bounds& bounds, uint32_t repeat,
                bool adjoint, size_t block_bytes, std::shared_ptr<const ObjectTable> objects,
                Device::LaunchShape shape)
      : module_(std::move(module)), kernel_(kernel), adjoint_(adjoint),
        args_(std::move(args)), arrays_(std::move(arrays)), repeat_(repeat), block_bytes_(block_bytes),
        objects_(std::move(objects)), shape_(shape) {
    std::memset(&ctx_, 0, sizeof(ctx_));
    ctx_.bounds = bounds;
    if (objects_ != nullptr && !objects_->empty()) {
      ctx_.objects = objects_->entries();
      ctx_.num_objects = static_cast<wp::int64>(objects_->size());
    }
  }

  absl::Status Execute(Device& device) override {
    if (ctx_.bounds.size == 0) return absl::OkStatus();
    // No build changes the session's objects while the runs may query them.
    std::optional<absl::ReaderMutexLock> objects_in_use;
    if (absl::Mutex* lock = ObjectLock(); lock != nullptr) objects_in_use.emplace(lock);
    // Each run sees the previous run's writes; the first failing run stops
    // the rest (its fault state is what FaultStatus reports).
    absl::Status status;
    for (uint32_t run = 0; run < repeat_ && status.ok(); ++run) status = RunOnce(device);
    return status;
  }

  void Cancel() override { __atomic_store_n(&ctx_.cancel, kCancelShutdown, __ATOMIC_RELAXED); }

  void Rearm() override {
    std::memset(&ctx_.fault, 0, sizeof(ctx_.fault));
    __atomic_store_n(&ctx_.cancel, 0, __ATOMIC_RELAXED);
    output_.Clear();
  }

  std::string TakeOutput() override {
    return output_.Take(absl::StrCat(" of '", kernel_->layout.display_name, "'"),
                        absl::StrCat("its repeated runs printed more than ", kMaxRepeatOutput, " bytes"));
  }

  uint64_t Launches() const override { return repeat_; }
  absl::Mutex* ObjectLock() const override { return objects_ != nullptr ? objects_->use_lock() : nullptr; }

  // The argument block and the descriptors' owners; text printed by a
  // running launch is bounded apart (kMaxRepeatOutput) and moves to the
  // stream, which charges it.
  uint64_t HeldBytes() const override {
    return kBaseBytes + sizeof(*this) + block_bytes_ + arrays_.capacity() * sizeof(arrays_[0]);
  }

  // Its runs, sharing one context (and its object table, which the
  // recorder copies to the device). Printing takes a buffer per run: those
  // run on their own.
  absl::StatusOr<size_t> Record(WorkRecorder& recorder) override {
    if (ctx_.bounds.size == 0) return 0;
    if (kernel_->may_print) {
      return absl::UnimplementedError(absl::StrCat("kernel '", kernel_->layout.display_name, "' prints: run on its own"));
    }
    // ctx_ as between runs: no print buffer; the recorder starts each replay
    // without fault or cancel.
    const Device::Pass pass = adjoint_ ? Device::Pass::kAdjoint : Device::Pass::kForward;
    WARPD_RETURN_IF_ERROR(recorder.Kernel(module_, *kernel_, ctx_, args_.get(), pass, repeat_, shape_));
    return 1;
  }

  absl::Status Replayed(Device& device, absl::Span<const wp::launch_ctx> ctxs) override {
    for (const wp::launch_ctx& c : ctxs) {
      ctx_.fault = c.fault;
      ctx_.cancel = c.cancel;
      if (absl::Status s = Outcome(device.launch_time_limit()); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string Describe() const override {
    const char* what = adjoint_ ? "adjoint launch " : "launch ";
    return repeat_ > 1 ? absl::StrCat(what, kernel_->layout.display_name, " x", repeat_)
                       : absl::StrCat(what, kernel_->layout.display_name);
  }

 private:
  absl::Status RunOnce(Device& device) {
    const absl::Duration limit = device.launch_time_limit();
    // A kernel that may print gets a fresh output buffer for this run
    // only (kernel_output.h); its text is kept for the stream, even when the
    // run then fails. Without memory, its prints are dropped and counted.
    // An adjoint prints as Warp's does: its replay prints again, and each
    // print() its adjoints ("adj: ...") where the reverse sweep passes it.
    const abi::PrintTable* prints = kernel_->may_print ? module_->print_table() : nullptr;
    std::unique_ptr<uint8_t[]> records;
    if (prints != nullptr) {
      records.reset(new (std::nothrow) uint8_t[kOutputRecordBytes]);
      ctx_.output.data = records.get();
      ctx_.output.capacity = records ? kOutputRecordBytes : 0;
    }
    absl::Status run =
        device.RunKernel(*module_, *kernel_, &ctx_, args_.get(), adjoint_ ? Device::Pass::kAdjoint : Device::Pass::kForward,
                         shape_);
    if (prints != nullptr) {
      const uint64_t committed =
          std::min(__atomic_load_n(&ctx_.output.committed, __ATOMIC_ACQUIRE), ctx_.output.capacity);
      std::string text = FormatKernelOutput(*prints, records.get(), committed,
                                            __atomic_load_n(&ctx_.output.dropped, __ATOMIC_ACQUIRE),
                                            kernel_->layout.display_name);
      output_.Append(std::move(text));  // repeated runs keep at most kMaxRepeatOutput bytes in all
      ctx_.output = wp::print_buffer{};
    }
    if (!run.ok()) return run;
    return Outcome(limit);
  }

  // The run's fault or cancel (ctx_) as a status; `limit`: the device's
  // launch time limit, for the message.
  absl::Status Outcome(absl::Duration limit) const {
    if (__atomic_load_n(&ctx_.fault.flag, __ATOMIC_ACQUIRE) != 0) return FaultStatus();
    const int32_t cancel = __atomic_load_n(&ctx_.cancel, __ATOMIC_RELAXED);
    if (cancel == kCancelTimeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "kernel '", kernel_->layout.display_name, "' (", kernel_->layout.file, ":", kernel_->layout.line,
          ") ran longer than this server's launch time limit of ", absl::FormatDuration(limit),
          " and was stopped"));
    }
    if (cancel != 0) {
      return absl::CancelledError(absl::StrCat("kernel '", kernel_->layout.display_name, "' was cancelled"));
    }
    return absl::OkStatus();
  }

  absl::Status FaultStatus() const {
    const wp::fault_info& f = ctx_.fault;
    const abi::KernelLayout& k = kernel_->layout;
    const std::string where =
        absl::StrCat("kernel '", k.display_name, "' at ", k.file, ":", f.line > 0 ? f.line : k.line);
    if (f.kind == wp::FAULT_INDEX_OUT_OF_BOUNDS && (f.array_ndim < 1 || f.array_ndim > 4)) {
      // Not an array: a dynamic vector component index.
      return absl::OutOfRangeError(absl::StrCat(where, ": index ", f.index,
                                                " out of bounds for a vector of length ",
                                                f.extent));
    }
    if (f.kind == wp::FAULT_INDEX_OUT_OF_BOUNDS) {
      const int ndim = f.array_ndim;
      int64_t shape[4];
      for (int d = 0; d < 4; ++d) shape[d] = f.shape[d];
      return absl::OutOfRangeError(absl::StrCat(where, ": index ", f.index,
                                                " out of bounds for dimension ", f.dim,
                                                " (shape ", FormatShape({shape, size_t(ndim)}),
                                                ")"));
    }
    if (f.kind == wp::FAULT_ADJOINT_LOOP) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": the backward pass cannot differentiate this loop exactly: it ran ", f.index,
          " iterations, and its adjoint keeps the starting values of at most ", f.extent,
          " (per thread) of the variables it changes and that the gradient depends on; move the loop body "
          "into a @wp.func, make the loop shorter, or keep its iterations' values in an array"));
    }
    if (f.kind == wp::FAULT_UNKNOWN_OBJECT) {
      // A kernel fault like an index fault (OUT_OF_RANGE); says nothing
      // about other sessions: an id they own reads as unknown.
      const char* want = ObjectKindName(f.dim);
      if (f.extent != wp::OBJECT_NONE) {
        return absl::OutOfRangeError(absl::StrFormat("%s: id 0x%016x is a %s, not a %s", where,
                                                          static_cast<uint64_t>(f.index), ObjectKindName(
                                                              static_cast<int32_t>(f.extent)), want));
      }
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: unknown %s id 0x%016x (not a live %s of this session on this device: never made, freed, or "
          "another session's)",
          where, want, static_cast<uint64_t>(f.index), want));
    }
    if (f.kind == wp::FAULT_OBJECT_INDEX) {
      const char* unit = " nodes";
      if (f.dim == wp::OBJECT_HASH_GRID || f.dim == wp::OBJECT_MESH) unit = " points";
      if (f.dim == wp::OBJECT_MESH_FACES) unit = " triangles";
      if (f.dim == wp::OBJECT_MESH_SLOTS) unit = " triangle indices";
      const bool mesh = f.dim == wp::OBJECT_MESH_FACES || f.dim == wp::OBJECT_MESH_SLOTS;
      return absl::OutOfRangeError(absl::StrCat(where, ": index ", f.index, " out of range for a ",
                                                ObjectKindName(mesh ? wp::OBJECT_MESH : f.dim), " of ", f.extent,
                                                unit));
    }
    if (f.kind == wp::FAULT_CANCELLED) {
      return absl::CancelledError(absl::StrCat(where, ": cancelled"));
    }
    return absl::InternalError(absl::StrCat(where, ": kernel fault of kind ", f.kind));
  }

  const std::shared_ptr<const CompiledModule> module_;
  const CompiledKernel* const kernel_;  // owned by module_
  const bool adjoint_;                  // runs the kernel's adjoint entry
  const ArgsBuffer args_;
  const std::vector<std::shared_ptr<const Array>> arrays_;  // keeps descriptors' data alive
  const uint32_t repeat_;  // runs per Execute, >= 1
  const size_t block_bytes_;
  // The session's objects kernels may query (ctx_.objects points into it).
  const std::shared_ptr<const ObjectTable> objects_;
  const Device::LaunchShape shape_;  // the GPU grid (wp.launch block_dim, max_blocks)
  wp::launch_ctx ctx_;
  OutputBuffer output_{kMaxRepeatOutput};  // text printed by the last Execute
};

std::string ParamNames(const abi::KernelLayout& k) {
  return absl::StrJoin(k.params, ", ",
                       [](std::string* out, const ParamLayout& p) { out->append(p.name); });
}

absl::Status CheckDims(const abi::KernelLayout& k, absl::Span<const int64_t> dims,
                       wp::launch_bounds* bounds) {
  const std::string kernel = absl::StrCat("kernel '", k.display_name, "'");
  if (dims.empty() || dims.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        kernel, ": launch dim must have 1 to 4 dimensions, got ", dims.size()));
  }
  uint64_t size = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0 || dims[d] > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(kernel, ": launch dim ", FormatShape(dims),
                                                     ": dimension ", d, " must be in [0, ",
                                                     INT32_MAX, "]"));
    }
    auto next = CheckedMul(size, static_cast<uint64_t>(dims[d]));
    if (!next || *next > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kernel, ": launch dim ", FormatShape(dims), " has too many threads"));
    }
    size = *next;
  }
  if (k.tid_ndim >= 2 && static_cast<size_t>(k.tid_ndim) != dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kernel, " unpacks wp.tid() into ", k.tid_ndim, " indices, but is launched with ",
        dims.size(), "-dimensional dim ", FormatShape(dims)));
  }
  std::memset(bounds, 0, sizeof(*bounds));
  bounds->ndim = static_cast<wp::int32>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) bounds->shape[d] = static_cast<wp::int32>(dims[d]);
  bounds->size = static_cast<wp::int64>(size);
  return absl::OkStatus();
}

// A kernel may store any descriptor it can read (from its arguments, their
// array members, and the elements of descriptor arrays it is given) into
// any descriptor array it is given: each of those then holds every array
// the launch could have read a descriptor of (array_members.h), before the
// launch runs. Conservative: it may hold arrays the kernel never stored.
absl::Status HoldWhatALaunchMayStore(absl::Span<const std::shared_ptr<const Array>> arrays) {
  for (const std::shared_ptr<const Array>& a : arrays) {
    if (a->held() == nullptr) continue;
    if (absl::Status s = a->held()->Add(arrays, a.get()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Bit 1 of a gradient descriptor's flags (wp::array_t::reserved): its
// elements each have one writer, so the adjoint adds without atomics
// (adj_codegen.h, adj_exclusive). Set for a parameter the kernel accesses
// only at the thread's own element (abi::kAccessExclusive) whose gradient is
// contiguous and shares no memory with another gradient array of the launch,
// but one with the same descriptor whose parameter qualifies too (the
// thread's own element either way). Not at all where the adjoint block holds
// arrays this cannot see (struct members, indexed arrays).
void MarkExclusiveGradients(const abi::KernelLayout& k, const std::vector<LaunchArgValue>& adj, std::byte* base) {
  struct Grad {
    size_t param;
    const Array* array;
    uintptr_t begin, end;
    bool candidate;
  };
  std::vector<Grad> grads;
  for (size_t i = 0; i < adj.size() && i < k.params.size(); ++i) {
    const ParamLayout& p = k.params[i];
    if (p.type->is_indexed_array() || (p.type->is_struct() && p.type->holds_array())) return;
    if (!p.type->is_array()) continue;
    const auto* array = std::get_if<std::shared_ptr<const Array>>(&adj[i]);
    if (array == nullptr || *array == nullptr) continue;
    const Array& a = **array;
    // Addresses compared only, as the argument descriptors hold them.
    const uintptr_t begin = a.address();
    grads.push_back({i, &a, begin, begin + a.size_bytes(), (p.access & abi::kAccessExclusive) != 0 && a.contiguous()});
  }
  for (const Grad& g : grads) {
    if (!g.candidate || g.begin == g.end) continue;
    bool alone = true;
    for (const Grad& h : grads) {
      if (&h == &g || h.end <= g.begin || g.end <= h.begin) continue;
      const bool same = h.candidate && h.begin == g.begin && h.end == g.end && h.array->dtype() == g.array->dtype() &&
                        std::equal(h.array->shape().begin(), h.array->shape().end(), g.array->shape().begin(),
                                   g.array->shape().end());
      if (!same) {
        alone = false;
        break;
      }
    }
    if (!alone) continue;
    int32_t flags = 0;
    std::byte* at = base + k.params[g.param].offset + kDescriptorFlagsOffset;
    std::memcpy(&flags, at, sizeof(flags));
    flags |= kDescriptorExclusive;
    std::memcpy(at, &flags, sizeof(flags));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareLaunch(
    std::shared_ptr<const CompiledModule> module, const std::string& kernel_name,
    absl::Span<const int64_t> dims, std::vector<LaunchArgValue> args, const std::string& device,
    const ArrayLookup* lookup, uint32_t repeat, std::vector<LaunchArgValue>* adj_args,
    const std::vector<int32_t>* adj_flags, std::shared_ptr<const ObjectTable> objects, Device::LaunchShape shape) {
  const CompiledKernel* kernel = module->FindKernel(kernel_name);
  if (kernel == nullptr) {
    std::vector<std::string> names;
    for (const auto& k : module->kernels()) names.push_back(k.layout.name);
    return absl::NotFoundError(absl::StrCat("module has no kernel '", kernel_name,
                                            "' (kernels: ", absl::StrJoin(names, ", "), ")"));
  }
  const abi::KernelLayout& k = kernel->layout;
  if (shape.block_dim > Device::LaunchShape::kMaxBlockDim) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", k.display_name, "': block_dim ", shape.block_dim,
                                                   " is more threads per block than CUDA allows (",
                                                   Device::LaunchShape::kMaxBlockDim, ")"));
  }
  if (repeat > kMaxLaunchRepeat) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", k.display_name, "': a launch repeats at most ",
                                                   kMaxLaunchRepeat, " times, got ", repeat));
  }
  if (!kernel->HasEntry(module->target(), /*adjoint=*/false)) {
    return absl::InternalError(absl::StrCat("kernel '", k.display_name, "' has no entry point"));
  }
  wp::launch_bounds bounds;
  if (absl::Status s = CheckDims(k, dims, &bounds); !s.ok()) return s;
  if (args.size() != k.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", k.display_name, "' takes ", k.params.size(), " argument",
        k.params.size() == 1 ? "" : "s", " (", ParamNames(k), "), got ", args.size()));
  }

  // An adjoint launch's block holds a second block of the same layout (the
  // parameters' adjoints) at args_size.
  const bool adjoint = adj_args != nullptr;
  if (adjoint) {
    const bool has_adjoint = kernel->HasEntry(module->target(), /*adjoint=*/true);
    if (!has_adjoint && !kernel->adjoint_error.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("kernel '", k.display_name, "' has no adjoint: ", kernel->adjoint_error));
    }
    if (!has_adjoint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel '", k.display_name, "' was compiled without its backward pass (load its module with backward)"));
    }
    if (adj_args->size() != k.params.size()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", k.display_name, "' takes ", k.params.size(),
                                                     " adjoint argument", k.params.size() == 1 ? "" : "s", " (",
                                                     ParamNames(k), "), got ", adj_args->size()));
    }
  }
  const size_t block = std::max<size_t>(adjoint ? 2 * size_t{k.args_size} : k.args_size, 16);
  ArgsBuffer buffer(new (kArgsAlign) std::byte[block]);
  std::memset(buffer.get(), 0, block);
  std::vector<std::shared_ptr<const Array>> arrays;
  auto pack = [&](std::vector<LaunchArgValue>& vals, std::byte* base, const char* role,
                  const std::vector<int32_t>* flags) -> absl::Status {
    for (size_t i = 0; i < vals.size(); ++i) {
      const ParamLayout& p = k.params[i];
      // Built only for messages: the success path allocates nothing per argument.
      auto what = [&] { return absl::StrCat("kernel '", k.display_name, "': ", role, "argument '", p.name, "'"); };
      if (uint64_t end = uint64_t{p.offset} + p.size; end > k.args_size) {
        return absl::InternalError(absl::StrCat(what(), " lies outside the argument block"));
      }
      if (p.type->is_array() && !p.type->is_indexed_array()) {
        const auto* array = std::get_if<std::shared_ptr<const Array>>(&vals[i]);
        if (array == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat(what(), " expects ", p.type->ToString(), ", got a value, not an array"));
        }
        if (*array == nullptr) continue;  // None: an empty descriptor (data null, shape 0), as in Warp
        const Array& a = **array;
        if (!a.Matches(p.type)) {
          return absl::InvalidArgumentError(
              absl::StrCat(what(), " expects ", p.type->ToString(), ", got ", a.TypeName()));
        }
        if (a.device() != device) return CheckArrayDevice(a, device, what());
        if (p.size != types::kArrayDescriptorSize) {
          return absl::InternalError(absl::StrCat(what(), ": array parameter of size ", p.size));
        }
        a.WriteDescriptor(base + p.offset);
        if (flags != nullptr && i < flags->size() && ((*flags)[i] & (kGradConsume | kGradOwn)) != 0) {
          const int32_t bits = (*flags)[i] & (kGradConsume | kGradOwn);
          std::memcpy(base + p.offset + kDescriptorFlagsOffset, &bits, sizeof(bits));
        }
        arrays.push_back(*array);
      } else {
        const auto* bytes = std::get_if<std::string>(&vals[i]);
        if (bytes == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat(what(), " expects a value of type ", p.type->ToString(), ", got an array"));
        }
        if (bytes->size() != p.size) {
          return absl::InvalidArgumentError(absl::StrCat(what(), " of type ", p.type->ToString(),
                                                         " takes ", p.size, " bytes, got ",
                                                         bytes->size()));
        }
        if (!bytes->empty()) std::memcpy(base + p.offset, bytes->data(), bytes->size());
        if (p.type->holds_array() || p.type->is_indexed_array()) {
          if (lookup == nullptr)
            return absl::InvalidArgumentError(absl::StrCat(what(), ": structs with array members are not supported here"));
          absl::Status st = p.type->is_indexed_array()
                                ? BindArraySlot(p.type, base + p.offset, *lookup, device, &arrays, what)
                                : BindArrayMembers(p.type, base + p.offset, *lookup, device, &arrays, what);
          if (!st.ok()) return st;
        }
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status s = pack(args, buffer.get(), "", nullptr); !s.ok()) return s;
  if (adjoint) {
    if (absl::Status s = pack(*adj_args, buffer.get() + k.args_size, "adjoint ", adj_flags); !s.ok()) return s;
    MarkExclusiveGradients(k, *adj_args, buffer.get() + k.args_size);
  }
  if (absl::Status s = HoldWhatALaunchMayStore(arrays); !s.ok()) return s;
  return std::make_unique<LaunchCommand>(std::move(module), kernel, std::move(buffer), std::move(arrays), bounds,
                                         std::max<uint32_t>(repeat, 1), adjoint, block, std::move(objects), shape);
}

}  // namespace warpd::runtime
