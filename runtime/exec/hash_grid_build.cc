#include "runtime/exec/hash_grid_build.h"

#include <atomic>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

namespace {

class HashGridBuildCommand final : public Command {
 public:
  HashGridBuildCommand(std::shared_ptr<HashGrid> grid, std::shared_ptr<const Array> points,
                       std::shared_ptr<const Array> groups, double radius,
                       std::shared_ptr<HashGrid::BuildBuffers> buffers)
      : grid_(std::move(grid)), points_(std::move(points)), groups_(std::move(groups)), radius_(radius),
        buffers_(std::move(buffers)) {}

  absl::Status Execute(Device&) override {
    // Not while a launch of the session may query it (GeometryObject::use_lock).
    absl::WriterMutexLock in_use(grid_->use_lock());
    return grid_->Build(*points_, groups_.get(), radius_, buffers_, &cancel_);
  }
  void Cancel() override { cancel_.store(true, std::memory_order_relaxed); }
  void Rearm() override { cancel_.store(false, std::memory_order_relaxed); }
  std::string Describe() const override { return "hash grid build"; }
  // Its buffers were allocated from the session's pool, which charged them.
  uint64_t HeldBytes() const override { return kBaseBytes + sizeof(*this) + sizeof(HashGrid::BuildBuffers); }

 private:
  const std::shared_ptr<HashGrid> grid_;
  const std::shared_ptr<const Array> points_, groups_;
  const double radius_;
  const std::shared_ptr<HashGrid::BuildBuffers> buffers_;
  std::atomic<bool> cancel_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Command>> PrepareHashGridBuild(std::shared_ptr<HashGrid> grid,
                                                              std::shared_ptr<const Array> points,
                                                              std::shared_ptr<const Array> groups, double radius,
                                                              const std::string& device, SegmentPool& pool,
                                                              SegmentPool* device_pool) {
  if (grid == nullptr || points == nullptr) return absl::InvalidArgumentError("hash grid build: no grid or points");
  if (grid->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash grid lives on '", grid->device(), "', not '", device, "'"));
  }
  if (absl::Status s = grid->CheckBuild(*points, groups.get(), radius); !s.ok()) return s;
  auto buffers = HashGrid::MakeBuildBuffers(static_cast<int64_t>(points->layout().num_elements), groups != nullptr,
                                            pool);
  if (!buffers.ok()) return buffers.status();
  if (grid->mirrored()) {
    if (device_pool == nullptr) return absl::FailedPreconditionError("hash grid build: no device memory to build in");
    if (absl::Status s = grid->PrepareMirroredBuild(**buffers, *points, groups.get(), pool, *device_pool); !s.ok()) {
      return s;
    }
  }
  return std::make_unique<HashGridBuildCommand>(std::move(grid), std::move(points), std::move(groups), radius,
                                                *std::move(buffers));
}

}  // namespace warpd::runtime
