#include "runtime/device/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/cuda_error.h"

namespace warpd::runtime::cuda {
namespace {

// The stand-in drivers (testing/fake_libcuda.c), built beside this test.
constexpr const char* kFake = WARPD_FAKE_LIBCUDA;
constexpr const char* kFakeOld = WARPD_FAKE_LIBCUDA_OLD;

constexpr const char* kFakeVariables[] = {"WARPD_FAKE_CUDA_DEVICES", "WARPD_FAKE_CUDA_VERSION",
                                          "WARPD_FAKE_CUDA_INIT_ERROR", "WARPD_FAKE_CUDA_RETAIN_ERROR",
                                          "WARPD_FAKE_CUDA_MISSING"};

class CudaDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* v : kFakeVariables) unsetenv(v);
  }
  static void Set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

  // A function the stand-in exports for tests.
  template <typename Fn>
  static Fn FakeFunction(const char* path, const char* name) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    EXPECT_NE(lib, nullptr) << path;
    return lib == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(lib, name));
  }
  static int Retained(int ordinal) {
    return FakeFunction<int (*)(int)>(kFake, "warpd_fake_cuda_retained")(ordinal);
  }
};

TEST_F(CudaDriverTest, ListsTwoDevices) {
  auto driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  const CudaDriver& d = **driver;
  EXPECT_EQ(d.version(), 13000);
  EXPECT_EQ(d.version_text(), "13.0");
  EXPECT_EQ(d.path(), kFake);
  EXPECT_TRUE(d.no_devices_reason().empty());
  ASSERT_EQ(d.devices().size(), 2u);
  const CudaDeviceInfo& g0 = d.devices()[0];
  EXPECT_EQ(g0.ordinal, 0);
  EXPECT_EQ(g0.name, "Fake GPU 0");
  EXPECT_EQ(g0.uuid, "GPU-a0010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(g0.cc_major, 9);
  EXPECT_EQ(g0.cc_minor, 0);
  EXPECT_EQ(g0.arch(), "sm_90");
  EXPECT_EQ(g0.sm_count, 132);
  EXPECT_EQ(g0.memory_bytes, uint64_t{80} << 30);
  const CudaDeviceInfo& g1 = d.devices()[1];
  EXPECT_EQ(g1.ordinal, 1);
  EXPECT_EQ(g1.name, "Fake GPU 1");
  EXPECT_EQ(g1.uuid, "GPU-a1010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(g1.arch(), "sm_86");
  EXPECT_EQ(g1.sm_count, 84);
  EXPECT_EQ(g1.memory_bytes, uint64_t{81} << 30);
  // Every entry point was asked for with the version the code was written
  // for (the stand-in hands out pre-11.4 cuDeviceGetUuid otherwise, whose
  // UUID is all zeros).
  EXPECT_EQ(FakeFunction<int (*)()>(kFake, "warpd_fake_cuda_min_version_asked")(), kCudaApiVersion);
  EXPECT_EQ(FakeFunction<int (*)()>(kFake, "warpd_fake_cuda_max_version_asked")(), kCudaApiVersion);
  // The driver's names and texts reach errors made through it.
  absl::Status s = d.Check(2, "cuMemAlloc");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "cuMemAlloc: FAKE_CUDA_ERROR_2 (fake driver text for 2)");
}

TEST_F(CudaDriverTest, FallsBackToTheCuda11ProcAddress) {
  auto driver = CudaDriver::Load(kFakeOld);
  ASSERT_TRUE(driver.ok()) << driver.status();
  ASSERT_EQ((*driver)->devices().size(), 2u);
  EXPECT_EQ((*driver)->devices()[1].uuid, "GPU-a1010203-0405-0607-0809-0a0b0c0d0e0f");
}

TEST_F(CudaDriverTest, NoDeviceIsADriverWithoutDevices) {
  Set("WARPD_FAKE_CUDA_DEVICES", "0");
  auto driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_TRUE((*driver)->devices().empty());
  EXPECT_NE((*driver)->no_devices_reason().find("reports no CUDA device"), std::string::npos)
      << (*driver)->no_devices_reason();
  EXPECT_NE((*driver)->no_devices_reason().find("cuInit: FAKE_CUDA_ERROR_100"), std::string::npos)
      << (*driver)->no_devices_reason();
  auto ctx = (*driver)->RetainPrimaryContext(0);
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ctx.status().message().find("no CUDA device cuda:0"), std::string::npos) << ctx.status();
}

TEST_F(CudaDriverTest, TooOldDriverIsRefusedWithBothVersions) {
  Set("WARPD_FAKE_CUDA_VERSION", "11080");
  auto driver = CudaDriver::Load(kFake);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(driver.status().message().find("too old"), std::string::npos) << driver.status();
  EXPECT_NE(driver.status().message().find("supports CUDA 11.8"), std::string::npos) << driver.status();
  EXPECT_NE(driver.status().message().find("needs a driver for CUDA 12.0 or newer"), std::string::npos)
      << driver.status();
}

