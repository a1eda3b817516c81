// warpd runtime tests: a module as the compiler makes one for CUDA, for
// launches on the stand-in driver (testing/fake_libcuda.c), shared by the
// device's tests and the graph replay tests. Test-only.
#pragma once

#include <string>

#include "common/abi/compiled_module.h"

namespace warpd::runtime::cuda::testing {

// What NVRTC emits for these entries' parameter lists (docs/launch_abi.md):
// scale(a: array(float32), s: float32), a 72-byte block, its adjoint, a
// kernel whose block travels by pointer, and one without parameters.
inline constexpr const char* kLaunchTestPtx = R"(//
.version 8.0
.target sm_90
.address_size 64

.visible .entry wpk_scale_cuda(
	.param .u64 wpk_scale_cuda_param_0,
	.param .align 8 .b8 wpk_scale_cuda_param_1[72]
)
{
	ret;
}

.visible .entry wpk_scale_adj_cuda(
	.param .u64 wpk_scale_adj_cuda_param_0,
	.param .align 8 .b8 wpk_scale_adj_cuda_param_1[72],
	.param .align 8 .b8 wpk_scale_adj_cuda_param_2[72]
)
{
	ret;
}

.visible .entry wpk_big_cuda(
	.param .u64 wpk_big_cuda_param_0,
	.param .u64 wpk_big_cuda_param_1
)
{
	ret;
}

.visible .entry wpk_none_cuda(
	.param .u64 wpk_none_cuda_param_0,
	.param .align 4 .b8 wpk_none_cuda_param_1[4]
)
{
	ret;
}
)";

// A module as the compiler makes one for CUDA (compiler_test checks that
// the compiler's PTX declares these parameter lists).
class LaunchTestModule : public abi::CompiledModule {
 public:
  explicit LaunchTestModule(std::string key = "launch-test") {
    cache_key_ = std::move(key);
    target_ = abi::Target::kCuda;
    cuda_image_ = kLaunchTestPtx;
    cuda_arch_ = 90;
    auto kernel = [](const char* name, uint32_t args_size, uint32_t align, bool adjoint) {
      abi::CompiledKernel k;
      k.layout.name = k.layout.display_name = name;
      k.layout.args_size = args_size;
      k.layout.args_align = align;
      k.cuda_entry = std::string("wpk_") + name + "_cuda";
      if (adjoint) k.cuda_adjoint = std::string("wpk_") + name + "_adj_cuda";
      return k;
    };
    kernels_ = {kernel("scale", 72, 8, true), kernel("big", 40000, 8, false), kernel("none", 0, 1, false)};
  }
};

}  // namespace warpd::runtime::cuda::testing
