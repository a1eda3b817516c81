"""Python-scope array views (issue 24): slicing, indexing, reshape, flatten,
view(dtype), transpose, contiguous, wp.copy with offsets, checked against
NumPy for values, shapes, strides and aliasing (writes from kernels and from
Python, both ways); views as kernel arguments; views outliving their base's
handle; hostile CreateView requests (the daemon refuses them and keeps
serving).

Every view form runs twice: on a small base array (not mapped: numpy()
downloads the view, which the daemon gathers) and on a large one (mapped into
this process: numpy() is a strided view of the base's memory).
"""

import gc

import grpc
import numpy as np
import pytest

import warpd as wpd
from warpd import array_view, context
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc


@wpd.kernel
def add_100(a: wpd.array(dtype=float)):
    i = wpd.tid()
    a[i] = a[i] + 100.0


@wpd.kernel
def add_ij(a: wpd.array2d(dtype=float)):
    i, j = wpd.tid()
    a[i, j] = a[i, j] + float(i * 1000 + j)


@wpd.kernel
def copy_2d(src: wpd.array2d(dtype=float), dst: wpd.array2d(dtype=float)):
    i, j = wpd.tid()
    dst[i, j] = src[i, j]


@wpd.kernel
def sum_vec3(a: wpd.array(dtype=wpd.vec3), out: wpd.array(dtype=float)):
    i = wpd.tid()
    v = a[i]
    wpd.atomic_add(out, 0, v[0] + v[1] + v[2])


SMALL = (4, 5, 6, 7)      # 3,360 bytes of float32: made to go through transfers
LARGE = (8, 10, 24, 40)   # 307,200 bytes: mapped


def rt():
    return context.runtime()


@pytest.fixture(params=["small", "mapped"])
def base(request, wp):
    shape = SMALL if request.param == "small" else LARGE
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if request.param == "mapped":  # the CPU's memory, mapped into this local client
        request.getfixturevalue("on_cpu")  # the test's arrays and launches on the CPU
        a = wp.array(data, dtype=float)
        assert a._local_bytes() is not None
    else:  # the default device (cuda:0 where a GPU serves), through transfers
        a = wp.array(data, dtype=float)
        if a.device.is_cpu:  # a client that cannot map (over TCP): transfers
            assert a._local_bytes() is not None  # mapped here, as every array of a local client
            a._mapping = False
        assert a._local_bytes() is None
    return a, data.copy()


def own_rule_contiguous(view):
    return view.strides == array_view.contiguous_strides(view.shape, 4)


