#!/usr/bin/env bash
# Prepares the GPU check (docs/architecture.md, Testing) on the build machine,
# which needs the CUDA toolkit (NVRTC, ptxas) but no GPU:
#   1. builds tools/gpu_check (gpu_check_gen and the self-test's stand-in
#      driver) in build/ through the shared build lock;
#   2. fills build-gpu-check/ (git-ignored, about 5 MB): per case NVRTC's PTX
#      for compute_90, a manifest (entry, argument layout, launches, inputs,
#      expected outputs and fault records computed on the host);
#   3. assembles each PTX with ptxas -arch=sm_90 (the generator did too) and
#      keeps the cubin beside it: the runner falls back to it, and says so,
#      only if the GPU's driver cannot JIT the PTX;
#   4. self-tests scripts/gpu_check.py without a GPU (tools/gpu_check/selftest.sh);
#   5. builds the lean CUDA-only daemon into build-gpu-check/daemon/
#      (scripts/build-lean.sh, build-lean/), gathers the client's Python
#      wheels and stubs into build-gpu-check/python/, and dry-runs the daemon
#      phase on the stand-in driver (tools/gpu_check/daemon_selftest.sh).
#      WARPD_GPU_NO_DAEMON=1 skips this step.
# With --overloads, also every overload of the builtin table (33 modules, each
# kernel's outputs computed by its CPU entry here; about 10 minutes on 2
# cores), written gzip-compressed; the self-test runs the first of them.
# Then, on a machine with an NVIDIA GPU, from the repository root with
# build-gpu-check/ copied along: scripts/gpu-check.sh
# Usage: scripts/gpu-prepare.sh [--overloads] [OUT_DIR]   (default build-gpu-check)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${WARPD_BUILD_DIR:-build}
overloads=()
limit_mib=56
if [ "${1:-}" = "--overloads" ]; then
  overloads=(--overloads 0:-1)
  limit_mib=62
  shift
fi
out=${1:-build-gpu-check}

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "gpu-prepare: $build/ is not configured; run scripts/setup.sh first" >&2
  exit 1
fi
if ! grep -q '^WARPD_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "gpu-prepare: $build/ was configured without the CUDA backend (WARPD_WITH_CUDA=OFF: no" \
    "CUDA toolkit with nvrtc.h found); the generator needs NVRTC" >&2
  exit 1
fi
cmake --build "$build" --target gpu_check_gen gpu_check_fake_cuda warpd_fake_libcublas

label=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- compiler runtime/native tools/gpu_check 2>/dev/null; then
  label="$label+uncommitted"
fi
rm -rf "$out"
"$build/bin/gpu_check_gen" "$out" --label "$label" "${overloads[@]}"
# warpd-cuda-info (tools/cuda_info): warpd's own driver layer listing the GPUs
# and retaining each primary context; gpu-check.sh runs it first. It needs only
# glibc (2.36 or newer) and the driver: absl, libstdc++ and libgcc are static.
cmake --build "$build" --target warpd-cuda-info warpd-cuda-device-check
mkdir -p "$out/bin"
strip -o "$out/bin/warpd-cuda-info" "$build/bin/warpd-cuda-info"
# warpd-cuda-device-check (tools/cuda_device_check): warpd's CUDA device
# (memory, staging, RunKernel with saxpy.ptx from above) on the real driver;
# static like warpd-cuda-info. Its self-test here: the stand-in driver,
# memory only.
strip -o "$out/bin/warpd-cuda-device-check" "$build/bin/warpd-cuda-device-check"
"$out/bin/warpd-cuda-device-check" "$out" --driver "$build/tests/fake_cuda/libwarpd_fake_libcuda.so" --skip-kernels

ptxas=${WARPD_PTXAS:-${WARPD_CUDA_ROOT:-/usr/local/cuda}/bin/ptxas}
for ptx in "$out"/*.ptx; do
  "$ptxas" -arch=sm_90 "$ptx" -o "${ptx%.ptx}.sm_90.cubin"
done
echo "gpu-prepare: $ptxas -arch=sm_90 accepted all $(ls "$out"/*.ptx | wc -l) PTX files"

tools/gpu_check/selftest.sh "$out" "$build"

# The daemon phase (tools/gpu_check/daemon_phase.sh): the lean CUDA-only
# daemon with the shared libraries it needs (scripts/build-lean.sh), and the
# wheels and stubs the Python client and pytest need on a bare Python 3.12.
if [ "${WARPD_GPU_NO_DAEMON:-0}" != 1 ]; then
  scripts/build-lean.sh "$out/daemon"
  tools/gpu_check/python_deps.sh "$out/python"
  tools/gpu_check/warp_suite_bundle.sh "$out/warp_suite"
  tools/gpu_check/daemon_selftest.sh "$out" "$build"
fi

bytes=$(du -sb "$out" | cut -f1)
if [ "$bytes" -gt $((limit_mib << 20)) ]; then
  echo "gpu-prepare: $out is $bytes bytes; keep it well under 64 MiB (what a lent machine takes along)" >&2
  exit 1
fi
echo "gpu-prepare: $out/ is ready ($((bytes >> 10)) KiB). On the GPU machine, from the repository root" \
  "with $out/ copied along: scripts/gpu-check.sh"
