"""The command socket (issue 10, item 4): a client on the daemon's host sends
Submit, Synchronize and small Downloads over "<socket>.cmd"
(server/local/command_socket.h, clients/python/warpd/local_commands.py)
instead of gRPC.

The client uses it on its own and gets the same answers (results, kernel
output, faults with their line and index); everything a peer sends is
hostile: wrong tokens, another tenant's or session's handles, malformed
requests and frames, garbage and floods from many connections at once, a peer
that never reads its replies, and more connections than a user may hold.
None of it crashes the daemon or reaches another session, and a client that
cannot have the socket (refused, TCP, switched off) falls back to gRPC.
"""

import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import pytest

import warpd as wpd
from warpd import local_commands
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, write_tenants_file

HEADER = struct.Struct("<IB3x")


@wpd.kernel
def add_index(a: wpd.array(dtype=float)):
    i = wpd.tid()
    a[i] = a[i] + float(i)


@wpd.kernel
def talk_then_fault(a: wpd.array(dtype=float), n: int):
    i = wpd.tid()
    if i == 0:
        print("hello from the kernel")
    a[i + n] = 1.0


def rt():
    from warpd import context

    return context.runtime()


class Raw:
    """A raw command connection: frames in, replies out."""

    def __init__(self, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(local_commands.command_path(rt().address))

    def send(self, kind, body=b"", pad=b"\0\0\0"):
        self.sock.sendall(struct.pack("<IB", len(body), kind) + pad + body)

    def reply(self):
        """(code, body), or None when the daemon hung up."""
        head = self._exactly(HEADER.size)
        if head is None:
            return None
        n, code = HEADER.unpack(head)
        body = self._exactly(n) if n else b""
        return code, body

    def call(self, kind, body=b""):
        try:
            self.send(kind, body)
        except (BrokenPipeError, ConnectionResetError):
            # Refused at accept (too many connections): the daemon may have
            # written its refusal and closed before this frame went out.
            pass
        return self.reply()

    def hello(self, token=None, session=None):
        r = rt()
        return self.call(local_commands.HELLO, f"{token or r.token} {session or r.session}".encode())

    def hung_up(self):
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()

    def _exactly(self, n):
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data


INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAUTHENTICATED = 3, 5, 7, 8, 16


def launch_request(session, module, kernel, n, array):
    return runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True, commands=[
        runtime_pb2.Command(launch=runtime_pb2.Launch(
            module=module, kernel=kernel, dim=[n], args=[runtime_pb2.LaunchArg(array=array)]))])


def test_a_local_client_uses_it(wp):
    r = rt()
    assert r.commands is not None, "a client on the Unix socket has a command channel"
    sent = r.commands.requests
    a = wp.zeros(1000, dtype=float)
    for _ in range(3):
        wp.launch(add_index, dim=1000, inputs=[a])
    wp.synchronize()
    np.testing.assert_array_equal(a.numpy(), 3 * np.arange(1000, dtype=np.float32))
    assert r.commands.requests > sent, "the launches and the synchronize went over the command socket"


@pytest.mark.parametrize("spin_us", [0.0, 5000.0])
def test_answers_are_read_whether_the_client_polls_or_sleeps(wp, spin_us, monkeypatch):
    # The client polls for an answer for config.command_spin_us, then sleeps
    # in recv: both ways read every answer, in order, and a kernel that runs
    # longer than the polling still gets its answer.
    monkeypatch.setattr(wpd.config, "command_spin_us", spin_us)
    a = wp.zeros(4096, dtype=float)
    for k in range(1, 41):
        wp.launch(add_index, dim=4096 if k % 10 else 1, inputs=[a])
        wp.synchronize()
    expect = 36 * np.arange(4096, dtype=np.float32)
    np.testing.assert_array_equal(a.numpy(), expect)
    b = wp.zeros(1 << 22, dtype=float)
    for _ in range(4):  # each several milliseconds: longer than the polling
        wp.launch(add_index, dim=1 << 22, inputs=[b])
    wp.synchronize()
    np.testing.assert_array_equal(b.numpy()[-3:], 4 * np.arange((1 << 22) - 3, 1 << 22, dtype=np.float32))


def test_faults_and_kernel_output_come_back_over_it(wp, capfd):
    a = wp.zeros(8, dtype=float)
    wp.launch(talk_then_fault, dim=4, inputs=[a, 6])
    with pytest.raises(wpd.KernelError) as e:
        wp.synchronize()
    msg = str(e.value)
    line = open(__file__).read().split("\n").index("    a[i + n] = 1.0") + 1
    assert f"test_command_socket.py:{line}: index 8 out of bounds for dimension 0 (shape (8,))" in msg, msg
    assert "hello from the kernel" in capfd.readouterr().out
    wp.launch(add_index, dim=8, inputs=[a])  # the error was reported and cleared
    wp.synchronize()
    assert a.numpy()[7] >= 7


