// warpd server: the command socket: a local client's fast path for launches
// and synchronize, without gRPC's framing and thread hops.
//
// Beside each gRPC Unix socket the daemon listens on "<grpc socket>.cmd". A
// client on the same host connects once and keeps the connection for its
// session. Frames go both ways, each an 8-byte header (little-endian uint32
// body length, one kind byte, three zero bytes) followed by the body:
//   client   HELLO (1)        the first frame, within 2 s; the body is the
//                             handler's (local_commands.h: the tokens)
//            SUBMIT (2)       a serialized warpd.v1.SubmitRequest
//            SYNCHRONIZE (3)  a serialized warpd.v1.SynchronizeRequest
//            DOWNLOAD (4)     a serialized warpd.v1.DownloadRequest
//            CREATE_VIEW (5)  a serialized warpd.v1.CreateViewRequest
//   daemon   one reply per frame, in order: kind 0 with the serialized
//            response (empty for HELLO), or kind = the status code
//            (absl::StatusCode, as gRPC's) with the error message.
// A refused HELLO and a malformed frame (unknown kind, nonzero padding, a
// body over kMaxFrame, a truncated frame) get an error reply, and it is the
// last one: the daemon closes the connection. A request that fails (a bad
// handle, a kernel fault reported by SYNCHRONIZE) leaves it open.
// Clients may send several frames before reading replies; the daemon reads
// the next frame once it has answered the previous one.
//
// Every byte is hostile input: bodies are bounded and copied out of the
// socket before anything reads them; each connection has its own thread
// (blocking waits stay there). Connections hold slots (connection_slots.h):
// at most kMaxConnections at once; before HELLO is answered at most
// kMaxPendingPerUid per peer uid; after, at most kMaxConnectionsPerTenant
// per tenant and kMaxConnectionsPerTenantUid per uid within a tenant. More
// are refused with RESOURCE_EXHAUSTED naming the bound (the client falls
// back to gRPC).
//
// Shutdown mirrors gRPC's: Stop() stops accepting and hangs up connections
// that wait for a request; a request in flight runs on (AwaitRequests waits
// for it, up to the daemon's grace) and its reply is the connection's last.
// Thread-safe. The destructor (after Stop) hangs up every connection and
// waits for their threads, which may be waiting for device work: destroy it
// once sessions' work is cancelled.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/listen.h"
#include "server/local/connection_slots.h"

namespace warpd::server {

class CommandSocket {
 public:
  enum Kind : uint8_t { kHello = 1, kSubmit = 2, kSynchronize = 3, kDownload = 4, kCreateView = 5 };

  static constexpr size_t kHeaderBytes = 8;
  static constexpr uint32_t kMaxFrame = 2u << 20;
  static constexpr int kMaxConnections = 64;
  static constexpr int kMaxPendingPerUid = 8;
  static constexpr int kMaxConnectionsPerTenant = 16;
  static constexpr int kMaxConnectionsPerTenantUid = 12;
  static constexpr int kHelloDeadlineMs = 2000;

  struct Reply {
    absl::StatusCode code = absl::StatusCode::kOk;
    std::string body;  // the response, or the error message
  };

  // One connection's requests after its HELLO: Handle(kSubmit,
  // kSynchronize, kDownload or kCreateView, body) on the connection's
  // thread, one at a time; it may block (a synchronize waits there).
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual Reply Handle(Kind kind, std::string_view body) = 0;
    // The tenant the HELLO authenticated: the connection's slot counts
    // against it from now on. Not empty.
    virtual std::string_view tenant() const = 0;
  };
  // Answers a HELLO body: the connection's handler, or the error its peer
  // gets (then it is closed).
  using Open = std::function<absl::StatusOr<std::unique_ptr<Handler>>(std::string_view hello)>;

  // Binds `path` (ListenUnixSocket rules) with `mode` and `group` and starts
  // serving. After each reply a connection's thread polls for the next frame
  // for up to `spin` before it sleeps (at most half the cores' worth of
  // threads at once; zero: never), which saves a client in a launch +
  // synchronize loop the wake-up of a sleeping thread.
  static absl::StatusOr<std::unique_ptr<CommandSocket>> Start(const std::string& path, mode_t mode, gid_t group,
                                                              Open open, absl::Duration spin = absl::ZeroDuration());
  ~CommandSocket();
  CommandSocket(const CommandSocket&) = delete;
  CommandSocket& operator=(const CommandSocket&) = delete;

  const std::string& path() const { return listener_->path(); }

  // Stops accepting and hangs up every connection that waits for a
  // request; a connection in the middle of one answers it and is then hung
  // up. A frame read after Stop is answered UNAVAILABLE. Idempotent.
  void Stop();

  // Waits until no request is in flight or `deadline` passes; true when
  // none is. Meant for after Stop (otherwise new requests may start).
  bool AwaitRequests(absl::Time deadline);

  // Connections being served, for tests and metrics.
  int connections() const;
  // Requests being handled now.
  int requests_in_flight() const;

 private:
  struct Connection {
    int fd;
    uid_t uid;
    ConnectionSlots::Slot slot;  // made by Accept, then used by the thread only
    std::thread thread;
    std::atomic<bool> done{false};
  };

  CommandSocket(std::unique_ptr<UnixListener> listener, Open open, absl::Duration spin);
  void Accept();
  void Serve(Connection* c);
  // Marks a request of `c` in flight; false (and nothing marked) once stopped.
  bool BeginRequest(Connection* c);
  // Ends it; false when the socket has stopped meanwhile (hang up now).
  bool EndRequest(Connection* c);
  static void Finish(Connection* c);
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NoRequestsLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return busy_.empty(); }

  const std::unique_ptr<UnixListener> listener_;
  const Open open_;
  const int64_t spin_ns_;
  ConnectionSlots slots_;
  std::thread accept_thread_;
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  // The connections handling a request now (Stop leaves them be).
  absl::flat_hash_set<const Connection*> busy_ ABSL_GUARDED_BY(mu_);
};

// The command socket beside a gRPC Unix socket path.
inline std::string CommandSocketPath(const std::string& grpc_socket_path) { return grpc_socket_path + ".cmd"; }

}  // namespace warpd::server
