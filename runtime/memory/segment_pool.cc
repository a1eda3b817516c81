#include "runtime/memory/segment_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/posix_error.h"
#include "runtime/memory/huge_pages.h"
#include "runtime/memory/human_bytes.h"
#include "runtime/memory/size_math.h"

namespace warpd::runtime {

namespace segment_pool_internal {

// One memfd mapping. Unmaps, closes and releases its charge when the last
// holder (its blocks, and the pool's table while it is shared) lets go.
struct Segment {
  Segment(int fd, std::byte* base, uint64_t bytes, std::shared_ptr<MemoryAccount> account)
      : fd(fd), base(base), bytes(bytes), account(std::move(account)) {}
  ~Segment() {
    munmap(base, bytes);
    // A client that mapped the file keeps it alive: free the pages anyway.
    (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes));
    close(fd);
    account->Release(bytes);
  }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const int fd;
  // Names the segment among its pool's (1, 2, ...); set once, before any
  // block of it exists.
  uint64_t serial = 0;
  std::byte* const base;
  const uint64_t bytes;
  const std::shared_ptr<MemoryAccount> account;
};

// A segment that blocks under kLargeBlockBytes share.
struct SharedSegment {
  std::shared_ptr<Segment> segment;
  std::map<uint64_t, uint64_t> free;  // offset -> length; never two adjacent
  uint64_t live_blocks = 0;
};

// A free range as the best-fit index orders it: shortest first, then by
// segment and offset (so the choice is deterministic).
using FreeRange = std::tuple<uint64_t /*length*/, uint64_t /*segment id*/, uint64_t /*offset*/>;

// Where a new block lies in a shared segment.
struct Placement {
  uint64_t segment_id;
  std::shared_ptr<Segment> segment;
  uint64_t offset;
};

// A freed large block's segment, kept for the pool's next large block.
struct CachedSegment {
  std::shared_ptr<Segment> segment;
  absl::Time freed;
};

// What a pool's blocks share with it; outlives the SegmentPool while any
// block lives.
struct PoolState {
  PoolState(std::shared_ptr<MemoryAccount> account, SegmentPoolOptions options)
      : account(std::move(account)), options(options) {}

  // The smallest free range of at least `reserved` bytes, taken; nullopt when
  // none fits.
  std::optional<Placement> TakeFree(uint64_t reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = by_length.lower_bound(FreeRange{reserved, 0, 0});
    if (it == by_length.end()) return std::nullopt;
    const auto [length, id, offset] = *it;
    by_length.erase(it);
    SharedSegment& s = shared.at(id);
    s.free.erase(offset);
    if (length > reserved) AddRange(id, s, offset + reserved, length - reserved);
    ++s.live_blocks;
    CountBlock(reserved);
    return Placement{id, s.segment, offset};
  }

  // Makes [offset, offset + length) of segment `id` free, merged with free
  // neighbours.
  void Free(uint64_t id, SharedSegment& s, uint64_t offset, uint64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto next = s.free.lower_bound(offset);
    if (next != s.free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        by_length.erase(FreeRange{prev->second, id, prev->first});
        offset = prev->first;
        length += prev->second;
        s.free.erase(prev);
      }
    }
    if (next != s.free.end() && offset + length == next->first) {
      by_length.erase(FreeRange{next->second, id, next->first});
      length += next->second;
      s.free.erase(next);
    }
    AddRange(id, s, offset, length);
  }

  // Registers a new shared segment whose first `reserved` bytes are a block.
  Placement AddShared(std::shared_ptr<Segment> segment, uint64_t reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t id = next_id++;
    SharedSegment& s = shared[id];
    s.segment = segment;
    s.live_blocks = 1;
    if (segment->bytes > reserved) AddRange(id, s, reserved, segment->bytes - reserved);
    shared_bytes += segment->bytes;
    ++stats.segments;
    stats.committed_bytes += segment->bytes;
    CountBlock(reserved);
    return Placement{id, std::move(segment), 0};
  }

  void CountBlock(uint64_t reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    ++stats.blocks_live;
    stats.block_bytes += reserved;
  }
  void UncountBlock(uint64_t reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    --stats.blocks_live;
    stats.block_bytes -= reserved;
  }

