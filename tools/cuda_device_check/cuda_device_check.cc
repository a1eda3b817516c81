// warpd-cuda-device-check: warpd's CUDA device (runtime/device/cuda_device.h)
// on a real GPU, for the GPU check (scripts/gpu-check.sh).
//
//   warpd-cuda-device-check [DIR] [--driver PATH] [--skip-kernels] [--timeout SECONDS]
//
// For each GPU the driver reports it opens the device as the daemon does
// with --cuda-execution and checks, printing one PASS/FAIL line each:
//  - memory: uploads, downloads, copies and fills of a (6, 10) int32 array
//    and four views of it (columns, a strided block, a transposed and a
//    broadcast view) give the same bytes as the CPU device's; a 256 MiB
//    upload and download through the pinned staging ring (GB/s printed);
//  - kernels (unless --skip-kernels; GPUs from sm_90): DIR/saxpy.ptx, written by
//    scripts/gpu-prepare.sh (saxpy(x, y, out: array(float32), a: float32),
//    a 200-byte block), through CudaDevice::RunKernel: out = a * x + y over
//    2^24 threads against the host's values, an index fault's record
//    (out one element short), the time of a one-thread launch (launch,
//    synchronize and the context's round trip) and the bandwidth of a
//    2^26-thread one.
// --driver loads another libcuda (the stand-in driver, for the self-test).
// A run past --timeout seconds (default 180) is ended with exit status 1.
// Links absl, libstdc++ and libgcc statically: needs only glibc and the
// driver. Exit status: 0 every check passed; 1 a check failed; 3 no driver
// or no device.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda_device.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_view.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {
namespace {

int failures = 0;

void Report(bool ok, const std::string& what, const std::string& detail = "") {
  std::printf("%s  %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Checker {
 public:
  explicit Checker(CudaDevice& gpu) : gpu_(gpu) {}

  std::shared_ptr<const Array> Make(Device& device, types::ScalarKind kind, const std::vector<int64_t>& shape) {
    absl::StatusOr<ArrayLayout> layout = MakeArrayLayout(types::Scalar(kind), shape);
    if (!layout.ok()) return nullptr;
    absl::StatusOr<std::shared_ptr<Buffer>> buf = device.Allocate(layout->size_bytes, "check", &pool_);
    if (!buf.ok()) {
      Report(false, "allocate on " + device.name(), std::string(buf.status().message()));
      return nullptr;
    }
    return std::make_shared<Array>(device.name(), *layout, *buf);
  }

  static std::shared_ptr<const Array> View(const std::shared_ptr<const Array>& base, int which) {
    if (which == 0) return base;
    // Columns 1-2, a strided 2x3 block, the transpose, a broadcast row.
    static constexpr uint64_t kOffsets[5] = {0, 4, 44, 0, 40};
    static constexpr int64_t kShapes[5][2] = {{6, 10}, {6, 2}, {2, 3}, {10, 6}, {3, 10}};
    static constexpr int64_t kStrides[5][2] = {{40, 4}, {40, 4}, {80, 12}, {4, 40}, {0, 4}};
    ViewRequest r;
    r.offset_bytes = kOffsets[which];
    r.shape = kShapes[which];
    r.strides = kStrides[which];
    absl::StatusOr<ViewPlacement> v = MakeViewLayout(*base, r, uint64_t{1} << 30);
    if (!v.ok()) Report(false, "a view", std::string(v.status().message()));
    return v.ok() ? std::make_shared<Array>(base->device(), v->layout, base->buffer(), v->byte_offset) : nullptr;
  }

  // Both devices' (6, 10) int32 arrays, byte i holding i * seed mod 251.
  bool Twin(int seed, std::shared_ptr<const Array>* cpu, std::shared_ptr<const Array>* gpu) {
    *cpu = Make(cpu_, types::ScalarKind::kInt32, {6, 10});
    *gpu = Make(gpu_, types::ScalarKind::kInt32, {6, 10});
    if (*cpu == nullptr || *gpu == nullptr) return false;
    std::vector<std::byte> bytes((*cpu)->size_bytes());
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(i * seed % 251);
    return cpu_.Upload(**cpu, 0, bytes).ok() && gpu_.Upload(**gpu, 0, bytes).ok();
  }

  std::string Differ(const Array& cpu, const Array& gpu) {
    std::vector<std::byte> want(cpu.size_bytes()), got(gpu.size_bytes(), std::byte{0xEE});
    absl::Status s = cpu_.Download(cpu, 0, absl::MakeSpan(want));
    if (s.ok()) s = gpu_.Download(gpu, 0, absl::MakeSpan(got));
    if (!s.ok()) return std::string(s.message());
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] != got[i]) return "byte " + std::to_string(i) + " differs from the CPU device's";
    }
    return "";
  }

  void Memory() {
    std::string why;
    for (int which = 0; which < 5 && why.empty(); ++which) {
      std::shared_ptr<const Array> cb, gb;
      if (!Twin(1, &cb, &gb)) return Report(false, "memory: upload");
      auto c = View(cb, which), g = View(gb, which);
      std::vector<std::byte> want(c->size_bytes()), got(c->size_bytes());
      absl::Status s = cpu_.Download(*c, 3, absl::MakeSpan(want).subspan(3));
      if (s.ok()) s = gpu_.Download(*g, 3, absl::MakeSpan(got).subspan(3));
      if (!s.ok() || want != got) why = "download of view " + std::to_string(which);
      if (why.empty() && which != 4) {
        std::vector<std::byte> in(c->size_bytes());
        for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(200 - i % 200);
        s = cpu_.Upload(*c, 1, absl::MakeSpan(in).subspan(1));
        if (s.ok()) s = gpu_.Upload(*g, 1, absl::MakeSpan(in).subspan(1));
        std::string d = s.ok() ? Differ(*cb, *gb) : std::string(s.message());
        if (!d.empty()) why = "upload into view " + std::to_string(which) + ": " + d;
      }
      for (const char* pattern : {"\x5a", "abab", "0123456789ab"}) {
        if (!why.empty() || which == 4) break;
        const size_t p = std::strlen(pattern);
        const uint64_t n = (c->size_bytes() - 4) / p * p;
        s = cpu_.FillRange(*c, 4, n, pattern);
        if (s.ok()) s = gpu_.FillRange(*g, 4, n, pattern);
        std::string d = s.ok() ? Differ(*cb, *gb) : std::string(s.message());
        if (!d.empty()) why = "fill of view " + std::to_string(which) + ": " + d;
      }
      for (int from = 0; from < 5 && why.empty() && which != 4; ++from) {
        std::shared_ptr<const Array> cs, gs;
        if (!Twin(3, &cs, &gs)) return Report(false, "memory: upload");
        auto sc = View(cs, from), sg = View(gs, from);
        const uint64_t n = std::min(c->size_bytes(), sc->size_bytes()) - 8;
        s = cpu_.CopyRange(*c, 3, *sc, 5, n);
        if (s.ok()) s = gpu_.CopyRange(*g, 3, *sg, 5, n);
        std::string d = s.ok() ? Differ(*cb, *gb) : std::string(s.message());
        if (!d.empty()) why = "copy into view " + std::to_string(which) + " from " + std::to_string(from) + ": " + d;
      }
    }
    // memmove semantics within one array.
    std::shared_ptr<const Array> cb, gb;
    if (why.empty() && Twin(5, &cb, &gb)) {
      absl::Status s = cpu_.CopyRange(*cb, 4, *cb, 0, 200);
      if (s.ok()) s = gpu_.CopyRange(*gb, 4, *gb, 0, 200);
      why = s.ok() ? Differ(*cb, *gb) : std::string(s.message());
      if (!why.empty()) why = "overlapping copy: " + why;
    }
    Report(why.empty(), gpu_.name() + " memory: uploads, downloads, copies, fills on five views match the CPU's", why);

    const uint64_t n = uint64_t{64} << 20;  // 256 MiB of int32
    auto big = Make(gpu_, types::ScalarKind::kInt32, {int64_t(n)});
    if (big == nullptr) return;
    std::vector<int32_t> host(n), back(n, -1);
    for (uint64_t i = 0; i < n; ++i) host[i] = int32_t(i * 2654435761u);
    auto bytes = [](std::vector<int32_t>& v) { return absl::MakeSpan(reinterpret_cast<std::byte*>(v.data()), v.size() * 4); };
    auto t0 = std::chrono::steady_clock::now();
    absl::Status s = gpu_.Upload(*big, 0, bytes(host));
    const double up = Seconds(t0);
    t0 = std::chrono::steady_clock::now();
    if (s.ok()) s = gpu_.Download(*big, 0, bytes(back));
    const double down = Seconds(t0);
    char detail[160];
    std::snprintf(detail, sizeof(detail), "upload %.2f GB/s, download %.2f GB/s", n * 4 / up / 1e9, n * 4 / down / 1e9);
    Report(s.ok() && back == host, gpu_.name() + " memory: 256 MiB through the staging ring",
           s.ok() ? std::string(detail) : std::string(s.message()));
  }

  // saxpy(x, y, out: array(float32), a: float32), as gpu-prepare.sh compiled it.
  class SaxpyModule : public abi::CompiledModule {
   public:
    SaxpyModule(std::string ptx, int arch) {
      cache_key_ = "warpd-cuda-device-check-saxpy";
      target_ = abi::Target::kCuda;
      cuda_image_ = std::move(ptx);
      cuda_arch_ = arch;
      abi::CompiledKernel k;
      k.layout.name = k.layout.display_name = "saxpy";
      k.layout.args_size = 200;
      k.layout.args_align = 8;
      k.cuda_entry = "wpk_saxpy_cuda";
      kernels_ = {k};
    }
  };

  absl::Status Saxpy(const abi::CompiledModule& m, int64_t n, int64_t out_n, float a, wp::launch_ctx* ctx,
                     std::vector<float>* result, double* seconds) {
    auto x = Make(gpu_, types::ScalarKind::kFloat32, {n});
    auto y = Make(gpu_, types::ScalarKind::kFloat32, {n});
    auto out = Make(gpu_, types::ScalarKind::kFloat32, {out_n});
    if (x == nullptr || y == nullptr || out == nullptr) return absl::ResourceExhaustedError("arrays");
    std::vector<float> hx(n), hy(n);
    for (int64_t i = 0; i < n; ++i) hx[i] = float(i % 1000) * 0.5f, hy[i] = float(i % 7);
    auto span = [](std::vector<float>& v) { return absl::MakeSpan(reinterpret_cast<std::byte*>(v.data()), v.size() * 4); };
    if (absl::Status s = gpu_.Upload(*x, 0, span(hx)); !s.ok()) return s;
    if (absl::Status s = gpu_.Upload(*y, 0, span(hy)); !s.ok()) return s;
    alignas(8) std::byte block[200] = {};
    x->WriteDescriptor(block);
    y->WriteDescriptor(block + 64);
    out->WriteDescriptor(block + 128);
    std::memcpy(block + 192, &a, 4);
    *ctx = wp::launch_ctx{};
    ctx->bounds.ndim = 1;
    ctx->bounds.shape[0] = int32_t(n);
    ctx->bounds.size = n;
    auto t0 = std::chrono::steady_clock::now();
    if (absl::Status s = gpu_.RunKernel(m, m.kernels()[0], ctx, block); !s.ok()) return s;
    *seconds = Seconds(t0);
    if (result != nullptr) {
      result->assign(out_n, 0.0f);
      if (absl::Status s = gpu_.Download(*out, 0, span(*result)); !s.ok()) return s;
      for (int64_t i = 0; i < std::min(n, out_n); ++i) {
        if ((*result)[i] != a * hx[i] + hy[i]) return absl::InternalError("out[" + std::to_string(i) + "] is wrong");
      }
    }
    return absl::OkStatus();
  }

  void Kernels(const std::string& dir) {
    std::ifstream in(dir + "/saxpy.ptx");
    std::stringstream text;
    text << in.rdbuf();
    const std::string ptx = text.str();
    if (ptx.find("wpk_saxpy_cuda_param_1[200]") == std::string::npos) {
      return Report(false, gpu_.name() + " kernels", dir + "/saxpy.ptx is missing or has another layout");
    }
    int arch = 0;
    std::sscanf(gpu_.info().arch.c_str(), "sm_%d", &arch);
    if (arch < 90) {
      std::printf("SKIP  %s kernels: saxpy.ptx is PTX for compute_90; this GPU is %s\n", gpu_.name().c_str(),
                  gpu_.info().arch.c_str());
      return;
    }
    SaxpyModule module(ptx, arch);
    wp::launch_ctx ctx;
    std::vector<float> out;
    double t = 0;
    absl::Status s = Saxpy(module, int64_t{1} << 24, int64_t{1} << 24, 2.0f, &ctx, &out, &t);
    Report(s.ok() && ctx.fault.flag == 0, gpu_.name() + " kernels: saxpy over 2^24 threads through RunKernel",
           std::string(s.message()));
    s = Saxpy(module, 1000, 999, 2.0f, &ctx, nullptr, &t);
    const bool fault = s.ok() && ctx.fault.flag == 1 && ctx.fault.kind == wp::FAULT_INDEX_OUT_OF_BOUNDS &&
                       ctx.fault.index == 999 && ctx.fault.shape[0] == 999;
    Report(fault, gpu_.name() + " kernels: an index fault's record comes back (index 999 of 999)",
           s.ok() ? "" : std::string(s.message()));
    std::vector<double> times;
    for (int i = 0; i < 30 && s.ok(); ++i) {
      s = Saxpy(module, 1, 1, 1.0f, &ctx, nullptr, &t);
      times.push_back(t * 1e6);
    }
    std::sort(times.begin(), times.end());
    char detail[200];
    const double median = times.empty() ? 0 : times[times.size() / 2];
    std::snprintf(detail, sizeof(detail), "median %.1f us (launch, synchronize, context round trip)", median);
    Report(s.ok(), gpu_.name() + " kernels: one-thread launch", s.ok() ? std::string(detail) : std::string(s.message()));
    const int64_t n = int64_t{1} << 26;
    s = Saxpy(module, n, n, 3.0f, &ctx, nullptr, &t);  // warm
    if (s.ok()) s = Saxpy(module, n, n, 3.0f, &ctx, nullptr, &t);
    std::snprintf(detail, sizeof(detail), "%.1f GB/s (3 x 4 bytes per thread in %.3f ms, synchronize included)",
                  double(n) * 12 / t / 1e9, t * 1e3);
    Report(s.ok(), gpu_.name() + " kernels: saxpy bandwidth over 2^26 threads",
           s.ok() ? std::string(detail) : std::string(s.message()));
  }

 private:
  CudaDevice& gpu_;
  CpuDevice cpu_{1};
  SegmentPool pool_{MemoryAccount::Create("check", 0)};
};

