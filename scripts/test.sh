#!/usr/bin/env bash
# Sets up and builds warpd, then runs every test: the C++ unit tests (ctest)
# and the end-to-end suites (pytest against a real build/bin/warpd).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root"
ctest --test-dir build --output-on-failure -j2
.venv/bin/python -m pytest -q tests/e2e
