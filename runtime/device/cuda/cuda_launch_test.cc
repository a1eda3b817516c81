#include "runtime/device/cuda/cuda_launch.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/cuda_module.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/test_ptx.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

TEST(CudaGridStrideDimsTest, BlocksOf256OrTheKernelsAndEnoughOfThem) {
  struct Case {
    uint64_t threads;
    unsigned block_dim, max_blocks;
    unsigned grid, block;
  };
  const Case cases[] = {
      {0, 0, 0, 0, 256},                  // nothing to launch
      {1, 0, 0, 1, 256},
      {256, 0, 0, 1, 256},
      {257, 0, 0, 2, 256},
      {1000000, 0, 0, 3907, 256},
      {1000, 64, 0, 16, 64},              // the kernel's block_dim
      {1000, 1024, 0, 1, 1024},
      {1000000, 256, 100, 100, 256},      // capped: grid-stride covers the rest
      {uint64_t{1} << 50, 0, 0, 2147483647u, 256},  // CUDA's grid x limit
  };
  for (const Case& c : cases) {
    absl::StatusOr<LaunchDims> d = GridStrideDims(c.threads, c.block_dim, c.max_blocks);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->grid, c.grid) << c.threads << " threads, block " << c.block_dim;
    EXPECT_EQ(d->block, c.block) << c.threads << " threads, block " << c.block_dim;
  }
  EXPECT_EQ(GridStrideDims(10, 2048).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaKernelArgsTest, ValuesAreCopiedAlignedAndPointedTo) {
  KernelArgs args;
  const char c = 'x';
  const double d = 2.5;
  struct alignas(16) Block {
    float v[4];
  } block{{1, 2, 3, 4}};
  args.Add(c);
  args.Add(d);
  args.Add(block);
  args.Add(&c, 0, 1);  // an empty struct
  ASSERT_EQ(args.count(), 4u);
  void** p = args.pointers();
  EXPECT_EQ(*static_cast<char*>(p[0]), 'x');
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[1]) % alignof(double), 0u);
  EXPECT_EQ(*static_cast<double*>(p[1]), 2.5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[2]) % 16, 0u);
  EXPECT_EQ(std::memcmp(p[2], &block, sizeof(block)), 0);
}

class CudaLaunchTest : public testing::FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    ASSERT_NE(stream_ = Keep(CudaStream::Create(ctx())), nullptr);
    ASSERT_NE(module_ = Keep(CudaModule::Load(ctx(), testing::kSaxpyPtx)), nullptr);
  }
  void TearDown() override {
    module_.reset();
    stream_.reset();
    FakeCudaTest::TearDown();
  }
  // Launches wpk_saxpy_cuda over `threads` ids with a recognisable block.
  absl::Status LaunchSaxpy(uint64_t threads) {
    absl::StatusOr<CUfunction> f = module_->Function("wpk_saxpy_cuda");
    if (!f.ok()) return f.status();
    absl::StatusOr<LaunchDims> dims = GridStrideDims(threads);
    if (!dims.ok()) return dims.status();
    struct {
      uint64_t size[4];
    } launch_ctx{{threads, 1, 1, 1}};
    const CUdeviceptr x = 0x1000;
    const float a = 3.0f;
    KernelArgs args;
    args.Add(launch_ctx);
    args.Add(x);
    args.Add(a);
    return Launch(*stream_, *f, "wpk_saxpy_cuda", *dims, args);
  }

  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CudaModule> module_;
};

TEST_F(CudaLaunchTest, TheDriverGetsTheDimensionsAndTheArgumentValues) {
  ASSERT_TRUE(LaunchSaxpy(1000).ok());
  EXPECT_EQ(fake().launches(), 0) << "queued, not run yet";
  ASSERT_TRUE(stream_->Synchronize().ok());
  ASSERT_EQ(fake().launches(), 1);
  char name[128];
  unsigned dims[7];
  unsigned char params[64];
  long n = fake().launch(0, name, sizeof(name), dims, params, sizeof(params));
  EXPECT_EQ(std::string(name), "wpk_saxpy_cuda");
  EXPECT_EQ(dims[0], 4u);
  EXPECT_EQ(dims[1], 1u);
  EXPECT_EQ(dims[3], 256u);
  EXPECT_EQ(dims[6], 0u);
  ASSERT_EQ(n, 44);  // 32 + 8 + 4, as the PTX lays them out
  uint64_t size0, x;
  float a;
  std::memcpy(&size0, params, 8);
  std::memcpy(&x, params + 32, 8);
  std::memcpy(&a, params + 40, 4);
  EXPECT_EQ(size0, 1000u);
  EXPECT_EQ(x, 0x1000u);
  EXPECT_EQ(a, 3.0f);

  // An empty launch queues nothing; a kernel without parameters takes none.
  ASSERT_TRUE(LaunchSaxpy(0).ok());
  absl::StatusOr<CUfunction> empty = module_->Function("wpk_empty_cuda");
  ASSERT_TRUE(empty.ok());
  KernelArgs none;
  ASSERT_TRUE(Launch(*stream_, *empty, "wpk_empty_cuda", LaunchDims{1, 32}, none).ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 2);
}

