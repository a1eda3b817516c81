// Holds a session's lease: one HoldSession stream kept open on a thread of
// its own, opened again after a dropped connection (as the Python client's
// LeaseHolder, clients/python/warpd/auth.py). When the process dies, the
// connection closes and the daemon frees the session after its grace.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "warpd/v1/runtime.grpc.pb.h"

namespace warpd::internal {

class Lease {
 public:
  Lease(v1::Runtime::Stub* stub, std::string session, std::string token);
  ~Lease();  // cancels the stream and joins the thread

 private:
  void Run();
  v1::Runtime::Stub* stub_;
  std::string session_;
  std::string token_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  grpc::ClientContext* context_ = nullptr;  // the open stream's, under mu_
  std::thread thread_;
};

}  // namespace warpd::internal
