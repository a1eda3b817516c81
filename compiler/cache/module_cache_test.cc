#include "compiler/cache/module_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

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