def test_a_refused_batch_is_raised_at_the_next_sync_and_the_stream_goes_on(wp):
    a = wp.zeros(4, dtype=float)
    s = rt().stream("cpu")
    cmd = s.add()
    cmd.free.array = 987654321  # no such array: the batch is refused whole
    with pytest.raises(wpd.NotFoundError):
        wp.synchronize()
    wp.launch(add_index, dim=4, inputs=[a])
    wp.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.arange(4, dtype=np.float32))


def test_hello_needs_this_tenants_token_and_session(wp, raw, serving):
    c = Raw()
    assert c.hello(token="0" * 64)[0] == UNAUTHENTICATED
    assert c.hung_up()
    c = Raw()
    assert c.hello(session="not-a-session")[0] in (NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED)
    assert c.hung_up()
    for bad in (b"", b"onlyonefield", b"a b c", b"\xff\xfe \x00"):
        c = Raw()
        code, _ = c.call(local_commands.HELLO, bad)
        assert code != 0, bad
        assert c.hung_up()
    assert serving()


def test_a_connection_speaks_only_for_its_own_session(wp, raw, serving):
    """Another session's array handle is unknown on this connection, even
    when the request names that session."""
    stub, _ = raw
    other = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
    try:
        theirs = stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=other, device="cpu", shape=[4], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
        c = Raw()
        assert c.hello() == (0, b"")
        req = runtime_pb2.SubmitRequest(session=other, device="cpu", commands=[
            runtime_pb2.Command(fill=runtime_pb2.FillArray(array=theirs, value=b"\0\0\x80\x3f"))])
        code, msg = c.call(local_commands.SUBMIT, req.SerializeToString())
        assert code == NOT_FOUND, msg
        code, msg = c.call(local_commands.SYNCHRONIZE,
                           runtime_pb2.SynchronizeRequest(session=other).SerializeToString())
        assert code == 0, msg
        got = b"".join(ch.data for ch in stub.Download(runtime_pb2.DownloadRequest(session=other, handle=theirs)))
        assert got == bytes(16), "the other session's array was not touched"
        c.close()
    finally:
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=other))
    assert serving()


def test_malformed_requests_fail_alone_and_malformed_frames_end_the_connection(wp, serving):
    c = Raw()
    assert c.hello() == (0, b"")
    for body in (b"\xff" * 40, b"\x1a\xff\xff\xff\xff\x0f", b"\x0a\x05ab"):
        code, msg = c.call(local_commands.SUBMIT, body)
        assert code == INVALID_ARGUMENT, (body, msg)
    # Still usable after failed requests.
    assert c.call(local_commands.SYNCHRONIZE, b"")[0] == 0
    # A launch of a module this session never loaded.
    req = runtime_pb2.SubmitRequest(device="cpu", commands=[runtime_pb2.Command(
        launch=runtime_pb2.Launch(module=123456, kernel="k", dim=[1]))])
    assert c.call(local_commands.SUBMIT, req.SerializeToString())[0] == NOT_FOUND
    # A device that does not exist.
    assert c.call(local_commands.SYNCHRONIZE,
                  runtime_pb2.SynchronizeRequest(device="cuda:7").SerializeToString())[0] != 0

    frames = [
        struct.pack("<IB", 0, 9) + b"\0\0\0",                                  # unknown kind
        struct.pack("<IB", 0, local_commands.SUBMIT) + b"\0\1\0",              # padding
        struct.pack("<IB", local_commands.MAX_FRAME + 1, local_commands.SUBMIT) + b"\0\0\0",  # too long
        struct.pack("<IB", 0xFFFFFFFF, local_commands.SUBMIT) + b"\0\0\0",
    ]
    for frame in frames:
        c = Raw()
        assert c.hello() == (0, b"")
        c.sock.sendall(frame)
        code, msg = c.reply()
        assert code == INVALID_ARGUMENT, (frame, msg)
        assert c.hung_up()
    assert serving()


