// The warpd C++ client: a connection to a warpd daemon (proto/warpd/v1,
// service warpd.v1.Runtime) with one session, its arrays, modules, launches
// and graphs. clients/cpp/README.md shows it in use.
//
// Work is queued as in the Python client: launches, copies, fills and frees
// go to the session's stream on their device and reach the daemon in batches
// (one Submit) at the next sync point (Synchronize, a transfer, a capture) or
// every 1,024 commands; a kernel fault is reported by the next sync point.
// Every call returns an absl::Status (or StatusOr) carrying the daemon's gRPC
// status code and message; a module that fails to compile is
// INVALID_ARGUMENT with each kernel's error in the message (and the daemon's
// warpd.v1.CompileFailures as the payload
// "type.googleapis.com/warpd.v1.CompileFailures").
//
// Thread-safety: a Client may be used from several threads (calls are
// serialized by one lock); Array, Module, Kernel and Graph are handles that
// may be copied freely.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "warpd/client/ir.h"
#include "warpd/v1/ir.pb.h"
#include "warpd/v1/runtime.pb.h"

namespace warpd {

namespace internal {
struct ArrayState;
struct ModuleState;
struct GraphState;
struct Mapping;
class Impl;
}  // namespace internal

// This client's version (the project version it was built with). Connect
// refuses a daemon of another protocol: another major version, or before
// 1.0 another minor version (as the Python client does).
const char* ClientVersion();
// Whether a client and a daemon of these versions speak the same protocol
// (true also when a version cannot be parsed: the daemon's answers decide).
bool VersionsCompatible(std::string_view client, std::string_view daemon);

struct ConnectOptions {
  // "unix:/path/warpd.sock", "host:port". Empty: $WARPD_ADDRESS, else the
  // local default daemon ($XDG_RUNTIME_DIR/warpd.sock or /tmp/warpd-<uid>.sock
  // when it exists, else 127.0.0.1:7788). This client never starts a daemon.
  std::string address;
  // The bearer token. Empty: $WARPD_TOKEN; else, for a Unix socket, the
  // daemon's login socket (<socket>.login); else, for a loopback TCP
  // address, the token file (`token_file`, default
  // $XDG_RUNTIME_DIR/warpd.token or /tmp/warpd-<uid>.token; used only when it
  // is this user's regular file and mode 600).
  std::string token;
  std::string token_file;
  // PEM file of the CA that signed the daemon's certificate (TCP with TLS).
  // Empty: $WARPD_TLS_CA; neither: plaintext.
  std::string tls_ca;
  std::string client_name;  // shown in the daemon's logs; empty: "warpd-cpp pid=<pid>"
  double timeout_seconds = 10.0;
  // On the daemon's host (Unix socket): map CPU arrays of 64 KiB or more into
  // this process, so transfers are one memcpy and Map() gives their memory.
  bool map_local_arrays = true;
  // Kernel output (print/printf) as it comes back; default: written to stdout.
  std::function<void(std::string_view)> output;
};

enum class Init { kEmpty, kZeros };

// Reads a module file written by the Python client (warpd.save_module): a
// serialized warpd.v1.LoadModuleRequest without session and devices.
// INVALID_ARGUMENT when the file is not one.
absl::StatusOr<v1::LoadModuleRequest> ReadModuleFile(const std::string& path);

// A daemon array of this client's session. Copies share one handle; the
// array is freed (in stream order) when the last copy goes.
class Array {
 public:
  Array() = default;
  bool valid() const { return state_ != nullptr; }
  uint64_t handle() const;
  const std::string& device() const;
  const v1::TypeRef& dtype() const;
  const std::vector<int64_t>& shape() const;
  int64_t size() const;         // elements
  uint64_t size_bytes() const;  // elements * element size
  // The gradient array (made by requires_grad); invalid when there is none.
  Array grad() const;
  bool requires_grad() const { return grad().valid(); }

 private:
  friend class Client;
  friend class Tape;
  friend class internal::Impl;
  explicit Array(std::shared_ptr<internal::ArrayState> s) : state_(std::move(s)) {}
  std::shared_ptr<internal::ArrayState> state_;
};

// An array's memory mapped into this process (a client on the daemon's host):
// reads and writes go straight to the daemon's array. Keeps the array alive.
// Synchronize before reading what queued kernels write.
class MappedArray {
 public:
  void* data() const { return data_; }
  size_t size_bytes() const { return size_; }
  template <class T>
  std::span<T> as() const {
    return {static_cast<T*>(data_), size_ / sizeof(T)};
  }

