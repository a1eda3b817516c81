"""Tuples in kernels and functions: multiple return values, tuple values,
unpacking, indexing and len(), checked against NumPy and against warp-lang
1.19.0 run on the same code (the results of multi_return were taken from
it: [5, 9, 3, 1, 9, 7, 3, -2] and [-4, -1, -4, 0]). The builtins that return
tuples (svd3, qr3, eig3, svd2, quat_to_axis_angle, transform_decompose) are
in test_builtins_matrix.py and test_builtins_quat_transform.py."""

import typing

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


# ------------------------------------------------ tuple annotations, loops over tuples


@wp.func
def scaled_pair(x: int, y: float) -> tuple[int, float]:
    return (x * 123, y * 1.5)


@wp.func
def weighted_length(values: tuple[wp.vec3, float]) -> float:
    return wp.length(values[0]) * values[1]


@wp.func
def digits(values: tuple[int, ...]):
    # Unrolled in the daemon: t[i] needs a constant i, and the bounds are constants.
    out = int(0)
    for i in range(wp.static(len(values))):
        out = out * 10 + values[i]
    return out


@wp.func
def digits_reversed(values: typing.Any):
    out = int(0)
    for i in range(len(values)):
        out = out + values[i] * (i + 1)
    return out


@wp.func
def backwards(values: typing.Any):
    out = int(0)
    for k in range(2, -1, -1):
        out = out * 10 + values[k]
    return out


@wp.kernel
def tuple_annotations(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
    x, y = scaled_pair(4, 2.0)
    iout[0] = x
    out[0] = y
    t = (wp.vec3(3.0, 4.0, 0.0), 2.0)
    out[1] = weighted_length(t)
    out[2] = weighted_length((wp.vec3(0.0, 0.0, 1.0), 0.5))
    iout[1] = digits((1,))
    iout[2] = digits((1, 2))
    iout[3] = digits((4, 5, 6, 7))
    iout[4] = digits_reversed((7, 8, 9))
    iout[5] = backwards((1, 2, 3))
    last = int(-1)
    t2 = (1.5, 0.5)
    for j in range(len(t2)):
        last = j
        out[3] += t2[j]
    iout[6] = last + j * 10


def test_tuple_annotations_and_loops_over_tuples(wp):
    out = wp.zeros(4, dtype=float)
    iout = wp.zeros(7, dtype=int)
    wp.launch(tuple_annotations, dim=1, inputs=[out, iout])
    np.testing.assert_allclose(out.numpy(), [3.0, 10.0, 0.5, 2.0])
    # 7*1 + 8*2 + 9*3 = 50; backwards: 3, 2, 1; after the loop j keeps its last value (1).
    assert iout.numpy().tolist() == [492, 1, 12, 4567, 50, 321, 11]


def test_tuple_annotation_errors(wp):
    @wp.func
    def wrong_return(x: int) -> tuple[int, float]:
        return (1.0, x)

    @wp.kernel(module="unique")
    def calls_wrong_return(out: wp.array(dtype=int)):
        a, b = wrong_return(1)
        out[0] = b

    with pytest.raises(wp.CompileError, match=r"has its return type annotated as `tuple\[int, float\]` but "
                                              r"the code returns a tuple with types `\(float32, int32\)`"):
        wp.launch(calls_wrong_return, dim=1, inputs=[wp.zeros(1, dtype=int)])

    # Warp 1.19's wording for the other mismatches: a scalar annotation and a tuple value,
    # tuples of other lengths, a value of another type.
    @wp.func
    def pair_for_int(x: int) -> int:
        return (x + x, x * x)

    @wp.func
    def pair_for_triple(x: int) -> tuple[int, int, int]:
        return (x + x, x * x)

    @wp.func
    def int8_for_int16(x: wp.int32) -> wp.int16:
        return wp.int8(x)

    @wp.kernel(module="unique")
    def calls_pair_for_int(out: wp.array(dtype=int)):
        a, b = pair_for_int(1)
        out[0] = a

    @wp.kernel(module="unique")
    def calls_pair_for_triple(out: wp.array(dtype=int)):
        a, b, c = pair_for_triple(1)
        out[0] = a

    @wp.kernel(module="unique")
    def calls_int8_for_int16(out: wp.array(dtype=int)):
        out[0] = int(int8_for_int16(1))

    for k, text in ((calls_pair_for_int, r"`pair_for_int` has its return type annotated as `int` but the code "
                                         r"returns 2 values\."),
                    (calls_pair_for_triple, r"`pair_for_triple` has its return type annotated as a tuple of 3 "
                                            r"elements but the code returns 2 values\."),
                    (calls_int8_for_int16, r"`int8_for_int16` has its return type annotated as `int16` but the "
                                           r"code returns a value of type `int8`\.")):
        with pytest.raises(wp.CompileError, match=text):
            wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=int)])

    @wp.kernel(module="unique")
    def wrong_elements(out: wp.array(dtype=int)):
        out[0] = digits((1.0, 2.0))

    with pytest.raises(wp.CompileError, match=r"no overload of digits\(\) takes \(tuple\(float32, float32\)\).*"
                                              r"digits\(values: tuple\[int32, \.\.\.\]\)"):
        wp.launch(wrong_elements, dim=1, inputs=[wp.zeros(1, dtype=int)])

    @wp.kernel(module="unique")
    def wrong_pair(out: wp.array(dtype=float)):
        out[0] = weighted_length((1.0, 2.0))

    with pytest.raises(wp.CompileError, match=r"expects tuple\(vec3f, float32\) but got tuple\(float32, float32\)"):
        wp.launch(wrong_pair, dim=1, inputs=[wp.zeros(1, dtype=float)])

    with pytest.raises(wp.CompileError, match="kernel parameters cannot be tuples"):
        @wp.kernel(module="unique")
        def tuple_param(t: tuple[int, int]):
            pass

        wp.launch(tuple_param, dim=1, inputs=[(1, 2)])


def test_loops_over_tuples_that_stay_loops(wp):
    # A loop that assigns its variable, or breaks, is not unrolled: t[i] is then no constant.
    @wp.kernel(module="unique")
    def assigns_index(out: wp.array(dtype=int)):
        t = (1, 2)
        for i in range(2):
            i = 0
            out[0] = t[i]

    @wp.kernel(module="unique")
    def breaks(out: wp.array(dtype=int)):
        t = (1, 2)
        for i in range(2):
            out[0] = t[i]
            break

    @wp.kernel(module="unique")
    def dynamic_bound(out: wp.array(dtype=int), n: int):
        t = (1, 2)
        for i in range(n):
            out[0] = t[i]

    for k, args in ((assigns_index, []), (breaks, []), (dynamic_bound, [2])):
        with pytest.raises(wp.CompileError, match="a tuple must be indexed with one integer constant"):
            wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=int), *args])

    @wp.kernel(module="unique")
    def past_the_end(out: wp.array(dtype=int)):
        t = (1, 2)
        for i in range(3):
            out[0] = t[i]

    with pytest.raises(wp.CompileError, match=r"index 2 is out of range for tuple\(int32, int32\)"):
        wp.launch(past_the_end, dim=1, inputs=[wp.zeros(1, dtype=int)])
