#include "server/persistent/persistent_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "server/persistent/array_file.h"
#include "common/sha256.h"
#include "spdlog/spdlog.h"

namespace warpd::server {
namespace {

constexpr char kPersistentDir[] = "persistent";
constexpr std::string_view kEntrySuffix = ".warr";
constexpr std::string_view kTempInfix = ".warr.tmp.";
constexpr char kNameRule[] =
    "names are 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'";

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  // Closes now, reporting close's error (a write may surface only here).
  int Close() {
    const int rc = close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string EntryFileName(const std::string& name) { return HexSha256(name) + std::string(kEntrySuffix); }

bool IsEntryFileName(std::string_view s) {
  return s.size() == 64 + kEntrySuffix.size() && IsHex64(s.substr(0, 64)) && s.substr(64) == kEntrySuffix;
}

bool IsTempFileName(std::string_view s) {
  return s.size() > 64 + kTempInfix.size() && IsHex64(s.substr(0, 64)) &&
         s.substr(64, kTempInfix.size()) == kTempInfix;
}

// Tenant names are not validated text; keep them inert in logs and errors.
std::string Shown(std::string_view s) { return absl::CHexEscape(absl::string_view(s.data(), s.size())); }

// Why a file or directory we are about to trust is unsafe, or "" when it is
// fine: it must be the daemon user's.
std::string Untrusted(const struct stat& st) {
  if (st.st_uid != geteuid())
    return absl::StrCat("it belongs to uid ", st.st_uid, ", not to this daemon's user (uid ", geteuid(), ")");
  return "";
}

// Opens the directory `name` inside `parent_fd` without following a
// symbolic link, making it (0700) when `create` and it is missing. It must
// belong to the daemon's user; wider permissions are narrowed to 0700.
// NOT_FOUND when missing and !create; FAILED_PRECONDITION when unsafe.
absl::StatusOr<Fd> OpenPrivateDir(int parent_fd, const std::string& name, const std::string& shown, bool create) {
  int fd = openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (mkdirat(parent_fd, name.c_str(), 0700) != 0 && errno != EEXIST)
      return PosixError(absl::StrCat("creating directory ", shown), errno);
    // The new name must survive a crash before files are written under it.
    fsync(parent_fd);
    fd = openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(shown, " does not exist"));
    if (errno == ELOOP || errno == ENOTDIR)
      return absl::FailedPreconditionError(absl::StrCat(shown, " is not a directory (or is a symbolic link)"));
    return PosixError(absl::StrCat("opening directory ", shown), errno);
  }
  Fd dir(fd);
  struct stat st;
  if (fstat(dir.get(), &st) != 0) return PosixError(absl::StrCat("stat ", shown), errno);
  if (std::string why = Untrusted(st); !why.empty())
    return absl::FailedPreconditionError(absl::StrCat(shown, ": ", why, "; refusing to use it"));
  if ((st.st_mode & 07777) != 0700 && fchmod(dir.get(), 0700) != 0)
    return PosixError(absl::StrCat("chmod 0700 ", shown), errno);
  return dir;
}

// The state directory (made 0700 when it is missing and `create`).
absl::StatusOr<Fd> OpenStateDir(const std::string& state_dir, bool create) {
  int fd = open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST)
      return PosixError(absl::StrCat("creating state directory '", state_dir, "'"), errno);
    const std::string parent = std::filesystem::path(state_dir).parent_path().string();
    if (const int p = open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); p >= 0) {
      fsync(p);
      close(p);
    }
    fd = open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("state directory '", state_dir, "' does not exist"));
    return PosixError(absl::StrCat("opening state directory '", state_dir, "'"), errno);
  }
  return Fd(fd);
}

// The tenant's directory: <state_dir>/persistent/<sha256(tenant)>.
absl::StatusOr<Fd> OpenTenantDir(const std::string& state_dir, const std::string& tenant, bool create) {
  WARPD_ASSIGN_OR_RETURN(Fd root, OpenStateDir(state_dir, create));
  const std::string pshown = absl::StrCat("'", state_dir, "/", kPersistentDir, "'");
  WARPD_ASSIGN_OR_RETURN(Fd pdir, OpenPrivateDir(root.get(), kPersistentDir, pshown, create));
  const std::string hash = HexSha256(tenant);
  return OpenPrivateDir(pdir.get(), hash, absl::StrCat("'", state_dir, "/", kPersistentDir, "/", hash, "'"),
                        create);
}

