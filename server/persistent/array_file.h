// warpd server: the file of one durable persistent array (format in
// docs/state_dir.md).
//
// A file holds, in order: magic and format version, the header length, a
// length-prefixed header (tenant, entry name, device, dtype as a serialized
// warpd.v1.TypeRef, shape, byte size), the array's bytes, and a SHA-256 of
// everything before it. Integers are little-endian.
//
//   WARPD_RETURN_IF_ERROR(WriteArrayFile(fd, tenant, name, *array, device));
//   ...
//   WARPD_ASSIGN_OR_RETURN(ArrayFileReader reader, ArrayFileReader::Open(fd, st.st_size));
//   ... make an array of reader.layout() on reader.device() ...
//   WARPD_RETURN_IF_ERROR(reader.ReadData(*array, device));
//
// The array's bytes move through its Device (Download, Upload; device.h) in
// 1 MiB slices staged in host memory, each hashed while still in cache.
//
// A file is read with the same care as client input: every length is
// bounded and checked against the file's size before anything is allocated,
// the dtype goes through ir::TypeFromProto (limits, a fresh TypeTable for
// struct dtypes) and the layout through runtime::MakeArrayLayout, and the
// data is accepted only when the checksum matches. Anything wrong is
// DATA_LOSS saying what; nothing here aborts on bad input.
//
// This file knows bytes and fds only: paths, permissions, atomic renames and
// which names are allowed belong to PersistentStore.
// Thread-safety: the functions are; an ArrayFileReader is one read in
// progress (one thread at a time). It does not own the fd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/device.h"
#include "runtime/objects/array.h"
#include "common/sha256.h"

namespace warpd::server {

// Bounds of the header fields, checked when writing and when reading.
inline constexpr size_t kMaxTenantBytes = 1024;
inline constexpr size_t kMaxEntryNameBytes = 128;
inline constexpr size_t kMaxDeviceBytes = 64;
inline constexpr size_t kMaxDtypeBytes = size_t{1} << 20;
inline constexpr uint32_t kMaxHeaderBytes = uint32_t{2} << 20;
inline constexpr uint32_t kArrayFileVersion = 1;

// Writes the whole file for `array`, named `name` of `tenant`, to `fd` from
// its current position. The array's bytes are downloaded from `device` (the
// array's) as they are: the caller has synchronized its stream.
// INVALID_ARGUMENT when a field is out of bounds (nothing written); write
// errors through PosixError (ENOSPC is RESOURCE_EXHAUSTED), and the device's
// errors, leaving a partial file the caller discards.
absl::Status WriteArrayFile(int fd, std::string_view tenant, std::string_view name,
                            const runtime::Array& array, runtime::Device& device);

class ArrayFileReader {
 public:
  // Reads and checks the header of the file open as `fd` (positioned at 0,
  // `file_size` bytes long): DATA_LOSS naming what is wrong.
  static absl::StatusOr<ArrayFileReader> Open(int fd, uint64_t file_size);

  ArrayFileReader(ArrayFileReader&&) = default;
  ArrayFileReader& operator=(ArrayFileReader&&) = default;

  const std::string& tenant() const { return tenant_; }
  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  // Checked by MakeArrayLayout; owns its dtype's table when it is a struct.
  const runtime::ArrayLayout& layout() const { return layout_; }

  // Reads the layout().size_bytes bytes of data, uploads them into `array`
  // (made with layout(): INTERNAL when its size differs) on `device` (the
  // array's), and checks the checksum: DATA_LOSS when the file is short or
  // the checksum differs (then the array holds garbage), or the device's
  // errors. Call once.
  absl::Status ReadData(const runtime::Array& array, runtime::Device& device);

 private:
  ArrayFileReader() = default;

  int fd_ = -1;
  std::unique_ptr<Sha256> hash_;  // over every byte read so far
  std::string tenant_, name_, device_;
  runtime::ArrayLayout layout_;
};

}  // namespace warpd::server
