#include "server/transfer_wire.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace warpd::server {

namespace {

// Protobuf wire types, and the UploadChunk / DownloadChunk field numbers of
// proto/warpd/v1/runtime.proto.
constexpr uint64_t kWireVarint = 0;
constexpr uint64_t kWireLength = 2;
constexpr uint64_t kSessionField = 1;
constexpr uint64_t kHandleField = 2;
constexpr uint64_t kOffsetField = 3;
constexpr uint64_t kDataField = 4;
constexpr uint8_t kDownloadDataTag = (1 << 3) | kWireLength;
constexpr uint8_t kDownloadOutputTag = (2 << 3) | kWireLength;

absl::Status Invalid(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("Upload: the request is not a valid warpd.v1.UploadChunk (", why, ")"));
}

// Reads the concatenation of the pieces front to back.
class PieceReader {
 public:
  explicit PieceReader(BytePieces pieces) : pieces_(pieces) {
    for (absl::Span<const uint8_t> p : pieces_) remaining_ += p.size();
    SkipEmpty();
  }

  uint64_t remaining() const { return remaining_; }

  // A base-128 varint of at most 10 bytes whose value fits in 64 bits.
  absl::Status Varint(uint64_t* value, absl::string_view what) {
    uint64_t result = 0;
    for (int shift = 0;; shift += 7) {
      if (remaining_ == 0) return Invalid(absl::StrCat(what, " is cut off by the end of the message"));
      const uint8_t b = pieces_[piece_][pos_];
      Advance(1);
      // The 10th byte holds bit 63 only, and ends the varint.
      if (shift == 63 && b > 1) return Invalid(absl::StrCat(what, " is a varint over 64 bits"));
      result |= uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) break;
    }
    *value = result;
    return absl::OkStatus();
  }

  // The next `n` bytes (n <= remaining()) as spans into the pieces.
  void Take(uint64_t n, std::vector<absl::Span<const uint8_t>>* out) {
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, pieces_[piece_].size() - pos_));
      out->push_back(pieces_[piece_].subspan(pos_, k));
      Advance(k);
      n -= k;
    }
  }

  // The next `n` bytes (n <= remaining()) appended to `out`.
  void Copy(uint64_t n, std::string* out) {
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, pieces_[piece_].size() - pos_));
      out->append(reinterpret_cast<const char*>(pieces_[piece_].data() + pos_), k);
      Advance(k);
      n -= k;
    }
  }

 private:
  // Moves `k` bytes on within the current piece (k <= what it has left).
  void Advance(size_t k) {
    pos_ += k;
    remaining_ -= k;
    if (pos_ == pieces_[piece_].size()) {
      ++piece_;
      pos_ = 0;
      SkipEmpty();
    }
  }

  void SkipEmpty() {
    while (piece_ < pieces_.size() && pieces_[piece_].empty()) ++piece_;
  }

  BytePieces pieces_;
  size_t piece_ = 0;
  size_t pos_ = 0;
  uint64_t remaining_ = 0;
};

const char* FieldName(uint64_t field) {
  switch (field) {
    case kSessionField: return "session";
    case kHandleField: return "handle";
    case kOffsetField: return "offset";
    default: return "data";
  }
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

uint8_t* PutVarint(uint64_t v, uint8_t* p) {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<uint8_t>(v | 0x80);
  *p++ = static_cast<uint8_t>(v);
  return p;
}

uint8_t* PutLengthDelimited(uint8_t tag, const void* bytes, size_t size, uint8_t* p) {
  *p++ = tag;
  p = PutVarint(size, p);
  std::memcpy(p, bytes, size);
  return p + size;
}

}  // namespace

absl::Status ParseUploadChunk(BytePieces pieces, UploadChunkFields* out) {
  out->session.clear();
  out->handle = 0;
  out->offset = 0;
  out->data.clear();
  out->data_size = 0;
  PieceReader in(pieces);
  uint32_t seen = 0;  // bit f: field f was read
  while (in.remaining() > 0) {
    uint64_t tag = 0;
    WARPD_RETURN_IF_ERROR(in.Varint(&tag, "a field tag"));
    const uint64_t field = tag >> 3;
    const uint64_t wire_type = tag & 7;
    if (field < kSessionField || field > kDataField) return Invalid(absl::StrCat("unknown field number ", field));
    const char* name = FieldName(field);
    if (seen & (1u << field)) return Invalid(absl::StrCat("field ", name, " appears twice"));
    seen |= 1u << field;
    const bool delimited = field == kSessionField || field == kDataField;
    const uint64_t expected = delimited ? kWireLength : kWireVarint;
    if (wire_type != expected) {
      return Invalid(absl::StrCat("field ", name, " has wire type ", wire_type, ", not ", expected));
    }
    if (!delimited) {
      WARPD_RETURN_IF_ERROR(
          in.Varint(field == kHandleField ? &out->handle : &out->offset, absl::StrCat("field ", name)));
      continue;
    }
    uint64_t length = 0;
    WARPD_RETURN_IF_ERROR(in.Varint(&length, absl::StrCat("the length of field ", name)));
    if (length > in.remaining()) {
      return Invalid(absl::StrCat("field ", name, " claims ", length, " bytes but the message has ",
                                  in.remaining(), " left"));
    }
    if (field == kSessionField) {
      in.Copy(length, &out->session);
    } else {
      in.Take(length, &out->data);
      out->data_size = length;
    }
  }
  return absl::OkStatus();
}

size_t DownloadChunkSize(size_t data_size, std::string_view output) {
  size_t size = 0;
  if (data_size != 0) size += 1 + VarintSize(data_size) + data_size;
  if (!output.empty()) size += 1 + VarintSize(output.size()) + output.size();
  return size;
}

void WriteDownloadChunk(const uint8_t* data, size_t data_size, std::string_view output, uint8_t* dst) {
  if (data_size != 0) dst = PutLengthDelimited(kDownloadDataTag, data, data_size, dst);
  if (!output.empty()) PutLengthDelimited(kDownloadOutputTag, output.data(), output.size(), dst);
}

uint8_t* WriteDownloadChunkFrame(size_t data_size, std::string_view output, uint8_t* dst) {
  uint8_t* data = dst;
  if (data_size != 0) {
    *dst++ = kDownloadDataTag;
    dst = PutVarint(data_size, dst);
    data = dst;
    dst += data_size;
  }
  if (!output.empty()) PutLengthDelimited(kDownloadOutputTag, output.data(), output.size(), dst);
  return data;
}

}  // namespace warpd::server
