"""GPUs as the daemon lists them, without a GPU: a stand-in CUDA driver.

The daemon always loads libcuda.so.1 by that name; these tests put a directory
with the stand-in driver (runtime/device/cuda/testing/fake_libcuda.c, built
into build/tests/fake_cuda/) under that name first on LD_LIBRARY_PATH of their
own daemons, and choose its behaviour with WARPD_FAKE_CUDA_* variables. GPUs
are listed (name, arch, UUID, memory) but, without --cuda-execution, cannot
run work: every request for work on one fails with a clear
FAILED_PRECONDITION, the CPU keeps serving, and the client leaves them out of
Warp's device queries. With it, arrays and launches go to the GPUs (the last
tests here).
"""

import os

import grpc
import numpy as np
import pytest

from conftest import REPO, own_daemon

FAKE = REPO / "build" / "tests" / "fake_cuda" / "libwarpd_fake_libcuda.so"


@pytest.fixture
def fake_driver(tmp_path, monkeypatch):
    """Makes daemons started by the test load the stand-in as libcuda.so.1."""
    if not FAKE.exists():
        pytest.fail(f"{FAKE} is missing: build the tests first (ninja -C build)", pytrace=False)
    lib = tmp_path / "fake-driver"
    lib.mkdir()
    (lib / "libcuda.so.1").symlink_to(FAKE)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    for v in ("DEVICES", "VERSION", "INIT_ERROR", "RETAIN_ERROR", "MISSING", "FAULT_LAUNCH", "HOLD_LAUNCH"):
        monkeypatch.delenv(f"WARPD_FAKE_CUDA_{v}", raising=False)
    return monkeypatch


def _info(stub):
    from warpd.v1 import runtime_pb2

    return stub.GetServerInfo(runtime_pb2.GetServerInfoRequest())


def _cpu_array(stub, session, device="cpu"):
    from warpd.v1 import ir_pb2, runtime_pb2

    return stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device=device, shape=[4],
        dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32), init=runtime_pb2.ARRAY_INIT_ZEROS))


def test_two_gpus_are_listed_and_refuse_work(tmp_path, fake_driver):
    from warpd.v1 import runtime_pb2

    with own_daemon(tmp_path, sessions=["gpu-listing"]) as (d, stub, (session,)):
        info = _info(stub)
        by_name = {dev.name: dev for dev in info.devices}
        assert list(by_name) == ["cpu", "cuda:0", "cuda:1"]
        assert info.cuda_driver == "13.0"
        g0, g1 = by_name["cuda:0"], by_name["cuda:1"]
        assert (g0.alias, g0.kind, g0.arch, g0.uuid, g0.memory_bytes) == (
            "Fake GPU 0", "cuda", "sm_90", "GPU-a0010203-0405-0607-0809-0a0b0c0d0e0f", 80 << 30)
        assert (g1.alias, g1.arch, g1.uuid, g1.memory_bytes) == (
            "Fake GPU 1", "sm_86", "GPU-a1010203-0405-0607-0809-0a0b0c0d0e0f", 81 << 30)
        assert "--cuda-execution" in g0.unavailable and by_name["cpu"].unavailable == ""
        log = d.log_tail(100000)
        assert "CUDA: cuda:0 is Fake GPU 0 (sm_90, 132 SMs, 80.0 GiB, GPU-a0010203-" in log, log
        assert "cuda:1 is Fake GPU 1 (sm_86" in log, log

        # Work on a GPU fails clearly; the CPU serves.
        with pytest.raises(grpc.RpcError) as e:
            _cpu_array(stub, session, "cuda:1")
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "device 'cuda:1' (Fake GPU 1) cannot run work" in e.value.details()
        assert '"cpu"' in e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cuda:0"))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION, e.value.details()
        assert "cuda:0" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, devices=["cuda:0"]))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION, e.value.details()
        assert "device 'cuda:0' (Fake GPU 0) cannot run work" in e.value.details()
        assert _cpu_array(stub, session).handle != 0


def test_client_sees_only_devices_that_run_work(tmp_path, fake_driver, wp):
    from warpd import context
    from warpd.errors import DeviceError

    with own_daemon(tmp_path) as (d, _stub, _):
        rt = context.Runtime(d.address)
        rt.connect(timeout=30)
        try:
            assert list(rt.devices) == ["cpu"]
            assert list(rt.unavailable_devices) == ["cuda:0", "cuda:1"]
            assert rt.unavailable_devices["cuda:0"].uuid == "GPU-a0010203-0405-0607-0809-0a0b0c0d0e0f"
            for ident in ("cuda", "cuda:0", rt.unavailable_devices["cuda:1"]):
                with pytest.raises(DeviceError, match=r'cannot run work on the warpd server: CUDA execution '
                                                      r'is not enabled on this warpd'):
                    rt.device(ident)
            with pytest.raises(DeviceError, match="no such CUDA device"):
                rt.device("cuda:2")
            banner = context._banner(rt)
            assert '"cuda:0"' in banner and "Fake GPU 0 (sm_90) - cannot run work" in banner, banner
            assert "Driver: 13.0" in banner, banner
        finally:
            rt.close()


@pytest.mark.parametrize("env, reason", [
    ({"WARPD_FAKE_CUDA_DEVICES": "0"}, "CUDA disabled: the NVIDIA driver (CUDA 13.0) reports no CUDA device"),
    ({"WARPD_FAKE_CUDA_VERSION": "11080"},
     "CUDA disabled: the NVIDIA driver is too old: libcuda.so.1 supports CUDA 11.8; warpd needs a driver "
     "for CUDA 12.0 or newer"),
    ({"WARPD_FAKE_CUDA_INIT_ERROR": "999"}, "CUDA disabled: cuInit: FAKE_CUDA_ERROR_999 (fake driver text"),
    ({"WARPD_FAKE_CUDA_MISSING": "cuDevicePrimaryCtxRetain"},
     "CUDA disabled: libcuda.so.1 lacks the driver API entry point cuDevicePrimaryCtxRetain"),
], ids=["no-device", "too-old", "cuinit-fails", "missing-entry-point"])
def test_unusable_driver_disables_cuda_and_the_cpu_serves(tmp_path, fake_driver, env, reason):
    for k, v in env.items():
        fake_driver.setenv(k, v)
    with own_daemon(tmp_path, sessions=["no-cuda"]) as (d, stub, (session,)):
        assert [dev.name for dev in _info(stub).devices] == ["cpu"]
        assert reason in d.log_tail(100000), d.log_tail()
        assert "serving the CPU device" in d.log_tail(100000)
        assert _cpu_array(stub, session).handle != 0


def test_session_daemon_lists_no_usable_gpu_yet(wp):
    """Whatever this machine has, no GPU runs work yet: Warp's queries say so and
    naming one is a DeviceError."""
    assert wp.get_cuda_device_count() == 0
    assert not wp.is_cuda_available()
    assert [d.alias for d in wp.get_devices()] == ["cpu"]
    from warpd.errors import DeviceError

    with pytest.raises(DeviceError):
        wp.get_device("cuda:0")


