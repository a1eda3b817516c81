#include "server/persistent/persistent_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/memory/segment_pool.h"
#include "common/sha256.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::server {
namespace {

namespace fs = std::filesystem;
using runtime::Array;
using runtime::ArrayLayout;
using types::ScalarKind;
using ArrayPtr = std::shared_ptr<const Array>;

// The devices the stores move array bytes through: a CPU device.
const runtime::DeviceRegistry* TestDevices() {
  static runtime::DeviceRegistry* devices = [] {
    auto* r = new runtime::DeviceRegistry;
    r->Add(std::make_unique<runtime::CpuDevice>(1));
    return r;
  }();
  return devices;
}

// The one place that knows the allocator API (it is changing; adapt here).
absl::StatusOr<ArrayPtr> AllocateArray(const ArrayLayout& layout, const std::string& device) {
  static runtime::SegmentPool* pool = new runtime::SegmentPool(runtime::MemoryAccount::Create("test", 0));
  absl::StatusOr<std::shared_ptr<runtime::CpuBuffer>> buffer = pool->Allocate(layout.size_bytes, "test");
  if (!buffer.ok()) return buffer.status();
  return std::make_shared<const Array>(device, layout, *std::move(buffer));
}

// A CPU array of `dtype` and `shape` whose bytes count up from `seed`.
ArrayPtr MakeArray(types::TypeRef dtype, std::vector<int64_t> shape, uint8_t seed = 1,
                   std::shared_ptr<types::TypeTable> table = nullptr) {
  absl::StatusOr<ArrayLayout> layout = runtime::MakeArrayLayout(dtype, shape, std::move(table));
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<ArrayPtr> array = AllocateArray(*layout, "cpu");
  EXPECT_TRUE(array.ok()) << array.status();
  for (uint64_t i = 0; i < (*array)->size_bytes(); ++i) (*array)->data()[i] = std::byte(uint8_t(seed + i * 7));
  return *array;
}

std::string Bytes(const Array& a) {
  return a.size_bytes() == 0 ? std::string() : std::string(reinterpret_cast<const char*>(a.data()), a.size_bytes());
}

PersistentStore::AllocateFn CpuAllocate(std::vector<std::string>* tenants_seen = nullptr) {
  return [tenants_seen](const std::string& tenant, const ArrayLayout& layout,
                        const std::string& device) -> absl::StatusOr<ArrayPtr> {
    if (tenants_seen != nullptr) tenants_seen->push_back(tenant);
    return AllocateArray(layout, device);
  };
}

types::TypeRef Vec3f() { return types::Vector(3, ScalarKind::kFloat32); }
types::TypeRef F64() { return types::Scalar(ScalarKind::kFloat64); }
types::TypeRef F32() { return types::Scalar(ScalarKind::kFloat32); }

class PersistentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "warpd-persist-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    state_ = (fs::path(tmp_) / "state").string();  // made by the first durable Put
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  std::string TenantDir(const std::string& tenant) const {
    return (fs::path(state_) / "persistent" / HexSha256(tenant)).string();
  }
  std::string EntryPath(const std::string& tenant, const std::string& name) const {
    return (fs::path(TenantDir(tenant)) / (HexSha256(name) + ".warr")).string();
  }
  std::unique_ptr<PersistentStore> Reload(size_t limit = 1024) const {
    auto store = std::make_unique<PersistentStore>(state_, PersistentStore::Limits{limit}, TestDevices());
    absl::Status s = store->LoadAll(CpuAllocate());
    EXPECT_TRUE(s.ok()) << s;
    return store;
  }

