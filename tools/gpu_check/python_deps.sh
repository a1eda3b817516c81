#!/usr/bin/env bash
# What the Python client and pytest need on a bare GPU machine (Python 3.12
# with numpy, maybe an older grpcio/protobuf than our generated stubs want,
# no pip, no network), gathered here for scripts/gpu-prepare.sh:
#   OUT/wheels/*.whl  grpcio and protobuf for CPython 3.12 (manylinux x86-64),
#                     at the versions of this checkout's venv, and pytest with
#                     its pure-Python dependencies;
#   OUT/stubs/*.py    the gRPC stubs setup.sh generated (git-ignored, so not
#                     in the working tree a GPU machine receives).
# tools/gpu_check/daemon_phase.sh unpacks the wheels there (no install).
# Wheels are downloaded once into ~/.cache/warpd/gpu-wheels.
# Usage: tools/gpu_check/python_deps.sh OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
py=$root/.venv/bin/python
version() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
wheels=(grpcio protobuf typing_extensions pytest pluggy iniconfig packaging pygments)
pins=()
for w in "${wheels[@]}"; do pins+=("$w==$(version "$w")"); done
cache=${XDG_CACHE_HOME:-$HOME/.cache}/warpd/gpu-wheels
mkdir -p "$cache"
"$py" -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps \
  --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d "$cache" "${pins[@]}"
rm -rf "$out"
mkdir -p "$out/wheels" "$out/stubs"
for w in "${wheels[@]}"; do
  v=$(version "$w")
  f=$(ls "$cache"/"${w}"-"${v}"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$f" ]; then
    f=$(ls "$cache"/*.whl | grep -i "/${w//_/[-_]}-${v}-" | head -1 || true)
  fi
  if [ -z "$f" ]; then
    echo "python_deps: no wheel of $w $v in $cache" >&2
    exit 1
  fi
  cp "$f" "$out/wheels/"
done
cp "$root"/clients/python/warpd/v1/*_pb2*.py "$out/stubs/"
echo "python_deps: $(ls "$out/wheels" | wc -l) wheels, $(ls "$out/stubs" | wc -l) stubs in $out ($(du -sh "$out" | cut -f1))"
