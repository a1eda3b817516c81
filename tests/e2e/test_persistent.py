"""Persistent arrays: named by a tenant, reattached from new sessions and,
when durable, after a daemon restart (issue 9)."""

import os
import subprocess
import sys
import textwrap

import grpc
import numpy as np
import pytest

from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, open_channel


def client(d, body, token=None):
    """Runs `body` in a fresh client process against `d`; returns its stdout."""
    script = "import numpy as np, warpd as wp\nwp.config.quiet = True\n" + textwrap.dedent(body)
    env = dict(os.environ, WARPD_ADDRESS=d.address)
    env.pop("WARPD_TOKEN", None)
    if token:
        env["WARPD_TOKEN"] = token
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    yield d
    if d.alive():
        assert d.stop() == 0, d.log_tail()


def test_reattached_from_a_new_session(daemon):
    client(daemon, """
        a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float)
        wp.persistent.save("grid", a)
        v = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3)
        wp.persistent.save("points", v)
    """)
    out = client(daemon, """
        names = [(p.name, p.shape, p.durable) for p in wp.persistent.list()]
        print(names)
        g = wp.persistent.load("grid")
        print(g.numpy().tolist(), g.dtype is wp.float32)
        p = wp.persistent.load("points")
        print(p.dtype is wp.vec3, p.numpy().sum())
        g.fill_(7.0)                                  # writes are shared by every attached session
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "[('grid', (2, 3), False), ('points', (4,), False)]"
    assert lines[1] == "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] True"
    assert lines[2] == "True 12.0"
    out = client(daemon, """
        print(wp.persistent.load("grid").numpy().tolist())
        wp.persistent.delete("grid")
        try:
            wp.persistent.load("grid")
        except wp.WarpdError as e:
            print(type(e).__name__, e.code)
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "[[7.0, 7.0, 7.0], [7.0, 7.0, 7.0]]"
    assert "NOT_FOUND" in lines[1]


def test_names_are_checked_and_unique(daemon):
    out = client(daemon, """
        a = wp.zeros(4, dtype=float)
        for bad in ["", "../etc/passwd", "a/b", ".hidden", "x" * 129, "naïve"]:
            try:
                wp.persistent.save(bad, a)
                print("accepted", repr(bad))
            except wp.WarpdError as e:
                print(e.code)
        wp.persistent.save("ok", a)
        try:
            wp.persistent.save("ok", a)
        except wp.WarpdError as e:
            print(e.code)
    """)
    codes = out.strip().splitlines()
    assert codes[:6] == ["StatusCode.INVALID_ARGUMENT"] * 6, codes
    assert codes[6] == "StatusCode.ALREADY_EXISTS"


def test_durable_arrays_survive_a_restart(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    client(d, """
        a = wp.array(np.arange(1000, dtype=np.float64), dtype=wp.float64)
        wp.persistent.save("kept", a, durable=True)
        b = wp.array(np.arange(3, dtype=np.int32), dtype=wp.int32)
        wp.persistent.save("lost", b)
        a.fill_(2.5)          # changed after saving: the shutdown writes it again
        wp.synchronize()
    """)
    assert d.stop() == 0, d.log_tail()
    d2 = Daemon(daemon_binary(), tmp_path)   # same --state-dir (tmp_path/state)
    d2.start()
    out = client(d2, """
        print([(p.name, p.durable) for p in wp.persistent.list()])
        k = wp.persistent.load("kept")
        print(k.dtype is wp.float64, k.shape, float(k.numpy().sum()))
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "[('kept', True)]"
    assert lines[1] == "True (1000,) 2500.0"
    assert d2.stop() == 0, d2.log_tail()
    # Files are the daemon's alone.
    for root, dirs, files in os.walk(tmp_path / "state"):
        for f in files:
            assert os.stat(os.path.join(root, f)).st_mode & 0o077 == 0


def test_one_tenants_names_are_invisible_to_another(tmp_path):
    import hashlib
    import json
    import secrets

    ta, tb = secrets.token_hex(32), secrets.token_hex(32)
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": [
        {"name": "a", "token_sha256": [hashlib.sha256(ta.encode()).hexdigest()]},
        {"name": "b", "token_sha256": [hashlib.sha256(tb.encode()).hexdigest()]}]}))
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path)])
    d.start()
    client(d, """
        wp.persistent.save("shared-name", wp.array([1.0, 2.0], dtype=float))
    """, token=ta)
    out = client(d, """
        print(wp.persistent.list())
        try:
            wp.persistent.load("shared-name")
        except wp.WarpdError as e:
            print(e.code)
        wp.persistent.save("shared-name", wp.array([5.0], dtype=float))   # b's own, same name
        print(wp.persistent.load("shared-name").numpy().tolist())
    """, token=tb)
    assert out.strip().splitlines() == ["[]", "StatusCode.NOT_FOUND", "[5.0]"]
    out = client(d, "print(wp.persistent.load('shared-name').numpy().tolist())\n", token=ta)
    assert out.strip() == "[1.0, 2.0]"
    assert d.stop() == 0, d.log_tail()
