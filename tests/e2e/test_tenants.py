"""A multi-tenant daemon: tokens, tenant isolation, quotas, leases, TLS (issue 9).

Every test runs its own daemon (loopback TCP and Unix sockets only) with a
tenants file written here; tokens are made here and only their SHA-256 goes
into the file, as an operator would do it.
"""

import hashlib
import json
import os
import re
import secrets
import signal
import stat
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
U8 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8)


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


class Tenant:
    """A raw client of one tenant: a channel whose calls carry its token."""

    def __init__(self, address, token, options=(), secure=None):
        self.token = token
        self.md = [("authorization", "Bearer " + token)]
        if secure is not None:
            self.channel = grpc.secure_channel(address, secure, options=list(options))
        else:
            self.channel = grpc.insecure_channel(address, options=list(options))
        self.stub = runtime_pb2_grpc.RuntimeStub(self.channel)

    def __call__(self, method, request, **kw):
        return getattr(self.stub, method)(request, metadata=self.md, timeout=kw.pop("timeout", 30), **kw)

    def open(self, name="t"):
        return self("OpenSession", runtime_pb2.OpenSessionRequest(client_name=name)).session

    def create(self, session, n, dtype=U8):
        return self("CreateArray", runtime_pb2.CreateArrayRequest(session=session, device="cpu", dtype=dtype,
                                                                 shape=[n]))

    def usage(self, session):
        u = self("GetUsage", runtime_pb2.GetUsageRequest(session=session))
        return {q.resource: (q.used, q.limit) for q in u.quotas}

    def close(self):
        self.channel.close()


def code_of(fn):
    with pytest.raises(grpc.RpcError) as e:
        fn()
    return e.value.code(), e.value.details()


@pytest.fixture
def tenants(tmp_path):
    """A daemon with tenants a, b (uid-less) and the test user's uid as tenant 'me'."""
    tokens = {"a": secrets.token_hex(32), "b": secrets.token_hex(32)}
    config = {
        "default_limits": {"sessions": 16},
        "tenants": [
            {"name": "a", "token_sha256": [sha(tokens["a"])], "weight": 2,
             "limits": {"memory": "64M", "sessions": 4, "arrays": 100, "graph_commands": 10}},
            {"name": "b", "token_sha256": [sha(tokens["b"])]},
            {"name": "me", "uids": [os.getuid()]},
        ],
    }
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps(config))
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path), "--session-grace", "1s"])
    d.start()
    clients = {name: Tenant(d.address, t) for name, t in tokens.items()}
    yield d, clients, tokens, path, config
    for c in clients.values():
        c.close()
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