// The names in the directory open as `dir_fd` (sorted, without . and ..).
absl::StatusOr<std::vector<std::string>> ListDir(int dir_fd) {
  const int fd = dup(dir_fd);
  if (fd < 0) return PosixError("dup", errno);
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    close(fd);
    return PosixError("fdopendir", err);
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = readdir(dir)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  const int err = errno;
  closedir(dir);
  if (err != 0) return PosixError("readdir", err);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status NoSuchEntry(const std::string& name) {
  // The name is echoed only when it is valid text.
  if (!PersistentStore::CheckName(name).ok()) return absl::NotFoundError("no persistent array with that name");
  return absl::NotFoundError(absl::StrCat("no persistent array named '", name, "'"));
}

}  // namespace

PersistentStore::PersistentStore(std::string state_dir, Limits limits, const runtime::DeviceRegistry* devices)
    : state_dir_(std::move(state_dir)), limits_(limits), devices_(devices) {}

absl::Status PersistentStore::CheckName(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("persistent array name is empty; ", kNameRule));
  if (name.size() > kMaxEntryNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent array name is ", name.size(), " characters long; ", kNameRule));
  }
  if (name[0] == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent array name '", Shown(name), "' starts with '.'; ", kNameRule));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
        c == '-') {
      continue;
    }
    const unsigned char u = static_cast<unsigned char>(c);
    const std::string what = u >= 0x21 && u < 0x7f ? absl::StrCat("'", std::string(1, c), "'")
                                                    : absl::StrFormat("byte 0x%02x", u);
    return absl::InvalidArgumentError(absl::StrCat("persistent array name '", Shown(name), "' has ", what,
                                                   " at position ", i, "; ", kNameRule));
  }
  return absl::OkStatus();
}

absl::Mutex* PersistentStore::TenantMutex(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<absl::Mutex>& m = tenant_mu_[tenant];
  if (m == nullptr) m = std::make_unique<absl::Mutex>();
  return m.get();
}

absl::Status PersistentStore::CheckDurable() const {
  if (state_dir_.empty()) {
    return absl::FailedPreconditionError(
        "durable persistent arrays need a state directory: start the daemon with --state-dir=DIR");
  }
  return absl::OkStatus();
}

absl::Status PersistentStore::Put(const std::string& tenant, const std::string& name,
                                  std::shared_ptr<const runtime::Array> array, bool durable) {
  WARPD_RETURN_IF_ERROR(CheckName(name));
  if (tenant.size() > kMaxTenantBytes)
    return absl::InvalidArgumentError(absl::StrCat("tenant name is longer than ", kMaxTenantBytes, " bytes"));
  if (array == nullptr) return absl::InvalidArgumentError("no array to name");
  if (durable) WARPD_RETURN_IF_ERROR(CheckDurable());

  absl::MutexLock tenant_lock(TenantMutex(tenant));
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(tenant);
    const size_t count = it == entries_.end() ? 0 : it->second.size();
    if (count > 0 && it->second.count(name) != 0) {
      return absl::AlreadyExistsError(absl::StrCat("a persistent array named '", name,
                                                   "' already exists; delete it first to reuse the name"));
    }
    if (count >= limits_.max_entries_per_tenant) {
      return absl::ResourceExhaustedError(absl::StrCat("this tenant has ", count, " persistent arrays, the limit (",
                                                       limits_.max_entries_per_tenant, "); delete some first"));
    }
  }
  // Only this tenant's changes wait for the write (they hold tenant_lock).
  if (durable) WARPD_RETURN_IF_ERROR(WriteEntryFile(tenant, name, *array));
  absl::MutexLock lock(&mu_);
  entries_[tenant][name] = Slot{std::move(array), durable};
  return absl::OkStatus();
}

absl::StatusOr<PersistentStore::Entry> PersistentStore::Get(const std::string& tenant,
                                                            const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto t = entries_.find(tenant);
  if (t != entries_.end()) {
    auto e = t->second.find(name);
    if (e != t->second.end()) return Entry{name, e->second.array, e->second.durable};
  }
  return NoSuchEntry(name);
}

