// warpd runtime tests: commands (launches, copies, fills) on cuda:0 of the
// stand-in driver, for the graph recording and stream batch tests. Test-only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/launch_module.h"
#include "runtime/device/cuda_device.h"
#include "runtime/exec/command.h"
#include "runtime/exec/launch.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"

namespace warpd::runtime::testing {

class CudaCommandsTest : public cuda::testing::FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    OpenGpu({});
  }
  void TearDown() override {
    gpu_.reset();
    FakeCudaTest::TearDown();
  }
  // (Re)opens cuda:0 with `launch`'s options (drop what uses the old one first).
  void OpenGpu(const CudaDevice::LaunchOptions& launch) {
    gpu_.reset();
    absl::StatusOr<std::unique_ptr<CudaDevice>> d =
        CudaDevice::Open(cuda::testing::FakeDriver(), cuda::testing::FakeDriver().devices()[0], {}, launch);
    ASSERT_TRUE(d.ok()) << d.status();
    gpu_ = *std::move(d);
  }

  std::shared_ptr<const Array> Make(int64_t n, types::ScalarKind kind = types::ScalarKind::kInt32) {
    auto layout = MakeArrayLayout(types::Scalar(kind), {n});
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = gpu_->Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>("cuda:0", *layout, *buf);
  }
  std::vector<int32_t> Read(const Array& a) {
    std::vector<int32_t> v(a.size_bytes() / 4);
    EXPECT_TRUE(gpu_->Download(a, 0, absl::MakeSpan(reinterpret_cast<std::byte*>(v.data()), a.size_bytes())).ok());
    return v;
  }
  static std::string Word(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
  // A launch of the test module's `kernel` ("none": no parameters) over n ids.
  std::unique_ptr<Command> Launch(int64_t n, uint32_t repeat = 1, const std::string& kernel = "none") {
    absl::StatusOr<std::unique_ptr<Command>> c = PrepareLaunch(module_, kernel, {n}, {}, "cuda:0", nullptr, repeat);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<Command> Fill(std::shared_ptr<const Array> a, int32_t v) { return FillBytes(std::move(a), Word(v)); }
  std::unique_ptr<Command> FillBytes(std::shared_ptr<const Array> a, std::string value) {
    absl::StatusOr<std::unique_ptr<Command>> c = PrepareFill(std::move(a), std::move(value), "cuda:0");
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<Command> Copy(std::shared_ptr<const Array> dst, std::shared_ptr<const Array> src) {
    absl::StatusOr<std::unique_ptr<Command>> c = PrepareCopy(std::move(dst), std::move(src), "cuda:0");
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  std::unique_ptr<CudaDevice> gpu_;
  std::shared_ptr<const abi::CompiledModule> module_ = std::make_shared<cuda::testing::LaunchTestModule>("commands");
};

}  // namespace warpd::runtime::testing
