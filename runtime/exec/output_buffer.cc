#include "runtime/exec/output_buffer.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

void OutputBuffer::Append(std::string text) {
  if (text.empty()) return;
  if (dropped_ > 0 || text_.size() + text.size() > max_bytes_) {
    dropped_ += text.size();
    return;
  }
  if (account_ != nullptr) {
    if (absl::Status s = account_->Charge(text.size()); !s.ok()) {
      refusal_ = std::string(s.message());
      dropped_ += text.size();
      return;
    }
    charged_ += text.size();
  }
  if (text_.empty()) {
    text_ = std::move(text);
  } else {
    text_ += text;
  }
}

std::string OutputBuffer::Take(std::string_view of, std::string_view why) {
  std::string out = std::exchange(text_, std::string());
  if (dropped_ > 0) {
    const absl::string_view reason = refusal_.empty() ? absl::string_view(why.data(), why.size()) : refusal_;
    absl::StrAppend(&out, "[warpd: ", dropped_, " bytes of kernel output", absl::string_view(of.data(), of.size()),
                    " dropped: ", reason, "]\n");
  }
  Clear();
  return out;
}

void OutputBuffer::Clear() {
  text_.clear();
  text_.shrink_to_fit();
  if (account_ != nullptr) account_->Release(charged_);
  charged_ = 0;
  dropped_ = 0;
  refusal_.clear();
}

}  // namespace warpd::runtime
