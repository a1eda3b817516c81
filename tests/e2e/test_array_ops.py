"""Elementwise arithmetic on arrays in Python scope (Warp 1.19's array operators), against
NumPy on the same data (integers wrap as NumPy's fixed-width types do; % is C's remainder,
which NumPy's fmod gives)."""

import numpy as np
import pytest

import warpd as wp

TYPES = [(wp.float32, np.float32), (wp.float64, np.float64), (wp.float16, np.float16), (wp.int8, np.int8),
         (wp.uint32, np.uint32), (wp.int64, np.int64)]


@pytest.mark.parametrize("st, npt", TYPES, ids=[t[0].__name__ for t in TYPES])
def test_array_operators_match_numpy(wp, st, npt):
    av = np.array([1, 2, 3, 7], dtype=npt)
    bv = np.array([4, 3, 2, 5], dtype=npt)
    a, b, s = wp.array(av, dtype=st), wp.array(bv, dtype=st), st(5)
    five = np.array(5, dtype=npt)
    with np.errstate(over="ignore"):
        cases = [(a + b, av + bv), (a - s, av - five), (s - a, five - av), (a * b, av * bv), (s * a, five * av),
                 (a % b, np.fmod(av, bv)), (s % a, np.fmod(five, av)), (-a, -av), (+a, av)]
        if st in (wp.float16, wp.float32, wp.float64):
            cases += [(a / b, av / bv), (s / a, five / av), (a ** b, av ** bv)]
    tol = 2e-3 if st is wp.float16 else 1e-6
    for got, want in cases:
        assert got.dtype is st and got.shape == a.shape
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=tol)


def test_operators_on_views_vectors_and_shapes(wp):
    yv = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = wp.array(yv)
    np.testing.assert_array_equal((y[:, 1] + 1.0).numpy(), yv[:, 1] + 1.0)  # a strided view
    np.testing.assert_array_equal((y * y).numpy(), yv * yv)                 # 2-D keeps its shape
    v = wp.array(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3)
    got = (v * 2.0).numpy()
    np.testing.assert_array_equal(got, 2.0 * np.ones((2, 3)))
    assert (v * 2.0).dtype is wp.vec3
    with pytest.raises(ValueError, match="do not broadcast"):
        y + wp.zeros(4, dtype=float)
    with pytest.raises(wp.CompileError, match="float32"):  # no implicit conversion, as in kernels
        y + wp.zeros((3, 4), dtype=wp.float64)
