"""The kernel cache is trusted only if it is the daemon's own (issue 7)."""

import os
import subprocess
import sys
import textwrap

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd import module as module_mod
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import open_channel, Daemon, daemon_binary, own_daemon


def _set_dir(stub, session, path):
    return stub.SetKernelCacheDir(runtime_pb2.SetKernelCacheDirRequest(session=session, path=path))


@pytest.mark.parametrize("path", ["relative/cache", "./c", "", "/tmp/nul\0byte"])
def test_client_cache_dir_must_be_absolute(raw, path):
    stub, session = raw
    with pytest.raises(grpc.RpcError) as e:
        _set_dir(stub, session, path)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert "absolute path" in e.value.details()


@pytest.mark.parametrize("mode", [0o775, 0o777, 0o1777])
def test_group_or_world_writable_cache_dir_is_refused(raw, tmp_path, mode):
    stub, session = raw
    d = tmp_path / f"shared_{mode:o}"
    d.mkdir()
    os.chmod(d, mode)
    with pytest.raises(grpc.RpcError) as e:
        _set_dir(stub, session, str(d))
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION, e.value.details()
    assert "writable by group or others" in e.value.details()


def test_daemon_refuses_an_untrusted_cache_dir_at_start(tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    os.chmod(d, 0o777)
    r = subprocess.run([daemon_binary(), "--listen", f"unix:{tmp_path / 's.sock'}", "--cache-dir", str(d)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "writable by group or others" in r.stdout + r.stderr


@wp.kernel(module="cache_trust")
def ct_kernel(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = float(i) * 3.0


def test_planted_and_truncated_objects_are_recompiled(tmp_path):
    """Objects on disk that do not verify are compiled again, and the kernel runs right."""
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    d.stop()
    objects = [p for p in (tmp_path / "cache").rglob("*.o")]
    assert objects, "the self-test wrote no object"
    # Truncate every object: the next start must still pass its self-test
    # (a recompile), and kernels must run right.
    for p in objects:
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) // 2)
    d.start()
    try:
        log = d.log_tail()
        assert "it will be compiled again" in log, log
        stub_channel = open_channel(d.address)
        stub = runtime_pb2_grpc.RuntimeStub(stub_channel)
        session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="trust")).session
        mod, _ = module_mod.get_module("cache_trust").build()
        loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=mod, devices=["cpu"]))
        arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=session, device="cpu", shape=[5], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
        stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True, commands=[
            runtime_pb2.Command(launch=runtime_pb2.Launch(module=loaded.module, kernel=mod.functions[0].name,
                                                          dim=[5], args=[runtime_pb2.LaunchArg(array=arr)]))]))
        got = np.frombuffer(b"".join(c.data for c in stub.Download(
            runtime_pb2.DownloadRequest(session=session, handle=arr))), dtype=np.float32)
        np.testing.assert_array_equal(got, np.arange(5, dtype=np.float32) * 3)
        stub_channel.close()
    finally:
        assert d.stop() == 0, d.log_tail()


def _launch(stub, session, module_handle, kernel, n=5):
    arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cpu", shape=[n], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True, commands=[
        runtime_pb2.Command(launch=runtime_pb2.Launch(module=module_handle, kernel=kernel, dim=[n],
                                                      args=[runtime_pb2.LaunchArg(array=arr)]))]))
    return np.frombuffer(b"".join(c.data for c in stub.Download(
        runtime_pb2.DownloadRequest(session=session, handle=arr))), dtype=np.float32)


def test_clear_kernel_cache_on_a_shared_daemon_touches_only_the_callers_modules(tmp_path):
    with own_daemon(tmp_path, ["a", "b"], client_owns_cache=False) as (d, stub, (a, b)):
        mod, _ = module_mod.get_module("cache_trust").build()
        kernel = mod.functions[0].name
        ha = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=a, module=mod, devices=["cpu"])).module
        hb = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=b, module=mod, devices=["cpu"])).module
        on_disk = sorted(p.name for p in (tmp_path / "cache").rglob("*.o"))
        assert len(on_disk) >= 2  # the self-test's and this module's

        resp = stub.ClearKernelCache(runtime_pb2.ClearKernelCacheRequest(session=a))
        assert resp.entries_removed == 0 and resp.modules_released == 1, resp
        assert sorted(p.name for p in (tmp_path / "cache").rglob("*.o")) == on_disk
        # a's module is released; b's still runs.
        with pytest.raises(grpc.RpcError) as e:
            _launch(stub, a, ha, kernel)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        np.testing.assert_array_equal(_launch(stub, b, hb, kernel), np.arange(5, dtype=np.float32) * 3)
        # a loads it again, from the shared cache.
        again = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=a, module=mod, devices=["cpu"]))
        assert again.cache_hit
        np.testing.assert_array_equal(_launch(stub, a, again.module, kernel), np.arange(5, dtype=np.float32) * 3)


def test_clearing_a_shared_daemons_cache_never_breaks_a_live_program(tmp_path):
    # Issue 24's regression: on a shared daemon, clear_kernel_cache() releases this
    # session's modules; a launch of an already-loaded kernel must load it again rather
    # than name the released handle ("module handle ... not found").
    script = tmp_path / "client.py"  # kernels need a source file
    script.write_text(textwrap.dedent("""
        import numpy as np, warpd as wp
        wp.config.quiet = True

        @wp.kernel
        def triple(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = a[i] * 3.0

        a = wp.array(np.arange(4, dtype=np.float32), dtype=float)
        wp.launch(triple, dim=4, inputs=[a])
        assert wp.build.clear_kernel_cache() == 0  # shared: nothing deleted, modules released
        wp.launch(triple, dim=4, inputs=[a])
        np.testing.assert_array_equal(a.numpy(), np.arange(4, dtype=np.float32) * 9)
        print("RELAUNCHED")
    """))
    with own_daemon(tmp_path, client_owns_cache=False) as (d, _stub, _):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, WARPD_ADDRESS=d.address))
        assert proc.returncode == 0 and "RELAUNCHED" in proc.stdout, proc.stdout + proc.stderr
