#!/usr/bin/env bash
# tools/gpu_check/selftest.sh DIR BUILD_DIR
#
# Self-test of scripts/gpu_check.py on a machine without a GPU, so the one
# run on a lent GPU machine is not spent on a bug in the runner. Runs it
# against tools/gpu_check/fake_cuda.c (a stand-in libcuda that runs each
# kernel's CPU entry, compiled here from the same generated source, src/*.cu)
# and checks that
#   - every check of DIR passes there (runner, manifests and expected values
#     agree with warpd's CPU code);
#   - a JIT failure fails, with the JIT error log printed;
#   - a wrong expected value, a wrong expected fault record and a kernel that
#     outlives its cancel deadline each fail (in a copy of DIR);
#   - no driver library, and the toolkit's stub libcuda (which exports every
#     driver entry point but has no driver), exit with status 3;
#   - a missing DIR exits with status 2.
# None of this says anything about a GPU. Called by scripts/gpu-prepare.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=$1
build=$2
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
cxx=/usr/lib/llvm-${WARPD_LLVM_VERSION:-19}/bin/clang++
[ -x "$cxx" ] || cxx=clang++
fake=$build/tools/gpu_check/libgpu_check_fake_cuda.so
work=$build/tools/gpu_check/selftest
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "gpu selftest: FAILED: $*" >&2
  exit 1
}

