// warpd runtime tests: the stand-in driver (fake_libcuda.c) as the CUDA
// building blocks' tests use it. Test-only.
//
//   class MyTest : public FakeCudaTest {};   // cuda:0's context in ctx()
//   TEST_F(MyTest, X) { fake().fail("cuStreamSynchronize", 700, 0); ... }
//
// The library is loaded once per test process (WARPD_FAKE_LIBCUDA, set by
// CMake) and its state is shared by every test in it, so each test starts
// by clearing the fake's injections and settings and ends with every handle
// it made destroyed by its owner (TearDown checks, before it releases the
// context, whose last release would destroy them all).
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "warpd/native/launch.h"

namespace warpd::runtime::cuda::testing {

// Whether `text` contains `part` (for messages; no gmock here).
inline bool Has(absl::string_view text, absl::string_view part) { return text.find(part) != absl::string_view::npos; }

// The stand-in's test-only functions.
struct FakeCuda {
  int (*fail)(const char* call, int result, int skip) = nullptr;
  void (*fault_next_launch)(int result) = nullptr;
  void (*set_memory_limit)(int dev, size_t bytes) = nullptr;
  void (*set_launch_ms)(double ms) = nullptr;
  void (*reset_test_state)() = nullptr;
  int (*live)(const char* kind) = nullptr;
  int (*context_depth)() = nullptr;
  int (*sticky)(int dev) = nullptr;
  int (*pageable_copies)() = nullptr;
  int (*peer_copies)() = nullptr;
  int (*max_queued_copies)() = nullptr;
  int (*max_queued_kernels)() = nullptr;
  int (*launches)() = nullptr;
  long (*launch)(int index, char* name, size_t name_len, unsigned* dims, void* params, size_t capacity) = nullptr;
  int (*retained)(int ordinal) = nullptr;
  int (*write_on_next_launch)(int param, long deref, size_t offset, const void* bytes, size_t len) = nullptr;
  int (*copy_on_next_launch)(int src_param, size_t src_offset, int param, size_t offset, size_t len) = nullptr;
  // ... from the address stored `src_deref` bytes past src_param's, + src_offset.
  int (*copy_deref_on_next_launch)(int src_param, long src_deref, size_t src_offset, int param, size_t offset,
                                   size_t len) = nullptr;
  void (*hold_next_launch)(int param, size_t offset) = nullptr;
  void (*hold_launch_after)(int skip, int param, size_t offset) = nullptr;
};

// The process's stand-in driver, loaded on the first call (the test fails
// if it cannot be).
inline const CudaDriver& FakeDriver() {
  static const CudaDriver* const driver = [] {
    absl::StatusOr<std::unique_ptr<CudaDriver>> d = CudaDriver::Load(WARPD_FAKE_LIBCUDA);
    if (!d.ok()) {
      ADD_FAILURE() << d.status();
      std::abort();
    }
    return d->release();
  }();
  return *driver;
}

inline const FakeCuda& Fake() {
  static const FakeCuda fake = [] {
    FakeDriver();
    void* lib = dlopen(WARPD_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib == nullptr) std::abort();
    auto get = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr) std::abort();
    };
    FakeCuda f;
    get(f.fail, "warpd_fake_cuda_fail");
    get(f.fault_next_launch, "warpd_fake_cuda_fault_next_launch");
    get(f.set_memory_limit, "warpd_fake_cuda_set_memory_limit");
    get(f.set_launch_ms, "warpd_fake_cuda_set_launch_ms");
    get(f.reset_test_state, "warpd_fake_cuda_reset_test_state");
    get(f.live, "warpd_fake_cuda_live");
    get(f.context_depth, "warpd_fake_cuda_context_depth");
    get(f.sticky, "warpd_fake_cuda_sticky");
    get(f.pageable_copies, "warpd_fake_cuda_pageable_copies");
    get(f.peer_copies, "warpd_fake_cuda_peer_copies");
    get(f.max_queued_copies, "warpd_fake_cuda_max_queued_copies");
    get(f.max_queued_kernels, "warpd_fake_cuda_max_queued_kernels");
    get(f.launches, "warpd_fake_cuda_launches");
    get(f.launch, "warpd_fake_cuda_launch");
    get(f.retained, "warpd_fake_cuda_retained");
    get(f.write_on_next_launch, "warpd_fake_cuda_write_on_next_launch");
    get(f.copy_on_next_launch, "warpd_fake_cuda_copy_on_next_launch");
    get(f.copy_deref_on_next_launch, "warpd_fake_cuda_copy_deref_on_next_launch");
    get(f.hold_next_launch, "warpd_fake_cuda_hold_next_launch");
    get(f.hold_launch_after, "warpd_fake_cuda_hold_launch_after");
    return f;
  }();
  return fake;
}

