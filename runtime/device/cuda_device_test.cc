// CudaDevice's memory (cuda_device.h) on the stand-in driver: every data
// movement checked against CpuDevice's (cpu_device_test.cc checks that one
// against an element-by-element model) on the same arrays and views, the
// base's whole memory compared after each; allocation, charging, quotas,
// and the listed-only device's errors.
#include "runtime/device/cuda_device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda/testing/fake_cuda.h"
#include "runtime/device/cuda/testing/launch_module.h"
#include "runtime/device/recorded_work.h"
#include "runtime/memory/memory_account.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"
#include "runtime/objects/testing/views.h"
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
    return testing::ViewOf(base, offset, std::move(shape), std::move(strides));
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
  // A session's own (exportable) pool counts against the same quota.
  EXPECT_EQ(gpu_->AllocateShareable(512 << 10, "t", &pool_).status().code(), absl::StatusCode::kResourceExhausted);
  auto b = gpu_->AllocateShareable(128 << 10, "t", &pool_);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(gpu_->FreeMemoryBytes(), uint64_t{128} << 10);
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

TEST_F(CudaDeviceTest, StridedViewsStageABoundedAmountOfHostMemory) {
  cuda::CudaMemory::Options options;
  options.max_staged_bytes = 120;  // the transposed view spans 240 bytes, the 2x3 block 108
  gpu_.reset();
  auto d = CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], options);
  ASSERT_TRUE(d.ok()) << d.status();
  gpu_ = *std::move(d);
  Twin base = Base();
  Twin wide = Shape(base, 3), narrow = Shape(base, 2);
  std::vector<std::byte> buf(16);
  absl::Status s = gpu_->Download(*wide.gpu, 0, absl::MakeSpan(buf));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "stages 240 bytes in host memory; at most 120")) << s;
  EXPECT_EQ(gpu_->Upload(*wide.gpu, 0, buf).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(gpu_->FillRange(*wide.gpu, 0, 16, "abcd").code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(gpu_->CopyRange(*narrow.gpu, 0, *wide.gpu, 0, 16).code(), absl::StatusCode::kUnimplemented);
  // Within the bound: as on the CPU.
  ASSERT_TRUE(cpu_.FillRange(*narrow.cpu, 0, 24, "abcd").ok());
  ASSERT_TRUE(gpu_->FillRange(*narrow.gpu, 0, 24, "abcd").ok());
  ExpectSame(base, "a bounded strided fill");
  // A copy of more bytes than the bound between contiguous arrays stays on the device.
  ASSERT_TRUE(cpu_.CopyRange(*base.cpu, 0, *base.cpu, 120, 120).ok());
  ASSERT_TRUE(gpu_->CopyRange(*base.gpu, 0, *base.gpu, 120, 120).ok());
  ExpectSame(base, "a contiguous copy past the bound");
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
}

// What another process of the host does with an export (CUDA IPC), here in
// this one through the stand-in's entry points: the pool imported from its
// fd, the allocation from its export data; the stand-in maps the pool's
// memory file again, so the import reads and writes the same bytes at
// another address.
struct Importer {
  using ImportPool = int (*)(void**, void*, int, unsigned long long);
  using ImportPointer = int (*)(cuda::CUdeviceptr*, void*, const void*);
  using FreePointer = int (*)(cuda::CUdeviceptr);
  using DestroyPool = int (*)(void*);
  Importer() {
    void* lib = dlopen(WARPD_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    using GetProc = int (*)(const char*, void**, int, uint64_t, int*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    auto get = [&](auto& fn, const char* name) {
      void* p = nullptr;
      int status = 0;
      EXPECT_EQ(get_proc(name, &p, 13000, 0, &status), 0) << name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get(import_pool, "cuMemPoolImportFromShareableHandle");
    get(import_pointer, "cuMemPoolImportPointer");
    get(free_pointer, "cuMemFree");
    get(destroy_pool, "cuMemPoolDestroy");
  }
  ImportPool import_pool = nullptr;
  ImportPointer import_pointer = nullptr;
  FreePointer free_pointer = nullptr;
  DestroyPool destroy_pool = nullptr;
};

TEST_F(CudaDeviceTest, ASessionsShareableArraysExportToItsClientOnly) {
  SegmentPool session_a{MemoryAccount::Create("a on cuda:0", 0)}, session_b{MemoryAccount::Create("b on cuda:0", 0)};
  auto layout = MakeArrayLayout(types::Scalar(ScalarKind::kUInt8), {5000});
  ASSERT_TRUE(layout.ok());
  auto shared = gpu_->AllocateShareable(5000, "t", &session_a);
  ASSERT_TRUE(shared.ok()) << shared.status();
  Array a("cuda:0", *layout, *shared);
  std::vector<std::byte> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(i * 7 % 253);
  ASSERT_TRUE(gpu_->Upload(a, 0, bytes).ok());

  absl::StatusOr<Device::MemoryExport> exported = gpu_->ExportMemory(**shared, session_a);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_GE(exported->fd, 0);
  EXPECT_EQ(exported->allocation.size(), 64u);
  EXPECT_EQ(exported->device_uuid, gpu_->info().uuid);

  // The importing side: the same bytes, and its writes reach the array.
  Importer importer;
  void* pool = nullptr;
  cuda::CUdeviceptr ptr = 0;
  ASSERT_TRUE(ctx().Call("import", [&] {
                     return importer.import_pool(&pool, reinterpret_cast<void*>(intptr_t{exported->fd}), 1, 0);
                   }).ok());
  close(exported->fd);
  ASSERT_TRUE(ctx().Call("import", [&] {
                     return importer.import_pointer(&ptr, pool, exported->allocation.data());
                   }).ok());
  EXPECT_NE(ptr, a.address());  // another mapping of the same memory
  const auto* seen = reinterpret_cast<const std::byte*>(ptr);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), seen));
  std::memset(reinterpret_cast<void*>(ptr + 100), 0x42, 10);
  std::vector<std::byte> got(5000);
  ASSERT_TRUE(gpu_->Download(a, 0, absl::MakeSpan(got)).ok());
  EXPECT_EQ(got[100], std::byte{0x42});
  EXPECT_EQ(got[109], std::byte{0x42});
  EXPECT_EQ(got[110], bytes[110]);
  EXPECT_TRUE(ctx().Call("free", [&] { return importer.free_pointer(ptr); }).ok());
  EXPECT_TRUE(ctx().Call("destroy", [&] { return importer.destroy_pool(pool); }).ok());

  // Never to another session (before and after it has a pool of its own),
  // and never memory that is not a session's shareable memory
  // (descriptors, objects: the device's own pool).
  EXPECT_EQ(gpu_->ExportMemory(**shared, session_b).status().code(), absl::StatusCode::kFailedPrecondition);
  auto private_memory = gpu_->Allocate(5000, "t", &session_a);
  ASSERT_TRUE(private_memory.ok());
  EXPECT_EQ(gpu_->ExportMemory(**private_memory, session_a).status().code(), absl::StatusCode::kFailedPrecondition);
  auto of_b = gpu_->AllocateShareable(100, "t", &session_b);
  ASSERT_TRUE(of_b.ok());
  absl::StatusOr<Device::MemoryExport> exported_b = gpu_->ExportMemory(**of_b, session_b);
  ASSERT_TRUE(exported_b.ok()) << exported_b.status();
  close(exported_b->fd);
  EXPECT_NE(exported_b->pool_serial, exported->pool_serial);  // each session its own pool
  EXPECT_EQ(gpu_->ExportMemory(**shared, session_b).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(gpu_->ExportMemory(**of_b, session_a).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaDeviceTest, WithoutIpcSupportNothingIsExported) {
  SegmentPool session{MemoryAccount::Create("s on cuda:0", 0)};
  fake().fail("cuMemPoolCreate", 801, 0);  // CUDA_ERROR_NOT_SUPPORTED for the session's exportable pool
  auto b = gpu_->AllocateShareable(4096, "t", &session);
  ASSERT_TRUE(b.ok()) << b.status();  // from the device's pool instead
  EXPECT_EQ(gpu_->ExportMemory(**b, session).status().code(), absl::StatusCode::kUnimplemented);
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


namespace launches {

using cuda::testing::LaunchTestModule;
using Module = LaunchTestModule;

struct Logged {
  std::string name;
  unsigned dims[7] = {};
  std::vector<std::byte> params;
};

}  // namespace launches

class CudaLaunchTest : public CudaDeviceTest {
 protected:
  static wp::launch_ctx Ctx(int64_t n) {
    wp::launch_ctx ctx{};
    ctx.bounds.ndim = 1;
    ctx.bounds.shape[0] = static_cast<int32_t>(n);
    ctx.bounds.size = n;
    return ctx;
  }
  launches::Logged Launch(int index) {
    launches::Logged l;
    char name[128] = {};
    std::vector<std::byte> params(4096);
    const long n = fake().launch(index, name, sizeof(name), l.dims, params.data(), params.size());
    EXPECT_GE(n, 0);
    l.name = name;
    params.resize(n < 0 ? 0 : size_t(n));
    l.params = std::move(params);
    return l;
  }
  static uint64_t U64(const std::vector<std::byte>& b, size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, b.data() + at, sizeof(v));
    return v;
  }

  launches::Module module_;
};

TEST_F(CudaLaunchTest, ALaunchPassesTheContextAndTheBlockByValue) {
  std::vector<std::byte> block(72);
  for (size_t i = 0; i < block.size(); ++i) block[i] = std::byte(i * 7 + 1);
  wp::launch_ctx ctx = Ctx(1000);
  const abi::CompiledKernel& k = module_.kernels()[0];
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &ctx, block.data()).ok());
  ASSERT_EQ(fake().launches(), 1);
  launches::Logged l = Launch(0);
  EXPECT_EQ(l.name, "wpk_scale_cuda");
  EXPECT_EQ(l.dims[0], 4u);    // ceil(1000 / 256) blocks
  EXPECT_EQ(l.dims[3], 256u);  // of 256 threads
  ASSERT_EQ(l.params.size(), 80u);
  EXPECT_NE(U64(l.params, 0), 0u);  // the context, in device memory
  EXPECT_EQ(0, std::memcmp(l.params.data() + 8, block.data(), block.size()));
  EXPECT_EQ(ctx.fault.flag, 0);
  // The module stays loaded (the scratch memory's free is queued; TearDown
  // sees that nothing is left).
  EXPECT_EQ(gpu_->loaded_modules(), 1u);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &ctx, block.data()).ok());
  EXPECT_EQ(fake().live("module"), 1);
  // An empty launch launches nothing.
  wp::launch_ctx empty = Ctx(0);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &empty, block.data()).ok());
  EXPECT_EQ(fake().launches(), 2);
}