# A client program run against a daemon that opened the stand-in's GPUs
# (--cuda-execution): arrays live in the stand-in's "device memory" (host
# memory the daemon cannot address as such: every byte moves through the
# CUDA device's staging, copies and fills) and come back right. Kernels are
# compiled to PTX and launched, but the stand-in runs no code, so no launch
# result is checked here (cuda_device_test checks what a launch passes).
CUDA_SCRIPT = r'''
import json, sys
import numpy as np
import warpd as wp

wp.init()
out = {"devices": [d.alias for d in wp.get_devices()], "names": [d.name for d in wp.get_devices()],
       "arch": [d.arch for d in wp.get_devices()],
       "sm_count": [d.sm_count for d in wp.get_devices()],
       "flags": [[d.is_uva, d.is_mempool_supported, d.is_primary, d.is_ipc_supported, d.uuid is None]
                 for d in wp.get_devices()],
       "cuda_count": wp.get_cuda_device_count(),
       "preferred": str(wp.get_preferred_device()), "default": str(wp.get_device())}
src = np.arange(24, dtype=np.float32).reshape(4, 6)
g = wp.array(src, dtype=float, device="cuda:0")
out["device"] = str(g.device)
out["roundtrip"] = g.numpy().tolist()
out["column"] = g[:, 1].numpy().tolist()          # a strided view, downloaded
big = wp.array(np.arange(300000, dtype=np.float32), dtype=float, device="cuda:0")
out["big"] = [float(big.numpy()[0]), float(big.numpy()[-1]), float(big.numpy().sum())]
g[1].fill_(7.0)                                     # a row view, filled
g[:, 4].fill_(-1.0)                                 # a strided view, filled
out["filled"] = g.numpy().tolist()
v = wp.zeros(3, dtype=wp.vec3, device="cuda:0")
v.fill_(wp.vec3(1.0, 2.0, 3.0))                    # a 12-byte pattern no memset writes
out["vec"] = v.numpy().tolist()
c = wp.empty(24, dtype=float, device="cpu")
wp.copy(c, g.flatten())                             # cuda -> cpu
h = wp.zeros(24, dtype=float, device="cuda:1")
wp.copy(h, c)                                       # cpu -> another gpu
out["copied"] = h.numpy().tolist()
out["to_cpu"] = g.to("cpu").numpy().tolist()
print("RESULT " + json.dumps(out), flush=True)
'''


# A local client's GPU arrays of 1 MiB or more move through CPU arrays mapped
# into it and copies in the daemon (array._host_staging), never through
# gRPC's Upload and Download; wp.copy between a CPU and a GPU array is one
# copy in the daemon.
HOST_STAGING_SCRIPT = r'''
import json
import numpy as np
import warpd as wp
from warpd import context

wp.init()
rt = context.runtime()
calls = []
real = rt.raw_method
rt.raw_method = lambda name: (calls.append(name), real(name))[1]
out = {}
import sys
sys.modules["warpd.array"].HOST_STAGED_CHUNK_BYTES = 1 << 20  # pieces of 1 MiB: several per array
src = np.arange((1 << 19) + 3, dtype=np.float32) * 0.5      # 2 MiB and 12 bytes: 3 pieces
views = []
real_call = rt.call
rt.call = lambda method, req, **kw: (views.append(method) if method in ("CreateView", "CreateArray") else None,
                                     real_call(method, req, **kw))[1]
g = wp.array(src, dtype=float, device="cuda:0")
out["pieces"] = views.count("CreateView")
del views[:]
g2 = wp.array(src, dtype=float, device="cuda:0")            # the same geometry again:
out["again"] = [views.count("CreateArray"), bool((g2.numpy() == src).all())]  # the kept CPU arrays
rt.call = real_call
out["back"] = bool((g.numpy() == src).all())
c = wp.zeros((1 << 19) + 3, dtype=float, device="cpu")
wp.copy(c, g)                                               # cuda:0 -> cpu
out["to_cpu"] = bool((c.numpy() == src).all())
h = wp.empty((1 << 19) + 3, dtype=float, device="cuda:1")
wp.copy(h, c)                                               # cpu -> cuda:1
out["to_gpu"] = bool((h.numpy() == src).all())
v = wp.array(np.arange(3 << 18, dtype=np.int32).reshape(-1, 3), dtype=wp.vec3i, device="cuda:0")
out["vec3i"] = bool((v.numpy() == np.arange(3 << 18, dtype=np.int32).reshape(-1, 3)).all())
v.assign(np.full((1 << 18, 3), 7, dtype=np.int32))         # an upload into a live array
out["assigned"] = bool((v.numpy() == 7).all())
m = wp.array(np.arange(1 << 20, dtype=np.float64).reshape(512, 2048), dtype=wp.float64, device="cuda:0")
out["2d"] = bool((m.numpy() == np.arange(1 << 20, dtype=np.float64).reshape(512, 2048)).all())
half = g[: 1 << 18]                                         # a contiguous view: 1 MiB
out["view"] = bool((half.numpy() == src[: 1 << 18]).all())
out["streams"] = list(calls)
small = wp.array(np.arange(5, dtype=np.float32), dtype=float, device="cuda:0")  # below 1 MiB: gRPC
out["small"] = small.numpy().tolist()
out["small_streams"] = calls[len(out["streams"]):]
print("RESULT " + json.dumps(out), flush=True)
'''


def test_large_gpu_arrays_of_a_local_client_move_through_mapped_memory(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_staging.py", HOST_STAGING_SCRIPT)
    assert out["back"] and out["to_cpu"] and out["to_gpu"] and out["assigned"] and out["view"], out
    assert out["vec3i"] and out["2d"], out
    assert out["pieces"] >= 3, out  # three pieces of g, each through a view
    # Another transfer of the same geometry reuses the CPU arrays the last one kept.
    assert out["again"] == [1, True], out  # only g2 itself is made
    assert out["streams"] == [], out  # no gRPC Upload or Download stream
    assert out["small"] == [0.0, 1.0, 2.0, 3.0, 4.0] and out["small_streams"] == ["Upload"], out


def run_client_script(daemon, path, text: str) -> dict:
    """Runs a client program (its own process: the client connects once per
    process) against `daemon`; returns the JSON it printed after "RESULT "."""
    import json
    import subprocess
    import sys

    path.write_text(text)
    env = dict(os.environ, WARPD_ADDRESS=daemon.address, PYTHONPATH=str(REPO / "clients" / "python"))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def _gpu_launch(stub, session, module, n=64):
    """(Command launching the module's first kernel over n threads with a new
    zeroed float32 array of n on cuda:0, the array's handle)."""
    from warpd.v1 import ir_pb2, runtime_pb2

    loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=module, devices=["cuda:0"]))
    arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cuda:0", shape=[n], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32),
        init=runtime_pb2.ARRAY_INIT_ZEROS)).handle
    cmd = runtime_pb2.Command()
    cmd.launch.module, cmd.launch.kernel = loaded.module, loaded.kernels[0].name
    cmd.launch.dim.append(n)
    cmd.launch.args.add().array = arr
    return cmd, arr


