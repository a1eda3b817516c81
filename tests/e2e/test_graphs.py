"""Graph capture on the CPU device (seed 001: wp.capture_begin/capture_end/
capture_launch, wp.ScopedCapture): captured work does not run, a replay runs
all of it in order, once per replay, as one command of the stream."""

import gc

import grpc
import numpy as np
import pytest

import warpd as wpd
from warpd.v1 import runtime_pb2


@wpd.kernel
def axpy(x: wpd.array(dtype=float), y: wpd.array(dtype=float), a: float):
    i = wpd.tid()
    y[i] = a * x[i] + y[i]


@wpd.kernel
def double_it(y: wpd.array(dtype=float)):
    i = wpd.tid()
    y[i] = y[i] * 2.0


@wpd.kernel
def read_at(y: wpd.array(dtype=float), k: int):
    i = wpd.tid()
    y[i] = y[i + k]


def test_captured_launches_run_only_when_replayed(wp):
    n = 1000
    x = wp.array(np.arange(n, dtype=np.float32), dtype=wp.float32)
    y = wp.zeros(n, dtype=wp.float32)
    wp.synchronize()
    wp.capture_begin()
    wp.launch(axpy, dim=n, inputs=[x, y, 1.0])
    wp.launch(double_it, dim=n, inputs=[y])
    graph = wp.capture_end()
    assert graph.commands == 2
    assert np.all(y.numpy() == 0)  # capturing ran nothing
    expected = np.zeros(n, dtype=np.float32)
    xs = np.arange(n, dtype=np.float32)
    for replays in (1, 3):
        for _ in range(replays):
            wp.capture_launch(graph)
            expected = (xs + expected) * 2  # order: axpy, then double
        np.testing.assert_array_equal(y.numpy(), expected)


def test_replays_see_data_changed_between_them(wp):
    n = 64
    x = wp.zeros(n, dtype=wp.float32)
    y = wp.zeros(n, dtype=wp.float32)
    with wp.ScopedCapture() as capture:
        wp.launch(axpy, dim=n, inputs=[x, y, 2.0])
    graph = capture.graph
    x.fill_(1.0)
    wp.capture_launch(graph)
    x.assign(np.full(n, 5.0, dtype=np.float32))
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), np.full(n, 2.0 + 10.0, dtype=np.float32))


def test_fills_and_copies_are_captured_too(wp):
    n = 32
    a = wp.zeros(n, dtype=wp.float32)
    b = wp.zeros(n, dtype=wp.float32)
    wp.capture_begin()
    a.fill_(3.0)
    wp.copy(b, a)
    wp.launch(double_it, dim=n, inputs=[b])
    graph = wp.capture_end()
    assert np.all(a.numpy() == 0) and np.all(b.numpy() == 0)
    wp.capture_launch(graph)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(a.numpy(), np.full(n, 3.0, dtype=np.float32))
    np.testing.assert_array_equal(b.numpy(), np.full(n, 6.0, dtype=np.float32))


def test_strided_fills_and_copies_are_captured_and_indexed_writes_refused(wp):
    # Views that are not contiguous are stream commands too: recorded, run on replay
    # (Warp 1.19's CPU capture refuses them with NotImplementedError; warpd records them).
    arr = wp.zeros((4, 4), dtype=wp.int32)
    src = wp.array(np.arange(16, dtype=np.int32).reshape(4, 4))
    dst = wp.zeros((4, 4), dtype=wp.int32)
    data = wp.zeros(8, dtype=wp.int32)
    picked = wp.indexedarray(data, [wp.array([0, 2, 4, 6], dtype=wp.int32)])
    with wp.ScopedCapture() as cap:
        arr[:, 1].fill_(42)
        wp.copy(dst[:, 0], src[:, 2])
        # An indexedarray write is done by the client, not by a command: refused, not run.
        with pytest.raises(NotImplementedError, match="cannot be captured in a graph"):
            picked.fill_(5)
    assert not arr.numpy().any() and not dst.numpy().any() and not data.numpy().any()
    wp.capture_launch(cap.graph)
    expect = np.zeros((4, 4), dtype=np.int32)
    expect[:, 1] = 42
    np.testing.assert_array_equal(arr.numpy(), expect)
    expect = np.zeros((4, 4), dtype=np.int32)
    expect[:, 0] = np.arange(16).reshape(4, 4)[:, 2]
    np.testing.assert_array_equal(dst.numpy(), expect)
    picked.fill_(5)  # outside a capture it runs
    np.testing.assert_array_equal(data.numpy(), [5, 0, 5, 0, 5, 0, 5, 0])


