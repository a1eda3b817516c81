#include "runtime/exec/stream_wait.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {
namespace {

class StreamWait final : public Command {
 public:
  StreamWait(const std::shared_ptr<Stream>& target, uint64_t sequence)
      : prerequisite_{target, sequence}, device_(target->device()->name()) {}

  const Prerequisite* prerequisite() const override { return &prerequisite_; }
  // Met by the time it runs (the stream does not run it before).
  absl::Status Execute(Device&) override { return absl::OkStatus(); }
  std::string Describe() const override {
    return absl::StrCat("wait for a stream on ", device_, " up to command ", prerequisite_.sequence);
  }

 private:
  const Prerequisite prerequisite_;
  const std::string device_;
};

}  // namespace

std::unique_ptr<Command> MakeStreamWait(const std::shared_ptr<Stream>& target, uint64_t sequence) {
  return std::make_unique<StreamWait>(target, sequence);
}

}  // namespace warpd::runtime
