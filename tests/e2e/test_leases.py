"""A client killed with SIGKILL: its session's memory returns and its work
stops within the lease grace period (issue 9)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from warpd.v1 import runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, open_channel

GRACE = 1.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--session-grace", f"{GRACE}s", "--kernel-timeout", "300"])
    d.start()
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    watcher = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="watcher")).session
    hold = stub.HoldSession(runtime_pb2.HoldSessionRequest(session=watcher))
    next(hold)

    def memory():
        u = stub.GetUsage(runtime_pb2.GetUsageRequest(session=watcher), timeout=10)
        return {q.resource: q.used for q in u.quotas}["memory_bytes"]

    yield d, memory
    hold.cancel()
    channel.close()
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


def run_client(d, body, ready_marker, tmp_path):
    script = textwrap.dedent("""
        import sys, numpy as np, warpd as wp
        wp.config.quiet = True
    """) + textwrap.dedent(body)
    env = dict(os.environ, WARPD_ADDRESS=d.address)
    path = tmp_path / "client.py"  # kernels need a source file
    path.write_text(script)
    proc = subprocess.Popen([sys.executable, "-u", str(path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:
        if ready_marker in line:
            return proc
        seen.append(line)
    proc.wait()
    print("".join(seen))
    pytest.fail(f"client exited early ({proc.returncode})")  # its output was read above


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def test_killed_mid_batch_frees_memory_and_stops_work(daemon, tmp_path):
    d, memory = daemon
    proc = run_client(d, """
        @wp.kernel
        def spin(a: wp.array(dtype=float), n: int):
            i = wp.tid()
            x = float(0.0)
            for k in range(n):
                x = wp.sin(x + float(k))
            a[i] = x
        big = wp.zeros(64 << 20, dtype=wp.uint8)   # 64 MiB held by the session
        out = wp.zeros(4096, dtype=float)
        for _ in range(50):                         # minutes of queued work
            wp.launch(spin, dim=4096, inputs=[out, 2000000])
        import warpd.context as c
        c.runtime().flush_all()                     # sent, not waited for
        print("READY", flush=True)
        import time; time.sleep(600)
    """, "READY", tmp_path)
    assert wait_for(lambda: memory() >= 64 << 20, 10)
    time.sleep(0.5)
    busy0 = cpu_seconds(d.proc.pid)
    time.sleep(0.5)
    assert cpu_seconds(d.proc.pid) - busy0 > 0.2, "the client's kernels should be running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Memory returns within the grace period (plus the reaper's tick).
    assert wait_for(lambda: memory() == 0, GRACE + 5), memory()
    # And the work stops: the daemon goes idle.
    time.sleep(0.5)
    busy1 = cpu_seconds(d.proc.pid)
    time.sleep(1.0)
    assert cpu_seconds(d.proc.pid) - busy1 < 0.3


def test_killed_mid_upload_frees_memory(daemon, tmp_path):
    d, memory = daemon
    proc = run_client(d, """
        a = wp.zeros(256 << 20, dtype=wp.uint8)
        data = np.ones(256 << 20, dtype=np.uint8)
        print("READY", flush=True)
        while True:
            a.assign(data)                          # uploads, again and again
    """, "READY", tmp_path)
    assert wait_for(lambda: memory() >= 256 << 20, 10)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert wait_for(lambda: memory() == 0, GRACE + 5), memory()
