#include "compiler/cache/module_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace warpd::compiler {
namespace {

TEST(CacheKeyTest, DistinguishesPartBoundaries) {
  EXPECT_NE(CacheKey({"ab", "c"}), CacheKey({"a", "bc"}));
  EXPECT_EQ(CacheKey({"ab", "c"}), CacheKey({"ab", "c"}));
  EXPECT_EQ(CacheKey({"x"}).size(), 64u);
}

TEST(ModuleCacheTest, SingleFlight) {
  ModuleCache<int> cache("");
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

TEST(ModuleCacheTest, FailuresAreNotCached) {
  ModuleCache<int> cache("");
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
  ModuleCache<int> cache("", 2);
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

TEST(DiskCacheTest, WriteReadClear) {
  auto dir = (std::filesystem::temp_directory_path() / ("warpd_disk_cache_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(DiskCache::EnsureDir(dir).ok());
  std::string key = CacheKey({"module"});
  EXPECT_FALSE(DiskCache::Read(dir, key, ".o"));
  ASSERT_TRUE(DiskCache::Write(dir, key, ".o", std::string("\0bytes", 6)).ok());
  auto back = DiskCache::Read(dir, key, ".o");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, std::string("\0bytes", 6));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / key.substr(0, 2) / (key + ".o")));
  // Files that are not cache entries survive a clear.
  { std::ofstream(std::filesystem::path(dir) / "README") << "keep"; }
  auto removed = DiskCache::Clear(dir);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(DiskCache::Read(dir, key, ".o"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "README"));
  std::filesystem::remove_all(dir);
}

TEST(DiskCacheTest, UnwritableDirectoryIsAnError) {
  EXPECT_FALSE(DiskCache::EnsureDir("/proc/warpd-cannot-exist").ok());
}

}  // namespace
}  // namespace warpd::compiler
