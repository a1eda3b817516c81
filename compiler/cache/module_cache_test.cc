#include "compiler/cache/module_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

namespace warpd::compiler {
namespace {

TEST(CacheKeyTest, DistinguishesPartBoundaries) {
  EXPECT_NE(CacheKey({"ab", "c"}), CacheKey({"a", "bc"}));
  EXPECT_EQ(CacheKey({"ab", "c"}), CacheKey({"ab", "c"}));
  EXPECT_EQ(CacheKey({"x"}).size(), 64u);
}

TEST(ModuleCacheTest, SingleFlight) {
  ModuleCache<int> cache;
  std::atomic<int> calls{0};
  auto slow = [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::make_shared<const int>(42);
  };
  std::vector<std::thread> threads;
  std::atomic<int> hits{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      bool hit = false;
      auto v = cache.GetOrCreate("k", slow, &hit);
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(**v, 42);
      hits += hit;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(hits.load(), 7);
}

// The async form: requests that join a creation in flight register a
// callback and return at once; one creation serves them all.
TEST(ModuleCacheTest, AsyncSingleFlightNeverBlocksTheCallers) {
  using Cache = ModuleCache<int>;
  Cache cache;
  std::atomic<int> creates{0}, got{0}, hits{0};
  std::optional<Cache::Completion> pending;
  auto create = [&](Cache::Completion c) {
    ++creates;
    pending.emplace(std::move(c));  // finished later, by the test
  };
  auto done = [&](Cache::Result v, bool hit) {
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(**v, 42);
    ++got;
    hits += hit;
  };
  cache.GetOrCreateAsync("k", create, done);
  ASSERT_TRUE(pending.has_value());
  // Sixteen threads ask while the creation is unfinished: each returns (the
  // joins below would hang otherwise) with its callback still pending.
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) threads.emplace_back([&] { cache.GetOrCreateAsync("k", create, done); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(creates.load(), 1);
  EXPECT_EQ(got.load(), 0);
  const void* made = nullptr;
  {
    auto value = std::make_shared<const int>(42);
    made = value.get();
    std::move(*pending).Finish(value);
  }
  EXPECT_EQ(got.load(), 17);
  EXPECT_EQ(hits.load(), 16);  // all but the creator's
  // Later requests are memory hits, answered on the calling thread.
  bool answered = false;
  cache.GetOrCreateAsync("k", create, [&](Cache::Result v, bool hit) {
    answered = true;
    EXPECT_TRUE(hit);
    EXPECT_EQ(v->get(), made);
  });
  EXPECT_TRUE(answered);
  EXPECT_EQ(creates.load(), 1);
}

TEST(ModuleCacheTest, AsyncFailureReachesWaitersAndIsNotCached) {
  using Cache = ModuleCache<int>;
  Cache cache;
  int creates = 0;
  std::optional<Cache::Completion> pending;
  auto create = [&](Cache::Completion c) {
    ++creates;
    pending.emplace(std::move(c));
  };
  std::vector<absl::Status> seen;
  auto done = [&](Cache::Result v, bool) { seen.push_back(v.status()); };
  cache.GetOrCreateAsync("k", create, done);
  cache.GetOrCreateAsync("k", create, done);
  std::move(*pending).Finish(absl::InternalError("boom"));
  pending.reset();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].message(), "boom");
  EXPECT_EQ(seen[1].message(), "boom");
  cache.GetOrCreateAsync("k", create, done);  // tried again
  EXPECT_EQ(creates, 2);
  std::move(*pending).Finish(std::make_shared<const int>(1));
  EXPECT_EQ(seen.size(), 3u);
}

TEST(ModuleCacheTest, AbandonedCreationFinishesWithAborted) {
  using Cache = ModuleCache<int>;
  Cache cache;
  std::optional<Cache::Completion> pending;
  std::vector<absl::StatusCode> seen;
  auto done = [&](Cache::Result v, bool) { seen.push_back(v.status().code()); };
  cache.GetOrCreateAsync("k", [&](Cache::Completion c) { pending.emplace(std::move(c)); }, done);
  cache.GetOrCreateAsync("k", [](Cache::Completion) { FAIL() << "a second creation"; }, done);
  pending.reset();  // dropped unfinished
  EXPECT_EQ(seen, (std::vector<absl::StatusCode>{absl::StatusCode::kAborted, absl::StatusCode::kAborted}));
  EXPECT_EQ(cache.size(), 0u);
}

// Clearing the memory level while a creation runs keeps it: a request that
// comes after the clear still joins it instead of creating the key twice.
TEST(ModuleCacheTest, ClearMemoryKeepsCreationsInFlight) {
  using Cache = ModuleCache<int>;
  Cache cache;
  int creates = 0, got = 0;
  std::optional<Cache::Completion> pending;
  auto create = [&](Cache::Completion c) {
    ++creates;
    pending.emplace(std::move(c));
  };
  auto done = [&](Cache::Result v, bool) { got += v.ok(); };
  cache.GetOrCreateAsync("k", create, done);
  cache.ClearMemory();
  cache.GetOrCreateAsync("k", create, done);
  EXPECT_EQ(creates, 1);
  std::move(*pending).Finish(std::make_shared<const int>(1));
  EXPECT_EQ(got, 2);
  cache.ClearMemory();  // a finished entry goes
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ModuleCacheTest, FailuresAreNotCached) {
  ModuleCache<int> cache;
  int calls = 0;
  auto failing = [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
    ++calls;
    return absl::InternalError("boom");
  };
  bool hit;
  EXPECT_FALSE(cache.GetOrCreate("k", failing, &hit).ok());
  EXPECT_FALSE(cache.GetOrCreate("k", failing, &hit).ok());
  EXPECT_EQ(calls, 2);
}

TEST(ModuleCacheTest, EvictsLeastRecentlyUsedAtCapacity) {
  ModuleCache<int> cache(2);
  int calls = 0;
  auto make = [&](int v) {
    return [&calls, v]() -> absl::StatusOr<std::shared_ptr<const int>> {
      ++calls;
      return std::make_shared<const int>(v);
    };
  };
  bool hit;
  auto a = cache.GetOrCreate("a", make(1), &hit);
  (void)cache.GetOrCreate("b", make(2), &hit);
  (void)cache.GetOrCreate("a", make(1), &hit);  // a is now more recent than b
  EXPECT_TRUE(hit);
  (void)cache.GetOrCreate("c", make(3), &hit);  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(calls, 3);
  (void)cache.GetOrCreate("a", make(1), &hit);
  EXPECT_TRUE(hit);
  (void)cache.GetOrCreate("b", make(2), &hit);
  EXPECT_FALSE(hit);  // b was forgotten and made again
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(**a, 1);  // an evicted value stays alive for its users
}

// With a size function the finished values' bytes stay within max_bytes:
// the least recently used go first, never the value just made.
TEST(ModuleCacheTest, EvictsLeastRecentlyUsedPastMaxBytes) {
  ModuleCache<int> cache(100, 10, [](const int& v) { return static_cast<uint64_t>(v); });
  auto make = [](int v) {
    return [v]() -> absl::StatusOr<std::shared_ptr<const int>> { return std::make_shared<const int>(v); };
  };
  bool hit;
  (void)cache.GetOrCreate("a", make(4), &hit);
  (void)cache.GetOrCreate("b", make(4), &hit);
  EXPECT_EQ(cache.bytes(), 8u);
  (void)cache.GetOrCreate("a", make(4), &hit);  // a is now more recent than b
  EXPECT_TRUE(hit);
  (void)cache.GetOrCreate("c", make(5), &hit);  // 13 > 10: b goes
  EXPECT_EQ(cache.bytes(), 9u);
  EXPECT_EQ(cache.size(), 2u);
  (void)cache.GetOrCreate("b", make(4), &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.bytes(), 9u);  // b (4) in, a (4) out: 5 + 4
  // A value larger than the bound is kept alone until the next one comes.
  (void)cache.GetOrCreate("huge", make(50), &hit);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), 50u);
  (void)cache.GetOrCreate("huge", make(50), &hit);
  EXPECT_TRUE(hit);
  cache.ClearMemory();
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace warpd::compiler
