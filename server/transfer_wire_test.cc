#include "server/transfer_wire.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {
namespace {

absl::Span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// `bytes` cut at `cuts` (ascending offsets) into pieces, some of them empty.
std::vector<absl::Span<const uint8_t>> Cut(std::string_view bytes, const std::vector<size_t>& cuts) {
  std::vector<absl::Span<const uint8_t>> pieces;
  size_t from = 0;
  for (size_t c : cuts) {
    pieces.push_back(Bytes(bytes.substr(from, c - from)));
    from = c;
  }
  pieces.push_back(Bytes(bytes.substr(from)));
  return pieces;
}

std::string Joined(const UploadChunkFields& f) {
  std::string out;
  for (absl::Span<const uint8_t> s : f.data) out.append(reinterpret_cast<const char*>(s.data()), s.size());
  return out;
}

absl::Status Parse(std::string_view bytes, UploadChunkFields* out) {
  std::vector<absl::Span<const uint8_t>> one{Bytes(bytes)};
  return ParseUploadChunk(one, out);
}

std::string Serialized(const std::string& session, uint64_t handle, uint64_t offset, const std::string& data) {
  v1::UploadChunk c;
  c.set_session(session);
  c.set_handle(handle);
  c.set_offset(offset);
  c.set_data(data);
  return c.SerializeAsString();
}

TEST(TransferWireTest, ReadsWhatProtobufWritesCutAnywhere) {
  std::string data(300, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  const std::vector<std::string> messages = {
      Serialized("s-123", 42, 1000, data),
      Serialized("", 0, 0, "x"),
      Serialized("", 0, 0, ""),  // empty message
      Serialized("abc", UINT64_MAX, UINT64_MAX - 1, data.substr(0, 127)),
  };
  for (const std::string& m : messages) {
    v1::UploadChunk want;
    ASSERT_TRUE(want.ParseFromString(m));
    for (size_t a = 0; a <= m.size(); ++a) {
      for (size_t b = a; b <= m.size(); b += 13) {
        UploadChunkFields got;
        ASSERT_TRUE(ParseUploadChunk(Cut(m, {a, b}), &got).ok()) << a << " " << b;
        EXPECT_EQ(got.session, want.session());
        EXPECT_EQ(got.handle, want.handle());
        EXPECT_EQ(got.offset, want.offset());
        EXPECT_EQ(Joined(got), want.data());
        EXPECT_EQ(got.data_size, want.data().size());
      }
    }
  }
}

TEST(TransferWireTest, FieldsInAnyOrder) {
  // data, offset, session: protobuf accepts any order, and so does the reader.
  const std::string m = std::string("\x22\x02hi\x18\x05\x0a\x01s", 9);
  UploadChunkFields got;
  ASSERT_TRUE(Parse(m, &got).ok());
  EXPECT_EQ(Joined(got), "hi");
  EXPECT_EQ(got.offset, 5u);
  EXPECT_EQ(got.session, "s");
}

TEST(TransferWireTest, RejectsHostileBytes) {
  struct Case {
    const char* name;
    std::string bytes;
    const char* why;
  };
  const std::string over64 = std::string("\x10", 1) + std::string(9, '\xff') + "\x02";
  const std::vector<Case> cases = {
      {"truncated tag", "\x80", "a field tag is cut off"},
      {"truncated varint", "\x10\xff\xff", "field handle is cut off"},
      {"varint over 64 bits", over64, "over 64 bits"},
      {"11-byte varint", std::string("\x18", 1) + std::string(10, '\x80') + std::string(1, '\0'), "over 64 bits"},
      {"data longer than the message", "\x22\x05" "abc", "claims 5 bytes but the message has 3 left"},
      {"huge data length", "\x22\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01" "a", "claims 18446744073709551615"},
      {"truncated length", "\x22", "the length of field data is cut off"},
      {"session past the end", "\x0a\x09" "s", "claims 9 bytes"},
      {"field 0", std::string("\x00\x01", 2), "unknown field number 0"},
      {"unknown field", "\x28\x01", "unknown field number 5"},
      {"unknown delimited field", "\x2a\x00", "unknown field number 5"},
      {"huge field number", "\xf8\xff\xff\xff\x0f\x01", "unknown field number"},
      {"repeated data", "\x22\x01" "a" "\x22\x01" "b", "field data appears twice"},
      {"repeated handle", "\x10\x01\x10\x02", "field handle appears twice"},
      {"handle as bytes", "\x12\x01" "a", "field handle has wire type 2, not 0"},
      {"data as varint", "\x20\x01", "field data has wire type 0, not 2"},
      {"group", "\x0b", "field session has wire type 3, not 2"},
      {"fixed64 offset", "\x19" "12345678", "field offset has wire type 1, not 0"},
  };
  for (const Case& c : cases) {
    UploadChunkFields got;
    absl::Status s = Parse(c.bytes, &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.why), std::string_view::npos) << c.name << ": " << s.message();
    EXPECT_NE(s.message().find("warpd.v1.UploadChunk"), std::string_view::npos) << c.name;
    // The same bytes cut in two fail the same way.
    for (size_t cut = 0; cut <= c.bytes.size(); ++cut) {
      EXPECT_EQ(ParseUploadChunk(Cut(c.bytes, {cut}), &got), s) << c.name << " cut at " << cut;
    }
  }
}

TEST(TransferWireTest, LargestVarintIsAccepted) {
  const std::string m = std::string("\x10", 1) + std::string(9, '\xff') + "\x01";
  UploadChunkFields got;
  ASSERT_TRUE(Parse(m, &got).ok());
  EXPECT_EQ(got.handle, UINT64_MAX);
}

TEST(TransferWireTest, DownloadChunkParsesAsProtobuf) {
  std::string data(200, 'd');
  for (size_t n : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{200}}) {
    for (std::string output : {std::string(), std::string("hello\n"), std::string(300, 'o')}) {
      std::string wire(DownloadChunkSize(n, output), '\xee');
      WriteDownloadChunk(reinterpret_cast<const uint8_t*>(data.data()), n, output,
                         reinterpret_cast<uint8_t*>(wire.data()));
      v1::DownloadChunk want;
      want.set_data(data.substr(0, n));
      want.set_output(output);
      EXPECT_EQ(wire, want.SerializeAsString()) << n << " " << output.size();
      // The same message with the data written where the frame says.
      std::string framed(DownloadChunkSize(n, output), '\xee');
      uint8_t* at = WriteDownloadChunkFrame(n, output, reinterpret_cast<uint8_t*>(framed.data()));
      ASSERT_LE(at + n, reinterpret_cast<uint8_t*>(framed.data()) + framed.size());
      if (n != 0) std::memcpy(at, data.data(), n);
      EXPECT_EQ(framed, wire) << n << " " << output.size();
    }
  }
}

}  // namespace
}  // namespace warpd::server
