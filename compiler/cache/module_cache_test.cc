#include "compiler/cache/module_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
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

// The async form: requests that join a creation in flight register a
// callback and return at once; one creation serves them all.
TEST(ModuleCacheTest, AsyncSingleFlightNeverBlocksTheCallers) {
  using Cache = ModuleCache<int>;
  Cache cache("");
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
  Cache cache("");
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
  Cache cache("");
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
  Cache cache("");
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

namespace fs = std::filesystem;

class TrustedDiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("warpd_trust_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Entry(const std::string& key) { return fs::path(dir_) / key.substr(0, 2) / (key + ".o"); }
  std::string dir_;
};

TEST_F(TrustedDiskCacheTest, NewDirectoryIsPrivate) {
  ASSERT_TRUE(DiskCache::EnsureDir(dir_).ok());
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string key = CacheKey({"k"});
  ASSERT_TRUE(DiskCache::Write(dir_, key, ".o", "object").ok());
  ASSERT_EQ(stat(Entry(key).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(TrustedDiskCacheTest, GroupOrWorldWritableDirectoryIsRefused) {
  for (mode_t mode : {0775, 0757, 0777}) {
    fs::create_directories(dir_);
    chmod(dir_.c_str(), mode);
    absl::Status s = DiskCache::EnsureDir(dir_);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << mode << ": " << s;
    EXPECT_NE(s.message().find("writable by group or others"), std::string::npos) << s;
    EXPECT_NE(s.message().find("chmod go-w"), std::string::npos) << s;
  }
  chmod(dir_.c_str(), 0755);  // readable by others is fine
  EXPECT_TRUE(DiskCache::EnsureDir(dir_).ok());
}

TEST_F(TrustedDiskCacheTest, DirectoryOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0700);
  ASSERT_EQ(chown(dir_.c_str(), 4242, 4242), 0);
  absl::Status s = DiskCache::EnsureDir(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("belongs to uid 4242"), std::string::npos) << s;
}

TEST_F(TrustedDiskCacheTest, TruncatedModifiedOrSwappedEntriesAreMisses) {
  ASSERT_TRUE(DiskCache::EnsureDir(dir_).ok());
  const std::string a = CacheKey({"a"}), b = CacheKey({"b"});
  const std::string object(4096, 'x');
  ASSERT_TRUE(DiskCache::Write(dir_, a, ".o", object).ok());
  ASSERT_TRUE(DiskCache::Write(dir_, b, ".o", object + "b").ok());
  ASSERT_TRUE(DiskCache::Read(dir_, a, ".o").has_value());

  // Truncated: a miss, and the file is gone (it will be compiled again).
  fs::resize_file(Entry(a), fs::file_size(Entry(a)) - 10);
  EXPECT_FALSE(DiskCache::Read(dir_, a, ".o").has_value());
  EXPECT_FALSE(fs::exists(Entry(a)));

  // Swapped: b's valid entry copied to a's name.
  fs::create_directories(Entry(a).parent_path());
  fs::copy_file(Entry(b), Entry(a));
  EXPECT_FALSE(DiskCache::Read(dir_, a, ".o").has_value());

  // Modified in place (same length).
  {
    std::fstream f(Entry(b), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('c');
  }
  EXPECT_FALSE(DiskCache::Read(dir_, b, ".o").has_value());

  // Planted: bytes without the header, as an older cache or an attacker writes.
  {
    std::ofstream f(Entry(b), std::ios::binary);
    f << "\x7f" "ELF planted";
  }
  EXPECT_FALSE(DiskCache::Read(dir_, b, ".o").has_value());

  // A symbolic link to a valid entry is not followed.
  ASSERT_TRUE(DiskCache::Write(dir_, a, ".o", object).ok());
  fs::remove(Entry(b));
  fs::create_symlink(Entry(a), Entry(b));
  EXPECT_FALSE(DiskCache::Read(dir_, b, ".o").has_value());
  EXPECT_TRUE(DiskCache::Read(dir_, a, ".o").has_value());
}

TEST_F(TrustedDiskCacheTest, EntriesOthersCanWriteOrOwnAreMisses) {
  ASSERT_TRUE(DiskCache::EnsureDir(dir_).ok());
  const std::string a = CacheKey({"a"});
  ASSERT_TRUE(DiskCache::Write(dir_, a, ".o", "object").ok());
  chmod(Entry(a).c_str(), 0666);
  EXPECT_FALSE(DiskCache::Read(dir_, a, ".o").has_value());
  if (geteuid() == 0) {
    ASSERT_TRUE(DiskCache::Write(dir_, a, ".o", "object").ok());
    ASSERT_EQ(chown(Entry(a).c_str(), 4242, 4242), 0);
    EXPECT_FALSE(DiskCache::Read(dir_, a, ".o").has_value());
  }
}

}  // namespace
}  // namespace warpd::compiler
