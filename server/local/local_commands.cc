#include "server/local/local_commands.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/cpu_relax.h"
#include "common/status_macros.h"
#include "server/stream_calls.h"
#include "server/transfer.h"
#include "server/transfer_wire.h"
#include "server/view_rpcs.h"
#include "spdlog/spdlog.h"

namespace warpd::server {
namespace {

using Reply = CommandSocket::Reply;

// How long a connection's thread spins for the answer before it sleeps:
// a short launch is done well within it, and waking a sleeping thread costs
// tens of microseconds on a loaded host. A connection whose waits have
// lately been long (an average over twice the budget: a mesh build, a big
// kernel) sleeps at once, as the client does: spinning would only take a
// core from the daemon's workers, which on a small machine run that work.
constexpr double kSpinBeforeSleepUs = 100.0;

class SpinPolicy {
 public:
  absl::Duration Budget() const {
    return average_us_ > 2 * kSpinBeforeSleepUs ? absl::ZeroDuration() : absl::Microseconds(kSpinBeforeSleepUs);
  }
  void Record(absl::Duration waited) { average_us_ += 0.25 * (absl::ToDoubleMicroseconds(waited) - average_us_); }

 private:
  double average_us_ = 0.0;  // a moving average of the recent waits
};

// A status that a stream callback (SynchronizeStreams', Stream::Submit's
// `then`) hands to this connection's thread, which waits for it.
class Waiter {
 public:
  // The callback, called once on any thread; it may outlive the Waiter.
  absl::AnyInvocable<void(absl::Status) &&> Callback() {
    return [wait = wait_](absl::Status s) {
      absl::MutexLock lock(&wait->mu);
      wait->status = std::move(s);
      wait->done.store(true, std::memory_order_release);
    };
  }

  // Spins for the policy's budget, then sleeps until the callback has run;
  // tells the policy how long it waited.
  absl::Status Wait(SpinPolicy& policy) {
    Shared* wait = wait_.get();
    const absl::Time start = absl::Now();
    const bool waits = !wait->done.load(std::memory_order_acquire);
    if (waits) {
      const absl::Time spin_end = start + policy.Budget();
      do {
        for (int i = 0; i < 64 && !wait->done.load(std::memory_order_acquire); ++i) CpuRelax();
      } while (!wait->done.load(std::memory_order_acquire) && absl::Now() < spin_end);
    }
    absl::MutexLock lock(&wait->mu);
    wait->mu.Await(absl::Condition(
        +[](std::atomic<bool>* done) { return done->load(std::memory_order_acquire); }, &wait->done));
    if (waits) policy.Record(absl::Now() - start);  // only real waits, as the client counts
    return wait->status;
  }

 private:
  struct Shared {
    std::atomic<bool> done{false};
    absl::Mutex mu;
    absl::Status status ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<Shared> wait_ = std::make_shared<Shared>();
};

// Waits on this thread for SynchronizeStreams' callback.
absl::Status WaitForStreams(const std::vector<std::shared_ptr<runtime::Stream>>& streams, SpinPolicy& policy) {
  Waiter waiter;
  SynchronizeStreams(streams, waiter.Callback());
  return waiter.Wait(policy);
}

class SessionCommands final : public CommandSocket::Handler {
 public:
  SessionCommands(DaemonState* state, std::string bearer, std::string session, std::string tenant)
      : state_(state),
        authorization_(absl::StrCat("Bearer ", bearer)),
        session_(std::move(session)),
        tenant_(std::move(tenant)) {}

  std::string_view tenant() const override { return tenant_; }

  Reply Handle(CommandSocket::Kind kind, std::string_view body) override {
    const char* method = kind == CommandSocket::kSubmit        ? "Submit"
                         : kind == CommandSocket::kSynchronize ? "Synchronize"
                         : kind == CommandSocket::kCreateView  ? "CreateView"
                                                               : "Download";
    Reply reply;
    absl::Status s = kind == CommandSocket::kSubmit        ? Submit(body, &reply.body)
                     : kind == CommandSocket::kSynchronize ? Synchronize(body, &reply.body)
                     : kind == CommandSocket::kCreateView  ? CreateViewFrame(body, &reply.body)
                                                           : Download(body, &reply.body);
    state_->metrics().Rpc(method, s.code()).Increment();
    if (!s.ok()) {
      reply.code = s.code();
      reply.body = std::string(s.message());
    }
    return reply;
  }

 private:
  // Authenticates the connection's tenant again and reads `body` into
  // `request` for this connection's session.
  template <typename Request>
  absl::StatusOr<std::shared_ptr<Tenant>> Begin(std::string_view body, Request* request) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, state_->tenants().Authenticate(authorization_));
    request->Clear();
    if (!request->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return absl::InvalidArgumentError(absl::StrCat("malformed ", Request::descriptor()->name()));
    }
    request->set_session(session_);
    return tenant;
  }