std::vector<PersistentStore::Entry> PersistentStore::List(const std::string& tenant) const {
  std::vector<Entry> out;
  absl::MutexLock lock(&mu_);
  auto t = entries_.find(tenant);
  if (t == entries_.end()) return out;
  out.reserve(t->second.size());
  for (const auto& [name, slot] : t->second) out.push_back(Entry{name, slot.array, slot.durable});
  return out;
}

size_t PersistentStore::size(const std::string& tenant) const {
  absl::MutexLock lock(&mu_);
  auto t = entries_.find(tenant);
  return t == entries_.end() ? 0 : t->second.size();
}

absl::Status PersistentStore::Delete(const std::string& tenant, const std::string& name) {
  absl::Mutex* tenant_mu = nullptr;
  {
    // A tenant that never had entries gets no mutex (Delete makes nothing).
    absl::MutexLock lock(&mu_);
    auto it = tenant_mu_.find(tenant);
    if (it == tenant_mu_.end()) return NoSuchEntry(name);
    tenant_mu = it->second.get();
  }
  absl::MutexLock tenant_lock(tenant_mu);
  bool durable = false;
  {
    absl::MutexLock lock(&mu_);
    auto t = entries_.find(tenant);
    if (t == entries_.end() || t->second.count(name) == 0) return NoSuchEntry(name);
    durable = t->second.at(name).durable;
  }
  // The file goes first: if it cannot, the entry stays (and stays durable).
  if (durable) WARPD_RETURN_IF_ERROR(RemoveEntryFile(tenant, name));
  absl::MutexLock lock(&mu_);
  auto t = entries_.find(tenant);
  t->second.erase(name);  // still there: changes of this tenant hold tenant_lock
  if (t->second.empty()) entries_.erase(t);
  return absl::OkStatus();
}

absl::Status PersistentStore::SaveAll() {
  std::vector<std::string> tenants;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [tenant, entries] : entries_) tenants.push_back(tenant);
  }
  absl::Status first;
  int failed = 0;
  for (const std::string& tenant : tenants) {
    absl::MutexLock tenant_lock(TenantMutex(tenant));
    std::vector<std::pair<std::string, std::shared_ptr<const runtime::Array>>> durable;
    {
      absl::MutexLock lock(&mu_);
      auto t = entries_.find(tenant);
      if (t == entries_.end()) continue;
      for (const auto& [name, slot] : t->second)
        if (slot.durable) durable.emplace_back(name, slot.array);
    }
    for (const auto& [name, array] : durable) {
      absl::Status s = WriteEntryFile(tenant, name, *array);
      if (!s.ok()) {
        spdlog::error("persistent store: saving '{}' of tenant '{}' failed: {}", name, Shown(tenant),
                      s.ToString());
        ++failed;
        if (first.ok()) first = std::move(s);
      }
    }
  }
  if (failed > 1) first = absl::Status(first.code(), absl::StrCat(first.message(), " (and ", failed - 1, " more)"));
  return first;
}

absl::Status PersistentStore::WriteEntryFile(const std::string& tenant, const std::string& name,
                                             const runtime::Array& array) const {
  WARPD_RETURN_IF_ERROR(CheckDurable());
  const std::string what = absl::StrCat("saving durable persistent array '", name, "'");
  absl::StatusOr<Fd> dir = OpenTenantDir(state_dir_, tenant, /*create=*/true);
  if (!dir.ok()) {
    // An unusable state directory is the operator's to fix, not the client's.
    spdlog::error("persistent store: {}: {}", what, dir.status().ToString());
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the daemon's state directory is unusable (the daemon's log says why)"));
  }
  static std::atomic<uint64_t> counter{0};
  const std::string final_name = EntryFileName(name);
  const std::string temp_name = absl::StrCat(final_name, ".tmp.", getpid(), ".", counter.fetch_add(1));
  const int raw = openat(dir->get(), temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (raw < 0) return PosixError(absl::StrCat(what, ": creating a file"), errno);
  Fd file(raw);
  absl::StatusOr<runtime::Device*> device = devices_->Find(array.device());
  absl::Status s =
      device.ok() ? WriteArrayFile(file.get(), tenant, name, array, **device) : device.status();
  if (s.ok() && fsync(file.get()) != 0) s = PosixError("fsync", errno);
  if (file.Close() != 0 && s.ok()) s = PosixError("close", errno);
  if (s.ok() && renameat(dir->get(), temp_name.c_str(), dir->get(), final_name.c_str()) != 0)
    s = PosixError("rename", errno);
  if (!s.ok()) {
    unlinkat(dir->get(), temp_name.c_str(), 0);
    return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  }
  // The file is complete and in place; only the rename's survival of a power
  // loss is in doubt, which does not make the save (or a Put) fail.
  if (fsync(dir->get()) != 0) {
    spdlog::error("persistent store: {}: fsync of its directory: {}", what, PosixError("fsync", errno).ToString());
  }
  return absl::OkStatus();
}

