#include "server/submit.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/count_quota.h"
#include "common/status_macros.h"
#include "runtime/exec/conditional.h"
#include "runtime/exec/hash_grid_build.h"
#include "runtime/exec/launch.h"
#include "runtime/exec/matmul.h"
#include "runtime/exec/stream.h"
#include "runtime/exec/stream_wait.h"
#include "runtime/exec/time_stamp.h"
#include "runtime/exec/tree_build.h"
#include "server/object_rpcs.h"

namespace warpd::server {

namespace {

using runtime::Array;
using runtime::Command;

// Resolves array and graph handles, treating those freed earlier in the
// batch as gone.
class ArrayResolver {
 public:
  // `devices`: finds the other devices a copy reads from (null: none, as in
  // graphs).
  explicit ArrayResolver(Session& session, const runtime::DeviceLookup* devices = nullptr)
      : session_(session), devices_(devices) {}
  const runtime::DeviceLookup* devices() const { return devices_; }

  absl::StatusOr<std::shared_ptr<const Array>> Get(uint64_t handle) const {
    if (freed_.contains(handle)) return session_.arrays().NotFound(handle);
    return session_.arrays().Get(handle);
  }
  absl::StatusOr<std::shared_ptr<runtime::Graph>> GetGraph(uint64_t handle) const {
    if (freed_graphs_.contains(handle)) return session_.graphs().NotFound(handle);
    return session_.graphs().Get(handle);
  }
  absl::StatusOr<std::shared_ptr<runtime::HashGrid>> GetHashGrid(uint64_t handle) const {
    if (std::find(freed_objects_.begin(), freed_objects_.end(), handle) != freed_objects_.end()) {
      return absl::NotFoundError(absl::StrFormat("hash grid handle 0x%016x not found", handle));
    }
    return session_.GetHashGrid(handle);
  }
  absl::StatusOr<std::shared_ptr<runtime::TreeObject>> GetTree(uint64_t handle) const {
    if (std::find(freed_objects_.begin(), freed_objects_.end(), handle) != freed_objects_.end()) {
      return absl::NotFoundError(absl::StrFormat("BVH handle 0x%016x not found", handle));
    }
    return session_.GetTree(handle);
  }
  // The launch table of `device`: the session's objects there, but those
  // freed earlier in the batch.
  std::shared_ptr<const runtime::ObjectTable> ObjectsOn(const std::string& device) const {
    std::shared_ptr<const runtime::ObjectTable> table = session_.ObjectsOn(device);
    return freed_objects_.empty() ? table : table->Without(freed_objects_);
  }
  void MarkFreed(uint64_t handle) { freed_.insert(handle); }
  void MarkGraphFreed(uint64_t handle) { freed_graphs_.insert(handle); }
  void MarkObjectFreed(uint64_t handle) { freed_objects_.push_back(handle); }
  void MarkObjectCreated(uint64_t handle) { created_objects_.push_back(handle); }
  const std::vector<uint64_t>& created_objects() const { return created_objects_; }
  const absl::flat_hash_set<uint64_t>& freed() const { return freed_; }
  const absl::flat_hash_set<uint64_t>& freed_graphs() const { return freed_graphs_; }
  const std::vector<uint64_t>& freed_objects() const { return freed_objects_; }

 private:
  Session& session_;
  const runtime::DeviceLookup* const devices_;
  absl::flat_hash_set<uint64_t> freed_;
  absl::flat_hash_set<uint64_t> freed_graphs_;
  std::vector<uint64_t> freed_objects_;  // few: a linear scan
  std::vector<uint64_t> created_objects_;  // by CreateTree, already in the session
};

// Drops its reference to an object when it runs, in stream order (a graph
// freed after replays queued before it).
class ReleaseCommand final : public Command {
 public:
  explicit ReleaseCommand(std::shared_ptr<void> held) : held_(std::move(held)) {}
  absl::Status Execute(runtime::Device&) override {
    held_.reset();
    return absl::OkStatus();
  }
  std::string Describe() const override { return "free"; }

