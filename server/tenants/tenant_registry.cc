#include "server/tenants/tenant_registry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "common/sha256.h"
#include "server/auth/token.h"
#include "server/flags.h"
#include "spdlog/spdlog.h"
#include "warpd/v1/config.pb.h"

namespace warpd::server {

namespace {

constexpr size_t kMaxTenantsFileBytes = 4 << 20;
constexpr size_t kMaxTenants = 4096;
constexpr uint32_t kMaxWeight = 100;

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError(absl::StrCat("cannot open tenants file ", path), errno);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return PosixError(absl::StrCat("cannot read tenants file ", path), err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxTenantsFileBytes) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat("tenants file ", path, " is larger than 4 MiB"));
    }
  }
  close(fd);
  return out;
}

// `value` unless it is 0 or empty, then `fallback`.
absl::StatusOr<TenantLimits> MergeLimits(const v1::TenantLimits& in, const TenantLimits& fallback,
                                         const std::string& where) {
  TenantLimits out = fallback;
  if (!in.memory().empty()) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(in.memory());
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": limits.memory: ", bytes.status().message()));
    }
    if (*bytes != 0) out.memory_bytes = *bytes;
  }
  if (in.arrays() != 0) out.arrays = in.arrays();
  if (in.sessions() != 0) out.sessions = in.sessions();
  if (in.queued_commands() != 0) out.queued_commands = in.queued_commands();
  if (in.compiles() != 0) out.compiles = in.compiles();
  if (in.graph_commands() != 0) out.graph_commands = in.graph_commands();
  if (!in.cache_bytes_per_hour().empty()) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(in.cache_bytes_per_hour());
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": limits.cache_bytes_per_hour: ", bytes.status().message()));
    }
    if (*bytes != 0) out.cache_bytes_per_hour = *bytes;
  }
  return out;
}

}  // namespace

struct TenantRegistry::Config {
  struct Entry {
    std::string name;
    uint32_t weight = 1;
    TenantLimits limits;
    std::vector<std::string> token_hashes;
    std::vector<uint32_t> uids;
    bool admin = false;
  };
  std::vector<Entry> tenants;
  TenantLimits defaults;
};

absl::Status TenantRegistry::CheckTenantName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 && name[0] != '.';
  for (char c : name) {
    ok &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-';
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "a tenant name is 1-64 characters of [A-Za-z0-9._-] and does not start with '.'");
}

absl::StatusOr<std::unique_ptr<TenantRegistry>> TenantRegistry::Create(
    const Options& options, std::shared_ptr<runtime::MemoryAccount> global_memory) {
  std::unique_ptr<TenantRegistry> registry(new TenantRegistry(options, std::move(global_memory)));
  WARPD_ASSIGN_OR_RETURN(Config config, registry->ReadConfig());
  WARPD_RETURN_IF_ERROR(registry->Apply(std::move(config), nullptr));
  return registry;
}

