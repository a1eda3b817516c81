#include "server/persistent/array_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "compiler/ir/from_proto.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::server {
namespace {

constexpr char kMagic[8] = {'W', 'A', 'R', 'P', 'D', 'A', 'R', 'R'};
// magic, version, header length.
constexpr uint64_t kPreludeBytes = sizeof(kMagic) + 4 + 4;
// Data moves in slices this big, so each is hashed while still in cache.
constexpr size_t kChunkBytes = size_t{1} << 20;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutBytes(std::string& out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes.data(), bytes.size());
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// Reads the header's fields in order; every read is bounds-checked, and the
// first failure sticks (so a parse is a flat list of reads, checked once).
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : rest_(bytes) {}

  bool U32(uint32_t* v) {
    if (!Need(4)) return false;
    *v = GetU32(rest_.data());
    rest_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t* v) {
    if (!Need(8)) return false;
    *v = GetU64(rest_.data());
    rest_.remove_prefix(8);
    return true;
  }
  // A length-prefixed field of at most `max` bytes.
  bool Bytes(size_t max, std::string* out, const char* what) {
    uint32_t n = 0;
    if (!U32(&n)) return false;
    if (n > max) {
      error_ = absl::StrCat(what, " is ", n, " bytes long (at most ", max, " allowed)");
      return false;
    }
    if (!Need(n)) return false;
    out->assign(rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  bool at_end() const { return rest_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool Need(size_t n) {
    if (!error_.empty()) return false;
    if (rest_.size() < n) {
      error_ = "the header ends in the middle of a field";
      return false;
    }
    return true;
  }

  std::string_view rest_;
  std::string error_;
};

absl::Status WriteFull(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, std::min(size, kChunkBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("write", errno);
    if (n == 0) return absl::InternalError("write returned 0");
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// DATA_LOSS when the file ends first (it shrank under us).
absl::Status ReadFull(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("read", errno);
    if (n == 0) return absl::DataLossError("the file ends before its data does");
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

bool IsDeviceName(std::string_view s) {
  if (s.empty() || s.size() > kMaxDeviceBytes) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == ':' || c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

absl::Status WriteArrayFile(int fd, std::string_view tenant, std::string_view name,
                            const runtime::Array& array, runtime::Device& device) {
  if (tenant.size() > kMaxTenantBytes)
    return absl::InvalidArgumentError(absl::StrCat("tenant name is longer than ", kMaxTenantBytes, " bytes"));
  if (name.empty() || name.size() > kMaxEntryNameBytes)
    return absl::InvalidArgumentError(absl::StrCat("entry name must be 1 to ", kMaxEntryNameBytes, " bytes"));
  if (!IsDeviceName(array.device()))
    return absl::InvalidArgumentError(absl::StrCat("device name '", array.device(), "' cannot be stored"));
  std::string dtype;
  if (!ir::TypeToProto(array.dtype()).SerializeToString(&dtype) || dtype.size() > kMaxDtypeBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", array.dtype()->ToString(), " cannot be stored (its description is too large)"));
  }
  std::string header;
  PutBytes(header, tenant);
  PutBytes(header, name);
  PutBytes(header, array.device());
  PutBytes(header, dtype);
  PutU32(header, static_cast<uint32_t>(array.ndim()));
  for (int64_t extent : array.shape()) PutU64(header, static_cast<uint64_t>(extent));
  PutU64(header, array.size_bytes());
  if (header.size() > kMaxHeaderBytes)
    return absl::InvalidArgumentError("persistent array header is too large");

  std::string prelude(kMagic, sizeof(kMagic));
  PutU32(prelude, kArrayFileVersion);
  PutU32(prelude, static_cast<uint32_t>(header.size()));
  Sha256 hash;
  for (const std::string& part : {prelude, header}) {
    hash.Update(part);
    WARPD_RETURN_IF_ERROR(WriteFull(fd, part.data(), part.size()));
  }
  std::vector<std::byte> slice(std::min<uint64_t>(kChunkBytes, array.size_bytes()));
  for (uint64_t done = 0; done < array.size_bytes();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, array.size_bytes() - done));
    WARPD_RETURN_IF_ERROR(device.Download(array, done, absl::MakeSpan(slice.data(), n)));
    hash.Update(slice.data(), n);
    WARPD_RETURN_IF_ERROR(WriteFull(fd, slice.data(), n));
    done += n;
  }
  const Sha256::Digest digest = hash.Final();
  return WriteFull(fd, digest.data(), digest.size());
}

absl::StatusOr<ArrayFileReader> ArrayFileReader::Open(int fd, uint64_t file_size) {
  if (file_size < kPreludeBytes + Sha256::kSize)
    return absl::DataLossError(absl::StrCat("the file is too short (", file_size, " bytes) for a persistent array"));
  char prelude[kPreludeBytes];
  WARPD_RETURN_IF_ERROR(ReadFull(fd, prelude, sizeof prelude));
  if (std::memcmp(prelude, kMagic, sizeof kMagic) != 0)
    return absl::DataLossError("it is not a warpd persistent array file (wrong magic)");
  const uint32_t version = GetU32(prelude + sizeof kMagic);
  if (version != kArrayFileVersion) {
    return absl::DataLossError(absl::StrCat("it has format version ", version, "; this warpd reads version ",
                                            kArrayFileVersion));
  }
  const uint32_t header_bytes = GetU32(prelude + sizeof kMagic + 4);
  if (header_bytes > kMaxHeaderBytes || kPreludeBytes + header_bytes + Sha256::kSize > file_size) {
    return absl::DataLossError(absl::StrCat("its header length (", header_bytes,
                                            " bytes) does not fit the file (", file_size, " bytes)"));
  }
  std::string header(header_bytes, '\0');
  WARPD_RETURN_IF_ERROR(ReadFull(fd, header.data(), header.size()));

  ArrayFileReader reader;
  reader.fd_ = fd;
  reader.hash_ = std::make_unique<Sha256>();
  reader.hash_->Update(prelude, sizeof prelude);
  reader.hash_->Update(header);

  Cursor in(header);
  std::string dtype_bytes;
  uint32_t ndim = 0;
  const bool fields_ok = in.Bytes(kMaxTenantBytes, &reader.tenant_, "the tenant name") &&
                         in.Bytes(kMaxEntryNameBytes, &reader.name_, "the entry name") &&
                         in.Bytes(kMaxDeviceBytes, &reader.device_, "the device name") &&
                         in.Bytes(kMaxDtypeBytes, &dtype_bytes, "the dtype") && in.U32(&ndim);
  if (!fields_ok) return absl::DataLossError(absl::StrCat("bad header: ", in.error()));
  if (ndim < 1 || ndim > 4)
    return absl::DataLossError(absl::StrCat("bad header: ndim is ", ndim, " (1 to 4 allowed)"));
  std::vector<int64_t> shape(ndim);
  for (int64_t& extent : shape) {
    uint64_t v = 0;
    if (!in.U64(&v)) return absl::DataLossError(absl::StrCat("bad header: ", in.error()));
    extent = static_cast<int64_t>(v);  // MakeArrayLayout rejects negatives
  }
  uint64_t size_bytes = 0;
  if (!in.U64(&size_bytes)) return absl::DataLossError(absl::StrCat("bad header: ", in.error()));
  if (!in.at_end()) return absl::DataLossError("bad header: bytes after the last field");
  if (!IsDeviceName(reader.device_)) return absl::DataLossError("bad header: the device name is malformed");

  v1::TypeRef dtype_proto;
  if (!dtype_proto.ParseFromString(dtype_bytes))
    return absl::DataLossError("bad header: the dtype is not a warpd.v1.TypeRef");
  // Struct dtypes are interned in a table the array owns, as CreateArray does.
  auto table = std::make_shared<types::TypeTable>();
  absl::StatusOr<types::TypeRef> dtype = ir::TypeFromProto(dtype_proto, *table);
  if (!dtype.ok()) return absl::DataLossError(absl::StrCat("bad dtype: ", dtype.status().message()));
  if (!(*dtype)->contains_struct()) table.reset();
  absl::StatusOr<runtime::ArrayLayout> layout = runtime::MakeArrayLayout(*dtype, shape, std::move(table));
  if (!layout.ok()) return absl::DataLossError(absl::StrCat("bad layout: ", layout.status().message()));
  if (layout->size_bytes != size_bytes) {
    return absl::DataLossError(absl::StrCat("bad header: ", size_bytes, " data bytes recorded, but ",
                                            (*dtype)->ToString(), " of shape ", runtime::FormatShape(shape),
                                            " takes ", layout->size_bytes));
  }
  // Sizes only: the sum cannot overflow (header <= 2 MiB, size < 2^63).
  if (kPreludeBytes + header_bytes + size_bytes + Sha256::kSize != file_size) {
    return absl::DataLossError(absl::StrCat("the file is ", file_size, " bytes long, but its header describes ",
                                            kPreludeBytes + header_bytes + size_bytes + Sha256::kSize,
                                            " (truncated or extended)"));
  }
  reader.layout_ = *std::move(layout);
  return reader;
}

absl::Status ArrayFileReader::ReadData(const runtime::Array& array, runtime::Device& device) {
  const uint64_t size = layout_.size_bytes;
  if (array.size_bytes() != size) return absl::InternalError("the array to read into is not the file's size");
  std::vector<std::byte> slice(std::min<uint64_t>(kChunkBytes, size));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size - done));
    WARPD_RETURN_IF_ERROR(ReadFull(fd_, slice.data(), n));
    hash_->Update(slice.data(), n);
    WARPD_RETURN_IF_ERROR(device.Upload(array, done, absl::MakeConstSpan(slice.data(), n)));
    done += n;
  }
  Sha256::Digest stored;
  WARPD_RETURN_IF_ERROR(ReadFull(fd_, stored.data(), stored.size()));
  if (hash_->Final() != stored)
    return absl::DataLossError("its checksum does not match (the file was damaged or modified)");
  return absl::OkStatus();
}

}  // namespace warpd::server