  // Forgets an empty shared segment; returns it so that the caller drops it
  // (munmap, close) after unlocking.
  std::shared_ptr<Segment> DropShared(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = shared.find(id);
    for (const auto& [offset, length] : it->second.free) by_length.erase(FreeRange{length, id, offset});
    std::shared_ptr<Segment> segment = std::move(it->second.segment);
    shared.erase(it);
    shared_bytes -= segment->bytes;
    --stats.segments;
    stats.committed_bytes -= segment->bytes;
    return segment;
  }

  void AddRange(uint64_t id, SharedSegment& s, uint64_t offset, uint64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    s.free.emplace(offset, length);
    by_length.insert(FreeRange{length, id, offset});
  }

  // Keeps a freed large block's segment; the oldest cached segments past the
  // caps go to `dropped` (released by the caller after unlocking).
  void Cache(std::shared_ptr<Segment> segment, absl::Time now, std::vector<std::shared_ptr<Segment>>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    stats.cached_bytes += segment->bytes;
    ++stats.cached_segments;
    cache.push_back(CachedSegment{std::move(segment), now});
    while (stats.cached_segments > SegmentPool::kMaxCachedSegments ||
           stats.cached_bytes > SegmentPool::kMaxCachedBytes) {
      dropped.push_back(Uncache(cache.begin()));
    }
  }

  // The cached segment that best fits a block of `bytes` (page rounded): the
  // smallest of at least `bytes` and at most 1/8 more, taken; null if none.
  std::shared_ptr<Segment> TakeCached(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto best = cache.end();
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      const uint64_t have = it->segment->bytes;
      if (have >= bytes && have - bytes <= bytes / 8 && (best == cache.end() || have < best->segment->bytes)) {
        best = it;
      }
    }
    if (best == cache.end()) return nullptr;
    std::shared_ptr<Segment> segment = std::move(best->segment);
    cache.erase(best);
    stats.cached_bytes -= segment->bytes;
    --stats.cached_segments;
    ++stats.cache_reuses;
    return segment;
  }

  // Moves the cached segments freed before `cutoff` to `dropped` (all of
  // them for absl::InfiniteFuture()); they stop counting as this pool's.
  void ExpireCached(absl::Time cutoff, std::vector<std::shared_ptr<Segment>>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (!cache.empty() && cache.front().freed < cutoff) dropped.push_back(Uncache(cache.begin()));
  }

  std::shared_ptr<Segment> Uncache(std::vector<CachedSegment>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::shared_ptr<Segment> segment = std::move(it->segment);
    cache.erase(it);
    stats.cached_bytes -= segment->bytes;
    --stats.cached_segments;
    --stats.segments;
    stats.committed_bytes -= segment->bytes;
    return segment;
  }

  const std::shared_ptr<MemoryAccount> account;
  const SegmentPoolOptions options;

  mutable absl::Mutex mu;
  // Set when the SegmentPool is destroyed: freed ranges are not reused.
  bool closed ABSL_GUARDED_BY(mu) = false;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  absl::flat_hash_map<uint64_t, SharedSegment> shared ABSL_GUARDED_BY(mu);
  std::set<FreeRange> by_length ABSL_GUARDED_BY(mu);
  uint64_t shared_bytes ABSL_GUARDED_BY(mu) = 0;
  SegmentPoolStats stats ABSL_GUARDED_BY(mu);
  std::vector<CachedSegment> cache ABSL_GUARDED_BY(mu);  // oldest first
  // Listed in the registry of pools with cached segments.
  bool registered ABSL_GUARDED_BY(mu) = false;
  std::atomic<uint64_t> next_serial{1};
};

// The pools that may hold cached segments, so that expiry and a refused
// charge reach every pool's cache. Lock order: this mutex, then a pool's.
struct CacheRegistry {
  absl::Mutex mu;
  std::vector<std::weak_ptr<PoolState>> pools ABSL_GUARDED_BY(mu);
};

CacheRegistry& Registry() {
  static CacheRegistry* const registry = new CacheRegistry;
  return *registry;
}

void Register(const std::shared_ptr<PoolState>& pool) {
  CacheRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  absl::MutexLock pool_lock(&pool->mu);
  if (pool->registered || pool->cache.empty()) return;
  pool->registered = true;
  r.pools.push_back(pool);
}

