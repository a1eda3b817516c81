#include "server/load_module_request.h"

#include <sys/mman.h>

#include <new>

#include "absl/strings/str_cat.h"
#include "compiler/ir/from_proto.h"
#include "compiler/ir/wire_scan.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "server/raw_messages.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {
namespace {

// Far above any IR that ModuleFromProto accepts (its own depth limit names
// the user's line), yet bounded so parsing cannot exhaust the stack.
constexpr int kMaxProtoNesting = 1000;

void* MapBlock(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void UnmapBlock(void* p, size_t n) { munmap(p, n); }

absl::StatusOr<LoadModuleInput> Read(const std::string& bytes,
                                     const std::function<absl::Status(const std::string&)>& check_session) {
  const ir::Limits limits;
  if (absl::Status s = ir::ScanWireLimits(v1::LoadModuleRequest::descriptor(), bytes, limits); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("LoadModule: ", s.message()));

  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 4 << 20;
  options.block_alloc = &MapBlock;
  options.block_dealloc = &UnmapBlock;
  google::protobuf::Arena arena(options);
  auto* request = google::protobuf::Arena::CreateMessage<v1::LoadModuleRequest>(&arena);
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kMaxProtoNesting);
  if (!request->ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadModule: the request is not a valid warpd.v1.LoadModuleRequest (malformed, invalid UTF-8 in a "
        "string, or nested deeper than ", kMaxProtoNesting, " levels)"));
  }
  if (absl::Status s = check_session(request->session()); !s.ok()) return s;
  LoadModuleInput out;
  out.session = request->session();
  out.devices.assign(request->devices().begin(), request->devices().end());
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ModuleFromProto(request->module(), limits);
  if (!module.ok()) return module.status();
  out.module = *std::move(module);
  return out;
}

}  // namespace

absl::StatusOr<LoadModuleInput> ReadLoadModuleRequest(
    const grpc::ByteBuffer& buffer, const std::function<absl::Status(const std::string& session)>& check_session) {
  absl::StatusOr<LoadModuleInput> result;
  {
    const std::string bytes = ByteBufferToString(buffer);
    if (bytes.size() != buffer.Length()) return absl::InvalidArgumentError("LoadModule: unreadable request");
    result = Read(bytes, check_session);
  }
  TrimAfterLargeRequest(buffer.Length());
  return result;
}

}  // namespace warpd::server
