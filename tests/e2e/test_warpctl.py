"""warpctl, the operators' and users' CLI (issue 28), run as a process
(`python -m warpd.warpctl`) against daemons of the tests' own: a default one
(this user only, who is its admin) and one with a tenants file (an admin
tenant 'ops', users 'alice' and 'bob'). Checks what each caller sees and may
do, persistent arrays, the kernel cache, tenants reload and drain."""

import hashlib
import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import grpc
import pytest

from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import REPO, Daemon, daemon_binary, open_channel

F32 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


def ctl(address, *args, token=None, timeout=120):
    """Runs warpctl; returns (exit status, stdout, stderr)."""
    env = dict(os.environ, WARPD_ADDRESS=address, PYTHONPATH=str(REPO / "clients" / "python"))
    env.pop("WARPD_TOKEN", None)
    if token is not None:
        env["WARPD_TOKEN"] = token
    p = subprocess.run([sys.executable, "-m", "warpd.warpctl", *args], env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def ctl_json(address, *args, token=None):
    code, out, err = ctl(address, "--json", *args, token=token)
    assert code == 0, (code, out, err)
    return json.loads(out)


class Client:
    def __init__(self, address, token=None):
        self.channel = open_channel(address) if token is None else grpc.insecure_channel(address)
        self.md = [] if token is None else [("authorization", "Bearer " + token)]
        self.stub = runtime_pb2_grpc.RuntimeStub(self.channel)

    def __call__(self, method, request):
        return getattr(self.stub, method)(request, metadata=self.md, timeout=30)

    def open(self, name):
        return self("OpenSession", runtime_pb2.OpenSessionRequest(client_name=name)).session


@pytest.fixture
def shared(tmp_path):
    tokens = {n: secrets.token_hex(32) for n in ("ops", "alice", "bob")}
    config = {"tenants": [
        {"name": "ops", "admin": True, "token_sha256": [sha(tokens["ops"])]},
        {"name": "alice", "token_sha256": [sha(tokens["alice"])], "limits": {"memory": "256M"}},
        {"name": "bob", "token_sha256": [sha(tokens["bob"])]},
    ]}
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps(config))
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path)])
    d.start()
    yield d, tokens, path, config
    if d.alive():
        assert d.stop() == 0, d.log_tail()


