"""Tuples in kernels and functions: multiple return values, tuple values,
unpacking, indexing and len(), checked against NumPy and against warp-lang
1.19.0 run on the same code (the results of multi_return were taken from
it: [5, 9, 3, 1, 9, 7, 3, -2] and [-4, -1, -4, 0]). The builtins that return
tuples (svd3, qr3, eig3, svd2, quat_to_axis_angle, transform_decompose) are
in test_builtins_matrix.py and test_builtins_quat_transform.py."""

import numpy as np
import pytest

import warpd as wp

from ir_helpers import assert_names_line


@wp.func
def divmod_(a: int, b: int):
    return a // b, a % b


@wp.func
def stats(v: wp.vec3):
    return wp.min(v[0], wp.min(v[1], v[2])), wp.max(v[0], wp.max(v[1], v[2])), v[0] + v[1] + v[2]


@wp.kernel
def multi_return(out: wp.array(dtype=float), iout: wp.array(dtype=int), vs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q, r = divmod_(-7 - i, 2)
    iout[2 * i] = q
    iout[2 * i + 1] = r
    lo, hi, s = stats(vs[i])
    a = lo
    b = hi
    a, b = b, a  # the right side is a tuple of the old values
    t = (a, b, s)
    out[4 * i] = t[0]
    out[4 * i + 1] = t[2]
    out[4 * i + 2] = float(len(t))
    out[4 * i + 3] = b


def test_multiple_return_values_swap_index_len(wp):
    vs = np.array([[1, 5, 3], [-2, 0, 9]], dtype=np.float32)
    out = wp.zeros(8, dtype=float)
    iout = wp.zeros(4, dtype=int)
    wp.launch(multi_return, dim=2, inputs=[out, iout, wp.array(vs, dtype=wp.vec3)])
    # Independent reference: Python's own tuples (floor division, C-sign
    # remainder as in Warp: -7 % 2 == -1).
    expect = []
    for v in vs:
        lo, hi, s = v.min(), v.max(), v.sum()
        expect += [hi, s, 3.0, lo]
    np.testing.assert_array_equal(out.numpy(), np.array(expect, dtype=np.float32))
    ref_i = []
    for n in (-7, -8):
        ref_i += [n // 2, int(np.fmod(n, 2))]
    np.testing.assert_array_equal(iout.numpy(), ref_i)


@wp.func
def polar(v: wp.vec2):
    return wp.length(v), wp.atan2(v[1], v[0])


@wp.func
def from_polar(rt: float, theta: float):
    return wp.vec2(rt * wp.cos(theta), rt * wp.sin(theta))


@wp.kernel
def unpack_into_places(v: wp.array(dtype=wp.vec2), polar_out: wp.array2d(dtype=float), back: wp.array(dtype=wp.vec2),
                       last: wp.array(dtype=float)):
    i = wp.tid()
    w = wp.vec2()
    polar_out[i, 0], polar_out[i, 1] = polar(v[i])  # array elements as targets
    w[1], w[0] = polar(v[i])                          # vector components as targets
    p = polar(v[i])
    back[i] = from_polar(p[0], p[1])
    last[i] = p[-1] + w[0] - w[0]                     # negative index: the last element


def test_unpack_into_places_and_negative_index(wp):
    rng = np.random.default_rng(7)
    v = rng.uniform(-2, 2, (16, 2)).astype(np.float32)
    polar_out = wp.zeros((16, 2), dtype=float)
    back = wp.zeros(16, dtype=wp.vec2)
    last = wp.zeros(16, dtype=float)
    wp.launch(unpack_into_places, dim=16, inputs=[wp.array(v, dtype=wp.vec2), polar_out, back, last])
    r = np.hypot(v[:, 0], v[:, 1])
    theta = np.arctan2(v[:, 1], v[:, 0])
    np.testing.assert_allclose(polar_out.numpy()[:, 0], r, rtol=1e-6)
    np.testing.assert_allclose(polar_out.numpy()[:, 1], theta, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(back.numpy(), v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last.numpy(), theta, rtol=1e-6, atol=1e-7)


@wp.func
def three(x: float):
    return x, 2.0 * x, wp.vec3(x, x, x)


@wp.func
def passes_on(x: float):
    return three(x)  # a tuple returned as is


@wp.kernel
def nested_tuple_returns(out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a, b, c = passes_on(float(i))
    out[i] = c + wp.vec3(a, b, 0.0)


def test_tuple_returned_through_functions(wp):
    out = wp.zeros(4, dtype=wp.vec3)
    wp.launch(nested_tuple_returns, dim=4, inputs=[out])
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(out.numpy(), np.stack([2 * x, 3 * x, x], axis=1))


# ------------------------------------------------------------ errors


def test_unpacking_arity_mismatch(wp, serving):
    @wp.kernel(module="unique")
    def too_many(out: wp.array(dtype=int)):
        a, b, c = divmod_(7, 2)
        out[0] = a

    with pytest.raises(wp.CompileError, match="cannot unpack a tuple of 2 values into 3 targets") as info:
        wp.launch(too_many, dim=1, inputs=[wp.zeros(1, dtype=int)])
    assert_names_line(str(info.value), too_many.func, "a, b, c = divmod_(7, 2)")
    assert serving()


def test_unpacking_a_non_tuple(wp):
    @wp.kernel(module="unique")
    def not_a_tuple(out: wp.array(dtype=float)):
        a, b = wp.vec2(1.0, 2.0)
        out[0] = a

    with pytest.raises(wp.CompileError, match=r"cannot unpack a value of type vec2f into 2 targets"):
        wp.launch(not_a_tuple, dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_tuples_are_immutable(wp):
    @wp.kernel(module="unique")
    def assigns_element(out: wp.array(dtype=float)):
        t = (1.0, 2.0)
        t[0] = 3.0
        out[0] = t[0]

    with pytest.raises(wp.CompileError, match="tuples are immutable"):
        wp.launch(assigns_element, dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_tuple_index_must_be_a_constant_in_range(wp):
    @wp.kernel(module="unique")
    def dynamic_index(out: wp.array(dtype=float), k: int):
        t = (1.0, 2.0)
        out[0] = t[k]

    with pytest.raises(wp.CompileError, match="a tuple must be indexed with one integer constant"):
        wp.launch(dynamic_index, dim=1, inputs=[wp.zeros(1, dtype=float), 0])

    @wp.kernel(module="unique")
    def out_of_range(out: wp.array(dtype=float)):
        t = (1.0, 2.0)
        out[0] = t[2]

    with pytest.raises(wp.CompileError, match=r"index 2 is out of range for tuple\(float32, float32\)"):
        wp.launch(out_of_range, dim=1, inputs=[wp.zeros(1, dtype=float)])