KEYS = [
    1, -1, 3,
    slice(1, 3), slice(None, None, 2), slice(-3, None), slice(1, 2), slice(1, 1), slice(0, 4, 3),
    (1, 2), (2, 3, 4), (-1, -2, -3), (0, slice(1, 4)), (slice(None), 1), (slice(None), -1),
    (slice(None), slice(None), 2), (slice(None), slice(1, 5, 2), slice(None), slice(0, 7, 3)),
    (slice(0, 4, 3), 2, slice(1, 6, 2)), (slice(-3, None), slice(None), -1), (1, slice(None), 3),
    (slice(1, 3), slice(2, 4), slice(1, 3), slice(2, 6)), (slice(2, 3),),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_subscript_matches_numpy(wp, base, key):
    a, data = base
    v = a[key]
    ref = data[key]
    assert isinstance(v, wp.array)
    assert v.shape == ref.shape and v.ndim == ref.ndim and v.size == ref.size and len(v) == len(ref)
    assert v.strides == ref.strides  # byte strides, as NumPy's
    assert v.dtype is wp.float32 and v.device == a.device
    assert v.is_contiguous == own_rule_contiguous(v)
    np.testing.assert_array_equal(v.numpy(), ref)
    np.testing.assert_array_equal(v.list(), ref.reshape(-1).tolist())
    assert v.capacity == ref.nbytes


def test_view_of_a_view(wp, base):
    a, data = base
    v = a[1:4][:, 2][1, ::2]
    ref = data[1:4][:, 2][1, ::2]
    assert v.shape == ref.shape and v.strides == ref.strides
    np.testing.assert_array_equal(v.numpy(), ref)
    assert v._root is a and v._ref._ref._ref is a


def test_python_writes_through_views_reach_the_base(wp, base):
    a, data = base
    a[:2].fill_(1.5)
    data[:2] = 1.5
    a[:, 1, :, ::3].zero_()
    data[:, 1, :, ::3] = 0
    col = a[2, :, 3, 1]
    values = np.arange(col.size, dtype=np.float32) * -1
    col.assign(values)
    data[2, :, 3, 1] = values
    a[3, 4].assign(np.full(a[3, 4].shape, 9.0, np.float32))
    data[3, 4] = 9.0
    np.testing.assert_array_equal(a.numpy(), data)
    # ... and base writes show in earlier views
    v = a[1, ::2, 1:3]
    a.fill_(2.0)
    np.testing.assert_array_equal(v.numpy(), np.full(v.shape, 2.0, np.float32))


def test_kernel_writes_through_views(wp, base):
    a, data = base
    col = a[1, 2, :, 3]  # strided 1-D
    wp.launch(add_100, dim=col.size, inputs=[col])
    data[1, 2, :, 3] += 100
    plane = a[2, :, 1, ::2]  # strided 2-D
    wp.launch(add_ij, dim=plane.shape, inputs=[plane])
    i, j = np.meshgrid(np.arange(plane.shape[0]), np.arange(plane.shape[1]), indexing="ij")
    data[2, :, 1, ::2] += (i * 1000 + j).astype(np.float32)
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(col.numpy(), data[1, 2, :, 3])
    # A kernel writing the base changes what views read.
    flat = a.flatten()
    wp.launch(add_100, dim=flat.size, inputs=[flat])
    np.testing.assert_array_equal(plane.numpy(), data[2, :, 1, ::2] + 100)


def test_transposed_view_as_kernel_argument(wp, base):
    a, data = base
    t = a[1, 2].transpose()  # strides swapped
    ref = data[1, 2].T
    assert t.shape == ref.shape and t.strides == ref.strides and not t.is_contiguous
    out = wp.zeros(t.shape, dtype=float)
    wp.launch(copy_2d, dim=t.shape, inputs=[t, out])
    np.testing.assert_array_equal(out.numpy(), ref)
    # Writing through the transpose.
    wp.launch(add_ij, dim=t.shape, inputs=[t])
    i, j = np.meshgrid(np.arange(t.shape[0]), np.arange(t.shape[1]), indexing="ij")
    data[1, 2].T[...] += (i * 1000 + j).astype(np.float32)
    np.testing.assert_array_equal(a.numpy(), data)


def test_numpy_of_a_mapped_view_aliases_the_base(wp, on_cpu):
    data = np.arange(1 << 16, dtype=np.float32)
    a = wp.array(data, dtype=float)
    v = a[10:1000:7]
    n = v.numpy()
    assert np.shares_memory(n, a.numpy()) and n.strides == (28,)
    wp.launch(add_100, dim=v.size, inputs=[v])
    np.testing.assert_array_equal(v.numpy(), data[10:1000:7] + 100)
    np.testing.assert_array_equal(n, data[10:1000:7] + 100)  # the earlier view follows
    n[0] = -5.0  # Python writes through the NumPy view reach the array
    assert a.numpy()[10] == -5.0
    # __array_interface__ exists for mapped arrays and views, and aliases.
    w = np.asarray(v)
    assert np.shares_memory(w, n) and w.shape == v.shape
    assert v.__array_interface__["strides"] == (28,)
    t = a.reshape((256, 256)).transpose()
    assert np.asarray(t).strides == (4, 1024)
    np.testing.assert_array_equal(np.asarray(t), a.numpy().reshape(256, 256).T)


def test_small_arrays_share_memory_as_in_warp(wp, on_cpu):
    # A local client maps small arrays too (their memory file whole, once): numpy() and
    # np.asarray() are views, as Warp's CPU arrays are, so writes through them reach kernels.
    a = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    b = wp.zeros((2, 3), dtype=float)
    assert np.shares_memory(np.asarray(a), a.numpy()) and np.shares_memory(np.asarray(b), b.numpy())
    assert np.shares_memory(np.asarray(a[2:5]), a.numpy())
    a.numpy()[3] = 30.0
    wp.launch(add_100, dim=10, inputs=[a])
    want = np.arange(10, dtype=np.float32) + 100.0
    want[3] = 130.0
    np.testing.assert_array_equal(a.numpy(), want)
    # Arrays in one memory file share one mapping of it (only the first needs a request):
    # 50 small arrays take as many mappings as they have files, and a handful of files.
    many = [wp.zeros(4, dtype=float) for _ in range(50)]
    assert all(m._local_bytes() is not None for m in many)
    files = {m._segment[0] for m in many}
    assert 0 not in files and len(files) <= 3
    assert len({id(m._mapping.mm) for m in many}) == len(files)


def test_arrays_that_are_not_mapped_have_no_array_interface(wp):
    a = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    a._mapping = False  # as for a client over TCP
    assert not hasattr(a, "__array_interface__")
    np.testing.assert_array_equal(np.asarray(a[2:5]), [2, 3, 4])  # through __array__
    assert not np.shares_memory(np.asarray(a), a.numpy())


def test_reshape_flatten_transpose_contiguous(wp, base):
    a, data = base
    r = a.reshape((-1, data.shape[-1]))
    assert r.shape == data.reshape(-1, data.shape[-1]).shape and r.is_contiguous
    np.testing.assert_array_equal(r.numpy(), data.reshape(-1, data.shape[-1]))
    f = a.flatten()
    assert f.shape == (data.size,) and f.strides == (4,)
    np.testing.assert_array_equal(f.numpy(), data.reshape(-1))
    assert f.flatten() is f
    rows = a[1:3].reshape(-1)  # a contiguous slice reshapes
    np.testing.assert_array_equal(rows.numpy(), data[1:3].reshape(-1))
    t = a.transpose((0, 2, 1, 3))
    ref = data.transpose((0, 2, 1, 3))
    assert t.shape == ref.shape and t.strides == ref.strides and not t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), ref)
    tt = a.transpose()
    assert tt.strides == data.T.strides
    np.testing.assert_array_equal(tt.numpy(), data.T)
    c = t.contiguous()
    assert c.is_contiguous and c.shape == ref.shape and c.strides == np.ascontiguousarray(ref).strides
    np.testing.assert_array_equal(c.numpy(), ref)
    c.fill_(0.0)  # a copy: the base is untouched
    np.testing.assert_array_equal(a.numpy(), data)
    assert a.contiguous() is a
    one = wp.zeros(3, dtype=float)
    assert one.transpose() is one
    with pytest.raises(RuntimeError, match="Reshaping non-contiguous arrays is unsupported"):
        t.reshape(-1)
    with pytest.raises(RuntimeError, match="Flattening non-contiguous arrays is unsupported"):
        t.flatten()
    with pytest.raises(RuntimeError, match=r"cannot reshape array of shape .* into shape \(7, 3\)"):
        a.reshape((7, 3))
    with pytest.raises(RuntimeError, match="more than one index is -1"):
        a.reshape((-1, -1))
    with pytest.raises(RuntimeError, match="Length of parameter axes"):
        a.transpose((0, 1))