# The kernels' CPU entries, with the CPU JIT's options (compiler/backend/clang_compile.cc).
# Of the overload modules (gzip-compressed, gpu-prepare.sh --overloads) only
# the first: the cases run here are the others and that one.
sources=("$dir"/src/*.cu)
only=()
first_overload=$(ls "$dir"/src/overloads_*.cu.gz 2>/dev/null | sort -V | head -1 || true)
if [ -n "$first_overload" ]; then
  name=$(basename "$first_overload" .cu.gz)
  gunzip -c "$first_overload" >"$work/$name.cu"
  sources+=("$work/$name.cu")
  cases=$(python3 -c 'import json, sys
names = [c.split(".json")[0] for c in json.load(open(sys.argv[1]))["cases"]]
print(",".join(n for n in names if not n.startswith("overloads_") or n == sys.argv[2]))' "$dir/checks.json" "$name")
  only=(--only "$cases")
fi
"$cxx" -std=c++17 -O2 -ffreestanding -fno-exceptions -fno-rtti -fno-math-errno -ffp-contract=off -fPIC -shared \
  -I runtime/native -x c++ "${sources[@]}" -o "$work/kernels_cpu.so"

# run EXPECTED_STATUS LOG [env...] -- runner args...
run() {
  local want=$1 log=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local rc=0
  env WARPD_GPU_CHECK_LIBCUDA="$fake" FAKE_CUDA_KERNELS="$work/kernels_cpu.so" "${envs[@]}" \
    "$py" scripts/gpu_check.py "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then
    cat "$log" >&2
    fail "gpu_check.py $* exited with $rc, expected $want"
  fi
}

expect_in() {  # LOG TEXT
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "output lacks '$2'"; }
}

run 0 "$work/pass.log" -- "$dir" "${only[@]}"
grep -q '^FAIL' "$work/pass.log" && { cat "$work/pass.log" >&2; fail "a FAIL line with status 0"; }
passed=$(grep -c '^PASS' "$work/pass.log")
echo "gpu selftest: ok: $passed checks pass against the stand-in driver (kernels on the CPU)"

run 1 "$work/jit.log" FAKE_CUDA_FAIL_LOAD=1 -- "$dir" --only saxpy
expect_in "$work/jit.log" "FAIL  saxpy/load: cuModuleLoadDataEx(saxpy.ptx) failed: CUDA_ERROR_INVALID_PTX"
expect_in "$work/jit.log" "fake rejection (FAKE_CUDA_FAIL_LOAD is set)"
echo "gpu selftest: ok: a JIT failure fails and prints the JIT error log"

broken=$work/broken
cp -r "$dir" "$broken"
"$py" - "$broken" <<'EOF'
import json, struct, sys
d = sys.argv[1]
def edit(name, fn):
    path = f"{d}/{name}"
    m = json.load(open(path))
    fn(m)
    json.dump(m, open(path, "w"), indent=1)
# saxpy: one expected value wrong (a copy of the shared file, so only this launch sees it).
m = json.load(open(f"{d}/saxpy.json"))
spec = [a for a in m["launches"][0]["arrays"] if a["param"] == "out"][0]
data = bytearray(open(f"{d}/{spec['expect']}", "rb").read())
data[4 * 1000:4 * 1001] = struct.pack("<f", 123.0)
open(f"{d}/data/broken.bin", "wb").write(data)
def saxpy(m):
    [a for a in m["launches"][0]["arrays"] if a["param"] == "out"][0]["expect"] = "data/broken.bin"
edit("saxpy.json", saxpy)
def oob(m):
    m["launches"][0]["fault"]["index"] = 999
edit("oob_past_end.json", oob)
def cancel(m):
    [l for l in m["launches"] if l["name"] == "cancel_while_running"][0]["deadline_s"] = -1.0  # any end is past it, however fast
edit("loop_cancel.json", cancel)
# The first overload module: one reference output of its first kernel far off.
import glob, gzip, os
first = sorted(glob.glob(f"{d}/overloads_*.json.gz"), key=lambda p: int(p.split("_")[-1].split(".")[0]))[:1]
if first:
    m = json.loads(gzip.open(first[0]).read())
    spec = [a for a in m["launches"][0]["arrays"] if a["rule"] == "reference" and a["param"].startswith("out_")][0]
    data = bytearray(open(f"{d}/{spec['expect']}", "rb").read())
    data[0:4] = bytes(~b & 0xFF for b in data[0:4])
    open(f"{d}/data/broken_reference.bin", "wb").write(data)
    spec["expect"] = "data/broken_reference.bin"
    gzip.open(first[0], "wb").write(json.dumps(m).encode())
    open(f"{d}/broken_reference.txt", "w").write(f"{m['name']}/{m['launches'][0]['name']}")
EOF
run 1 "$work/broken.log" -- "$broken" "${only[@]}"
expect_in "$work/broken.log" "FAIL  saxpy/grid_stride"
expect_in "$work/broken.log" "out: 1 of 262147 values wrong, first at element 1000"
expect_in "$work/broken.log" "PASS  saxpy/full_grid"
expect_in "$work/broken.log" "fault record: index 1000 (want 999)"
expect_in "$work/broken.log" "after cancel was set"
if [ -f "$broken/broken_reference.txt" ]; then
  expect_in "$work/broken.log" "FAIL  $(cat "$broken/broken_reference.txt")"
  expect_in "$work/broken.log" "differ from the CPU's"
fi
echo "gpu selftest: ok: a wrong value, a wrong fault record, a missed cancel deadline and an output unlike the CPU's each fail"

run 3 "$work/nodriver.log" WARPD_GPU_CHECK_LIBCUDA=/nonexistent/libcuda.so.1 -- "$dir"
expect_in "$work/nodriver.log" "no CUDA driver"
stub=${WARPD_CUDA_ROOT:-/usr/local/cuda}/lib64/stubs/libcuda.so
if [ -f "$stub" ]; then
  run 3 "$work/stub.log" WARPD_GPU_CHECK_LIBCUDA="$stub" -- "$dir"
  expect_in "$work/stub.log" "CUDA_ERROR_STUB_LIBRARY"
  echo "gpu selftest: ok: no driver exits 3; the toolkit's stub libcuda has every entry point the runner uses"
else
  echo "gpu selftest: ok: no driver exits 3 (no stub libcuda here to check the entry points against)"
fi
run 2 "$work/nodir.log" -- "$work/no-such-dir"
echo "gpu selftest: ok: a missing directory exits 2"