absl::Status PersistentStore::RemoveEntryFile(const std::string& tenant, const std::string& name) const {
  if (state_dir_.empty()) return absl::OkStatus();
  absl::StatusOr<Fd> dir = OpenTenantDir(state_dir_, tenant, /*create=*/false);
  if (absl::IsNotFound(dir.status())) return absl::OkStatus();  // nothing was written
  const std::string what = absl::StrCat("deleting the file of durable persistent array '", name, "'");
  if (!dir.ok()) {
    spdlog::error("persistent store: {}: {}", what, dir.status().ToString());
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the daemon's state directory is unusable (the daemon's log says why)"));
  }
  if (unlinkat(dir->get(), EntryFileName(name).c_str(), 0) != 0 && errno != ENOENT) return PosixError(what, errno);
  if (fsync(dir->get()) != 0) return PosixError(absl::StrCat(what, ": fsync of its directory"), errno);
  return absl::OkStatus();
}

absl::Status PersistentStore::LoadAll(const AllocateFn& allocate) {
  if (state_dir_.empty()) return absl::OkStatus();
  absl::StatusOr<Fd> root = OpenStateDir(state_dir_, /*create=*/false);
  if (absl::IsNotFound(root.status())) return absl::OkStatus();
  if (!root.ok()) return absl::FailedPreconditionError(root.status().message());
  const std::string pshown = absl::StrCat("'", state_dir_, "/", kPersistentDir, "'");
  absl::StatusOr<Fd> pdir = OpenPrivateDir(root->get(), kPersistentDir, pshown, /*create=*/false);
  if (absl::IsNotFound(pdir.status())) return absl::OkStatus();
  if (!pdir.ok()) return absl::FailedPreconditionError(pdir.status().message());
  absl::StatusOr<std::vector<std::string>> names = ListDir(pdir->get());
  if (!names.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("reading ", pshown, ": ", names.status().message()));
  }
  int loaded = 0, skipped = 0;
  for (const std::string& name : *names) {
    if (!IsHex64(name)) {
      spdlog::warn("persistent store: ignoring '{}/{}/{}': not a tenant directory of warpd", state_dir_, kPersistentDir,
                 Shown(name));
      continue;
    }
    LoadTenantDir(pdir->get(), name, allocate, &loaded, &skipped);
  }
  if (loaded + skipped > 0) {
    spdlog::info("persistent store: loaded {} durable persistent arrays from {}, skipped {}", loaded, pshown,
                 skipped);
  }
  return absl::OkStatus();
}