def test_view_dtype(wp):
    x = np.arange(1, 13, dtype=np.float32)
    a = wp.array(x, dtype=float)
    u = a.view(wp.uint32)
    assert u.dtype is wp.uint32 and u.shape == (12,)
    np.testing.assert_array_equal(u.numpy(), x.view(np.uint32))
    m = wp.array(x.reshape(3, 4), dtype=float)
    v4 = m.view(wp.vec4)
    assert v4.shape == (3,) and v4.strides == (16,)
    np.testing.assert_array_equal(v4.numpy(), x.reshape(3, 4))
    back = v4.view(float)
    assert back.shape == (3, 4) and back.strides == (16, 4)
    q = v4.view(wp.quat)
    np.testing.assert_array_equal(q.numpy(), x.reshape(3, 4))
    mm = wp.array(x.reshape(3, 2, 2), dtype=float).view(wp.mat22)
    assert mm.shape == (3,)
    np.testing.assert_array_equal(mm.numpy(), x.reshape(3, 2, 2))
    # A strided column pair viewed as vec2 (inner stride contiguous), used in a kernel.
    pairs = m[:, 1:3].view(wp.vec2)
    assert pairs.shape == (3,) and pairs.strides == (16,)
    np.testing.assert_array_equal(pairs.numpy(), x.reshape(3, 4)[:, 1:3])
    v3 = wp.array(x, dtype=float).reshape((4, 3)).view(wp.vec3)
    out = wp.zeros(1, dtype=float)
    wp.launch(sum_vec3, dim=2, inputs=[v3[1:3], out])
    assert out.numpy()[0] == pytest.approx(x[3:9].sum())
    # Writes through a reinterpreted view.
    u[0:1].fill_(0x3F800000)
    assert a.numpy()[0] == 1.0
    with pytest.raises(TypeError, match="cannot create an array view with dtype uint16 from source dtype "
                                        "float32: source dtype has size 4 bytes, but target dtype has size 2"):
        a.view(wp.uint16)
    with pytest.raises(TypeError, match="source scalar dtype float32 has size 4 bytes"):
        v4.view(wp.float64)
    with pytest.raises(RuntimeError, match="not compatible with the requested data type vec2f"):
        m.view(wp.vec2)