  absl::Status Submit(std::string_view body, std::string* out) {
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, Begin(body, &request_));
    v1::SubmitResponse response;
    // With `synchronize` the batch's first turn may run on this thread; the
    // wait is registered with the batch, before that turn, so a session
    // closed (its streams cancelled) meanwhile cannot clear the error first.
    const bool sync = request_.synchronize();
    std::optional<Waiter> waiter;
    if (sync) waiter.emplace();
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Stream> stream,
                           SubmitBatch(state_, *tenant, request_, &response, sync,
                                       sync ? waiter->Callback() : nullptr));
    if (sync) {
      absl::Status s = waiter->Wait(spin_);
      CountStreamError(state_, *tenant, s);
      // On an error the output stays for ReadOutput, as with gRPC.
      WARPD_RETURN_IF_ERROR(s);
    }
    response.set_output(stream->TakeOutput());
    *out = response.SerializeAsString();
    return absl::OkStatus();
  }

  absl::Status Synchronize(std::string_view body, std::string* out) {
    v1::SynchronizeRequest request;
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, Begin(body, &request));
    WARPD_RETURN_IF_ERROR(CheckReadTimes(request));
    WARPD_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<runtime::Stream>> streams,
                           StreamsToSynchronize(state_, *tenant, request));
    absl::Status s = WaitForStreams(streams, spin_);
    CountStreamError(state_, *tenant, s);
    WARPD_RETURN_IF_ERROR(s);
    v1::SynchronizeResponse response;
    response.set_output(TakeOutput(streams));
    WARPD_RETURN_IF_ERROR(ReadTimes(state_, *tenant, request, &response));
    *out = response.SerializeAsString();
    return absl::OkStatus();
  }

  absl::Status Download(std::string_view body, std::string* out) {
    v1::DownloadRequest request;
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, Begin(body, &request));
    WARPD_ASSIGN_OR_RETURN(DownloadRange range, ResolveDownload(state_, *tenant, request));
    const uint64_t n = range.end - range.begin;
    if (n > kMaxLocalDownloadBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a download on the command socket is at most ",
                                                     kMaxLocalDownloadBytes, " bytes, this one ", n,
                                                     "; use the Download RPC"));
    }
    std::string output;
    if (range.stream != nullptr) {
      absl::Status s = WaitForStreams({range.stream}, spin_);
      CountStreamError(state_, *tenant, s);
      WARPD_RETURN_IF_ERROR(s);  // the output stays for ReadOutput, as with gRPC
      output = range.stream->TakeOutput();
    }
    out->resize(DownloadChunkSize(n, output));
    // The device writes the bytes straight into the reply.
    uint8_t* data = WriteDownloadChunkFrame(n, output, reinterpret_cast<uint8_t*>(out->data()));
    std::vector<std::byte> staging;  // elements holding descriptors
    return ArrayBytesAt(*range.device, *range.array, range.begin, n, reinterpret_cast<std::byte*>(data), &staging,
                        range.session.get());
  }

  // A view is made in a few microseconds: one frame here instead of a gRPC
  // round trip (most of the time of `a[1:3]` in a client).
  absl::Status CreateViewFrame(std::string_view body, std::string* out) {
    v1::CreateViewRequest request;
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant, Begin(body, &request));
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state_->sessions().Get(session_, *tenant));
    v1::CreateViewResponse response;
    WARPD_RETURN_IF_ERROR(CreateView(state_, *session, request, &response));
    *out = response.SerializeAsString();
    return absl::OkStatus();
  }

  DaemonState* const state_;
  const std::string authorization_;
  const std::string session_;
  const std::string tenant_;  // the HELLO's: the connection's slot counts against it
  v1::SubmitRequest request_;  // reused: keeps its capacity between batches
  SpinPolicy spin_;             // this connection's waits (one at a time: its thread's)
};

}  // namespace

CommandSocket::Open LocalCommands(DaemonState* state) {
  return [state](std::string_view hello) -> absl::StatusOr<std::unique_ptr<CommandSocket::Handler>> {
    std::vector<absl::string_view> parts = absl::StrSplit(absl::string_view(hello.data(), hello.size()), ' ');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError("HELLO is '<bearer token> <session token>'");
    }
    WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Tenant> tenant,
                           state->tenants().Authenticate(absl::StrCat("Bearer ", parts[0])));
    WARPD_RETURN_IF_ERROR(state->sessions().Get(std::string(parts[1]), *tenant).status());
    return std::make_unique<SessionCommands>(state, std::string(parts[0]), std::string(parts[1]), tenant->name());
  };
}

}  // namespace warpd::server
