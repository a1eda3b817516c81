#include "server/info_messages.h"

#include "compiler/ir/from_proto.h"

namespace warpd::server {

void FillDeviceInfo(const runtime::Device& device, v1::DeviceInfo* out) {
  const runtime::DeviceInfo& in = device.info();
  out->set_name(in.name);
  out->set_alias(in.alias);
  out->set_kind(in.kind);
  out->set_arch(in.arch);
  out->set_uuid(in.uuid);
  out->set_memory_bytes(in.memory_bytes);
  out->set_sm_count(in.sm_count);
  out->set_unavailable(in.unavailable);
  out->set_free_bytes(device.FreeMemoryBytes());
  out->set_mempool_release_threshold(in.mempool_release_threshold);
}

void FillPersistentInfo(const std::string& name, const runtime::Array& array, bool durable,
                        v1::PersistentArrayInfo* out) {
  out->set_name(name);
  *out->mutable_dtype() = ir::TypeToProto(array.dtype());
  for (int64_t s : array.shape()) out->add_shape(s);
  out->set_size_bytes(array.size_bytes());
  out->set_durable(durable);
  out->set_device(array.device());
}

}  // namespace warpd::server