def test_refusals_match_warp(wp):
    a = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    b = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float)
    for what, index in [(a, 1), (a, -1), (b, (1, 2))]:
        with pytest.raises(RuntimeError, match="Item indexing is not supported on wp.array objects"):
            what[index]
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        a[::-1]
    with pytest.raises(ValueError, match="negative steps"):
        a[3:3:-1]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[::0]
    for key in [slice(5, 2), slice(10, 10), slice(0, 20), slice(-20, None)]:
        with pytest.raises(RuntimeError, match="Invalid indexing in slice"):
            a[key]
    with pytest.raises(RuntimeError, match="Invalid indexing in slice"):
        b[3]
    for key in [Ellipsis, None, 1.0, np.int32(1), "x"]:
        with pytest.raises(RuntimeError, match="Invalid index"):
            a[key]
    with pytest.raises(IndexError, match="too many indices"):
        b[1, 2, 3]
    with pytest.raises(NotImplementedError):
        a[1] = 2.0


def test_copies_between_views(wp, base):
    a, data = base
    # Non-contiguous to non-contiguous, same shape, different strides.
    wp.copy(a[0, :, 1, ::2], a[1, :, 2, ::2])
    data[0, :, 1, ::2] = data[1, :, 2, ::2]
    wp.copy(a[0, :, 2, 1:6:2], a[1, :, 3, 0:5:2])  # steps 2 from different starts
    data[0, :, 2, 1:6:2] = data[1, :, 3, 0:5:2]
    # Contiguous into strided and back.
    src = wp.array(np.full(a[:, 1, 1, 1].shape, -7.0, np.float32), dtype=float)
    wp.copy(a[:, 1, 1, 1], src)
    data[:, 1, 1, 1] = -7.0
    dst = wp.empty(a[2, :, :, 0].shape, dtype=float)
    wp.copy(dst, a[2, :, :, 0])
    np.testing.assert_array_equal(dst.numpy(), data[2, :, :, 0])
    np.testing.assert_array_equal(a.numpy(), data)
    # A transpose copied into a contiguous array of its shape.
    t = a[3, 1].transpose()
    c = wp.empty(t.shape, dtype=float)
    wp.copy(c, t)
    np.testing.assert_array_equal(c.numpy(), data[3, 1].T)
    with pytest.raises(RuntimeError, match="Incompatible array shapes"):
        wp.copy(a[0, 0:5, 1, 0:4], a[0, 0:4, 1, 0:5])  # as many elements, another shape
    with pytest.raises(RuntimeError, match="only supported for 1-D non-contiguous arrays"):
        wp.copy(a[0, :, 1, ::2], a[1, 1, 2, :])  # Warp's message when the sizes differ