 private:
  friend class Client;
  std::shared_ptr<internal::Mapping> mapping_;
  Array array_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

class Kernel;

// A module loaded on one device.
class Module {
 public:
  Module() = default;
  uint64_t handle() const;
  const std::string& device() const;
  // A kernel by its IR name or by the name it was written with (a Python
  // kernel's function name, a KernelBuilder's name).
  absl::StatusOr<Kernel> kernel(std::string_view name) const;
  const v1::LoadModuleResponse& response() const;
  const v1::Module& ir() const;

 private:
  friend class Client;
  friend class Kernel;
  explicit Module(std::shared_ptr<internal::ModuleState> s) : state_(std::move(s)) {}
  std::shared_ptr<internal::ModuleState> state_;
};

class Kernel {
 public:
  Kernel() = default;
  const std::string& name() const;  // IR name
  const v1::KernelInfo& info() const;
  const Module& module() const { return module_; }

 private:
  friend class Module;
  friend class Client;
  friend class Tape;
  Kernel(Module m, int index) : module_(std::move(m)), index_(index) {}
  Module module_;
  int index_ = -1;
};

// A launch argument: an array (or NullArray()), a number (converted to the
// parameter's scalar type, as a Python number is), or the bytes of any other
// value in the parameter's C layout (Value(): vectors, matrices, structs
// without arrays).
class Arg {
 public:
  Arg(const Array& a) : v_(a) {}           // NOLINT(google-explicit-constructor)
  Arg(double v) : v_(v) {}                 // NOLINT(google-explicit-constructor)
  Arg(float v) : v_(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor)
  Arg(int v) : v_(static_cast<int64_t>(v)) {}   // NOLINT(google-explicit-constructor)
  Arg(int64_t v) : v_(v) {}                // NOLINT(google-explicit-constructor)
  Arg(uint32_t v) : v_(static_cast<int64_t>(v)) {}  // NOLINT(google-explicit-constructor)
  Arg(uint64_t v) : v_(Unsigned{v}) {}     // NOLINT(google-explicit-constructor)
  Arg(bool v) : v_(v) {}                   // NOLINT(google-explicit-constructor)
  static Arg NullArray() { return Arg(Null{}); }
  static Arg Bytes(std::string bytes) { return Arg(Raw{std::move(bytes)}); }
  template <class T>
  static Arg Value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "Arg::Value needs a trivially copyable value");
    std::string b(sizeof(T), '\0');
    std::memcpy(b.data(), &v, sizeof(T));
    return Bytes(std::move(b));
  }

 private:
  friend class internal::Impl;
  struct Null {};
  struct Unsigned {
    uint64_t v;
  };
  struct Raw {
    std::string bytes;
  };
  using V = std::variant<Null, Array, double, int64_t, Unsigned, bool, Raw>;
  explicit Arg(Null n) : v_(n) {}
  explicit Arg(Raw r) : v_(std::move(r)) {}
  V v_;
};

// A captured sequence of commands on one device, replayed by Client::Replay.
// Freed (in stream order) when the last copy goes.
class Graph {
 public:
  Graph() = default;
  uint64_t handle() const;
  const std::string& device() const;

 private:
  friend class Client;
  explicit Graph(std::shared_ptr<internal::GraphState> s) : state_(std::move(s)) {}
  std::shared_ptr<internal::GraphState> state_;
};