def test_calls_need_a_token(tenants):
    d, clients, *_ = tenants
    channel = grpc.insecure_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    for md in ([], [("authorization", "Bearer " + "0" * 64)], [("authorization", "Basic x")]):
        code, msg = code_of(lambda: stub.OpenSession(runtime_pb2.OpenSessionRequest(), metadata=md, timeout=10))
        assert code == grpc.StatusCode.UNAUTHENTICATED, (md, msg)
    code, _ = code_of(lambda: stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    assert clients["a"]("GetServerInfo", runtime_pb2.GetServerInfoRequest()).version


def test_a_tenant_never_reaches_another_tenants_objects(tenants):
    _, clients, *_ = tenants
    a, b = clients["a"], clients["b"]
    sa, sb = a.open(), b.open()
    handle = a.create(sa, 16).handle
    # a's session token with b's bearer token: the same answer as a made-up session.
    for session in (sa, "0" * 32):
        code, msg = code_of(lambda: b.create(session, 16))
        assert code == grpc.StatusCode.UNAUTHENTICATED and "unknown or closed session" in msg
    # a's array handle in b's session: the same answer as a made-up handle.
    for h in (handle, 12345):
        code, msg = code_of(lambda: b("FreeArray", runtime_pb2.FreeArrayRequest(session=sb, handle=h)))
        assert code == grpc.StatusCode.NOT_FOUND and "not found" in msg, msg
    code, _ = code_of(lambda: b("CloseSession", runtime_pb2.CloseSessionRequest(session=sa)))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    # a's session is untouched.
    a("FreeArray", runtime_pb2.FreeArrayRequest(session=sa, handle=handle))


def test_memory_quota_is_checked_before_allocating(tenants):
    _, clients, *_ = tenants
    a, b = clients["a"], clients["b"]
    sa, sb = a.open(), b.open()
    a.create(sa, 48 << 20)
    code, msg = code_of(lambda: a.create(sa, 32 << 20))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "tenant 'a'" in msg and "64 MiB" in msg, msg
    assert a.usage(sa)["memory_bytes"][1] == 64 << 20
    # The other tenant is unaffected.
    b.create(sb, 128 << 20)
    assert b.usage(sb)["memory_bytes"][0] >= 128 << 20


def test_array_count_quota(tenants):
    _, clients, *_ = tenants
    a = clients["a"]
    s = a.open()
    handles = [a.create(s, 4).handle for _ in range(100)]
    code, msg = code_of(lambda: a.create(s, 4))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "tenant 'a' arrays limit: 100 of 100" in msg, msg
    a("FreeArray", runtime_pb2.FreeArrayRequest(session=s, handle=handles[0]))
    a.create(s, 4)


def test_graph_commands_quota(tenants):
    """Captured graphs hold prepared commands until freed: they count against
    the tenant's graph_commands quota across its sessions, are refused whole
    past it, and give the room back when freed or when their session closes."""
    _, clients, *_ = tenants
    a, b = clients["a"], clients["b"]
    s1, s2 = a.open(), a.open()
    arr1, arr2 = a.create(s1, 16).handle, a.create(s2, 16).handle

    def fills(arr, n, value):
        return [runtime_pb2.Command(fill=runtime_pb2.FillArray(array=arr, value=bytes([value]))) for _ in range(n)]

    def capture(c, s, arr, n, value=7):
        return c("CreateGraph", runtime_pb2.CreateGraphRequest(session=s, device="cpu",
                                                              commands=fills(arr, n, value))).graph

    g1 = capture(a, s1, arr1, 6)
    assert a.usage(s1)["graph_commands"] == (6, 10)
    # The other session of the tenant shares the quota; a graph past it is refused whole.
    code, msg = code_of(lambda: capture(a, s2, arr2, 5))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, msg
    assert "tenant 'a' graph commands limit: 6 of 10 in use, 5 more requested" in msg, msg
    assert a.usage(s2)["graph_commands"] == (6, 10)
    g2 = capture(a, s2, arr2, 4)
    assert a.usage(s1)["graph_commands"] == (10, 10)
    # Another tenant is not affected.
    sb = b.open()
    capture(b, sb, b.create(sb, 16).handle, 8)
    # The graph runs: replaying it fills the array.
    a("Submit", runtime_pb2.SubmitRequest(session=s1, device="cpu", synchronize=True,
                                          commands=[runtime_pb2.Command(replay=runtime_pb2.ReplayGraph(graph=g1))]))
    data = b"".join(c.data for c in a.stub.Download(runtime_pb2.DownloadRequest(session=s1, handle=arr1),
                                                      metadata=a.md, timeout=30))
    assert data == bytes([7]) * 16
    # Freeing a graph (in stream order) gives its room back.
    a("Submit", runtime_pb2.SubmitRequest(session=s1, device="cpu", synchronize=True,
                                          commands=[runtime_pb2.Command(free_graph=runtime_pb2.FreeGraph(graph=g1))]))
    assert a.usage(s1)["graph_commands"] == (4, 10)
    capture(a, s1, arr1, 6)
    # Closing a session frees its graphs.
    a("CloseSession", runtime_pb2.CloseSessionRequest(session=s1))
    assert a.usage(s2)["graph_commands"] == (4, 10)
    assert g2


def test_a_session_flood_does_not_lock_out_another_tenant(tenants):
    _, clients, *_ = tenants
    a, b = clients["a"], clients["b"]
    opened = [a.open() for _ in range(4)]
    code, msg = code_of(lambda: a.open())
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "tenant 'a' sessions limit: 4 of 4" in msg, msg
    assert b.open()
    a("CloseSession", runtime_pb2.CloseSessionRequest(session=opened[0]))
    assert a.open()


def test_a_lapsed_lease_frees_the_session(tenants):
    _, clients, *_ = tenants
    a = clients["a"]
    s = a.open()
    a.create(s, 32 << 20)
    watcher = a.open()
    assert a.usage(watcher)["memory_bytes"][0] >= 32 << 20
    # Calls renew the lease; without them (and no HoldSession) it lapses after
    # the 1 s grace.
    for _ in range(4):
        time.sleep(0.4)
        a("RenewSession", runtime_pb2.RenewSessionRequest(session=s))
        a("RenewSession", runtime_pb2.RenewSessionRequest(session=watcher))
    held = a.open()
    hold = a.stub.HoldSession(runtime_pb2.HoldSessionRequest(session=held), metadata=a.md)
    assert next(hold).grace_seconds == pytest.approx(1.0)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        a("RenewSession", runtime_pb2.RenewSessionRequest(session=watcher))
        if a.usage(watcher)["memory_bytes"][0] == 0:
            break
        time.sleep(0.2)
    assert a.usage(watcher)["memory_bytes"][0] == 0
    code, _ = code_of(lambda: a.create(s, 16))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    # The held session outlived the grace period.
    a.create(held, 16)
    hold.cancel()


def test_login_socket_answers_by_peer_uid(tenants, tmp_path):
    d, clients, *_ = tenants
    import warpd.auth as auth

    token = auth.login(str(d.socket))
    me = Tenant(d.address, token)
    s = me.open()
    assert me("GetUsage", runtime_pb2.GetUsageRequest(session=s)).tenant == "me"
    me.close()
    # Sockets are 0600, not the umask's.
    for p in (d.socket, Path(str(d.socket) + ".login")):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p


def test_sighup_reloads_the_tenants_file(tenants):
    d, clients, tokens, path, config = tenants
    c_token = secrets.token_hex(32)
    config["tenants"] = [t for t in config["tenants"] if t["name"] != "b"]
    config["tenants"].append({"name": "c", "token_sha256": [sha(c_token)]})
    sb = clients["b"].open()
    path.write_text(json.dumps(config))
    d.proc.send_signal(signal.SIGHUP)
    c = Tenant(d.address, c_token)
    deadline = time.monotonic() + 10
    while True:
        try:
            c.open()
            break
        except grpc.RpcError:
            assert time.monotonic() < deadline, d.log_tail()
            time.sleep(0.1)
    code, _ = code_of(lambda: clients["b"].open())
    assert code == grpc.StatusCode.UNAUTHENTICATED
    code, _ = code_of(lambda: clients["b"].create(sb, 4))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    # A broken file keeps the running configuration.
    path.write_text("{broken")
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert clients["a"].open()
    c.close()


def _reload(d, path, config, log_line):
    """Writes `config`, sends SIGHUP, and waits until the daemon logs `log_line` (a regex)."""
    seen = len(re.findall(log_line, d.log_tail(1 << 20)))
    path.write_text(json.dumps(config))
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while len(re.findall(log_line, d.log_tail(1 << 20))) == seen:
        assert time.monotonic() < deadline, d.log_tail()
        time.sleep(0.05)


def test_removing_a_uid_revokes_its_login_token_and_sessions(tenants):
    """Issue 23: a uid taken out of a tenant loses the login token it was given
    and the sessions opened with it; the tenant's other tokens and their
    sessions live on, and a uid put back gets a new token."""
    d, clients, tokens, path, config = tenants
    import warpd.auth as auth

    peer = auth.login(str(d.socket))
    me_config = next(t for t in config["tenants"] if t["name"] == "me")
    file_token = secrets.token_hex(32)
    me_config["token_sha256"] = [sha(file_token)]
    # A reload that keeps the uids keeps the login token.
    _reload(d, path, config, r"tenants file .* loaded")
    assert auth.login(str(d.socket)) == peer
    by_peer, by_file = Tenant(d.address, peer), Tenant(d.address, file_token)
    s_peer, s_file = by_peer.open(), by_file.open()
    # Held, so that only a reload can close them (not the 1 s grace).
    hold = by_peer.stub.HoldSession(runtime_pb2.HoldSessionRequest(session=s_peer), metadata=by_peer.md, timeout=30)
    hold_file = by_file.stub.HoldSession(runtime_pb2.HoldSessionRequest(session=s_file), metadata=by_file.md,
                                         timeout=30)
    assert next(hold).grace_seconds == pytest.approx(1.0)
    assert next(hold_file).grace_seconds == pytest.approx(1.0)
    # Any token of the tenant reaches its sessions, so the file token sees s_peer until it closes.
    by_file.create(s_peer, 4)
    by_file.create(s_file, 4)

    me_config["uids"] = []
    _reload(d, path, config, r"tenant 'me': a uid was removed, so its login token was replaced .*; 1 session\(s\) closed")
    code, msg = code_of(lambda: by_peer.open())
    assert code == grpc.StatusCode.UNAUTHENTICATED and "unknown bearer token" in msg, msg
    code, msg = code_of(lambda: by_file.create(s_peer, 4))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "unknown or closed session" in msg, msg
    assert list(hold) == []  # the session's HoldSession stream was finished
    by_file.create(s_file, 4)  # opened with a token still in the file: lives on
    with pytest.raises(auth.UnavailableError, match="refused this user"):
        auth.login(str(d.socket))

    # A token_sha256 taken out of the file closes the sessions opened with it.
    me_config["uids"] = [os.getuid()]
    me_config["token_sha256"] = []
    _reload(d, path, config, r"tenant 'me': 1 session\(s\) closed: the token that opened them is no longer accepted")
    code, msg = code_of(lambda: by_file.create(s_file, 4))
    assert code == grpc.StatusCode.UNAUTHENTICATED, msg
    assert list(hold_file) == []
    # The uid is back: it gets a token, a new one.
    again = auth.login(str(d.socket))
    assert again != peer
    by_again = Tenant(d.address, again)
    assert by_again("GetUsage", runtime_pb2.GetUsageRequest(session=by_again.open())).tenant == "me"
    for c in (by_peer, by_file, by_again):
        c.close()


def test_default_limits_follow_the_machines_memory(tmp_path):
    """Two 16 GiB requests under the default limits: RESOURCE_EXHAUSTED, the daemon lives."""
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest()).session
    for _ in range(2):
        try:
            stub.CreateArray(runtime_pb2.CreateArrayRequest(session=s, device="cpu", dtype=U8, shape=[16, 1 << 30]),
                             timeout=120)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.details()
            assert "--max-memory" in e.details() or "memory" in e.details()
    assert stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=10).version
    channel.close()
    assert d.alive()
    assert d.stop() == 0, d.log_tail()


