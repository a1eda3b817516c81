#include "compiler/cache/disk_cache.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/cache/module_cache.h"

namespace warpd::compiler {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed after it.
class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("warpd_disk_cache_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<DiskCache> Open(uint64_t max_bytes = 0) {
    DiskCache::Options options;
    options.max_bytes = max_bytes;
    auto cache = DiskCache::Open(dir_, options);
    EXPECT_TRUE(cache.ok()) << cache.status();
    return cache.ok() ? *std::move(cache) : nullptr;
  }
  fs::path Entry(const std::string& key) { return fs::path(dir_) / key.substr(0, 2) / (key + ".o"); }
  // The sizes of the entry files on disk, together.
  uint64_t DiskBytes() {
    uint64_t total = 0;
    for (const auto& f : fs::recursive_directory_iterator(dir_)) {
      if (f.is_regular_file() && !f.is_symlink() && f.path().extension() == ".o") total += f.file_size();
    }
    return total;
  }
  static void SetMtime(const fs::path& path, time_t seconds) {
    struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
  }

  std::string dir_;
};

std::string Key(int i) { return CacheKey({"key", std::to_string(i)}); }

TEST_F(DiskCacheTest, WriteReadClear) {
  auto cache = Open();
  const std::string key = CacheKey({"module"});
  EXPECT_FALSE(cache->Read(key, ".o"));
  ASSERT_TRUE(cache->Write(key, ".o", std::string("\0bytes", 6)).ok());
  auto back = cache->Read(key, ".o");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, std::string("\0bytes", 6));
  EXPECT_TRUE(fs::exists(Entry(key)));
  EXPECT_EQ(cache->stats().bytes, DiskCache::EntryBytes(6));
  EXPECT_EQ(fs::file_size(Entry(key)), DiskCache::EntryBytes(6));
  // Files that are not cache entries survive a clear.
  { std::ofstream(fs::path(dir_) / "README") << "keep"; }
  auto removed = cache->Clear();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(cache->Read(key, ".o"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "README"));
  EXPECT_EQ(cache->stats().bytes, 0u);
  EXPECT_EQ(cache->stats().entries, 0u);
}

TEST_F(DiskCacheTest, UnwritableDirectoryIsAnError) {
  EXPECT_FALSE(DiskCache::Open("/proc/warpd-cannot-exist", {}).ok());
  EXPECT_FALSE(DiskCache::EnsureDir("/proc/warpd-cannot-exist").ok());
}

// Past the limit, a write deletes the least recently written entries until
// the total fits again.
TEST_F(DiskCacheTest, EvictsLeastRecentlyUsedAfterWrites) {
  const uint64_t entry = DiskCache::EntryBytes(1000);
  auto cache = Open(3 * entry);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache->Write(Key(i), ".o", std::string(1000, 'a' + i)).ok());
  EXPECT_EQ(cache->stats().bytes, 3 * entry);
  EXPECT_EQ(cache->stats().evictions, 0u);
  ASSERT_TRUE(cache->Write(Key(3), ".o", std::string(1000, 'd')).ok());
  EXPECT_FALSE(fs::exists(Entry(Key(0))));  // the oldest
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(fs::exists(Entry(Key(i)))) << i;
  EXPECT_EQ(cache->stats().bytes, 3 * entry);
  EXPECT_EQ(cache->stats().entries, 3u);
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_EQ(DiskBytes(), 3 * entry);
  // A larger entry makes room for itself: the two oldest go.
  ASSERT_TRUE(cache->Write(Key(4), ".o", std::string(1900, 'e')).ok());
  EXPECT_FALSE(fs::exists(Entry(Key(1))));
  EXPECT_FALSE(fs::exists(Entry(Key(2))));
  EXPECT_TRUE(fs::exists(Entry(Key(3))));
  EXPECT_TRUE(fs::exists(Entry(Key(4))));
  EXPECT_EQ(cache->stats().bytes, entry + DiskCache::EntryBytes(1900));
  EXPECT_EQ(cache->stats().evictions, 3u);
}

