// CudaDevice's memory (cuda_device.h) on the stand-in driver: every data
// movement checked against CpuDevice's (cpu_device_test.cc checks that one
// against an element-by-element model) on the same arrays and views, the
// base's whole memory compared after each; allocation, charging, quotas,
// and the listed-only device's errors.
#include "runtime/device/cuda_device.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {
namespace {

using cuda::testing::FakeDriver;
using types::ScalarKind;

// One array twice: on the CPU and on cuda:0, with the same bytes.
struct Twin {
  std::shared_ptr<const Array> cpu, gpu;
};

class CudaDeviceTest : public cuda::testing::FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    cuda::CudaMemory::Options options;
    options.staging.chunk_bytes = 4096;  // several chunks per transfer
    options.staging.chunks = 2;
    absl::StatusOr<std::unique_ptr<CudaDevice>> d = CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], options);
    ASSERT_TRUE(d.ok()) << d.status();
    gpu_ = *std::move(d);
  }
  void TearDown() override {
    gpu_.reset();  // after every array the test made
    FakeCudaTest::TearDown();
  }

  std::shared_ptr<const Array> Make(Device& device, const std::vector<int64_t>& shape) {
    auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kInt32), shape);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = device.Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return std::make_shared<Array>(device.name(), *layout, *buf);
  }
  // A (6, 10) int32 array on both devices, byte i holding (i * seed) mod 251.
  Twin Base(int seed = 1, std::vector<int64_t> shape = {6, 10}) {
    Twin t{Make(cpu_, shape), Make(*gpu_, shape)};
    std::vector<std::byte> bytes(t.cpu->size_bytes());
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(i * seed % 251);
    EXPECT_TRUE(cpu_.Upload(*t.cpu, 0, bytes).ok());
    EXPECT_TRUE(gpu_->Upload(*t.gpu, 0, bytes).ok());
    return t;
  }
  static std::shared_ptr<const Array> View(const std::shared_ptr<const Array>& base, uint64_t offset,
                                           std::vector<int64_t> shape, std::vector<int64_t> strides) {
    ViewRequest request;
    request.offset_bytes = offset;
    request.shape = shape;
    request.strides = strides;
    auto v = MakeViewLayout(*base, request, uint64_t{1} << 30);
    EXPECT_TRUE(v.ok()) << v.status();
    return std::make_shared<Array>(base->device(), v->layout, base->buffer(), v->byte_offset);
  }
  // The views every test runs over: the whole array, a column pair, a
  // strided sub-block, a transposed view, a broadcast row.
  static constexpr int kShapes = 5;
  static Twin Shape(const Twin& base, int which) {
    auto view = [&](const std::shared_ptr<const Array>& b) -> std::shared_ptr<const Array> {
      switch (which) {
        case 0: return b;
        case 1: return View(b, 4, {6, 2}, {40, 4});
        case 2: return View(b, 44, {2, 3}, {80, 12});
        case 3: return View(b, 0, {10, 6}, {4, 40});
        default: return View(b, 40, {3, 10}, {0, 4});
      }
    };
    return {view(base.cpu), view(base.gpu)};
  }
  // Both bases' whole memory is the same.
  void ExpectSame(const Twin& base, const std::string& what) {
    std::vector<std::byte> want(base.cpu->size_bytes()), got(base.gpu->size_bytes(), std::byte{0xEE});
    ASSERT_TRUE(cpu_.Download(*base.cpu, 0, absl::MakeSpan(want)).ok());
    ASSERT_TRUE(gpu_->Download(*base.gpu, 0, absl::MakeSpan(got)).ok()) << what;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << ": byte " << i;
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  CpuDevice cpu_{1};
  std::unique_ptr<CudaDevice> gpu_;
};

TEST_F(CudaDeviceTest, MemoryIsDeviceMemoryAndZeroed) {
  EXPECT_EQ(gpu_->name(), "cuda:0");
  EXPECT_EQ(gpu_->info().unavailable, "");
  auto a = Make(*gpu_, {1000});
  EXPECT_EQ(a->data(), nullptr);  // the host cannot address it
  EXPECT_NE(a->address(), 0u);
  EXPECT_EQ(a->buffer()->cpu(), nullptr);
  unsigned char desc[64];
  a->WriteDescriptor(desc);
  uint64_t described = 0;
  std::memcpy(&described, desc, sizeof(described));  // wp::array_t::data comes first
  EXPECT_EQ(described, a->address());
  std::vector<std::byte> got(a->size_bytes(), std::byte{0xEE});
  ASSERT_TRUE(gpu_->Download(*a, 0, absl::MakeSpan(got)).ok());
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](std::byte b) { return b == std::byte{0}; }));
}

