"""Recorded launches (issue 10 item 3): ``wp.launch(..., record_cmd=True)``
returns a ``wp.Launch``; expected values are what NVIDIA Warp 1.19's CPU
backend printed for the same script."""

import time

import numpy as np
import pytest

import warpd as wpd


@wpd.kernel
def add_v(a: wpd.array(dtype=float), v: float):
    i = wpd.tid()
    a[i] = a[i] + v


def test_a_recorded_launch_runs_only_when_launched(wp):
    a = wp.zeros(4, dtype=float)
    cmd = wp.launch(add_v, dim=4, inputs=[a, 1.0], record_cmd=True)
    assert isinstance(cmd, wp.Launch)
    assert a.numpy().tolist() == [0, 0, 0, 0]
    cmd.launch()
    assert a.numpy().tolist() == [1, 1, 1, 1]
    cmd.set_param_at_index(1, 5.0)
    cmd.launch()
    assert a.numpy().tolist() == [6, 6, 6, 6]
    cmd.set_param_by_name("v", 2.0)
    cmd.set_dim(2)
    cmd.launch()
    assert a.numpy().tolist() == [8, 8, 6, 6]
    b = wp.ones(4, dtype=float)
    cmd.set_params([b, 3.0])
    cmd.launch()
    assert b.numpy().tolist() == [4, 4, 1, 1]
    assert a.numpy().tolist() == [8, 8, 6, 6]


@wpd.struct
class Step:
    scale: float
    offset: float


@wpd.kernel
def apply_step(a: wpd.array(dtype=float), s: Step):
    i = wpd.tid()
    a[i] = a[i] * s.scale + s.offset


def test_a_recorded_launch_sees_later_changes_of_its_struct_arguments(wp):
    # As in Warp 1.19 (test_launch_cmd_set_param): the command launches the struct as it is
    # at launch time, without set_param again; other arguments are as they were set.
    a = wp.ones(3, dtype=float)
    s = Step()
    s.scale = 2.0
    s.offset = 1.0
    cmd = wp.launch(apply_step, dim=3, inputs=[a, s], record_cmd=True)
    cmd.launch()
    assert a.numpy().tolist() == [3, 3, 3]
    s.scale = 10.0
    cmd.launch()
    assert a.numpy().tolist() == [31, 31, 31]
    t = Step()
    t.offset = -1.0
    cmd.set_param_at_index(1, t)  # another struct: its changes are followed from now on
    s.scale = 0.5
    cmd.launch()
    assert a.numpy().tolist() == [-1, -1, -1]
    t.scale = 3.0
    cmd.launch()
    assert a.numpy().tolist() == [-4, -4, -4]


def test_bad_parameters_are_refused_and_leave_the_launch_as_it_was(wp):
    a = wp.zeros(4, dtype=float)
    cmd = wp.launch(add_v, dim=4, inputs=[a, 1.0], record_cmd=True)
    with pytest.raises(TypeError):
        cmd.set_param_at_index(1, "x")
    with pytest.raises(ValueError, match="Argument 'zz' not found"):
        cmd.set_param_by_name("zz", 1.0)
    with pytest.raises(IndexError):
        cmd.set_param_at_index(5, 1.0)
    with pytest.raises(TypeError):
        cmd.set_param_at_index(0, wp.zeros(4, dtype=wp.int32))  # wrong dtype
    with pytest.raises(ValueError):
        cmd.set_dim((1, 2, 3, 4, 5))
    cmd.launch()
    assert a.numpy().tolist() == [1, 1, 1, 1]


def test_recorded_launches_are_captured_and_fast(wp):
    n = 20000
    a = wp.zeros(1, dtype=float)
    cmd = wp.launch(add_v, dim=1, inputs=[a, 1.0], record_cmd=True)
    t0 = time.perf_counter()
    for _ in range(n):
        cmd.launch()
    queued = time.perf_counter() - t0
    wp.synchronize()
    assert a.numpy()[0] == n
    print(f"Launch.launch(): {n / queued:,.0f} re-launches/s queued")
    with wp.ScopedCapture() as capture:
        cmd.launch()
        cmd.launch()
    assert a.numpy()[0] == n
    wp.capture_launch(capture.graph)
    assert a.numpy()[0] == n + 2
