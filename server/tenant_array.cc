#include "server/tenant_array.h"

#include <utility>

#include "runtime/memory/memory_charge.h"

namespace warpd::server {

absl::StatusOr<std::shared_ptr<const runtime::Array>> MakeTenantArray(const std::shared_ptr<Tenant>& tenant,
                                                                      const runtime::SegmentPool& pool,
                                                                      std::string device,
                                                                      const runtime::ArrayLayout& layout,
                                                                      std::shared_ptr<runtime::Buffer> buffer,
                                                                      uint64_t byte_offset,
                                                                      std::shared_ptr<runtime::HeldArrays> held) {
  auto array = std::make_unique<runtime::Array>(std::move(device), layout, std::move(buffer), byte_offset,
                                                std::move(held));
  absl::StatusOr<runtime::MemoryCharge> charge = pool.Charge(array->MetadataBytes());
  if (!charge.ok()) return charge.status();
  if (absl::Status s = tenant->arrays().Acquire(); !s.ok()) return s;
  std::shared_ptr<const runtime::Array> counted(array.release(), [tenant](const runtime::Array* a) {
    delete a;
    tenant->arrays().Release();
  });
  return runtime::WithCharge(std::move(counted), *std::move(charge));
}

}  // namespace warpd::server
