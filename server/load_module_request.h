// warpd server: reading a LoadModule request within bounded memory.
//
// A LoadModule request may be tens of MB of hostile IR. Reading it:
//   1. the serialized bytes are scanned against the IR limits without
//      parsing (ir::ScanWireLimits: node count, nesting, well-formedness),
//      so an oversized module costs time in proportion to what was read up
//      to the limit and no objects at all;
//   2. only then is it parsed, into a protobuf arena of its own whose blocks
//      are mapped directly from the system, so all of it goes back to the
//      system when the request is done (not to a fragmented heap);
//   3. the session is checked, and the IR converted (ir::ModuleFromProto);
//      the arena is gone before the compile starts;
//   4. after a large request, freed heap memory (gRPC's receive buffers) is
//      handed back to the system (malloc_trim), so RSS returns to baseline.
// Errors: INVALID_ARGUMENT (malformed, over a limit), or what `check_session`
// returns. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "grpcpp/support/byte_buffer.h"

namespace warpd::server {

struct LoadModuleInput {
  std::string session;
  std::vector<std::string> devices;
  std::unique_ptr<ir::Module> module;
};

absl::StatusOr<LoadModuleInput> ReadLoadModuleRequest(
    const grpc::ByteBuffer& buffer, const std::function<absl::Status(const std::string& session)>& check_session);

}  // namespace warpd::server