// Releases the cached segments of every pool that are older than the pool's
// segment_cache_lifetime at `now` (all of them for absl::InfiniteFuture());
// returns how many. Unlists pools left with none.
uint64_t ExpireCaches(absl::Time now) {
  std::vector<std::shared_ptr<Segment>> dropped;  // released after the locks
  CacheRegistry& r = Registry();
  {
    absl::MutexLock lock(&r.mu);
    for (auto it = r.pools.begin(); it != r.pools.end();) {
      bool keep = false;
      if (std::shared_ptr<PoolState> pool = it->lock()) {
        absl::MutexLock pool_lock(&pool->mu);
        pool->ExpireCached(now - pool->options.segment_cache_lifetime, dropped);
        keep = !pool->cache.empty();
        pool->registered = keep;
      }
      it = keep ? std::next(it) : r.pools.erase(it);
    }
  }
  return dropped.size();
}

}  // namespace segment_pool_internal

namespace {

using segment_pool_internal::Placement;
using segment_pool_internal::PoolState;
using segment_pool_internal::Segment;
using segment_pool_internal::SharedSegment;
using segment_pool_internal::ExpireCaches;
using segment_pool_internal::Register;

// Larger sizes are refused whatever the options say: every size computed
// from one stays far from overflowing uint64_t and off_t.
constexpr uint64_t kMaxBlockBytes = uint64_t{1} << 62;

uint64_t PageSize() {
  static const uint64_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

// "4 KiB (4097 bytes)"; "100 bytes".
std::string BytesText(uint64_t bytes) {
  if (bytes < 1024) return HumanBytes(bytes);
  return absl::StrCat(HumanBytes(bytes), " (", bytes, " bytes)");
}

// A committed, mapped memfd of `bytes` (a multiple of the page size),
// charged to `account` before any system call.
absl::StatusOr<std::shared_ptr<Segment>> CreateSegmentOnce(const std::shared_ptr<MemoryAccount>& account,
                                                           uint64_t bytes, std::string_view name,
                                                           ShmemHugePages huge_pages) {
  if (absl::Status s = account->Charge(bytes); !s.ok()) return s;
  absl::Cleanup release = [&] { account->Release(bytes); };

  const std::string label = absl::StrCat("warpd:", absl::string_view(name.data(), name.size()));
  const int fd = memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return PosixError(absl::StrCat("memfd_create(", label, ")"), errno);
  absl::Cleanup close_fd = [fd] { close(fd); };
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return PosixError(absl::StrCat("ftruncate memfd to ", bytes, " bytes"), errno);
  }
  // Large segments ask for huge pages (huge_pages.h). Under the host's
  // `advise` mode a page gets huge only when it is created through a mapping
  // that asked, so those are committed through the mapping below; every
  // other segment is committed here, before it is mapped.
  const bool huge = bytes >= HugePageBytes() && huge_pages != ShmemHugePages::kNone;
  const bool commit_through_mapping = huge && huge_pages == ShmemHugePages::kOnAdvice;
  // Commit the pages now; an over-commit would otherwise surface as SIGBUS
  // when a kernel first touches the memory.
  if (!commit_through_mapping) {
    if (int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0 && err != EOPNOTSUPP) {
      return PosixError(absl::StrCat("allocating ", bytes, " bytes"), err);
    }
  }
  // The size is final: a client holding the fd must not be able to shrink
  // the file under a running kernel.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return PosixError("sealing the memfd's size", errno);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return PosixError(absl::StrCat("mmap ", bytes, " bytes"), errno);
  absl::Cleanup unmap = [p, bytes] { munmap(p, bytes); };
  if (huge) (void)madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failing it costs speed only
  if (commit_through_mapping && madvise(p, bytes, MADV_POPULATE_WRITE) != 0) {
    // EINVAL: a kernel before 5.14, without MADV_POPULATE_WRITE.
    const int populate_err = errno;
    if (populate_err != EINVAL) return PosixError(absl::StrCat("allocating ", bytes, " bytes"), populate_err);
    if (int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0 && err != EOPNOTSUPP) {
      return PosixError(absl::StrCat("allocating ", bytes, " bytes"), err);
    }
  }
  std::move(unmap).Cancel();
  std::move(release).Cancel();
  std::move(close_fd).Cancel();
  return std::make_shared<Segment>(fd, static_cast<std::byte*>(p), bytes, account);
}

// CreateSegmentOnce; when it runs out of memory while segments are cached
// (anywhere), they are released and it tries once more.
absl::StatusOr<std::shared_ptr<Segment>> CreateSegment(const std::shared_ptr<MemoryAccount>& account,
                                                       uint64_t bytes, std::string_view name,
                                                       ShmemHugePages huge_pages) {
  absl::StatusOr<std::shared_ptr<Segment>> segment = CreateSegmentOnce(account, bytes, name, huge_pages);
  if (segment.ok() || segment.status().code() != absl::StatusCode::kResourceExhausted) return segment;
  if (ExpireCaches(absl::InfiniteFuture()) == 0) return segment;
  return CreateSegmentOnce(account, bytes, name, huge_pages);
}

}  // namespace

