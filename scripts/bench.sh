#!/usr/bin/env bash
# Runs warpd's benchmarks (bench/run.py): warpd beside native loops and
# NVIDIA Warp's CPU backend, side by side in one run; prints a table of
# ratios and targets and writes bench/results/latest.json. Arguments go to
# the runner: scripts/bench.sh --quick (a smoke check, under a minute),
# --large (also 2^25 elements), --json PATH.
#
# Idempotent. Builds warpd first (scripts/setup.sh) when the daemon or .venv
# is missing; installs gcc when it is missing (for the native loops); puts
# warp-lang in its own environment, .venv-bench (Warp is never a dependency
# of warpd). When that fails the runner still runs and says Warp was skipped.
# Set WARPD_BIN to benchmark another daemon binary. Benchmarks are not tests:
# CI does not run this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ ! -x "${WARPD_BIN:-build/bin/warpd}" ] || [ ! -x .venv/bin/python ]; then
  scripts/setup.sh
fi

if ! command -v gcc >/dev/null 2>&1; then
  echo "bench: installing gcc (for the native reference loops)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq gcc >/dev/null; }; then
    echo "bench: could not install gcc; the native columns will be skipped" >&2
  fi
fi

warp_version=1.19.0
stamp=.venv-bench/.warp-$warp_version
if [ ! -f "$stamp" ]; then
  python=${PYTHON:-python3}
  if { [ -x .venv-bench/bin/python ] || "$python" -m venv .venv-bench; } &&
     .venv-bench/bin/python -m pip install -q "warp-lang==$warp_version" numpy; then
    touch "$stamp"
  else
    echo "bench: could not install warp-lang $warp_version in .venv-bench; Warp will be skipped" >&2
  fi
fi

exec .venv/bin/python bench/run.py "$@"