// Past 32 blocks per SM (the stand-in's cuda:0 has 132) a launch's threads
// loop over its ids (wp::grid_stride).
TEST_F(CudaLaunchTest, TheGridStopsAt32BlocksPerSm) {
  std::vector<std::byte> block(72);
  const abi::CompiledKernel& k = module_.kernels()[0];
  wp::launch_ctx just = Ctx(132 * 32 * 256);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &just, block.data()).ok());
  wp::launch_ctx more = Ctx(int64_t{1} << 26);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &more, block.data()).ok());
  ASSERT_EQ(fake().launches(), 2);
  EXPECT_EQ(Launch(0).dims[0], 132u * 32);
  EXPECT_EQ(Launch(1).dims[0], 132u * 32);
  EXPECT_EQ(Launch(1).dims[3], 256u);
  // A launch's own shape (Warp's block_dim, max_blocks) wins.
  wp::launch_ctx shaped = Ctx(1000);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &shaped, block.data(), Device::Pass::kForward, {128, 3}).ok());
  EXPECT_EQ(Launch(2).dims[0], 3u);
  EXPECT_EQ(Launch(2).dims[3], 128u);
  wp::launch_ctx small_blocks = Ctx(1000);
  ASSERT_TRUE(gpu_->RunKernel(module_, k, &small_blocks, block.data(), Device::Pass::kForward, {64, 0}).ok());
  EXPECT_EQ(Launch(3).dims[0], 16u);  // ceil(1000 / 64)
  EXPECT_EQ(Launch(3).dims[3], 64u);
}