void PersistentStore::LoadTenantDir(int persistent_dir_fd, const std::string& dir_name, const AllocateFn& allocate,
                                    int* loaded, int* skipped) {
  const std::string shown = absl::StrCat(state_dir_, "/", kPersistentDir, "/", dir_name);
  absl::StatusOr<Fd> dir = OpenPrivateDir(persistent_dir_fd, dir_name, absl::StrCat("'", shown, "'"), false);
  absl::StatusOr<std::vector<std::string>> files =
      dir.ok() ? ListDir(dir->get()) : absl::StatusOr<std::vector<std::string>>(dir.status());
  if (!files.ok()) {
    spdlog::warn("persistent store: skipping '{}': {}", shown, std::string(files.status().message()));
    ++*skipped;
    return;
  }
  for (const std::string& file : *files) {
    if (IsTempFileName(file)) {
      // Left by a write that a crash interrupted; the old file (if any) is intact.
      if (unlinkat(dir->get(), file.c_str(), 0) == 0)
        spdlog::info("persistent store: removed '{}/{}', left by an interrupted write", shown, file);
      continue;
    }
    if (!IsEntryFileName(file)) {
      spdlog::warn("persistent store: ignoring '{}/{}': not a warpd persistent array file", shown, Shown(file));
      continue;
    }
    absl::Status s = LoadEntryFile(dir->get(), dir_name, file, allocate);
    if (s.ok()) {
      ++*loaded;
    } else {
      spdlog::warn("persistent store: skipping '{}/{}' (the file is kept): {}", shown, file, std::string(s.message()));
      ++*skipped;
    }
  }
}

absl::Status PersistentStore::LoadEntryFile(int tenant_dir_fd, const std::string& dir_name,
                                            const std::string& file_name, const AllocateFn& allocate) {
  // O_NONBLOCK: a FIFO planted here must not hang start-up.
  const int raw = openat(tenant_dir_fd, file_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ELOOP) return absl::FailedPreconditionError("it is a symbolic link");
    return PosixError("opening it", errno);
  }
  Fd file(raw);
  struct stat st;
  if (fstat(file.get(), &st) != 0) return PosixError("stat", errno);
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError("it is not a regular file");
  if (std::string why = Untrusted(st); !why.empty()) return absl::FailedPreconditionError(why);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "it is writable by group or others (mode 0%o); warpd writes these files 0600", st.st_mode & 07777));
  }
  WARPD_ASSIGN_OR_RETURN(ArrayFileReader reader, ArrayFileReader::Open(file.get(), uint64_t(st.st_size)));
  const std::string& tenant = reader.tenant();
  const std::string& name = reader.name();
  if (!CheckName(name).ok()) return absl::DataLossError("bad header: the entry name is not a valid name");
  if (HexSha256(tenant) != dir_name || EntryFileName(name) != file_name) {
    return absl::DataLossError(absl::StrCat("it holds '", name, "' of tenant '", Shown(tenant),
                                            "', which belongs elsewhere (a file moved or copied from another place)"));
  }
  const std::string who = absl::StrCat("'", name, "' of tenant '", Shown(tenant), "'");
  auto admissible = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    auto t = entries_.find(tenant);
    const size_t count = t == entries_.end() ? 0 : t->second.size();
    if (count > 0 && t->second.count(name) != 0)
      return absl::AlreadyExistsError(absl::StrCat(who, " is already named"));
    if (count >= limits_.max_entries_per_tenant) {
      return absl::ResourceExhaustedError(absl::StrCat(
          who, " is past the limit of ", limits_.max_entries_per_tenant, " persistent arrays per tenant"));
    }
    return absl::OkStatus();
  };
  {
    absl::MutexLock lock(&mu_);  // checked early to spare a needless allocation
    WARPD_RETURN_IF_ERROR(admissible());
  }
  const runtime::ArrayLayout& layout = reader.layout();
  absl::StatusOr<std::shared_ptr<const runtime::Array>> array = allocate(tenant, layout, reader.device());
  if (!array.ok()) {
    return absl::Status(array.status().code(),
                        absl::StrCat("cannot allocate ", who, " on ", reader.device(), ": ", array.status().message()));
  }
  const runtime::Array* a = array->get();
  if (a == nullptr || a->size_bytes() != layout.size_bytes || a->ndim() != layout.ndim ||
      !types::SameType(a->dtype(), layout.dtype)) {
    return absl::InternalError(absl::StrCat("the allocator returned an array that does not match ", who));
  }
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, devices_->Find(a->device()));
  WARPD_RETURN_IF_ERROR(reader.ReadData(*a, *device));

  absl::MutexLock tenant_lock(TenantMutex(tenant));
  absl::MutexLock lock(&mu_);
  WARPD_RETURN_IF_ERROR(admissible());
  entries_[tenant][name] = Slot{*std::move(array), /*durable=*/true};
  return absl::OkStatus();
}

}  // namespace warpd::server
