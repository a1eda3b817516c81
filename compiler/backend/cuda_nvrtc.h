// The CUDA backend's compiler half: generated CUDA C++ -> PTX with NVRTC, and a
// ptxas check of the result.
//
// NVRTC is loaded with dlopen at run time, never linked: a daemon on a machine
// without the CUDA toolkit starts and serves the CPU device; only Nvrtc::Load()
// fails. Nothing here needs a GPU or the driver.
//
// Example:
//   absl::StatusOr<std::shared_ptr<Nvrtc>> nvrtc = Nvrtc::Load();
//   if (!nvrtc.ok()) return nvrtc.status();  // no toolkit: CUDA is disabled
//   absl::StatusOr<std::string> ptx = (*nvrtc)->CompileToPtx(source, "module_ab12.cu", 90);
//   // *ptx has no trailing NUL; cuModuleLoadData wants one (ptx->c_str()).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warpd::compiler {

// A loaded NVRTC library. Thread-safe: any number of threads may call the const
// methods concurrently (each compile uses its own nvrtcProgram; NVRTC allows
// concurrent calls on distinct programs). The library stays loaded for the life
// of the process, also after the last Nvrtc is destroyed (see Load()).
class Nvrtc {
 public:
  // Loads NVRTC, trying in order: $WARPD_NVRTC (a path), libnvrtc.so.13,
  // libnvrtc.so.12, libnvrtc.so (the loader's search path), then
  // <WARPD_CUDA_ROOT>/lib64/libnvrtc.so* (the CMake cache variable; newest
  // version first). The first library that opens and exports every function
  // we use wins.
  // Errors: FAILED_PRECONDITION "NVRTC not found: tried <each candidate: why>".
  static absl::StatusOr<std::shared_ptr<Nvrtc>> Load();

  // Like Load(), with an explicit candidate list (dlopen names or paths),
  // tried in order. For tests and for a configured path.
  static absl::StatusOr<std::shared_ptr<Nvrtc>> LoadFrom(const std::vector<std::string>& candidates);

  ~Nvrtc();
  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;

  // "major.minor" of the loaded library, e.g. "13.0". Part of cache keys.
  std::string version() const;
  // Where the library was loaded from (the candidate that succeeded).
  const std::string& library() const;
  // The compute capabilities this NVRTC can target (e.g. 75, 80, ..., 120),
  // ascending. A device newer than the toolkit gets the largest one <= its own.
  const std::vector<int>& supported_archs() const { return archs_; }

  // Compiles one translation unit to PTX for compute_<arch>. `source` may
  // include any runtime/native header ("warpd/native/builtin.h"); those come
  // from warpd::native::EmbeddedHeaders(), nothing is read from disk. `name`
  // is the file name NVRTC uses in diagnostics. Options: -std=c++17,
  // --gpu-architecture=compute_<arch>, no fast math, no -default-device
  // (kernels and functions say __global__ / __device__ themselves).
  // Returns the PTX text without the trailing NUL.
  // Errors: INVALID_ARGUMENT if this NVRTC cannot target `arch`; INTERNAL with
  // NVRTC's full log if the source does not compile (we generated it, so that
  // is our bug, not the user's); RESOURCE_EXHAUSTED when NVRTC runs out of
  // memory; INTERNAL for any other NVRTC failure.
  absl::StatusOr<std::string> CompileToPtx(std::string_view source, std::string_view name,
                                           int arch) const;

  struct Api;  // the dlsym'd entry points (cuda_nvrtc.cc)

 private:
  Nvrtc(std::string library, std::unique_ptr<Api> api);

  // The dlopen handle is not kept: the library is never closed (see Load()).
  std::string library_;
  std::unique_ptr<Api> api_;
  int major_ = 0;
  int minor_ = 0;
  std::vector<int> archs_;
};

// Assembles `ptx` with `ptxas -arch=sm_<arch>` in a private temporary
// directory, to prove that the PTX NVRTC produced is valid for a real GPU
// without needing one. ptxas is $WARPD_PTXAS if set (and then only that),
// else <WARPD_CUDA_ROOT>/bin/ptxas, else the first ptxas on PATH.
// Errors: FAILED_PRECONDITION if no ptxas can be found or run; INTERNAL with
// ptxas's output if it rejects the PTX; INTERNAL if the temporary files
// cannot be written. Thread-safe (each call has its own directory).
absl::Status VerifyPtx(std::string_view ptx, int arch);

}  // namespace warpd::compiler