TEST_F(DiskCacheTest, LimitHoldsAfterEveryWrite) {
  const uint64_t limit = 20000;
  auto cache = Open(limit);
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(cache->Write(Key(i), ".o", std::string(500 + (i * 397) % 3000, 'x')).ok());
    ASSERT_LE(DiskBytes(), limit) << "after write " << i;
    ASSERT_EQ(cache->stats().bytes, DiskBytes()) << "after write " << i;
  }
  EXPECT_GT(cache->stats().evictions, 40u);
  EXPECT_TRUE(cache->Read(Key(59), ".o").has_value());  // the newest stays
}

TEST_F(DiskCacheTest, EntryLargerThanTheLimitIsNotWritten) {
  auto cache = Open(1000);
  absl::Status s = cache->Write(Key(0), ".o", std::string(1000, 'x'));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("--cache-max"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(Entry(Key(0))));
  EXPECT_EQ(cache->stats().bytes, 0u);
}

// A hit, read from disk or served from memory (Touch), makes an entry the
// most recently used: the next eviction takes another.
TEST_F(DiskCacheTest, HitsRefreshRecency) {
  const uint64_t entry = DiskCache::EntryBytes(1000);
  auto cache = Open(3 * entry);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache->Write(Key(i), ".o", std::string(1000, 'x')).ok());
  ASSERT_TRUE(cache->Read(Key(0), ".o").has_value());  // 0 is now newer than 1 and 2
  ASSERT_TRUE(cache->Write(Key(3), ".o", std::string(1000, 'x')).ok());
  EXPECT_TRUE(fs::exists(Entry(Key(0))));
  EXPECT_FALSE(fs::exists(Entry(Key(1))));
  cache->Touch(Key(2), ".o");  // 2 is now newer than 0 and 3
  ASSERT_TRUE(cache->Write(Key(4), ".o", std::string(1000, 'x')).ok());
  EXPECT_TRUE(fs::exists(Entry(Key(2))));
  EXPECT_FALSE(fs::exists(Entry(Key(0))));
  EXPECT_TRUE(fs::exists(Entry(Key(3))));
  EXPECT_TRUE(fs::exists(Entry(Key(4))));
  // The file's mtime carries the recency: a hit moved it forward.
  struct stat st;
  ASSERT_EQ(stat(Entry(Key(2)).c_str(), &st), 0);
  SetMtime(Entry(Key(2)), 1000000);
  ASSERT_TRUE(cache->Read(Key(2), ".o").has_value());
  ASSERT_EQ(stat(Entry(Key(2)).c_str(), &st), 0);
  EXPECT_GT(st.st_mtim.tv_sec, time(nullptr) - 60);
}

// Opening a directory counts what is there and orders it by mtime; over the
// limit, the oldest go at once.
TEST_F(DiskCacheTest, StartupScanCountsExistingEntries) {
  {
    auto cache = Open();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache->Write(Key(i), ".o", std::string(100 * (i + 1), 'x')).ok());
  }
  uint64_t total = 0;
  for (int i = 0; i < 5; ++i) total += DiskCache::EntryBytes(100 * (i + 1));
  {
    auto cache = Open();
    EXPECT_EQ(cache->stats().bytes, total);
    EXPECT_EQ(cache->stats().entries, 5u);
  }
  // Oldest first: 3, 0, 4, 1, 2.
  const time_t now = time(nullptr);
  const int order[] = {3, 0, 4, 1, 2};
  for (int rank = 0; rank < 5; ++rank) SetMtime(Entry(Key(order[rank])), now - 1000 + rank);
  const uint64_t limit = total - DiskCache::EntryBytes(400) - DiskCache::EntryBytes(100);
  auto cache = Open(limit);
  EXPECT_FALSE(fs::exists(Entry(Key(3))));
  EXPECT_FALSE(fs::exists(Entry(Key(0))));
  for (int i : {1, 2, 4}) EXPECT_TRUE(fs::exists(Entry(Key(i)))) << i;
  EXPECT_EQ(cache->stats().bytes, limit);
  EXPECT_EQ(cache->stats().evictions, 2u);
}

