// Copies between a GPU array and a CPU array's host memory on the GPU's
// stream (PrepareCopy; the stand-in driver's cuda:0), both ways, and what
// such a copy refuses.
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/testing/cuda_commands_fixture.h"
#include "runtime/objects/testing/views.h"

namespace warpd::runtime {
namespace {

class HostCopyTest : public testing::CudaCommandsTest {
 protected:
  std::shared_ptr<const Array> MakeCpu(int64_t n) {
    auto layout = MakeArrayLayout(types::Scalar(types::ScalarKind::kInt32), {n});
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = cpu_.Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cpu", *layout, *buf);
  }
  static std::vector<int32_t> Host(const Array& a) {
    std::vector<int32_t> v(a.size_bytes() / 4);
    std::memcpy(v.data(), a.data(), a.size_bytes());
    return v;
  }

  CpuDevice cpu_{1};
};

TEST_F(HostCopyTest, BothWaysOnTheGpusStream) {
  // Larger than one staging chunk (8 MiB), so the copy goes in pieces.
  const int64_t n = (int64_t{9} << 20) / 4 + 3;
  auto host = MakeCpu(n), back = MakeCpu(n);
  auto gpu = Make(n);
  std::vector<int32_t> values(n);
  std::iota(values.begin(), values.end(), -7);
  std::memcpy(host->data(), values.data(), host->size_bytes());
  auto up = PrepareCopy(gpu, host, "cuda:0");
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_TRUE((*up)->Execute(*gpu_).ok());
  EXPECT_EQ(Read(*gpu), values);
  auto down = PrepareCopy(back, gpu, "cuda:0");
  ASSERT_TRUE(down.ok()) << down.status();
  ASSERT_TRUE((*down)->Execute(*gpu_).ok());
  EXPECT_EQ(Host(*back), values);
  // A strided GPU view to a contiguous CPU array: its elements in order.
  auto every_other = testing::ViewOf(gpu, 0, {5}, {8});
  auto five = MakeCpu(5);
  auto strided = PrepareCopy(five, every_other, "cuda:0");
  ASSERT_TRUE(strided.ok()) << strided.status();
  ASSERT_TRUE((*strided)->Execute(*gpu_).ok());
  EXPECT_EQ(Host(*five), (std::vector<int32_t>{-7, -5, -3, -1, 1}));
}

TEST_F(HostCopyTest, WhatItRefuses) {
  auto host = MakeCpu(10);
  auto gpu = Make(10);
  // On the CPU's stream: the GPU array is not there.
  auto on_cpu = PrepareCopy(host, gpu, "cpu");
  EXPECT_EQ(on_cpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(cuda::testing::Has(on_cpu.status().message(), "copy source is on device 'cuda:0'")) << on_cpu.status();
  // A strided CPU side.
  auto strided = PrepareCopy(testing::ViewOf(gpu, 0, {5}, {4}), testing::ViewOf(host, 0, {5}, {8}), "cuda:0");
  EXPECT_EQ(strided.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(cuda::testing::Has(strided.status().message(), "must be contiguous")) << strided.status();
  // Shapes still match.
  auto shorter = PrepareCopy(MakeCpu(9), gpu, "cuda:0");
  EXPECT_EQ(shorter.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpd::runtime