TEST_F(CudaDeviceTest, FreedMemoryComesBackZeroedWhateverTheFill) {
  std::vector<std::byte> secret(4096, std::byte{0x5A});
  {
    auto a = Make(*gpu_, {1024});
    ASSERT_TRUE(gpu_->Upload(*a, 0, secret).ok());
  }
  auto buf = gpu_->Allocate(4096, "t", &pool_, Fill::kAny);
  ASSERT_TRUE(buf.ok()) << buf.status();
  auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kUInt8), {4096});
  ASSERT_TRUE(layout.ok());
  Array b("cuda:0", *layout, *buf);
  std::vector<std::byte> got(4096, std::byte{0xEE});
  ASSERT_TRUE(gpu_->Download(b, 0, absl::MakeSpan(got)).ok());
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](std::byte x) { return x == std::byte{0}; }));
}

TEST_F(CudaDeviceTest, BytesAreChargedUntilTheLastHolderGoes) {
  const uint64_t before = pool_.account()->used();
  auto a = Make(*gpu_, {1 << 16});
  EXPECT_GE(pool_.account()->used(), before + (uint64_t{1} << 18));
  auto view = View(a, 8, {16}, {4});
  a.reset();
  EXPECT_GE(pool_.account()->used(), before + (uint64_t{1} << 18));  // the view holds the buffer
  view.reset();
  EXPECT_EQ(pool_.account()->used(), before);
  // A limit refuses before the driver is asked.
  pool_.account()->set_limit(pool_.account()->used() + 1000);
  EXPECT_EQ(gpu_->Allocate(4096, "t", &pool_).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(gpu_->Allocate(16, "t", nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaDeviceTest, TheDevicesQuotaBoundsItsMemory) {
  cuda::CudaMemory::Options options;
  options.pool.quota_bytes = 1 << 20;
  gpu_.reset();
  auto d = CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], options);
  ASSERT_TRUE(d.ok()) << d.status();
  gpu_ = *std::move(d);
  EXPECT_EQ(gpu_->FreeMemoryBytes(), uint64_t{1} << 20);
  auto a = gpu_->Allocate(768 << 10, "t", &pool_);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(gpu_->FreeMemoryBytes(), uint64_t{256} << 10);
  EXPECT_EQ(gpu_->Allocate(512 << 10, "t", &pool_).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(CudaDeviceTest, UploadsAndDownloadsMatchTheCpu) {
  for (int which = 0; which < kShapes; ++which) {
    Twin base = Base();
    Twin a = Shape(base, which);
    const uint64_t size = a.cpu->size_bytes();
    for (uint64_t begin = 0; begin <= size; begin += 13) {
      for (uint64_t end = begin; end <= size; end += 29) {
        std::vector<std::byte> want(end - begin), got(end - begin, std::byte{0xEE});
        ASSERT_TRUE(cpu_.Download(*a.cpu, begin, absl::MakeSpan(want)).ok());
        ASSERT_TRUE(gpu_->Download(*a.gpu, begin, absl::MakeSpan(got)).ok());
        ASSERT_EQ(want, got) << which << " [" << begin << ", " << end << ")";
      }
    }
    std::vector<std::byte> in(size);
    for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(255 - i % 256);
    const uint64_t split = size / 3 + 1;
    for (Device* d : {static_cast<Device*>(&cpu_), static_cast<Device*>(gpu_.get())}) {
      const Array& x = d == &cpu_ ? *a.cpu : *a.gpu;
      ASSERT_TRUE(d->Upload(x, 0, absl::MakeConstSpan(in).subspan(0, split)).ok());
      ASSERT_TRUE(d->Upload(x, split, absl::MakeConstSpan(in).subspan(split)).ok());
    }
    ExpectSame(base, "upload " + std::to_string(which));
  }
}

TEST_F(CudaDeviceTest, LargeTransfersCrossTheStagingChunks) {
  Twin t = Base(7, {3, 10000});  // 120000 bytes through 4096-byte chunks
  ExpectSame(t, "upload");
  std::vector<std::byte> mid(50001);
  std::vector<std::byte> want(mid.size());
  ASSERT_TRUE(cpu_.Download(*t.cpu, 12345, absl::MakeSpan(want)).ok());
  ASSERT_TRUE(gpu_->Download(*t.gpu, 12345, absl::MakeSpan(mid)).ok());
  EXPECT_EQ(want, mid);
}

TEST_F(CudaDeviceTest, CopiesMatchTheCpu) {
  for (int d = 0; d < kShapes; ++d) {
    for (int s = 0; s < kShapes; ++s) {
      if (d == 4) continue;  // writing a broadcast view: its elements overlap (the last write wins)
      Twin dst_base = Base(1), src_base = Base(3);
      Twin dst = Shape(dst_base, d), src = Shape(src_base, s);
      const uint64_t n = std::min(dst.cpu->size_bytes(), src.cpu->size_bytes()) - 8;
      ASSERT_TRUE(cpu_.CopyRange(*dst.cpu, 3, *src.cpu, 5, n).ok());
      ASSERT_TRUE(gpu_->CopyRange(*dst.gpu, 3, *src.gpu, 5, n).ok());
      ExpectSame(dst_base, "copy " + std::to_string(d) + " <- " + std::to_string(s));
      ExpectSame(src_base, "copy source");
    }
  }
}

TEST_F(CudaDeviceTest, ContiguousCopiesMayOverlap) {
  for (const auto& [dst, src] : {std::pair<uint64_t, uint64_t>{4, 0}, {0, 4}, {0, 0}, {120, 0}}) {
    Twin t = Base();
    ASSERT_TRUE(cpu_.CopyRange(*t.cpu, dst, *t.cpu, src, 100).ok());
    ASSERT_TRUE(gpu_->CopyRange(*t.gpu, dst, *t.gpu, src, 100).ok());
    ExpectSame(t, "overlapping copy " + std::to_string(dst) + " <- " + std::to_string(src));
  }
}

TEST_F(CudaDeviceTest, FillsMatchTheCpu) {
  // One byte and one repeated word take the driver's memsets; the others a
  // seed that is doubled on the device.
  const std::string patterns[] = {std::string(1, '\x5a'), std::string(4, '\0'), "abab", "ab", "abcd", "abcdefgh",
                                  "0123456789ab"};
  for (const std::string& pattern : patterns) {
    for (int which = 0; which < kShapes; ++which) {
      Twin base = Base();
      Twin a = Shape(base, which);
      const uint64_t offset = 4, n = (a.cpu->size_bytes() - offset) / pattern.size() * pattern.size();
      ASSERT_TRUE(cpu_.FillRange(*a.cpu, offset, n, pattern).ok());
      ASSERT_TRUE(gpu_->FillRange(*a.gpu, offset, n, pattern).ok());
      ExpectSame(base, "fill '" + pattern + "' " + std::to_string(which));
    }
  }
  // Larger than the seed: several doublings and a partial last copy.
  Twin big = Base(5, {7, 10001});
  ASSERT_TRUE(cpu_.FillRange(*big.cpu, 12, 279996, "0123456789ab").ok());
  ASSERT_TRUE(gpu_->FillRange(*big.gpu, 12, 279996, "0123456789ab").ok());
  ExpectSame(big, "large fill");
}

TEST_F(CudaDeviceTest, ErrorsAreStatusesAndMoveNothing) {
  Twin t = Base();
  const Array& a = *t.gpu;  // 240 bytes
  std::vector<std::byte> buf(16);
  EXPECT_EQ(gpu_->Download(a, 230, absl::MakeSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(gpu_->Upload(a, 230, absl::MakeConstSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(gpu_->Upload(a, ~uint64_t{0} - 4, absl::MakeConstSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(gpu_->CopyRange(a, 0, a, 200, 41).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(gpu_->FillRange(a, 0, 244, "abcd").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(gpu_->FillRange(a, 0, 10, "abcd").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu_->Download(*t.cpu, 0, absl::MakeSpan(buf)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu_->CopyRange(a, 0, *t.cpu, 0, 4).code(), absl::StatusCode::kInvalidArgument);
  std::atomic<bool> cancel{true};
  EXPECT_EQ(gpu_->FillRange(a, 0, 8, "abcd", &cancel).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(gpu_->CopyRange(a, 0, a, 8, 8, &cancel).code(), absl::StatusCode::kCancelled);
  ExpectSame(t, "after the errors");
  // Kernels are a later step.
  abi::CompiledKernel kernel{};
  wp::launch_ctx ctx{};
  EXPECT_EQ(gpu_->RunKernel(kernel, &ctx, nullptr).code(), absl::StatusCode::kUnimplemented);
}

TEST_F(CudaDeviceTest, AListedDeviceRunsNothing) {
  CudaDevice listed(FakeDriver().devices()[0]);
  EXPECT_NE(listed.info().unavailable, "");
  EXPECT_EQ(listed.Allocate(16, "t", &pool_).status().code(), absl::StatusCode::kFailedPrecondition);
  Twin t = Base();
  auto on_listed = std::make_shared<Array>("cuda:0", t.gpu->layout(), t.gpu->buffer());
  std::vector<std::byte> buf(16);
  EXPECT_EQ(listed.Download(*on_listed, 0, absl::MakeSpan(buf)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(listed.FillRange(*on_listed, 0, 16, "abcd").code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace warpd::runtime
