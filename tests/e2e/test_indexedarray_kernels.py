"""wp.indexedarray as a kernel argument and struct member (Warp 1.19): element (i, j, ...)
is data[idx0[i], j, ...]; shape, atomics and generic kernels as in Warp; every access is
bounds-checked through the index arrays; the daemon writes the descriptor from handles
it checks (docs/launch_abi.md). References: NumPy's outer indexing (np.ix_)."""

from typing import Any, Literal

import numpy as np
import pytest

import warpd as wpd


@wpd.kernel
def read_double_add(a: wpd.indexedarray(dtype=float), out: wpd.array(dtype=float)):
    i = wpd.tid()
    out[i] = a[i]
    a[i] = 2.0 * a[i]
    wpd.atomic_add(a, i, 1.0)


@wpd.kernel
def read_2d(a: wpd.indexedarray[float, Literal[2]], out: wpd.array2d(dtype=float)):
    i, j = wpd.tid()
    out[i, j] = a[i, j]


@wpd.kernel
def read_3d(a: wpd.indexedarray3d(dtype=float), out: wpd.array3d(dtype=float)):
    i, j, k = wpd.tid()
    out[i, j, k] = a[i, j, k]


@wpd.kernel
def read_4d(a: wpd.indexedarray4d(dtype=float), out: wpd.array4d(dtype=float)):
    i, j, k, l = wpd.tid()
    out[i, j, k, l] = a[i, j, k, l]


