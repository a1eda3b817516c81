// warpd compiler: limits checked on the wire, before a request is parsed.
//
// Parsing a hostile LoadModule of tens of MB into protobuf objects costs many
// times its size in memory before ModuleFromProto can count its nodes. So the
// server first walks the serialized bytes (no allocation: a descriptor-driven
// scan of tags and lengths) and rejects a request whose IR has more nodes
// (Expr + Stmt messages) than the limit, nests them deeper than the limit,
// or is not well-formed protobuf; the cost is proportional to the bytes read
// up to the limit. Thread-safe (pure function).
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "compiler/ir/from_proto.h"
#include "google/protobuf/descriptor.h"

namespace warpd::ir {

// `bytes` is a serialized message of type `type` (e.g. LoadModuleRequest)
// that holds IR somewhere inside. INVALID_ARGUMENT naming the limit passed.
absl::Status ScanWireLimits(const google::protobuf::Descriptor* type, std::string_view bytes, const Limits& limits);

}  // namespace warpd::ir
