"""Runs of identical launches go as one repeated launch (issue 10, item 3):
the client sends a ``wp.Launch`` re-launched, or the same ``wp.launch`` call
in a loop, as one command with ``Launch.repeat`` (clients/python/warpd/stream.py,
wire.py); the daemon prepares it once and runs it that many times
(runtime/exec/launch.cc). Every run must behave exactly as a separate launch:
it sees the previous run's writes, order with other launches is kept, the
first fault stops the rest, every run's output is printed; the daemon bounds
what a client may ask for."""

import grpc
import numpy as np
import pytest

import warpd as wpd
from warpd import wire
from warpd.v1 import runtime_pb2


@wpd.kernel
def double_plus_one(a: wpd.array(dtype=float)):
    a[0] = a[0] * 2.0 + 1.0


@wpd.kernel
def append_digit(a: wpd.array(dtype=float), d: float):
    a[0] = a[0] * 10.0 + d


@wpd.kernel
def count_then_fault(c: wpd.array(dtype=float), a: wpd.array(dtype=float)):
    c[0] = c[0] + 1.0
    j = 0
    if c[0] >= 3.0:
        j = 100
    a[j] = 1.0


@wpd.kernel
def say(n: int):
    i = wpd.tid()
    print(n)


@wpd.kernel
def chatter(a: wpd.array(dtype=float)):
    i = wpd.tid()
    print("0123456789012345678901234567890123456789012345678901234567890123456789")


def stream():
    from warpd import context

    return context.runtime().stream("cpu")


def test_the_repeat_field_is_what_protobuf_writes():
    body = wire.launch_header(7, "k") + wire.launch_dims((3,)) + wire.arg_array(5)
    for count in (2, 127, 128, 300, wire.MAX_REPEAT):
        cmd = runtime_pb2.Command()
        cmd.launch.module = 7
        cmd.launch.kernel = "k"
        cmd.launch.dim.append(3)
        cmd.launch.args.add().array = 5
        cmd.launch.repeat = count
        want = runtime_pb2.SubmitRequest(commands=[cmd]).SerializeToString()
        assert wire.repeat_launch(wire.launch_command(body), count) == want
    long_body = body + wire.arg_bytes(bytes(300))  # lengths of two bytes
    got = runtime_pb2.SubmitRequest.FromString(wire.repeat_launch(wire.launch_command(long_body), 9))
    assert got.commands[0].launch.repeat == 9 and got.commands[0].launch.args[1].bytes == bytes(300)


def test_a_recorded_launch_relaunched_is_one_command_and_runs_every_time(wp):
    a = wp.zeros(1, dtype=float)
    cmd = wp.launch(double_plus_one, dim=1, inputs=[a], record_cmd=True)
    for _ in range(10):
        cmd.launch()
    s = stream()
    assert len(s._batch) == 1 and s._run_count == 10
    # Each run sees the one before: 2^10 - 1, not 1.
    assert a.numpy()[0] == 1023.0


def test_the_same_launch_call_in_a_loop_repeats_and_order_with_others_is_kept(wp):
    a = wp.zeros(1, dtype=float)
    for d in (1, 1, 1, 2, 2, 1, 3, 3):
        wp.launch(append_digit, dim=1, inputs=[a, float(d)])
    s = stream()
    assert len(s._batch) == 4  # runs: 1x3, 2x2, 1x1, 3x2
    assert a.numpy()[0] == 11122133.0


def test_many_runs_against_a_count(wp):
    n = wire.MAX_REPEAT + 4321  # two commands: the daemon takes at most MAX_REPEAT runs in one
    counter = wp.zeros(1, dtype=float)
    c = wp.launch(count_then_fault, dim=1, inputs=[counter, wp.zeros(1000, dtype=float)], record_cmd=True)
    for _ in range(n):
        c.launch()
    s = stream()
    assert len(s._batch) == 2 and s._run_count == 4321
    wp.synchronize()
    assert counter.numpy()[0] == float(n)


def test_the_first_fault_stops_the_remaining_runs(wp):
    c = wp.zeros(1, dtype=float)
    a = wp.zeros(8, dtype=float)
    cmd = wp.launch(count_then_fault, dim=1, inputs=[c, a], record_cmd=True)
    for _ in range(10):
        cmd.launch()
    with pytest.raises(wpd.KernelError, match="index 100 out of bounds"):
        wp.synchronize()
    assert c.numpy()[0] == 3.0  # runs 1, 2, 3: the third faulted, 4-10 never ran


def test_every_run_prints(wp, capfd):
    cmd = wp.launch(say, dim=1, inputs=[7], record_cmd=True)
    for _ in range(5):
        cmd.launch()
    wp.launch(say, dim=1, inputs=[8])
    wp.synchronize()
    assert capfd.readouterr().out.split() == ["7"] * 5 + ["8"]


def test_repeated_output_is_bounded(wp, capfd):
    cmd = wp.launch(chatter, dim=2000, inputs=[wp.zeros(1, dtype=float)], record_cmd=True)
    for _ in range(40):
        cmd.launch()
    wp.synchronize()
    out = capfd.readouterr().out
    assert "repeated runs printed more than 1048576 bytes" in out
    assert len(out) < (1 << 20) + (70 << 10) * 2


def test_the_daemon_refuses_more_runs_than_it_allows(raw, serving):
    stub, session = raw
    req = runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[runtime_pb2.Command(
        launch=runtime_pb2.Launch(module=1, kernel="x", dim=[1], repeat=wire.MAX_REPEAT + 1))])
    with pytest.raises(grpc.RpcError) as e:
        stub.Submit(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at most 65536" in e.value.details()
    assert serving()