class Tape;

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(ConnectOptions options = {});
  // Runs queued work (its kernel output is printed), closes the session.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& address() const;
  const std::string& session() const;
  const v1::ServerInfo& server_info() const;
  // Whether arrays of this session can be mapped into this process.
  bool local() const;

  // ------------------------------------------------------------ arrays
  // An array of `dtype` (a value type) and `shape` (1-4 dims); with
  // requires_grad also its gradient array (zeros), as wp.array(...,
  // requires_grad=True).
  absl::StatusOr<Array> CreateArray(const ir::Type& dtype, std::vector<int64_t> shape, Init init = Init::kZeros,
                                    std::string_view device = "cpu", bool requires_grad = false);
  // An array holding `values` (shape: one dimension of values.size() /
  // elements per value when empty).
  template <class T>
  absl::StatusOr<Array> ArrayFrom(const ir::Type& dtype, std::span<const T> values, std::vector<int64_t> shape = {},
                                  std::string_view device = "cpu", bool requires_grad = false) {
    if (shape.empty()) shape.push_back(static_cast<int64_t>(values.size()));
    auto a = CreateArray(dtype, std::move(shape), Init::kEmpty, device, requires_grad);
    if (!a.ok()) return a;
    absl::Status st = Upload(*a, values.data(), values.size_bytes());
    if (!st.ok()) return st;
    return a;
  }
  // Writes/reads the whole array (bytes must be its size_bytes), after the
  // work queued before. Mapped arrays are one memcpy; others use the
  // Upload/Download streams.
  absl::Status Upload(const Array& a, const void* data, size_t bytes);
  absl::Status Download(const Array& a, void* out, size_t bytes);
  template <class T>
  absl::StatusOr<std::vector<T>> Download(const Array& a) {
    std::vector<T> out(a.size_bytes() / sizeof(T));
    absl::Status st = Download(a, out.data(), out.size() * sizeof(T));
    if (!st.ok()) return st;
    return out;
  }
  // The array's memory, mapped (zero-copy). FAILED_PRECONDITION when the
  // daemon does not share it with this client (TCP, map_local_arrays off, an
  // array of another session, a non-contiguous view).
  absl::StatusOr<MappedArray> Map(const Array& a);
  // Queued commands: every element set to `element` (one element's bytes),
  // dst <- src.
  absl::Status Fill(const Array& a, std::string element);
  template <class T>
  absl::Status FillValue(const Array& a, const T& element) {
    static_assert(std::is_trivially_copyable_v<T>, "FillValue needs a trivially copyable element");
    return Fill(a, std::string(reinterpret_cast<const char*>(&element), sizeof(T)));
  }
  absl::Status Zero(const Array& a);
  absl::Status Copy(const Array& dst, const Array& src);

  // ----------------------------------------------------------- modules
  // Validates, type-checks and compiles `ir` for `device` (kernels that
  // fail to compile are left out; when none compiles, the call fails).
  absl::StatusOr<Module> LoadModule(const v1::Module& ir, std::string_view device = "cpu");
  // A module saved by the Python client (warpd.save_module): a serialized
  // warpd.v1.LoadModuleRequest, sent with this session and `device`.
  absl::StatusOr<Module> LoadModuleFile(const std::string& path, std::string_view device = "cpu");

  // ---------------------------------------------------------- launches
  // Queues a launch of `kernel` over `dim` (1-4 dimensions) on its module's
  // device; arguments are checked against the kernel's parameters here.
  // Recorded by the Tape that is recording, captured by a capture in progress.
  absl::Status Launch(const Kernel& kernel, std::vector<int64_t> dim, std::vector<Arg> args);
  // Runs the kernel's adjoint (Warp's adjoint=True): `adj_args` one per
  // parameter (gradient arrays, NullArray() for none; values' adjoints).
  absl::Status LaunchAdjoint(const Kernel& kernel, std::vector<int64_t> dim, std::vector<Arg> args,
                             std::vector<Arg> adj_args);

  // Sends the device's queued commands (empty device: every device).
  absl::Status Flush(std::string_view device = "");
  // Sends queued work and waits until it is done; reports (and clears) a
  // kernel fault (OUT_OF_RANGE naming kernel and line) or another error.
  absl::Status Synchronize(std::string_view device = "");

  // ------------------------------------------------------------ graphs
  // Launches, copies and fills on `device` are recorded instead of sent
  // until CaptureEnd, which prepares them on the daemon as one graph.
  absl::Status CaptureBegin(std::string_view device = "cpu");
  absl::StatusOr<Graph> CaptureEnd(std::string_view device = "cpu");
  // Queues one replay of the graph.
  absl::Status Replay(const Graph& graph);

 private:
  friend class Tape;
  explicit Client(std::shared_ptr<internal::Impl> impl);
  std::shared_ptr<internal::Impl> impl_;
};

// Warp's Tape: records the launches made while it records (Record() or
// Begin()/End()); Backward(loss) sets loss.grad to 1 and queues every
// recorded kernel's adjoint in reverse order, with the gradient arrays of
// its array arguments as their adjoints. Kernels' backward passes are
// compiled the first time they are needed (their module loaded again with
// Module.backward set, unless it was saved or built with it). A Tape must not
// outlive its Client.
class Tape {
 public:
  explicit Tape(Client& client);
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Starts recording this client's launches (one tape records at a time).
  absl::Status Begin();
  void End();
  // Begin() until the returned object goes.
  class Recording {
   public:
    ~Recording() { if (tape_) tape_->End(); }
    Recording(Recording&& o) noexcept : tape_(o.tape_) { o.tape_ = nullptr; }
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;
    Recording& operator=(Recording&&) = delete;

   private:
    friend class Tape;
    explicit Recording(Tape* t) : tape_(t) {}
    Tape* tape_;
  };
  absl::StatusOr<Recording> Record();

  // `loss`: a one-element float32/float64 array with a gradient.
  absl::Status Backward(const Array& loss);
  // Zeroes the gradients of every array the recorded launches took.
  absl::Status Zero();
  // Zeroes the gradients (Zero) and forgets the recorded launches.
  absl::Status Reset();
  size_t size() const { return launches_.size(); }

 private:
  friend class Client;
  struct Recorded {
    Kernel kernel;
    std::vector<int64_t> dim;
    std::vector<Arg> args;
  };
  Client& client_;
  std::vector<Recorded> launches_;
  Array loss_;
};

}  // namespace warpd
