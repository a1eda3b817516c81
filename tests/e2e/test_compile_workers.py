"""Kernels compile in worker processes; the daemon survives what happens to them."""

import os
import signal
import struct
import time

import grpc
import numpy as np

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import open_channel, Daemon, daemon_binary, pid_alive


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append((int(entry), comm))
    return out


def _module(k):
    """A one-kernel module whose source differs for each k (a fresh compile)."""
    @wp.kernel(module=f"cw_{k}")
    def cw(a: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = s * float(i) + float(k)

    from warpd import module as module_mod

    mod, _ = module_mod.get_module(f"cw_{k}").build()
    return mod


def _run(stub, session, mod, k):
    loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=mod, devices=["cpu"]),
                             timeout=60)
    arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cpu", shape=[8], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True, commands=[
        runtime_pb2.Command(launch=runtime_pb2.Launch(
            module=loaded.module, kernel=mod.functions[0].name, dim=[8],
            args=[runtime_pb2.LaunchArg(array=arr), runtime_pb2.LaunchArg(bytes=struct.pack("<f", 2.0))]))]),
        timeout=60)
    got = np.frombuffer(b"".join(c.data for c in stub.Download(
        runtime_pb2.DownloadRequest(session=session, handle=arr))), dtype=np.float32)
    np.testing.assert_array_equal(got, 2.0 * np.arange(8, dtype=np.float32) + k)
    return loaded


def _connect(d):
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    return channel, stub, stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="cw")).session


def test_workers_run_beside_the_daemon_and_killed_ones_are_replaced(tmp_path, wp):
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--compile-workers", "2"])
    d.start()
    channel, stub, session = _connect(d)
    try:
        workers = [pid for pid, comm in _children(d.proc.pid) if comm.startswith("warpd-compile")]
        assert len(workers) == 2, _children(d.proc.pid)
        _run(stub, session, _module(1), 1)
        # Kill every worker while idle: the next compile gets fresh ones.
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
        _run(stub, session, _module(2), 2)
        now = [pid for pid, comm in _children(d.proc.pid) if comm.startswith("warpd-compile")]
        assert len(now) == 2 and not set(now) & set(workers), (workers, now)
        assert d.alive()
    finally:
        channel.close()
        assert d.stop() == 0, d.log_tail()
    for pid in now:
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(pid), f"compile worker {pid} outlived the daemon"


def test_compile_time_limit_is_deadline_exceeded_and_the_daemon_serves_on(tmp_path, wp):
    # A first start warms the cache with the start-up self-test's kernel and
    # one module; then a 1 ms limit stops every real compile.
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    channel, stub, session = _connect(d)
    _run(stub, session, _module(3), 3)
    channel.close()
    assert d.stop() == 0
    d.extra_args = ["--compile-timeout", "1ms"]
    d.start()
    channel, stub, session = _connect(d)
    try:
        mod = _module(4)
        try:
            stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=mod, devices=["cpu"]),
                            timeout=60)
            raise AssertionError("a compile finished within 1 ms")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, (e.code(), e.details())
            assert "kernel 'cw'" in e.details() and "compile time limit" in e.details(), e.details()
        # Cached code still loads and runs.
        _run(stub, session, _module(3), 3)
        assert d.alive()
    finally:
        channel.close()
        assert d.stop() == 0, d.log_tail()
