#include "runtime/device/cuda/cuda_graph.h"

#include <utility>

namespace warpd::runtime::cuda {

absl::Status CudaGraph::BeginCapture(CudaStream& stream) {
  CudaContext& ctx = stream.context();
  return ctx.Call("cuStreamBeginCapture", [&] {
    return ctx.api().cuStreamBeginCapture(stream.get(), kStreamCaptureModeRelaxed);
  });
}

absl::StatusOr<CudaGraph> CudaGraph::EndCapture(CudaStream& stream) {
  CudaContext& ctx = stream.context();
  // The user first: on a poisoned context nothing is asked of the driver.
  absl::StatusOr<ContextUser> user = ctx.AddUser();
  if (!user.ok()) return user.status();
  CUgraph graph = nullptr;
  if (absl::Status s = ctx.Call("cuStreamEndCapture", [&] { return ctx.api().cuStreamEndCapture(stream.get(), &graph); });
      !s.ok()) {
    if (graph != nullptr) ctx.Call("cuGraphDestroy", [&] { return ctx.api().cuGraphDestroy(graph); }).IgnoreError();
    return s;
  }
  CUgraphExec exec = nullptr;
  absl::Status s = ctx.Call("cuGraphInstantiateWithFlags",
                            [&] { return ctx.api().cuGraphInstantiateWithFlags(&exec, graph, 0); });
  // The executable graph is independent of its template.
  ctx.Call("cuGraphDestroy", [&] { return ctx.api().cuGraphDestroy(graph); }).IgnoreError();
  if (!s.ok()) return s;
  return CudaGraph(*std::move(user), exec);
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : user_(std::move(other.user_)), exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    Destroy();
    user_ = std::move(other.user_);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() { Destroy(); }

void CudaGraph::Destroy() {
  CUgraphExec exec = std::exchange(exec_, nullptr);
  if (exec == nullptr) return;
  CudaContext& ctx = context();
  if (!ctx.poisoned()) ctx.Call("cuGraphExecDestroy", [&] { return ctx.api().cuGraphExecDestroy(exec); }).IgnoreError();
  user_.Reset();
}

absl::Status CudaGraph::Launch(CudaStream& stream) {
  CudaContext& ctx = context();
  if (&stream.context() != &ctx) {
    return absl::InvalidArgumentError("CudaGraph::Launch: a stream of " + stream.context().name() + " for a graph of " +
                                      ctx.name());
  }
  return ctx.Call("cuGraphLaunch", [&] { return ctx.api().cuGraphLaunch(exec_, stream.get()); });
}

}  // namespace warpd::runtime::cuda
