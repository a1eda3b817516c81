"""A short run of bench/soak.py (issue 23's soak): three clients of two
tenants doing mixed, value-checked operations against a daemon of the soak's
own (build/bin/warpd or $WARPD_BIN), two of them SIGKILLed on the way, and
the daemon's sessions, tenant memory, fds and threads back to baseline."""

import json
import os
import subprocess
import sys
import time

from conftest import REPO, daemon_binary


def test_soak_for_18_seconds_with_two_kills(tmp_path):
    out = tmp_path / "soak.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak.py"), "--seconds", "18", "--kill-every", "7",
         "--warmup-ops", "100", "--samples", "2", "--status-every", "1000", "--seed", "23",
         "--json", str(out),
         # ASan's quarantine keeps freed memory resident: RSS says nothing
         # about leaks there (LeakSanitizer checks them at the daemon's exit).
         *(["--rss-tolerance-mib", "4096"] if os.environ.get("WARPD_SANITIZED") else [])],
        env=dict(os.environ, WARPD_BIN=daemon_binary()), capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout[-3000:]
    report = json.loads(out.read_text())
    assert report["failures"] == [], report["failures"]
    assert report["wrong_values"] == 0 and report["unexpected_errors"] == 0, report["details"]
    assert report["kills"] == 2, report
    assert report["restarts"] == 0, report
    assert report["operations"] > 500, report
    # Every kind of operation ran, the deliberately invalid ones among them,
    # and each failed the way it must.
    assert all(report["by_kind"].get(k, 0) > 0 for k in (
        "create", "upload", "axpy", "reduce", "grid2d", "struct", "graph", "copy", "fill", "download",
        "persist", "free", "invalid")), report["by_kind"]
    assert report["expected_errors"].get("out-of-bounds write", 0) > 0, report["expected_errors"]
    assert report["expected_errors"].get("int32 array for a float32 parameter", 0) > 0, report["expected_errors"]
    assert report["expected_errors"].get("load deleted", 0) > 0, report["expected_errors"]
    assert set(report["by_tenant"]) == {"alpha", "beta"}, report["by_tenant"]
    assert report["end"]["fds"] <= report["baseline"]["fds"] + 4, report
    print(f"soak smoke: {report['operations']} operations, {wall:.1f} s wall")
