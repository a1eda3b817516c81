#include "runtime/exec/command.h"

#include <algorithm>
#include <atomic>
#include <new>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "runtime/device/recorded_work.h"

namespace warpd::runtime {

namespace {

class CopyCommand final : public Command {
 public:
  CopyCommand(std::shared_ptr<const Array> dst, std::shared_ptr<const Array> src)
      : dst_(std::move(dst)), src_(std::move(src)) {}

  absl::Status Execute(Device& device) override {
    return device.CopyRange(*dst_, 0, *src_, 0, dst_->size_bytes(), &cancel_);
  }
  absl::StatusOr<size_t> Record(WorkRecorder& recorder) override {
    WARPD_RETURN_IF_ERROR(recorder.Copy(*dst_, 0, *src_, 0, dst_->size_bytes()));
    return 0;
  }
  // A strided copy walks element by element (array_bytes.h): it stops early.
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override { return "copy"; }

 private:
  std::shared_ptr<const Array> dst_, src_;
  std::atomic<bool> cancel_{false};
};

// Between a GPU array and a CPU array's host memory, on the GPU's stream:
// the GPU device's Upload (the CPU array's bytes into the GPU array) or
// Download (the other way), through its pinned staging (PrepareCopy).
class HostCopyCommand final : public Command {
 public:
  HostCopyCommand(std::shared_ptr<const Array> dst, std::shared_ptr<const Array> src)
      : dst_(std::move(dst)), src_(std::move(src)) {}

  absl::Status Execute(Device& device) override {
    const uint64_t n = dst_->size_bytes();
    if (src_->device() == "cpu") return device.Upload(*dst_, 0, absl::MakeConstSpan(src_->data(), n));
    return device.Download(*src_, 0, absl::MakeSpan(dst_->data(), n));
  }
  std::string Describe() const override { return "copy between devices"; }

 private:
  std::shared_ptr<const Array> dst_, src_;
};

// Between an array on this stream's GPU and one on another GPU (moved
// through its device, `other`), piece by piece through host memory
// (PrepareCopy).
class PeerCopyCommand final : public Command {
 public:
  PeerCopyCommand(std::shared_ptr<const Array> dst, std::shared_ptr<const Array> src, Device* other,
                  bool other_is_src)
      : dst_(std::move(dst)), src_(std::move(src)), other_(other), other_is_src_(other_is_src) {}

  absl::Status Execute(Device& device) override {
    Device& from = other_is_src_ ? *other_ : device;
    Device& to = other_is_src_ ? device : *other_;
    // Device to device where the two can (GPUs: peer to peer), else through
    // the host in pieces.
    if (absl::Status direct = to.CopyFromDevice(*dst_, from, *src_, &cancel_);
        direct.code() != absl::StatusCode::kUnimplemented) {
      return direct;
    }
    const uint64_t n = dst_->size_bytes(), step = PieceBytes();
    std::unique_ptr<std::byte[]> piece(new (std::nothrow) std::byte[step]);
    if (piece == nullptr && n > 0) return absl::ResourceExhaustedError("copy between GPUs: no host memory");
    for (uint64_t at = 0; at < n; at += step) {
      if (cancel_.load(std::memory_order_relaxed)) return absl::CancelledError("copy between GPUs: cancelled");
      const absl::Span<std::byte> part(piece.get(), std::min(step, n - at));
      WARPD_RETURN_IF_ERROR(from.Download(*src_, at, part));
      WARPD_RETURN_IF_ERROR(to.Upload(*dst_, at, part));
    }
    return absl::OkStatus();
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override { return "copy between GPUs"; }
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this) + PieceBytes(); }

 private:
  // A strided side moves in one piece: a device moves a strided range
  // through the whole span it covers, so pieces would move it again each.
  uint64_t PieceBytes() const {
    const uint64_t n = dst_->size_bytes();
    return dst_->contiguous() && src_->contiguous() ? std::min(n, kPeerCopyPieceBytes) : n;
  }

  std::shared_ptr<const Array> dst_, src_;
  Device* const other_;  // devices live as long as the daemon
  const bool other_is_src_;
  std::atomic<bool> cancel_{false};
};

class FillCommand final : public Command {
 public:
  FillCommand(std::shared_ptr<const Array> array, std::string value)
      : array_(std::move(array)), value_(std::move(value)) {}

  absl::Status Execute(Device& device) override {
    return device.FillRange(*array_, 0, array_->size_bytes(), value_, &cancel_);
  }
  absl::StatusOr<size_t> Record(WorkRecorder& recorder) override {
    WARPD_RETURN_IF_ERROR(recorder.Fill(*array_, 0, array_->size_bytes(), value_));
    return 0;
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override { return "fill"; }
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this) + value_.capacity(); }

 private:
  std::shared_ptr<const Array> array_;
  std::string value_;
  std::atomic<bool> cancel_{false};
};

class FreeCommand final : public Command {
 public:
  explicit FreeCommand(std::shared_ptr<const Array> array) : array_(std::move(array)) {}
  absl::Status Execute(Device&) override {
    array_.reset();
    return absl::OkStatus();
  }
  std::string Describe() const override { return "free"; }

 private:
  std::shared_ptr<const Array> array_;
};

}  // namespace

absl::StatusOr<size_t> Command::Record(WorkRecorder&) {
  return absl::UnimplementedError(absl::StrCat(Describe(), " is not recorded: it runs on its own"));
}