 private:
  std::shared_ptr<void> held_;
};

// A launch's arguments with their handles resolved.
absl::StatusOr<std::vector<runtime::LaunchArgValue>> LaunchArgs(
    const std::string& kernel, const google::protobuf::RepeatedPtrField<v1::LaunchArg>& in, const char* role,
    ArrayResolver& arrays) {
  std::vector<runtime::LaunchArgValue> args;
  args.reserve(in.size());
  for (int i = 0; i < in.size(); ++i) {
    const v1::LaunchArg& arg = in[i];
    switch (arg.value_case()) {
      case v1::LaunchArg::kBytes:
        args.emplace_back(arg.bytes());
        break;
      case v1::LaunchArg::kArray: {
        if (arg.array() == 0) {  // None (handles are never 0): an empty descriptor
          args.emplace_back(std::shared_ptr<const runtime::Array>());
          break;
        }
        auto array = arrays.Get(arg.array());
        if (!array.ok()) {
          return absl::Status(array.status().code(), absl::StrCat("kernel '", kernel, "': ", role, i, ": ",
                                                                  array.status().message()));
        }
        args.emplace_back(*std::move(array));
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel, "': ", role, i, " has no value"));
    }
  }
  return args;
}

// `device_obj`: the batch's device (null in graphs, which make no objects).
// Null for a command with nothing to run (CreateTree).
absl::StatusOr<std::unique_ptr<Command>> PrepareUncharged(Session& session, const std::string& device,
                                                          runtime::Device* device_obj, const v1::Command& command,
                                                          ArrayResolver& arrays) {
  switch (command.kind_case()) {
    case v1::Command::kLaunch: {
      const v1::Launch& launch = command.launch();
      if (launch.repeat() > runtime::kMaxLaunchRepeat) {
        return absl::InvalidArgumentError(absl::StrCat("kernel '", launch.kernel(), "': a launch repeats at most ",
                                                       runtime::kMaxLaunchRepeat, " times, got ", launch.repeat()));
      }
      auto module = session.modules().Get(launch.module());
      if (!module.ok()) return module.status();
      if (device_obj != nullptr && (*module)->target() != device_obj->target()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "kernel '", launch.kernel(), "': module ", launch.module(), " was compiled for ",
            (*module)->target() == abi::Target::kCuda ? "CUDA" : "the CPU", ", not for ", device,
            "; load it for that device"));
      }
      auto args = LaunchArgs(launch.kernel(), launch.args(), "argument ", arrays);
      if (!args.ok()) return args.status();
      std::optional<std::vector<runtime::LaunchArgValue>> adj_args;
      if (launch.adjoint()) {
        auto adj = LaunchArgs(launch.kernel(), launch.adj_args(), "adjoint argument ", arrays);
        if (!adj.ok()) return adj.status();
        adj_args = *std::move(adj);
      } else if (launch.adj_args_size() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel '", launch.kernel(), "': adjoint arguments without adjoint"));
      }
      // Per adjoint argument, its descriptor's flags (launch.h).
      std::vector<int32_t> grad_flags(std::max(launch.adj_consume_size(), launch.adj_own_size()), 0);
      for (int i = 0; i < launch.adj_consume_size(); ++i) {
        if (launch.adj_consume(i)) grad_flags[i] |= runtime::kGradConsume;
      }
      for (int i = 0; i < launch.adj_own_size(); ++i) {
        if (launch.adj_own(i)) grad_flags[i] |= runtime::kGradOwn;
      }
      auto lookup_fn = [&](uint64_t handle) { return arrays.Get(handle); };
      runtime::ArrayLookup lookup(lookup_fn);
      return runtime::PrepareLaunch(*std::move(module), launch.kernel(),
                                    {launch.dim().data(), size_t(launch.dim_size())},
                                    *std::move(args), device, &lookup, launch.repeat(),
                                    adj_args ? &*adj_args : nullptr, &grad_flags, arrays.ObjectsOn(device),
                                    runtime::Device::LaunchShape{launch.block_dim(), launch.max_blocks()});
    }
    case v1::Command::kBuildHashGrid: {
      const v1::BuildHashGrid& build = command.build_hash_grid();
      auto grid = arrays.GetHashGrid(build.grid());
      if (!grid.ok()) return grid.status();
      auto points = arrays.Get(build.points());
      if (!points.ok()) return points.status();
      std::shared_ptr<const Array> groups;
      if (build.groups() != 0) {
        auto g = arrays.Get(build.groups());
        if (!g.ok()) return g.status();
        groups = *std::move(g);
      }
      return runtime::PrepareHashGridBuild(*std::move(grid), *std::move(points), std::move(groups), build.radius(),
                                           device, session.private_pool(),
                                           device == "cpu" ? nullptr : &session.DevicePool(device));
    }
    case v1::Command::kBuildTree: {
      const v1::BuildTree& build = command.build_tree();
      auto tree = arrays.GetTree(build.object());
      if (!tree.ok()) return tree.status();
      if (build.split() != 0 && build.split() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("build_tree: split ", build.split(), " is not 0 (SAH) or 1 (median)"));
      }
      runtime::VertexArrays replaced;
      for (auto [handle, slot] : {std::pair{build.points(), &replaced.points},
                                  std::pair{build.points_grad(), &replaced.points_grad},
                                  std::pair{build.velocities(), &replaced.velocities},
                                  std::pair{build.velocities_grad(), &replaced.velocities_grad}}) {
        if (handle == 0) continue;
        auto a = arrays.Get(handle);
        if (!a.ok()) return a.status();
        *slot = *std::move(a);
      }
      return runtime::PrepareTreeBuild(*std::move(tree), build.refit(),
                                       build.split() == 1 ? runtime::BvhSplit::kMedian : runtime::BvhSplit::kSah,
                                       device, std::move(replaced));
    }
    case v1::Command::kMatmul: {
      const v1::Matmul& mm = command.matmul();
      auto a = arrays.Get(mm.a());
      if (!a.ok()) return a.status();
      auto b = arrays.Get(mm.b());
      if (!b.ok()) return b.status();
      std::shared_ptr<const Array> c;
      if (mm.c() != 0) {  // 0: no c
        auto got = arrays.Get(mm.c());
        if (!got.ok()) return got.status();
        c = *std::move(got);
      }
      auto d = arrays.Get(mm.d());
      if (!d.ok()) return d.status();
      return runtime::PrepareMatmul(*std::move(a), *std::move(b), std::move(c), *std::move(d), mm.alpha(), mm.beta(),
                                    device, session.private_pool());
    }
    case v1::Command::kFreeObject: {
      const uint64_t handle = command.free_object().object();
      auto object = session.objects().Get(handle);
      const auto& freed = arrays.freed_objects();
      if (!object.ok() || std::find(freed.begin(), freed.end(), handle) != freed.end()) {
        return absl::NotFoundError(absl::StrFormat("object handle 0x%016x not found", handle));
      }
      arrays.MarkObjectFreed(handle);
      // The object's own handle takes its tree's (a mesh's, mesh_get_bvh) with it.
      if (const uint64_t tree = (*object)->tree_id(); tree != 0 && tree != handle) arrays.MarkObjectFreed(tree);
      return std::make_unique<ReleaseCommand>(*std::move(object));
    }
    case v1::Command::kCopy: {
      auto dst = arrays.Get(command.copy().dst());
      if (!dst.ok()) return dst.status();
      auto src = arrays.Get(command.copy().src());
      if (!src.ok()) return src.status();
      return runtime::PrepareCopy(*std::move(dst), *std::move(src), device, arrays.devices());
    }
    case v1::Command::kFill: {
      auto array = arrays.Get(command.fill().array());
      if (!array.ok()) return array.status();
      auto lookup_fn = [&](uint64_t handle) { return arrays.Get(handle); };
      runtime::ArrayLookup lookup(lookup_fn);
      return runtime::PrepareFill(*std::move(array), command.fill().value(), device, &lookup);
    }
    case v1::Command::kFree: {
      auto array = arrays.Get(command.free().array());
      if (!array.ok()) return array.status();
      auto prepared = runtime::PrepareFree(*std::move(array), device);
      if (prepared.ok()) arrays.MarkFreed(command.free().array());
      return prepared;
    }
    case v1::Command::kReplay: {
      auto graph = arrays.GetGraph(command.replay().graph());
      if (!graph.ok()) return graph.status();
      if ((*graph)->device() != device) {
        return absl::InvalidArgumentError(absl::StrCat("graph ", command.replay().graph(), " was captured on '",
                                                       (*graph)->device(), "', not '", device, "'"));
      }
      return (*graph)->MakeReplay();
    }
    case v1::Command::kConditional: {
      const v1::Conditional& cond = command.conditional();
      auto condition = arrays.Get(cond.condition());
      if (!condition.ok()) return condition.status();
      std::shared_ptr<runtime::Graph> graphs[2];
      const uint64_t handles[2] = {cond.then_graph(), cond.else_graph()};
      for (int k = 0; k < 2; ++k) {
        if (handles[k] == 0) continue;
        auto graph = arrays.GetGraph(handles[k]);
        if (!graph.ok()) return graph.status();
        graphs[k] = *std::move(graph);
      }
      return runtime::PrepareConditional(*std::move(condition), std::move(graphs[0]), std::move(graphs[1]),
                                         cond.loop(), device);
    }
    case v1::Command::kCreateTree: {
      const v1::CreateTree& create = command.create_tree();
      if (device_obj == nullptr) return absl::InvalidArgumentError("create_tree: objects are made outside graphs");
      if (create.id() == 0) return absl::InvalidArgumentError("create_tree: the id must not be 0");
      auto lookup = [&arrays](uint64_t h) { return arrays.Get(h); };
      WARPD_ASSIGN_OR_RETURN(std::shared_ptr<runtime::TreeObject> tree,
                             MakeTree(*device_obj, session, create, lookup));
      WARPD_ASSIGN_OR_RETURN(uint64_t handle, session.AddObject(std::move(tree), create.id()));
      arrays.MarkObjectCreated(handle);
      return std::unique_ptr<Command>();
    }
    case v1::Command::kFreeGraph: {
      auto graph = arrays.GetGraph(command.free_graph().graph());
      if (!graph.ok()) return graph.status();
      arrays.MarkGraphFreed(command.free_graph().graph());
      return std::make_unique<ReleaseCommand>(*std::move(graph));
    }
    case v1::Command::kWait:
      return absl::InvalidArgumentError("wait: a stream wait is a command of a batch, never of a graph");
    case v1::Command::kRecordTime: {
      if (device_obj == nullptr) return absl::InvalidArgumentError("record_time: not in graphs");
      const uint32_t slot = command.record_time().slot();
      if (slot >= runtime::TimeSlots::kSlots) {
        return absl::InvalidArgumentError(
            absl::StrCat("record_time: slot ", slot, " is not below ", runtime::TimeSlots::kSlots));
      }
      return runtime::MakeTimeStamp(session.time_slots(), slot, command.record_time().tag());
    }
    default:
      return absl::InvalidArgumentError(
          "command has no kind (launch, copy, fill, free, replay, free_graph, build_hash_grid, build_tree, "
          "free_object, matmul, conditional, create_tree, wait or record_time)");
  }
}