def test_arrays_on_opened_gpus_move_through_the_device(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=["gpu-arrays"], extra_args=["--cuda-execution"]) as (d, stub, _):
        info = {dev.name: dev for dev in _info(stub).devices}
        assert info["cuda:0"].unavailable == "" and info["cuda:1"].unavailable == ""
        assert "runs arrays and kernels (--cuda-execution: experimental)" in d.log_tail(100000)
        out = run_client_script(d, tmp_path / "gpu_arrays.py", CUDA_SCRIPT)
    src = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert out["devices"] == ["cpu", "cuda:0", "cuda:1"] and out["cuda_count"] == 2
    assert out["names"][1:] == ["Fake GPU 0", "Fake GPU 1"]  # Warp's Device.name: the product
    assert out["arch"] == [0, 90, 86]  # Warp's Device.arch: the compute capability as an int
    assert out["sm_count"] == [0, 132, 84]
    assert out["flags"] == [[False, False, False, False, True]] + [[True, True, True, False, False]] * 2
    assert out["preferred"] == out["default"] == "cuda:0"  # as in Warp when a GPU runs work
    assert out["device"] == "cuda:0"
    assert out["roundtrip"] == src.tolist()
    assert out["column"] == src[:, 1].tolist()
    n = 300000
    assert out["big"] == [0.0, float(n - 1), float(np.arange(n, dtype=np.float32).sum())]
    want = src.copy()
    want[1] = 7.0
    want[:, 4] = -1.0
    assert out["filled"] == want.tolist()
    assert out["vec"] == [[1.0, 2.0, 3.0]] * 3
    assert out["copied"] == want.reshape(-1).tolist()
    assert out["to_cpu"] == want.tolist()


def test_kernels_compile_for_the_gpus_arch_and_launch_there(tmp_path, fake_driver):
    from warpd.v1 import ir_pb2, runtime_pb2

    import warpd as wp

    @wp.kernel
    def scale(a: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = a[i] * s

    built, _ = scale.build()
    module = ir_pb2.Module(name="gpu_scale")
    module.functions.append(built)
    with own_daemon(tmp_path, sessions=["gpu-kernels"], extra_args=["--cuda-execution"]) as (d, stub, (session,)):
        on_gpu = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=module, devices=["cuda:1"]))
        on_cpu = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=module, devices=["cpu"]))
        assert on_gpu.cache_key != on_cpu.cache_key  # PTX for sm_86 vs. CPU code
        assert [k.name for k in on_gpu.kernels] == [k.name for k in on_cpu.kernels]
        assert on_gpu.kernels[0].args_size == on_cpu.kernels[0].args_size
        ptx = list((d.cache_dir / on_gpu.cache_key[:2]).glob(f"{on_gpu.cache_key}.ptx"))
        assert ptx and ".target sm_86" in ptx[0].read_text()
        with pytest.raises(grpc.RpcError) as e:
            stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=module,
                                                          devices=["cpu", "cuda:0"]))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "one kind of device" in e.value.details()

        arr = stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=session, device="cuda:1", shape=[1000], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32),
            init=runtime_pb2.ARRAY_INIT_ZEROS)).handle

        def launch(loaded, device):
            cmd = runtime_pb2.Command()
            cmd.launch.module, cmd.launch.kernel = loaded.module, loaded.kernels[0].name
            cmd.launch.dim.append(1000)
            cmd.launch.args.add().array = arr
            cmd.launch.args.add().bytes = np.float32(2.0).tobytes()
            return stub.Submit(runtime_pb2.SubmitRequest(session=session, device=device, commands=[cmd],
                                                         synchronize=True))

        launch(on_gpu, "cuda:1")  # the stand-in launches it (and runs no code)
        with pytest.raises(grpc.RpcError) as e:
            launch(on_cpu, "cuda:1")
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "was compiled for the CPU, not for cuda:1" in e.value.details()



def _health(channel, service: str) -> int:
    """grpc.health.v1 status of `service` (1 SERVING, 2 NOT_SERVING), by hand:
    HealthCheckRequest{service} is field 1, the response's status field 1."""
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=None,
                                response_deserializer=None)
    name = service.encode()
    reply = check(b"\x0a" + bytes([len(name)]) + name if name else b"", timeout=10)
    assert reply[:1] == b"\x08", reply
    return reply[1]


def _wait_health(channel, service, want, seconds=20):
    import time

    deadline = time.monotonic() + seconds
    while _health(channel, service) != want:
        assert time.monotonic() < deadline, f"{service} never became {want}"
        time.sleep(0.1)


def test_a_kernel_fault_takes_its_gpu_down_until_its_arrays_are_gone(tmp_path, fake_driver):
    """The first kernel launched faults (an illegal address, as the stand-in
    plays it): that GPU's context is lost, its health NOT_SERVING and every
    request on it fails clearly; the daemon, the CPU and the other GPU serve on;
    once the session holding the GPU's arrays is closed, the context is reset
    and the GPU serves again."""
    from warpd.v1 import ir_pb2, runtime_pb2

    import warpd as wp

    @wp.kernel
    def twice(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 2.0

    built, _ = twice.build()
    module = ir_pb2.Module(name="gpu_fault")
    module.functions.append(built)
    fake_driver.setenv("WARPD_FAKE_CUDA_FAULT_LAUNCH", "1")
    f32 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)
    with own_daemon(tmp_path, sessions=["faulting", "bystander"], extra_args=["--cuda-execution"]) as (
            d, stub, (session, other)):
        d_channel = grpc.insecure_channel(d.address)
        for service in ("", "cpu", "cuda:0", "cuda:1"):
            assert _health(d_channel, service) == 1, service
        cmd, arr = _gpu_launch(stub, session, module)
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cuda:0", commands=[cmd],
                                                  synchronize=True))
        assert e.value.code() == grpc.StatusCode.ABORTED, e.value.details()
        assert "cuda:0" in e.value.details() and "the device's CUDA context is lost" in e.value.details()
        _wait_health(d_channel, "cuda:0", 2)
        assert _health(d_channel, "") == 1 and _health(d_channel, "cpu") == 1 and _health(d_channel, "cuda:1") == 1
        log = d.log_tail(100000)
        assert "cuda:0 lost its CUDA context: NOT_SERVING until it is reset" in log, log
        # Every request on the lost GPU fails clearly, for every session; the rest works.
        with pytest.raises(grpc.RpcError) as e:
            stub.CreateArray(runtime_pb2.CreateArrayRequest(session=other, device="cuda:0", shape=[4], dtype=f32))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION, e.value.details()
        assert "cuda:0" in e.value.details()
        assert _cpu_array(stub, other).handle != 0
        assert _cpu_array(stub, other, "cuda:1").handle != 0
        assert "it is reset once the" in d.log_tail(100000)
        # The faulting session goes, and its array with it: the GPU comes back.
        stub.CloseSession(runtime_pb2.CloseSessionRequest(session=session))
        _wait_health(d_channel, "cuda:0", 1)
        assert "cuda:0: its CUDA context was reset; it serves again" in d.log_tail(100000)
        fresh = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=other, device="cuda:0", shape=[4], dtype=f32,
                                                                init=runtime_pb2.ARRAY_INIT_ZEROS)).handle
        data = stub.Download(runtime_pb2.DownloadRequest(session=other, handle=fresh))
        assert np.frombuffer(b"".join(c.data for c in data), dtype=np.float32).tolist() == [0.0] * 4
        d_channel.close()