TEST_F(CudaLaunchTest, TheDevicesContextTravelsAndItsFaultComesBack) {
  std::vector<std::byte> block(72);
  wp::launch_ctx ctx = Ctx(300);
  ctx.bounds.ndim = 2;
  ctx.bounds.shape[0] = 3;
  ctx.bounds.shape[1] = 100;
  // The kernel records an out-of-bounds fault at line 7, as generated code
  // does through claim_fault (launch.h).
  FaultNextLaunch(7, 12, 10);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &ctx, block.data()).ok());
  EXPECT_EQ(ctx.fault.flag, 1);
  EXPECT_EQ(ctx.fault.kind, wp::FAULT_INDEX_OUT_OF_BOUNDS);
  EXPECT_EQ(ctx.fault.line, 7);
  EXPECT_EQ(ctx.fault.index, 12);
  EXPECT_EQ(ctx.fault.shape[0], 10);
}

TEST_F(CudaLaunchTest, TheObjectTableTravelsToTheDevice) {
  std::vector<std::byte> block(72);
  wp::launch_ctx ctx = Ctx(10);
  // Two entries as a session's table holds them (sorted ids, descriptors at
  // device addresses).
  const wp::object_entry entries[2] = {{0x10, wp::OBJECT_MESH, 0, reinterpret_cast<const void*>(0x1000)},
                                       {0x20, wp::OBJECT_HASH_GRID, 0, reinterpret_cast<const void*>(0x2000)}};
  ctx.objects = entries;
  ctx.num_objects = 2;
  // The kernel copies the second entry's id and descriptor, read through
  // ctx->objects in device memory, into its fault record.
  const long objects_at = offsetof(wp::launch_ctx, objects);
  ASSERT_EQ(fake().copy_deref_on_next_launch(0, objects_at, sizeof(wp::object_entry), 0,
                                             offsetof(wp::launch_ctx, fault.index), 8),
            0);
  ASSERT_EQ(fake().copy_deref_on_next_launch(0, objects_at, sizeof(wp::object_entry) + 16, 0,
                                             offsetof(wp::launch_ctx, fault.extent), 8),
            0);
  // And the pointer it found there, and the count.
  ASSERT_EQ(fake().copy_on_next_launch(0, objects_at, 0, offsetof(wp::launch_ctx, fault.shape), 16), 0);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &ctx, block.data()).ok());
  EXPECT_EQ(ctx.fault.index, 0x20);
  EXPECT_EQ(ctx.fault.extent, 0x2000);
  int64_t seen[2];
  std::memcpy(seen, ctx.fault.shape, sizeof(seen));
  EXPECT_NE(seen[0], 0);
  EXPECT_NE(seen[0], reinterpret_cast<int64_t>(entries));  // device memory, not the host's table
  EXPECT_EQ(seen[1], 2);
  // The host's context keeps its own table.
  EXPECT_EQ(ctx.objects, entries);
  EXPECT_EQ(ctx.num_objects, 2);
}

