#!/usr/bin/env bash
# Builds the lean CUDA-only daemon (issue 26; docs/architecture.md, "The lean
# CUDA build") and bundles it to run on a bare GPU machine, one with the NVIDIA
# driver and glibc 2.36 or newer and nothing else of ours:
#   build-lean/                  the CMake build (WARPD_CPU_JIT=OFF: no LLVM or
#                                clang; WARPD_WITH_BLAS=OFF: no OpenBLAS)
#   OUT/bin/warpd                the daemon, stripped, RPATH $ORIGIN/../lib
#                                (DT_RPATH, so it holds for the libraries too)
#   OUT/lib/*.so*                every shared library it needs but glibc's and
#                                the driver's (gRPC, protobuf, absl, OpenSSL,
#                                spdlog, libstdc++, ...)
# The daemon serves the CPU device for arrays only (no kernels there) and
# opens every GPU for arrays and kernels without --cuda-execution; NVRTC is
# dlopen'd from the machine's CUDA toolkit as in the full build.
# Usage: scripts/build-lean.sh [OUT]   (default build-lean/bundle)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-build-lean/bundle}
export CC=${CC:-clang-19} CXX=${CXX:-clang++-19}
if [ ! -f build-lean/build.ninja ]; then
  cmake -S . -B build-lean -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWARPD_CPU_JIT=OFF -DWARPD_WITH_BLAS=OFF -DWARPD_WITH_CUDA=ON -DWARPD_BUILD_CPP_CLIENT=OFF \
    '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags
fi
cmake --build build-lean --target warpd

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
strip -o "$out/bin/warpd" build-lean/bin/warpd
# Everything the loader resolves for it, but glibc (the GPU machine has its
# own, at least 2.36 as Debian 12's) and the driver (loaded with dlopen).
glibc='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|ld-linux-aarch64|linux-vdso)\.so'
ldd build-lean/bin/warpd | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  if [[ "$name" =~ $glibc ]]; then continue; fi
  if [[ "$name" == libLLVM* || "$name" == libclang* || "$name" == libopenblas* ]]; then
    echo "build-lean: build-lean/bin/warpd needs $name: the lean build must not" >&2
    exit 1
  fi
  strip --strip-unneeded -o "$out/lib/$name" "$path"
done
# The bundle runs from its own libraries, not the host's.
if ! readelf -d "$out/bin/warpd" | grep -q 'RPATH.*\$ORIGIN/../lib'; then
  echo "build-lean: $out/bin/warpd has no DT_RPATH \$ORIGIN/../lib" >&2
  exit 1
fi
echo "build-lean: $out/ is ready: $(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) libraries"