def test_a_kernel_past_the_time_limit_is_stopped_on_the_gpu(tmp_path, fake_driver):
    """The first kernel launched runs until its cancel flag is set (the stand-in
    plays a kernel in an endless loop, which generated code leaves at its next
    loop back-edge once the flag is set): the daemon's --kernel-timeout sets it
    in the GPU's copy of the launch context, the launch fails with the time
    limit's error, and the GPU serves on."""
    import time

    from warpd.v1 import ir_pb2, runtime_pb2

    import warpd as wp

    @wp.kernel
    def spin(a: wp.array(dtype=float)):
        i = wp.tid()
        while a[i] >= 0.0:
            a[i] = a[i] + 1.0

    built, _ = spin.build()
    module = ir_pb2.Module(name="gpu_spin")
    module.functions.append(built)
    fake_driver.setenv("WARPD_FAKE_CUDA_HOLD_LAUNCH", "1")
    with own_daemon(tmp_path, sessions=["spinning"],
                    extra_args=["--cuda-execution", "--kernel-timeout", "1s"]) as (d, stub, (session,)):
        cmd, arr = _gpu_launch(stub, session, module)
        t0 = time.monotonic()
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cuda:0", commands=[cmd],
                                                  synchronize=True))
        took = time.monotonic() - t0
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED, e.value.details()
        assert "kernel 'spin'" in e.value.details()
        assert "ran longer than this server's launch time limit of 1s and was stopped" in e.value.details()
        assert 1.0 <= took < 30.0, took
        d_channel = grpc.insecure_channel(d.address)
        assert _health(d_channel, "cuda:0") == 1
        d_channel.close()
        # The second launch is not held: it runs (the stand-in runs no code).
        stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cuda:0", commands=[cmd], synchronize=True))


# A graph captured on cuda:0: fills, a launch (the stand-in runs no code) and
# a copy, replayed as one CUDA graph (runtime/device/recorded_work.h).
CAPTURE_SCRIPT = r'''
import json, os
import numpy as np
import warpd as wp

@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0

wp.init()
a = wp.zeros(1000, dtype=float, device="cuda:0")
b = wp.zeros(1000, dtype=float, device="cuda:0")
wp.capture_begin(device="cuda:0")
a.fill_(3.0)
wp.launch(bump, dim=1000, inputs=[a], device="cuda:0")
wp.copy(b, a)
a.fill_(-1.0)
graph = wp.capture_end(device="cuda:0")
out = {"a": [], "b": [], "errors": []}
for r in range(int(os.environ.get("REPLAYS", "3"))):
    b.zero_()
    try:
        wp.capture_launch(graph)
        wp.synchronize_device("cuda:0")
    except Exception as e:
        out["errors"].append(type(e).__name__ + ": " + str(e))
        continue
    out["b"].append(b.numpy().tolist())
    out["a"].append(a.numpy().tolist())
print("RESULT " + json.dumps(out), flush=True)
'''


def test_a_graph_on_a_gpu_replays_as_one_cuda_graph(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=["gpu-graph"], extra_args=["--cuda-execution"]) as (d, stub, _):
        out = run_client_script(d, tmp_path / "gpu_graph.py", CAPTURE_SCRIPT)
    assert out["errors"] == []
    assert out["b"] == [[3.0] * 1000] * 3
    assert out["a"] == [[-1.0] * 1000] * 3


def test_each_replay_of_a_recorded_graph_gets_the_time_limit(tmp_path, fake_driver):
    """The stand-in holds the first kernel launched until its cancel flag is
    set: here the launch captured into the CUDA graph, so every replay holds
    (a graph replayed command by command would hold only the first). Each
    replay is stopped at the time limit and fails with its error; the GPU
    serves on."""
    fake_driver.setenv("WARPD_FAKE_CUDA_HOLD_LAUNCH", "1")
    fake_driver.setenv("REPLAYS", "2")
    with own_daemon(tmp_path, sessions=["gpu-graph-held"],
                    extra_args=["--cuda-execution", "--kernel-timeout", "1s"]) as (d, stub, _):
        out = run_client_script(d, tmp_path / "gpu_graph_held.py", CAPTURE_SCRIPT)
        channel = grpc.insecure_channel(d.address)
        assert _health(channel, "cuda:0") == 1
        channel.close()
    assert len(out["errors"]) == 2, out["errors"]
    for e in out["errors"]:
        assert "a graph replay of 1 kernel launch ('bump') ran longer than this server's launch time limit of 1s" in e, e


# Timing events on cuda:0 (the stand-in driver): the daemon stamps each when
# the stream reaches it, after the work before it has finished.
TIMING_SCRIPT = r'''
import json, time
import warpd as wp

@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0

wp.init()
out = {}
big = wp.zeros(64 << 20, dtype=wp.uint8, device="cuda:0")
small = wp.zeros(16, dtype=float, device="cuda:0")
with wp.ScopedDevice("cuda:0"):
    start, end = wp.Event(enable_timing=True), wp.Event(enable_timing=True)
    t0 = time.perf_counter()
    wp.record_event(start)
    for _ in range(4):
        big.fill_(7)                                  # the stand-in's memset: real time
    wp.record_event(end)
    out["fill_ms"] = wp.get_event_elapsed_time(start, end)
    out["wall_ms"] = (time.perf_counter() - t0) * 1e3
    s2, e2 = wp.Event(enable_timing=True), wp.Event(enable_timing=True)
    wp.record_event(s2)
    wp.record_event(e2)
    out["empty_ms"] = wp.get_event_elapsed_time(s2, e2, synchronize=False)
    # The held launch is stopped at the time limit: the end event's stream fails with it.
    s3, e3 = wp.Event(enable_timing=True), wp.Event(enable_timing=True)
    wp.record_event(s3)
    wp.launch(bump, dim=16, inputs=[small])
    wp.record_event(e3)
    try:
        wp.get_event_elapsed_time(s3, e3)
    except Exception as e:
        out["held"] = type(e).__name__ + ": " + str(e)
    untimed = wp.Event()
    wp.record_event(untimed)
    try:
        wp.get_event_elapsed_time(start, untimed)
    except RuntimeError as e:
        out["untimed"] = str(e)
    never = wp.Event(enable_timing=True)
    try:
        wp.get_event_elapsed_time(start, never)
    except RuntimeError as e:
        out["never"] = str(e)
    wp.capture_begin()
    try:
        wp.record_event(wp.Event(enable_timing=True))
    except RuntimeError as e:
        out["captured"] = str(e)
    wp.capture_end()
try:
    wp.Event(device="cpu", enable_timing=True)
except Exception as e:
    out["cpu"] = type(e).__name__
print("RESULT " + json.dumps(out), flush=True)
'''


