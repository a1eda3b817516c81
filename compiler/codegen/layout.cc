#include "compiler/codegen/layout.h"

namespace warpd::compiler {

KernelLayout ComputeLayout(const ir::Module& module, const ir::Function& kernel) {
  KernelLayout out;
  out.name = kernel.name;
  out.display_name = kernel.display_name;
  out.tid_ndim = kernel.tid_ndim;
  out.file = module.FileOf(kernel.span);
  out.line = kernel.span.line;
  uint32_t offset = 0;
  for (const auto& p : kernel.params) {
    uint32_t align = static_cast<uint32_t>(p.type->align());
    uint32_t size = static_cast<uint32_t>(p.type->size());
    offset = (offset + align - 1) / align * align;
    out.params.push_back(ParamLayout{p.name, p.type, offset, size});
    offset += size;
    if (align > out.args_align) out.args_align = align;
  }
  out.args_size = (offset + out.args_align - 1) / out.args_align * out.args_align;
  return out;
}

}  // namespace warpd::compiler
