// warpd runtime: per-session pools of CPU memory: memfd-backed segments,
// sub-allocated into blocks (CpuBuffer, the memory of one array).
//
// A segment is an anonymous memory file (memfd_create, MFD_CLOEXEC) whose
// size is sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL: a client
// holding the fd cannot truncate it under the daemon, which would SIGBUS a
// kernel), whose pages are committed up front (posix_fallocate, so running out of memory is
// a RESOURCE_EXHAUSTED at Allocate time instead of a SIGBUS when a kernel
// first touches the page) and mapped MAP_SHARED. A segment of HugePageBytes()
// or more asks for huge pages (MADV_HUGEPAGE) unless the host gives memory
// files none; under the host's `advise` mode its pages are committed through
// that mapping instead (MADV_POPULATE_WRITE), since only pages made through
// an advised mapping get huge (huge_pages.h). Keeping the fd lets a later
// stage hand a segment to the session's authenticated local client
// (SCM_RIGHTS) for zero-copy views; nothing is reachable by name. A segment
// only ever holds blocks of the pool that made it, so one session's segment
// never shows another session's data.
//
// Layout choices:
//   - Blocks under kLargeBlockBytes (1 MiB, after rounding up to 64 bytes)
//     share segments: so 10,000 tiny arrays cost a handful of fds and
//     mappings, not 10,000. Their offsets are multiples of kBlockAlignment
//     (64 bytes: a cache line, and more than any element type needs).
//   - Blocks of kLargeBlockBytes or more get a segment of their own, rounded
//     up to whole pages (so page aligned, offset 0): freeing one returns its
//     memory to the system at once, and rounding wastes under 0.4%. At worst
//     a pool uses one fd and one mapping per MiB it holds.
//   - Each new shared segment is as large as all the pool's shared segments
//     together, clamped to [kMinSegmentBytes, kMaxSharedSegmentBytes] (64 KiB
//     to 4 MiB), and at least as large as the block that needs it: the pool
//     doubles while small, so n tiny blocks need O(log n) segments, and the
//     free headroom a session is charged for stays below what it uses (plus
//     one segment).
//   - Free ranges of shared segments are kept coalesced; a block takes the
//     smallest free range that fits (best fit, across all segments).
//   - A shared segment is unmapped, closed and its charge released as soon
//     as its last block is freed. Its pages are released first
//     (FALLOC_FL_PUNCH_HOLE): a client still mapping the file keeps no
//     memory the daemon no longer counts (it then reads zeros).
//   - A freed large block's segment is kept a while for the same pool's
//     next large block of about its size (the segment cache): a client that
//     uploads into a new array per step (wp.array(numpy) in a loop) then
//     writes into pages that are already committed and that it has already
//     mapped, instead of paying for fresh pages on both sides (at 256 MiB
//     that is 10x the copy itself). A segment is only ever reused by the pool
//     that made it, so it never shows another session's data. Cached
//     segments stay charged to the pool's account; they are released (like
//     a freed shared segment) when any of these happens first:
//       * Options::segment_cache_lifetime passes (checked whenever any
//         pool of the process allocates or frees a large block);
//       * the pool would cache more than kMaxCachedSegments or
//         kMaxCachedBytes (the oldest go);
//       * any pool's charge is refused: every pool's cache is dropped and the
//         charge is tried once more, so cached memory never makes an
//         allocation fail;
//       * the pool is destroyed (its session closed), or
//         SegmentPool::DropCachedSegments() runs.
//     A reused segment is at most 1/8 larger than the block needs.
//
// Guarantees:
//   - a block allocated with Fill::kZero starts zero-filled: new segments
//     read as zeros, a freed block of a shared segment is zeroed before its
//     range can be reused (memset on free, outside the pool's lock; such
//     blocks are under 1 MiB, and a block freed last in its segment is not
//     zeroed at all), and a cached segment is zeroed when it is reused
//     (outside the lock). With Fill::kAny a reused segment keeps what the
//     same pool's earlier block left there (the caller overwrites it all:
//     an upload, an uninitialized wp.empty); every other block still starts
//     zeroed;
//   - size 0 allocates nothing: data() is null and fd() is -1;
//   - limits are checked before any system call: a block may not exceed
//     Options::max_allocation_bytes, and the pool's segments are charged to
//     its MemoryAccount (and so to every ancestor) before they are created.
//     Both are RESOURCE_EXHAUSTED; the account names the level that refused.
//     The account is charged whole segments: what is really committed,
//     including free space inside shared segments.
//
// Ownership: blocks are shared_ptr. A block keeps its segment (the mapping
// and fd) and the pool's bookkeeping alive, so blocks may outlive the
// SegmentPool (an array made persistent outlives its session); once the pool
// is destroyed, freed ranges are no longer reused and a segment goes with its
// last block. A segment keeps its MemoryAccount until it is unmapped.
// Thread-safe: Allocate, stats and freeing blocks may run concurrently (one
// mutex per pool, never held across a system call or a memset). A block's
// contents are synchronized by its users (command streams).
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/memory/buffer.h"
#include "runtime/memory/huge_pages.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/memory_charge.h"

namespace warpd::runtime {

namespace segment_pool_internal {
struct PoolState;
struct Segment;
}  // namespace segment_pool_internal

class SegmentPool;

// One block of a SegmentPool: the memory of one array on the CPU.
class CpuBuffer final : public Buffer {
 public:
  ~CpuBuffer() override;