void TimedOut(int) {
  static const char kMessage[] = "FAIL  warpd-cuda-device-check ran past its --timeout\n";
  (void)!write(STDOUT_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(1);
}

int Run(int argc, char** argv) {
  std::string dir = "build-gpu-check", driver_path;
  bool kernels = true;
  unsigned timeout = 180;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--skip-kernels") {
      kernels = false;
    } else if (a == "--timeout" && i + 1 < argc) {
      timeout = unsigned(std::atoi(argv[++i]));
    } else if (a == "--driver" && i + 1 < argc) {
      driver_path = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      dir = a;
    } else {
      std::fprintf(stderr, "usage: warpd-cuda-device-check [DIR] [--driver PATH] [--skip-kernels] "
                           "[--timeout SECONDS]\n");
      return 2;
    }
  }
  signal(SIGALRM, TimedOut);
  alarm(timeout);
  std::unique_ptr<cuda::CudaDriver> own;
  const cuda::CudaDriver* driver = nullptr;
  if (!driver_path.empty()) {
    absl::StatusOr<std::unique_ptr<cuda::CudaDriver>> d = cuda::CudaDriver::Load(driver_path);
    if (!d.ok()) return std::printf("warpd-cuda-device-check: %s\n", std::string(d.status().message()).c_str()), 3;
    own = *std::move(d);
    driver = own.get();
  } else {
    const absl::StatusOr<const cuda::CudaDriver*>& d = cuda::CudaDriver::Process();
    if (!d.ok()) return std::printf("warpd-cuda-device-check: %s\n", std::string(d.status().message()).c_str()), 3;
    driver = *d;
  }
  if (driver->devices().empty()) {
    std::printf("warpd-cuda-device-check: %s\n", driver->no_devices_reason().c_str());
    return 3;
  }
  for (const cuda::CudaDeviceInfo& info : driver->devices()) {
    absl::StatusOr<std::unique_ptr<CudaDevice>> gpu = CudaDevice::Open(*driver, info, {});
    if (!gpu.ok()) {
      Report(false, "cuda:" + std::to_string(info.ordinal) + " opens", std::string(gpu.status().message()));
      continue;
    }
    Checker check(**gpu);
    check.Memory();
    if (kernels) check.Kernels(dir);
  }
  std::printf("warpd-cuda-device-check: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace warpd::runtime

int main(int argc, char** argv) { return warpd::runtime::Run(argc, argv); }