TEST_F(CudaDriverTest, InitFailureIsMappedAndNamesCuInit) {
  Set("WARPD_FAKE_CUDA_INIT_ERROR", "999");
  auto driver = CudaDriver::Load(kFake);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(driver.status().message(), "cuInit: FAKE_CUDA_ERROR_999 (fake driver text for 999)");
  Set("WARPD_FAKE_CUDA_INIT_ERROR", "100");  // no device: a driver without devices
  driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_TRUE((*driver)->devices().empty());
  Set("WARPD_FAKE_CUDA_INIT_ERROR", "34");  // the toolkit's stub library answers this: no driver
  driver = CudaDriver::Load(kFake);
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(driver.status().message().find("stub library, not a driver (cuInit: CUDA_ERROR_STUB_LIBRARY)"),
            std::string::npos)
      << driver.status();
}

TEST_F(CudaDriverTest, MissingEntryPointIsNamed) {
  Set("WARPD_FAKE_CUDA_MISSING", "cuDeviceGetUuid");
  auto driver = CudaDriver::Load(kFake);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(driver.status().message().find("lacks the driver API entry point cuDeviceGetUuid of CUDA 12.0"),
            std::string::npos)
      << driver.status();
}

TEST_F(CudaDriverTest, NoLibraryIsNotFound) {
  auto driver = CudaDriver::Load("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(driver.status().message().find("no NVIDIA driver: cannot load /nonexistent/libcuda.so.1"),
            std::string::npos)
      << driver.status();
}

TEST_F(CudaDriverTest, LibraryWithoutProcAddressIsTooOld) {
  // Any shared library without cuGetProcAddress stands for a pre-11.3 driver.
  auto driver = CudaDriver::Load("libm.so.6");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(driver.status().message().find("older than CUDA 11.3"), std::string::npos) << driver.status();
}

TEST_F(CudaDriverTest, TheToolkitsStubIsRefused) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) GTEST_SKIP() << "no " << stub;
  auto driver = CudaDriver::Load(stub);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound) << driver.status();
  EXPECT_NE(driver.status().message().find("stub library, not a driver"), std::string::npos) << driver.status();
}

TEST_F(CudaDriverTest, PrimaryContextsAreRetainedAndReleased) {
  auto driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  const int before = Retained(1);
  {
    auto ctx = (*driver)->RetainPrimaryContext(1);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    EXPECT_NE(ctx->get(), nullptr);
    EXPECT_EQ(ctx->ordinal(), 1);
    EXPECT_EQ(Retained(1), before + 1);
    PrimaryContext moved = *std::move(ctx);
    EXPECT_EQ(Retained(1), before + 1);
    EXPECT_TRUE(moved.Release().ok());
    EXPECT_EQ(moved.get(), nullptr);
    EXPECT_EQ(Retained(1), before);
    EXPECT_TRUE(moved.Release().ok());  // twice is fine
  }
  EXPECT_EQ(Retained(1), before);
  {
    auto a = (*driver)->RetainPrimaryContext(0);
    auto b = (*driver)->RetainPrimaryContext(0);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->get(), b->get());
    EXPECT_EQ(Retained(0), 2);
    *a = *std::move(b);  // releases a's reference, takes b's
    EXPECT_EQ(Retained(0), 1);
  }
  EXPECT_EQ(Retained(0), 0);
  EXPECT_EQ((*driver)->RetainPrimaryContext(2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*driver)->RetainPrimaryContext(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaDriverTest, RetainErrorIsMapped) {
  auto driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  Set("WARPD_FAKE_CUDA_RETAIN_ERROR", "2");
  auto ctx = (*driver)->RetainPrimaryContext(0);
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ctx.status().message(),
            "cuDevicePrimaryCtxRetain (cuda:0): FAKE_CUDA_ERROR_2 (fake driver text for 2)");
  Set("WARPD_FAKE_CUDA_RETAIN_ERROR", "700");
  ctx = (*driver)->RetainPrimaryContext(1);
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(ctx.status().message().find("context is lost"), std::string::npos) << ctx.status();
}

TEST_F(CudaDriverTest, ContextsFromManyThreads) {
  auto driver = CudaDriver::Load(kFake);
  ASSERT_TRUE(driver.ok()) << driver.status();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([d = driver->get(), t] {
      for (int i = 0; i < 200; ++i) {
        auto ctx = d->RetainPrimaryContext((t + i) % 2);
        ASSERT_TRUE(ctx.ok()) << ctx.status();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(Retained(0), 0);
  EXPECT_EQ(Retained(1), 0);
}

TEST(CudaDriverProcessTest, LoadsOnceAndSaysWhyNot) {
  const absl::StatusOr<const CudaDriver*>& a = CudaDriver::Process();
  EXPECT_EQ(&a, &CudaDriver::Process());
  if (a.ok()) {
    EXPECT_EQ((*a)->path(), "libcuda.so.1");
    EXPECT_GE((*a)->version(), kCudaApiVersion);
    for (const CudaDeviceInfo& d : (*a)->devices()) {
      EXPECT_FALSE(d.name.empty());
      EXPECT_EQ(d.uuid.size(), 40u) << d.uuid;
      EXPECT_GE(d.cc_major, 3);
    }
  } else {
    EXPECT_FALSE(a.status().message().empty());
  }
}

}  // namespace
}  // namespace warpd::runtime::cuda
