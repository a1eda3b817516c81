#include "lease.h"

#include <chrono>

namespace warpd::internal {

Lease::Lease(v1::Runtime::Stub* stub, std::string session, std::string token)
    : stub_(stub), session_(std::move(session)), token_(std::move(token)), thread_([this] { Run(); }) {}

Lease::~Lease() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  cv_.notify_all();
  thread_.join();
}

void Lease::Run() {
  auto delay = std::chrono::milliseconds(500);
  v1::HoldSessionRequest request;
  request.set_session(session_);
  while (true) {
    grpc::ClientContext context;
    if (!token_.empty()) context.AddMetadata("authorization", "Bearer " + token_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      context_ = &context;
    }
    auto reader = stub_->HoldSession(&context, request);
    v1::LeaseEvent event;
    bool got = false;
    while (reader->Read(&event)) got = true;
    grpc::Status status = reader->Finish();
    {
      std::lock_guard<std::mutex> lock(mu_);
      context_ = nullptr;
      if (stop_) return;
    }
    // The daemon ended the stream (the session closed) or refuses us: done.
    if (status.ok() || status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return;
    }
    if (got) delay = std::chrono::milliseconds(500);
    // The connection dropped: try again while the daemon may keep the session.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, delay, [this] { return stop_; });
    if (stop_) return;
    delay = std::min(delay * 2, std::chrono::milliseconds(5000));
  }
}

}  // namespace warpd::internal
