"""wp.zeros(shape, dtype) inside kernels: fixed-size arrays in the thread's
own storage (Warp 1.19's local arrays), checked against NumPy; and the
limits that keep them safe in a shared daemon (constant shapes, a per-module
byte budget, no escape from the function that owns the storage)."""

import numpy as np
import pytest

import warpd as wp


@wp.func
def fill_squares(a: wp.array(dtype=float), n: int):
    for k in range(n):
        a[k] = float(k * k)


@wp.func
def total(a: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(a.shape[0]):
        s += a[k]
    return s


@wp.kernel
def histogram(values: wp.array(dtype=int), out: wp.array2d(dtype=int), sums: wp.array(dtype=float)):
    i = wp.tid()
    counts = wp.zeros(shape=(4,), dtype=int)   # a fresh, zeroed histogram per thread
    for k in range(8):
        counts[values[i * 8 + k] % 4] += 1
    for b in range(4):
        out[i, b] = counts[b]
    sq = wp.zeros(5, dtype=float)
    fill_squares(sq, 5)                          # local arrays go to functions like any array
    sums[i] = total(sq) + float(len(sq))


def test_local_histograms_and_functions(wp):
    rng = np.random.default_rng(11)
    values = rng.integers(0, 100, 8 * 32).astype(np.int32)
    out = wp.zeros((32, 4), dtype=int)
    sums = wp.zeros(32, dtype=float)
    wp.launch(histogram, dim=32, inputs=[wp.array(values, dtype=int), out, sums])
    ref = np.stack([np.bincount(values[i * 8:(i + 1) * 8] % 4, minlength=4) for i in range(32)])
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(sums.numpy(), np.full(32, 0 + 1 + 4 + 9 + 16 + 5, dtype=np.float32))


@wp.kernel
def matrix_2d_and_vectors(m: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3), shape: wp.array(dtype=int)):
    i = wp.tid()
    grid = wp.zeros(shape=(3, 3), dtype=float)
    for r in range(3):
        for c in range(3):
            grid[r, c] = m[i][c, r]                # the transpose, element by element
    cols = wp.zeros(shape=(3,), dtype=wp.vec3)
    for r in range(3):
        cols[r] = wp.vec3(grid[r, 0], grid[r, 1], grid[r, 2])
    out[i] = cols[0] + cols[1] * 2.0 + cols[2] * 3.0
    shape[0] = grid.shape[0] * 10 + grid.shape[1]


def test_two_dimensional_and_vector_local_arrays(wp):
    rng = np.random.default_rng(12)
    m = rng.uniform(-1, 1, (16, 3, 3)).astype(np.float32)
    out = wp.zeros(16, dtype=wp.vec3)
    shape = wp.zeros(1, dtype=int)
    wp.launch(matrix_2d_and_vectors, dim=16, inputs=[wp.array(m, dtype=wp.mat33), out, shape])
    t = np.transpose(m, (0, 2, 1))
    np.testing.assert_allclose(out.numpy(), t[:, 0] + 2 * t[:, 1] + 3 * t[:, 2], rtol=1e-6, atol=1e-6)
    assert shape.numpy()[0] == 33


@wp.kernel
def rezeroed_in_loop(out: wp.array(dtype=float)):
    acc = float(0.0)
    for k in range(3):
        a = wp.zeros(2, dtype=float)   # each execution starts from zeros again
        a[0] += float(k + 1)
        acc += a[0] + a[1]
    out[0] = acc


def test_zeroed_at_each_execution(wp):
    out = wp.zeros(1, dtype=float)
    wp.launch(rezeroed_in_loop, dim=1, inputs=[out])
    assert out.numpy()[0] == 6.0


@wp.kernel(module="unique")
def local_out_of_bounds(k: int, out: wp.array(dtype=float)):
    a = wp.zeros(4, dtype=float)
    a[k] = 1.0
    out[0] = a[0]


def test_out_of_bounds_index_is_a_fault_not_a_write(wp, serving):
    out = wp.zeros(1, dtype=float)
    wp.launch(local_out_of_bounds, dim=1, inputs=[4, out])
    with pytest.raises(wp.KernelError, match=r"test_local_arrays.py:\d+: index 4 out of bounds for dimension 0 \(shape \(4,\)\)"):
        wp.synchronize()
    assert serving()


def test_escape_from_the_owning_function_is_refused(wp):
    @wp.func
    def make_scratch():
        return wp.zeros(4, dtype=float)

    @wp.kernel(module="unique")
    def uses_scratch(out: wp.array(dtype=float)):
        s = make_scratch()
        out[0] = s[0]

    with pytest.raises(wp.CompileError, match=r"cannot return array\(dtype=float32, ndim=1\): the array lives only "
                                              r"until the function returns"):
        wp.launch(uses_scratch, dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_shapes_are_constants_within_the_budget(wp):
    @wp.kernel(module="unique")
    def dynamic_shape(n: int, out: wp.array(dtype=float)):
        a = wp.zeros(n, dtype=float)
        out[0] = a[0]

    with pytest.raises(wp.CompileError, match=r"each dimension of shape must be an integer constant"):
        wp.launch(dynamic_shape, dim=1, inputs=[4, wp.zeros(1, dtype=float)])

    @wp.kernel(module="unique")
    def too_big(out: wp.array(dtype=float)):
        a = wp.zeros(shape=(128, 128), dtype=wp.float64)
        out[0] = float(a[0, 0])

    with pytest.raises(wp.CompileError, match=r"larger than the 65536 bytes a module may hold"):
        wp.launch(too_big, dim=1, inputs=[wp.zeros(1, dtype=float)])

    @wp.kernel(module="unique")
    def many(out: wp.array(dtype=float)):
        a = wp.zeros(shape=(64, 64), dtype=float)    # 16 KiB
        b = wp.zeros(shape=(64, 64), dtype=float)
        c = wp.zeros(shape=(64, 64), dtype=float)
        d = wp.zeros(shape=(64, 64), dtype=float)
        e = wp.zeros(shape=(1,), dtype=float)         # one float too many
        out[0] = a[0, 0] + b[0, 0] + c[0, 0] + d[0, 0] + e[0]

    with pytest.raises(wp.CompileError, match=r"local arrays \(wp.zeros\) take 65540 bytes; at most 65536"):
        wp.launch(many, dim=1, inputs=[wp.zeros(1, dtype=float)])