// A test with cuda:0's context of the stand-in driver; the fake is cleared
// before, and after it every handle must have been destroyed (unless the
// test dropped its context, whose reset destroys them) and no context be
// current.
class FakeCudaTest : public ::testing::Test {
 protected:
  static constexpr const char* kKinds[] = {"stream", "event", "pool", "module", "graph", "exec", "host", "device"};

  void SetUp() override {
    fake().reset_test_state();
    absl::StatusOr<std::unique_ptr<CudaContext>> c = CudaContext::Create(FakeDriver(), 0);
    ASSERT_TRUE(c.ok()) << c.status();
    ctx_ = *std::move(c);
  }
  void TearDown() override {
    if (ctx_ != nullptr) {
      EXPECT_EQ(ctx_->users(), 0) << "a user of the context left";
      for (const char* k : kKinds) EXPECT_EQ(fake().live(k), 0) << "a " << k << " handle left";
    }
    ctx_.reset();
    fake().reset_test_state();
    EXPECT_EQ(fake().context_depth(), 0) << "a context left current";
    EXPECT_EQ(fake().retained(0), 0) << "a primary context reference left";
  }

  static const FakeCuda& fake() { return Fake(); }
  CudaContext& ctx() { return *ctx_; }

  // Makes the stand-in's next kernel launch record, as claim_fault would
  // (launch.h), an index `index` past a 1-D array's `extent` at `line`.
  static void FaultNextLaunch(int32_t line, int64_t index, int64_t extent) {
    wp::fault_info fault{};
    fault.flag = 1;
    fault.kind = wp::FAULT_INDEX_OUT_OF_BOUNDS;
    fault.line = line;
    fault.index = index;
    fault.extent = extent;
    fault.array_ndim = 1;
    fault.shape[0] = extent;
    ASSERT_EQ(fake().write_on_next_launch(0, -1, offsetof(wp::launch_ctx, fault), &fault, sizeof(fault)), 0);
  }

  // What a fixture keeps of a made object: the object, or null after a test
  // failure naming why it could not be made.
  template <typename T>
  static std::unique_ptr<T> Keep(absl::StatusOr<T> made) {
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? std::make_unique<T>(*std::move(made)) : nullptr;
  }
  template <typename T>
  static std::unique_ptr<T> Keep(absl::StatusOr<std::unique_ptr<T>> made) {
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *std::move(made) : nullptr;
  }
  const DriverApi& api() { return ctx_->api(); }

  std::unique_ptr<CudaContext> ctx_;
};

// A FakeCudaTest with a stream and a pool on it, and device memory from
// Alloc that is freed after the test (after the stream's work, unless the
// context is poisoned). A test that drops the stream frees nothing.
class FakeCudaMemoryTest : public FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    ASSERT_NE(stream_ = Keep(CudaStream::Create(ctx())), nullptr);
    ASSERT_NE(pool_ = Keep(CudaMemoryPool::Create(ctx(), {})), nullptr);
  }
  void TearDown() override {
    if (stream_ != nullptr && pool_ != nullptr) {
      for (CUdeviceptr p : allocated_) EXPECT_TRUE(pool_->Free(p, *stream_).ok());
      if (!ctx().poisoned()) EXPECT_TRUE(stream_->Synchronize().ok());
    }
    pool_.reset();
    stream_.reset();
    FakeCudaTest::TearDown();
  }
  CUdeviceptr Alloc(size_t bytes) {
    absl::StatusOr<CUdeviceptr> p = pool_->Allocate(bytes, *stream_);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) allocated_.push_back(*p);
    return p.ok() ? *p : 0;
  }

  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CudaMemoryPool> pool_;
  std::vector<CUdeviceptr> allocated_;
};

}  // namespace warpd::runtime::cuda::testing
