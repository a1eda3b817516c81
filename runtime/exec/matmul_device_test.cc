// wp.matmul on cuda:0 of the stand-in driver, through the stand-in cuBLAS
// (device/cuda/testing/fake_libcublas.c, which computes on the host what a
// GEMM call asks): the operands' layouts, batches, dtypes and c as cuBLAS
// gets them from matmul_device.cc and CudaDevice::Gemm, against a triple loop.
#include "runtime/exec/matmul_device.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda_device.h"
#include "runtime/exec/matmul.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"
#include "runtime/objects/testing/views.h"
#include "warpd/native/core.h"

namespace warpd::runtime {
namespace {

using cuda::testing::FakeDriver;
using types::ScalarKind;

class DeviceMatmulTest : public cuda::testing::FakeCudaTest {
 protected:
  void SetUp() override {
    // Before the first GEMM loads "cuBLAS" (once per process).
    setenv("WARPD_CUBLAS", WARPD_FAKE_LIBCUBLAS, 1);
    setenv("WARPD_FAKE_LIBCUDA", WARPD_FAKE_LIBCUDA, 1);
    FakeCudaTest::SetUp();
    Reopen({});
  }
  void Reopen(const CudaDevice::LaunchOptions& launch) {
    gpu_.reset();
    absl::StatusOr<std::unique_ptr<CudaDevice>> d =
        CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], {}, launch);
    ASSERT_TRUE(d.ok()) << d.status();
    gpu_ = *std::move(d);
  }
  void TearDown() override {
    gpu_.reset();
    FakeCudaTest::TearDown();
  }

  // A (rows, cols) or (batch, rows, cols) array of `kind` holding values[i] at element i (row-major).
  std::shared_ptr<const Array> Make(ScalarKind kind, std::vector<int64_t> shape, const std::vector<double>& values) {
    auto layout = MakeArrayLayout(types::Scalar(kind), shape);
    EXPECT_TRUE(layout.ok()) << layout.status();
    auto buf = gpu_->Allocate(layout->size_bytes, "t", &pool_);
    EXPECT_TRUE(buf.ok()) << buf.status();
    auto a = std::make_shared<Array>("cuda:0", *layout, *buf);
    std::vector<std::byte> bytes(layout->size_bytes);
    for (size_t i = 0; i < values.size(); ++i) Put(kind, bytes.data(), i, values[i]);
    EXPECT_TRUE(gpu_->Upload(*a, 0, bytes).ok());
    return a;
  }
  static void Put(ScalarKind kind, std::byte* p, size_t i, double v) {
    if (kind == ScalarKind::kFloat64) {
      std::memcpy(p + 8 * i, &v, 8);
    } else if (kind == ScalarKind::kFloat32) {
      const float f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
    } else {
      const wp::half h = wp::float_to_half(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
    }
  }
  std::vector<double> Read(const Array& a) {
    std::vector<std::byte> bytes(a.size_bytes());
    EXPECT_TRUE(gpu_->Download(a, 0, absl::MakeSpan(bytes)).ok());
    const ScalarKind kind = a.dtype()->scalar();
    const size_t n = a.layout().num_elements;
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) {
      if (kind == ScalarKind::kFloat64) {
        std::memcpy(&out[i], bytes.data() + 8 * i, 8);
      } else if (kind == ScalarKind::kFloat32) {
        float f;
        std::memcpy(&f, bytes.data() + 4 * i, 4);
        out[i] = f;
      } else {
        wp::half h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = wp::half_to_float(h);
      }
    }
    return out;
  }
  static std::vector<double> Values(size_t n, double scale) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = std::fmod(double(i) * 0.37 * scale, 3.0) - 1.5;
    return v;
  }
  absl::Status Run(std::shared_ptr<const Array> a, std::shared_ptr<const Array> b, std::shared_ptr<const Array> c,
                   std::shared_ptr<const Array> d, double alpha, double beta) {
    absl::StatusOr<std::unique_ptr<Command>> cmd = PrepareMatmul(a, b, c, d, alpha, beta, "cuda:0", pool_);
    if (!cmd.ok()) return cmd.status();
    return (*cmd)->Execute(*gpu_);
  }

  SegmentPool pool_{MemoryAccount::Create("test", 0)};
  std::unique_ptr<CudaDevice> gpu_;
};