TEST_F(CudaLaunchTest, PrintRecordsComeBackIntoTheHostBuffer) {
  std::vector<std::byte> block(72);
  std::vector<uint8_t> records(4096, 0xEE);
  wp::launch_ctx ctx = Ctx(10);
  ctx.output.data = records.data();
  ctx.output.capacity = records.size();
  // The kernel writes a 24-byte record through ctx->output.data and counts it.
  uint8_t record[24];
  for (int i = 0; i < 24; ++i) record[i] = uint8_t(i + 100);
  const uint64_t counters[3] = {24, 24, 2};  // used, committed, dropped
  ASSERT_EQ(fake().write_on_next_launch(0, offsetof(wp::launch_ctx, output.data), 0, record, sizeof(record)), 0);
  ASSERT_EQ(fake().write_on_next_launch(0, -1, offsetof(wp::launch_ctx, output.used), counters, sizeof(counters)), 0);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &ctx, block.data()).ok());
  EXPECT_EQ(ctx.output.data, records.data());  // the host's buffer, not the device's
  EXPECT_EQ(ctx.output.used, 24u);
  EXPECT_EQ(ctx.output.committed, 24u);
  EXPECT_EQ(ctx.output.dropped, 2u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(records[i], uint8_t(i + 100)) << i;
  EXPECT_EQ(records[24], 0xEE);  // nothing past what was committed
}

TEST_F(CudaLaunchTest, AdjointsTakeBothBlocksAndLargeBlocksGoByPointer) {
  std::vector<std::byte> both(144);
  for (size_t i = 0; i < both.size(); ++i) both[i] = std::byte(i);
  wp::launch_ctx ctx = Ctx(5);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &ctx, both.data(), Device::Pass::kAdjoint).ok());
  launches::Logged adj = Launch(0);
  EXPECT_EQ(adj.name, "wpk_scale_adj_cuda");
  ASSERT_EQ(adj.params.size(), 8u + 72u + 72u);
  EXPECT_EQ(0, std::memcmp(adj.params.data() + 8, both.data(), both.size()));
  // A kernel without an adjoint entry.
  EXPECT_EQ(gpu_->RunKernel(module_, module_.kernels()[1], &ctx, both.data(), Device::Pass::kAdjoint).code(),
            absl::StatusCode::kInternal);

  std::vector<std::byte> big(40000, std::byte{3});
  const int64_t last = 0x1122334455667788;
  std::memcpy(big.data() + 40000 - 8, &last, 8);
  // The block is in device memory: the kernel copies its last 8 bytes into
  // the fault record's index, which comes back.
  ASSERT_EQ(fake().copy_on_next_launch(1, 40000 - 8, 0, offsetof(wp::launch_ctx, fault.index), 8), 0);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[1], &ctx, big.data()).ok());
  launches::Logged l = Launch(1);
  EXPECT_EQ(l.name, "wpk_big_cuda");
  ASSERT_EQ(l.params.size(), 16u);
  EXPECT_NE(U64(l.params, 8), 0u);
  EXPECT_NE(U64(l.params, 8), U64(l.params, 0));
  EXPECT_EQ(ctx.fault.index, last);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[2], &ctx, nullptr).ok());
  launches::Logged none = Launch(2);
  EXPECT_EQ(none.name, "wpk_none_cuda");
  ASSERT_EQ(none.params.size(), 12u);  // the context and the block's int32 placeholder
  EXPECT_NE(U64(none.params, 0), 0u);
}