absl::Status CheckArrayDevice(const Array& array, const std::string& device,
                              const std::string& what) {
  if (array.device() != device) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is on device '", array.device(),
                                                   "', but the command runs on '", device, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Command>> PrepareCopy(std::shared_ptr<const Array> dst,
                                                     std::shared_ptr<const Array> src,
                                                     const std::string& device, const DeviceLookup* devices) {
  // A GPU's stream copies between its arrays and a CPU array's host memory,
  // or from another GPU's array into its own.
  const bool host_copy = device != "cpu" && dst->device() != src->device() &&
                         (dst->device() == "cpu" || src->device() == "cpu");
  const bool peer_copy = device != "cpu" && dst->device() != src->device() && dst->device() != "cpu" &&
                         src->device() != "cpu" && (dst->device() == device || src->device() == device);
  const bool other_is_src = peer_copy && dst->device() == device;
  Device* other = nullptr;
  if (peer_copy) {
    if (devices == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("copy from '", src->device(), "' to '", dst->device(),
                                                     "': a copy between GPUs is not captured in a graph"));
    }
    WARPD_ASSIGN_OR_RETURN(other, (*devices)(other_is_src ? src->device() : dst->device()));
    if (dst->dtype()->holds_array() || src->dtype()->holds_array()) {
      return absl::InvalidArgumentError("copy between devices: arrays of structs holding arrays stay on their device");
    }
  }
  if (host_copy) {
    const Array& host = dst->device() == "cpu" ? *dst : *src;
    if (!host.contiguous()) {
      return absl::InvalidArgumentError(
          "copy between devices: the CPU array must be contiguous (copy a strided view into a contiguous array first)");
    }
    if (dst->dtype()->holds_array() || src->dtype()->holds_array()) {
      return absl::InvalidArgumentError("copy between devices: arrays of structs holding arrays stay on their device");
    }
  }
  if (absl::Status s = CheckArrayDevice(
          *dst, (host_copy && dst->device() == "cpu") || (peer_copy && !other_is_src) ? dst->device() : device,
          "copy destination");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckArrayDevice(
          *src, (host_copy && src->device() == "cpu") || other_is_src ? src->device() : device, "copy source");
      !s.ok()) {
    return s;
  }
  // Descriptors (array_members.h) are copied only between arrays of the
  // same struct: bytes from elsewhere would forge them, and bytes copied out
  // of them would show a client daemon pointers.
  if ((dst->dtype()->holds_array() || src->dtype()->holds_array()) && !types::SameType(dst->dtype(), src->dtype())) {
    return absl::InvalidArgumentError(absl::StrCat("copy: ", dst->dtype()->ToString(), " <- ",
                                                   src->dtype()->ToString(),
                                                   ": an array of structs holding arrays copies only from and to "
                                                   "arrays of the same struct"));
  }
  // As in Warp, any two element types of one size: the bytes are copied.
  if (dst->dtype()->size() != src->dtype()->size()) {
    return absl::InvalidArgumentError(absl::StrCat("copy: element size mismatch: destination is ",
                                                   dst->dtype()->ToString(), " (", dst->dtype()->size(),
                                                   " bytes), source is ", src->dtype()->ToString(), " (",
                                                   src->dtype()->size(), " bytes)"));
  }
  if (dst->shape() != src->shape()) {
    return absl::InvalidArgumentError(absl::StrCat("copy: shape mismatch: destination is ",
                                                   FormatShape(dst->shape()), ", source is ",
                                                   FormatShape(src->shape())));
  }
  // dst's elements will point where src's do.
  if (dst->held() != nullptr && src->held() != nullptr && dst->held() != src->held()) {
    if (absl::Status s = dst->held()->Add(src->held()->Snapshot(), dst.get()); !s.ok()) return s;
  }
  if (host_copy) return std::make_unique<HostCopyCommand>(std::move(dst), std::move(src));
  if (peer_copy) return std::make_unique<PeerCopyCommand>(std::move(dst), std::move(src), other, other_is_src);
  return std::make_unique<CopyCommand>(std::move(dst), std::move(src));
}

absl::StatusOr<std::unique_ptr<Command>> PrepareFill(std::shared_ptr<const Array> array,
                                                     std::string value,
                                                     const std::string& device, const ArrayLookup* lookup) {
  if (absl::Status s = CheckArrayDevice(*array, device, "fill target"); !s.ok()) return s;
  const size_t elem = array->dtype()->size();
  if (value.size() != elem) {
    return absl::InvalidArgumentError(absl::StrCat("fill: value has ", value.size(),
                                                   " bytes, but an element of ",
                                                   array->dtype()->ToString(), " has ", elem));
  }
  if (array->held() != nullptr) {
    if (lookup == nullptr) {
      return absl::InvalidArgumentError("fill: structs with array members are not supported here");
    }
    std::vector<std::shared_ptr<const Array>> bound;
    auto what = [] { return std::string("fill value"); };
    if (absl::Status s = BindArrayMembers(array->dtype(), reinterpret_cast<std::byte*>(value.data()), *lookup,
                                          device, &bound, what);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = array->held()->Add(bound, array.get()); !s.ok()) return s;
  }
  return std::make_unique<FillCommand>(std::move(array), std::move(value));
}

absl::StatusOr<std::unique_ptr<Command>> PrepareFree(std::shared_ptr<const Array> array,
                                                     const std::string& device) {
  if (absl::Status s = CheckArrayDevice(*array, device, "freed array"); !s.ok()) return s;
  return std::make_unique<FreeCommand>(std::move(array));
}

}  // namespace warpd::runtime