  std::string tmp_, state_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
int Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// ------------------------------------------------------------------- names

TEST(PersistentNameTest, AcceptsGoodNames) {
  for (const std::string& name :
       {std::string("a"), std::string("weights"), std::string("A.b_c-d"), std::string("0"), std::string("a..b"),
        std::string("-x"), std::string("_x"), std::string("x."), std::string(128, 'x')}) {
    EXPECT_TRUE(PersistentStore::CheckName(name).ok()) << name << ": " << PersistentStore::CheckName(name);
  }
}

TEST(PersistentNameTest, RejectsBadNames) {
  struct Case {
    std::string name;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", "is empty"},
      {".", "starts with '.'"},
      {"..", "starts with '.'"},
      {".hidden", "starts with '.'"},
      {"../x", "starts with '.'"},
      {"a/../x", "'/' at position 1"},
      {"a/b", "'/' at position 1"},
      {"/abs", "'/' at position 0"},
      {"a b", "byte 0x20 at position 1"},
      {"a\\b", "'\\' at position 1"},
      {std::string("a\0b", 3), "byte 0x00 at position 1"},
      {"line\n", "byte 0x0a at position 4"},
      {"na\xc3\xafve", "byte 0xc3 at position 2"},  // "naïve" in UTF-8
      {"\xe2\x9c\x93", "byte 0xe2 at position 0"},
      {std::string(129, 'x'), "129 characters long"},
      {std::string(100000, 'x'), "100000 characters long"},
  };
  for (const Case& c : cases) {
    absl::Status s = PersistentStore::CheckName(c.name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.says;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s;
    EXPECT_NE(s.message().find("names are 1 to 128 characters"), std::string::npos) << s;
    // Client text is echoed inert: no raw control bytes, never the long name.
    EXPECT_EQ(std::string(s.message()).find('\0'), std::string::npos);
    EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);
    EXPECT_LT(s.message().size(), 400u);
  }
}

TEST_F(PersistentStoreTest, PutRejectsBadNamesBeforeTouchingDisk) {
  PersistentStore store(state_, {}, TestDevices());
  EXPECT_EQ(store.Put("t", "../x", MakeArray(F32(), {2}), true).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Put("t", "", MakeArray(F32(), {2}), false).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Put(std::string(1025, 't'), "x", MakeArray(F32(), {2}), false).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Put("t", "x", nullptr, false).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(state_));
  EXPECT_EQ(store.size("t"), 0u);
}

// --------------------------------------------------------- in-memory entries

TEST_F(PersistentStoreTest, PutGetListDelete) {
  PersistentStore store("", {}, TestDevices());
  ArrayPtr a = MakeArray(F32(), {4});
  ArrayPtr b = MakeArray(Vec3f(), {2, 3});
  ASSERT_TRUE(store.Put("alice", "zeta", a, false).ok());
  ASSERT_TRUE(store.Put("alice", "alpha", b, false).ok());
  EXPECT_EQ(store.size("alice"), 2u);

  absl::StatusOr<PersistentStore::Entry> e = store.Get("alice", "zeta");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->name, "zeta");
  EXPECT_EQ(e->array, a);  // the same array, not a copy
  EXPECT_FALSE(e->durable);

