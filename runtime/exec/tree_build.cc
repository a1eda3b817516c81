#include "runtime/exec/tree_build.h"

#include <atomic>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

namespace {

class TreeBuildCommand final : public Command {
 public:
  TreeBuildCommand(std::shared_ptr<TreeObject> object, bool refit, BvhSplit split, std::shared_ptr<const Array> points,
                   std::shared_ptr<const Array> velocities)
      : object_(std::move(object)),
        refit_(refit),
        split_(split),
        points_(std::move(points)),
        velocities_(std::move(velocities)) {}

  absl::Status Execute(Device&) override {
    if (points_ != nullptr || velocities_ != nullptr) return object_->SetArrays(points_, velocities_);
    return refit_ ? object_->Refit(&cancel_) : object_->Rebuild(split_, &cancel_);
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override {
    if (points_ != nullptr || velocities_ != nullptr) return absl::StrCat(ObjectKindName(object_->kind()), " arrays");
    return absl::StrCat(ObjectKindName(object_->kind()), refit_ ? " refit" : " build");
  }
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this); }

 private:
  const std::shared_ptr<TreeObject> object_;
  const bool refit_;
  const BvhSplit split_;
  const std::shared_ptr<const Array> points_, velocities_;
  std::atomic<bool> cancel_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareTreeBuild(std::shared_ptr<TreeObject> object, bool refit,
                                                          BvhSplit split, const std::string& device,
                                                          std::shared_ptr<const Array> points,
                                                          std::shared_ptr<const Array> velocities) {
  if (object == nullptr) return absl::InvalidArgumentError("tree build: no object");
  if (object->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat(ObjectKindName(object->kind()), " lives on '", object->device(), "', not '", device, "'"));
  }
  if ((points != nullptr || velocities != nullptr) && (!refit || object->kind() != wp::OBJECT_MESH)) {
    return absl::InvalidArgumentError("tree build: only a mesh's refit takes new points or velocities");
  }
  return std::make_unique<TreeBuildCommand>(std::move(object), refit, split, std::move(points), std::move(velocities));
}

}  // namespace warpd::runtime
