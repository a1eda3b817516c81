#include "server/local/connection_slots.h"

#include "absl/strings/str_cat.h"

namespace warpd::server {
namespace {

// Decrements `key`'s count, dropping the entry at zero so the maps hold
// only the uids and tenants that have connections now.
template <typename Map, typename Key>
void Decrement(Map& map, const Key& key) {
  auto it = map.find(key);
  if (it != map.end() && --it->second <= 0) map.erase(it);
}

template <typename Map, typename Key>
int CountOf(const Map& map, const Key& key) {
  auto it = map.find(key);
  return it == map.end() ? 0 : it->second;
}

}  // namespace

ConnectionSlots::Slot& ConnectionSlots::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    uid_ = other.uid_;
    tenant_ = std::move(other.tenant_);
    other.tenant_.clear();
  }
  return *this;
}

absl::Status ConnectionSlots::Slot::Authenticate(std::string_view tenant) {
  if (owner_ == nullptr || !tenant_.empty()) {
    return absl::FailedPreconditionError("a connection slot is authenticated once, while held");
  }
  if (tenant.empty()) return absl::InvalidArgumentError("a tenant's name is not empty");
  if (absl::Status s = owner_->Authenticate(uid_, tenant); !s.ok()) return s;
  tenant_ = std::string(tenant);
  return absl::OkStatus();
}

void ConnectionSlots::Slot::Release() {
  if (owner_ == nullptr) return;
  std::exchange(owner_, nullptr)->Release(uid_, tenant_);
  tenant_.clear();
}

ConnectionSlots::ConnectionSlots(std::string noun, std::string advice, const Limits& limits)
    : noun_(std::move(noun)), advice_(std::move(advice)), limits_(limits) {}

absl::StatusOr<ConnectionSlots::Slot> ConnectionSlots::Admit(uid_t uid) {
  absl::MutexLock lock(&mu_);
  if (total_ >= limits_.total) {
    return absl::ResourceExhaustedError(absl::StrCat("too many ", noun_, ": ", total_,
                                                     " are open, the most the daemon serves at once", advice_));
  }
  int& pending = pending_[uid];
  if (pending >= limits_.pending_per_uid) {
    return absl::ResourceExhaustedError(absl::StrCat("too many ", noun_, " from uid ", uid,
                                                     " that have not authenticated yet: ", pending,
                                                     ", the most one uid may have", advice_));
  }
  ++pending;
  ++total_;
  Slot slot;
  slot.owner_ = this;
  slot.uid_ = uid;
  return slot;
}

absl::Status ConnectionSlots::Authenticate(uid_t uid, std::string_view tenant) {
  absl::MutexLock lock(&mu_);
  const std::string name(tenant);
  const int of_tenant = CountOf(tenants_, name);
  if (of_tenant >= limits_.per_tenant) {
    return absl::ResourceExhaustedError(absl::StrCat("too many ", noun_, " for tenant '", name, "': ", of_tenant,
                                                     " are open, the most one tenant may hold (", limits_.per_tenant,
                                                     " per tenant, ", limits_.per_tenant_uid, " per uid within it)",
                                                     advice_));
  }
  auto key = std::make_pair(name, uid);
  const int of_uid = CountOf(tenant_uids_, key);
  if (of_uid >= limits_.per_tenant_uid) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many ", noun_, " for tenant '", name, "' from uid ", uid, ": ", of_uid,
        " are open, the most one uid may hold within a tenant (", limits_.per_tenant, " per tenant, ",
        limits_.per_tenant_uid, " per uid within it)", advice_));
  }
  Decrement(pending_, uid);
  ++tenants_[name];
  ++tenant_uids_[std::move(key)];
  return absl::OkStatus();
}

void ConnectionSlots::Release(uid_t uid, const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  --total_;
  if (tenant.empty()) {
    Decrement(pending_, uid);
  } else {
    Decrement(tenants_, tenant);
    Decrement(tenant_uids_, std::make_pair(tenant, uid));
  }
}

int ConnectionSlots::total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

int ConnectionSlots::pending(uid_t uid) const {
  absl::MutexLock lock(&mu_);
  return CountOf(pending_, uid);
}

int ConnectionSlots::tenant(std::string_view tenant) const {
  absl::MutexLock lock(&mu_);
  return CountOf(tenants_, std::string(tenant));
}

}  // namespace warpd::server
