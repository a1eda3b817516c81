#include "server/print_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/daemon_state.h"

namespace warpd::server {

namespace {

std::string Bytes(uint64_t n) {
  if (n == 0) return "unlimited";
  if (n % (uint64_t{1} << 30) == 0) return absl::StrCat(n >> 30, "G");
  if (n % (uint64_t{1} << 20) == 0) return absl::StrCat(n >> 20, "M");
  if (n % (uint64_t{1} << 10) == 0) return absl::StrCat(n >> 10, "K");
  return absl::StrCat(n);
}

std::string Count(uint64_t n) { return n == 0 ? "unlimited" : absl::StrCat(n); }

std::string Limits(const TenantLimits& l) {
  return absl::StrCat("memory=", Bytes(l.memory_bytes), " arrays=", Count(l.arrays), " sessions=", Count(l.sessions),
                      " queued_commands=", Count(l.queued_commands), " compiles=", Count(l.compiles),
                      " graph_commands=", Count(l.graph_commands),
                      " cache_bytes_per_hour=", Bytes(l.cache_bytes_per_hour));
}

}  // namespace

absl::StatusOr<std::string> EffectiveConfig(const Flags& flags) {
  std::shared_ptr<runtime::MemoryAccount> memory = DaemonState::GlobalMemory(flags);
  WARPD_ASSIGN_OR_RETURN(std::unique_ptr<TenantRegistry> tenants,
                         TenantRegistry::Create(DaemonState::TenantOptions(flags), memory));
  std::string out;
  auto line = [&](const std::string& key, const std::string& value) { absl::StrAppend(&out, key, ": ", value, "\n"); };
  line("listen", absl::StrJoin(flags.listen, ", "));
  line("tls", flags.tls_cert.empty() ? "off (loopback and Unix sockets only)"
                                     : absl::StrCat("cert ", flags.tls_cert, ", key ", flags.tls_key));
  line("socket_access", flags.socket_group.empty() ? "0600" : absl::StrCat("0660, group ", flags.socket_group));
  line("tenants", tenants->default_mode() ? "this user only (no --tenants file)" : flags.tenants_file);
  if (tenants->default_mode()) line("token_file", flags.token_file);
  line("max_memory", Bytes(memory->limit()));
  line("max_array_bytes", Bytes(flags.max_array_bytes));
  line("max_sessions", absl::StrCat(flags.max_sessions));
  line("session_grace", absl::FormatDuration(flags.session_grace));
  line("default_tenant_limits", Limits(tenants->default_limits()));
  for (const auto& t : tenants->All()) {
    line(absl::StrCat("tenant ", t->name()), absl::StrCat("weight=", t->weight(), " ", Limits(t->limits())));
  }
  line("cache_dir", flags.cache_dir);
  line("cache_max", Bytes(flags.cache_max_bytes));
  line("state_dir", flags.state_dir);
  line("metrics_listen", flags.metrics_listen.empty() ? "off"
                         : flags.metrics_insecure && !IsLocalAddress(flags.metrics_listen)
                             ? flags.metrics_listen + " (--metrics-insecure: plain HTTP beyond loopback)"
                             : flags.metrics_listen);
  line("cpu_threads", flags.cpu_threads == 0 ? "one per core but one" : absl::StrCat(flags.cpu_threads));
  line("kernel_timeout", flags.kernel_timeout == absl::ZeroDuration() ? "none" : absl::FormatDuration(flags.kernel_timeout));
  line("compile_workers", absl::StrCat(flags.compile_workers));
  line("compile_timeout", absl::FormatDuration(flags.compile_timeout));
  line("command_spin", absl::FormatDuration(flags.command_spin));
  line("compile_memory", Bytes(flags.compile_memory_bytes));
  line("compile_pch", flags.compile_pch ? "on" : "off");
  line("log_level", flags.log_level);
  return out;
}

}  // namespace warpd::server