TEST_F(CudaLaunchTest, WhatCannotRunSaysWhy) {
  std::vector<std::byte> block(72);
  wp::launch_ctx ctx = Ctx(4);
  // A CPU module's kernel.
  class CpuModule : public abi::CompiledModule {
   public:
    CpuModule() { kernels_ = {abi::CompiledKernel{}}; }
  } cpu;
  EXPECT_EQ(gpu_->RunKernel(cpu, cpu.kernels()[0], &ctx, block.data()).code(), absl::StatusCode::kInvalidArgument);
  // PTX the driver refuses: its JIT log is in the error.
  class BadModule : public abi::CompiledModule {
   public:
    BadModule() {
      cache_key_ = "bad";
      target_ = abi::Target::kCuda;
      cuda_image_ = ".version 99.0\n.target sm_90\n";
      abi::CompiledKernel k;
      k.cuda_entry = "wpk_x_cuda";
      kernels_ = {k};
    }
  } bad;
  absl::Status s = gpu_->RunKernel(bad, bad.kernels()[0], &ctx, block.data());
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(cuda::testing::Has(s.message(), "Unsupported .version")) << s;
  EXPECT_EQ(gpu_->loaded_modules(), 0u);
  // A listed device runs nothing.
  CudaDevice listed(FakeDriver().devices()[0]);
  EXPECT_EQ(listed.RunKernel(module_, module_.kernels()[0], &ctx, block.data()).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaLaunchTest, AKernelThatFaultsPoisonsTheDevice) {
  std::vector<std::byte> block(72);
  wp::launch_ctx launch = Ctx(4);
  fake().fault_next_launch(700);  // CUDA_ERROR_ILLEGAL_ADDRESS
  absl::Status s = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  // Nothing more runs on it, and nothing is called on the lost context.
  EXPECT_EQ(gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data()).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(gpu_->Allocate(64, "t", &pool_).status().code(), absl::StatusCode::kFailedPrecondition);
  // Its handles die with the primary context's reset, once no one uses it
  // (the fixture's context learns of the loss on its next call).
  gpu_.reset();
  EXPECT_FALSE(cuda::CudaStream::Create(ctx()).ok());
  ASSERT_TRUE(ctx().poisoned());
  EXPECT_TRUE(ctx().Recover().ok());
}

TEST_F(CudaLaunchTest, ALostContextComesBackOnceNothingHoldsIt) {
  std::vector<std::byte> block(72);
  Twin kept = Base();  // an array of the context about to be lost
  wp::launch_ctx launch = Ctx(4);
  EXPECT_TRUE(gpu_->healthy());
  EXPECT_TRUE(gpu_->Recover().ok());  // nothing to do
  fake().fault_next_launch(700);
  EXPECT_EQ(gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data()).code(), absl::StatusCode::kAborted);
  EXPECT_FALSE(gpu_->healthy());
  // The array still holds the lost context's memory: no reset yet.
  absl::Status held = gpu_->Recover();
  EXPECT_EQ(held.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cuda::testing::Has(held.message(), "cuda:0 lost its CUDA context; it is reset once the 1 arrays")) << held;
  EXPECT_FALSE(gpu_->healthy());
  kept = Twin{};
  ASSERT_TRUE(gpu_->Recover().ok());
  EXPECT_TRUE(gpu_->healthy());
  EXPECT_EQ(gpu_->loaded_modules(), 0u);  // the old context's modules went with it
  // Everything works again, on a fresh context.
  Twin again = Base(9);
  ExpectSame(again, "after the reset");
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data()).ok());
  EXPECT_EQ(launch.fault.flag, 0);
  EXPECT_EQ(gpu_->loaded_modules(), 1u);
  // The fixture's own context saw the reset too: its next call fails, and
  // it is recreated the same way before the fixture checks what is left.
  again = Twin{};
  gpu_.reset();
  if (!cuda::CudaStream::Create(ctx()).ok()) EXPECT_TRUE(ctx().Recover().ok());
}

TEST_F(CudaLaunchTest, ARunningKernelHoldsUpNoOtherOperation) {
  // One session's kernel runs (until cancelled); meanwhile another's
  // allocation, transfers, copy and fill on the same GPU complete: each
  // operation has a stream of its own.
  std::vector<std::byte> block(72);
  wp::launch_ctx launch = Ctx(4);
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));
  absl::Status ran;
  std::thread kernel([&] { ran = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data()); });
  absl::SleepFor(absl::Milliseconds(20));  // the kernel is running (held) by now
  Twin other = Base(3);
  ExpectSame(other, "while a kernel runs");
  Twin second = Base(5);
  ASSERT_TRUE(gpu_->CopyRange(*other.gpu, 0, *second.gpu, 8, 64).ok());
  ASSERT_TRUE(cpu_.CopyRange(*other.cpu, 0, *second.cpu, 8, 64).ok());
  ASSERT_TRUE(gpu_->FillRange(*second.gpu, 0, 40, std::string(4, '\x07')).ok());
  ASSERT_TRUE(cpu_.FillRange(*second.cpu, 0, 40, std::string(4, '\x07')).ok());
  ExpectSame(other, "copied while a kernel runs");
  ExpectSame(second, "filled while a kernel runs");
  EXPECT_EQ(fake().launches(), 0);  // still running
  __atomic_store_n(&launch.cancel, abi::kCancelShutdown, __ATOMIC_RELAXED);
  kernel.join();
  EXPECT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(fake().launches(), 1);
}

// A device whose launches stop after `limit`, with `grace` to do so.
std::unique_ptr<CudaDevice> TimedDevice(absl::Duration limit, absl::Duration grace) {
  CudaDevice::LaunchOptions launch;
  launch.time_limit = limit;
  launch.cancel_grace = grace;
  absl::StatusOr<std::unique_ptr<CudaDevice>> d = CudaDevice::Open(FakeDriver(), FakeDriver().devices()[0], {}, launch);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

TEST_F(CudaLaunchTest, TheTimeLimitReachesARunningKernel) {
  gpu_ = TimedDevice(absl::Milliseconds(50), absl::Seconds(10));
  ASSERT_NE(gpu_, nullptr);
  std::vector<std::byte> block(72);
  wp::launch_ctx launch = Ctx(4);
  // The kernel runs until its context's cancel flag, in device memory, is
  // set: as generated code, which checks it at every loop back-edge.
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));
  const absl::Time t0 = absl::Now();
  absl::Status s = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data());
  const absl::Duration took = absl::Now() - t0;
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(launch.cancel, abi::kCancelTimeout);  // what the launch command reports as the time limit
  EXPECT_GE(took, absl::Milliseconds(50));
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(gpu_->launch_time_limit(), absl::Milliseconds(50));
  EXPECT_TRUE(gpu_->healthy());
  // The device runs the next launch as before.
  wp::launch_ctx next = Ctx(4);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &next, block.data()).ok());
  EXPECT_EQ(next.cancel, 0);
}