absl::StatusOr<TenantRegistry::Config> TenantRegistry::ReadConfig() const {
  Config config;
  config.defaults = options_.default_limits;
  if (options_.tenants_file.empty()) {
    Config::Entry owner;
    owner.name = CheckTenantName(options_.owner_name).ok() ? options_.owner_name : "local";
    owner.limits = config.defaults;
    owner.uids.push_back(options_.owner_uid);
    owner.admin = true;  // the daemon's own user runs it
    config.tenants.push_back(std::move(owner));
    return config;
  }
  WARPD_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(options_.tenants_file));
  v1::TenantsFile file;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  if (auto s = google::protobuf::util::JsonStringToMessage(text, &file, parse); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tenants file ", options_.tenants_file, ": ", std::string(s.message())));
  }
  const std::string where = absl::StrCat("tenants file ", options_.tenants_file);
  WARPD_ASSIGN_OR_RETURN(config.defaults,
                         MergeLimits(file.default_limits(), options_.default_limits, where + ": default_limits"));
  if (file.tenants_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": names no tenants"));
  }
  if (static_cast<size_t>(file.tenants_size()) > kMaxTenants) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": more than ", kMaxTenants, " tenants"));
  }
  absl::flat_hash_map<std::string, std::string> names, hashes;
  absl::flat_hash_map<uint32_t, std::string> uids;
  for (const v1::TenantConfig& t : file.tenants()) {
    const std::string here = absl::StrCat(where, ": tenant '", t.name(), "'");
    if (absl::Status s = CheckTenantName(t.name()); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(here, ": ", s.message()));
    }
    if (!names.emplace(t.name(), t.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(here, ": named twice"));
    }
    Config::Entry e;
    e.name = t.name();
    e.weight = t.weight() == 0 ? 1 : t.weight();
    e.admin = t.admin();
    if (e.weight > kMaxWeight) {
      return absl::InvalidArgumentError(absl::StrCat(here, ": weight must be in [1, ", kMaxWeight, "]"));
    }
    WARPD_ASSIGN_OR_RETURN(e.limits, MergeLimits(t.limits(), config.defaults, here));
    for (const std::string& h : t.token_sha256()) {
      if (!IsHexSha256(h)) {
        return absl::InvalidArgumentError(absl::StrCat(
            here, ": token_sha256 entries are 64 lower-case hex digits (`warpd --new-token` prints one)"));
      }
      if (auto [it, fresh] = hashes.emplace(h, t.name()); !fresh) {
        return absl::InvalidArgumentError(absl::StrCat(here, ": a token hash also belongs to tenant '",
                                                       it->second, "'"));
      }
      e.token_hashes.push_back(h);
    }
    for (uint32_t uid : t.uids()) {
      if (auto [it, fresh] = uids.emplace(uid, t.name()); !fresh) {
        return absl::InvalidArgumentError(
            absl::StrCat(here, ": uid ", uid, " also belongs to tenant '", it->second, "'"));
      }
      e.uids.push_back(uid);
    }
    config.tenants.push_back(std::move(e));
  }
  return config;
}

absl::Status TenantRegistry::Apply(Config config, std::vector<std::shared_ptr<Tenant>>* peer_token_replaced) {
  absl::flat_hash_map<std::string, std::shared_ptr<Tenant>> by_name, by_token_hash;
  absl::flat_hash_map<uint32_t, std::shared_ptr<Tenant>> by_uid;
  absl::flat_hash_map<std::string, std::string> peer_tokens;
  std::vector<std::shared_ptr<Tenant>> removed, replaced;
  // The new owner of every uid the file names.
  absl::flat_hash_map<uint32_t, std::string> uid_owner;
  for (const Config::Entry& e : config.tenants) {
    for (uint32_t uid : e.uids) uid_owner[uid] = e.name;
  }
  {
    absl::MutexLock lock(&mu_);
    // Tenants that lose a uid (dropped, or moved to another tenant): the
    // peer token that uid may hold must stop working.
    absl::flat_hash_set<std::string> lost_uid;
    for (const auto& [uid, tenant] : by_uid_) {
      auto it = uid_owner.find(uid);
      if (it == uid_owner.end() || it->second != tenant->name()) lost_uid.insert(tenant->name());
    }
    for (Config::Entry& e : config.tenants) {
      std::shared_ptr<Tenant> tenant;
      if (auto it = by_name_.find(e.name); it != by_name_.end()) {
        tenant = it->second;
        tenant->Update(e.weight, e.limits);
      } else {
        tenant = std::make_shared<Tenant>(e.name, e.weight, e.limits, global_memory_);
      }
      std::string peer;
      auto old_peer = peer_tokens_.find(e.name);
      if (old_peer != peer_tokens_.end() && !lost_uid.contains(e.name)) {
        peer = old_peer->second;
      } else {
        WARPD_ASSIGN_OR_RETURN(peer, NewToken());
        if (old_peer != peer_tokens_.end()) replaced.push_back(tenant);
      }
      by_token_hash[HexSha256(peer)] = tenant;
      peer_tokens[e.name] = std::move(peer);
      for (const std::string& h : e.token_hashes) by_token_hash[h] = tenant;
      for (uint32_t uid : e.uids) by_uid[uid] = tenant;
      tenant->set_admin(e.admin);
      by_name[e.name] = std::move(tenant);
    }
    for (auto& [name, tenant] : by_name_) {
      if (!by_name.contains(name)) removed.push_back(tenant);
    }
    by_name_ = std::move(by_name);
    by_token_hash_ = std::move(by_token_hash);
    by_uid_ = std::move(by_uid);
    peer_tokens_ = std::move(peer_tokens);
    defaults_ = config.defaults;
  }
  if (peer_token_replaced != nullptr) *peer_token_replaced = std::move(replaced);
  for (auto& t : removed) {
    t->MarkRemoved();
    spdlog::info("{} removed from the configuration; its sessions will be closed", t->label());
  }
  return absl::OkStatus();
}

