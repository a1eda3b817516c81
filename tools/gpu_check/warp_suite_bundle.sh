#!/usr/bin/env bash
# Gathers NVIDIA Warp 1.19's own tests and warpd's harness for them
# (../shared/warp_suite, the tests it fetched) into OUT, for the GPU check's
# daemon phase to run on cuda:0 (tools/gpu_check/daemon_phase.sh): the
# ../shared beside a checkout does not travel to a GPU machine.
#   OUT/suite/            run.sh, run_file.py, shim/, ... (../shared/warp_suite)
#   OUT/home/tests_1_19/  the tests (from fetch.sh's cache) the phase runs,
#                         stamped as fetched; OUT/files.txt names them
# Without ../shared/warp_suite it says so and makes nothing (exit 0).
# Usage: tools/gpu_check/warp_suite_bundle.sh OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
suite=$root/../shared/warp_suite
if [ ! -f "$suite/run.sh" ]; then
  echo "warp_suite_bundle: no $suite here: the GPU check will not run Warp's tests" >&2
  exit 0
fi
bash "$suite/fetch.sh"
home=${WARP_SUITE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/warp-suite-1.19}
rm -rf "$out"
mkdir -p "$out/home"
cp -r "$suite" "$out/suite"
rm -rf "$out/suite/__pycache__"
# Only the files the phase runs (OUT/files.txt), with the package files and
# helpers every test may import: the whole folder would pass what a GPU
# machine takes along.
files=${WARPD_GPU_SUITE_FILES:-"geometry/test_mesh.py geometry/test_bvh.py geometry/test_hash_grid.py
  geometry/test_mesh_query_ray.py geometry/test_mesh_query_aabb.py geometry/test_volume.py
  geometry/test_mesh_query_point.py test_spatial.py matrix/test_mat.py test_struct.py test_array.py test_launch.py
  test_grad.py test_tape.py test_rand.py test_arithmetic.py test_atomic.py test_vec.py test_quat.py"}
src=$home/tests_1_19
dst=$out/home/tests_1_19
mkdir -p "$dst"
cp "$src"/*.py "$src"/LICENSE.md "$dst/"
rm -f "$dst"/test_*.py
for f in $files; do
  mkdir -p "$dst/$(dirname "$f")"
  for helper in __init__.py utils.py; do
    [ -f "$src/$(dirname "$f")/$helper" ] && cp "$src/$(dirname "$f")/$helper" "$dst/$(dirname "$f")/"
  done
  cp "$src/$f" "$dst/$f"
done
[ -d "$src/assets" ] && cp -r "$src/assets" "$dst/assets"
echo $files > "$out/files.txt"
find "$out" -name __pycache__ -type d -prune -exec rm -rf {} +
cp "$home/.fetched" "$out/home/.fetched"
echo "warp_suite_bundle: $out ($(du -sh "$out" | cut -f1))"