def test_ten_thousand_tiny_arrays(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest()).session
    fds_before = len(os.listdir(f"/proc/{d.proc.pid}/fd"))
    handles = [stub.CreateArray(runtime_pb2.CreateArrayRequest(session=s, device="cpu", dtype=F32, shape=[1]),
                                timeout=30).handle for _ in range(10000)]
    assert len(set(handles)) == 10000
    fds_after = len(os.listdir(f"/proc/{d.proc.pid}/fd"))
    assert fds_after - fds_before < 64, (fds_before, fds_after)
    # Another session still gets arrays.
    s2 = stub.OpenSession(runtime_pb2.OpenSessionRequest()).session
    stub.CreateArray(runtime_pb2.CreateArrayRequest(session=s2, device="cpu", dtype=F32, shape=[1]), timeout=30)
    channel.close()
    assert d.stop() == 0, d.log_tail()


def test_token_file_for_loopback_tcp(tmp_path):
    token_file = tmp_path / "warpd.token"
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--listen", "127.0.0.1:0"])
    d.start()
    port = int(re.search(r"listening on .*127\.0\.0\.1:(\d+)", d.log_tail(20000)).group(1))
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) == 64
    t = Tenant(f"127.0.0.1:{port}", token)
    assert t.open()
    bad = Tenant(f"127.0.0.1:{port}", "0" * 64)
    code, _ = code_of(lambda: bad.open())
    assert code == grpc.StatusCode.UNAUTHENTICATED
    # The client finds the token by itself.
    import warpd.auth as auth

    assert auth.read_token_file(str(token_file)) == token
    os.chmod(token_file, 0o644)
    assert auth.read_token_file(str(token_file)) is None  # readable by others: not trusted
    os.chmod(token_file, 0o600)
    t.close()
    bad.close()
    assert d.stop() == 0, d.log_tail()
    assert not token_file.exists()