def test_copy_offsets_and_counts(wp):
    x = np.arange(20, dtype=np.float32)
    src = wp.array(x, dtype=float)
    dst = wp.zeros(20, dtype=float)
    wp.copy(dst, src, dest_offset=5, src_offset=2, count=4)
    want = np.zeros(20, np.float32)
    want[5:9] = x[2:6]
    np.testing.assert_array_equal(dst.numpy(), want)
    # Contiguous arrays of different shapes copy as flat ranges (Warp's rule).
    m = wp.zeros((4, 5), dtype=float)
    wp.copy(m, src, dest_offset=3, count=10)
    want_m = np.zeros(20, np.float32)
    want_m[3:13] = x[:10]
    np.testing.assert_array_equal(m.numpy().reshape(-1), want_m)
    # Same-size element types copy their bytes.
    ints = wp.zeros(20, dtype=wp.int32)
    wp.copy(ints, src)
    np.testing.assert_array_equal(ints.numpy(), x.view(np.int32))
    # 1-D strided arrays take offsets and counts.
    wp.copy(dst[::2], src[1::2], dest_offset=1, src_offset=2, count=3)
    want[2:8:2] = x[5:11:2]
    np.testing.assert_array_equal(dst.numpy(), want)
    with pytest.raises(RuntimeError, match="Source offset must be non-negative"):
        wp.copy(dst, src, src_offset=-1)
    with pytest.raises(RuntimeError, match="Copy count must be non-negative"):
        wp.copy(dst, src, count=-1)
    with pytest.raises(RuntimeError, match="must be integers"):
        wp.copy(dst, src, count=1.5)
    with pytest.raises(RuntimeError, match="is larger than source size"):
        wp.copy(dst, src, src_offset=15, count=10)
    with pytest.raises(RuntimeError, match="is larger than destination size"):
        wp.copy(dst, src, dest_offset=15, count=10)
    with pytest.raises(RuntimeError, match="Incompatible array data types"):
        wp.copy(wp.zeros(20, dtype=wp.float64), src)
    with pytest.raises(RuntimeError, match="only supported for 1-D non-contiguous arrays"):
        wp.copy(m.transpose(), m.transpose(), count=2)


def test_strided_transfers_over_grpc_chunks(wp, monkeypatch):
    """Views larger than a 2 MiB chunk, unmapped: the Download RPC gathers
    and the Upload RPC scatters across chunk boundaries."""
    monkeypatch.setattr(rt(), "share_path", None)  # a TCP client: nothing mapped
    x = np.arange(3 << 20, dtype=np.float32)  # 12 MiB
    a = wp.array(x, dtype=float)
    assert a._local_bytes() is None
    v = a.reshape((1 << 10, 3 << 10))[:, 5::2]
    ref = x.reshape(1 << 10, 3 << 10)[:, 5::2]
    assert v.capacity > 2 * (2 << 20)
    np.testing.assert_array_equal(v.numpy(), ref)
    new = -np.arange(ref.size, dtype=np.float32).reshape(ref.shape)
    v.assign(new)
    x.reshape(1 << 10, 3 << 10)[:, 5::2] = new
    np.testing.assert_array_equal(a.numpy(), x)
    # A small strided view over the command socket's download.
    np.testing.assert_array_equal(a[100:200:7].numpy(), x[100:200:7])