TEST_F(CudaLaunchTest, ACancelFromAnotherThreadReachesARunningKernel) {
  std::vector<std::byte> block(72);
  wp::launch_ctx launch = Ctx(4);
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));
  std::thread canceller([&launch] {
    absl::SleepFor(absl::Milliseconds(30));
    __atomic_store_n(&launch.cancel, abi::kCancelShutdown, __ATOMIC_RELAXED);  // as LaunchCommand::Cancel
  });
  absl::Status s = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data());
  canceller.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(launch.cancel, abi::kCancelShutdown);
  EXPECT_TRUE(gpu_->healthy());
}

TEST_F(CudaLaunchTest, AKernelThatDoesNotStopLosesTheDevice) {
  gpu_ = TimedDevice(absl::Milliseconds(20), absl::Milliseconds(50));
  ASSERT_NE(gpu_, nullptr);
  std::vector<std::byte> block(72);
  wp::launch_ctx launch = Ctx(4);
  // It waits on a word nothing writes (the context's reserved field).
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, reserved));
  absl::Status s = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "kernel 'scale' did not stop within 50ms of being cancelled on cuda:0"))
      << s;
  EXPECT_EQ(launch.cancel, abi::kCancelTimeout);
  EXPECT_FALSE(gpu_->healthy());
  absl::Status next = gpu_->RunKernel(module_, module_.kernels()[0], &launch, block.data());
  EXPECT_EQ(next.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cuda::testing::Has(next.message(), "did not stop within")) << next;
  // Only a context reset takes the kernel off (the stand-in's reset drops
  // it), once nothing holds the device's memory.
  ASSERT_TRUE(gpu_->Recover().ok());
  EXPECT_TRUE(gpu_->healthy());
  wp::launch_ctx again = Ctx(4);
  ASSERT_TRUE(gpu_->RunKernel(module_, module_.kernels()[0], &again, block.data()).ok());
  gpu_.reset();
  if (!cuda::CudaStream::Create(ctx()).ok()) EXPECT_TRUE(ctx().Recover().ok());
}


// Work recorded into one CUDA graph (recorded_work.h), as a graph of
// commands records it on cuda:N.
class RecordedWorkTest : public CudaLaunchTest {
 protected:
  std::unique_ptr<RecordedWork> Record(const std::function<void(WorkRecorder&)>& fill) {
    absl::StatusOr<std::unique_ptr<WorkRecorder>> rec = gpu_->RecordWork();
    EXPECT_TRUE(rec.ok()) << rec.status();
    if (!rec.ok()) return nullptr;
    fill(**rec);
    absl::StatusOr<std::unique_ptr<RecordedWork>> work = (*rec)->Finish();
    EXPECT_TRUE(work.ok()) << work.status();
    return work.ok() ? *std::move(work) : nullptr;
  }
  std::shared_ptr<const abi::CompiledModule> module_ptr_ = std::make_shared<launches::Module>("recorded");
};

TEST_F(RecordedWorkTest, AReplayRunsTheRecordedWorkInOrderAsOneGraph) {
  Twin a = Base(3), b = Base(5);
  std::vector<std::byte> block(72);
  for (size_t i = 0; i < block.size(); ++i) block[i] = std::byte(i + 9);
  const abi::CompiledKernel& scale = module_ptr_->kernels()[0];
  const std::string pattern("\x07\x00\x00\x00", 4);
  std::unique_ptr<RecordedWork> work = Record([&](WorkRecorder& r) {
    ASSERT_TRUE(r.Fill(*a.gpu, 0, a.gpu->size_bytes(), pattern).ok());
    ASSERT_TRUE(r.Kernel(module_ptr_, scale, Ctx(1000), block.data(), Device::Pass::kForward, 3).ok());
    ASSERT_TRUE(r.Copy(*b.gpu, 8, *a.gpu, 0, 16).ok());
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[2], Ctx(5), nullptr, Device::Pass::kForward, 1).ok());
  });
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->kernels(), 2u);
  EXPECT_EQ(fake().live("exec"), 1);
  EXPECT_EQ(fake().launches(), 0);  // recording runs nothing
  // The same work on the CPU, for the expected bytes.
  ASSERT_TRUE(cpu_.FillRange(*a.cpu, 0, a.cpu->size_bytes(), pattern).ok());
  ASSERT_TRUE(cpu_.CopyRange(*b.cpu, 8, *a.cpu, 0, 16).ok());
  for (int replay = 0; replay < 2; ++replay) {
    std::vector<wp::launch_ctx> ctxs(2);
    int32_t cancel = 0;
    ASSERT_TRUE(work->Run(absl::MakeSpan(ctxs), &cancel).ok());
    ASSERT_EQ(fake().launches(), 4 * (replay + 1));
    // Three runs of scale on one context, then none on its own.
    const launches::Logged first = Launch(4 * replay), third = Launch(4 * replay + 2), none = Launch(4 * replay + 3);
    EXPECT_EQ(first.name, "wpk_scale_cuda");
    EXPECT_EQ(third.name, "wpk_scale_cuda");
    EXPECT_EQ(none.name, "wpk_none_cuda");
    EXPECT_EQ(first.dims[0], 4u);
    EXPECT_EQ(U64(first.params, 0), U64(third.params, 0));
    EXPECT_NE(U64(first.params, 0), U64(none.params, 0));
    EXPECT_EQ(0, std::memcmp(first.params.data() + 8, block.data(), block.size()));
    // The contexts come back as the kernels left them: their bounds, no fault.
    EXPECT_EQ(ctxs[0].bounds.size, 1000);
    EXPECT_EQ(ctxs[1].bounds.size, 5);
    EXPECT_EQ(ctxs[0].fault.flag, 0);
    ExpectSame(a, "filled");
    ExpectSame(b, "copied");
  }
  work.reset();
  EXPECT_EQ(fake().live("exec"), 0);
}

