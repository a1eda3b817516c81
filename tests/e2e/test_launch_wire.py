"""The launch hot path (issue 10 item 3): launches queued as hand-encoded
protobuf bytes (warpd/wire.py), arguments encoded by per-parameter fast
paths. The bytes must be what the protobuf classes write, the fast paths
must accept, reject and pack exactly like the checked path, and results must
match numpy."""

import importlib
import math
import types

import numpy as np
import pytest

import warpd as wpd
from warpd import types as wt
from warpd import wire
from warpd.v1 import runtime_pb2

launch_mod = importlib.import_module("warpd.launch")  # warpd.launch is also the function

# ------------------------------------------------------------ wire bytes (no daemon)

HANDLES = [0, 1, 127, 128, 300, 2**31, 2**63 + 5, 2**64 - 1]


@pytest.mark.parametrize("module", [0, 1, 2**40 + 3, 2**64 - 1])
@pytest.mark.parametrize("dims", [(), (1,), (0,), (127, 128), (2**31, 3, 1, 70000)])
def test_launch_bytes_are_what_protobuf_writes(module, dims):
    args = [b"", b"\x01\x02\x03\x04", bytes(126), bytes(127), bytes(128), bytes(1000)]
    for name in ["", "k", "kernel_" + "x" * 200]:
        cmd = runtime_pb2.Command()
        la = cmd.launch
        la.module = module
        la.kernel = name
        la.dim.extend(dims)
        entries = []
        for a in args:
            la.args.add().bytes = a
            entries.append(wire.arg_bytes(a))
        for h in HANDLES:
            la.args.add().array = h
            entries.append(wire.arg_array(h))
        body = wire.launch_header(module, name) + wire.launch_dims(dims) + b"".join(entries)
        got = wire.launch_command(body)
        assert got == runtime_pb2.SubmitRequest(commands=[cmd]).SerializeToString()
        assert got == wire.command(cmd.SerializeToString())


@pytest.mark.parametrize("block_dim,max_blocks", [(0, 0), (32, 0), (0, 3), (1024, 2**31 - 1)])
def test_launch_shape_bytes_are_what_protobuf_writes(block_dim, max_blocks):
    cmd = runtime_pb2.Command()
    cmd.launch.module = 7
    cmd.launch.kernel = "k"
    cmd.launch.dim.extend([100])
    cmd.launch.block_dim = block_dim
    cmd.launch.max_blocks = max_blocks
    body = wire.launch_header(7, "k") + wire.launch_dims([100]) + wire.launch_shape(block_dim, max_blocks)
    parsed = runtime_pb2.SubmitRequest.FromString(wire.launch_command(body)).commands[0]
    assert parsed == cmd and (parsed.launch.block_dim, parsed.launch.max_blocks) == (block_dim, max_blocks)


def test_a_request_of_concatenated_entries_parses_like_the_message():
    cmds = []
    for i in range(5):
        c = runtime_pb2.Command()
        if i % 2:
            c.free.array = 2**63 + i
        else:
            c.launch.module = 7
            c.launch.kernel = f"k{i}"
            c.launch.dim.append(i + 1)
            c.launch.args.add().bytes = b"\x00" * i
        cmds.append(c)
    head = runtime_pb2.SubmitRequest(session="s" * 200, device="cpu").SerializeToString()
    data = head + b"".join(wire.command(c.SerializeToString()) for c in cmds) + wire.SUBMIT_SYNCHRONIZE
    want = runtime_pb2.SubmitRequest(session="s" * 200, device="cpu", commands=cmds, synchronize=True)
    assert runtime_pb2.SubmitRequest.FromString(data) == want
    graph = runtime_pb2.CreateGraphRequest()
    for c in cmds:
        graph.MergeFromString(wire.command(c.SerializeToString()))
    assert list(graph.commands) == cmds


def test_varint():
    for n in [0, 1, 127, 128, 255, 16383, 16384, 2**32, 2**63, 2**64 - 1]:
        m = runtime_pb2.FreeArray(array=n)
        assert b"\x08" + wire.varint(n) == (m.SerializeToString() if n else b"\x08\x00")


# ------------------------------------ the fast encoders against the checked path