  std::vector<PersistentStore::Entry> list = store.List("alice");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "alpha");  // sorted by name
  EXPECT_EQ(list[0].array, b);
  EXPECT_EQ(list[1].name, "zeta");

  EXPECT_EQ(store.Get("alice", "nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(store.Get("alice", "nope").status().message().find("'nope'"), std::string::npos);
  // An invalid name is not echoed.
  EXPECT_EQ(store.Get("alice", std::string("a\0b", 3)).status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(store.Delete("alice", "zeta").ok());
  EXPECT_EQ(store.Get("alice", "zeta").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Delete("alice", "zeta").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.size("alice"), 1u);
  ASSERT_TRUE(store.Delete("alice", "alpha").ok());
  EXPECT_TRUE(store.List("alice").empty());
  EXPECT_EQ(store.size("alice"), 0u);
  // The name is free again.
  EXPECT_TRUE(store.Put("alice", "zeta", b, false).ok());
}

TEST_F(PersistentStoreTest, TenantsAreIsolated) {
  PersistentStore store(state_, {}, TestDevices());
  ArrayPtr a = MakeArray(F32(), {4}, 1);
  ArrayPtr b = MakeArray(F32(), {4}, 2);
  ASSERT_TRUE(store.Put("alice", "w", a, true).ok());
  ASSERT_TRUE(store.Put("bob", "w", b, true).ok());
  EXPECT_EQ(store.Get("alice", "w")->array, a);
  EXPECT_EQ(store.Get("bob", "w")->array, b);
  EXPECT_EQ(store.Get("carol", "w").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.List("carol").empty());
  EXPECT_EQ(store.Delete("carol", "w").code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(store.Delete("alice", "w").ok());
  EXPECT_EQ(store.Get("bob", "w")->array, b);
  EXPECT_FALSE(fs::exists(EntryPath("alice", "w")));
  EXPECT_TRUE(fs::exists(EntryPath("bob", "w")));

  // After a restart, too.
  auto again = Reload();
  EXPECT_EQ(again->size("alice"), 0u);
  ASSERT_EQ(again->size("bob"), 1u);
  EXPECT_EQ(Bytes(*again->Get("bob", "w")->array), Bytes(*b));
}

TEST_F(PersistentStoreTest, NameTakenIsAlreadyExists) {
  PersistentStore store(state_, {}, TestDevices());
  ArrayPtr a = MakeArray(F32(), {4});
  ASSERT_TRUE(store.Put("t", "w", a, false).ok());
  absl::Status s = store.Put("t", "w", MakeArray(F32(), {4}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("delete it first"), std::string::npos) << s;
  EXPECT_EQ(store.Get("t", "w")->array, a);  // unchanged
  EXPECT_FALSE(store.Get("t", "w")->durable);
  EXPECT_FALSE(fs::exists(EntryPath("t", "w")));
}

TEST_F(PersistentStoreTest, DurableNeedsStateDir) {
  PersistentStore store("", {}, TestDevices());
  absl::Status s = store.Put("t", "w", MakeArray(F32(), {4}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("--state-dir"), std::string::npos) << s;
  EXPECT_EQ(store.size("t"), 0u);
  // Non-durable entries work without one; SaveAll and LoadAll have nothing to do.
  EXPECT_TRUE(store.Put("t", "w", MakeArray(F32(), {4}), false).ok());
  EXPECT_TRUE(store.SaveAll().ok());
  EXPECT_TRUE(store.LoadAll(CpuAllocate()).ok());
}

TEST_F(PersistentStoreTest, LimitsEntriesPerTenant) {
  PersistentStore store(state_, PersistentStore::Limits{2}, TestDevices());
  ASSERT_TRUE(store.Put("t", "a", MakeArray(F32(), {1}), false).ok());
  ASSERT_TRUE(store.Put("t", "b", MakeArray(F32(), {1}), true).ok());
  absl::Status s = store.Put("t", "c", MakeArray(F32(), {1}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("limit"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(EntryPath("t", "c")));
  EXPECT_TRUE(store.Put("other", "c", MakeArray(F32(), {1}), false).ok());  // per tenant
  ASSERT_TRUE(store.Delete("t", "a").ok());
  EXPECT_TRUE(store.Put("t", "c", MakeArray(F32(), {1}), false).ok());

  PersistentStore none(state_, PersistentStore::Limits{0}, TestDevices());
  EXPECT_EQ(none.Put("t", "x", MakeArray(F32(), {1}), false).code(), absl::StatusCode::kResourceExhausted);
}

// ------------------------------------------------------------------- disk

TEST_F(PersistentStoreTest, RoundTripThroughRestart) {
  ArrayPtr vec3 = MakeArray(Vec3f(), {5}, 3);
  ArrayPtr f64 = MakeArray(F64(), {3, 4}, 9);
  ArrayPtr empty = MakeArray(F32(), {0});
  ArrayPtr empty2d = MakeArray(F64(), {4, 0});
  ArrayPtr ints = MakeArray(types::Scalar(ScalarKind::kInt32), {2, 2, 2, 2}, 5);
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("alice", "vec3", vec3, true).ok());
    ASSERT_TRUE(store.Put("alice", "f64", f64, true).ok());
    ASSERT_TRUE(store.Put("alice", "empty", empty, true).ok());
    ASSERT_TRUE(store.Put("alice", "empty2d", empty2d, true).ok());
    ASSERT_TRUE(store.Put("bob", "ints", ints, true).ok());
    ASSERT_TRUE(store.Put("alice", "session-only", MakeArray(F32(), {3}), false).ok());
    EXPECT_TRUE(store.Get("alice", "vec3")->durable);
  }
  PersistentStore store(state_, {}, TestDevices());
  std::vector<std::string> tenants_seen;
  ASSERT_TRUE(store.LoadAll(CpuAllocate(&tenants_seen)).ok());
  std::sort(tenants_seen.begin(), tenants_seen.end());
  EXPECT_EQ(tenants_seen, (std::vector<std::string>{"alice", "alice", "alice", "alice", "bob"}));

  std::vector<PersistentStore::Entry> list = store.List("alice");
  ASSERT_EQ(list.size(), 4u);  // the non-durable entry is gone
  EXPECT_EQ(list[0].name, "empty");
  EXPECT_EQ(list[1].name, "empty2d");
  EXPECT_EQ(list[2].name, "f64");
  EXPECT_EQ(list[3].name, "vec3");
  for (const auto& [tenant, name, original] : std::vector<std::tuple<std::string, std::string, ArrayPtr>>{
           {"alice", "vec3", vec3},
           {"alice", "f64", f64},
           {"alice", "empty", empty},
           {"alice", "empty2d", empty2d},
           {"bob", "ints", ints}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<PersistentStore::Entry> e = store.Get(tenant, name);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_TRUE(e->durable);
    const Array& got = *e->array;
    EXPECT_NE(e->array, original);
    EXPECT_EQ(got.device(), "cpu");
    EXPECT_TRUE(types::SameType(got.dtype(), original->dtype())) << got.dtype()->ToString();
    EXPECT_EQ(got.dtype(), original->dtype());  // struct-free dtypes are interned globally
    EXPECT_EQ(std::vector<int64_t>(got.shape().begin(), got.shape().end()),
              std::vector<int64_t>(original->shape().begin(), original->shape().end()));
    EXPECT_EQ(std::vector<int64_t>(got.strides().begin(), got.strides().end()),
              std::vector<int64_t>(original->strides().begin(), original->strides().end()));
    EXPECT_EQ(got.size_bytes(), original->size_bytes());
    EXPECT_EQ(Bytes(got), Bytes(*original));
  }
  EXPECT_EQ(store.Get("alice", "vec3")->array->TypeName(), "array(dtype=vec3f, ndim=1)");
}

TEST_F(PersistentStoreTest, StructDtypeRoundTrip) {
  v1::TypeRef proto;
  v1::StructType* st = proto.mutable_struct_type();
  st->set_name("Particle_1a2b");
  st->set_display_name("Particle");
  v1::StructMember* pos = st->add_members();
  pos->set_name("pos");
  pos->mutable_type()->mutable_vector()->set_length(3);
  pos->mutable_type()->mutable_vector()->set_dtype(v1::SCALAR_FLOAT32);
  v1::StructMember* mass = st->add_members();
  mass->set_name("mass");
  mass->mutable_type()->set_scalar(v1::SCALAR_FLOAT64);
  auto table = std::make_shared<types::TypeTable>();
  absl::StatusOr<types::TypeRef> particle = ir::TypeFromProto(proto, *table);
  ASSERT_TRUE(particle.ok()) << particle.status();
  ArrayPtr original = MakeArray(*particle, {7}, 11, table);
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "particles", original, true).ok());
  }
  auto store = Reload();
  absl::StatusOr<PersistentStore::Entry> e = store->Get("t", "particles");
  ASSERT_TRUE(e.ok()) << e.status();
  const Array& got = *e->array;
  EXPECT_TRUE(types::SameType(got.dtype(), *particle));
  EXPECT_EQ(got.dtype()->display_name(), "Particle");
  EXPECT_NE(got.layout().dtype_table, nullptr);  // the loaded array owns its struct
  EXPECT_NE(got.layout().dtype_table, table);
  EXPECT_EQ(Bytes(got), Bytes(*original));
}

TEST_F(PersistentStoreTest, SaveAllWritesCurrentContents) {
  PersistentStore store(state_, {}, TestDevices());
  ArrayPtr a = MakeArray(F64(), {16}, 1);
  ArrayPtr b = MakeArray(F32(), {8}, 2);
  ASSERT_TRUE(store.Put("t", "a", a, true).ok());
  ASSERT_TRUE(store.Put("u", "b", b, true).ok());
  ASSERT_TRUE(store.Put("t", "mem", MakeArray(F32(), {8}), false).ok());
  const std::string before = Bytes(*a);
  // Kernels change the arrays after they were named.
  std::memset(a->data(), 0x5a, a->size_bytes());
  std::memset(b->data(), 0x33, b->size_bytes());
  EXPECT_EQ(Bytes(*Reload()->Get("t", "a")->array), before);  // not saved yet
  ASSERT_TRUE(store.SaveAll().ok());
  auto again = Reload();
  EXPECT_EQ(Bytes(*again->Get("t", "a")->array), std::string(a->size_bytes(), '\x5a'));
  EXPECT_EQ(Bytes(*again->Get("u", "b")->array), std::string(b->size_bytes(), '\x33'));
  EXPECT_EQ(again->size("t"), 1u);
  // No temporary files are left behind.
  for (const auto& f : fs::recursive_directory_iterator(fs::path(state_) / "persistent"))
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
}

TEST_F(PersistentStoreTest, SaveAllReportsFailuresAfterTryingAll) {
  PersistentStore store(state_, {}, TestDevices());
  ASSERT_TRUE(store.Put("t", "a", MakeArray(F32(), {4}), true).ok());
  ASSERT_TRUE(store.Put("u", "b", MakeArray(F32(), {4}), true).ok());
  // t's directory is replaced by a file: t's save fails, u's still happens.
  fs::remove_all(TenantDir("t"));
  WriteFile(TenantDir("t"), "not a directory");
  fs::remove(EntryPath("u", "b"));
  absl::Status s = store.SaveAll();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(fs::exists(EntryPath("u", "b")));
}

// Makes writes to files fail past `bytes` (EFBIG) while it lives.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    struct rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  struct rlimit old_;
  sighandler_t old_handler_;
};

TEST_F(PersistentStoreTest, FailedWritesLeaveNoTraceAndKeepTheOldFile) {
  PersistentStore store(state_, {}, TestDevices());
  ArrayPtr small = MakeArray(F32(), {4}, 1);
  ASSERT_TRUE(store.Put("t", "small", small, true).ok());
  const std::string small_file = ReadFile(EntryPath("t", "small"));
  ArrayPtr big = MakeArray(F64(), {1 << 17});  // 1 MiB (memfds obey the limit too)
  absl::Status put;
  {
    FileSizeLimit limit(64 << 10);
    put = store.Put("t", "big", big, true);
  }
  EXPECT_FALSE(put.ok());
  EXPECT_NE(put.message().find("saving durable persistent array 'big'"), std::string::npos) << put;
  EXPECT_EQ(store.Get("t", "big").status().code(), absl::StatusCode::kNotFound);  // not named
  EXPECT_FALSE(fs::exists(EntryPath("t", "big")));
  // A SaveAll that fails keeps the previous file whole.
  ArrayPtr grown = MakeArray(F64(), {1 << 17}, 1);
  ASSERT_TRUE(store.Put("t", "grown", grown, true).ok());
  const std::string grown_file = ReadFile(EntryPath("t", "grown"));
  std::memset(grown->data(), 0x77, grown->size_bytes());
  absl::Status save;
  {
    FileSizeLimit limit(64 << 10);
    save = store.SaveAll();
  }
  EXPECT_FALSE(save.ok());
  EXPECT_EQ(ReadFile(EntryPath("t", "grown")), grown_file);
  EXPECT_EQ(ReadFile(EntryPath("t", "small")), small_file);
  for (const auto& f : fs::directory_iterator(TenantDir("t")))
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
  EXPECT_EQ(Reload()->size("t"), 2u);
}

TEST_F(PersistentStoreTest, FilesArePrivate) {
  const mode_t old = umask(0);  // even a permissive umask makes private files
  PersistentStore store(state_, {}, TestDevices());
  ASSERT_TRUE(store.Put("t", "w", MakeArray(F32(), {4}), true).ok());
  umask(old);
  EXPECT_EQ(Mode(state_), 0700);  // made by the store: it did not exist
  EXPECT_EQ(Mode(state_ + "/persistent"), 0700);
  EXPECT_EQ(Mode(TenantDir("t")), 0700);
  EXPECT_EQ(Mode(EntryPath("t", "w")), 0600);
  // Nothing of the client's text is in a path.
  for (const auto& f : fs::recursive_directory_iterator(state_)) {
    const std::string leaf = f.path().filename().string();
    EXPECT_TRUE(leaf == "persistent" || leaf.size() == 64 || leaf.size() == 69) << f.path();
  }
  // A directory that someone widened is narrowed again.
  ASSERT_EQ(chmod(TenantDir("t").c_str(), 0755), 0);
  ASSERT_TRUE(store.Put("t", "v", MakeArray(F32(), {4}), true).ok());
  EXPECT_EQ(Mode(TenantDir("t")), 0700);
}

TEST_F(PersistentStoreTest, DeleteRemovesTheFile) {
  PersistentStore store(state_, {}, TestDevices());
  ASSERT_TRUE(store.Put("t", "w", MakeArray(F32(), {4}), true).ok());
  ASSERT_TRUE(fs::exists(EntryPath("t", "w")));
  ASSERT_TRUE(store.Delete("t", "w").ok());
  EXPECT_FALSE(fs::exists(EntryPath("t", "w")));
  EXPECT_EQ(Reload()->size("t"), 0u);
  // A file that vanished meanwhile does not make Delete fail.
  ASSERT_TRUE(store.Put("t", "w", MakeArray(F32(), {4}), true).ok());
  fs::remove(EntryPath("t", "w"));
  EXPECT_TRUE(store.Delete("t", "w").ok());
}

// ------------------------------------------------------ damaged state dirs

TEST_F(PersistentStoreTest, EveryBitFlipIsSkipped) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "w", MakeArray(Vec3f(), {3}), true).ok());
  }
  const std::string path = EntryPath("t", "w");
  const std::string good = ReadFile(path);
  ASSERT_GT(good.size(), 100u);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= static_cast<char>(1 << (i % 8));
    WriteFile(path, bad);
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.LoadAll(CpuAllocate()).ok());
    ASSERT_EQ(store.size("t"), 0u) << "flipped byte " << i;
    ASSERT_EQ(ReadFile(path), bad) << "the damaged file is kept";
  }
  WriteFile(path, good);
  EXPECT_EQ(Reload()->size("t"), 1u);
}