def test_views_count_as_arrays_and_go_when_freed(wp, raw):
    stub, session = raw

    def arrays_used():
        usage = stub.GetUsage(runtime_pb2.GetUsageRequest(session=session))
        return next(q.used for q in usage.quotas if q.resource == "arrays")

    a = wp.zeros((100, 100), dtype=float)
    gc.collect()
    wp.synchronize()  # frees of earlier tests' arrays are done
    before = arrays_used()
    views = [a[i] for i in range(10)] + [a[:, i] for i in range(10)]
    assert arrays_used() == before + 20
    del views
    gc.collect()
    wp.synchronize()
    assert arrays_used() == before


def test_views_go_over_the_command_socket_in_turn_with_pending_submits(wp, monkeypatch):
    """A local client makes views with a command-socket frame; a Submit sent
    without waiting (a full batch) is answered first, and its commands run
    before the view is read."""
    from warpd import config

    r = rt()
    assert r.commands is not None
    monkeypatch.setattr(config, "max_batch_commands", 2)
    a = wp.zeros(64, dtype=float)
    for k in range(5):  # full batches: Submits in flight, not waited for
        a[k * 4:(k + 1) * 4].fill_(float(k + 1))
    sent = r.commands.requests
    v = a[2:18]
    assert r.commands.requests >= sent + 1
    want = np.zeros(64, np.float32)
    for k in range(5):
        want[k * 4:(k + 1) * 4] = k + 1
    np.testing.assert_array_equal(v.numpy(), want[2:18])
    np.testing.assert_array_equal(a.numpy(), want)


def test_empty_arrays_have_an_array_interface(wp):
    a = wp.zeros((1, 0), dtype=wp.vec2f)
    assert a.__array_interface__["data"][0] != 0
    na = np.asarray(a)
    assert na.shape == (1, 0, 2) and na.dtype == np.float32 and na.strides == (0, 8, 4)


def test_array_from_an_array_with_another_dtype(wp):
    ints = wp.array(np.arange(12, dtype=np.int32), dtype=wp.int32).reshape((-1, 3))
    v = wp.array(ints, shape=ints.shape[0], dtype=wp.vec3i)
    assert v.dtype is wp.vec3i and v.shape == (4,) and v.strides == (12,)
    np.testing.assert_array_equal(v.numpy(), np.arange(12).reshape(4, 3))
    # Warp's inference: a last dimension that is a multiple of the length, one element as (1,).
    f = wp.array(np.arange(24, dtype=np.float32).reshape(4, 6), dtype=float)
    assert wp.array(f, dtype=wp.vec3).shape == (4, 2)
    assert wp.array(f, dtype=wp.vec3, shape=(2, 2, 2)).shape == (2, 2, 2)
    m = wp.array(np.arange(4, dtype=np.float32).reshape(2, 2), dtype=wp.mat22)
    assert m.shape == (1,)
    np.testing.assert_array_equal(m.numpy(), np.arange(4).reshape(1, 2, 2))


def test_indexed_arrays_in_python_scope(wp):
    x = np.arange(60, dtype=np.float32).reshape(5, 12)
    a = wp.array(x, dtype=float)
    rows = wp.array([4, 0, 2], dtype=wp.int32)
    cols = wp.array([11, 1], dtype=wp.int32)
    r = a[rows]
    assert isinstance(r, wp.indexedarray) and r.shape == (3, 12) and not r.is_contiguous
    np.testing.assert_array_equal(r.numpy(), x[[4, 0, 2]])
    rc = a[rows, cols]  # outer indexing, as in Warp
    np.testing.assert_array_equal(rc.numpy(), x[np.ix_([4, 0, 2], [11, 1])])
    c = a[1:4, cols]  # a slice and an index array
    np.testing.assert_array_equal(c.numpy(), x[1:4][:, [11, 1]])
    assert wp.indexedarray(a, [None, cols]).shape == (5, 2)
    # Writes reach the data array.
    rc.fill_(-1.0)
    x[np.ix_([4, 0, 2], [11, 1])] = -1.0
    c.assign(np.full((3, 2), 7.0, np.float32))
    x[1:4][:, [11, 1]] = 7.0
    np.testing.assert_array_equal(a.numpy(), x)
    out = wp.empty((3, 12), dtype=float)
    wp.copy(out, r)
    np.testing.assert_array_equal(out.numpy(), x[[4, 0, 2]])
    wp.copy(r, wp.zeros((3, 12), dtype=float))
    x[[4, 0, 2]] = 0.0
    np.testing.assert_array_equal(a.numpy(), x)
    np.testing.assert_array_equal(r.contiguous().numpy(), x[[4, 0, 2]])
    with pytest.raises(ValueError, match="Index array must use int32"):
        wp.indexedarray(a, wp.array([1], dtype=wp.int64))
    with pytest.raises(IndexError, match="out of range"):
        a[wp.array([7], dtype=wp.int32)].numpy()
    with pytest.raises(RuntimeError, match="Incompatible array shapes"):
        wp.copy(r, wp.zeros((2, 12), dtype=float))
    # A mapped data array is indexed in place.
    big = wp.array(np.arange(1 << 16, dtype=np.float32), dtype=float)
    picked = big[wp.array([5, 70000 - 10000, 3], dtype=wp.int32)]
    picked.fill_(0.5)
    assert big.numpy()[[5, 60000, 3]].tolist() == [0.5, 0.5, 0.5]