// d[i][j] = alpha * sum_p a[i][p] b[p][j] + beta * c[i][j], with a(i, p) etc. reading row-major values.
std::vector<double> Expected(int64_t m, int64_t n, int64_t k, const std::vector<double>& a,
                             const std::vector<double>& b, const std::vector<double>* c, double alpha, double beta) {
  std::vector<double> d(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      d[i * n + j] = alpha * s + (c != nullptr ? beta * (*c)[i * n + j] : 0.0);
    }
  }
  return d;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST_F(DeviceMatmulTest, Float32WithCAgainstATripleLoop) {
  const auto av = Values(3 * 4, 1), bv = Values(4 * 5, 2), cv = Values(3 * 5, 3);
  auto a = Make(ScalarKind::kFloat32, {3, 4}, av), b = Make(ScalarKind::kFloat32, {4, 5}, bv);
  auto c = Make(ScalarKind::kFloat32, {3, 5}, cv), d = Make(ScalarKind::kFloat32, {3, 5}, {});
  const std::vector<double> c_stored = Read(*c);  // cv in float32
  ASSERT_TRUE(Run(a, b, c, d, 2.0, 0.5).ok());
  ExpectNear(Read(*d), Expected(3, 5, 4, av, bv, &cv, 2.0, 0.5), 1e-5);
  ExpectNear(Read(*c), c_stored, 0);  // c is read, not written
  // In place: d is c.
  ASSERT_TRUE(Run(a, b, c, c, 1.0, 1.0).ok());
  ExpectNear(Read(*c), Expected(3, 5, 4, av, bv, &cv, 1.0, 1.0), 1e-5);
}

TEST_F(DeviceMatmulTest, TransposedViewsAndBatchesInFloat64) {
  // a as the transpose of a (4, 3) array: column-major for the BLAS.
  const auto at = Values(4 * 3, 5), bv = Values(2 * 4 * 2, 7);
  auto a_base = Make(ScalarKind::kFloat64, {4, 3}, at);
  auto a = testing::ViewOf(a_base, 0, {3, 4}, {8, 24});
  std::vector<double> av(12);
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 4; ++p) av[i * 4 + p] = at[p * 3 + i];
  auto b = Make(ScalarKind::kFloat64, {4, 2}, std::vector<double>(bv.begin(), bv.begin() + 8));
  auto d = Make(ScalarKind::kFloat64, {3, 2}, {});
  ASSERT_TRUE(Run(a, b, nullptr, d, 1.0, 0.0).ok());
  const std::vector<double> want_d = Expected(3, 2, 4, av, std::vector<double>(bv.begin(), bv.begin() + 8), nullptr, 1, 0);
  ExpectNear(Read(*d), want_d, 1e-12);
  // d column-major too: the transpose of a (2, 3) array.
  auto dt_base = Make(ScalarKind::kFloat64, {2, 3}, {});
  ASSERT_TRUE(Run(a, b, nullptr, testing::ViewOf(dt_base, 0, {3, 2}, {8, 24}), 1.0, 0.0).ok());
  std::vector<double> want_t(6);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) want_t[j * 3 + i] = want_d[i * 2 + j];
  ExpectNear(Read(*dt_base), want_t, 1e-12);
  // Two batch items of (2, 4) @ (4, 2).
  const auto xa = Values(2 * 2 * 4, 11);
  auto ba = Make(ScalarKind::kFloat64, {2, 2, 4}, xa), bb = Make(ScalarKind::kFloat64, {2, 4, 2}, bv);
  auto bd = Make(ScalarKind::kFloat64, {2, 2, 2}, {});
  ASSERT_TRUE(Run(ba, bb, nullptr, bd, -1.0, 0.0).ok());
  std::vector<double> want;
  for (int item = 0; item < 2; ++item) {
    auto part = Expected(2, 2, 4, std::vector<double>(xa.begin() + item * 8, xa.begin() + item * 8 + 8),
                         std::vector<double>(bv.begin() + item * 8, bv.begin() + item * 8 + 8), nullptr, -1, 0);
    want.insert(want.end(), part.begin(), part.end());
  }
  ExpectNear(Read(*bd), want, 1e-12);
}

TEST_F(DeviceMatmulTest, Float16ComputesInFloat32) {
  const auto av = Values(2 * 3, 13), bv = Values(3 * 2, 17);
  auto a = Make(ScalarKind::kFloat16, {2, 3}, av), b = Make(ScalarKind::kFloat16, {3, 2}, bv);
  auto d = Make(ScalarKind::kFloat16, {2, 2}, {});
  ASSERT_TRUE(Run(a, b, nullptr, d, 1.0, 0.0).ok());
  ExpectNear(Read(*d), Expected(2, 2, 3, Read(*a), Read(*b), nullptr, 1, 0), 1e-2);
}

