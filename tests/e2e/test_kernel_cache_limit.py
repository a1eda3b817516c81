"""The kernel cache on disk is bounded (issue 23, item 6).

`--cache-max` bounds the cache directory: past it the least recently used
objects are deleted. With a tenants file, each tenant may add at most
`cache_bytes_per_hour` to it; past that its modules are compiled and served
from memory but not saved, so one tenant compiling module after module
cannot fill the disk or push the other tenants' kernels out of it.
"""

import re
from pathlib import Path

import grpc
import numpy as np

import warpd as wp
from warpd import types as wt
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, open_channel, write_tenants_file


@wp.kernel(module="cache_limit")
def scaled(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = float(i) * 3.0


def distinct_module(i):
    """`scaled` under the kernel name scaled_<i>: a module of its own (the
    name is in the generated source, so in the cache key)."""
    built, _ = scaled.build()
    fn = ir_pb2.Function()
    fn.CopyFrom(built)
    fn.name = f"scaled_{i}"
    fn.display_name = f"scaled_{i}"
    m = ir_pb2.Module(name=f"cache_limit_{i}")
    m.functions.append(fn)
    return m


def objects(cache_dir: Path):
    """{path: size} of the cache's entry files."""
    return {p: p.stat().st_size for p in cache_dir.glob("??/*.o") if p.is_file() and not p.is_symlink()}


def run_scaled(stub, session, loaded, md=()):
    """Runs the module's kernel over 4 elements; returns what it wrote."""
    n = 4
    arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cpu", dtype=wt.to_typeref(wp.float32), shape=[n]), metadata=md).handle
    cmd = runtime_pb2.Command()
    cmd.launch.module, cmd.launch.kernel = loaded.module, loaded.kernels[0].name
    cmd.launch.dim.append(n)
    cmd.launch.args.add().array = arr
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd], synchronize=True),
                metadata=md)
    data = stub.Download(runtime_pb2.DownloadRequest(session=session, handle=arr), metadata=md)
    return np.frombuffer(b"".join(c.data for c in data), dtype=np.float32)


def test_cache_max_keeps_the_directory_under_the_limit(tmp_path):
    limit = 64 << 10
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--cache-max", "64K"])
    d.start()
    try:
        channel = open_channel(d.address)
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="limit")).session
        written = 0
        first_key = None
        # Until twice the limit is written: objects are 2-4 KiB, by host CPU.
        for i in range(200):
            loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(
                session=session, module=distinct_module(i), devices=["cpu"]), timeout=120)
            assert not loaded.cache_hit, i
            first_key = first_key or loaded.cache_key
            sizes = objects(d.cache_dir)
            assert sum(sizes.values()) <= limit, (i, sum(sizes.values()))
            written += sizes[d.cache_dir / loaded.cache_key[:2] / f"{loaded.cache_key}.o"]
            if written > 2 * limit:
                break
        assert written > 2 * limit, f"only {written} bytes written: the test proves nothing"
        # The first module's object was evicted; the daemon still holds it.
        assert not (d.cache_dir / first_key[:2] / f"{first_key}.o").exists()
        again = stub.LoadModule(runtime_pb2.LoadModuleRequest(
            session=session, module=distinct_module(0), devices=["cpu"]), timeout=120)
        assert again.cache_hit and again.cache_key == first_key
        assert run_scaled(stub, session, again).tolist() == [0.0, 3.0, 6.0, 9.0]
        channel.close()
    finally:
        assert d.stop() == 0, d.log_tail()
    # A restart counts what is there and stays under the limit.
    d.start()
    try:
        channel = open_channel(d.address)
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="limit")).session
        for i in range(100, 104):
            stub.LoadModule(runtime_pb2.LoadModuleRequest(
                session=session, module=distinct_module(i), devices=["cpu"]), timeout=120)
            assert sum(objects(d.cache_dir).values()) <= limit
        channel.close()
    finally:
        assert d.stop() == 0, d.log_tail()


def test_tenant_past_its_cache_budget_is_served_from_memory_only(tmp_path):
    """A tenant's compiles past cache_bytes_per_hour still load and run, but
    add nothing to the disk cache; another tenant's still do."""
    path, tokens = write_tenants_file(tmp_path, {"flood": {"cache_bytes_per_hour": "12K"}, "calm": None})
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--tenants", str(path)], client_owns_cache=False)
    d.start()
    try:
        channel = grpc.insecure_channel(d.address)
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        flood = [("authorization", "Bearer " + tokens["flood"])]
        calm = [("authorization", "Bearer " + tokens["calm"])]
        s_flood = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="f"), metadata=flood).session
        s_calm = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="c"), metadata=calm).session
        before = set(objects(d.cache_dir))
        saved = []
        for i in range(12):
            loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(
                session=s_flood, module=distinct_module(200 + i), devices=["cpu"]), metadata=flood, timeout=120)
            assert not loaded.cache_hit
            saved.append((d.cache_dir / loaded.cache_key[:2] / f"{loaded.cache_key}.o").exists())
            # Served all the same.
            assert run_scaled(stub, s_flood, loaded, flood).tolist() == [0.0, 3.0, 6.0, 9.0]
        new = {p: n for p, n in objects(d.cache_dir).items() if p not in before}
        entry = max(new.values())
        # Saved while the budget lasted (12 KiB: a few objects), then never.
        fit = 12 * 1024 // entry
        assert saved == [True] * fit + [False] * (12 - fit), (saved, entry)
        assert len(new) == fit
        # The other tenant's budget is its own.
        loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(
            session=s_calm, module=distinct_module(300), devices=["cpu"]), metadata=calm, timeout=120)
        assert (d.cache_dir / loaded.cache_key[:2] / f"{loaded.cache_key}.o").exists()
        channel.close()
        assert re.search(r"tenant 'flood' reached its cache_bytes_per_hour limit \(12288 bytes\)", d.log_tail(20000))
    finally:
        assert d.stop() == 0, d.log_tail()
