#include "runtime/exec/tree_build.h"

#include <atomic>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

namespace {

class TreeBuildCommand final : public Command {
 public:
  TreeBuildCommand(std::shared_ptr<TreeObject> object, bool refit, BvhSplit split)
      : object_(std::move(object)), refit_(refit), split_(split) {}

  absl::Status Execute(Device&) override {
    return refit_ ? object_->Refit(&cancel_) : object_->Rebuild(split_, &cancel_);
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override {
    return absl::StrCat(ObjectKindName(object_->kind()), refit_ ? " refit" : " build");
  }
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this); }

 private:
  const std::shared_ptr<TreeObject> object_;
  const bool refit_;
  const BvhSplit split_;
  std::atomic<bool> cancel_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareTreeBuild(std::shared_ptr<TreeObject> object, bool refit,
                                                          BvhSplit split, const std::string& device) {
  if (object == nullptr) return absl::InvalidArgumentError("tree build: no object");
  if (object->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat(ObjectKindName(object->kind()), " lives on '", object->device(), "', not '", device, "'"));
  }
  return std::make_unique<TreeBuildCommand>(std::move(object), refit, split);
}

}  // namespace warpd::runtime