CpuBuffer::CpuBuffer(std::shared_ptr<PoolState> pool, std::shared_ptr<Segment> segment, uint64_t segment_id,
                     int fd, std::byte* data, uint64_t offset, uint64_t size, uint64_t reserved)
    : Buffer(reinterpret_cast<uint64_t>(data), size, /*host_addressable=*/true),
      pool_(std::move(pool)),
      segment_(std::move(segment)),
      segment_id_(segment_id),
      fd_(fd),
      offset_(offset),
      reserved_(reserved) {}

bool CpuBuffer::BelongsTo(const SegmentPool& pool) const { return pool_ != nullptr && pool_ == pool.state_; }

uint64_t CpuBuffer::segment_serial() const { return segment_ != nullptr ? segment_->serial : 0; }

CpuBuffer::~CpuBuffer() {
  if (pool_ == nullptr) return;  // size 0
  PoolState& pool = *pool_;
  // Dropped after the lock is released (and with segment_, after this body).
  std::shared_ptr<Segment> dropped;
  if (segment_id_ == 0) {  // a segment of its own: cached, or it goes with this block
    const absl::Time now = absl::Now();
    std::vector<std::shared_ptr<Segment>> evicted;  // released after the lock
    bool unlisted = false;  // cached, and the pool is not in the registry yet
    {
      absl::MutexLock lock(&pool.mu);
      pool.UncountBlock(reserved_);
      if (!pool.closed && reusable_.load(std::memory_order_relaxed) &&
          segment_->bytes <= SegmentPool::kMaxCachedBytes &&
          pool.options.segment_cache_lifetime > absl::ZeroDuration()) {
        pool.Cache(segment_, now, evicted);
        unlisted = !pool.registered;
      } else {
        --pool.stats.segments;
        pool.stats.committed_bytes -= segment_->bytes;
      }
    }
    if (unlisted) Register(pool_);
    ExpireCaches(now);
    return;
  }
  {
    absl::MutexLock lock(&pool.mu);
    SharedSegment& s = pool.shared.at(segment_id_);
    if (pool.closed || s.live_blocks == 1) {
      // The range will never be handed out again: no need to zero it.
      pool.UncountBlock(reserved_);
      if (--s.live_blocks == 0) dropped = pool.DropShared(segment_id_);
      return;
    }
  }
  // Free ranges are zero, so the next block of this range starts zeroed.
  std::memset(data(), 0, reserved_);
  absl::MutexLock lock(&pool.mu);
  SharedSegment& s = pool.shared.at(segment_id_);
  pool.UncountBlock(reserved_);
  if (--s.live_blocks == 0) {
    dropped = pool.DropShared(segment_id_);
  } else if (!pool.closed) {
    pool.Free(segment_id_, s, offset_, reserved_);
  }
}

SegmentPool::SegmentPool(std::shared_ptr<MemoryAccount> account, Options options)
    : state_(std::make_shared<PoolState>(std::move(account), options)) {}

SegmentPool::~SegmentPool() {
  std::vector<std::shared_ptr<Segment>> dropped;  // released after the lock
  absl::MutexLock lock(&state_->mu);
  state_->closed = true;
  state_->ExpireCached(absl::InfiniteFuture(), dropped);
}

uint64_t SegmentPool::DropCachedSegments() { return ExpireCaches(absl::InfiniteFuture()); }