TEST_F(PersistentStoreTest, TruncatedOrExtendedFilesAreSkipped) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "w", MakeArray(F64(), {64}), true).ok());
  }
  const std::string path = EntryPath("t", "w");
  const std::string good = ReadFile(path);
  for (size_t len : {size_t{0}, size_t{1}, size_t{8}, size_t{15}, size_t{16}, size_t{40}, good.size() / 2,
                     good.size() - 33, good.size() - 32, good.size() - 1}) {
    WriteFile(path, good.substr(0, len));
    auto store = Reload();
    EXPECT_EQ(store->size("t"), 0u) << "truncated to " << len;
  }
  WriteFile(path, good + "x");
  EXPECT_EQ(Reload()->size("t"), 0u);
  WriteFile(path, good + std::string(1 << 20, '\0'));
  EXPECT_EQ(Reload()->size("t"), 0u);
}

TEST_F(PersistentStoreTest, ForeignAndUnsafeFilesAreSkipped) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("alice", "a", MakeArray(F32(), {4}, 1), true).ok());
    ASSERT_TRUE(store.Put("alice", "b", MakeArray(F32(), {4}, 2), true).ok());
    ASSERT_TRUE(store.Put("bob", "keep", MakeArray(F32(), {4}, 3), true).ok());
    ASSERT_TRUE(store.Put("bob", "wide", MakeArray(F32(), {4}, 4), true).ok());
  }
  // Alice's file copied into Bob's directory (as if to steal the name).
  fs::copy_file(EntryPath("alice", "a"), EntryPath("bob", "a"));
  ASSERT_EQ(chmod(EntryPath("bob", "a").c_str(), 0600), 0);
  // Alice's "b" renamed to the file name of "c".
  fs::rename(EntryPath("alice", "b"), EntryPath("alice", "c"));
  // A symbolic link, a FIFO, a group-writable file, garbage and stray names.
  fs::create_symlink(EntryPath("alice", "a"), EntryPath("bob", "link"));
  ASSERT_EQ(mkfifo(EntryPath("bob", "fifo").c_str(), 0600), 0);
  ASSERT_EQ(chmod(EntryPath("bob", "wide").c_str(), 0660), 0);
  WriteFile(EntryPath("bob", "garbage"), std::string(1000, 'g'));
  WriteFile(TenantDir("bob") + "/README", "hello");
  fs::create_directory(fs::path(state_) / "persistent" / "not-a-tenant");
  fs::create_directory_symlink(TenantDir("alice"), fs::path(state_) / "persistent" / std::string(64, 'a'));

  auto store = Reload();
  EXPECT_EQ(store->size("alice"), 1u);
  EXPECT_TRUE(store->Get("alice", "a").ok());
  EXPECT_EQ(store->size("bob"), 1u);
  EXPECT_TRUE(store->Get("bob", "keep").ok());
  EXPECT_TRUE(fs::exists(EntryPath("bob", "a")));  // kept for the operator
  EXPECT_TRUE(fs::exists(EntryPath("bob", "garbage")));
  EXPECT_TRUE(fs::exists(EntryPath("bob", "wide")));
}