def test_timing_events_measure_the_work_between_them(tmp_path, fake_driver):
    fake_driver.setenv("WARPD_FAKE_CUDA_HOLD_LAUNCH", "1")
    with own_daemon(tmp_path, sessions=["gpu-timing"],
                    extra_args=["--cuda-execution", "--kernel-timeout", "1s"]) as (d, stub, _):
        out = run_client_script(d, tmp_path / "gpu_timing.py", TIMING_SCRIPT)
    assert 0.0 < out["fill_ms"] <= out["wall_ms"], out
    assert 0.0 <= out["empty_ms"] < out["fill_ms"], out
    assert "kernel 'bump'" in out["held"] and "launch time limit of 1s" in out["held"], out
    assert "made without enable_timing=True" in out["untimed"], out
    assert "never recorded" in out["never"], out
    assert "cannot be recorded in a graph capture" in out["captured"], out
    assert out["cpu"] in ("RuntimeError", "DeviceError", "ValueError"), out


# wp.matmul on cuda:0 through the stand-in cuBLAS (which computes on the
# stand-in's host-memory "device" memory), forward and backward on a Tape.
MATMUL_SCRIPT = r'''
import json
import numpy as np
import warpd as wp

wp.init()
rng = np.random.default_rng(5)
an, bn, cn = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (3, 4), (5, 4)))
with wp.ScopedDevice("cuda:0"):
    a = wp.array(an, dtype=float, requires_grad=True)
    b = wp.array(bn, dtype=float, requires_grad=True)
    c = wp.array(cn, dtype=float, requires_grad=True)
    d = wp.zeros((5, 4), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.matmul(a, b, c, d, alpha=2.0, beta=0.5)
    d.grad.fill_(1.0)
    tape.backward()
    out = {"d": d.numpy().tolist(), "a_grad": a.grad.numpy().tolist(), "b_grad": b.grad.numpy().tolist(),
           "op": (a @ b).numpy().tolist()}
    x = wp.array(rng.standard_normal((2, 3, 2)), dtype=wp.float64)
    y = wp.array(rng.standard_normal((2, 2, 3)), dtype=wp.float64)
    z = wp.zeros((2, 3, 3), dtype=wp.float64)
    wp.batched_matmul(x, y, z, z)
    out["batched"] = z.numpy().tolist()
    out["batched_want"] = (x.numpy() @ y.numpy()).tolist()
print("RESULT " + json.dumps(out), flush=True)
'''


def test_matmul_runs_on_the_gpu_through_cublas(tmp_path, fake_driver):
    fake_driver.setenv("WARPD_CUBLAS", str(FAKE.parent / "libwarpd_fake_libcublas.so"))
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_matmul.py", MATMUL_SCRIPT)
    rng = np.random.default_rng(5)
    an, bn, cn = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (3, 4), (5, 4)))
    np.testing.assert_allclose(out["d"], 2.0 * an @ bn + 0.5 * cn, rtol=1e-5, atol=1e-5)
    ones = np.ones((5, 4), dtype=np.float32)
    np.testing.assert_allclose(out["a_grad"], 2.0 * ones @ bn.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["b_grad"], 2.0 * an.T @ ones, rtol=1e-5, atol=1e-5)
    # c.grad += beta * d.grad is a kernel, which the stand-in does not run (test_gpu checks it on a GPU).
    np.testing.assert_allclose(out["op"], an @ bn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["batched"], out["batched_want"], rtol=1e-12)


# Warp's pool and peer functions on the stand-in GPUs, as a shared daemon's
# client sees them (clients/python/warpd/mempool.py).
MEMPOOL_SCRIPT = r'''
import json, warnings
import warpd as wp

wp.init()
out = {"supported": [wp.is_mempool_supported(d) for d in ("cuda:0", "cuda:1")],
       "threshold": wp.get_mempool_release_threshold("cuda:0")}
wp.set_mempool_enabled("cuda:0", True)
with wp.ScopedMempool("cuda:0", True):
    pass
errors = {}
for name, fn in {"disable": lambda: wp.set_mempool_enabled("cuda:0", False),
                 "negative": lambda: wp.set_mempool_release_threshold("cuda:0", -1),
                 "peer": lambda: wp.set_peer_access_enabled("cuda:0", "cuda:1", True),
                 "pool_access": lambda: wp.set_mempool_access_enabled("cuda:1", "cuda:0", True)}.items():
    try:
        fn()
        errors[name] = "no error"
    except Exception as e:
        errors[name] = type(e).__name__ + ": " + str(e)
out["errors"] = errors
# This session's use of each pool: its arrays' data there, now and at most.
used = {"start": [wp.get_mempool_used_mem_current(d) for d in ("cuda:0", "cuda:1")]}
a = wp.zeros(1000, dtype=float, device="cuda:0")            # 4000 bytes
b = wp.zeros((10, 3), dtype=wp.vec3d, device="cuda:0")      # 720 bytes
c = wp.empty(64, dtype=wp.int8, device="cuda:1")            # 64 bytes
v = a[10:20]                                                # a view: no new memory
used["three"] = [wp.get_mempool_used_mem_current(d) for d in ("cuda:0", "cuda:1")]
del a, v
wp.synchronize()
used["freed"] = [wp.get_mempool_used_mem_current(d) for d in ("cuda:0", "cuda:1")]
used["high"] = [wp.get_mempool_used_mem_high(d) for d in ("cuda:0", "cuda:1")]
try:
    wp.get_mempool_used_mem_current("cpu")
except ValueError as e:
    used["cpu"] = str(e)
out["used"] = used
wp.set_peer_access_enabled("cuda:0", "cuda:1", False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    wp.set_mempool_release_threshold("cuda:0", 0)      # the daemon's value: no warning
    wp.set_mempool_release_threshold("cuda:0", 0.25)   # a quarter of 80 GiB: ignored, said so
out["warnings"] = [str(w.message) for w in caught]
print("RESULT " + json.dumps(out), flush=True)
'''


