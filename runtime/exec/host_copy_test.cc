// Copies between a GPU array and a CPU array's host memory on the GPU's
// stream (PrepareCopy; the stand-in driver's cuda:0), both ways, and what
// such a copy refuses.
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
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

  // The stand-in's cuda:1 beside the fixture's cuda:0 (freed before the
  // fixture's checks), found by Find as a stream's device lookup would.
  void OpenSecondGpu() {
    absl::StatusOr<std::unique_ptr<CudaDevice>> d =
        CudaDevice::Open(cuda::testing::FakeDriver(), cuda::testing::FakeDriver().devices()[1], {}, {});
    ASSERT_TRUE(d.ok()) << d.status();
    other_ = *std::move(d);
  }
  absl::StatusOr<Device*> Find(const std::string& name) {
    if (name == "cuda:1" && other_ != nullptr) return other_.get();
    return absl::NotFoundError(name);
  }
  // An int32 array of n elements on cuda:1.
  std::shared_ptr<Array> MakeOnSecond(int64_t n) {
    auto layout = MakeArrayLayout(types::Scalar(types::ScalarKind::kInt32), {n});
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = other_->Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cuda:1", *layout, *buf);
  }
  void TearDown() override {
    other_.reset();
    testing::CudaCommandsTest::TearDown();
  }

  CpuDevice cpu_{1};
  std::unique_ptr<CudaDevice> other_;
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

// A source GPU whose context was lost behind this device's back (another
// user of it hit a sticky error) fails the copy as its own error: the
// destination GPU stays healthy, the source is marked lost, and recovers
// once nothing holds it.
TEST_F(HostCopyTest, ALostSourceGpuFailsTheCopyNotTheDestination) {
  ASSERT_NO_FATAL_FAILURE(OpenSecondGpu());
  auto find = [this](const std::string& name) { return Find(name); };
  const DeviceLookup devices(find);
  auto src = MakeOnSecond(64);
  auto dst = Make(64);
  {
    absl::StatusOr<std::unique_ptr<cuda::CudaContext>> ctx1 =
        cuda::CudaContext::Create(cuda::testing::FakeDriver(), 1);
    ASSERT_TRUE(ctx1.ok()) << ctx1.status();
    fake().fail("cuStreamCreate", 700, 0);  // CUDA_ERROR_ILLEGAL_ADDRESS: sticky, cuda:1's context is lost
    EXPECT_FALSE(cuda::CudaStream::Create(**ctx1).ok());
  }
  ASSERT_TRUE(other_->healthy());  // it does not know yet
  auto copy = PrepareCopy(dst, src, "cuda:0", &devices);
  ASSERT_TRUE(copy.ok()) << copy.status();
  const absl::Status s = (*copy)->Execute(*gpu_);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(cuda::testing::Has(s.message(), "cuda:1")) << s;
  EXPECT_TRUE(gpu_->healthy());
  EXPECT_FALSE(other_->healthy());
  // cuda:0 serves on.
  auto again = Make(64);
  EXPECT_TRUE(gpu_->CopyRange(*again, 0, *dst, 0, dst->size_bytes()).ok());
  copy->reset();
  src.reset();
  EXPECT_TRUE(other_->Recover().ok());
}

// From one GPU into another, on either one's stream (PrepareCopy with a
// device lookup): contiguous arrays device to device (cuMemcpyPeerAsync),
// strided views through host memory; the stand-in's cuda:1 as the source.
TEST_F(HostCopyTest, BetweenTwoGpusOnEithersStream) {
  ASSERT_NO_FATAL_FAILURE(OpenSecondGpu());
  auto find = [this](const std::string& name) { return Find(name); };
  const DeviceLookup devices(find);
  // Over two pieces.
  const int64_t n = int64_t(kPeerCopyPieceBytes / 4) + 5;
  auto src = MakeOnSecond(n);
  std::vector<int32_t> values(n);
  std::iota(values.begin(), values.end(), 11);
  ASSERT_TRUE(other_->Upload(*src, 0, {reinterpret_cast<const std::byte*>(values.data()), src->size_bytes()}).ok());
  auto dst = Make(n);
  auto copy = PrepareCopy(dst, src, "cuda:0", &devices);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->Describe(), "copy between GPUs");
  const int peer_before = fake().peer_copies();
  ASSERT_TRUE((*copy)->Execute(*gpu_).ok());
  EXPECT_EQ(Read(*dst), values);
  EXPECT_EQ(fake().peer_copies(), peer_before + 1);  // one copy, device to device
  // Strided views on both sides: their elements in order (through the host).
  auto five = Make(10);
  auto into = PrepareCopy(testing::ViewOf(five, 4, {5}, {8}), testing::ViewOf(src, 0, {5}, {12}), "cuda:0", &devices);
  ASSERT_TRUE(into.ok()) << into.status();
  ASSERT_TRUE((*into)->Execute(*gpu_).ok());
  EXPECT_EQ(fake().peer_copies(), peer_before + 1);
  EXPECT_EQ(Read(*five), (std::vector<int32_t>{0, 11, 0, 14, 0, 17, 0, 20, 0, 23}));
  // A cancel before it runs stops it.
  auto cancelled = PrepareCopy(dst, src, "cuda:0", &devices);
  ASSERT_TRUE(cancelled.ok());
  (*cancelled)->Cancel();
  EXPECT_EQ((*cancelled)->Execute(*gpu_).code(), absl::StatusCode::kCancelled);
  // Without a lookup (a graph), on the source's stream, or from an unknown device: refused.
  auto no_lookup = PrepareCopy(dst, src, "cuda:0");
  EXPECT_EQ(no_lookup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(cuda::testing::Has(no_lookup.status().message(), "not captured in a graph")) << no_lookup.status();
  // On the source's stream (Warp's copy on a stream of the source's device):
  // this stream's GPU reads, the other uploads.
  auto back = Make(n);
  ASSERT_TRUE(gpu_->CopyRange(*back, 0, *dst, 0, dst->size_bytes()).ok());
  auto other_dst = MakeOnSecond(n);
  auto pushed = PrepareCopy(other_dst, back, "cuda:0", &devices);
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  ASSERT_TRUE((*pushed)->Execute(*gpu_).ok());
  EXPECT_EQ(fake().peer_copies(), peer_before + 2);  // on the other GPU's stream
  std::vector<int32_t> got(n);
  ASSERT_TRUE(other_->Download(*other_dst, 0, {reinterpret_cast<std::byte*>(got.data()), other_dst->size_bytes()}).ok());
  EXPECT_EQ(got, values);
  // Neither side on the stream's device.
  EXPECT_EQ(PrepareCopy(other_dst, src, "cuda:0", &devices).status().code(), absl::StatusCode::kInvalidArgument);
  auto nowhere = std::make_shared<Array>("cuda:7", src->layout(), src->buffer());
  EXPECT_EQ(PrepareCopy(dst, nowhere, "cuda:0", &devices).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace warpd::runtime
