"""Kernels at full speed stay exact and memory-safe (issue 10, item 1).

Accesses indexed by the thread id itself are checked once per block of ids
(compiler/codegen/thread_index.h) and vectorized; everything else keeps its
per-access check. These tests hold both paths to the serial semantics:
every index runs exactly once, at sizes around the block and chunk
boundaries; results equal NumPy's; and an out-of-bounds access is still
reported precisely (line, index, shape), whichever path ran it."""

import numpy as np
import pytest

import warpd as wp

from ir_helpers import assert_names_line


@wp.kernel
def count_1d(counts: wp.array(dtype=int), ids: wp.array(dtype=int)):
    i = wp.tid()
    counts[i] = counts[i] + 1
    ids[i] = i


@wp.kernel
def count_2d(counts: wp.array2d(dtype=int)):
    i, j = wp.tid()
    counts[i, j] = counts[i, j] + 1


@wp.kernel
def count_3d(counts: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    counts[i, j, k] = counts[i, j, k] + 1


@wp.kernel
def count_4d(counts: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    counts[i, j, k, l] = counts[i, j, k, l] + 1


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def dot_length(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), c: wp.array(dtype=float)):
    i = wp.tid()
    c[i] = wp.dot(a[i], b[i]) + wp.length(a[i])


@wp.kernel
def copy_shifted(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    j = i + 1
    y[i] = x[j]


@wp.kernel
def copy_in_branch(x: wp.array(dtype=float), y: wp.array(dtype=float), flip: int):
    i = wp.tid()
    k = 0
    if flip != 0:
        k = i
    y[i] = x[k]


@wp.kernel
def gather(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[idx[i]]


# Around the 256-id blocks, the 64-id chunk grain and the vector widths.
SIZES = [0, 1, 7, 63, 64, 65, 255, 256, 257, 1000, 1023, 1024, 1025, 4097, 65537, 1_000_003]


@pytest.mark.parametrize("n", SIZES)
def test_every_index_runs_exactly_once_1d(wp, n):
    counts = wp.zeros(n, dtype=int)
    ids = wp.full(n, -1, dtype=int)
    wp.launch(count_1d, dim=n, inputs=[counts, ids])
    np.testing.assert_array_equal(counts.numpy(), np.ones(n, dtype=np.int32))
    np.testing.assert_array_equal(ids.numpy(), np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (17, 255), (257, 3), (1, 1025), (0, 4)])
def test_every_index_runs_exactly_once_2d(wp, shape):
    counts = wp.zeros(shape, dtype=int)
    wp.launch(count_2d, dim=shape, inputs=[counts])
    np.testing.assert_array_equal(counts.numpy(), np.ones(shape, dtype=np.int32))


@pytest.mark.parametrize("shape", [(2, 3, 5), (33, 1, 65), (1, 257, 2)])
def test_every_index_runs_exactly_once_3d(wp, shape):
    counts = wp.zeros(shape, dtype=int)
    wp.launch(count_3d, dim=shape, inputs=[counts])
    np.testing.assert_array_equal(counts.numpy(), np.ones(shape, dtype=np.int32))


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (5, 1, 65, 3)])
def test_every_index_runs_exactly_once_4d(wp, shape):
    counts = wp.zeros(shape, dtype=int)
    wp.launch(count_4d, dim=shape, inputs=[counts])
    np.testing.assert_array_equal(counts.numpy(), np.ones(shape, dtype=np.int32))


@pytest.mark.parametrize("n", [1, 255, 4097, 1 << 20])
def test_saxpy_equals_numpy_bit_for_bit(wp, n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    wx, wy = wp.array(x, dtype=float), wp.array(y, dtype=float)
    wp.launch(saxpy, dim=n, inputs=[wx, wy, 1.5])
    # One rounding per operation, no contraction: exactly NumPy's float32 result.
    np.testing.assert_array_equal(wy.numpy(), np.float32(1.5) * x + y)


def test_saxpy_in_place_on_one_array(wp):
    # x and y are one array: the vectorized loop must see its own stores.
    n = 10_001
    y = np.arange(n, dtype=np.float32)
    wy = wp.array(y, dtype=float)
    wp.launch(saxpy, dim=n, inputs=[wy, wy, 2.0])
    np.testing.assert_array_equal(wy.numpy(), np.float32(2.0) * y + y)




def test_vec3_dot_length_matches_numpy(wp):
    n = 100_003
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((n, 3), dtype=np.float32), rng.standard_normal((n, 3), dtype=np.float32)
    c = wp.zeros(n, dtype=float)
    wp.launch(dot_length, dim=n, inputs=[wp.array(a, dtype=wp.vec3), wp.array(b, dtype=wp.vec3), c])
    expected = (a.astype(np.float64) * b).sum(axis=1) + np.linalg.norm(a.astype(np.float64), axis=1)
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_a_local_holding_zero_or_the_thread_id(wp):
    n = 777
    x = np.arange(n, dtype=np.float32) + 1
    y = wp.zeros(n, dtype=float)
    wp.launch(copy_in_branch, dim=n, inputs=[wp.array(x, dtype=float), y, 1])
    np.testing.assert_array_equal(y.numpy(), x)
    wp.launch(copy_in_branch, dim=n, inputs=[wp.array(x, dtype=float), y, 0])
    np.testing.assert_array_equal(y.numpy(), np.full(n, x[0]))


def assert_fault_at_sync(wp, kernel, line_text, index, length):
    """The queued launch faulted on `index` of a length-`length` array, at `line_text`."""
    with pytest.raises(wp.KernelError) as info:
        wp.synchronize()
    msg = str(info.value)
    assert f"index {index} out of bounds for dimension 0 (shape ({length},))" in msg, msg
    assert_names_line(msg, kernel.func, line_text)


def test_gathers_are_checked_per_access(wp, serving):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    idx = np.arange(n, dtype=np.int32)[::-1].copy()
    y = wp.zeros(n, dtype=float)
    wp.launch(gather, dim=n, inputs=[wp.array(x, dtype=float), wp.array(idx, dtype=int), y])
    np.testing.assert_array_equal(y.numpy(), x[::-1])
    idx[500] = n + 41
    wp.launch(gather, dim=n, inputs=[wp.array(x, dtype=float), wp.array(idx, dtype=int), y])
    assert_fault_at_sync(wp, gather, "y[i] = x[idx[i]]", n + 41, n)
    assert serving()


@pytest.mark.parametrize("n", [1, 256, 257, 4096, 100_001])
def test_a_thread_indexed_array_shorter_than_the_launch_faults_precisely(wp, serving, n):
    # The last thread is the only one out of bounds; the blocks before it run
    # on the fast path, its block on the checked one.
    x = wp.zeros(n + 1, dtype=float)
    y = wp.zeros(n, dtype=float)
    wp.launch(saxpy, dim=n + 1, inputs=[x, y, 1.0])
    assert_fault_at_sync(wp, saxpy, "y[i] = a * x[i] + y[i]", n, n)
    assert serving()


def test_an_index_derived_from_the_thread_id_is_checked(wp, serving):
    n = 4096
    x = wp.zeros(n, dtype=float)
    y = wp.zeros(n, dtype=float)
    wp.launch(copy_shifted, dim=n, inputs=[x, y])
    assert_fault_at_sync(wp, copy_shifted, "y[i] = x[j]", n, n)
    assert serving()