def test_mempool_functions_as_a_shared_daemon_has_them(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_mempool.py", MEMPOOL_SCRIPT)
    assert out["supported"] == [True, True]
    assert out["threshold"] == 0  # the daemon's default
    e = out["errors"]
    assert e["disable"].startswith("RuntimeError") and "cannot be turned off for one client" in e["disable"], e
    assert e["negative"].startswith("ValueError"), e
    used = out["used"]
    assert used["start"] == [0, 0], used
    assert used["three"] == [4000 + 720, 64], used
    assert used["freed"] == [720, 64], used
    assert used["high"] == [4720, 64], used
    assert "only supported on CUDA devices" in used["cpu"], used
    assert e["peer"].startswith("RuntimeError") and "Device cuda:1 cannot access device cuda:0" in e["peer"], e
    assert e["pool_access"].startswith("RuntimeError") and "cannot access device cuda:1" in e["pool_access"], e
    assert len(out["warnings"]) == 1 and "stays 0 bytes" in out["warnings"][0], out["warnings"]
    assert str((80 << 30) // 4) in out["warnings"][0], out["warnings"]


# The start of client scripts below that look at what the client sends:
# spy_submits(rt) is the list of the SubmitRequests sent from then on.
SUBMIT_SPY = r'''
from warpd.v1 import runtime_pb2 as _pb2


def spy_submits(rt):
    sent = []
    real = rt.call_stream

    def spy(method, request, device="", timeout=None):
        if method == "Submit":
            r = _pb2.SubmitRequest()
            r.ParseFromString(request if isinstance(request, bytes) else request.SerializeToString())
            sent.append(r)
        return real(method, request, device, timeout)

    rt.call_stream = spy
    return sent
'''


# Meshes, BVHs, hash grids and volumes on a GPU: built on the daemon's host
# and mirrored to the GPU (runtime/objects/device_mirror.h). The stand-in
# runs no kernel code, so here: everything is made, built, refitted and
# launched against without an error, the mirrors are the session's GPU
# memory, and what comes back from the GPU's copy of a volume is what a CPU
# volume made the same way holds. tests/e2e/test_gpu.py checks query results
# on a real GPU.
OBJECTS_SCRIPT = SUBMIT_SPY + r'''
import json
import numpy as np
import warpd as wp

wp.init()
out = {}
dev = "cuda:0"
pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
idx = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], dtype=np.int32)
before = wp.get_mempool_used_mem_current(dev)
mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3, device=dev), indices=wp.array(idx, dtype=int, device=dev),
               velocities=wp.zeros(4, dtype=wp.vec3, device=dev))
mesh.refit()
mesh.points = wp.array(pts * 2.0, dtype=wp.vec3, device=dev)
bvh = wp.Bvh(wp.array(pts, dtype=wp.vec3, device=dev), wp.array(pts + 1.0, dtype=wp.vec3, device=dev))
bvh.refit()
grid = wp.HashGrid(8, 8, 8, device=dev)
grid.build(wp.array(pts, dtype=wp.vec3, device=dev), radius=0.5)
vols = [wp.Volume.allocate((0.0, 0.0, 0.0), (20.0, 9.0, 9.0), voxel_size=1.0, bg_value=2.5, device=d)
        for d in (dev, "cpu")]
out["mirrors"] = wp.get_mempool_used_mem_current(dev) - before

@wp.kernel
def query(m: wp.uint64, b: wp.uint64, g: wp.uint64, v: wp.uint64, res: wp.array(dtype=float)):
    i = wp.tid()
    r = wp.mesh_query_point_no_sign(m, wp.vec3(0.2, 0.2, 5.0), 100.0)
    q = wp.bvh_query_aabb(b, wp.vec3(0.0), wp.vec3(1.0))
    k = int(0)
    n = int(0)
    while wp.bvh_query_next(q, k):
        n += 1
    h = wp.hash_grid_query(g, wp.vec3(0.0), 0.5)
    while wp.hash_grid_query_next(h, k):
        n += 1
    wp.volume_store_f(v, 1, 2, 3, 7.0)
    res[i] = float(r.face + n) + wp.volume_lookup_f(v, 1, 2, 3)

res = wp.zeros(4, dtype=float, device=dev)
wp.launch(query, dim=4, inputs=[mesh.id, bvh.id, grid.id, vols[0].id, res], device=dev)
wp.synchronize_device(dev)
out["launched"] = res.numpy().tolist()
gpu_bytes, cpu_bytes = (v.array().numpy() for v in vols)
out["volume_same"] = bool((gpu_bytes == cpu_bytes).all()) and gpu_bytes.size > 0
out["volume_bytes"] = int(gpu_bytes.size)
out["tiles"] = sorted(vols[0].get_tiles().numpy().tolist())
out["cpu_tiles"] = sorted(vols[1].get_tiles().numpy().tolist())
out["on"] = [str(mesh.device), str(grid.device), str(vols[0].device)]
del mesh, bvh, grid, vols
import gc
gc.collect()
wp.synchronize_device(dev)
out["after"] = wp.get_mempool_used_mem_current(dev) - before

# As in Warp, builds and refits run on the device's current stream.
from warpd import context
sent = spy_submits(context.runtime())
side = wp.Stream(dev)
grid = wp.HashGrid(8, 8, 8, device=dev)
mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3, device=dev), indices=wp.array(idx, dtype=int, device=dev))
wp.synchronize()
del sent[:]
with wp.ScopedStream(side):
    grid.build(wp.array(pts, dtype=wp.vec3, device=dev), radius=0.5)
    mesh.refit()
wp.synchronize()
out["builds_on"] = sorted({(r.stream != 0, c.WhichOneof("kind")) for r in sent for c in r.commands
                           if c.WhichOneof("kind") in ("build_hash_grid", "build_tree")})
print("RESULT " + json.dumps(out), flush=True)
'''


def test_meshes_bvhs_hash_grids_and_volumes_are_mirrored_to_the_gpu(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_objects.py", OBJECTS_SCRIPT)
    assert out["on"] == ["cuda:0"] * 3
    assert out["launched"] == [0.0] * 4  # launched with the objects' table; the stand-in runs no code
    assert out["volume_same"] and out["volume_bytes"] > 0
    assert out["tiles"] == out["cpu_tiles"] and len(out["tiles"]) == 12  # x 0-20, y and z 0-9: 3 * 2 * 2
    # The mirrors are GPU memory of the session (with the arrays), freed with the objects.
    assert out["mirrors"] > out["volume_bytes"], out
    assert out["after"] < out["mirrors"], out
    assert out["builds_on"] == [[True, "build_hash_grid"], [True, "build_tree"]], out  # the side stream


# numpy() of a GPU array (and an upload into one) comes after the work sent to
# the device's other streams, as Warp's does on the device's null stream: the
# default stream's Submit puts its waits for them before the copy, also when
# the array moves through mapped memory (array._staged_download).
JOIN_SCRIPT = SUBMIT_SPY + r'''
import json
import numpy as np
import warpd as wp
from warpd import context

wp.init()
sent = spy_submits(context.runtime())

@wp.kernel
def fill(a: wp.array(dtype=float), v: float):
    a[wp.tid()] = v

out = {}
for n in (1 << 20, 1000):  # staged through mapped memory (4 MiB), and through gRPC
    c = wp.zeros(n, dtype=float, device="cuda:0")
    wp.synchronize()
    s = wp.Stream("cuda:0")
    wp.launch(fill, dim=n, inputs=[c, 1.0], device="cuda:0", stream=s)
    del sent[:]
    c.numpy()
    out[str(n)] = [[c.WhichOneof("kind") for c in r.commands] for r in sent if r.stream == 0]
print("RESULT " + json.dumps(out), flush=True)
'''


def test_numpy_of_a_gpu_array_comes_after_the_other_streams_work(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_join.py", JOIN_SCRIPT)
    staged = [k for kinds in out[str(1 << 20)] for k in kinds]
    assert "copy" in staged and "wait" in staged, out
    assert staged.index("wait") < staged.index("copy"), out
    # Through gRPC, the Download follows a Submit that joined the other stream.
    assert "wait" in [k for kinds in out["1000"] for k in kinds], out


# The CPU arrays a GPU transfer keeps for the next one (array._staging_pieces)
# give way when the session's memory is needed for an array.
STAGING_QUOTA_SCRIPT = r'''
import json, sys
import numpy as np
import warpd as wp
from warpd import context

wp.init()
rt = context.runtime()
sys.modules["warpd.array"].HOST_STAGED_CHUNK_BYTES = 2 << 20
src = np.arange(3 << 18, dtype=np.float32)                 # 3 MiB: two pieces, two 2 MiB CPU arrays kept
g = wp.array(src, dtype=float, device="cuda:0")
out = {"kept": "_staging_cache" in rt.__dict__}
big = wp.zeros(7 << 18, dtype=float, device="cpu")         # 7 MiB: fits the 12 MiB only without them
out["big"] = big.shape[0]
out["kept_after"] = "_staging_cache" in rt.__dict__
out["back"] = bool((g.numpy() == src).all())
print("RESULT " + json.dumps(out), flush=True)
'''


def test_the_cpu_arrays_kept_for_gpu_transfers_give_way_to_arrays(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution", "--max-memory", "12M"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_staging_quota.py", STAGING_QUOTA_SCRIPT)
    assert out["kept"] and out["big"] == 7 << 18 and out["back"], out


# wp.copy between two GPUs is one copy in the daemon (PeerCopyCommand: through
# its host memory), on the destination's current stream or the stream given
# (of either device), after the work sent to the other device: no bytes go
# through the client.
PEER_COPY_SCRIPT = SUBMIT_SPY + r'''
import json
import numpy as np
import warpd as wp
from warpd import context

wp.init()
rt = context.runtime()
moves = []
real = rt.raw_method
rt.raw_method = lambda name: (moves.append(name), real(name))[1]
sent = spy_submits(rt)
src = np.arange(5 << 20, dtype=np.float32).reshape(-1, 5) * 0.25   # 20 MiB: two pieces in the daemon
a = wp.array(src, dtype=float, device="cuda:0")
b = wp.zeros(src.shape, dtype=float, device="cuda:1")
del moves[:]
del sent[:]
wp.copy(b, a)                                   # on cuda:1's current stream
out = {"moves": list(moves), "same": bool((b.numpy() == src).all())}
out["one_copy"] = ("cuda:1", b.handle, a.handle) in [(r.device, c.copy.dst, c.copy.src) for r in sent
                                                     for c in r.commands if c.WhichOneof("kind") == "copy"]
c = wp.zeros(src.shape, dtype=float, device="cuda:1")
s0 = wp.Stream("cuda:0")
wp.copy(c, a, stream=s0)                         # on a stream of the source's device
wp.synchronize()
out["pushed"] = bool((c.numpy() == src).all())
col = wp.zeros(src.shape[0], dtype=float, device="cuda:1")
wp.copy(col, a[:, 3])                           # a strided view of the source
out["column"] = bool((col.numpy() == src[:, 3]).all())
print("RESULT " + json.dumps(out), flush=True)
'''


def test_copies_between_two_gpus_run_in_the_daemon(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "gpu_peer_copy.py", PEER_COPY_SCRIPT)
    assert out["same"] and out["pushed"] and out["column"] and out["one_copy"], out
    assert "Download" not in out["moves"] and "Upload" not in out["moves"], out


# CUDA IPC (cuda_ipc.py): a local client imports its session's GPU arrays
# through its own libcuda.so.1 (here the stand-in too, which maps the pool's
# memory file again): the bytes the daemon holds, writes that reach the
# array, views at their offset, and no import of anything else.
IPC_SCRIPT = r'''
import ctypes
import json
import numpy as np
import warpd as wp
from warpd import cuda_ipc

wp.init()
out = {}
a = wp.array(np.arange(100000, dtype=np.float32), device="cuda:0")
cai = a.__cuda_array_interface__
ptr = cai["data"][0]
out["cai"] = [list(cai["shape"]), cai["typestr"], cai["strides"], cai["version"], cai["stream"], cai["data"][1]]
seen = np.frombuffer(ctypes.string_at(ptr, a.capacity), dtype=np.float32)
out["same"] = bool((seen == np.arange(100000, dtype=np.float32)).all())
# Writes through the import reach the daemon's array.
ctypes.memmove(ptr + 4 * 10, np.full(5, -7.0, dtype=np.float32).ctypes.data, 20)
back = a.numpy()
out["written"] = back[8:17].tolist()
# The daemon's writes show through the import (after the interface's wait).
a.fill_(3.0)
a.__cuda_array_interface__
out["filled"] = float(np.frombuffer(ctypes.string_at(ptr, 8), dtype=np.float32)[1])
# A view: its own offset and strides, the same import.
v = a[10:20:2]
vc = v.__cuda_array_interface__
out["view"] = [vc["data"][0] - ptr, list(vc["shape"]), list(vc["strides"])]
m = wp.zeros((3, 4), dtype=wp.vec3, device="cuda:0")
mc = m.__cuda_array_interface__
out["vec3"] = [list(mc["shape"]), mc["typestr"], mc["strides"]]
# CPU arrays have no CUDA interface; struct arrays holding arrays are never shared.
out["cpu"] = hasattr(wp.zeros(4, dtype=float, device="cpu"), "__cuda_array_interface__")

@wp.struct
class Holder:
    x: wp.array(dtype=float)

h = wp.zeros(2, dtype=Holder, device="cuda:0")
try:
    h.__cuda_array_interface__
    out["descriptors"] = "shared"
except AttributeError as e:
    out["descriptors"] = str(e)
# DLPack: a kDLCUDA capsule of the same memory, holding the array while it lives.
import weakref
from warpd import cuda_ipc
out["dl_device"] = list(a.__dlpack_device__())
get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
def dl(capsule):
    t = cuda_ipc._DLManagedTensor.from_address(get_pointer(capsule, b"dltensor")).dl_tensor
    return [t.data, [t.device.device_type, t.device.device_id], [t.dtype.code, t.dtype.bits, t.dtype.lanes],
            t.shape[:t.ndim], t.strides[:t.ndim]]
out["dl_a"] = dl(a.__dlpack__())
out["dl_a"][0] -= ptr
g = wp.zeros((4, 6), dtype=wp.vec2h, device="cuda:0")[:, 1:5:2]
gp = g._root.__cuda_array_interface__["data"][0]
out["dl_view"] = dl(g.__dlpack__())
out["dl_view"][0] -= gp
t = wp.zeros(1000, dtype=wp.int16, device="cuda:0")
alive = weakref.ref(t)
cap = t.__dlpack__()
del t
import gc; gc.collect()
out["held_by_capsule"] = alive() is not None
del cap
gc.collect()
out["released_with_capsule"] = alive() is None
t = wp.zeros(1000, dtype=wp.int16, device="cuda:0")
alive = weakref.ref(t)
cap = t.__dlpack__()
set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))
managed = cuda_ipc._DLManagedTensor.from_address(get_pointer(cap, b"dltensor"))
set_name(cap, b"used_dltensor")  # as a consumer takes it: the capsule no longer owns the tensor
del cap, t
gc.collect()
out["held_by_consumer"] = alive() is not None
managed.deleter(ctypes.pointer(managed))  # the consumer is done
gc.collect()
out["released_by_deleter"] = alive() is None
# wp.from_dlpack of a CUDA tensor of this process (here a strided kDLCUDA view of a
# warpd array): read through this process's driver, onto the daemon's GPU of that UUID;
# the capsule is consumed (its deleter ran).
src = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda:0")
held_before = len(cuda_ipc._exported)
back = wp.from_dlpack(src[:, 1:3].__dlpack__())
out["from_dlpack"] = [str(back.device), list(back.shape), back.numpy().tolist(),
                      len(cuda_ipc._exported) - held_before]
bf = wp.array(np.array([1.5, -2.0, 0.25], dtype=np.float32), dtype=wp.bfloat16, device="cuda:0")
bf_back = wp.from_dlpack(bf.__dlpack__())
out["bf16"] = [bf_back.dtype is wp.bfloat16, np.asarray(bf_back.numpy()).tolist() == np.asarray(bf.numpy()).tolist()]
# A forged share request for another session's array is refused.
from warpd import local_map
from warpd.context import runtime
rt = runtime()
parts, fd = local_map.share_request(rt.share_path, rt.token, "not-a-session", a.handle)
out["forged"] = parts[:2]
# Freeing the array frees the import first: this process's driver (the
# stand-in, which counts its live handles) frees it.
live = ctypes.CDLL("libcuda.so.1").warpd_fake_cuda_live
live.argtypes, live.restype = [ctypes.c_char_p], ctypes.c_int
imp = a._cuda_import
held = live(b"device")
del v, a
import gc; gc.collect()
out["freed"] = [imp.freed, held - live(b"device")]
# A copy on the GPU cannot be made here; one in host memory can.
c = wp.full(8, 2.5, dtype=float, device="cuda:0")
try:
    c.__dlpack__(copy=True)
    out["copy_on_gpu"] = "made"
except BufferError:
    out["copy_on_gpu"] = "refused"
out["host_copy"] = np.from_dlpack(type("H", (), {"__dlpack__": lambda s, **k: c.__dlpack__(dl_device=(1, 0), **k),
                                                 "__dlpack_device__": lambda s: (1, 0)})()).tolist()
# Closing the session frees the imports that are left.
keep = c.__cuda_array_interface__ and c._cuda_import
runtime().close()
out["closed"] = [keep.freed, live(b"device"), live(b"pool")]
print("RESULT " + json.dumps(out), flush=True)
'''


def test_a_local_client_maps_its_gpu_arrays_through_cuda_ipc(tmp_path, fake_driver):
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "ipc.py", IPC_SCRIPT)
    assert out["cai"] == [[100000], "<f4", None, 3, None, False], out
    assert out["same"]
    assert out["written"] == [8.0, 9.0, -7.0, -7.0, -7.0, -7.0, -7.0, 15.0, 16.0]
    assert out["filled"] == 3.0
    assert out["view"] == [40, [5], [8]]
    assert out["vec3"] == [[3, 4, 3], "<f4", None]
    assert out["cpu"] is False
    assert "descriptors" in out["descriptors"] and "cannot be shared" in out["descriptors"], out["descriptors"]
    assert out["forged"] == ["error", "UNAUTHENTICATED"], out["forged"]
    assert out["freed"] == [True, 1]
    assert out["copy_on_gpu"] == "refused" and out["host_copy"] == [2.5] * 8
    assert out["closed"] == [True, 0, 0], out["closed"]
    assert out["dl_device"] == [2, 0]
    assert out["from_dlpack"] == ["cuda:0", [3, 2], [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]], 0], out["from_dlpack"]
    assert out["bf16"] == [True, True], out["bf16"]
    assert out["dl_a"] == [0, [2, 0], [2, 32, 1], [100000], [1]]
    # (4, 2) of vec2h: rows of 6 elements (12 halves), every other from the second.
    assert out["dl_view"] == [4, [2, 0], [2, 16, 1], [4, 2, 2], [12, 4, 1]], out["dl_view"]
    assert out["held_by_capsule"] and out["released_with_capsule"]
    assert out["held_by_consumer"] and out["released_by_deleter"]


def test_the_share_socket_exports_a_gpu_array_to_its_own_session_only(tmp_path, fake_driver):
    """Two sessions of one tenant: each gets its own array's pool, never the other's."""
    import os

    from warpd import auth, local_map
    from warpd.v1 import ir_pb2, runtime_pb2

    with own_daemon(tmp_path, sessions=["a", "b"], extra_args=["--cuda-execution"]) as (d, stub, (a, b)):
        def gpu_array(session):
            return stub.CreateArray(runtime_pb2.CreateArrayRequest(
                session=session, device="cuda:0", shape=[256], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32),
                init=runtime_pb2.ARRAY_INIT_ZEROS)).handle

        token = auth.token_for(d.address)
        share = local_map.share_path(d.address)
        of_a, of_b = gpu_array(a), gpu_array(b)
        answers = {}
        for name, session, handle in (("a's", a, of_a), ("b's", b, of_b), ("a's by b", b, of_a),
                                      ("b's by a", a, of_b)):
            parts, fd = local_map.share_request(share, token, session, handle)
            if fd >= 0:
                os.close(fd)
            answers[name] = (parts[0], parts[1] if parts[0] == "error" else parts[4], fd >= 0)
            if parts[0] == "ok":
                answers[name + " pool"] = parts[3]
    assert answers["a's"] == ("ok", "cuda", True) and answers["b's"] == ("ok", "cuda", True), answers
    assert answers["a's pool"] != answers["b's pool"]  # each session its own pool
    assert answers["a's by b"] == ("error", "NOT_FOUND", False), answers
    assert answers["b's by a"] == ("error", "NOT_FOUND", False), answers
