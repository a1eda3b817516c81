#include "runtime/objects/array_bytes.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace warpd::runtime {

namespace {

// An array seen as rows of `run` contiguous bytes: the innermost dimensions
// whose strides are row-major merge into one run; the outer `ndim`
// dimensions (with their extents and strides) are walked like an odometer.
struct Runs {
  int ndim = 0;
  int64_t shape[4] = {};
  int64_t strides[4] = {};
  uint64_t run = 0;
};

Runs RunsOf(const Array& a) {
  Runs r;
  const ArrayLayout& l = a.layout();
  uint64_t run = l.dtype->size();
  int d = l.ndim - 1;
  // An extent of 1 merges whatever its stride (it is never stepped).
  while (d >= 0 && (l.shape[d] == 1 || static_cast<uint64_t>(l.strides[d]) == run)) {
    run *= static_cast<uint64_t>(l.shape[d]);
    --d;
  }
  r.ndim = d + 1;
  for (int k = 0; k <= d; ++k) {
    r.shape[k] = l.shape[k];
    r.strides[k] = l.strides[k];
  }
  r.run = run;
  return r;
}

// Looks at a cancel flag every few thousand runs (shared by nested walks).
class CancelCheck {
 public:
  explicit CancelCheck(const std::atomic<bool>* flag) : flag_(flag) {}
  // True once the flag is set (then on every later call).
  bool Stop() {
    if (flag_ == nullptr || --until_ != 0) return stopped_;
    until_ = kRunsPerCheck;
    stopped_ = stopped_ || flag_->load(std::memory_order_relaxed);
    return stopped_;
  }
  bool stopped() const { return stopped_; }

 private:
  static constexpr uint32_t kRunsPerCheck = 4096;
  const std::atomic<bool>* const flag_;
  uint32_t until_ = kRunsPerCheck;
  bool stopped_ = false;
};

// Calls fn(address, bytes) for the memory pieces holding logical bytes
// [begin, end) of `a`, in order. The array must not be empty. Returns false
// when it stopped because `check` saw the cancel flag set.
template <typename Fn>
bool ForEachRun(const Array& a, uint64_t begin, uint64_t end, Fn&& fn, CancelCheck* check = nullptr) {
  if (begin >= end) return true;
  const Runs r = RunsOf(a);
  if (r.ndim == 0) {  // contiguous
    fn(a.data() + begin, end - begin);
    return true;
  }
  uint64_t row = begin / r.run;
  uint64_t within = begin % r.run;
  int64_t idx[4] = {};
  uint64_t off = 0;
  for (int d = r.ndim - 1; d >= 0; --d) {
    const uint64_t extent = static_cast<uint64_t>(r.shape[d]);
    idx[d] = static_cast<int64_t>(row % extent);
    row /= extent;
    off += static_cast<uint64_t>(idx[d]) * static_cast<uint64_t>(r.strides[d]);
  }
  std::byte* const data = a.data();
  for (uint64_t pos = begin; pos < end;) {
    if (check != nullptr && check->Stop()) return false;
    const uint64_t n = std::min(r.run - within, end - pos);
    fn(data + off + within, n);
    pos += n;
    within = 0;
    for (int d = r.ndim - 1; d >= 0; --d) {
      if (++idx[d] < r.shape[d]) {
        off += static_cast<uint64_t>(r.strides[d]);
        break;
      }
      off -= static_cast<uint64_t>(idx[d] - 1) * static_cast<uint64_t>(r.strides[d]);
      idx[d] = 0;
    }
  }
  return true;
}

// `total` bytes at `out` <- copies of `element`, back to back from its first
// byte (the last copy cut short when total is not a multiple of its size).
void FillPattern(std::byte* out, uint64_t total, std::string_view element) {
  const size_t elem = element.size();
  if (total == 0 || elem == 0) return;
  if (element.find_first_not_of(element[0]) == std::string_view::npos) {
    std::memset(out, static_cast<unsigned char>(element[0]), total);
    return;
  }
  // Write one element, then double the filled prefix with each copy.
  std::memcpy(out, element.data(), std::min<uint64_t>(elem, total));
  uint64_t filled = std::min<uint64_t>(elem, total);
  while (filled < total) {
    const uint64_t n = std::min(filled, total - filled);
    std::memcpy(out + filled, out, n);
    filled += n;
  }
}

}  // namespace

void ReadArrayBytes(const Array& array, uint64_t offset, uint64_t n, std::byte* out) {
  ForEachRun(array, offset, offset + n, [&out](const std::byte* p, uint64_t k) {
    std::memcpy(out, p, k);
    out += k;
  });
}

void WriteArrayBytes(const Array& array, uint64_t offset, const std::byte* in, uint64_t n) {
  ForEachRun(array, offset, offset + n, [&in](std::byte* p, uint64_t k) {
    std::memcpy(p, in, k);
    in += k;
  });
}

bool CopyArrayBytes(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                    const std::atomic<bool>* cancel) {
  if (n == 0 || dst.data() == nullptr || src.data() == nullptr) return true;
  if (dst.contiguous() && src.contiguous()) {
    std::byte* const d = dst.data() + dst_offset;
    const std::byte* const s = src.data() + src_offset;
    if (d != s) std::memmove(d, s, n);
    return true;
  }
  CancelCheck check(cancel);
  if (dst.contiguous()) {  // gather
    std::byte* out = dst.data() + dst_offset;
    return ForEachRun(
        src, src_offset, src_offset + n,
        [&out](const std::byte* p, uint64_t k) {
          std::memcpy(out, p, k);
          out += k;
        },
        &check);
  }
  if (src.contiguous()) {  // scatter
    const std::byte* in = src.data() + src_offset;
    return ForEachRun(
        dst, dst_offset, dst_offset + n,
        [&in](std::byte* p, uint64_t k) {
          std::memcpy(p, in, k);
          in += k;
        },
        &check);
  }
  // Each run of dst from the runs of src that hold the same logical bytes.
  uint64_t pos = src_offset;
  ForEachRun(
      dst, dst_offset, dst_offset + n,
      [&](std::byte* p, uint64_t k) {
        ForEachRun(
            src, pos, pos + k,
            [&p](const std::byte* q, uint64_t m) {
              std::memcpy(p, q, m);
              p += m;
            },
            &check);
        pos += k;
      },
      &check);
  return !check.stopped();
}

bool CopyArrayElements(const Array& dst, const Array& src, const std::atomic<bool>* cancel) {
  return CopyArrayBytes(dst, 0, src, 0, dst.size_bytes(), cancel);
}

bool FillArrayBytes(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                    const std::atomic<bool>* cancel) {
  if (n == 0 || pattern.empty() || array.data() == nullptr) return true;
  CancelCheck check(cancel);
  const uint64_t size = pattern.size();
  uint64_t pos = 0;     // bytes filled so far
  std::string rotated;  // the pattern from the phase a run starts at
  return ForEachRun(
      array, offset, offset + n,
      [&](std::byte* p, uint64_t k) {
        // A run that starts inside the pattern (a run of a strided view not a
        // multiple of the pattern's size) continues it where it stopped.
        const uint64_t phase = pos % size;
        if (phase == 0) {
          FillPattern(p, k, pattern);
        } else {
          rotated.assign(pattern.substr(phase)).append(pattern.substr(0, phase));
          FillPattern(p, k, rotated);
        }
        pos += k;
      },
      &check);
}

bool FillArrayElements(const Array& array, std::string_view element, const std::atomic<bool>* cancel) {
  return FillArrayBytes(array, 0, array.size_bytes(), element, cancel);
}

}  // namespace warpd::runtime