// Prepares `command` and charges what it keeps (its argument block, ...) to
// the session's memory until it is destroyed: after it ran, when a queue
// drops it, or with its graph. Frees are not charged: a tenant at its limit
// must still be able to free (they are few bytes, bounded by the queue's
// count quota, and give back more than they cost).
absl::StatusOr<std::unique_ptr<Command>> PrepareOne(Session& session, const std::string& device,
                                                    runtime::Device* device_obj, const v1::Command& command,
                                                    ArrayResolver& arrays) {
  WARPD_ASSIGN_OR_RETURN(std::unique_ptr<Command> prepared,
                         PrepareUncharged(session, device, device_obj, command, arrays));
  if (prepared == nullptr || command.kind_case() == v1::Command::kFree ||
      command.kind_case() == v1::Command::kFreeGraph || command.kind_case() == v1::Command::kFreeObject) {
    return prepared;
  }
  const uint64_t bytes = prepared->HeldBytes();
  absl::StatusOr<runtime::MemoryCharge> charge = session.pool().Charge(bytes);
  if (!charge.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(prepared->Describe(), " holds ", bytes,
                                                     " bytes while it is queued or captured: ",
                                                     charge.status().message()));
  }
  prepared->AttachCharge(*std::move(charge));
  return prepared;
}