  // host_data(): at least 64-byte aligned (page aligned for blocks of 1 MiB
  // or more); null when size() is 0.
  std::byte* data() const { return host_data(); }
  const CpuBuffer* cpu() const override { return this; }
  // The memfd of the segment holding the block, owned by the segment (valid
  // while this block lives; shared with the session's other blocks in that
  // segment); -1 when size() is 0.
  int fd() const { return fd_; }
  // Byte offset of data() in the segment's file.
  uint64_t offset() const { return offset_; }
  // Whether `pool` allocated this block: only a block of the session's own
  // pool may be shared with the session's client (its segment holds nothing
  // of anyone else's).
  bool BelongsTo(const SegmentPool& pool) const;
  // Names the block's segment among its pool's segments (never reused by
  // the pool, so a client may recognise a segment it has mapped before);
  // 0 when size() is 0.
  uint64_t segment_serial() const;
  // Once freed, the block's segment is released rather than cached for the
  // pool's next block. Thread-safe.
  void KeepFromReuse() override { reusable_.store(false, std::memory_order_relaxed); }

 private:
  friend class SegmentPool;
  CpuBuffer(std::shared_ptr<segment_pool_internal::PoolState> pool,
            std::shared_ptr<segment_pool_internal::Segment> segment, uint64_t segment_id, int fd,
            std::byte* data, uint64_t offset, uint64_t size, uint64_t reserved);

  const std::shared_ptr<segment_pool_internal::PoolState> pool_;  // null when size 0
  const std::shared_ptr<segment_pool_internal::Segment> segment_;
  const uint64_t segment_id_;  // the shared segment's id; 0: a segment of its own
  const int fd_;
  const uint64_t offset_;
  const uint64_t reserved_;  // bytes taken from the segment (size rounded up)
  std::atomic<bool> reusable_{true};
};

struct SegmentPoolOptions {
  // The largest block (--max-array-bytes).
  uint64_t max_allocation_bytes = uint64_t{16} << 30;  // 16 GiB
  // How long a freed large block's segment is kept for reuse; zero: never.
  absl::Duration segment_cache_lifetime = absl::Seconds(2);
  // Huge pages for segments of HugePageBytes() or more (huge_pages.h): the
  // host's mode; tests set another to exercise its path on any host.
  ShmemHugePages huge_pages = HostShmemHugePages();
};

// A snapshot; counts change as blocks come and go.
struct SegmentPoolStats {
  uint64_t segments = 0;         // live segments, cached ones included: one memfd and one mapping each
  uint64_t committed_bytes = 0;  // their bytes: what the pool's account is charged
  uint64_t blocks_live = 0;      // blocks not yet freed (size-0 blocks are not counted)
  uint64_t block_bytes = 0;      // bytes those blocks take (sizes rounded up)
  uint64_t cached_segments = 0;  // freed large blocks' segments kept for reuse
  uint64_t cached_bytes = 0;     // their bytes (part of committed_bytes)
  uint64_t cache_reuses = 0;     // large blocks that got a cached segment, ever
};

// What a new block holds when it reuses memory (see the segment cache).
enum class Fill {
  kZero,  // zeros
  kAny,   // zeros, or whatever an earlier block of the same pool left there
};

class SegmentPool {
 public:
  using Options = SegmentPoolOptions;

  static constexpr uint64_t kBlockAlignment = 64;
  static constexpr uint64_t kLargeBlockBytes = uint64_t{1} << 20;
  static constexpr uint64_t kMinSegmentBytes = uint64_t{64} << 10;
  static constexpr uint64_t kMaxSharedSegmentBytes = uint64_t{4} << 20;
  static constexpr uint64_t kMaxCachedSegments = 4;
  static constexpr uint64_t kMaxCachedBytes = uint64_t{1} << 30;

  // Segments are charged to `account` (not null).
  explicit SegmentPool(std::shared_ptr<MemoryAccount> account, Options options = Options());
  // Blocks still alive stay valid (see Ownership).
  ~SegmentPool();
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  // A new block of `size` bytes, zero-filled unless `fill` is kAny and it
  // reuses a cached segment. `tag` labels a dedicated segment's memfd (shows
  // in /proc/<pid>/fd). RESOURCE_EXHAUSTED when a limit is exceeded or the
  // system is out of memory (or fds); INTERNAL for other system errors.
  absl::StatusOr<std::shared_ptr<CpuBuffer>> Allocate(uint64_t size, std::string_view tag,
                                                      Fill fill = Fill::kZero);

  // Releases every pool's cached segments (the process's). Returns how many.
  static uint64_t DropCachedSegments();

  // Charges `bytes` of memory that is not a segment (a queued command's
  // argument block, a module's code: memory_charge.h) to the pool's
  // account, as Allocate charges segments: a refused charge first releases
  // every pool's cached segments and tries once more. RESOURCE_EXHAUSTED
  // naming the level that refused.
  absl::StatusOr<MemoryCharge> Charge(uint64_t bytes) const;

  SegmentPoolStats stats() const;
  const std::shared_ptr<MemoryAccount>& account() const;
  const Options& options() const;

 private:
  friend class CpuBuffer;
  const std::shared_ptr<segment_pool_internal::PoolState> state_;
};

}  // namespace warpd::runtime
