#include "compiler/backend/native_pch.h"

#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Serialization/ASTWriter.h>
#include <clang/Serialization/PCHContainerOperations.h>
#include <llvm/Support/MemoryBuffer.h>

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "compiler/backend/clang_frontend.h"
#include "spdlog/spdlog.h"
#include "warpd/embedded_headers.h"

namespace warpd::compiler {
namespace {

// clang's GeneratePCHAction writes the PCH to a file (through a temporary
// one). This one keeps it in memory: the PCHGenerator serializes the AST
// into `buffer` at the end of the translation unit, and nothing else is
// attached (the raw container format is the serialized AST itself).
class InMemoryPchAction : public clang::GeneratePCHAction {
 public:
  explicit InMemoryPchAction(std::shared_ptr<clang::PCHBuffer> buffer) : buffer_(std::move(buffer)) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    std::string sysroot;
    if (!ComputeASTConsumerArguments(ci, sysroot)) return nullptr;
    // No sysroot and no timestamps: the PCH depends on the headers' bytes only.
    return std::make_unique<clang::PCHGenerator>(
        ci.getPreprocessor(), ci.getModuleCache(), ci.getFrontendOpts().OutputFile, /*isysroot=*/"", buffer_,
        llvm::ArrayRef<std::shared_ptr<clang::ModuleFileExtension>>(), /*AllowASTWithErrors=*/false,
        /*IncludeTimestamps=*/false);
  }

 private:
  std::shared_ptr<clang::PCHBuffer> buffer_;
};

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string PchPrefixSource(const std::vector<std::string>& headers) {
  std::string text;
  for (const std::string& h : headers) absl::StrAppend(&text, "#include \"", h, "\"\n");
  return text;
}

absl::StatusOr<std::string> BuildNativePch(const CpuTarget& target, const std::vector<std::string>& headers) {
  auto fs = internal::NativeHeaderFileSystem();
  const std::string prefix_path = absl::StrCat(internal::kPchRoot, "/prefix.h");
  fs->addFile(prefix_path, 0, llvm::MemoryBuffer::getMemBufferCopy(PchPrefixSource(headers), prefix_path));
  std::vector<std::string> args = internal::Cc1BaseArgs(target);
  args.insert(args.end(), {"-emit-pch", "-x", "c++-header", "-o", absl::StrCat(internal::kPchRoot, "/native.pch"),
                           prefix_path});
  auto buffer = std::make_shared<clang::PCHBuffer>();
  buffer->IsComplete = false;
  InMemoryPchAction action(buffer);
  std::string diagnostics;
  const bool ok = internal::RunClang(args, fs, action, nullptr, &diagnostics);
  if (!ok || !buffer->IsComplete || buffer->Data.empty()) {
    return absl::InternalError(absl::StrCat("precompiling ", absl::StrJoin(headers, ", "), " for ", target.Summary(),
                                            " failed:\n", absl::StripTrailingAsciiWhitespace(diagnostics)));
  }
  return std::string(buffer->Data.data(), buffer->Data.size());
}

NativePchCache::NativePchCache(Builder builder, size_t max_entries)
    : builder_(std::move(builder)), max_entries_(max_entries) {}

NativePchCache& NativePchCache::Shared() {
  static NativePchCache* const cache = new NativePchCache();
  return *cache;
}

std::vector<std::string> NativePchCache::LeadingHeaders(std::string_view source) {
  std::vector<std::string> headers;
  while (!source.empty()) {
    const size_t eol = source.find('\n');
    const std::string_view raw = source.substr(0, eol);
    source = eol == std::string_view::npos ? std::string_view() : source.substr(eol + 1);
    const absl::string_view line = absl::StripAsciiWhitespace(absl::string_view(raw.data(), raw.size()));
    // A backslash at the end splices the next line into this one (even into
    // a // comment): what follows is not what it seems, so stop here.
    if (absl::EndsWith(line, "\\")) break;
    if (line.empty() || absl::StartsWith(line, "//")) continue;
    absl::string_view path = line;
    if (!absl::ConsumePrefix(&path, "#include \"") || !absl::ConsumeSuffix(&path, "\"")) break;
    bool embedded = false;
    for (const auto& h : native::EmbeddedHeaders()) embedded |= path == h.path;
    if (!embedded || (headers.empty() && path != kBaseHeader)) break;
    headers.emplace_back(path);
  }
  return headers;
}

std::shared_ptr<NativePchCache::Entry> NativePchCache::FindOrAdd(const Key& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second;
  if (entries_.size() >= max_entries_) {
    if (!warned_full_) {
      warned_full_ = true;
      spdlog::info("precompiled headers: {} kept; further include lists use builtin.h's alone", max_entries_);
    }
    return nullptr;
  }
  auto entry = std::make_shared<Entry>();
  entries_.emplace(key, entry);
  return entry;
}

std::shared_ptr<const NativePch> NativePchCache::Get(const CpuTarget& target,
                                                     const std::vector<std::string>& headers) {
  if (headers.empty() || headers.front() != kBaseHeader) return nullptr;
  const Key key{target.Description(), headers};
  std::shared_ptr<Entry> entry = FindOrAdd(key);
  if (entry == nullptr) return headers.size() > 1 ? Get(target) : nullptr;
  absl::call_once(entry->once, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> data = builder_(target, headers);
    if (!data.ok()) {
      spdlog::warn("precompiled header: none for {}; those compiles parse the headers (slower). {}",
                   target.Summary(), std::string(data.status().message()));
      return;
    }
    auto pch = std::make_shared<NativePch>();
    pch->target = key.first;
    pch->target_summary = target.Summary();
    pch->headers = headers;
    pch->data = *std::move(data);
    pch->build_ms = MsSince(t0);
    spdlog::debug("precompiled header: {} for {} in {:.1f} ms ({} KiB)", absl::StrJoin(headers, ", "),
                  target.Summary(), pch->build_ms, pch->data.size() / 1024);
    absl::MutexLock lock(&mu_);
    entry->pch = std::move(pch);
  });
  absl::MutexLock lock(&mu_);
  return entry->disabled ? nullptr : entry->pch;
}

void NativePchCache::Disable(const NativePch& pch, std::string_view why) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key{pch.target, pch.headers});
  if (it == entries_.end() || it->second->disabled) return;
  it->second->disabled = true;
  spdlog::warn("precompiled header: {} no longer used for {}: {}", absl::StrJoin(pch.headers, ", "),
               pch.target_summary, std::string(why));
}

size_t NativePchCache::BuiltCount() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [key, entry] : entries_) n += entry->pch != nullptr;
  return n;
}

}  // namespace warpd::compiler