@wpd.kernel
def shapes(a: wpd.indexedarray[float, Literal[3]], out: wpd.array(dtype=int)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    out[3] = len(a)


@wpd.kernel
def generic_sum(a: Any, out: wpd.array(dtype=float)):
    i = wpd.tid()
    wpd.atomic_add(out, 0, a[i])


@wpd.struct
class Holder:
    scale: float
    ia: wpd.indexedarray(dtype=wpd.vec3)


@wpd.kernel
def read_member(h: Holder, out: wpd.array(dtype=float)):
    i = wpd.tid()
    out[i] = h.scale * h.ia[i][1]


@wpd.kernel
def read_member_array(hs: wpd.array(dtype=Holder), out: wpd.array(dtype=float)):
    i = wpd.tid()
    h = hs[i]
    out[i] = h.scale * h.ia[0][2]


def idx(values):
    return wpd.array(np.array(values, dtype=np.int32), dtype=wpd.int32)


def test_1d_reads_writes_and_atomics(wp):
    values = np.arange(10, dtype=np.float32)
    data = wp.array(values)
    picks = [1, 3, 5, 7, 9]
    ia = wp.indexedarray1d(data, [idx(picks)])
    out = wp.zeros(5, dtype=float)
    wp.launch(read_double_add, dim=ia.size, inputs=[ia, out])
    np.testing.assert_array_equal(out.numpy(), values[picks])
    want = values.copy()
    want[picks] = 2 * want[picks] + 1
    np.testing.assert_array_equal(data.numpy(), want)


@pytest.mark.parametrize("pattern", [(True, False), (False, True), (True, True)])
def test_2d_any_dimension_indexed(wp, pattern):
    values = np.arange(20, dtype=np.float32).reshape(4, 5)
    data = wp.array(values)
    picks = [[3, 0, 2], [4, 1]]
    indices = [idx(p) if on else None for p, on in zip(picks, pattern)]
    ia = wp.indexedarray(data, indices)
    sel = np.ix_(*[np.array(p) if on else np.arange(n) for p, on, n in zip(picks, pattern, values.shape)])
    want = values[sel]
    assert ia.shape == want.shape
    out = wp.zeros(want.shape, dtype=float)
    wp.launch(read_2d, dim=want.shape, inputs=[ia, out])
    np.testing.assert_array_equal(out.numpy(), want)


def test_3d_4d_and_shapes(wp):
    v3 = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    ia3 = wp.indexedarray(wp.array(v3), [None, idx([2, 0]), idx([3, 3, 1])])
    want3 = v3[np.ix_(np.arange(2), [2, 0], [3, 3, 1])]
    out3 = wp.zeros(want3.shape, dtype=float)
    wp.launch(read_3d, dim=want3.shape, inputs=[ia3, out3])
    np.testing.assert_array_equal(out3.numpy(), want3)
    s = wp.zeros(4, dtype=int)
    wp.launch(shapes, dim=1, inputs=[ia3, s])
    np.testing.assert_array_equal(s.numpy(), [2, 2, 3, 2])

    v4 = np.arange(2 * 2 * 3 * 2, dtype=np.float32).reshape(2, 2, 3, 2)
    ia4 = wp.indexedarray4d(wp.array(v4), [idx([1]), None, idx([2, 1]), idx([1, 0])])
    want4 = v4[np.ix_([1], np.arange(2), [2, 1], [1, 0])]
    out4 = wp.zeros(want4.shape, dtype=float)
    wp.launch(read_4d, dim=want4.shape, inputs=[ia4, out4])
    np.testing.assert_array_equal(out4.numpy(), want4)


def test_generic_kernels_take_indexed_and_plain_arrays(wp):
    values = np.arange(6, dtype=np.float32)
    data = wp.array(values)
    out = wp.zeros(1, dtype=float)
    wp.launch(generic_sum, dim=3, inputs=[wp.indexedarray1d(data, [idx([5, 4, 0])]), out])
    assert out.numpy()[0] == 9.0
    out.zero_()
    wp.launch(generic_sum, dim=6, inputs=[data, out])
    assert out.numpy()[0] == values.sum()


def test_struct_members_and_arrays_of_such_structs(wp):
    vecs = np.arange(18, dtype=np.float32).reshape(6, 3)
    data = wp.array(vecs, dtype=wp.vec3)
    h = Holder()
    h.scale = 2.0
    h.ia = wp.indexedarray1d(data, [idx([4, 1])])
    out = wp.zeros(2, dtype=float)
    wp.launch(read_member, dim=2, inputs=[h, out])
    np.testing.assert_array_equal(out.numpy(), 2.0 * vecs[[4, 1], 1])
    hs = []
    for k, pick in enumerate([5, 0, 3]):
        x = Holder()
        x.scale = float(k + 1)
        x.ia = wp.indexedarray1d(data, [idx([pick])])
        hs.append(x)
    arr = wp.array(hs, dtype=Holder)
    # Read back, a member is an indexedarray of the same data and index arrays.
    for got, want in zip(arr.list(), hs):
        assert got.ia.data is data and got.ia.indices[0] is want.ia.indices[0]
        np.testing.assert_array_equal(got.ia.numpy(), want.ia.numpy())
    del hs, x, h, got, want
    out3 = wp.zeros(3, dtype=float)
    wp.launch(read_member_array, dim=3, inputs=[arr, out3])
    np.testing.assert_array_equal(out3.numpy(), [1 * vecs[5, 2], 2 * vecs[0, 2], 3 * vecs[3, 2]])


def test_bad_indices_fault_with_the_kernel_line(wp, serving):
    data = wp.array(np.arange(10, dtype=np.float32))
    for bad in ([0, 10], [-1, 0]):
        with pytest.raises(wp.KernelError, match="out of bounds"):
            wp.launch(read_double_add, dim=2, inputs=[wp.indexedarray1d(data, [idx(bad)]),
                                                      wp.zeros(2, dtype=float)])
            wp.synchronize()
    # A launch past the indexed extent faults on the indexedarray's own shape.
    with pytest.raises(wp.KernelError, match="out of bounds"):
        wp.launch(read_double_add, dim=3, inputs=[wp.indexedarray1d(data, [idx([1, 2])]),
                                                  wp.zeros(3, dtype=float)])
        wp.synchronize()
    assert serving()


@wpd.kernel
def rows_of(a: wpd.indexedarray3d(dtype=float), out: wpd.array2d(dtype=float), shapes: wpd.array(dtype=int)):
    i, j = wpd.tid()
    row = a[i]  # an indexedarray of the remaining two dimensions
    col = row[j]
    out[i, j] = col[1]
    if i == 0 and j == 0:
        shapes[0] = row.shape[0]
        shapes[1] = row.shape[1]
        shapes[2] = col.shape[0]


def test_views_of_an_indexedarray_keep_the_remaining_indices(wp):
    v = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    ia = wp.indexedarray(wp.array(v), [idx([2, 0]), None, idx([4, 1, 3])])
    want = v[np.ix_([2, 0], np.arange(4), [4, 1, 3])]  # (2, 4, 3)
    out = wp.zeros((2, 4), dtype=float)
    shapes = wp.zeros(3, dtype=int)
    wp.launch(rows_of, dim=(2, 4), inputs=[ia, out, shapes])
    np.testing.assert_array_equal(out.numpy(), want[:, :, 1])
    np.testing.assert_array_equal(shapes.numpy(), [4, 3, 3])


def test_slicing_an_indexedarray_in_a_kernel_is_refused(wp):
    @wp.kernel(module="unique")
    def slices(a: wp.indexedarray2d(dtype=float), out: wp.array(dtype=float)):
        rows = a[0:1]
        out[0] = rows[0, 0]

    data = wp.array(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(wp.CompileError, match="index every dimension"):
        wp.launch(slices, dim=1, inputs=[wp.indexedarray(data, [idx([1]), None]), wp.zeros(1, dtype=float)])


def test_forged_argument_bytes_are_checked(wp, serving):
    # The 112 bytes sent for an indexedarray carry handles only: the daemon refuses an
    # unknown handle, an index array that is not a contiguous 1-D int32 array, and a data
    # array of another type, whatever else the bytes say.
    data = wp.array(np.arange(8, dtype=np.float32))
    out = wp.zeros(2, dtype=float)
    good = wp.indexedarray1d(data, [idx([1, 2])])
    wp.launch(read_double_add, dim=2, inputs=[good, out])  # loads the module
    floats_as_index = wp.array(np.zeros(2, dtype=np.float32))
    two_d_index = wp.array(np.zeros((2, 1), dtype=np.int32), dtype=wp.int32)
    strided_index = wp.array(np.zeros(4, dtype=np.int32), dtype=wp.int32)[::2]
    other = wp.zeros(8, dtype=float)
    cases = [
        (lambda s: s.__setitem__(0, 987654321), wp.errors.NotFoundError, "not found"),
        (lambda s: s.__setitem__(8, floats_as_index.handle), wp.errors.InvalidArgumentError, "int32"),
        (lambda s: s.__setitem__(8, two_d_index.handle), wp.errors.InvalidArgumentError, "1-D"),
        (lambda s: s.__setitem__(8, strided_index.handle), wp.errors.InvalidArgumentError, "contiguous"),
        (lambda s: s.__setitem__(0, other.handle), None, None),  # another float32 array as data: valid
        (lambda s: s.__setitem__(0, wp.zeros(2, dtype=int).handle), wp.errors.InvalidArgumentError, "expects"),
    ]
    import importlib

    launch_mod = importlib.import_module("warpd.launch")  # the module (wp.launch is the function)

    for forge, error, text in cases:
        slot = good._wp_slot_()
        forge(slot)
        original = launch_mod._Param._pack_indexed
        launch_mod._Param._pack_indexed = lambda self, value, device, slot=slot: slot.tobytes()
        try:
            if error is None:
                wp.launch(read_double_add, dim=2, inputs=[good, out])
                wp.synchronize()
                continue
            with pytest.raises(error) as e:
                wp.launch(read_double_add, dim=2, inputs=[good, out])
                wp.synchronize()
            assert text in str(e.value), str(e.value)
        finally:
            launch_mod._Param._pack_indexed = original
    assert serving()