// A WaitStream command of a batch going to `own`.
absl::StatusOr<std::unique_ptr<Command>> PrepareWait(Session& session, const v1::WaitStream& wait,
                                                     const runtime::Stream* own) {
  std::shared_ptr<runtime::Stream> target = session.FindStream(wait.device(), wait.stream());
  const std::string which = absl::StrCat("stream ", wait.stream(), " on '", wait.device(), "'");
  if (target == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("wait: the session has submitted nothing to ", which));
  }
  if (target.get() == own) return absl::InvalidArgumentError(absl::StrCat("wait: ", which, " cannot wait for itself"));
  const uint64_t submitted = target->submitted();
  if (wait.sequence() > submitted) {
    return absl::InvalidArgumentError(absl::StrCat("wait: ", which, " has been submitted ", submitted,
                                                   " commands; a wait for command ", wait.sequence(),
                                                   " would wait for work not yet submitted"));
  }
  return runtime::MakeStreamWait(target, wait.sequence());
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Command>>> PrepareBatch(
    Session& session, runtime::Device& device_obj,
    const google::protobuf::RepeatedPtrField<v1::Command>& commands, std::vector<uint64_t>* created,
    const runtime::Stream* stream, const runtime::DeviceLookup* devices) {
  const std::string& device = device_obj.name();
  if (commands.size() > kMaxCommandsPerBatch) {
    return absl::InvalidArgumentError(absl::StrCat("a batch holds at most ", kMaxCommandsPerBatch,
                                                   " commands, got ", commands.size()));
  }
  ArrayResolver arrays(session, devices);
  std::vector<std::unique_ptr<Command>> out;
  out.reserve(commands.size());
  for (const v1::Command& c : commands) {
    auto prepared = c.kind_case() == v1::Command::kWait ? PrepareWait(session, c.wait(), stream)
                                                        : PrepareOne(session, device, &device_obj, c, arrays);
    if (!prepared.ok()) {
      session.RemoveObjects(arrays.created_objects());  // all or nothing
      return prepared.status();
    }
    if (*prepared != nullptr) out.push_back(*std::move(prepared));
  }
  if (created != nullptr) *created = arrays.created_objects();
  // The batch is accepted: its frees take effect for later requests now; the
  // memory itself goes when the free command runs in stream order. A handle
  // freed meanwhile by a concurrent FreeArray is already gone, which is fine.
  for (uint64_t h : arrays.freed()) (void)session.arrays().Remove(h);
  for (uint64_t h : arrays.freed_graphs()) (void)session.graphs().Remove(h);
  if (!arrays.freed_objects().empty()) session.RemoveObjects(arrays.freed_objects());
  return out;
}

