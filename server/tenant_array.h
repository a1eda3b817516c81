// warpd server: an array that a tenant owns.
//
// Every array a client makes (CreateArray, CreateView, a durable persistent
// array loaded at start-up) is counted in its tenant's `arrays` quota and its
// bookkeeping (Array::MetadataBytes: the object, its buffer's record, a
// struct dtype's type table) is charged to the account of the pool its data
// came from, beside the data's segments; both are given back when the last
// holder lets go (a handle, a queued command, a graph, a persistent name).
// Errors: the quota's or the account's RESOURCE_EXHAUSTED; nothing is held
// then. A view passes its base's buffer and its placement in it (checked
// by MakeViewLayout, array_view.h); its data was charged with the base.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "server/tenants/tenant.h"

namespace warpd::server {

absl::StatusOr<std::shared_ptr<const runtime::Array>> MakeTenantArray(const std::shared_ptr<Tenant>& tenant,
                                                                      const runtime::SegmentPool& pool,
                                                                      std::string device,
                                                                      const runtime::ArrayLayout& layout,
                                                                      std::shared_ptr<runtime::Buffer> buffer,
                                                                      uint64_t byte_offset = 0,
                                                                      std::shared_ptr<runtime::HeldArrays> held = nullptr);

}  // namespace warpd::server
