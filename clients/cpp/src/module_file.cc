// Module files: what the Python client's warpd.save_module writes, the
// serialized warpd.v1.LoadModuleRequest it would send (no session, no devices).
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "warpd/client/client.h"

namespace warpd {

absl::StatusOr<v1::LoadModuleRequest> ReadModuleFile(const std::string& path) {
  constexpr std::streamoff kMaxBytes = 256 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open module file ", path));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0 || size > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrCat("module file ", path, " is larger than 256 MiB"));
  }
  in.seekg(0);
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), size);
  if (!in) return absl::DataLossError(absl::StrCat("cannot read module file ", path));
  v1::LoadModuleRequest request;
  if (!request.ParseFromString(data) || !request.has_module() || request.module().functions_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a warpd module file (a serialized warpd.v1.LoadModuleRequest with a module, as "
              "warpd.save_module writes)"));
  }
  return request;
}

}  // namespace warpd