// Only regular files named like entries, in their shard, count; nothing else
// is deleted, and no symbolic link (to a file or a shard) is followed.
TEST_F(DiskCacheTest, JunkAndSymlinksAreIgnoredAndNeverFollowed) {
  const fs::path outside = fs::path(dir_ + "_outside");
  fs::remove_all(outside);
  fs::create_directories(outside);
  { auto cache = Open(); }
  const std::string a = Key(1), b = Key(2), c = Key(3);
  // Files of the right name outside the cache, reachable through links.
  const fs::path target = outside / (a + ".o");
  { std::ofstream(target) << std::string(50000, 'T'); }
  fs::create_directories(Entry(a).parent_path());
  fs::create_symlink(target, Entry(a));
  fs::create_directories(outside / "shard");
  { std::ofstream(outside / "shard" / (b + ".o")) << std::string(50000, 'S'); }
  const std::string linked_shard = b.substr(0, 2) == a.substr(0, 2) ? "zz" : b.substr(0, 2);
  fs::create_directory_symlink(outside / "shard", fs::path(dir_) / linked_shard);
  // Junk: a file with another name, an entry name in the wrong shard, a
  // directory named like an entry, a file at the top.
  fs::create_directories(Entry(c).parent_path());
  { std::ofstream(Entry(c).parent_path() / "notes.txt") << std::string(50000, 'n'); }
  const std::string wrong_shard = c.substr(0, 2) == "00" ? "01" : "00";
  fs::create_directories(fs::path(dir_) / wrong_shard);
  { std::ofstream(fs::path(dir_) / wrong_shard / (c + ".o")) << std::string(50000, 'w'); }
  fs::create_directories(Entry(Key(4)));
  { std::ofstream(fs::path(dir_) / "README") << std::string(50000, 'r'); }

  const uint64_t entry = DiskCache::EntryBytes(1000);
  auto cache = Open(2 * entry);
  EXPECT_EQ(cache->stats().bytes, 0u);
  EXPECT_EQ(cache->stats().entries, 0u);
  for (int i = 10; i < 16; ++i) ASSERT_TRUE(cache->Write(Key(i), ".o", std::string(1000, 'x')).ok());
  EXPECT_EQ(cache->stats().bytes, 2 * entry);
  EXPECT_EQ(cache->stats().evictions, 4u);
  // Everything not the cache's own is still there, links and their targets too.
  EXPECT_EQ(fs::file_size(target), 50000u);
  EXPECT_TRUE(fs::is_symlink(Entry(a)));
  EXPECT_EQ(fs::file_size(outside / "shard" / (b + ".o")), 50000u);
  EXPECT_TRUE(fs::is_symlink(fs::path(dir_) / linked_shard));
  EXPECT_TRUE(fs::exists(Entry(c).parent_path() / "notes.txt"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / wrong_shard / (c + ".o")));
  EXPECT_TRUE(fs::is_directory(Entry(Key(4))));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "README"));
  fs::remove_all(outside);
}

// A shard directory that is a symbolic link (to another directory holding a
// valid entry) is never read, written, counted or emptied through.
TEST_F(DiskCacheTest, SymlinkedShardIsNeverUsed) {
  const std::string key = Key(10);
  const fs::path outside = fs::path(dir_ + "_outside");
  fs::remove_all(outside);
  {
    DiskCache::Options options;
    auto elsewhere = DiskCache::Open(outside.string(), options);
    ASSERT_TRUE(elsewhere.ok());
    ASSERT_TRUE((*elsewhere)->Write(key, ".o", std::string(1000, 'v')).ok());
  }
  const fs::path outside_entry = outside / key.substr(0, 2) / (key + ".o");
  const uint64_t size = fs::file_size(outside_entry);
  auto cache = Open(1 << 20);
  fs::create_directory_symlink(outside / key.substr(0, 2), Entry(key).parent_path());
  cache->Rescan();
  EXPECT_EQ(cache->stats().entries, 0u);
  EXPECT_FALSE(cache->Read(key, ".o").has_value());
  EXPECT_FALSE(cache->Write(key, ".o", std::string(10, 'w')).ok());
  EXPECT_EQ(cache->Clear().value_or(99), 0u);
  EXPECT_EQ(fs::file_size(outside_entry), size);
  EXPECT_EQ(std::distance(fs::directory_iterator(outside / key.substr(0, 2)), fs::directory_iterator()), 1);
  fs::remove_all(outside);
}

