"""A session's streams and the waits between them (issue 26): the daemon's
SubmitRequest.stream and WaitStream command, and Warp's wp.Stream / wp.Event /
wp.ScopedStream API on a GPU of the stand-in driver (which moves bytes for
copies and fills, so their order is observable; it runs no kernel code)."""

import grpc
import numpy as np
import pytest

import warpd as wp
from conftest import own_daemon
from test_cuda_devices import fake_driver, run_client_script  # noqa: F401 - fake_driver: the fixture
from test_gpu import slow_set as slow_fill  # a slow kernel


def test_streams_and_events_are_cuda_only_as_in_warp(wp):
    with pytest.raises(RuntimeError, match="is not a CUDA device"):
        wp.Stream("cpu")
    with pytest.raises(RuntimeError, match="is not a CUDA device"):
        wp.Event("cpu")
    with pytest.raises(RuntimeError, match="is not a CUDA device"):
        wp.get_stream("cpu")


def test_a_wait_orders_one_stream_after_another(wp, raw):
    """On the CPU device through the protocol (the Python API keeps streams to
    GPUs, as Warp): stream 1 runs a slow kernel writing 1s; stream 2 waits for it,
    then copies the array: it copies the 1s."""
    from warpd.v1 import runtime_pb2

    stub, session = raw
    n = 4096
    src = wp.zeros(n, dtype=float, device="cpu")
    dst = wp.zeros(n, dtype=float, device="cpu")
    # The launch as the client packs it, sent by hand on stream 1.
    built = wp.launch(slow_fill, dim=n, inputs=[src, 5000, 1.0], device="cpu", record_cmd=True)
    launch_cmd = runtime_pb2.Command.FromString(built_entry(built))
    first = stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=1, commands=[launch_cmd]))
    assert first.sequence == 1
    wait = runtime_pb2.Command()
    wait.wait.device, wait.wait.stream, wait.wait.sequence = "cpu", 1, first.sequence
    copy = runtime_pb2.Command()
    copy.copy.dst, copy.copy.src = dst.handle, src.handle
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=2, commands=[wait, copy]))
    stub.Synchronize(runtime_pb2.SynchronizeRequest(session=session, device="cpu", one_stream=True, stream=2))
    np.testing.assert_array_equal(dst.numpy(), np.ones(n, dtype=np.float32))
    stub.Synchronize(runtime_pb2.SynchronizeRequest(session=session, device="cpu"))


def built_entry(launch_obj) -> bytes:
    """The serialized Command of a recorded wp.Launch (its commands entry is
    field 3 of SubmitRequest: tag, length, then the Command's bytes)."""
    import importlib

    launch_mod = importlib.import_module("warpd.launch")  # the module (warpd.launch is the function)
    entry = launch_mod._launch_entry(launch_obj._plan, launch_obj._dims, launch_obj._packed)
    # Strip the field tag (0x1a) and the varint length.
    assert entry[0] == 0x1A
    i, shift, length = 1, 0, 0
    while True:
        b = entry[i]
        length |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            break
        shift += 7
    assert len(entry) - i == length
    return entry[i:]


def test_waits_that_could_deadlock_or_name_nothing_are_refused(wp, raw):
    from warpd.v1 import runtime_pb2

    stub, session = raw
    a = wp.zeros(4, dtype=float, device="cpu")
    fill = runtime_pb2.Command()
    fill.fill.array, fill.fill.value = a.handle, np.float32(2.0).tobytes()
    done = stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=3, commands=[fill]))

    def refused(stream, device, target_stream, sequence, what):
        wait = runtime_pb2.Command()
        wait.wait.device, wait.wait.stream, wait.wait.sequence = device, target_stream, sequence
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=stream, commands=[wait]))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
        assert what in e.value.details(), e.value.details()

    refused(4, "cpu", 3, done.sequence + 1, "would wait for work not yet submitted")
    refused(3, "cpu", 3, done.sequence, "cannot wait for itself")
    refused(4, "cpu", 9, 1, "the session has submitted nothing to stream 9 on 'cpu'")
    with pytest.raises(grpc.RpcError) as e:
        stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=64, commands=[fill]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "streams 0 to 63 per device" in e.value.details()
    stub.Synchronize(runtime_pb2.SynchronizeRequest(session=session, device="cpu"))
    np.testing.assert_array_equal(a.numpy(), [2.0] * 4)


