#!/usr/bin/env bash
# The GPU check's daemon phase (scripts/gpu-check.sh runs it on the GPU
# machine): the lean CUDA-only daemon that scripts/gpu-prepare.sh put in
# DIR/daemon, driven through the Python client as users drive it.
#   1. bench/gpu_daemon.py: launch latency, queued launches, graph replay
#      cost, saxpy bandwidth, cuBLAS matmul GFLOP/s, 256 MiB upload/download,
#      checked against numpy -> RESULTS/gpu-daemon-bench.json
#   2. pytest: tests/e2e/test_gpu.py (every test checks a value computed on
#      the GPU) and the CPU conformance files below, whose arrays and launches
#      land on cuda:0, the client's default device when a GPU runs work
#      -> RESULTS/e2e-gpu.xml (JUnit) and e2e-gpu.log
# Python: the machine's python3 (3.12) with its numpy; grpcio, protobuf and
# pytest come from DIR/python/wheels, unpacked into a temporary directory and
# put first on PYTHONPATH (nothing is installed).
# Environment: PYTHON (python3), WARPD_GPU_PHASE_TIMEOUT (seconds for the
# pytest run, default 240), WARPD_GPU_E2E_FILES (replaces the file list),
# WARPD_GPU_SUITE_TIMEOUT (seconds for Warp's tests, default 150),
# WARPD_GPU_SUITE_ONLY (Warp test files to run instead of DIR/warp_suite's).
# Exit status: 0 all passed, 1 a check or test failed, 2 setup failed.
# Usage: tools/gpu_check/daemon_phase.sh DIR RESULTS
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=$(cd "$1" && pwd)
results=$2
mkdir -p "$results"
results=$(cd "$results" && pwd)
python=${PYTHON:-python3}
warpd="$dir/daemon/bin/warpd"
if [ ! -x "$warpd" ]; then
  echo "daemon_phase: $warpd is missing (scripts/gpu-prepare.sh builds it)" >&2
  exit 2
