"""Compiles happen off the RPC threads, once per module however many clients ask
at once (issue 10, item 5).

One daemon with a tenants file serves both tests: tenant "many" may run many
compiles at once (so its requests really overlap), "victim" only makes cheap
calls. Clients speak raw gRPC with their tenant's token.
"""

import os
import struct
import threading
import time

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd import types as wt
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, write_tenants_file

# The daemon's RPC pool (server/daemon_state.cc): max(8, 2 x hardware threads).
RPC_POOL_THREADS = max(8, 2 * (os.cpu_count() or 1))


@wp.kernel(module="compile_concurrency")
def chain(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    x = float(i)
    x = wp.sin(x) * s + 0.5  # repeated `steps` times by chain_module
    a[i] = x


def chain_module(steps):
    """A one-kernel module whose middle statement is repeated `steps` times: a
    new module for each `steps`, and a slower compile the larger it is (on a
    loaded 2-core machine: 12 steps 0.3 s, 70 steps 1.7 s, 100 steps 3.5 s)."""
    built, _ = chain.build()
    fn = ir_pb2.Function()
    fn.CopyFrom(built)
    body = list(fn.body)
    del fn.body[:]
    fn.body.extend(body[:2] + [body[2]] * steps + body[3:])
    m = ir_pb2.Module(name=f"chain_{steps}")
    m.functions.append(fn)
    return m


def chain_expected(n, steps, s):
    x = np.arange(n, dtype=np.float32)
    s = np.float32(s)
    for _ in range(steps):
        x = np.sin(x) * s + np.float32(0.5)
    return x


class Client:
    """One session of a tenant, spoken to from any thread."""

    def __init__(self, address, token, name="c"):
        self.md = [("authorization", "Bearer " + token)]
        self.channel = grpc.insecure_channel(address)
        self.stub = runtime_pb2_grpc.RuntimeStub(self.channel)
        self.session = self.call("OpenSession", runtime_pb2.OpenSessionRequest(client_name=name)).session

    def call(self, method, request, timeout=120):
        return getattr(self.stub, method)(request, metadata=self.md, timeout=timeout)

    def load_request(self, module):
        return runtime_pb2.LoadModuleRequest(session=self.session, module=module, devices=["cpu"])

    def array(self, n):
        return self.call("CreateArray", runtime_pb2.CreateArrayRequest(
            session=self.session, device="cpu", dtype=wt.to_typeref(wp.float32), shape=[n],
            init=runtime_pb2.ARRAY_INIT_ZEROS)).handle

    def run_chain(self, loaded, n, s):
        a = self.array(n)
        cmd = runtime_pb2.Command()
        cmd.launch.module, cmd.launch.kernel = loaded.module, loaded.kernels[0].name
        cmd.launch.dim.append(n)
        cmd.launch.args.add().array = a
        cmd.launch.args.add().bytes = struct.pack("<f", s)
        self.call("Submit", runtime_pb2.SubmitRequest(session=self.session, device="cpu", commands=[cmd],
                                                      synchronize=True))
        chunks = self.stub.Download(runtime_pb2.DownloadRequest(session=self.session, handle=a),
                                    metadata=self.md, timeout=120)
        return np.frombuffer(b"".join(c.data for c in chunks), dtype=np.float32)

    def compiles_running(self):
        usage = self.call("GetUsage", runtime_pb2.GetUsageRequest(session=self.session))
        return {q.resource: q.used for q in usage.quotas}["compiles"]

    def close(self):
        self.channel.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compile_concurrency")
    path, tokens = write_tenants_file(tmp, {"many": {"compiles": 4 * RPC_POOL_THREADS}, "victim": None})
    d = Daemon(daemon_binary(), tmp, extra_args=["--tenants", str(path), "--compile-workers", "2"])
    d.start()
    yield d, tokens
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


def test_many_clients_loading_one_new_module_share_one_compile(daemon):
    d, tokens = daemon
    steps, n, s = 12, 64, 0.75
    module = chain_module(steps)
    clients = [Client(d.address, tokens["many"], f"c{i}") for i in range(8)]
    try:
        # All at once: every request reaches the daemon before the first
        # compile (about a second) can end.
        start = threading.Barrier(len(clients))
        results = [None] * len(clients)

        def load(i):
            start.wait()
            results[i] = clients[i].call("LoadModule", clients[i].load_request(module))

        threads = [threading.Thread(target=load, args=(i,)) for i in range(len(clients))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r is not None for r in results), d.log_tail()
        assert [r.cache_hit for r in results].count(False) == 1, [(r.cache_hit, r.compile_ms) for r in results]
        assert len({r.cache_key for r in results}) == 1
        # server_ms covers the whole request on the daemon: at least the
        # compile's part (those that joined the compile waited for it).
        compiled = next(r for r in results if not r.cache_hit)
        assert compiled.server_ms >= compiled.compile_ms > 0, (compiled.server_ms, compiled.compile_ms)
        assert all(r.server_ms >= r.compile_ms > 0 for r in results), [(r.server_ms, r.compile_ms) for r in results]
        want = chain_expected(n, steps, s)
        for c, r in zip(clients, results):
            np.testing.assert_allclose(c.run_chain(r, n, s), want, rtol=1e-5, atol=1e-6)
    finally:
        for c in clients:
            c.close()


def test_cheap_calls_stay_fast_while_compiles_wait(daemon):
    """More LoadModules of one slow module than the RPC pool has threads:
    before, each held an RPC-pool thread until the compile ended (the one
    compiling, and the rest waiting for it), and another tenant's CreateArray
    waited behind them for the whole compile."""
    d, tokens = daemon
    steps, n, s = 70, 16, 0.5
    module = chain_module(steps)
    many = Client(d.address, tokens["many"], "many")
    victim = Client(d.address, tokens["victim"], "victim")
    requests = RPC_POOL_THREADS + 4
    try:
        victim.array(4)  # the victim's session works before the flood
        pending = [many.stub.LoadModule.future(many.load_request(module), metadata=many.md, timeout=120)
                   for _ in range(requests)]
        # Wait until every request holds a compile slot (before, each then
        # held or waited for an RPC-pool thread until the compile ended).
        deadline = time.monotonic() + 30
        while many.compiles_running() < requests:
            assert not any(f.done() for f in pending), "the compile ended before all requests arrived"
            assert time.monotonic() < deadline, many.compiles_running()
            time.sleep(0.01)
        latencies = []
        for _ in range(5):
            t0 = time.monotonic()
            victim.array(4)
            latencies.append(time.monotonic() - t0)
        compiling = not any(f.done() for f in pending)
        results = [f.result() for f in pending]
        slowest = max(r.compile_ms for r in results) / 1000
        assert compiling, f"the compile ({slowest:.2f} s) ended before the victim's calls did: {latencies}"
        assert max(latencies) < 1.0, (latencies, slowest)
        assert [r.cache_hit for r in results].count(False) == 1
        np.testing.assert_allclose(many.run_chain(results[0], n, s), chain_expected(n, steps, s),
                                   rtol=1e-5, atol=1e-6)
    finally:
        many.close()
        victim.close()