TEST_F(PersistentStoreTest, AnotherUsersFilesAreSkipped) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "theirs", MakeArray(F32(), {4}), true).ok());
    ASSERT_TRUE(store.Put("t", "mine", MakeArray(F32(), {4}), true).ok());
    ASSERT_TRUE(store.Put("u", "x", MakeArray(F32(), {4}), true).ok());
  }
  ASSERT_EQ(chown(EntryPath("t", "theirs").c_str(), 12345, 12345), 0);
  ASSERT_EQ(chown(TenantDir("u").c_str(), 12345, 12345), 0);
  auto store = Reload();
  EXPECT_EQ(store->size("t"), 1u);
  EXPECT_TRUE(store->Get("t", "mine").ok());
  EXPECT_EQ(store->size("u"), 0u);
  // A persistent/ directory of another user makes the whole store unusable.
  ASSERT_EQ(chown((fs::path(state_) / "persistent").c_str(), 12345, 12345), 0);
  PersistentStore other(state_, {}, TestDevices());
  EXPECT_EQ(other.LoadAll(CpuAllocate()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(other.Put("t", "new", MakeArray(F32(), {4}), true).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PersistentStoreTest, InterruptedWritesAreCleanedUp) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "w", MakeArray(F32(), {4}), true).ok());
  }
  const std::string temp = EntryPath("t", "w") + ".tmp.12345.0";
  WriteFile(temp, "half a file");
  auto store = Reload();
  EXPECT_EQ(store->size("t"), 1u);
  EXPECT_FALSE(fs::exists(temp));
}

