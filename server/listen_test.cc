#include "server/listen.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/grpc_status.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd::server {
namespace {

std::string TempPath(const std::string& name) {
  return "/tmp/warpd-listen-test-" + std::to_string(getpid()) + "-" + name;
}

int BindUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 1), 0);
  return fd;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(ListenTest, UnixSocketPath) {
  EXPECT_EQ(UnixSocketPath("unix:/tmp/a.sock"), "/tmp/a.sock");
  EXPECT_EQ(UnixSocketPath("unix:///tmp/a.sock"), "/tmp/a.sock");
  EXPECT_EQ(UnixSocketPath("127.0.0.1:7788"), "");
}

TEST(ListenTest, LiveSocketIsRefusedStaleOneIsRemoved) {
  const std::string path = TempPath("live.sock");
  unlink(path.c_str());
  EXPECT_TRUE(PrepareUnixSocket(path).ok());  // absent
  const int fd = BindUnix(path);
  absl::Status live = PrepareUnixSocket(path);
  EXPECT_EQ(live.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(live.message(), "another process is already serving on unix:" + path);
  EXPECT_TRUE(Exists(path));
  close(fd);  // the file stays behind: stale
  EXPECT_TRUE(PrepareUnixSocket(path).ok());
  EXPECT_FALSE(Exists(path));
}

TEST(ListenTest, RegularFileIsNotReplaced) {
  const std::string path = TempPath("file");
  std::ofstream(path) << "data";
  EXPECT_EQ(PrepareUnixSocket(path).code(), absl::StatusCode::kFailedPrecondition);
  RemoveUnixSocket(path);  // not a socket: left alone
  EXPECT_TRUE(Exists(path));
  unlink(path.c_str());
}

TEST(ListenTest, TooLongPath) {
  EXPECT_EQ(PrepareUnixSocket("/tmp/" + std::string(200, 'x')).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GrpcStatusTest, CodesAndMessagesCarryOver) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  grpc::Status s = ToGrpcStatus(absl::OutOfRangeError("kernel 'k' at f.py:3: index 4"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "kernel 'k' at f.py:3: index 4");
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("x")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcStatus(absl::PermissionDeniedError("x")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Long messages are cut (they travel in a header), never mid-character.
  std::string long_msg = "file.py:1: error: " + std::string(10000, 'x') + "\xc3\xa9";
  grpc::Status cut = ToGrpcStatus(absl::InvalidArgumentError(long_msg));
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(cut.error_message().size(), kMaxStatusMessageBytes + 100);
  EXPECT_EQ(cut.error_message().substr(0, 18), "file.py:1: error: ");
  EXPECT_NE(cut.error_message().find("more bytes of this message were cut"), std::string::npos);
  std::string accent = std::string(kMaxStatusMessageBytes - 1, 'a') + "\xc3\xa9" + std::string(10, 'b');
  std::string kept = ToGrpcStatus(absl::InternalError(accent)).error_message();
  EXPECT_EQ(kept.substr(0, kMaxStatusMessageBytes), std::string(kMaxStatusMessageBytes - 1, 'a') + "\n");
  // Every code maps to the gRPC code of the same number.
  for (int c = 1; c <= 16; ++c) {
    EXPECT_EQ(static_cast<int>(ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(c), "m"))
                                   .error_code()),
              c);
  }
}

TEST(GrpcStatusTest, TypedPayloadsBecomeErrorDetails) {
  absl::Status st = absl::InvalidArgumentError("k.py:1:1: error: x");
  v1::CompileFailures failures;
  failures.add_failed()->set_text("x");
  st.SetPayload("type.googleapis.com/warpd.v1.CompileFailures", absl::Cord(absl::string_view(failures.SerializeAsString())));
  st.SetPayload("warpd/ir/error-text", absl::Cord("stays in the daemon"));
  grpc::Status g = ToGrpcStatus(st);
  EXPECT_EQ(g.error_message(), "k.py:1:1: error: x");
  v1::StatusDetails details;
  ASSERT_TRUE(details.ParseFromString(g.error_details()));
  EXPECT_EQ(details.code(), 3);
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/warpd.v1.CompileFailures");
  v1::CompileFailures back;
  ASSERT_TRUE(back.ParseFromString(details.details(0).value()));
  EXPECT_EQ(back.failed(0).text(), "x");
  // Without typed payloads there are no details; too large ones are left out.
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("y")).error_details(), "");
  absl::Status big = absl::InvalidArgumentError("z");
  big.SetPayload("type.googleapis.com/warpd.v1.CompileFailures", absl::Cord(absl::string_view(std::string(kMaxStatusDetailsBytes, 'q'))));
  EXPECT_EQ(ToGrpcStatus(big).error_details(), "");
}

}  // namespace
}  // namespace warpd::server