# ------------------------------------------------------------- raw requests

F32 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)
F64 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT64)


def make_array(stub, session, n=64, values=None):
    h = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=session, device="cpu", dtype=F32, shape=[n],
                                                        init=runtime_pb2.ARRAY_INIT_ZEROS)).handle
    if values is not None:
        stub.Upload(iter([runtime_pb2.UploadChunk(session=session, handle=h, data=values.tobytes())]))
    return h


def download(stub, session, handle):
    return b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(session=session, handle=handle)))


def create_view(stub, session, base, offset, shape, strides, dtype=None):
    req = runtime_pb2.CreateViewRequest(session=session, base=base, offset_bytes=offset, shape=shape,
                                        strides=strides)
    if dtype is not None:
        req.dtype.CopyFrom(dtype)
    return stub.CreateView(req)


def test_a_view_outlives_its_freed_base(wp, raw, serving):
    stub, session = raw
    x = np.arange(64, dtype=np.float32)
    base = make_array(stub, session, values=x)
    view = create_view(stub, session, base, 8, [10], [12])  # x[2:32:3]
    assert view.size_bytes == 40 and not view.contiguous
    stub.FreeArray(runtime_pb2.FreeArrayRequest(session=session, handle=base))
    with pytest.raises(grpc.RpcError) as e:
        download(stub, session, base)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    np.testing.assert_array_equal(np.frombuffer(download(stub, session, view.handle), np.float32), x[2:32:3])
    # Fill and a view of the view still work on the memory.
    value = np.float32(5.0).tobytes()
    stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True, commands=[
        runtime_pb2.Command(fill=runtime_pb2.FillArray(array=view.handle, value=value))]))
    inner = create_view(stub, session, view.handle, 0, [20], [4])  # widens back to the root's bytes
    got = np.frombuffer(download(stub, session, inner.handle), np.float32)
    want = x[2:22].copy()
    want[::3] = 5.0
    np.testing.assert_array_equal(got, want)
    for h in (view.handle, inner.handle):
        stub.FreeArray(runtime_pb2.FreeArrayRequest(session=session, handle=h))
    assert serving()


