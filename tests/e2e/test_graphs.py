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


@wpd.kernel
def count_down(c: wpd.array(dtype=wpd.int32), o: wpd.array(dtype=wpd.int32)):
    wpd.atomic_sub(c, 0, 1)
    wpd.atomic_add(o, 0, 1)


@wpd.kernel
def set_to(o: wpd.array(dtype=wpd.int32), v: int):
    o[0] = v


def test_capture_while_reruns_its_body_until_the_condition_clears(wp):
    # Warp 1.19's test_graph_fill_drives_capture_while: a captured fill_ resets
    # the counter at the top of every replay, the daemon runs the loop.
    counter = wp.empty(1, dtype=wp.int32)
    out = wp.zeros(1, dtype=wp.int32)

    def body():
        wp.launch(count_down, dim=1, inputs=[counter, out])

    with wp.ScopedCapture() as capture:
        counter.fill_(3)
        wp.capture_while(counter, while_body=body)
    assert out.numpy().tolist() == [0]  # nothing ran at capture
    for _ in range(4):
        wp.capture_launch(capture.graph)
    assert out.numpy().tolist() == [12] and counter.numpy().tolist() == [0]
    # A condition already 0 runs the body no time; outside a capture the loop
    # runs in the client, reading the condition before each iteration.
    wp.capture_while(counter, body)
    assert out.numpy().tolist() == [12]
    counter.fill_(5)
    wp.capture_while(counter, while_body=body)
    assert out.numpy().tolist() == [17]


def test_capture_if_picks_a_branch_at_each_replay(wp):
    flag = wp.array([1], dtype=wp.int32)
    res = wp.zeros(1, dtype=wp.int32)
    with wp.ScopedCapture() as capture:
        wp.capture_if(flag, on_true=lambda v: wp.launch(set_to, 1, inputs=[res, v]),
                      on_false=lambda v: wp.launch(set_to, 1, inputs=[res, -v]), v=7)
    assert res.numpy().tolist() == [0]
    got = []
    for value in (1, 0, -4, 0):
        flag.fill_(value)
        wp.capture_launch(capture.graph)
        got.append(int(res.numpy()[0]))
    assert got == [7, -7, 7, -7]
    # Only one branch; a Graph as a branch; outside a capture.
    with wp.ScopedCapture() as only_true:
        wp.capture_if(flag, on_true=lambda: wp.launch(set_to, 1, inputs=[res, 1]))
    with wp.ScopedCapture() as set_two:
        wp.launch(set_to, 1, inputs=[res, 2])
    res.zero_()
    flag.fill_(0)
    wp.capture_launch(only_true.graph)
    assert res.numpy().tolist() == [0]
    wp.capture_if(flag, on_true=None, on_false=set_two.graph)
    assert res.numpy().tolist() == [2]
    flag.fill_(1)
    wp.capture_if(flag, on_true=lambda: wp.launch(set_to, 1, inputs=[res, 3]))
    assert res.numpy().tolist() == [3]


def test_conditionals_nest_inside_captured_loops(wp):
    # while counter: counter -= 1, out += 1; if counter is odd: odd += 1 (via a
    # flag a kernel computes), all in one graph the daemon runs.
    @wp.kernel
    def parity(c: wp.array(dtype=wp.int32), f: wp.array(dtype=wp.int32)):
        f[0] = c[0] % 2

    counter = wp.empty(1, dtype=wp.int32)
    out = wp.zeros(1, dtype=wp.int32)
    odd = wp.zeros(1, dtype=wp.int32)
    flag = wp.zeros(1, dtype=wp.int32)

    def body():
        wp.launch(count_down, dim=1, inputs=[counter, out])
        wp.launch(parity, dim=1, inputs=[counter, flag])
        wp.capture_if(flag, on_true=lambda: wp.launch(count_down, dim=1, inputs=[flag, odd]))

    with wp.ScopedCapture() as capture:
        counter.fill_(9)
        wp.capture_while(counter, while_body=body)
    wp.capture_launch(capture.graph)
    # counter after each step: 8..0; odd ones: 7, 5, 3, 1
    assert out.numpy().tolist() == [9] and odd.numpy().tolist() == [4]


def test_conditional_misuse_and_hostile_requests(wp, raw):
    stub, session = raw
    f = wp.zeros(1, dtype=wp.float32)
    with pytest.raises(TypeError, match="int32"):
        wp.capture_while(f, lambda: None)
    with pytest.raises(TypeError, match="int32"):
        wp.capture_if(wp.zeros(1, dtype=wp.int64), on_true=lambda: None)
    counter = wp.zeros(1, dtype=wp.int32)
    with wp.ScopedCapture():
        with pytest.raises(ValueError, match="recorded no work"):
            wp.capture_while(counter, lambda: None)
    res = wp.zeros(1, dtype=wp.int32)
    with wp.ScopedCapture() as g:
        wp.launch(set_to, 1, inputs=[res, 5])
    wp.synchronize()

    def submit(**fields):
        cmd = runtime_pb2.Command()
        for k, v in fields.items():
            setattr(cmd.conditional, k, v)
        stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd], synchronize=True),
                    timeout=30)

    cases = [
        (dict(condition=f.handle, then_graph=g.graph.handle), grpc.StatusCode.INVALID_ARGUMENT, "int32"),
        (dict(condition=wp.zeros(0, dtype=wp.int32).handle, then_graph=g.graph.handle),
         grpc.StatusCode.INVALID_ARGUMENT, "at least one element"),
        (dict(condition=counter.handle, then_graph=12345), grpc.StatusCode.NOT_FOUND, "graph"),
        (dict(condition=counter.handle, loop=True), grpc.StatusCode.INVALID_ARGUMENT, "body"),
        (dict(condition=2**64 - 1, then_graph=g.graph.handle), grpc.StatusCode.NOT_FOUND, ""),
    ]
    for fields, code, text in cases:
        with pytest.raises(grpc.RpcError) as e:
            submit(**fields)
        assert e.value.code() == code, (fields, e.value.details())
        assert text in e.value.details()
    # Graphs nest at most 8 deep: a capture_if inside a capture_if ... refused
    # at the ninth level, with the daemon serving on.
    flag = wp.array([1], dtype=wp.int32)

    def nest(depth):
        if depth == 0:
            wp.launch(set_to, 1, inputs=[res, 9])
        else:
            wp.capture_if(flag, on_true=lambda: nest(depth - 1))

    with wp.ScopedCapture() as ok:
        nest(7)  # eight graphs: seven conditionals' bodies and the capture itself
    wp.capture_launch(ok.graph)
    assert res.numpy().tolist() == [9]
    with pytest.raises(wp.WarpdError, match="nest at most 8"):
        with wp.ScopedCapture():
            nest(8)
    counter.fill_(1)
    wp.synchronize()  # the fill goes first
    submit(condition=counter.handle, then_graph=g.graph.handle)  # a raw capture_if runs
    assert res.numpy().tolist() == [5]
