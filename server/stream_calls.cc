#include "server/stream_calls.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/submit.h"

namespace warpd::server {

namespace {

// Finishes a wait once every stream it waits for has reported; the first
// error wins.
class SyncJoin {
 public:
  SyncJoin(absl::AnyInvocable<void(absl::Status) &&> done, size_t streams)
      : done_(std::move(done)), remaining_(streams) {}

  void Done(absl::Status status) {
    absl::Status result;
    {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok() && !status.ok()) first_error_ = std::move(status);
      if (--remaining_ > 0) return;
      result = first_error_;
    }
    std::move(done_)(std::move(result));
  }

 private:
  absl::AnyInvocable<void(absl::Status) &&> done_;
  absl::Mutex mu_;
  size_t remaining_ ABSL_GUARDED_BY(mu_);
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::shared_ptr<runtime::Stream>> SubmitBatch(DaemonState* state, const Tenant& tenant,
                                                             const v1::SubmitRequest& req,
                                                             v1::SubmitResponse* resp, bool run_here,
                                                             absl::AnyInvocable<void(absl::Status) &&> then) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session(), tenant));
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().FindUsable(req.device()));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::Stream> stream, session->StreamFor(device, req.stream()));
  // Before PrepareBatch, which already removes the handles the batch frees.
  WARPD_RETURN_IF_ERROR(stream->CheckRoom(static_cast<size_t>(req.commands_size())));
  std::vector<uint64_t> created;  // by CreateTree commands
  auto find_device = [state](const std::string& name) { return state->devices().FindUsable(name); };
  const runtime::DeviceLookup devices(find_device);
  WARPD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<runtime::Command>> batch,
                         PrepareBatch(*session, *device, req.commands(), &created, stream.get(), &devices));
  uint64_t launches = 0;
  for (const std::unique_ptr<runtime::Command>& c : batch) launches += c->Launches();
  absl::StatusOr<uint64_t> sequence = stream->Submit(std::move(batch), run_here, std::move(then));
  if (!sequence.ok()) {
    session->RemoveObjects(created);  // all or nothing
    return sequence.status();
  }
  resp->set_sequence(*sequence);
  state->metrics().ForTenant(tenant.name()).launches.Increment(launches);
  return stream;
}

absl::StatusOr<std::vector<std::shared_ptr<runtime::Stream>>> StreamsToSynchronize(
    DaemonState* state, const Tenant& tenant, const v1::SynchronizeRequest& req) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session(), tenant));
  if (req.device().empty()) return session->Streams();
  WARPD_ASSIGN_OR_RETURN(runtime::Device * device, state->devices().Find(req.device()));
  if (!req.one_stream()) return session->StreamsOn(device->name());
  std::vector<std::shared_ptr<runtime::Stream>> out;
  if (auto stream = session->FindStream(device->name(), req.stream())) out.push_back(std::move(stream));
  return out;
}

absl::Status CheckReadTimes(const v1::SynchronizeRequest& req) {
  constexpr int kMaxReads = 64;
  if (req.read_times_size() > kMaxReads) {
    return absl::InvalidArgumentError(
        absl::StrCat("read_times: at most ", kMaxReads, " slots per request, got ", req.read_times_size()));
  }
  for (uint32_t slot : req.read_times()) {
    if (slot >= runtime::TimeSlots::kSlots) {
      return absl::InvalidArgumentError(
          absl::StrCat("read_times: slot ", slot, " is not below ", runtime::TimeSlots::kSlots));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadTimes(DaemonState* state, const Tenant& tenant, const v1::SynchronizeRequest& req,
                       v1::SynchronizeResponse* resp) {
  if (req.read_times().empty()) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, state->sessions().Get(req.session(), tenant));
  std::shared_ptr<const runtime::TimeSlots> slots = session->find_time_slots();
  for (uint32_t slot : req.read_times()) {
    const runtime::TimeSlots::Entry e = slots != nullptr ? slots->Read(slot) : runtime::TimeSlots::Entry{};
    resp->add_times_ns(e.ns);
    resp->add_time_tags(e.tag);
  }
  return absl::OkStatus();
}

void SynchronizeStreams(const std::vector<std::shared_ptr<runtime::Stream>>& streams,
                        absl::AnyInvocable<void(absl::Status) &&> done) {
  if (streams.empty()) {
    std::move(done)(absl::OkStatus());
    return;
  }
  if (streams.size() == 1) {
    streams.front()->SynchronizeAsync(std::move(done));
    return;
  }
  auto join = std::make_shared<SyncJoin>(std::move(done), streams.size());
  for (const auto& stream : streams) {
    stream->SynchronizeAsync([join](absl::Status s) { join->Done(std::move(s)); });
  }
}

std::string TakeOutput(const std::vector<std::shared_ptr<runtime::Stream>>& streams) {
  std::string out;
  for (const auto& stream : streams) out += stream->TakeOutput();
  return out;
}

void CountStreamError(DaemonState* state, const Tenant& tenant, const absl::Status& s) {
  if (s.ok()) return;
  const metrics::TenantMetrics m = state->metrics().ForTenant(tenant.name());
  if (s.code() == absl::StatusCode::kOutOfRange) m.launch_faults.Increment();
  if (s.code() == absl::StatusCode::kDeadlineExceeded || s.code() == absl::StatusCode::kCancelled) {
    m.launches_cancelled.Increment();
  }
}

}  // namespace warpd::server