def test_status_default_daemon_shows_devices_and_own_sessions(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    try:
        me = Client(d.address)
        info = me("GetServerInfo", runtime_pb2.GetServerInfoRequest())
        s = me.open("ctl-status-test")
        h = me("CreateArray", runtime_pb2.CreateArrayRequest(session=s, device="cpu", dtype=F32, shape=[1000]))
        st = ctl_json(d.address, "status")
        assert st["caller_admin"] is True and st["tenants_file"] is False
        assert [x["name"] for x in st["devices"]] == [x.name for x in info.devices]
        assert st["version"] == info.version
        assert len(st["tenants"]) == 1
        t = st["tenants"][0]
        assert t["admin"] is True and t["name"] == st["caller"]
        assert [x["client_name"] for x in t["sessions"]] == ["ctl-status-test"]
        assert int(t["sessions"][0]["arrays"]) == 1
        assert s not in json.dumps(st)  # session tokens are never shown
        usage = {q["resource"]: int(q["used"]) for q in t["usage"]["quotas"]}
        want = {q.resource: q.used for q in me("GetUsage", runtime_pb2.GetUsageRequest(session=s)).quotas}
        assert usage == want and usage["arrays"] == 1 and usage["sessions"] == 1
        assert int(st["sessions_open"]) == 1
        # The table for people.
        code, out, err = ctl(d.address, "status")
        assert code == 0, err
        assert "(admin)" in out and "ctl-status-test" in out
        for dev in info.devices:
            assert dev.name in out
        assert h.handle
        # whoami: the login socket gave this user's token.
        who = ctl_json(d.address, "token", "whoami")
        assert who["tenant"] == st["caller"] and who["admin"] is True and "login socket" in who["token_source"]
        me.channel.close()
    finally:
        assert d.stop() == 0, d.log_tail()


def test_admin_sees_every_tenant_a_user_only_itself(shared):
    d, tokens, *_ = shared
    alice, bob = Client(d.address, tokens["alice"]), Client(d.address, tokens["bob"])
    sa = alice.open("alice-job")
    sb = bob.open("bob-job")
    alice("CreateArray", runtime_pb2.CreateArrayRequest(session=sa, device="cpu", dtype=F32, shape=[1 << 16]))
    st = ctl_json(d.address, "status", token=tokens["alice"])
    assert st["caller"] == "alice" and st["caller_admin"] is False
    assert [t["name"] for t in st["tenants"]] == ["alice"]
    assert [s["client_name"] for s in st["tenants"][0]["sessions"]] == ["alice-job"]
    assert "bob" not in json.dumps(st)
    assert "memory_used_bytes" not in st or int(st["memory_used_bytes"]) == 0  # daemon-wide: admins only
    mem = {q["resource"]: (int(q["used"]), int(q["limit"])) for q in st["tenants"][0]["usage"]["quotas"]}
    assert mem["memory_bytes"][1] == 256 << 20 and mem["memory_bytes"][0] >= 4 << 16
    for other in ("bob", "ops", "nosuch"):
        code, out, err = ctl(d.address, "status", "--tenant", other, token=tokens["alice"])
        assert code == 3 and "permission denied" in err and "only its own" in err, (code, out, err)
    st = ctl_json(d.address, "status", token=tokens["ops"])
    assert st["caller_admin"] is True and st["tenants_file"] is True
    by = {t["name"]: t for t in st["tenants"]}
    assert sorted(by) == ["alice", "bob", "ops"] and by["ops"]["admin"] is True
    assert [s["client_name"] for s in by["alice"]["sessions"]] == ["alice-job"]
    assert [s["client_name"] for s in by["bob"]["sessions"]] == ["bob-job"]
    assert by["ops"].get("sessions", []) == []
    assert int(st["sessions_open"]) == 2 and int(by["alice"]["token_hashes"]) == 1
    want = {q.resource: q.used for q in alice("GetUsage", runtime_pb2.GetUsageRequest(session=sa)).quotas}
    assert {q["resource"]: int(q["used"]) for q in by["alice"]["usage"]["quotas"]} == want
    assert int(st["memory_used_bytes"]) >= want["memory_bytes"]
    st = ctl_json(d.address, "status", "--tenant", "bob", token=tokens["ops"])
    assert [t["name"] for t in st["tenants"]] == ["bob"]
    # An unknown token: refused, with what to do.
    code, out, err = ctl(d.address, "status", token="0" * 64)
    assert code == 3 and "WARPD_TOKEN" in err, (code, err)
    del sb


def test_persistent_objects_list_inspect_free(shared):
    d, tokens, *_ = shared
    alice = Client(d.address, tokens["alice"])
    sa = alice.open("alice")
    h = alice("CreateArray", runtime_pb2.CreateArrayRequest(session=sa, device="cpu", dtype=F32, shape=[3, 5])).handle
    alice("PersistArray", runtime_pb2.PersistArrayRequest(session=sa, handle=h, name="weights"))
    lst = ctl_json(d.address, "objects", "list", token=tokens["alice"])["arrays"]
    assert [(a["tenant"], a["info"]["name"], [int(x) for x in a["info"]["shape"]], int(a["info"]["size_bytes"]))
            for a in lst] == [("alice", "weights", [3, 5], 60)]
    assert ctl_json(d.address, "objects", "list", token=tokens["bob"]).get("arrays", []) == []
    assert [a["tenant"] for a in ctl_json(d.address, "objects", "list", token=tokens["ops"])["arrays"]] == ["alice"]
    code, out, err = ctl(d.address, "objects", "list", token=tokens["alice"])
    assert code == 0 and "weights" in out and "3x5" in out and "float32" in out, out
    ins = ctl_json(d.address, "objects", "inspect", "weights", token=tokens["alice"])
    assert [int(x) for x in ins["strides"]] == [20, 4] and ins["info"]["durable"] is False
    # bob: neither his own name nor alice's array.
    code, _, err = ctl(d.address, "objects", "inspect", "weights", token=tokens["bob"])
    assert code == 1 and "not_found" in err, err
    code, _, err = ctl(d.address, "objects", "free", "weights", "--tenant", "alice", token=tokens["bob"])
    assert code == 3 and "permission denied" in err
    assert len(alice("ListPersistent", runtime_pb2.ListPersistentRequest(session=sa)).arrays) == 1
    # The admin frees it for alice.
    code, out, err = ctl(d.address, "objects", "free", "weights", "--tenant", "alice", token=tokens["ops"])
    assert code == 0 and "freed" in out, err
    assert len(alice("ListPersistent", runtime_pb2.ListPersistentRequest(session=sa)).arrays) == 0
    code, _, err = ctl(d.address, "objects", "free", "weights", token=tokens["alice"])
    assert code == 1 and "not_found" in err


def _run_kernel_script(directory, address, token, body):
    """Runs `body` (kernels must be defined in a file) as a client of `address`."""
    script = Path(directory) / f"client_{secrets.token_hex(4)}.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, WARPD_ADDRESS=address, PYTHONPATH=str(REPO / "clients" / "python"))
    env.pop("WARPD_TOKEN", None)
    if token:
        env["WARPD_TOKEN"] = token
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


SCALE_SCRIPT = """
import numpy as np
import warpd as wp
wp.config.quiet = True

@wp.kernel
def scale_{tag}(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s

a = wp.array(np.arange(8, dtype=np.float32), device="cpu")
wp.launch(scale_{tag}, dim=8, inputs=[a, 3.0])
print(a.numpy().tolist())
"""


def test_cache_stats_and_clear(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    try:
        p = _run_kernel_script(tmp_path, d.address, None, SCALE_SCRIPT.format(tag="c1"))
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == [3.0 * i for i in range(8)]
        files = [f for f in Path(d.cache_dir).rglob("*.o")]
        st = ctl_json(d.address, "cache", "stats")
        assert Path(st["dir"]) == Path(d.cache_dir)
        assert int(st["entries"]) == len(files) >= 1
        assert int(st["bytes"]) == sum(f.stat().st_size for f in files)
        code, out, err = ctl(d.address, "cache", "stats")
        assert code == 0 and f"entries:   {len(files)}" in out, out
        cleared = ctl_json(d.address, "cache", "clear")
        assert int(cleared["entries_removed"]) == len(files)
        assert list(Path(d.cache_dir).rglob("*.o")) == []
        assert int(ctl_json(d.address, "cache", "stats").get("entries", 0)) == 0
    finally:
        assert d.stop() == 0, d.log_tail()


def test_cache_clear_and_reload_need_admin(shared):
    d, tokens, path, config = shared
    st = ctl_json(d.address, "cache", "stats", token=tokens["bob"])  # anyone may read the totals
    assert "dir" in st
    for args in (("cache", "clear"), ("tenants", "reload"), ("drain",)):
        code, out, err = ctl(d.address, *args, token=tokens["bob"])
        assert code == 3 and "permission denied" in err and "needs an admin tenant" in err, (args, code, err)
    # Reload by the admin: a new tenant's token works from then on.
    carol = secrets.token_hex(32)
    config["tenants"].append({"name": "carol", "token_sha256": [sha(carol)]})
    path.write_text(json.dumps(config))
    code, _, _ = ctl(d.address, "status", token=carol)
    assert code == 3
    out = ctl_json(d.address, "tenants", "reload", token=tokens["ops"])
    assert sorted(out["tenants"]) == ["alice", "bob", "carol", "ops"]
    assert ctl_json(d.address, "status", token=carol)["caller"] == "carol"
    # A file that does not load: an error, and the running tenants stay.
    path.write_text("{not json")
    code, _, err = ctl(d.address, "tenants", "reload", token=tokens["ops"])
    assert code == 1 and "invalid_argument" in err, err
    assert ctl_json(d.address, "status", token=carol)["caller"] == "carol"
    assert d.alive()  # bob's refused drain left it serving
    assert Client(d.address, tokens["bob"]).open("still-serving")


LONG_SCRIPT = """
import sys
import numpy as np
import warpd as wp
wp.config.quiet = True

@wp.kernel
def spin(out: wp.array(dtype=wp.int64), n: int):
    s = wp.int64(0)
    for i in range(n):
        s = s + wp.int64(i % 7)
    out[0] = s

out = wp.zeros(1, dtype=wp.int64, device="cpu")
wp.launch(spin, dim=1, inputs=[out, 1])
wp.synchronize()
wp.launch(spin, dim=1, inputs=[out, {n}])
print("launched", flush=True)
print("result", int(out.numpy()[0]), flush=True)
"""


def test_drain_refuses_sessions_lets_running_work_finish_and_exits_0(shared):
    d, tokens, *_ = shared
    n = 1_500_000_000
    want = (n // 7) * 21 + sum(range(n % 7))
    p = _run_kernel_script(d.dir, d.address, tokens["alice"], LONG_SCRIPT.format(n=n))
    assert p.stdout.readline().strip() == "launched", p.stderr.read() if p.poll() is not None else ""
    t0 = time.monotonic()
    drain = subprocess.Popen([sys.executable, "-m", "warpd.warpctl", "--json", "drain", "--timeout", "120"],
                             env=dict(os.environ, WARPD_ADDRESS=d.address, WARPD_TOKEN=tokens["ops"],
                                      PYTHONPATH=str(REPO / "clients" / "python")),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # New sessions are refused while the kernel runs.
    bob = Client(d.address, tokens["bob"])
    deadline = time.monotonic() + 30
    while True:
        try:
            bob.open("late")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE and "draining" in e.details(), e.details()
            break
        assert time.monotonic() < deadline, "new sessions were still accepted"
        time.sleep(0.02)
    st = ctl_json(d.address, "status", token=tokens["ops"])
    assert st["draining"] is True
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert out.strip().splitlines()[-1] == f"result {want}"
    dout, derr = drain.communicate(timeout=300)
    assert drain.returncode == 0, derr
    r = json.loads(dout)
    assert r["idle"] is True and r["exited"] is True and int(r["sessions"]) >= 1, r
    assert d.proc.wait(timeout=30) == 0, d.log_tail()
    assert not Path(d.socket).exists()
    assert "drained" in d.log_tail()
    assert time.monotonic() - t0 < 200