TEST_F(RecordedWorkTest, EachReplayStartsWithoutTheLastOnesFault) {
  std::vector<std::byte> block(72);
  std::unique_ptr<RecordedWork> work = Record([&](WorkRecorder& r) {
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[0], Ctx(10), block.data(), Device::Pass::kForward, 1).ok());
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[0], Ctx(20), block.data(), Device::Pass::kForward, 1).ok());
  });
  ASSERT_NE(work, nullptr);
  wp::fault_info fault{};
  fault.flag = 1;
  fault.kind = wp::FAULT_INDEX_OUT_OF_BOUNDS;
  fault.line = 11;
  fault.index = 99;
  ASSERT_EQ(fake().write_on_next_launch(0, -1, offsetof(wp::launch_ctx, fault), &fault, sizeof(fault)), 0);
  std::vector<wp::launch_ctx> ctxs(2);
  int32_t cancel = 0;
  ASSERT_TRUE(work->Run(absl::MakeSpan(ctxs), &cancel).ok());
  EXPECT_EQ(ctxs[0].fault.flag, 1);
  EXPECT_EQ(ctxs[0].fault.line, 11);
  EXPECT_EQ(ctxs[0].fault.index, 99);
  EXPECT_EQ(ctxs[1].fault.flag, 0);
  ASSERT_TRUE(work->Run(absl::MakeSpan(ctxs), &cancel).ok());
  EXPECT_EQ(ctxs[0].fault.flag, 0);
  EXPECT_EQ(ctxs[1].fault.flag, 0);
}

TEST_F(RecordedWorkTest, LargeBlocksAndAdjointsAreRecordedAsLaunchedAlone) {
  std::vector<std::byte> both(144), big(40000);
  for (size_t i = 0; i < both.size(); ++i) both[i] = std::byte(i);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::byte(i * 13 % 251);
  std::unique_ptr<RecordedWork> work = Record([&](WorkRecorder& r) {
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[0], Ctx(4), both.data(), Device::Pass::kAdjoint, 1).ok());
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[1], Ctx(4), big.data(), Device::Pass::kForward, 1).ok());
  });
  ASSERT_NE(work, nullptr);
  std::vector<wp::launch_ctx> ctxs(2);
  int32_t cancel = 0;
  ASSERT_TRUE(work->Run(absl::MakeSpan(ctxs), &cancel).ok());
  const launches::Logged adj = Launch(0), large = Launch(1);
  EXPECT_EQ(adj.name, "wpk_scale_adj_cuda");
  ASSERT_EQ(adj.params.size(), 152u);
  EXPECT_EQ(0, std::memcmp(adj.params.data() + 8, both.data(), both.size()));
  EXPECT_EQ(large.name, "wpk_big_cuda");
  ASSERT_EQ(large.params.size(), 16u);
  // The block in device memory, as uploaded at the recording.
  std::vector<std::byte> seen(big.size());
  std::memcpy(seen.data(), reinterpret_cast<const void*>(static_cast<uintptr_t>(U64(large.params, 8))), seen.size());
  EXPECT_EQ(seen, big);
}