SCALARS = [wt.float32, wt.float64, wt.float16, wt.int8, wt.uint8, wt.int16, wt.uint16, wt.int32,
           wt.uint32, wt.int64, wt.uint64, wt.bool]
VALUES = [0, 1, -1, 7, 127, 128, 255, 256, -129, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32,
          2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, 10**400, 0.0, -0.0, 1.5, -2.25,
          1e-45, 3.4028235e38, 3.5e38, 1e300, -1e300, math.inf, -math.inf, math.nan, 65504.0,
          65520.0, True, False, np.float32(1.5), np.int32(3), np.int64(-5), np.uint8(200),
          np.float64(2.5), np.bool_(True), "1", None, [1.0], 1 + 2j]


def _param(t):
    info = types.SimpleNamespace(name="p", type=wt.to_typeref(t), size=wt.type_size_in_bytes(t))
    return launch_mod._Param("k", 0, info)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return type(e), str(e)


@pytest.mark.parametrize("t", SCALARS, ids=lambda t: t.__name__)
def test_fast_scalar_encoding_matches_the_checked_path(t):
    p = _param(t)
    for v in VALUES:
        with np.errstate(over="ignore"):
            fast = _outcome(lambda: p.encode(v, None))
            slow = _outcome(lambda: wire.arg_bytes(p.pack(v, None)[1]))
        assert fast == slow, (t, v)


@wpd.kernel
def add_f(a: wpd.array(dtype=float), v: float):
    i = wpd.tid()
    a[i] = a[i] + v


@wpd.kernel
def add_i(a: wpd.array(dtype=wpd.int32), v: wpd.int32):
    i = wpd.tid()
    a[i] = a[i] + v


@wpd.kernel
def add_2d(a: wpd.array2d(dtype=float), v: float):
    i, j = wpd.tid()
    a[i, j] = a[i, j] + v


@wpd.kernel
def axpy_vec(a: wpd.array(dtype=wpd.vec3), v: wpd.vec3, s: float):
    i = wpd.tid()
    a[i] = a[i] + v * s


def test_one_kernel_takes_floats_and_ints_and_keeps_refusing_what_it_refused(wp):
    a = wp.zeros(4, dtype=float)
    wp.launch(add_f, dim=4, inputs=[a, 1.5])
    wp.launch(add_f, dim=4, inputs=[a, 2])  # a float parameter takes an int
    wp.launch(add_f, dim=4, inputs=[a, np.float32(0.25)])
    wp.launch(add_f, dim=4, inputs=[a, wp.float32(0.125)])
    np.testing.assert_array_equal(a.numpy(), np.full(4, 3.875, dtype=np.float32))
    with pytest.raises(TypeError, match="argument 'v' of kernel 'add_f' expects float32"):
        wp.launch(add_f, dim=4, inputs=[a, "1"])
    b = wp.zeros(4, dtype=wp.int32)
    wp.launch(add_i, dim=4, inputs=[b, 3])
    with pytest.raises(TypeError, match="does not convert"):
        wp.launch(add_i, dim=4, inputs=[b, 1.0])
    with pytest.raises(ValueError, match="out of range"):
        wp.launch(add_i, dim=4, inputs=[b, 2**31])
    wp.launch(add_i, dim=4, inputs=[b, -(2**31) + 5])
    np.testing.assert_array_equal(b.numpy(), np.full(4, -(2**31) + 8, dtype=np.int32))


def test_arrays_of_another_dtype_or_ndim_are_refused_after_fast_launches(wp):
    a = wp.zeros(4, dtype=float)
    for _ in range(3):
        wp.launch(add_f, dim=4, inputs=[a, 1.0])
    with pytest.raises(TypeError, match="expects array.*got an array of dtype=int32"):
        wp.launch(add_f, dim=4, inputs=[wp.zeros(4, dtype=wp.int32), 1.0])
    with pytest.raises(TypeError, match="expects a 1-D array"):
        wp.launch(add_f, dim=4, inputs=[wp.zeros((2, 2), dtype=float), 1.0])
    with pytest.raises(TypeError, match="got float"):
        wp.launch(add_f, dim=4, inputs=[1.0, 1.0])
    freed = wp.zeros(4, dtype=float)
    freed.handle = None  # what a freed array looks like to a launch
    with pytest.raises(TypeError, match="argument 'a' of kernel 'add_f'"):
        wp.launch(add_f, dim=4, inputs=[freed, 1.0])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        wp.launch(add_f, dim=4, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), np.full(4, 3.0, dtype=np.float32))