absl::StatusOr<TenantRegistry::ReloadResult> TenantRegistry::Reload() {
  ReloadResult result;
  if (default_mode()) return result;
  WARPD_ASSIGN_OR_RETURN(Config config, ReadConfig());
  const size_t n = config.tenants.size();
  WARPD_RETURN_IF_ERROR(Apply(std::move(config), &result.peer_token_replaced));
  spdlog::info("tenants file {} loaded: {} tenant(s)", options_.tenants_file, n);
  return result;
}

std::string TenantRegistry::CredentialOf(std::string_view authorization) {
  const std::string_view token = BearerToken(authorization);
  return token.empty() ? std::string() : HexSha256(token);
}

bool TenantRegistry::Accepts(const Tenant& tenant, std::string_view credential) const {
  if (credential.empty()) return false;
  absl::MutexLock lock(&mu_);
  auto it = by_token_hash_.find(absl::string_view(credential.data(), credential.size()));
  return it != by_token_hash_.end() && it->second.get() == &tenant && !tenant.removed();
}

absl::StatusOr<std::shared_ptr<Tenant>> TenantRegistry::Authenticate(std::string_view authorization) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "this call carries no bearer token (metadata 'authorization: Bearer <token>'); see "
        "docs/operations.md for where clients get one");
  }
  const std::string_view token = BearerToken(authorization);
  if (token.empty()) {
    return absl::UnauthenticatedError("the 'authorization' metadata must be 'Bearer <token>'");
  }
  const std::string hash = CredentialOf(authorization);
  absl::MutexLock lock(&mu_);
  auto it = by_token_hash_.find(hash);
  if (it == by_token_hash_.end() || it->second->removed()) {
    return absl::UnauthenticatedError("unknown bearer token");
  }
  return it->second;
}

std::shared_ptr<Tenant> TenantRegistry::ForUid(uint32_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = by_uid_.find(uid);
  return it == by_uid_.end() ? nullptr : it->second;
}

std::string TenantRegistry::PeerToken(const Tenant& tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = peer_tokens_.find(tenant.name());
  return it == peer_tokens_.end() ? std::string() : it->second;
}

TenantRegistry::Access TenantRegistry::AccessOf(const Tenant& tenant) const {
  absl::MutexLock lock(&mu_);
  Access out;
  const auto peer = peer_tokens_.find(tenant.name());
  const std::string peer_hash = peer == peer_tokens_.end() ? std::string() : HexSha256(peer->second);
  for (const auto& [hash, t] : by_token_hash_) {
    if (t.get() == &tenant && hash != peer_hash) ++out.token_hashes;
  }
  for (const auto& [uid, t] : by_uid_) {
    if (t.get() == &tenant) out.uids.push_back(uid);
  }
  std::sort(out.uids.begin(), out.uids.end());
  return out;
}

std::vector<std::shared_ptr<Tenant>> TenantRegistry::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Tenant>> out;
  for (const auto& [name, t] : by_name_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

std::shared_ptr<Tenant> TenantRegistry::Find(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

TenantLimits TenantRegistry::default_limits() const {
  absl::MutexLock lock(&mu_);
  return defaults_;
}

}  // namespace warpd::server