absl::StatusOr<MemoryCharge> SegmentPool::Charge(uint64_t bytes) const {
  absl::StatusOr<MemoryCharge> charge = MemoryCharge::Take(state_->account, bytes);
  if (charge.ok() || !absl::IsResourceExhausted(charge.status())) return charge;
  if (ExpireCaches(absl::InfiniteFuture()) == 0) return charge;
  return MemoryCharge::Take(state_->account, bytes);
}

const std::shared_ptr<MemoryAccount>& SegmentPool::account() const { return state_->account; }

const SegmentPool::Options& SegmentPool::options() const { return state_->options; }

SegmentPoolStats SegmentPool::stats() const {
  absl::MutexLock lock(&state_->mu);
  return state_->stats;
}

absl::StatusOr<std::shared_ptr<CpuBuffer>> SegmentPool::Allocate(uint64_t size, std::string_view tag, Fill fill) {
  if (size == 0) {
    return std::shared_ptr<CpuBuffer>(new CpuBuffer(nullptr, nullptr, 0, -1, nullptr, 0, 0, 0));
  }
  if (size > state_->options.max_allocation_bytes) {
    const uint64_t limit = state_->options.max_allocation_bytes;
    return absl::ResourceExhaustedError(absl::StrCat("array of ", BytesText(size), " exceeds the per-array limit of ",
                                                     HumanBytes(limit), " (", limit, " bytes; --max-array-bytes)"));
  }
  if (size > kMaxBlockBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("array of ", size, " bytes is too large"));
  }
  // Cannot overflow: size <= 2^62.
  const uint64_t reserved = *CheckedAlignUp(size, kBlockAlignment);

  if (reserved >= kLargeBlockBytes) {
    const uint64_t bytes = *CheckedAlignUp(size, PageSize());
    ExpireCaches(absl::Now());
    std::shared_ptr<Segment> reused;
    {
      absl::MutexLock lock(&state_->mu);
      if (!state_->closed) reused = state_->TakeCached(bytes);
      if (reused != nullptr) state_->CountBlock(reused->bytes);
    }
    if (reused != nullptr) {
      if (fill == Fill::kZero) std::memset(reused->base, 0, size);
      Segment& s = *reused;
      return std::shared_ptr<CpuBuffer>(new CpuBuffer(state_, std::move(reused), 0, s.fd, s.base, 0, size, s.bytes));
    }
    absl::StatusOr<std::shared_ptr<Segment>> segment =
        CreateSegment(state_->account, bytes, tag, state_->options.huge_pages);
    if (!segment.ok()) return segment.status();
    (*segment)->serial = state_->next_serial.fetch_add(1, std::memory_order_relaxed);
    {
      absl::MutexLock lock(&state_->mu);
      ++state_->stats.segments;
      state_->stats.committed_bytes += bytes;
      state_->CountBlock(bytes);
    }
    Segment& s = **segment;
    return std::shared_ptr<CpuBuffer>(new CpuBuffer(state_, *std::move(segment), 0, s.fd, s.base, 0, size, bytes));
  }

  std::optional<Placement> placement;
  uint64_t segment_bytes = 0;
  {
    absl::MutexLock lock(&state_->mu);
    placement = state_->TakeFree(reserved);
    if (!placement) {
      segment_bytes =
          std::max(reserved, std::clamp(state_->shared_bytes, kMinSegmentBytes, kMaxSharedSegmentBytes));
    }
  }
  if (!placement) {
    // Made without the lock: other blocks come and go meanwhile.
    absl::StatusOr<std::shared_ptr<Segment>> segment =
        CreateSegment(state_->account, *CheckedAlignUp(segment_bytes, PageSize()), "pool",
                      state_->options.huge_pages);
    if (!segment.ok()) return segment.status();
    (*segment)->serial = state_->next_serial.fetch_add(1, std::memory_order_relaxed);
    absl::MutexLock lock(&state_->mu);
    placement = state_->AddShared(*std::move(segment), reserved);
  }
  const int fd = placement->segment->fd;
  std::byte* data = placement->segment->base + placement->offset;
  return std::shared_ptr<CpuBuffer>(new CpuBuffer(state_, std::move(placement->segment), placement->segment_id,
                                                  fd, data, placement->offset, size, reserved));
}

}  // namespace warpd::runtime