// A crashed writer's temporary file goes once it is old; a fresh one (a
// write in progress, maybe another daemon's) stays. Neither is counted.
TEST_F(DiskCacheTest, StaleTemporaryFilesAreRemoved) {
  { auto cache = Open(); }
  const std::string key = Key(7);
  fs::create_directories(Entry(key).parent_path());
  const fs::path stale = Entry(key).string() + ".tmp.4242.0";
  const fs::path fresh = Entry(key).string() + ".tmp.4242.1";
  { std::ofstream(stale) << std::string(3000, 's'); }
  { std::ofstream(fresh) << std::string(3000, 'f'); }
  SetMtime(stale, time(nullptr) - 2 * 3600);
  auto cache = Open(1 << 20);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_EQ(cache->stats().bytes, 0u);
}

// Two caches on one directory stand for two daemons sharing it: each
// deletes only files, and the other, finding one gone, misses and forgets
// it; a rescan learns what the other wrote and trims to the limit.
TEST_F(DiskCacheTest, CachesSharingADirectoryStayCorrect) {
  const uint64_t entry = DiskCache::EntryBytes(1000);
  auto a = Open(3 * entry);
  auto b = Open(3 * entry);
  ASSERT_TRUE(a->Write(Key(0), ".o", std::string(1000, '0')).ok());
  ASSERT_TRUE(b->Read(Key(0), ".o").has_value());  // b learns of a's entry by reading it
  EXPECT_EQ(b->stats().entries, 1u);
  for (int i = 1; i < 4; ++i) ASSERT_TRUE(b->Write(Key(i), ".o", std::string(1000, 'b')).ok());
  EXPECT_FALSE(fs::exists(Entry(Key(0))));  // b evicted it
  EXPECT_EQ(a->stats().entries, 1u);        // a does not know yet
  EXPECT_FALSE(a->Read(Key(0), ".o").has_value());
  EXPECT_EQ(a->stats().entries, 0u);
  EXPECT_EQ(a->stats().bytes, 0u);
  for (int i = 4; i < 6; ++i) ASSERT_TRUE(a->Write(Key(i), ".o", std::string(1000, 'a')).ok());
  EXPECT_EQ(DiskBytes(), 5 * entry);  // each within its own limit, together over
  a->Rescan();
  EXPECT_EQ(a->stats().bytes, 3 * entry);
  EXPECT_EQ(DiskBytes(), 3 * entry);
  EXPECT_TRUE(a->Read(Key(5), ".o").has_value());
  // b's index still lists files a deleted: its reads miss and compile again.
  int b_hits = 0;
  for (int i = 1; i < 4; ++i) b_hits += b->Read(Key(i), ".o").has_value();
  EXPECT_EQ(b_hits, 1);
  EXPECT_EQ(b->stats().entries, 1u);
}

// Threads reading, writing and touching at once: the index ends equal to
// the directory, under the limit.
TEST_F(DiskCacheTest, ConcurrentUseKeepsTheIndexExact) {
  const uint64_t limit = 30000;
  auto cache = Open(limit);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        const int k = (i * 7 + t * 13) % 40;
        if (!cache->Read(Key(k), ".o")) (void)cache->Write(Key(k), ".o", std::string(1000 + 37 * k, 'x'));
        cache->Touch(Key((k + 5) % 40), ".o");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(DiskBytes(), limit);
  EXPECT_EQ(cache->stats().bytes, DiskBytes());
  EXPECT_GT(cache->stats().evictions, 0u);
}

