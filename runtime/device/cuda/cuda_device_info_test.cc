#include "runtime/device/cuda/cuda_device_info.h"

#include "gtest/gtest.h"

namespace warpd::runtime::cuda {
namespace {

TEST(FormatGpuUuidTest, AsNvidiaSmiPrintsIt) {
  CUuuid u = {{0x5f, 0x3e, 0x8a, 0x1c, 0x02, 0xb4, 0x7d, 0x9e, 0xa1, 0x00, 0xff, 0x10, 0x2c, 0x3d, 0x4e, 0x0a}};
  EXPECT_EQ(FormatGpuUuid(u), "GPU-5f3e8a1c-02b4-7d9e-a100-ff102c3d4e0a");
  CUuuid zero = {};
  EXPECT_EQ(FormatGpuUuid(zero), "GPU-00000000-0000-0000-0000-000000000000");
}

TEST(CudaDeviceInfoTest, Arch) {
  CudaDeviceInfo d;
  d.cc_major = 12;
  d.cc_minor = 0;
  EXPECT_EQ(d.arch(), "sm_120");
  d.cc_major = 8;
  d.cc_minor = 9;
  EXPECT_EQ(d.arch(), "sm_89");
}

}  // namespace
}  // namespace warpd::runtime::cuda
