// The state behind the public handles (include/warpd/client/client.h).
// Impl owns the channel, the session and the per-device command queues;
// arrays, modules and graphs hold a weak reference to it, so a handle that
// outlives its Client frees nothing.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lease.h"
#include "share_map.h"
#include "warpd/client/client.h"
#include "warpd/v1/runtime.grpc.pb.h"

namespace warpd::internal {

struct ArrayState {
  std::weak_ptr<Impl> impl;
  uint64_t handle = 0;
  std::string device;
  v1::TypeRef dtype;
  std::vector<int64_t> shape;
  int64_t count = 0;
  uint64_t size_bytes = 0;
  Array grad;
  // The mapping into this process (local clients), tried once.
  std::mutex map_mu;
  bool map_tried = false;
  std::shared_ptr<Mapping> mapping;
  ~ArrayState();
};

struct ModuleState {
  std::weak_ptr<Impl> impl;
  std::string device;
  v1::Module ir;
  v1::LoadModuleResponse response;
  // The same module loaded with Module.backward (this one when it has it).
  std::shared_ptr<ModuleState> backward;
};

struct GraphState {
  std::weak_ptr<Impl> impl;
  uint64_t handle = 0;
  std::string device;
  ~GraphState();
};

// A device's command queue: commands wait here until a flush sends them in
// one Submit; during a capture, capturable commands go to `captured`.
struct DeviceQueue {
  std::vector<v1::Command> pending;
  bool capturing = false;
  std::vector<v1::Command> captured;
  std::vector<Array> captured_arrays;  // kept alive until the graph holds them
};

// grpc::Status -> absl::Status: same code and message; the daemon's details
// (grpc-status-details-bin, warpd.v1.StatusDetails) become payloads, and
// CompileFailures' messages are added to the message.
absl::Status FromGrpc(const grpc::Status& s);

class Impl : public std::enable_shared_from_this<Impl> {
 public:
  absl::Status Connect(const ConnectOptions& options);
  void Close();

  std::unique_ptr<grpc::ClientContext> Context(double timeout_seconds = 0) const;
  void Emit(const std::string& output);
  // Reads and prints kernel output after a failed call (never fails).
  void ReadOutput(const std::string& device);

  // Queues a command on the device (captured when capturing and `capturable`).
  absl::Status Queue(const std::string& device, v1::Command cmd, std::vector<Array> arrays, bool capturable = true);
  absl::Status FlushLocked(const std::string& device);
  // timeout_seconds > 0 bounds the wait (the close's: queued work may not finish).
  absl::Status SynchronizeLocked(const std::string& device, double timeout_seconds = 0);

  absl::StatusOr<std::shared_ptr<ModuleState>> LoadModule(const v1::Module& ir, const std::string& device);
  absl::StatusOr<std::shared_ptr<ModuleState>> Backward(const std::shared_ptr<ModuleState>& m);
  // Packs a launch of kernel `info` of module handle `module` (checks args).
  absl::StatusOr<v1::Launch> PackLaunch(const v1::KernelInfo& info, uint64_t module, const std::string& device,
                                        const std::vector<int64_t>& dim, const std::vector<Arg>& args) const;
  absl::Status PackArg(const v1::ParamInfo& p, const Arg& arg, const std::string& device, v1::LaunchArg* out) const;
  static void ArraysOf(const std::vector<Arg>& args, std::vector<Array>* out);
  const Array* ArrayArg(const Arg& a) const { return std::get_if<Array>(&a.v_); }

  // The array's mapping when it is (or can be) mapped; null otherwise.
  std::shared_ptr<Mapping> MappingOf(ArrayState& a);

  std::recursive_mutex mu;
  std::string address;
  std::string token;
  std::string token_source;
  std::string session;
  std::optional<std::string> share_path;
  bool map_arrays = true;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Runtime::Stub> stub;
  v1::ServerInfo info;
  std::unique_ptr<Lease> lease;
  std::map<std::string, DeviceQueue, std::less<>> queues;
  std::function<void(std::string_view)> output;
  Tape* tape = nullptr;
  bool closed = false;
};

}  // namespace warpd::internal