def test_many_arrays_and_dims_against_numpy(wp):
    rng = np.random.default_rng(5)
    datas = [rng.random(8, dtype=np.float32) for _ in range(5)]
    arrays = [wp.array(d, dtype=float) for d in datas]
    want = [d.copy() for d in datas]
    for step in range(2500):  # crosses the batch limit, arrays alternate
        k = step % len(arrays)
        n = [8, (8,), 3, (5,)][step % 4]
        v = float(step % 7) * 0.5
        wp.launch(add_f, dim=n, inputs=[arrays[k], v])
        want[k][:n if isinstance(n, int) else n[0]] += np.float32(v)
    for arr, w in zip(arrays, want):
        np.testing.assert_allclose(arr.numpy(), w, rtol=1e-5)
    m = wp.zeros((3, 4), dtype=float)
    wp.launch(add_2d, dim=(3, 4), inputs=[m, 1.0])
    wp.launch(add_2d, dim=[3, 2], inputs=[m, 2.0])
    with pytest.raises(TypeError, match="dim must be an int"):
        wp.launch(add_f, dim=1.0, inputs=[arrays[0], 1.0])
    with pytest.raises(ValueError, match="unpacks wp.tid\\(\\) into 2 indices"):
        wp.launch(add_2d, dim=12, inputs=[m, 1.0])
    want_m = np.ones((3, 4), dtype=np.float32)
    want_m[:, :2] += 2
    np.testing.assert_array_equal(m.numpy(), want_m)


def test_vectors_go_through_the_checked_path(wp):
    a = wp.zeros(3, dtype=wp.vec3)
    wp.launch(axpy_vec, dim=3, inputs=[a, wp.vec3(1.0, 2.0, 3.0), 2.0])
    wp.launch(axpy_vec, dim=3, inputs=[a, (1.0, 0.0, 0.0), 1])
    with pytest.raises(TypeError):
        wp.launch(axpy_vec, dim=3, inputs=[a, wp.vec3d(1.0, 2.0, 3.0), 1.0])
    np.testing.assert_array_equal(a.numpy(), np.tile(np.float32([3, 4, 6]), (3, 1)))


def test_set_param_changes_only_later_launches(wp):
    a = wp.zeros(2, dtype=float)
    cmd = wp.launch(add_f, dim=2, inputs=[a, 1.0], record_cmd=True)
    for _ in range(3):
        cmd.launch()
    cmd.set_param_at_index(1, 10.0)  # the three queued launches keep 1.0
    for _ in range(2):
        cmd.launch()
    np.testing.assert_array_equal(a.numpy(), [23.0, 23.0])
    b = wp.zeros(2, dtype=float)
    cmd.set_param_by_name("a", b)
    cmd.launch()
    cmd.set_dim(1)
    cmd.launch()
    cmd.set_param_at_index(1, 2)  # an int for a float parameter, as in wp.launch
    cmd.launch()
    with pytest.raises(TypeError, match="got an array of dtype=int32"):
        cmd.set_param_at_index(0, wp.zeros(2, dtype=wp.int32))
    cmd.launch()
    np.testing.assert_array_equal(b.numpy(), [24.0, 10.0])
    np.testing.assert_array_equal(a.numpy(), [23.0, 23.0])


def test_a_recorded_launch_keeps_its_block_dim_and_max_blocks(wp):
    """wp.launch(..., block_dim=, max_blocks=, record_cmd=True) and wp.Launch carry the grid
    shape in each launch they queue (Launch.block_dim, max_blocks); setting either
    changes the later launches. The CPU ignores the shape, as Warp's does."""
    a = wp.zeros(4, dtype=float)
    cmd = wp.launch(add_f, dim=4, inputs=[a, 1.0], block_dim=64, max_blocks=3, record_cmd=True)
    assert (cmd.block_dim, cmd.max_blocks) == (64, 3)

    def shape_of(entry):
        req = runtime_pb2.SubmitRequest()
        req.ParseFromString(entry)
        return req.commands[0].launch.block_dim, req.commands[0].launch.max_blocks

    cmd.launch()
    assert shape_of(cmd._entry) == (64, 3)
    cmd.block_dim = 128
    cmd.launch()
    assert shape_of(cmd._entry) == (128, 3)
    made = launch_mod.Launch(add_f, block_dim=32)
    made.set_params([a, 2.0])
    made.set_dim(4)
    made.launch()
    assert shape_of(made._entry) == (32, 0)
    plain = wp.launch(add_f, dim=4, inputs=[a, 0.5], record_cmd=True)
    plain.launch()
    assert shape_of(plain._entry) == (0, 0)  # the default: left out
    np.testing.assert_array_equal(a.numpy(), [4.5] * 4)