TEST_F(PersistentStoreTest, UnsafeStateDirIsRefused) {
  // <state_dir>/persistent is a symbolic link to somewhere else.
  fs::create_directories(fs::path(tmp_) / "elsewhere");
  fs::create_directories(state_);
  fs::create_directory_symlink(fs::path(tmp_) / "elsewhere", fs::path(state_) / "persistent");
  PersistentStore store(state_, {}, TestDevices());
  absl::Status s = store.Put("t", "w", MakeArray(F32(), {4}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(s.message().find(tmp_), std::string::npos) << "no server paths in client errors: " << s;
  EXPECT_EQ(store.size("t"), 0u);
  EXPECT_TRUE(fs::is_empty(fs::path(tmp_) / "elsewhere"));
  EXPECT_EQ(store.LoadAll(CpuAllocate()).code(), absl::StatusCode::kFailedPrecondition);
  // A state directory that does not exist yet is fine: nothing to load.
  PersistentStore fresh((fs::path(tmp_) / "new").string(), {}, TestDevices());
  EXPECT_TRUE(fresh.LoadAll(CpuAllocate()).ok());
}

TEST_F(PersistentStoreTest, AllocationFailureSkipsAndKeepsTheFile) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("poor", "w", MakeArray(F32(), {4}), true).ok());
    ASSERT_TRUE(store.Put("rich", "w", MakeArray(F32(), {4}), true).ok());
  }
  PersistentStore store(state_, {}, TestDevices());
  ASSERT_TRUE(store
                  .LoadAll([](const std::string& tenant, const ArrayLayout& layout,
                              const std::string& device) -> absl::StatusOr<ArrayPtr> {
                    if (tenant == "poor") return absl::ResourceExhaustedError("over quota");
                    return AllocateArray(layout, device);
                  })
                  .ok());
  EXPECT_EQ(store.size("poor"), 0u);
  EXPECT_EQ(store.size("rich"), 1u);
  EXPECT_TRUE(fs::exists(EntryPath("poor", "w")));
  EXPECT_EQ(Reload()->size("poor"), 1u);  // once the quota allows it
}