def test_a_graph_keeps_its_arrays(wp):
    n = 16
    y = wp.zeros(n, dtype=wp.float32)

    def capture():
        x = wp.array(np.ones(n, dtype=np.float32), dtype=wp.float32)  # dropped inside the capture
        wp.capture_begin()
        wp.launch(axpy, dim=n, inputs=[x, y, 4.0])
        del x
        gc.collect()
        wp.synchronize()  # the free of x (if any) reaches the daemon now
        return wp.capture_end()

    graph = capture()
    gc.collect()
    wp.synchronize()
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), np.full(n, 4.0, dtype=np.float32))


def test_a_fault_in_a_replay_is_reported_and_the_graph_runs_again(wp):
    n = 8
    y = wp.zeros(n, dtype=wp.float32)
    wp.capture_begin()
    wp.launch(read_at, dim=n, inputs=[y, 1])  # thread 7 reads y[8]
    graph = wp.capture_end()
    for _ in range(2):
        wp.capture_launch(graph)
        with pytest.raises(wp.KernelError, match="out of bounds"):
            wp.synchronize()
    wp.capture_begin()
    wp.launch(double_it, dim=n, inputs=[y])
    ok = wp.capture_end()
    y.fill_(1.0)
    wp.capture_launch(ok)
    np.testing.assert_array_equal(y.numpy(), np.full(n, 2.0, dtype=np.float32))


def test_capture_misuse_is_an_error(wp):
    with pytest.raises(RuntimeError, match="no graph capture is active"):
        wp.capture_end()
    wp.capture_begin()
    with pytest.raises(RuntimeError, match="already active"):
        wp.capture_begin()
    empty = wp.capture_end()
    assert empty.commands == 0
    wp.capture_launch(empty)  # does nothing
    with pytest.raises(TypeError):
        wp.capture_launch("graph")


def test_freed_graphs_and_hostile_requests(wp, raw):
    stub, session = raw
    n = 4
    y = wp.zeros(n, dtype=wp.float32)
    wp.capture_begin()
    wp.launch(double_it, dim=n, inputs=[y])
    graph = wp.capture_end()
    handle = graph.handle
    del graph
    gc.collect()
    wp.synchronize()  # sends the free

    def replay(h):
        cmd = runtime_pb2.Command()
        cmd.replay.graph = h
        stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd]), timeout=30)

    for h in (handle, 0, 2**64 - 1):
        with pytest.raises(grpc.RpcError) as e:
            replay(h)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
    # Frees, replays and empty commands cannot be captured.
    free = runtime_pb2.Command()
    free.free.array = y.handle
    for bad in ([free], [runtime_pb2.Command()], []):
        with pytest.raises(grpc.RpcError) as e:
            stub.CreateGraph(runtime_pb2.CreateGraphRequest(session=session, device="cpu", commands=bad),
                             timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert y.numpy().tolist() == [0.0] * n  # nothing ran, nothing was freed


def test_a_graph_is_freed_with_its_session(wp, raw, warpd_daemon):
    from conftest import open_channel
    from warpd.v1 import runtime_pb2_grpc

    channel = open_channel(warpd_daemon.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="graph")).session
    a = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=s, device="cpu", dtype=wpd.types.to_typeref(
        wpd.float32), shape=[1 << 20])).handle
    fill = runtime_pb2.Command()
    fill.fill.array = a
    fill.fill.value = np.float32(1.5).tobytes()
    g = stub.CreateGraph(runtime_pb2.CreateGraphRequest(session=s, device="cpu", commands=[fill])).graph
    # The graph holds the array: freeing the handle keeps the memory.
    stub.FreeArray(runtime_pb2.FreeArrayRequest(session=s, handle=a))
    usage = {q.resource: q.used for q in stub.GetUsage(runtime_pb2.GetUsageRequest(session=s)).quotas}
    replay = runtime_pb2.Command()
    replay.replay.graph = g
    stub.Submit(runtime_pb2.SubmitRequest(session=s, device="cpu", commands=[replay], synchronize=True))
    stub.CloseSession(runtime_pb2.CloseSessionRequest(session=s))
    s2 = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="graph")).session
    after = {q.resource: q.used for q in stub.GetUsage(runtime_pb2.GetUsageRequest(session=s2)).quotas}
    assert after["memory_bytes"] <= usage["memory_bytes"] - (4 << 20), (usage, after)
    stub.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))
    channel.close()