TEST_F(CudaLaunchTest, LaunchErrorsNameTheKernel) {
  absl::StatusOr<CUfunction> f = module_->Function("wpk_saxpy_cuda");
  ASSERT_TRUE(f.ok());
  KernelArgs none;
  absl::Status s = Launch(*stream_, *f, "wpk_saxpy_cuda", LaunchDims{1, 2048}, none);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(s.message(), "cuLaunchKernel(wpk_saxpy_cuda, 1x2048) (cuda:0): FAKE_CUDA_ERROR_1")) << s;
  fake().fail("cuLaunchKernel", 701, 0);  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
  s = LaunchSaxpy(10);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_FALSE(ctx().poisoned());
}

TEST_F(CudaLaunchTest, AModuleWithQueuedLaunchesIsNotUnloaded) {
  ASSERT_TRUE(LaunchSaxpy(10).ok());
  // Undefined in the driver; the stand-in refuses it, so an owner that
  // forgets to synchronize first shows in tests.
  absl::Status s = ctx().Call("cuModuleUnload", [&] { return api().cuModuleUnload(module_->get()); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;  // CUDA_ERROR_ILLEGAL_STATE
  ASSERT_TRUE(stream_->Synchronize().ok());
  module_.reset();
  EXPECT_EQ(fake().live("module"), 0);
}

TEST_F(CudaLaunchTest, EventsChargeTheKernelsDeviceTime) {
  fake().set_launch_ms(3.0);
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(ctx());
  absl::StatusOr<CudaEvent> end = CudaEvent::Create(ctx());
  ASSERT_TRUE(start.ok() && end.ok());
  ASSERT_TRUE(start->Record(*stream_).ok());
  ASSERT_TRUE(LaunchSaxpy(100).ok());
  ASSERT_TRUE(LaunchSaxpy(100).ok());
  ASSERT_TRUE(end->Record(*stream_).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*start, *end);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(absl::ToDoubleMilliseconds(*t), 6.0, 1e-3);
}

// The whole story of a faulting kernel: the launch succeeds, the stream's
// synchronization reports the illegal address, the context is poisoned
// (every later operation fails fast naming that error), and once the users
// are gone the context is reset and works again.
TEST_F(CudaLaunchTest, AFaultingKernelPoisonsTheContextUntilItIsRecovered) {
  absl::StatusOr<std::unique_ptr<CudaMemoryPool>> pool = CudaMemoryPool::Create(ctx(), {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  absl::StatusOr<CUdeviceptr> buffer = (*pool)->Allocate(1024, *stream_);
  ASSERT_TRUE(buffer.ok()) << buffer.status();

  fake().fault_next_launch(700);  // CUDA_ERROR_ILLEGAL_ADDRESS
  ASSERT_TRUE(LaunchSaxpy(1000).ok()) << "the fault comes later, as on a GPU";
  absl::Status sync = stream_->Synchronize();
  EXPECT_EQ(sync.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(Has(sync.message(), "cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_700")) << sync;
  EXPECT_TRUE(Has(sync.message(), "the device's CUDA context is lost")) << sync;
  EXPECT_TRUE(ctx().poisoned());
  EXPECT_EQ(fake().launches(), 0) << "it never completed";

  const absl::Status later[] = {LaunchSaxpy(10), stream_->Synchronize(), (*pool)->Allocate(8, *stream_).status(),
                                module_->Function("wpk_saxpy_cuda").status(),
                                CudaModule::Load(ctx(), testing::kSaxpyPtx).status()};
  for (const absl::Status& s : later) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_TRUE(Has(s.message(), "cuda:0 cannot run work")) << s;
    EXPECT_TRUE(Has(s.message(), "first error was: cuStreamSynchronize (cuda:0): FAKE_CUDA_ERROR_700")) << s;
  }
  EXPECT_EQ(ctx().Recover().code(), absl::StatusCode::kFailedPrecondition) << "users remain";

  // The device drops what its sessions held, then resets.
  EXPECT_EQ((*pool)->Free(*buffer, *stream_).code(), absl::StatusCode::kFailedPrecondition);
  pool->reset();
  module_.reset();
  stream_.reset();
  EXPECT_EQ(ctx().users(), 0);
  ASSERT_TRUE(ctx().Recover().ok());
  EXPECT_EQ(fake().sticky(0), 0);
  for (const char* kind : {"stream", "module", "pool", "device"}) EXPECT_EQ(fake().live(kind), 0) << kind;

  // And it runs work again.
  absl::StatusOr<CudaStream> s = CudaStream::Create(ctx());
  ASSERT_TRUE(s.ok()) << s.status();
  stream_ = std::make_unique<CudaStream>(*std::move(s));
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), testing::kSaxpyPtx);
  ASSERT_TRUE(m.ok()) << m.status();
  module_ = std::make_unique<CudaModule>(*std::move(m));
  ASSERT_TRUE(LaunchSaxpy(1000).ok());
  ASSERT_TRUE(stream_->Synchronize().ok());
  EXPECT_EQ(fake().launches(), 1);
}

}  // namespace
}  // namespace warpd::runtime::cuda
