"""GPUs as the daemon lists them, without a GPU: a stand-in CUDA driver.

The daemon always loads libcuda.so.1 by that name; these tests put a directory
with the stand-in driver (runtime/device/cuda/testing/fake_libcuda.c, built
into build/tests/fake_cuda/) under that name first on LD_LIBRARY_PATH of their
own daemons, and choose its behaviour with WARPD_FAKE_CUDA_* variables. GPUs
are listed (name, arch, UUID, memory) but cannot run work yet: every request
for work on one fails with a clear FAILED_PRECONDITION, the CPU keeps serving,
and the client leaves them out of Warp's device queries.
"""

import os
import grpc
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
    for v in ("DEVICES", "VERSION", "INIT_ERROR", "RETAIN_ERROR", "MISSING"):
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
        assert "not implemented" in g0.unavailable and by_name["cpu"].unavailable == ""
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
                                                      r'is not implemented'):
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
    assert [d.name for d in wp.get_devices()] == ["cpu"]
    from warpd.errors import DeviceError

    with pytest.raises(DeviceError):
        wp.get_device("cuda:0")