def test_garbage_from_many_connections_at_once_while_a_client_works(wp, serving):
    """Random bytes, random frames and hang-ups inside frames from 6 threads,
    while this client launches and checks its results."""
    stop = threading.Event()
    errors = []

    def hostile(seed):
        rng = random.Random(seed)
        r = rt()
        while not stop.is_set():
            try:
                c = Raw(timeout=3.0)
                choice = rng.randrange(5)
                if choice == 0:
                    c.sock.sendall(rng.randbytes(rng.randrange(1, 300)))
                elif choice == 1:
                    c.hello()
                    c.sock.sendall(rng.randbytes(rng.randrange(1, 300)))
                elif choice == 2:
                    c.hello()
                    body = rng.randbytes(rng.randrange(0, 2000))
                    c.send(rng.choice([local_commands.SUBMIT, local_commands.SYNCHRONIZE]), body)
                    c.reply()
                elif choice == 3:
                    c.hello()
                    c.sock.sendall(struct.pack("<IB", 100000, local_commands.SUBMIT) + b"\0\0\0" + b"x" * 500)
                else:
                    c.hello(token=r.token, session=r.session + "x")
                c.close()
            except (OSError, socket.timeout):
                pass  # refused at the connection limit, or hung up on: fine
            except Exception as e:  # noqa: BLE001
                errors.append(e)

    threads = [threading.Thread(target=hostile, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    try:
        a = wp.zeros(512, dtype=float)
        for k in range(1, 41):
            wp.launch(add_index, dim=512, inputs=[a])
            if k % 4 == 0:
                np.testing.assert_array_equal(a.numpy(), k * np.arange(512, dtype=np.float32))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert serving()


def test_a_peer_that_never_reads_its_replies_stalls_only_itself(wp, serving):
    c = Raw()
    assert c.hello() == (0, b"")
    frame = HEADER.pack(0, local_commands.SYNCHRONIZE)
    c.sock.setblocking(False)
    sent = 0
    full_since = None
    # Until the socket buffers in both directions stay full: the daemon's
    # thread for this connection is then stuck sending a reply.
    while full_since is None or time.monotonic() - full_since < 0.5:
        try:
            c.sock.send(frame)
            sent += 1
            full_since = None
        except BlockingIOError:
            full_since = full_since or time.monotonic()
            time.sleep(0.01)
    assert sent > 100
    start = time.monotonic()
    assert serving()
    assert time.monotonic() - start < 10
    c.close()
    assert serving()


def test_one_tenant_cannot_hold_every_connection(wp, serving):
    held = []
    try:
        refused = None
        for _ in range(64):
            c = Raw()
            code, body = c.hello()
            if code != 0:
                refused = (code, body)
                break
            held.append(c)
        assert refused is not None and refused[0] == RESOURCE_EXHAUSTED, refused
        assert b"too many command connections for tenant" in refused[1], refused
        assert 0 < len(held) < PER_TENANT_UID, len(held)  # this client holds one connection too
        # A client opened now falls back to gRPC and still works.
        r = rt()
        assert local_commands.connect(r.address, r.token, r.session) is None
    finally:
        for c in held:
            c.close()
    assert serving()


def test_without_the_command_socket_the_client_uses_grpc(wp, monkeypatch):
    r = rt()
    assert local_commands.command_path("127.0.0.1:7777") is None
    monkeypatch.setenv("WARPD_COMMAND_SOCKET", "0")
    assert local_commands.connect(r.address, r.token, r.session) is None
    monkeypatch.setattr(r, "commands", None)
    a = wp.zeros(100, dtype=float)
    wp.launch(add_index, dim=100, inputs=[a])
    wp.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.arange(100, dtype=np.float32))


def test_small_arrays_are_read_over_it(wp, capfd):
    """numpy() of a small array that is not mapped (as an array of structs holding
    arrays never is) is one DOWNLOAD frame: after the queued work, with its kernel
    output, and its faults raised."""
    r = rt()
    a = wp.zeros(100, dtype=float)
    a._mapping = False
    wp.launch(add_index, dim=100, inputs=[a])
    sent = r.commands.requests
    np.testing.assert_array_equal(a.numpy(), np.arange(100, dtype=np.float32))
    assert r.commands.requests == sent + 2, "one Submit of the launch, one DOWNLOAD"
    v = a.numpy()
    v[0] = 5.0  # a copy, writable
    assert a.numpy()[0] == 0.0
    b = wp.zeros(8, dtype=float)
    b._mapping = False
    wp.launch(talk_then_fault, dim=4, inputs=[b, 6])
    with pytest.raises(wpd.KernelError) as e:
        b.numpy()
    assert "index 8 out of bounds" in str(e.value)
    assert "hello from the kernel" in capfd.readouterr().out
    np.testing.assert_array_equal(b.numpy()[:6], np.zeros(6, dtype=np.float32))  # the stream goes on
    empty = wp.zeros(0, dtype=float)
    assert empty.numpy().shape == (0,)


def test_a_raw_download_is_checked_like_the_rpc(wp, raw, serving):
    stub, _ = raw
    a = wp.array(np.arange(64, dtype=np.float32), dtype=float)
    wp.synchronize()
    c = Raw()
    assert c.hello() == (0, b"")

    def download(**fields):
        return c.call(local_commands.DOWNLOAD, runtime_pb2.DownloadRequest(**fields).SerializeToString())

    code, body = download(handle=a.handle, offset=8, length=16)
    assert code == 0, body
    assert runtime_pb2.DownloadChunk.FromString(body).data == np.arange(2, 6, dtype=np.float32).tobytes()
    assert download(handle=a.handle, offset=257)[0] == INVALID_ARGUMENT
    assert download(handle=a.handle, offset=8, length=2**64 - 1)[0] == INVALID_ARGUMENT
    assert download(handle=987654321)[0] == NOT_FOUND
    assert c.call(local_commands.DOWNLOAD, b"\xff" * 9)[0] == INVALID_ARGUMENT
    # Too large for one frame: the RPC's job.
    big = wp.zeros((local_commands.MAX_DOWNLOAD // 4) + 1, dtype=float)
    code, msg = download(handle=big.handle)
    assert code == INVALID_ARGUMENT and b"use the Download RPC" in msg, msg
    # Another session's array, even when the request names that session.
    other = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
    try:
        theirs = stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=other, device="cpu", shape=[4], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
        code, _ = download(session=other, handle=theirs)
        assert code == NOT_FOUND
    finally:
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=other))
    c.close()
    assert serving()


# ---------------------------------------------------------------- own daemons
# The tests below run daemons of their own and clients in processes of their
# own (the client is one runtime per process).

SPIN_CLIENT = '''
import json, os, sys, time
import warpd as wp
from warpd import context

wp.config.quiet = True


@wp.kernel
def spin(out: wp.array(dtype=float), outer: int, inner: int):
    x = float(0.0)
    for j in range(outer):
        for k in range(inner):
            x = x * 0.5 + 1.0
    out[0] = x


def run(outer):
    wp.launch(spin, dim=1, inputs=[out, outer, 1 << 16])
    wp.synchronize()


out = wp.zeros(1, dtype=float)
run(1)  # compiles
outer = 16
while True:  # how many outer turns make a second here
    start = time.perf_counter()
    run(outer)
    took = time.perf_counter() - start
    if took > 0.1:
        break
    outer *= 4
outer = max(1, int(outer / took * float(sys.argv[1])))
print(json.dumps({"phase": "synchronizing", "commands": context.runtime().commands is not None}), flush=True)
start = time.monotonic()
try:
    run(outer)
    result = {"ok": True}
except wp.WarpdError as e:
    result = {"error": type(e).__name__, "message": str(e), "code": e.code.name if e.code else None}
result["end"] = time.monotonic()  # the clock is the machine's: the test compares it
result["took"] = result["end"] - start
print(json.dumps(result), flush=True)
os._exit(0)  # the daemon is gone: no goodbye to it
'''


def start_spinning(tmp_path, daemon, seconds, command_socket, name):
    """A client process that calibrates a one-thread kernel to run about
    `seconds`, then launches it and synchronizes; returns (process, its first
    line: {"phase": "synchronizing", "commands": uses the command socket})."""
    script = tmp_path / "spin_client.py"
    script.write_text(SPIN_CLIENT)
    env = dict(os.environ, WARPD_ADDRESS=daemon.address, WARPD_COMMAND_SOCKET="1" if command_socket else "0")
    proc = subprocess.Popen([sys.executable, str(script), str(seconds)], env=env, stdout=subprocess.PIPE,
                            stderr=open(tmp_path / f"{name}.err", "w"), text=True)
    line = proc.stdout.readline()
    assert line, (tmp_path / f"{name}.err").read_text()
    return proc, json.loads(line)


def finish(proc):
    line = proc.stdout.readline()
    proc.wait(timeout=60)
    assert line, "the client printed no result"
    return json.loads(line)


def test_shutdown_gives_a_command_socket_synchronize_the_grace(tmp_path):
    """SIGTERM while a ~2 s kernel runs under a Synchronize on the command
    socket: the kernel finishes within the 5 s grace and the synchronize
    returns normally, as it does over gRPC."""
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    try:
        local, hello = start_spinning(tmp_path, d, 2.0, command_socket=True, name="local")
        assert hello["commands"], "the client uses the command socket"
        time.sleep(0.3)  # the synchronize is on its way
        term = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        result = finish(local)
        assert result.get("ok"), result
        assert result["end"] > term + 0.2, "the kernel ran on after SIGTERM"
        assert result["took"] < 5.0, result
        assert d.proc.wait(timeout=30) == 0, d.log_tail()
        assert time.monotonic() - term < 8.0
    finally:
        d.stop()


def test_shutdown_cancels_a_long_synchronize_alike_on_both_paths(tmp_path):
    """SIGTERM while a kernel far longer than the grace runs: the synchronize
    over the command socket and the one over gRPC both wait out the 5 s
    grace and then raise the same CancelledError with the same message."""
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    try:
        local, hello = start_spinning(tmp_path, d, 60, command_socket=True, name="local")
        assert hello["commands"]
        remote, hello = start_spinning(tmp_path, d, 60, command_socket=False, name="remote")
        assert not hello["commands"]
        time.sleep(0.3)
        d.proc.send_signal(signal.SIGTERM)
        got_local, got_remote = finish(local), finish(remote)
        assert got_remote.get("error") == "CancelledError" and got_remote["code"] == "CANCELLED", got_remote
        assert "kernel 'spin'" in got_remote["message"] and "cancelled" in got_remote["message"], got_remote
        assert (got_local.get("error"), got_local.get("code"), got_local.get("message")) == \
            (got_remote["error"], got_remote["code"], got_remote["message"]), (got_local, got_remote)
        assert 4.0 < got_local["took"] < 15.0, got_local
        assert d.proc.wait(timeout=30) == 0, d.log_tail()
    finally:
        d.stop()


ADD_CLIENT = '''
import json, os
import numpy as np
import warpd as wp
from warpd import context, local_commands

wp.config.quiet = True


@wp.kernel
def add_index(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + float(i)


a = wp.zeros(16, dtype=float)
wp.launch(add_index, dim=16, inputs=[a])
wp.synchronize()
print(json.dumps({"commands": context.runtime().commands is not None,
                  "refusal": local_commands.last_refusal,
                  "ok": bool((a.numpy() == np.arange(16, dtype=np.float32)).all())}), flush=True)
'''

# server/local/command_socket.h: kMaxConnectionsPerTenantUid (every
# connection here has the test's uid).
PER_TENANT_UID = 12


def test_tenants_of_one_uid_each_get_their_own_command_connections(tmp_path):
    """Two uid-less tenants, both used from this one uid (a service account
    whose processes carry different tokens): tenant a filling its command
    connections does not keep tenant b off the command socket; a's next
    connection is refused naming the per-tenant limit, and a's client falls
    back to gRPC and still works."""
    path, tokens = write_tenants_file(tmp_path, {"a": None, "b": None})
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path)])
    d.start()
    held = []
    try:
        channel = grpc.insecure_channel(d.address)
        session_a = runtime_pb2_grpc.RuntimeStub(channel).OpenSession(
            runtime_pb2.OpenSessionRequest(client_name="a"), metadata=[("authorization", "Bearer " + tokens["a"])],
            timeout=30).session
        channel.close()
        cmd_path = d.address[len("unix:"):] + ".cmd"
        refused = None
        for _ in range(64):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(10)
            c.connect(cmd_path)
            held.append(c)
            body = f"{tokens['a']} {session_a}".encode()
            c.sendall(HEADER.pack(len(body), local_commands.HELLO) + body)
            n, code = HEADER.unpack(c.recv(HEADER.size, socket.MSG_WAITALL))
            msg = c.recv(n, socket.MSG_WAITALL) if n else b""
            if code != 0:
                refused = (code, msg.decode())
                break
        assert len(held) == PER_TENANT_UID + 1, len(held)
        code, msg = refused
        assert code == RESOURCE_EXHAUSTED, refused
        assert msg.startswith(f"too many command connections for tenant 'a' from uid {os.getuid()}: "
                              f"{PER_TENANT_UID} are open"), msg
        assert "(16 per tenant, 12 per uid within it); use gRPC" in msg, msg

        script = tmp_path / "add_client.py"
        script.write_text(ADD_CLIENT)

        def client(tenant):
            env = dict(os.environ, WARPD_ADDRESS=d.address, WARPD_TOKEN=tokens[tenant])
            env.pop("WARPD_COMMAND_SOCKET", None)
            return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)

        procs = {t: client(t) for t in ("a", "b")}
        results = {}
        for t, p in procs.items():
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            results[t] = json.loads(out.strip().splitlines()[-1])
        assert results["b"] == {"commands": True, "refusal": None, "ok": True}, results
        assert results["a"]["commands"] is False and results["a"]["ok"] is True, results
        assert results["a"]["refusal"].startswith("too many command connections for tenant 'a'"), results
    finally:
        for c in held:
            c.close()
        alive = d.alive()
        assert d.stop() == 0 and alive, d.log_tail()