def test_beyond_loopback_needs_tls(tmp_path):
    proc = subprocess.run([daemon_binary(), "--listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "needs TLS" in proc.stderr, proc.stderr


def _self_signed(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return key, cert


def test_tls_and_token_on_tcp(tmp_path):
    key, cert = _self_signed(tmp_path)
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--listen", "0.0.0.0:0", "--tls-cert", str(cert),
                                                      "--tls-key", str(key)])
    d.start()
    port = int(re.search(r"listening on .*0\.0\.0\.0:(\d+)", d.log_tail(20000)).group(1))
    import warpd.auth as auth

    token = auth.login(str(d.socket))
    creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    t = Tenant(f"127.0.0.1:{port}", token, secure=creds)
    assert t.open()
    # TLS without a token, and a token without TLS, both fail.
    channel = grpc.secure_channel(f"127.0.0.1:{port}", creds)
    code, _ = code_of(lambda: runtime_pb2_grpc.RuntimeStub(channel).OpenSession(
        runtime_pb2.OpenSessionRequest(), timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    plain = Tenant(f"127.0.0.1:{port}", token)
    code, _ = code_of(lambda: plain.open())
    assert code == grpc.StatusCode.UNAVAILABLE
    plain.close()
    # The Python client with WARPD_TLS_CA and WARPD_TOKEN.
    script = textwrap.dedent("""
        import numpy as np, warpd as wp
        wp.config.quiet = True
        a = wp.array(np.arange(5, dtype=np.float32), dtype=float)
        print(a.numpy().sum())
    """)
    env = dict(os.environ, WARPD_ADDRESS=f"127.0.0.1:{port}", WARPD_TLS_CA=str(cert), WARPD_TOKEN=token)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("10.0"), proc.stdout
    t.close()
    assert d.stop() == 0, d.log_tail()


def test_print_config_shows_tenants_and_checks_the_file(tmp_path):
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": [{"name": "lab", "weight": 3, "limits": {"memory": "2G"}}]}))
    out = subprocess.run([daemon_binary(), "--tenants", str(path), "--print-config"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^tenant lab: weight=3 memory=2G arrays=\d+ sessions=256", out.stdout, re.M), out.stdout
    assert re.search(r"^max_memory: ", out.stdout, re.M)
    path.write_text(json.dumps({"tenants": [{"name": "lab", "colour": "red"}]}))
    out = subprocess.run([daemon_binary(), "--tenants", str(path), "--print-config"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and "colour" in out.stderr, out.stderr