HOSTILE = [
    ("offset past the end", dict(offset=260, shape=[1], strides=[4]), "starts past the end"),
    ("offset overflow", dict(offset=(1 << 64) - 4, shape=[1], strides=[4]), "starts past the end"),
    ("last element past the end", dict(offset=4, shape=[64], strides=[4]), "reaches past the end"),
    ("stride past the end", dict(offset=0, shape=[2], strides=[256]), "reaches past the end"),
    ("reach overflow", dict(offset=0, shape=[3, 3], strides=[(1 << 62), (1 << 62)]), "reaches past the end"),
    ("huge stride", dict(offset=0, shape=[2], strides=[(1 << 63) - 4]), "reaches past the end"),
    ("negative stride", dict(offset=252, shape=[4], strides=[-4]), "negative"),
    ("misaligned stride", dict(offset=0, shape=[4], strides=[6]), "alignment"),
    ("misaligned offset", dict(offset=2, shape=[4], strides=[4]), "alignment"),
    ("no dims", dict(offset=0, shape=[], strides=[]), "1 to 4 dimensions"),
    ("five dims", dict(offset=0, shape=[1] * 5, strides=[4] * 5), "1 to 4 dimensions"),
    ("strides count", dict(offset=0, shape=[4, 4], strides=[16]), "needs 2 strides"),
    ("negative extent", dict(offset=0, shape=[-1], strides=[4]), "must be in [0,"),
    ("extent past int32", dict(offset=0, shape=[1 << 31], strides=[0]), "must be in [0,"),
    ("element count overflow", dict(offset=0, shape=[(1 << 31) - 1] * 4, strides=[0] * 4), "too many elements"),
    ("huge broadcast", dict(offset=0, shape=[(1 << 31) - 1, (1 << 31) - 1], strides=[0, 0]), "largest array"),
    ("float64 misaligned", dict(offset=4, shape=[2], strides=[8], dtype=F64), "alignment"),
]


@pytest.mark.parametrize("case", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_create_view_is_invalid_argument(wp, raw, serving, case):
    _, args, message = case
    stub, session = raw
    base = make_array(stub, session)  # 256 bytes
    with pytest.raises(grpc.RpcError) as e:
        create_view(stub, session, base, args["offset"], args["shape"], args["strides"], args.get("dtype"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert message in e.value.details(), e.value.details()
    assert serving()


def test_a_dtype_holding_an_array_is_refused(wp, raw, serving):
    stub, session = raw
    base = make_array(stub, session)
    arr = ir_pb2.TypeRef()
    arr.array.dtype.CopyFrom(F32)
    arr.array.ndim = 1
    with pytest.raises(grpc.RpcError) as e:
        create_view(stub, session, base, 0, [4], [64], dtype=arr)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert serving()


def test_foreign_and_unknown_handles_are_not_found(wp, raw, warpd_daemon, serving):
    stub, session = raw
    from conftest import open_channel

    channel = open_channel(warpd_daemon.address)
    other = runtime_pb2_grpc.RuntimeStub(channel)
    try:
        s2 = other.OpenSession(runtime_pb2.OpenSessionRequest(client_name="other")).session
        theirs = make_array(other, s2)
        mine = make_array(stub, session)
        for sess, handle in [(session, theirs), (session, 12345), (s2, mine)]:
            with pytest.raises(grpc.RpcError) as e:
                create_view(stub, sess, handle, 0, [4], [4])
            assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            create_view(stub, "no-such-session", mine, 0, [4], [4])
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        other.CloseSession(runtime_pb2.CloseSessionRequest(session=s2))
    finally:
        channel.close()
    assert serving()


def test_strided_views_are_neither_persisted_nor_shared(wp, raw, on_cpu):
    stub, session = raw
    a = wp.array(np.arange(1 << 16, dtype=np.float32), dtype=float)
    v = a[::2]
    with pytest.raises(wp.WarpdError) as e:
        wp.persistent.save("strided-view", v)
    assert "contiguous" in str(e.value)
    # A contiguous view persists as its own bytes.
    wp.persistent.save("view-rows", a[16:48])
    try:
        loaded = wp.persistent.load("view-rows")
        assert loaded.shape == (32,)
        np.testing.assert_array_equal(loaded.numpy(), np.arange(16, 48, dtype=np.float32))
    finally:
        wp.persistent.delete("view-rows")
    from warpd import local_map

    r = rt()
    assert local_map.map_array(r.share_path, r.token, r.session, v.handle, v.capacity) is None
    m = local_map.map_array(r.share_path, r.token, r.session, a[1024:].handle, a[1024:].capacity)
    assert m is not None and len(m.mm) >= (1 << 18) - 4096
