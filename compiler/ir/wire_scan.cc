#include "compiler/ir/wire_scan.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::ir {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Far above any module ModuleFromProto accepts, and bounded so the scan's
// recursion cannot exhaust the stack.
constexpr int kMaxWireNesting = 1000;

class Scanner {
 public:
  explicit Scanner(const Limits& limits)
      : limits_(limits), expr_(v1::Expr::descriptor()), stmt_(v1::Stmt::descriptor()) {}

  absl::Status Scan(const Descriptor* type, CodedInputStream* in, int wire_depth, int node_depth) {
    if (wire_depth > kMaxWireNesting) return absl::InvalidArgumentError("malformed module: nested too deeply");
    for (;;) {
      const uint32_t tag = in->ReadTag();
      if (tag == 0) return in->BytesUntilLimit() == 0 ? absl::OkStatus() : Malformed();
      const int number = WireFormatLite::GetTagFieldNumber(tag);
      switch (WireFormatLite::GetTagWireType(tag)) {
        case WireFormatLite::WIRETYPE_VARINT: {
          uint64_t v;
          if (!in->ReadVarint64(&v)) return Malformed();
          break;
        }
        case WireFormatLite::WIRETYPE_FIXED64:
          if (!in->Skip(8)) return Malformed();
          break;
        case WireFormatLite::WIRETYPE_FIXED32:
          if (!in->Skip(4)) return Malformed();
          break;
        case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
          uint32_t length;
          if (!in->ReadVarint32(&length) || static_cast<int64_t>(length) > in->BytesUntilLimit())
            return Malformed();
          const FieldDescriptor* field = type->FindFieldByNumber(number);
          if (field == nullptr || field->type() != FieldDescriptor::TYPE_MESSAGE) {
            if (!in->Skip(static_cast<int>(length))) return Malformed();
            break;
          }
          const Descriptor* sub = field->message_type();
          int sub_node_depth = node_depth;
          if (sub == expr_ || sub == stmt_) {
            if (++nodes_ > limits_.max_nodes) {
              return absl::InvalidArgumentError(
                  absl::StrCat("malformed module: module too large (more than ", limits_.max_nodes, " nodes)"));
            }
            // Statements and expressions nest in each other here; ModuleFromProto
            // checks its own, finer depth limit afterwards.
            if (++sub_node_depth > 2 * limits_.max_depth + 8) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "malformed module: expressions and statements nested deeper than ", 2 * limits_.max_depth + 8,
                  " levels"));
            }
          }
          const CodedInputStream::Limit limit = in->PushLimit(static_cast<int>(length));
          if (absl::Status s = Scan(sub, in, wire_depth + 1, sub_node_depth); !s.ok()) return s;
          in->PopLimit(limit);
          break;
        }
        default:  // groups are not used by warpd's protos
          return Malformed();
      }
    }
  }

 private:
  static absl::Status Malformed() { return absl::InvalidArgumentError("malformed request: not valid protobuf"); }

  const Limits& limits_;
  const Descriptor* const expr_;
  const Descriptor* const stmt_;
  int64_t nodes_ = 0;
};

}  // namespace

absl::Status ScanWireLimits(const Descriptor* type, std::string_view bytes, const Limits& limits) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return absl::InvalidArgumentError("request too large");
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  in.PushLimit(static_cast<int>(bytes.size()));
  return Scanner(limits).Scan(type, &in, 0, 0);
}

}  // namespace warpd::ir
