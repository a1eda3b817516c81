#!/usr/bin/env bash
# tools/gpu_check/daemon_selftest.sh DIR BUILD_DIR
#
# Dry run of the GPU check's daemon phase (tools/gpu_check/daemon_phase.sh)
# here, so a lent GPU machine's minutes are not spent on a broken bundle:
#   - DIR/daemon/bin/warpd runs from its own libraries (ldd finds every one
#     in DIR/daemon/lib or glibc), and says it has no CPU JIT;
#   - on the stand-in driver (tests/fake_cuda: host memory, no kernel code
#     run), the daemon opens its GPUs without --cuda-execution, and
#     bench/gpu_daemon.py --quick, run by a Python 3.12 that has only numpy
#     plus DIR/python's unpacked wheels, moves 16 MiB to cuda:0 and back
#     intact (its kernel figures are meaningless there and not checked);
#   - pytest from those wheels runs test_gpu.py's device test, which needs no
#     kernel;
#   - Warp's test_arithmetic.py runs through the harness copied into DIR
#     (when DIR/warp_suite exists) with tests registered for cuda:0 (they
#     fail there: no kernel runs on the stand-in).
# Needs python3.12 (pyenv's or the system's); numpy is installed into a venv
# under BUILD_DIR on first use. Without a python3.12 it says so and stops
# with status 1: the phase would not have been tried.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
warpd=$dir/daemon/bin/warpd
fail() { echo "daemon_selftest: FAIL: $*" >&2; exit 1; }

missing=$(ldd "$warpd" | grep "not found" || true)
[ -z "$missing" ] || fail "the bundled daemon misses libraries: $missing"
outside=$(ldd "$warpd" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs -r readlink -f | grep -v "^$dir/daemon/lib/" |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so' || true)
[ -z "$outside" ] || fail "the bundled daemon loads libraries from outside its bundle: $outside"

py312=
for c in python3.12 /usr/bin/python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
  if "$c" -c "import sys; assert sys.version_info[:2] == (3, 12)" >/dev/null 2>&1; then
    py312=$c
    break
  fi
done
[ -n "$py312" ] || fail "no python3.12 here to try the wheels with (pyenv install 3.12, or apt's python3.12)"
venv=$build/gpu-check-py312
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
  rm -rf "$venv"
  "$py312" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy
fi

fake_dir=$build/gpu-check-fake-driver
mkdir -p "$fake_dir"
ln -sf "$build/tests/fake_cuda/libwarpd_fake_libcuda.so" "$fake_dir/libcuda.so.1"
work=$(mktemp -d /tmp/warpd-daemon-selftest.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The phase itself, with the quick bench and only the device test.
set +e
# The stand-in cuBLAS too: this machine's real one would drive the stand-in driver.
LD_LIBRARY_PATH="$fake_dir" PYTHON="$venv/bin/python" WARPD_GPU_BENCH_ARGS=--quick \
  WARPD_CUBLAS="$build/tests/fake_cuda/libwarpd_fake_libcublas.so" \
  WARPD_GPU_E2E_FILES="tests/e2e/test_gpu.py::test_the_default_device_is_the_gpu" \
  WARPD_GPU_SUITE_ONLY=test_arithmetic.py \
  tools/gpu_check/daemon_phase.sh "$dir" "$work/results" > "$work/phase.log" 2>&1
status=$?
set -e
cat "$work/phase.log"
# The stand-in driver runs no kernel: saxpy's value is wrong there, so the
# bench exits 1 and the phase with it. What must hold is everything else.
[ "$status" -le 1 ] || fail "the daemon phase could not run (exit status $status)"
"$venv/bin/python" - "$work/results" <<'PY' || fail "the phase's results are not what the stand-in driver gives"
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path
res = Path(sys.argv[1])
bench = json.loads((res / "gpu-daemon-bench.json").read_text())
assert bench["device"]["alias"] == "cuda:0" and bench["device"]["name"] == "Fake GPU 0", bench
assert bench["transfer_correct"] is True, bench
assert bench["matmul_correct"] is True, bench  # the stand-in cuBLAS computes it
for key in ("launch_sync_us", "queued_launches_per_s", "graph_replay_us_per_launch", "saxpy_gb_per_s",
            "matmul_gflop_per_s", "upload_gb_per_s", "download_gb_per_s"):
    assert key in bench, key
suite = ET.parse(res / "e2e-gpu.xml").getroot()
suite = suite if suite.tag == "testsuite" else suite[0]
assert int(suite.get("tests")) == 1 and int(suite.get("failures")) == 0 and int(suite.get("errors")) == 0 \
    and int(suite.get("skipped")) == 0, suite.attrib
print("daemon_selftest: bench keys present, transfers intact, the device test passed")
suite = res / "warp-suite-cuda.txt"
if suite.exists():
    rows = [line.split("\t") for line in suite.read_text().splitlines()[1:]]
    cuda = [r for r in rows if r[0] == "test_arithmetic" and r[1] == "cuda:0"]
    assert cuda and sum(int(x) for x in cuda[0][2:]) > 0, rows  # Warp registered tests for cuda:0
    print("daemon_selftest: Warp's tests ran for cuda:0:", "\t".join(cuda[0]))
PY
grep -q "CPU kernels: none: this warpd was built without the CPU JIT" "$work/results/gpu-daemon-bench.daemon.log" ||
  fail "the lean daemon's log does not say it has no CPU JIT"
echo "daemon_selftest: ok (nothing here says anything about a GPU)"