def test_recorded_launches_cross_batches_in_order(wp):
    a = wp.zeros(1, dtype=float)
    inc = wp.launch(add_f, dim=1, inputs=[a, 1.0], record_cmd=True)
    dbl = wp.launch(add_f, dim=1, inputs=[a, 0.0], record_cmd=True)
    want = 0.0
    for i in range(3001):
        if i % 1000 == 999:
            dbl.set_param_at_index(1, want)  # a[0] += a[0] as it will be then: doubles it
            dbl.launch()
            want *= 2
        else:
            inc.launch()
            want += 1
    assert a.numpy()[0] == want


def test_full_batches_are_sent_without_waiting_and_in_order(wp, monkeypatch):
    from warpd import context

    monkeypatch.setattr(wp.config, "max_batch_commands", 7)
    stream = context.runtime().stream("cpu")
    a = wp.zeros(1, dtype=float)
    wp.synchronize()
    before = stream.submits
    cmd = wp.launch(add_f, dim=1, inputs=[a, 0.0], record_cmd=True)
    want = 0.0
    for i in range(100):  # each launch's value depends on the order of all before it
        if i % 3:
            # Distinct values: identical launches in a row would go as one repeated command.
            wp.launch(add_f, dim=1, inputs=[a, float(i)])
            want += i
        else:
            cmd.set_param_at_index(1, want)  # doubles a[0] if run in order
            cmd.launch()
            want *= 2
    assert stream.submits == before + 14  # 14 full batches of 7; 2 launches still queued
    assert a.numpy()[0] == want


def test_a_failed_submit_in_flight_is_raised_at_the_next_sync_point(wp, monkeypatch):
    from warpd import context

    monkeypatch.setattr(wp.config, "max_batch_commands", 4)
    a = wp.zeros(1, dtype=float)
    ghost = wp.zeros(1, dtype=float)
    wp.synchronize()
    real, ghost.handle = ghost.handle, 12345  # not an array of this session: the batch is refused
    wp.launch(add_f, dim=1, inputs=[ghost, 1.0])
    for v in (1.0, 2.0, 3.0):  # distinct: identical launches in a row would be one command
        wp.launch(add_f, dim=1, inputs=[a, v])
    wp.launch(add_f, dim=1, inputs=[a, 4.0])  # sends the full batch, does not wait for it
    with pytest.raises(wp.NotFoundError, match="kernel 'add_f.*argument 0: array handle .* not found"):
        wp.synchronize()
    ghost.handle = real
    assert context.runtime().stream("cpu").queued == 1  # the launch after the refused batch
    wp.launch(add_f, dim=1, inputs=[a, 8.0])
    # The refused batch queued nothing; the launch queued after it, and this one, ran.
    assert a.numpy()[0] == 12.0


def test_dims_of_every_accepted_form_and_refused_ones(wp):
    a = wp.zeros(4, dtype=float)
    for dim in [4, (4,), [4], np.int64(4), (np.int32(4),), (4.0,), 3, (3,), True, (True,)]:
        wp.launch(add_f, dim=dim, inputs=[a, 1.0])
    for dim, err in [(4.0, TypeError), ("4", TypeError), (([4],), TypeError), ((-1,), ValueError),
                     (-1, ValueError), ((1, 1, 1, 1, 1), ValueError), ((), ValueError)]:
        with pytest.raises(err, match="launch of kernel 'add_f': "):
            wp.launch(add_f, dim=dim, inputs=[a, 1.0])
    np.testing.assert_array_equal(a.numpy(), [10, 8, 8, 6])
