"""Runaway kernels: a launch past the server's time limit is stopped with
DEADLINE_EXCEEDED naming the kernel, and the daemon and session keep working."""

import os
import subprocess
import sys
import textwrap

from conftest import Daemon, REPO, daemon_binary

SCRIPT = textwrap.dedent('''
    import time
    import numpy as np
    import warpd as wp

    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def spin_forever(a: wp.array(dtype=int)):
        i = wp.tid()
        x = int(0)
        while True:
            x = x + 1
        a[i] = x

    @wp.kernel
    def double(a: wp.array(dtype=int)):
        i = wp.tid()
        a[i] = a[i] * 2

    a = wp.array(np.arange(64, dtype=np.int32), dtype=int)
    t0 = time.monotonic()
    wp.launch(spin_forever, dim=64, inputs=[a])
    try:
        wp.synchronize()
        print("NO ERROR")
    except wp.WarpdError as e:
        print("CODE", e.code.name)
        print("MESSAGE", e)
    print("SECONDS", time.monotonic() - t0)
    wp.launch(double, dim=64, inputs=[a])  # the session's stream works again
    print("AFTER", a.numpy()[:4].tolist())

    # A loop fast blocks run lane-blocked (compiler/codegen/lane_blocks.h):
    # its stop check sits outside the loop over lanes, and still stops it.
    @wp.kernel
    def spin_lanes(x: wp.array(dtype=float), n: wp.int64):
        i = wp.tid()
        v = x[i]
        for _k in range(n):
            v = v * 0.5 + 1.0
        x[i] = v

    x = wp.zeros(4096, dtype=float)
    t0 = time.monotonic()
    wp.launch(spin_lanes, dim=4096, inputs=[x, 1 << 62])
    try:
        wp.synchronize()
        print("LANES_CODE NONE")
    except wp.WarpdError as e:
        print("LANES_CODE", e.code.name)
    print("LANES_SECONDS", time.monotonic() - t0)
    wp.launch(spin_lanes, dim=4096, inputs=[x, 3])
    print("LANES_AFTER", x.numpy()[:2].tolist())
''')


def run_with_time_limit(tmp_path, script_text):
    """Runs `script_text` against a daemon of its own with a 1 s launch time
    limit; returns its "KEY value" output lines and the daemon (still up)."""
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--kernel-timeout", "1"])
    d.start()
    script = tmp_path / "script.py"
    script.write_text(script_text)
    env = dict(os.environ, WARPD_ADDRESS=d.address, PYTHONPATH=str(REPO / "clients" / "python"))
    try:
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    except BaseException:
        d.stop()
        raise
    if out.returncode != 0:
        d.stop()
        raise AssertionError(out.stderr)
    lines = dict(l.split(" ", 1) for l in out.stdout.splitlines() if " " in l)
    lines["_output"] = out.stdout + out.stderr
    return lines, d, script


def test_runaway_kernel_is_stopped_at_the_time_limit(tmp_path):
    lines, d, script = run_with_time_limit(tmp_path, SCRIPT)
    try:
        assert lines.get("CODE") == "DEADLINE_EXCEEDED", lines["_output"]
        assert "kernel 'spin_forever'" in lines["MESSAGE"]
        assert f"{script}:" in lines["MESSAGE"]
        assert "time limit of 1s" in lines["MESSAGE"]
        assert 0.9 < float(lines["SECONDS"]) < 30
        assert lines["AFTER"] == "[0, 2, 4, 6]"
        assert lines.get("LANES_CODE") == "DEADLINE_EXCEEDED", lines["_output"]
        assert 0.9 < float(lines["LANES_SECONDS"]) < 30
        assert lines["LANES_AFTER"] == "[1.75, 1.75]"  # 0 -> 1 -> 1.5 -> 1.75
        assert d.alive()
    finally:
        assert d.stop() == 0


LOOP_SCRIPT = textwrap.dedent('''
    import time
    import warpd as wp

    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def bump(o: wp.array(dtype=wp.int32)):
        wp.atomic_add(o, 0, 1)

    flag = wp.array([1], dtype=wp.int32)  # the body never clears it
    out = wp.zeros(1, dtype=wp.int32)
    with wp.ScopedCapture() as capture:
        wp.capture_while(flag, lambda: wp.launch(bump, 1, inputs=[out]))
    t0 = time.monotonic()
    wp.capture_launch(capture.graph)
    try:
        wp.synchronize()
        print("CODE NONE")
    except wp.WarpdError as e:
        print("CODE", e.code.name)
        print("MESSAGE", e)
    print("SECONDS", time.monotonic() - t0)
    print("RAN", int(out.numpy()[0]) > 10)
    flag.fill_(0)
    wp.capture_launch(capture.graph)  # the stream works again; the loop runs no time
    out.zero_()
    wp.capture_launch(capture.graph)
    print("AFTER", out.numpy().tolist())
''')


def test_a_capture_while_that_never_ends_is_stopped_at_the_time_limit(tmp_path):
    lines, d, _ = run_with_time_limit(tmp_path, LOOP_SCRIPT)
    try:
        assert lines.get("CODE") == "DEADLINE_EXCEEDED", lines["_output"]
        assert "capture_while" in lines["MESSAGE"] and "time limit of 1s" in lines["MESSAGE"], lines["MESSAGE"]
        assert 0.9 < float(lines["SECONDS"]) < 30
        assert lines["RAN"] == "True"
        assert lines["AFTER"] == "[0]"
        assert d.alive()
    finally:
        assert d.stop() == 0
