#!/usr/bin/env bash
# Sets up and builds warpd (also its AddressSanitizer + UBSan build in
# build-asan/), then runs every test: the C++ unit tests (ctest) and the
# end-to-end suites (pytest against a real daemon), each on both builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --sanitizers
cd "$root"

echo "== unit tests (build/)"
ctest --test-dir build --output-on-failure -j2
echo "== end-to-end tests (build/bin/warpd)"
.venv/bin/python -m pytest -q tests/e2e

# Sanitizer findings are fatal: UBSan stops at the first report, ASan and
# LeakSanitizer fail the process (a daemon that exits non-zero on SIGTERM
# fails the e2e session).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
echo "== unit tests (build-asan/, AddressSanitizer + UBSan)"
ctest --test-dir build-asan --output-on-failure -j2
echo "== end-to-end tests (build-asan/bin/warpd, AddressSanitizer + UBSan)"
WARPD_BIN="$root/build-asan/bin/warpd" WARPD_SANITIZED=1 WARPD_TEST_START_CYCLES=${WARPD_TEST_START_CYCLES:-100} \
  .venv/bin/python -m pytest -q tests/e2e