TEST_F(DeviceMatmulTest, LargeGemmsGoInChunksOfBatchItemsAndRows) {
  CudaDevice::LaunchOptions launch;
  // The stand-in's count of GEMM calls.
  void* lib = dlopen(WARPD_FAKE_LIBCUBLAS, RTLD_NOW | RTLD_LOCAL);  // the one Cublas::Get loads (or will)
  ASSERT_NE(lib, nullptr);
  auto gemms = reinterpret_cast<int (*)()>(dlsym(lib, "warpd_fake_cublas_gemms"));
  ASSERT_NE(gemms, nullptr);
  // 3 items of 5 x 4 @ 4 x 6 (120 multiply-adds each): 30 per chunk is one
  // row band (24) per call, 15 calls; 300 is two items per call, 2 calls.
  for (auto [chunk, calls] : {std::pair{30.0, 15}, std::pair{300.0, 2}}) {
    launch.gemm_chunk_macs = chunk;
    Reopen(launch);
    for (bool transposed_d : {false, true}) {
      const int before = gemms();
      const auto xa = Values(3 * 5 * 4, 29), xb = Values(3 * 4 * 6, 31);
      auto a = Make(ScalarKind::kFloat64, {3, 5, 4}, xa), b = Make(ScalarKind::kFloat64, {3, 4, 6}, xb);
      auto d_base = Make(ScalarKind::kFloat64, {3, 6, 5}, {});
      // d row-major, or each item the transpose of a (6, 5) matrix (column-major).
      auto d = transposed_d ? testing::ViewOf(d_base, 0, {3, 5, 6}, {240, 8, 40})
                            : testing::ViewOf(d_base, 0, {3, 5, 6}, {240, 48, 8});
      ASSERT_TRUE(Run(a, b, nullptr, d, 1.0, 0.0).ok());
      EXPECT_EQ(gemms() - before, calls) << chunk;
      std::vector<double> got = Read(*d_base), want(got.size());
      for (int item = 0; item < 3; ++item) {
        auto part = Expected(5, 6, 4, std::vector<double>(xa.begin() + item * 20, xa.begin() + item * 20 + 20),
                             std::vector<double>(xb.begin() + item * 24, xb.begin() + item * 24 + 24), nullptr, 1, 0);
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 6; ++j) want[item * 30 + (transposed_d ? j * 5 + i : i * 6 + j)] = part[i * 6 + j];
      }
      ExpectNear(got, want, 1e-12);
    }
  }
}

TEST_F(DeviceMatmulTest, AnEmptyInnerDimensionGivesBetaC) {
  const auto cv = Values(3 * 2, 19);
  auto a = Make(ScalarKind::kFloat32, {3, 0}, {}), b = Make(ScalarKind::kFloat32, {0, 2}, {});
  auto c = Make(ScalarKind::kFloat32, {3, 2}, cv), d = Make(ScalarKind::kFloat32, {3, 2}, Values(6, 23));
  ASSERT_TRUE(Run(a, b, c, d, 2.0, 0.25).ok());
  ExpectNear(Read(*d), Expected(3, 2, 0, {}, {}, &cv, 2.0, 0.25), 1e-6);
  auto none = Make(ScalarKind::kFloat32, {0, 2}, {});
  EXPECT_TRUE(Run(Make(ScalarKind::kFloat32, {0, 4}, {}), Make(ScalarKind::kFloat32, {4, 2}, Values(8, 1)), nullptr,
                  none, 1.0, 0.0)
                  .ok());
}

TEST_F(DeviceMatmulTest, WhatTheDevicesBlasCannotTakeSaysWhy) {
  auto a = Make(ScalarKind::kFloat32, {4, 4}, Values(16, 1)), d = Make(ScalarKind::kFloat32, {2, 2}, {});
  auto every_other = testing::ViewOf(a, 0, {2, 2}, {32, 8});  // both strides past one element
  auto b = Make(ScalarKind::kFloat32, {2, 2}, Values(4, 2));
  absl::Status s = Run(every_other, b, nullptr, d, 1.0, 0.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "operand A is a strided view")) << s;
  auto top = testing::ViewOf(a, 0, {2, 2}, {16, 4});
  s = Run(top, b, nullptr, testing::ViewOf(a, 0, {2, 2}, {16, 4}), 1.0, 0.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "D shares memory with A or B")) << s;
  s = Run(b, b, nullptr, Make(ScalarKind::kFloat32, {3, 2}, {}), 1.0, 0.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // One d for every batch item: refused (the items would race).
  auto batch_a = Make(ScalarKind::kFloat32, {2, 2, 2}, Values(8, 3)), batch_b = Make(ScalarKind::kFloat32, {2, 2, 2}, Values(8, 4));
  auto shared_d = testing::ViewOf(d, 0, {2, 2, 2}, {0, 8, 4});
  s = Run(batch_a, batch_b, nullptr, shared_d, 1.0, 0.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "D is one matrix repeated over the batch")) << s;
  // cuBLAS's own errors name the call and the device.
  setenv("WARPD_FAKE_CUBLAS_FAIL", "13", 1);
  s = Run(b, b, nullptr, d, 1.0, 0.0);
  unsetenv("WARPD_FAKE_CUBLAS_FAIL");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "cublasGemmStridedBatchedEx (cuda:0): CUBLAS_STATUS_EXECUTION_FAILED"))
      << s;
  EXPECT_TRUE(Run(b, b, nullptr, d, 1.0, 0.0).ok());  // and the next one works
}

}  // namespace
}  // namespace warpd::runtime