TEST_F(PersistentStoreTest, LoadRespectsLimitAndExistingNames) {
  {
    PersistentStore store(state_, {}, TestDevices());
    ASSERT_TRUE(store.Put("t", "a", MakeArray(F32(), {4}), true).ok());
    ASSERT_TRUE(store.Put("t", "b", MakeArray(F32(), {4}), true).ok());
    ASSERT_TRUE(store.Put("t", "c", MakeArray(F32(), {4}), true).ok());
  }
  EXPECT_EQ(Reload(2)->size("t"), 2u);
  PersistentStore store(state_, {}, TestDevices());
  ArrayPtr mine = MakeArray(F32(), {4});
  ASSERT_TRUE(store.Put("t", "a", mine, false).ok());
  ASSERT_TRUE(store.LoadAll(CpuAllocate()).ok());
  EXPECT_EQ(store.size("t"), 3u);
  EXPECT_EQ(store.Get("t", "a")->array, mine);  // the existing entry wins
}

TEST_F(PersistentStoreTest, ConcurrentUse) {
  PersistentStore store(state_, PersistentStore::Limits{64}, TestDevices());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string tenant = absl::StrCat("tenant", t % 2);  // two threads per tenant
      for (int i = 0; i < 40; ++i) {
        const std::string name = absl::StrCat("n", i % 8);
        absl::Status s = store.Put(tenant, name, MakeArray(F32(), {16}, uint8_t(i)), i % 3 == 0);
        if (!s.ok() && !absl::IsAlreadyExists(s)) ++failures;
        (void)store.Get(tenant, name);
        (void)store.List(tenant);
        if (i % 2 == 1) {
          s = store.Delete(tenant, name);
          if (!s.ok() && !absl::IsNotFound(s)) ++failures;
        }
        if (i % 10 == 0 && !store.SaveAll().ok()) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // Exactly the durable entries are on disk, each readable.
  ASSERT_TRUE(store.SaveAll().ok());
  auto again = Reload();
  for (const std::string tenant : {"tenant0", "tenant1"}) {
    size_t durable = 0;
    for (const PersistentStore::Entry& e : store.List(tenant)) {
      if (!e.durable) continue;
      ++durable;
      absl::StatusOr<PersistentStore::Entry> g = again->Get(tenant, e.name);
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(Bytes(*g->array), Bytes(*e.array));
    }
    EXPECT_EQ(again->size(tenant), durable);
  }
}

}  // namespace
}  // namespace warpd::server
