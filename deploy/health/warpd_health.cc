// warpd-health: asks a warpd daemon's grpc.health.v1.Health/Check whether it
// serves, for container health checks and Kubernetes exec probes.
//
//   warpd-health [ADDRESS] [--timeout SECONDS]
//
// ADDRESS defaults to unix:/run/warpd/warpd.sock. The channel is plaintext,
// so ADDRESS is the daemon's Unix socket (or a loopback TCP listener of a
// daemon without TLS): the daemon's TCP listeners beyond loopback always use
// TLS, and Kubernetes' native grpc: probe speaks no TLS (deploy/README.md).
// The health service needs no token. Exit status: 0 when the daemon answers
// SERVING, 1 when it answers anything else, 2 when it cannot be reached in
// time or the arguments are wrong.
//
// No generated code: the request is the empty HealthCheckRequest (service ""
// = the whole server), and the answer's one field (1, varint) is read by hand.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace {

constexpr const char* kStatusNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};

bool ReadVarint(const std::string& b, size_t* i, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *i < b.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(b[(*i)++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// HealthCheckResponse.status (field 1), skipping any other field; -1 when the
// message does not parse.
int64_t ParseStatus(const std::string& b) {
  int64_t status = 0;  // proto3 default: UNKNOWN
  size_t i = 0;
  while (i < b.size()) {
    uint64_t key = 0, v = 0;
    if (!ReadVarint(b, &i, &key)) return -1;
    switch (key & 7) {
      case 0:
        if (!ReadVarint(b, &i, &v)) return -1;
        if ((key >> 3) == 1) status = static_cast<int64_t>(v & 0x7fffffff);
        break;
      case 1: if (b.size() - i < 8) return -1; i += 8; break;
      case 5: if (b.size() - i < 4) return -1; i += 4; break;
      case 2:
        if (!ReadVarint(b, &i, &v) || v > b.size() - i) return -1;
        i += v;
        break;
      default: return -1;
    }
  }
  return status;
}

int Usage() {
  std::fprintf(stderr, "usage: warpd-health [ADDRESS] [--timeout SECONDS]\n"
                       "  ADDRESS: unix:/path or HOST:PORT without TLS (default unix:/run/warpd/warpd.sock)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target = "unix:/run/warpd/warpd.sock";
  double timeout_s = 3;
  bool have_target = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--timeout" && i + 1 < argc) {
      char* end = nullptr;
      timeout_s = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(timeout_s > 0) || timeout_s > 3600) return Usage();
    } else if (!a.empty() && a[0] != '-' && !have_target) {
      target = a;
      have_target = true;
    } else {
      return Usage();
    }
  }

  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  grpc::CompletionQueue cq;
  grpc::ByteBuffer request(nullptr, 0);  // empty HealthCheckRequest
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  if (!cq.Next(&tag, &ok) || !ok) {
    std::fprintf(stderr, "warpd-health: %s: the call did not complete\n", target.c_str());
    return 2;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "warpd-health: %s: %s (gRPC status %d)\n", target.c_str(),
                 status.error_message().c_str(), static_cast<int>(status.error_code()));
    return status.error_code() == grpc::StatusCode::NOT_FOUND ? 1 : 2;
  }
  grpc::Slice slice;
  std::string bytes;
  if (response.Length() > 0) {
    if (!response.DumpToSingleSlice(&slice).ok()) return 2;
    bytes.assign(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  const int64_t serving = ParseStatus(bytes);
  if (serving < 0) {
    std::fprintf(stderr, "warpd-health: %s: the answer does not parse\n", target.c_str());
    return 2;
  }
  const char* name = serving < 4 ? kStatusNames[serving] : "(unknown value)";
  std::printf("%s: %s\n", target.c_str(), name);
  return serving == 1 ? 0 : 1;
}
