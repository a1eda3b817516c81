#include "compiler/ir/diagnostic.h"

#include "absl/strings/cord.h"

namespace warpd::ir {

namespace {

// Payload type URLs: private to this file, never on the wire.
constexpr char kCategoryUrl[] = "warpd/ir/error-category";
constexpr char kLocationUrl[] = "warpd/ir/error-location";
constexpr char kTextUrl[] = "warpd/ir/error-text";

}  // namespace

absl::Status UserError(ErrorCategory category, std::string_view text) {
  return UserError(UserErrorParts{category, "", std::string(text)}, text);
}

absl::Status UserError(const UserErrorParts& parts, std::string_view message) {
  absl::Status st = absl::InvalidArgumentError(std::string(message));
  // absl::Cord from a string_view: this absl build exports no Cord(std::string&&).
  const char category = static_cast<char>('0' + static_cast<int>(parts.category));
  st.SetPayload(kCategoryUrl, absl::Cord(absl::string_view(&category, 1)));
  if (!parts.location.empty()) st.SetPayload(kLocationUrl, absl::Cord(absl::string_view(parts.location)));
  st.SetPayload(kTextUrl, absl::Cord(absl::string_view(parts.text)));
  return st;
}

UserErrorParts PartsOf(const absl::Status& status) {
  UserErrorParts parts;
  if (auto c = status.GetPayload(kCategoryUrl); c && c->size() == 1) {
    const int n = static_cast<int>(std::string(*c)[0] - '0');
    if (n >= 0 && n <= static_cast<int>(ErrorCategory::kIndex)) parts.category = static_cast<ErrorCategory>(n);
  }
  if (auto l = status.GetPayload(kLocationUrl)) parts.location = std::string(*l);
  if (auto t = status.GetPayload(kTextUrl))
    parts.text = std::string(*t);
  else
    parts.text = std::string(status.message());
  return parts;
}

}  // namespace warpd::ir
