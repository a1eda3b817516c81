#include "runtime/exec/tree_build.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "runtime/device/device.h"

namespace warpd::runtime {

namespace {

class TreeBuildCommand final : public Command {
 public:
  TreeBuildCommand(std::shared_ptr<TreeObject> object, bool refit, BvhSplit split, VertexArrays arrays)
      : object_(std::move(object)), refit_(refit), split_(split), arrays_(std::move(arrays)) {}

  absl::Status Execute(Device& device) override {
    // Not while a launch of the session may query it (GeometryObject::use_lock).
    absl::WriterMutexLock in_use(object_->use_lock());
    if (replaces()) return object_->SetArrays(arrays_);
    auto on_workers = [&device](int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
      device.HostParallelFor(n, grain, fn);
    };
    const ParallelFor parallel(on_workers);
    return refit_ ? object_->Refit(&cancel_, &parallel) : object_->Rebuild(split_, &cancel_, &parallel);
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override {
    if (replaces()) return absl::StrCat(ObjectKindName(object_->kind()), " arrays");
    return absl::StrCat(ObjectKindName(object_->kind()), refit_ ? " refit" : " build");
  }
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this); }

 private:
  bool replaces() const { return arrays_.points != nullptr || arrays_.velocities != nullptr; }

  const std::shared_ptr<TreeObject> object_;
  const bool refit_;
  const BvhSplit split_;
  const VertexArrays arrays_;
  std::atomic<bool> cancel_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareTreeBuild(std::shared_ptr<TreeObject> object, bool refit,
                                                          BvhSplit split, const std::string& device,
                                                          VertexArrays arrays) {
  if (object == nullptr) return absl::InvalidArgumentError("tree build: no object");
  if (object->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat(ObjectKindName(object->kind()), " lives on '", object->device(), "', not '", device, "'"));
  }
  const bool replaces = arrays.points != nullptr || arrays.velocities != nullptr || arrays.points_grad != nullptr ||
                        arrays.velocities_grad != nullptr;
  if (replaces && (!refit || object->kind() != wp::OBJECT_MESH)) {
    return absl::InvalidArgumentError("tree build: only a mesh's refit takes new points or velocities");
  }
  return std::make_unique<TreeBuildCommand>(std::move(object), refit, split, std::move(arrays));
}

}  // namespace warpd::runtime