absl::StatusOr<std::shared_ptr<runtime::Graph>> PrepareGraph(
    Session& session, const std::string& device, const google::protobuf::RepeatedPtrField<v1::Command>& commands) {
  if (commands.size() > static_cast<int>(runtime::Graph::kMaxCommands)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a graph holds at most ", runtime::Graph::kMaxCommands, " commands, got ", commands.size()));
  }
  // Charged before anything is prepared; given back if preparing fails, or
  // when the graph is destroyed.
  WARPD_ASSIGN_OR_RETURN(QuotaHold hold,
                         QuotaHold::Take(session.tenant()->graph_commands(), static_cast<uint64_t>(commands.size())));
  ArrayResolver arrays(session);
  std::vector<std::unique_ptr<Command>> out;
  out.reserve(commands.size());
  for (int i = 0; i < commands.size(); ++i) {
    const v1::Command& c = commands[i];
    if (c.kind_case() != v1::Command::kLaunch && c.kind_case() != v1::Command::kCopy &&
        c.kind_case() != v1::Command::kFill && c.kind_case() != v1::Command::kBuildHashGrid &&
        c.kind_case() != v1::Command::kMatmul && c.kind_case() != v1::Command::kBuildTree &&
        c.kind_case() != v1::Command::kConditional) {
      return absl::InvalidArgumentError(absl::StrCat(
          "captured command ", i, ": a graph holds launches, copies, fills, hash grid and BVH builds, matmuls and "
          "conditionals only (free arrays, graphs and objects, and replay graphs, outside a capture)"));
    }
    auto prepared = PrepareOne(session, device, nullptr, c, arrays);
    if (!prepared.ok()) return prepared.status();
    out.push_back(*std::move(prepared));
  }
  return runtime::Graph::Create(device, std::move(out), std::move(hold));
}

}  // namespace warpd::server