// --- Trust (issue 7) ---

TEST_F(DiskCacheTest, NewDirectoryIsPrivate) {
  auto cache = Open();
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string key = CacheKey({"k"});
  ASSERT_TRUE(cache->Write(key, ".o", "object").ok());
  ASSERT_EQ(stat(Entry(key).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(DiskCacheTest, GroupOrWorldWritableDirectoryIsRefused) {
  for (mode_t mode : {0775, 0757, 0777}) {
    fs::create_directories(dir_);
    chmod(dir_.c_str(), mode);
    absl::Status s = DiskCache::Open(dir_, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << mode << ": " << s;
    EXPECT_NE(s.message().find("writable by group or others"), std::string::npos) << s;
    EXPECT_NE(s.message().find("chmod go-w"), std::string::npos) << s;
  }
  chmod(dir_.c_str(), 0755);  // readable by others is fine
  EXPECT_TRUE(DiskCache::EnsureDir(dir_).ok());
}

TEST_F(DiskCacheTest, DirectoryOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0700);
  ASSERT_EQ(chown(dir_.c_str(), 4242, 4242), 0);
  absl::Status s = DiskCache::EnsureDir(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("belongs to uid 4242"), std::string::npos) << s;
}

TEST_F(DiskCacheTest, TruncatedModifiedOrSwappedEntriesAreMisses) {
  auto cache = Open();
  const std::string a = CacheKey({"a"}), b = CacheKey({"b"});
  const std::string object(4096, 'x');
  ASSERT_TRUE(cache->Write(a, ".o", object).ok());
  ASSERT_TRUE(cache->Write(b, ".o", object + "b").ok());
  ASSERT_TRUE(cache->Read(a, ".o").has_value());

  // Truncated: a miss, and the file is gone (it will be compiled again).
  fs::resize_file(Entry(a), fs::file_size(Entry(a)) - 10);
  EXPECT_FALSE(cache->Read(a, ".o").has_value());
  EXPECT_FALSE(fs::exists(Entry(a)));
  EXPECT_EQ(cache->stats().entries, 1u);  // and forgotten

  // Swapped: b's valid entry copied to a's name.
  fs::create_directories(Entry(a).parent_path());
  fs::copy_file(Entry(b), Entry(a));
  EXPECT_FALSE(cache->Read(a, ".o").has_value());

  // Modified in place (same length).
  {
    std::fstream f(Entry(b), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('c');
  }
  EXPECT_FALSE(cache->Read(b, ".o").has_value());

  // Planted: bytes without the header, as an older cache or an attacker writes.
  {
    std::ofstream f(Entry(b), std::ios::binary);
    f << "\x7f" "ELF planted";
  }
  EXPECT_FALSE(cache->Read(b, ".o").has_value());

  // A symbolic link to a valid entry is not followed.
  ASSERT_TRUE(cache->Write(a, ".o", object).ok());
  fs::remove(Entry(b));
  fs::create_symlink(Entry(a), Entry(b));
  EXPECT_FALSE(cache->Read(b, ".o").has_value());
  EXPECT_TRUE(cache->Read(a, ".o").has_value());
}

TEST_F(DiskCacheTest, EntriesOthersCanWriteOrOwnAreMisses) {
  auto cache = Open();
  const std::string a = CacheKey({"a"});
  ASSERT_TRUE(cache->Write(a, ".o", "object").ok());
  chmod(Entry(a).c_str(), 0666);
  EXPECT_FALSE(cache->Read(a, ".o").has_value());
  if (geteuid() == 0) {
    ASSERT_TRUE(cache->Write(a, ".o", "object").ok());
    ASSERT_EQ(chown(Entry(a).c_str(), 4242, 4242), 0);
    EXPECT_FALSE(cache->Read(a, ".o").has_value());
  }
}

}  // namespace
}  // namespace warpd::compiler
