#include "runtime/device/cuda/cuda_module.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/test_ptx.h"

namespace warpd::runtime::cuda {
namespace {

using testing::Has;

class CudaModuleTest : public testing::FakeCudaTest {};

TEST_F(CudaModuleTest, LoadsPtxAndFindsItsKernels) {
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), testing::kSaxpyPtx);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->info_log(), "fake JIT: module loaded for sm_90");
  EXPECT_EQ(fake().live("module"), 1);
  EXPECT_EQ(ctx().users(), 1);
  absl::StatusOr<CUfunction> saxpy = m->Function("wpk_saxpy_cuda");
  absl::StatusOr<CUfunction> empty = m->Function("wpk_empty_cuda");
  ASSERT_TRUE(saxpy.ok() && empty.ok()) << saxpy.status() << empty.status();
  EXPECT_NE(*saxpy, *empty);
  EXPECT_EQ(*m->Function("wpk_saxpy_cuda"), *saxpy);

  absl::StatusOr<CUfunction> missing = m->Function("wpk_missing_cuda");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Has(missing.status().message(), "cuModuleGetFunction(\"wpk_missing_cuda\") (cuda:0)"))
      << missing.status();

  CudaModule moved = *std::move(m);
  EXPECT_TRUE(moved.Function("wpk_empty_cuda").ok());
  EXPECT_EQ(fake().live("module"), 1);
}

TEST_F(CudaModuleTest, PtxNeedsNoTerminatingNul) {
  std::string ptx = std::string(testing::kSaxpyPtx) + "// trailing text";
  std::string_view unterminated(ptx.data(), ptx.size() - 5);  // not followed by a NUL in the view
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), unterminated);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(CudaModule::Load(ctx(), "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaModuleTest, TheJitErrorLogIsInTheStatus) {
  std::string newer(testing::kSaxpyPtx);
  newer.replace(newer.find("sm_90"), 5, "sm_100");
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), newer);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();  // CUDA_ERROR_INVALID_PTX
  EXPECT_TRUE(Has(m.status().message(), "cuModuleLoadDataEx (cuda:0): FAKE_CUDA_ERROR_218")) << m.status();
  EXPECT_TRUE(Has(m.status().message(),
                  "the JIT's error log:\nptxas application ptx input, line 4; error   : SM version specified by "
                  ".target is higher than default SM version assumed"))
      << m.status();

  std::string future(testing::kSaxpyPtx);
  future.replace(future.find("8.0"), 3, "9.9");
  m = CudaModule::Load(ctx(), future);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition) << m.status();  // UNSUPPORTED_PTX_VERSION
  EXPECT_TRUE(Has(m.status().message(), "Unsupported .version 9.9; current version is '9.0'")) << m.status();

  EXPECT_EQ(ctx().users(), 0) << "a failed load holds no user";
  EXPECT_FALSE(ctx().poisoned());
}

TEST_F(CudaModuleTest, LoadsACubin) {
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), testing::MakeCubin("wpk_add_cuda"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->Function("wpk_add_cuda").ok());
  EXPECT_EQ(m->Function("wpk_add").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CudaModuleTest, APoisonedContextLoadsNothing) {
  ctx().Check(700, "cuStreamSynchronize").IgnoreError();
  absl::StatusOr<CudaModule> m = CudaModule::Load(ctx(), testing::kSaxpyPtx);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fake().live("module"), 0);
}

}  // namespace
}  // namespace warpd::runtime::cuda