STREAMS_SCRIPT = r'''
import json
import numpy as np
import warpd as wp

wp.init()
out = {}
n = 1 << 16
s = wp.Stream("cuda:0")
out["repr_device"] = str(s.device)
out["default_is_not_s"] = wp.get_stream("cuda:0") != s
a = wp.zeros(n, dtype=float, device="cuda:0")
b = wp.zeros(n, dtype=float, device="cuda:0")
with wp.ScopedStream(s):
    out["current_in_scope"] = wp.get_stream() == s
    a.fill_(3.0)                      # on s
    e = wp.record_event()             # on s
out["current_after_scope"] = wp.get_stream() != s
wp.wait_event(e)                      # the default stream waits for s's fill
wp.copy(b, a)                         # on the default stream
out["b_after_event"] = float(b.numpy().min())
# Without an explicit wait: a transfer (numpy) waits for the device's other streams.
with wp.ScopedStream(s, sync_enter=False):
    a.fill_(5.0)
out["a_after_side_fill"] = float(a.numpy().min())
# wait_stream, copies with stream=, set_stream
s2 = wp.Stream("cuda:0")
c = wp.zeros(n, dtype=float, device="cuda:0")
a.fill_(7.0)                          # default stream
s2.wait_stream(wp.get_stream())       # s2 waits for the default stream's fill
wp.copy(c, a, stream=s2)
wp.synchronize_stream(s2)
out["c_after_wait_stream"] = float(c.numpy().max())
wp.set_stream(s2)
out["set_stream"] = wp.get_stream() == s2
d = wp.zeros(4, dtype=float, device="cuda:0")
d.fill_(9.0)                           # on s2
wp.set_stream(s)
wp.synchronize_device("cuda:0")        # every stream of the device
out["d"] = d.numpy().tolist()
ev = s2.record_event()
ev.synchronize()
out["event_complete"] = ev.is_complete
errors = {}
for name, fn in {"interprocess": lambda: wp.Event("cuda:0", interprocess=True),
                 "elapsed": lambda: wp.get_event_elapsed_time(ev, ev),
                 "cuda_stream": lambda: s.cuda_stream}.items():
    try:
        fn()
        errors[name] = "no error"
    except (NotImplementedError, RuntimeError) as err:
        errors[name] = str(err)
out["errors"] = errors
# Streams dropped by the program give their ids back (at most 63 live at once).
import gc
for i in range(100):
    tmp = wp.Stream("cuda:0")
    with wp.ScopedStream(tmp):      # tmp waits for the current stream...
        a.fill_(float(i))
    wp.wait_stream(tmp)               # ...which waits for tmp: the fills run in order
    del tmp
    gc.collect()
out["after_100_streams"] = float(a.numpy()[0])
# A launch on a stream is accepted there (the stand-in runs no kernel code).
@wp.kernel
def twice(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0
wp.launch(twice, dim=4, inputs=[d], stream=s)
s.synchronize()
out["launch_on_stream"] = True
print("RESULT " + json.dumps(out), flush=True)
'''


def test_warp_streams_and_events_on_a_gpu(tmp_path, fake_driver):  # noqa: F811
    with own_daemon(tmp_path, sessions=[], extra_args=["--cuda-execution"]) as (d, _stub, _):
        out = run_client_script(d, tmp_path / "streams.py", STREAMS_SCRIPT)
    assert out["repr_device"] == "cuda:0"
    assert out["default_is_not_s"] and out["current_in_scope"] and out["current_after_scope"]
    assert out["b_after_event"] == 3.0
    assert out["a_after_side_fill"] == 5.0
    assert out["c_after_wait_stream"] == 7.0
    assert out["set_stream"]
    assert out["d"] == [9.0] * 4
    assert out["event_complete"]
    assert "live in the daemon" in out["errors"]["interprocess"]
    assert "made without enable_timing=True" in out["errors"]["elapsed"]  # timed: test_cuda_devices
    assert "live in the daemon" in out["errors"]["cuda_stream"]
    assert out["after_100_streams"] == 99.0
    assert out["launch_on_stream"]


def test_time_stamps_through_the_protocol(wp, raw):
    """RecordTime on the CPU device's streams: the stamps come back with their
    tags after a slow kernel between them, ordered; bad slots, too many reads and
    stamps in graphs are refused."""
    from warpd.v1 import runtime_pb2

    stub, session = raw

    def stamp(slot, tag):
        c = runtime_pb2.Command()
        c.record_time.slot, c.record_time.tag = slot, tag
        return c

    n = 4096
    a = wp.zeros(n, dtype=float, device="cpu")
    built = wp.launch(slow_fill, dim=n, inputs=[a, 5000, 1.0], device="cpu", record_cmd=True)
    launch_cmd = runtime_pb2.Command.FromString(built_entry(built))
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", stream=1,
                                          commands=[stamp(0, 11), launch_cmd, stamp(4095, 12)]))
    resp = stub.Synchronize(runtime_pb2.SynchronizeRequest(session=session, device="cpu", one_stream=True, stream=1,
                                                           read_times=[0, 4095, 7]))
    assert list(resp.time_tags) == [11, 12, 0]
    start, end, never = resp.times_ns
    assert 0 < start < end and never == 0
    assert np.all(a.numpy() == 1.0)
    for bad in ([stamp(4096, 1)],):
        with pytest.raises(grpc.RpcError) as e:
            stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=bad))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "slot 4096 is not below 4096" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        stub.CreateGraph(runtime_pb2.CreateGraphRequest(session=session, device="cpu", commands=[stamp(1, 1)]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for reads, what in (([0] * 65, "at most 64 slots"), ([5000], "slot 5000 is not below 4096")):
        with pytest.raises(grpc.RpcError) as e:
            stub.Synchronize(runtime_pb2.SynchronizeRequest(session=session, device="cpu", read_times=reads))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and what in e.value.details()
