// warpd compiler: precompiled runtime/native headers (clang PCHs).
//
// Every generated module starts with #include "warpd/native/builtin.h",
// then one #include per family header it uses (mat.h, quat.h, ...), and
// parsing those headers was most of a small module's compile time. A
// NativePchCache holds clang precompiled headers of such include lists, one
// per (CPU target, list), built in memory (no file is written) on first use
// and then shared by every compile of the process.
//
// A PCH stands for exactly the include lines a source starts with
// (LeadingHeaders): loading it first is what parsing those lines would do,
// and the lines themselves are then skipped (every header is #pragma once).
// So a module sees what it includes and nothing more, and the object is the
// one the compile makes without a PCH (native_pch_test.cc checks that byte
// for byte): module cache keys need no PCH component. The first compile of
// a new list pays for building its PCH, about what parsing the headers
// costs anyway; at most `max_entries` PCHs are kept, and a list past that
// uses the PCH of builtin.h alone (its other headers are parsed).
//
// A PCH depends on the triple, CPU, features and compile options: it is
// keyed by CpuTarget::Description() and built with the compile's own base
// arguments (clang_frontend.h), and clang itself refuses one whose target
// or options differ. When building fails, Get logs a warning once and
// returns null for that key from then on: compiles parse as before.
//
// Usage (CompileCppToObject does this):
//   std::vector<std::string> headers = NativePchCache::LeadingHeaders(source);
//   std::shared_ptr<const NativePch> pch =
//       headers.empty() ? nullptr : NativePchCache::Shared().Get(target, headers);
//
// Thread-safe: concurrent Gets for one key wait for one build.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

// The header every generated module includes first.
inline constexpr char kBaseHeader[] = "warpd/native/builtin.h";

struct NativePch {
  std::string target;                // CpuTarget::Description() it was built for
  std::string target_summary;        // CpuTarget::Summary(), for messages
  std::vector<std::string> headers;  // what it holds, in include order
  std::string data;                  // the serialized AST (clang's raw PCH format)
  double build_ms = 0;
};

// The file a PCH of `headers` is made from: one #include line per header.
// Compiles that load the PCH must see this same file (clang checks it).
std::string PchPrefixSource(const std::vector<std::string>& headers);

// Builds the PCH of `headers` (embedded runtime/native headers) for `target`
// in memory. INTERNAL with clang's diagnostics when clang fails.
absl::StatusOr<std::string> BuildNativePch(const CpuTarget& target, const std::vector<std::string>& headers);

class NativePchCache {
 public:
  // Makes a PCH's bytes; tests substitute one that fails or lies.
  using Builder = std::function<absl::StatusOr<std::string>(const CpuTarget&, const std::vector<std::string>&)>;

  explicit NativePchCache(Builder builder = BuildNativePch, size_t max_entries = 16);
  NativePchCache(const NativePchCache&) = delete;
  NativePchCache& operator=(const NativePchCache&) = delete;

  // The process's cache (never destroyed).
  static NativePchCache& Shared();

  // The embedded headers `source` includes before anything else, when the
  // first of them is builtin.h; empty otherwise. Only blank lines and //
  // comment lines may come before and between them; the list ends at the
  // first other line, and at any line a backslash splices to the next.
  static std::vector<std::string> LeadingHeaders(std::string_view source);

  // The PCH for `headers` (non-empty, starting with builtin.h) and
  // `target`, built on first use; past max_entries, the one of builtin.h
  // alone. Null when building failed, when the PCH was disabled, or when
  // none fits.
  std::shared_ptr<const NativePch> Get(const CpuTarget& target, const std::vector<std::string>& headers);
  // The PCH of builtin.h alone.
  std::shared_ptr<const NativePch> Get(const CpuTarget& target) { return Get(target, {kBaseHeader}); }

  // Stops using `pch` (a compile failed with it and succeeded without it);
  // logs `why`.
  void Disable(const NativePch& pch, std::string_view why);

  // PCHs built so far (for tests and diagnostics).
  size_t BuiltCount() const;

 private:
  using Key = std::pair<std::string, std::vector<std::string>>;  // target description, headers
  struct Entry {
    absl::once_flag once;  // the build
    // Both guarded by the cache's mu_.
    std::shared_ptr<const NativePch> pch;
    bool disabled = false;
  };

  // The entry for `key`, made if there is room; null otherwise.
  std::shared_ptr<Entry> FindOrAdd(const Key& key);

  const Builder builder_;
  const size_t max_entries_;
  mutable absl::Mutex mu_;
  std::map<Key, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  bool warned_full_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace warpd::compiler