fi
tmp=$(mktemp -d /tmp/warpd-gpu-phase.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
site="$tmp/site"
mkdir -p "$site"
for w in "$dir"/python/wheels/*.whl; do
  "$python" -m zipfile -e "$w" "$site" || { echo "daemon_phase: cannot unpack $w" >&2; exit 2; }
done
# The generated stubs are git-ignored: bring them into the client if absent.
for f in "$dir"/python/stubs/*.py; do
  [ -f "clients/python/warpd/v1/$(basename "$f")" ] || cp "$f" clients/python/warpd/v1/
done
export PYTHONPATH="$site:$root/clients/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
"$python" -c "import grpc, google.protobuf, numpy, pytest, warpd; print('daemon_phase: python', \
'.'.join(map(str, __import__('sys').version_info[:3])), 'grpcio', grpc.__version__, 'protobuf', \
google.protobuf.__version__, 'numpy', numpy.__version__)" || exit 2
"$warpd" --version || exit 2

status=0
echo "daemon_phase: bench/gpu_daemon.py"
timeout 90 "$python" bench/gpu_daemon.py "$warpd" --out "$results/gpu-daemon-bench.json" ${WARPD_GPU_BENCH_ARGS:-}
s=$?
[ "$s" -ne 0 ] && { echo "daemon_phase: gpu_daemon.py exit status $s" >&2; status=1; }

files=${WARPD_GPU_E2E_FILES:-"tests/e2e/test_gpu.py tests/e2e/test_arrays.py tests/e2e/test_language.py
  tests/e2e/test_builtins_scalar.py tests/e2e/test_builtins_vector.py tests/e2e/test_builtins_matrix.py
  tests/e2e/test_builtins_quat_transform.py tests/e2e/test_builtins_random.py tests/e2e/test_autodiff.py
  tests/e2e/test_struct_arrays.py tests/e2e/test_functions.py tests/e2e/test_generics.py
  tests/e2e/test_array_views.py tests/e2e/test_operations.py"}
echo "daemon_phase: pytest on cuda:0 (${WARPD_GPU_PHASE_TIMEOUT:-240} s at most)"
# shellcheck disable=SC2086
WARPD_BIN="$warpd" timeout "${WARPD_GPU_PHASE_TIMEOUT:-240}" "$python" -m pytest -q -p no:cacheprovider \
  -o addopts="" -o junit_family=xunit2 --junitxml="$results/e2e-gpu.xml" $files > "$results/e2e-gpu.log" 2>&1
s=$?
tail -n 40 "$results/e2e-gpu.log"
[ "$s" -ne 0 ] && { echo "daemon_phase: pytest exit status $s (124: timed out)" >&2; status=1; }

# 3. NVIDIA Warp 1.19's own tests (DIR/warp_suite, tools/gpu_check/warp_suite_bundle.sh)
#    through the lean daemon, which serves cpu (no kernels there) and cuda:0:
#    the counts of the tests Warp registers for cuda:0, and of those for the
#    CPU for reference -> RESULTS/warp-suite-cuda.txt, warp-suite-failures.tsv;
#    the failures of cuda:0's and device-neutral tests with their messages,
#    kept even when the time limit cuts the run -> warp-suite-cuda-failures.tsv.
if [ -f "$dir/warp_suite/suite/run.sh" ]; then
  py="$tmp/python"
  # run.sh sets PYTHONPATH to its shim; the wheels and the client follow it.
  printf '#!/bin/sh\nPYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}%s:%s" exec %s "$@"\n' "$site" "$root/clients/python" \
    "$(command -v "$python")" > "$py"
  chmod +x "$py"
  files=${WARPD_GPU_SUITE_ONLY:-$(cat "$dir/warp_suite/files.txt")}
  echo "daemon_phase: Warp's tests on cuda:0 (${WARPD_GPU_SUITE_TIMEOUT:-150} s at most)"
  WARP_SUITE_HOME="$dir/warp_suite/home" WARPD_PY="$py" WARPD_BIN="$warpd" RESULTS="$tmp/warp-suite" \
    FILES="$files" PER_FILE_TIMEOUT=120 timeout "${WARPD_GPU_SUITE_TIMEOUT:-150}" \
    bash "$dir/warp_suite/suite/run.sh" > "$tmp/warp-suite.log" 2>&1
  echo "daemon_phase: run.sh exit status $? (124: timed out; the counts cover the files it finished)"
  "$python" - "$tmp/warp-suite" "$results/warp-suite-cuda-failures.tsv" > "$results/warp-suite-cuda.txt" <<'PY'
import collections, json, pathlib, re, sys
res = pathlib.Path(sys.argv[1])
counts = collections.defaultdict(collections.Counter)
failed = []  # the GPU's and the device-neutral tests' failures, with their messages
for f in sorted(res.glob("*.jsonl")):
    for line in f.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a file cut off by the time limit
        if r.get("kind") != "test":
            continue
        m = re.search(r"_(cpu|cuda_\d+)$", r["id"])
        dev = m.group(1).replace("cuda_", "cuda:") if m else "any"
        counts[(f.stem, dev)][r["outcome"]] += 1
        if dev != "cpu" and r["outcome"] in ("fail", "error"):
            msg = " ".join(str(r.get("message", "")).split())[:600]
            failed.append(f"{f.stem}\t{r['id']}\t{r['outcome']}\t{msg}")
pathlib.Path(sys.argv[2]).write_text("file\ttest\toutcome\tmessage\n" + "".join(x + "\n" for x in failed))
print("file\tdevice\tpass\tfail\terror\tskip")
total = collections.defaultdict(collections.Counter)
for (stem, dev), c in sorted(counts.items()):
    print(f"{stem}\t{dev}\t{c['pass']}\t{c['fail']}\t{c['error']}\t{c['skip']}")
    total[dev].update(c)
for dev, c in sorted(total.items()):
    print(f"TOTAL\t{dev}\t{c['pass']}\t{c['fail']}\t{c['error']}\t{c['skip']}")
PY
  cat "$results/warp-suite-cuda.txt"
  [ -f "$tmp/warp-suite/failures.tsv" ] && cp "$tmp/warp-suite/failures.tsv" "$results/warp-suite-failures.tsv"
fi
exit "$status"