TEST_F(RecordedWorkTest, WhatCannotBeRecordedIsUnimplemented) {
  absl::StatusOr<std::unique_ptr<WorkRecorder>> rec = gpu_->RecordWork();
  ASSERT_TRUE(rec.ok()) << rec.status();
  std::vector<std::byte> block(72);
  std::vector<uint8_t> records(64);
  wp::launch_ctx prints = Ctx(4);
  prints.output.data = records.data();
  prints.output.capacity = records.size();
  EXPECT_EQ((*rec)->Kernel(module_ptr_, module_ptr_->kernels()[0], prints, block.data(), Device::Pass::kForward, 1).code(),
            absl::StatusCode::kUnimplemented);
  Twin a = Base();
  Twin col = Shape(a, 1);
  EXPECT_EQ((*rec)->Copy(*col.gpu, 0, *a.gpu, 0, col.gpu->size_bytes()).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ((*rec)->Copy(*a.gpu, 4, *a.gpu, 0, 16).code(), absl::StatusCode::kUnimplemented);  // overlapping
  EXPECT_EQ((*rec)->Fill(*col.gpu, 0, col.gpu->size_bytes(), std::string(4, '\1')).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ((*rec)->Copy(*a.cpu, 0, *a.gpu, 0, 4).code(), absl::StatusCode::kInvalidArgument);
  // A pattern no memset writes (a fill kernel's job): refused up front.
  EXPECT_EQ((*rec)->Fill(*a.gpu, 0, 12, std::string("\1\2\3", 3)).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ((*rec)->Fill(*a.gpu, 2, 8, std::string("\1\2\1\2", 4)).code(),  // words, unaligned
            absl::StatusCode::kUnimplemented);
  // A capture that fails leaves nothing behind: no graph, no device block.
  const int blocks = fake().live("device");
  ASSERT_TRUE((*rec)->Fill(*a.gpu, 0, 8, std::string("\1\2\1\2", 4)).ok());
  fake().fail("cuMemsetD32Async", 1, 0);
  EXPECT_FALSE((*rec)->Finish().ok());
  EXPECT_EQ(fake().live("exec"), 0);
  EXPECT_EQ(fake().live("graph"), 0);
  EXPECT_EQ(fake().live("device"), blocks);
  // The CPU records nothing.
  EXPECT_EQ(cpu_.RecordWork().status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(RecordedWorkTest, ACancelAndTheTimeLimitReachTheRecordedKernels) {
  std::vector<std::byte> block(72);
  // The recorded kernel runs until its context's cancel flag is set (the
  // stand-in holds it in every replay of the graph).
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));
  std::unique_ptr<RecordedWork> work = Record([&](WorkRecorder& r) {
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[0], Ctx(4), block.data(), Device::Pass::kForward, 1).ok());
  });
  ASSERT_NE(work, nullptr);
  std::vector<wp::launch_ctx> ctxs(1);
  int32_t cancel = 0;
  std::thread canceller([&cancel] {
    absl::SleepFor(absl::Milliseconds(30));
    __atomic_store_n(&cancel, abi::kCancelShutdown, __ATOMIC_RELAXED);  // as a graph replay's Cancel
  });
  absl::Status s = work->Run(absl::MakeSpan(ctxs), &cancel);
  canceller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "a graph replay of 1 kernel launch ('scale') was cancelled")) << s;
  EXPECT_EQ(ctxs[0].cancel, 0);  // reported once, by the status
  EXPECT_EQ(ctxs[0].fault.flag, 0);
  work.reset();

  // The time limit holds for the whole replay: two runs, the first held.
  gpu_ = TimedDevice(absl::Milliseconds(40), absl::Seconds(10));
  ASSERT_NE(gpu_, nullptr);
  fake().hold_next_launch(0, offsetof(wp::launch_ctx, cancel));  // the first of the two runs
  work = Record([&](WorkRecorder& r) {
    ASSERT_TRUE(r.Kernel(module_ptr_, module_ptr_->kernels()[0], Ctx(4), block.data(), Device::Pass::kForward, 2).ok());
  });
  ASSERT_NE(work, nullptr);
  cancel = 0;
  const absl::Time t0 = absl::Now();
  s = work->Run(absl::MakeSpan(ctxs), &cancel);
  const absl::Duration took = absl::Now() - t0;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE(cuda::testing::Has(s.message(), "a graph replay of 2 kernel launches ('scale') ran longer than this "
                                              "server's launch time limit of 40ms and was stopped"))
      << s;
  EXPECT_GE(took, absl::Milliseconds(40));
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(cancel, abi::kCancelTimeout);
  EXPECT_TRUE(gpu_->healthy());
}

TEST_F(RecordedWorkTest, CopiesAndFillsPastTheBoundAreNotRecorded) {
  // Two 64 MiB arrays; copies and fills recorded (nothing moves) until 16 GiB in all.
  auto src = Make(*gpu_, {16 << 20}), dst = Make(*gpu_, {16 << 20});
  absl::StatusOr<std::unique_ptr<WorkRecorder>> rec = gpu_->RecordWork();
  ASSERT_TRUE(rec.ok()) << rec.status();
  for (int i = 0; i < 128; ++i) ASSERT_TRUE((*rec)->Copy(*dst, 0, *src, 0, dst->size_bytes()).ok()) << i;
  for (int i = 0; i < 128; ++i) ASSERT_TRUE((*rec)->Fill(*dst, 0, dst->size_bytes(), std::string(4, '\1')).ok()) << i;
  absl::Status past = (*rec)->Copy(*dst, 0, *src, 0, 4);
  EXPECT_EQ(past.code(), absl::StatusCode::kUnimplemented) << past;
  EXPECT_TRUE(cuda::testing::Has(past.message(), "move more bytes than one recording takes")) << past;
}

}  // namespace
}  // namespace warpd::runtime
