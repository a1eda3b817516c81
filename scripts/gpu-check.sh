#!/usr/bin/env bash
# Runs the GPU check (docs/architecture.md, Testing) on a machine with an
# NVIDIA GPU. Needs only Python 3 with numpy and the CUDA driver
# (libcuda.so.1): no toolkit, no build. Run from anywhere in the repository
# after scripts/gpu-prepare.sh filled build-gpu-check/ on the build machine
# and that folder (git-ignored) was copied along.
# Last, when DIR/daemon holds the lean daemon, tools/gpu_check/daemon_phase.sh
# (the daemon and the Python client on the GPU; results in $OUT or DIR/results).
# Usage: scripts/gpu-check.sh [DIR] [--only CASE] [--timeout SECONDS]
# Exit status (scripts/gpu_check.py): 0 every check passed, 1 a check failed,
# 2 missing/bad DIR or no numpy, 3 no CUDA driver or device.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=build-gpu-check
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  dir=$1
  shift
fi
if [ ! -f "$dir/checks.json" ]; then
  echo "gpu-check: $dir/checks.json is missing (in $root). Run scripts/gpu-prepare.sh on the build machine" \
    "(it needs the CUDA toolkit, not a GPU) and bring $dir/ here: it is git-ignored, so copy it" \
    "explicitly." >&2
  exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "gpu-check: python3 is missing" >&2
  exit 2
fi
# First the driver as warpd's own CUDA layer sees it (tools/cuda_info, copied
# here by gpu-prepare.sh): devices, versions, primary contexts. Its failure is
# the check's, with its exit status (3: no driver or device, 1: a failure).
if [ -f "$dir/bin/warpd-cuda-info" ]; then
  echo "gpu-check: $dir/bin/warpd-cuda-info"
  "$dir/bin/warpd-cuda-info"
  cuda_info_status=$?
  if [ "$cuda_info_status" -ne 0 ]; then
    echo "gpu-check: warpd-cuda-info failed (exit status $cuda_info_status)" >&2
    exit "$cuda_info_status"
  fi
fi
# Then warpd's CUDA device itself (tools/cuda_device_check): memory against
# the CPU device's, staging bandwidth, saxpy through RunKernel, an index
# fault, launch overhead. Its failure fails the check, after the generated
# kernels' checks below have run too.
device_status=0
if [ -f "$dir/bin/warpd-cuda-device-check" ]; then
  echo "gpu-check: $dir/bin/warpd-cuda-device-check"
  "$dir/bin/warpd-cuda-device-check" "$dir"
  device_status=$?
fi
python3 scripts/gpu_check.py "$dir" "$@"
status=$?
if [ "$status" -eq 0 ] && [ "$device_status" -ne 0 ]; then
  echo "gpu-check: warpd-cuda-device-check failed (exit status $device_status)" >&2
  status=$device_status
fi
# Last, the daemon itself (the lean CUDA-only build in $dir/daemon) through
# the Python client: figures and the GPU tests (tools/gpu_check/daemon_phase.sh),
# results in $OUT (the lent machine's output folder) or $dir/results.
if [ -x "$dir/daemon/bin/warpd" ]; then
  echo "gpu-check: tools/gpu_check/daemon_phase.sh"
  tools/gpu_check/daemon_phase.sh "$dir" "${OUT:-$dir/results}"
  phase_status=$?
  if [ "$status" -eq 0 ] && [ "$phase_status" -ne 0 ]; then
    echo "gpu-check: the daemon phase failed (exit status $phase_status)" >&2
    status=1
  fi
fi
exit "$status"
