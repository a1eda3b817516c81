"""Arrays: every dtype and rank round trip, constructors, fills, copies, frees."""

import gc

import numpy as np
import pytest

import warpd as wp
from warpd import context

SCALARS = [
    (wp.bool, np.bool_), (wp.int8, np.int8), (wp.uint8, np.uint8), (wp.int16, np.int16),
    (wp.uint16, np.uint16), (wp.int32, np.int32), (wp.uint32, np.uint32), (wp.int64, np.int64),
    (wp.uint64, np.uint64), (wp.float16, np.float16), (wp.float32, np.float32),
    (wp.float64, np.float64),
]


def sample(np_dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(np_dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        flat = v.reshape(-1)
        if flat.size >= 2:
            flat[0], flat[1] = info.min, info.max
        return v
    return (rng.standard_normal(shape) * 100).astype(dt)


@pytest.mark.parametrize("wtype,np_dtype", SCALARS, ids=[t._wp_name_ for t, _ in SCALARS])
def test_scalar_dtype_round_trip(wp, wtype, np_dtype):
    data = sample(np_dtype, (37,))
    a = wp.array(data, dtype=wtype)
    assert a.dtype is wtype and a.shape == (37,) and a.size == 37 and a.ndim == 1
    got = a.numpy()
    assert got.dtype == np.dtype(np_dtype)
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("wtype,np_dtype", SCALARS, ids=[t._wp_name_ for t, _ in SCALARS])
def test_scalar_dtype_inferred_from_numpy(wp, wtype, np_dtype):
    data = sample(np_dtype, (5, 3), seed=1)
    a = wp.array(data)
    assert a.dtype is wtype and a.shape == (5, 3)
    np.testing.assert_array_equal(a.numpy(), data)


@pytest.mark.parametrize("vtype", [wp.vec2, wp.vec3, wp.vec4, wp.vec3d, wp.vec2h, wp.vec4ub,
                                   wp.vec3i, wp.types.vector(5, wp.float64)],
                         ids=lambda t: t.__name__)
def test_vector_dtype_round_trip(wp, vtype):
    n = vtype._length_
    data = sample(vtype._wp_scalar_type_._np_dtype_, (11, n), seed=2)
    a = wp.array(data, dtype=vtype)
    assert a.shape == (11,)
    np.testing.assert_array_equal(a.numpy(), data)
    lst = a.list()
    assert isinstance(lst[0], vtype) and list(lst[3]) == list(data[3])


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 3, 2, 5)])
def test_nd_round_trip(wp, shape):
    data = sample(np.float32, shape, seed=3)
    a = wp.array(data, dtype=float)
    assert a.shape == shape and a.ndim == len(shape) and a.size == data.size
    assert len(a) == shape[0]
    itemsize = 4
    expected_strides = tuple(int(np.prod(shape[k + 1:])) * itemsize for k in range(len(shape)))
    assert a.strides == expected_strides
    np.testing.assert_array_equal(a.numpy(), data)
    v = wp.array(np.stack([data] * 3, axis=-1), dtype=wp.vec3)
    assert v.shape == shape
    np.testing.assert_array_equal(v.numpy()[..., 1], data)


def test_large_array_streams_in_chunks(wp):
    data = np.random.default_rng(4).standard_normal(3_000_000).astype(np.float32)  # ~11.4 MiB
    a = wp.array(data, dtype=float)
    np.testing.assert_array_equal(a.numpy(), data)


def test_list_and_vector_inputs(wp):
    a = wp.array([1.5, 2.5, -3.0], dtype=float)
    np.testing.assert_array_equal(a.numpy(), np.array([1.5, 2.5, -3.0], dtype=np.float32))
    v = wp.array([wp.vec3(1, 2, 3), wp.vec3(4, 5, 6)])
    assert v.dtype is wp.vec3 and v.shape == (2,)
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3], [4, 5, 6]])
    i = wp.array([1, 2, 3], dtype=int)
    assert i.dtype is wp.int32 and i.numpy().dtype == np.int32


def test_zeros_empty_full_ones(wp):
    z = wp.zeros((4, 3), dtype=wp.float64)
    np.testing.assert_array_equal(z.numpy(), np.zeros((4, 3)))
    e = wp.empty(10, dtype=wp.int16)
    assert e.shape == (10,) and e.numpy().dtype == np.int16
    f = wp.full(8, 1.23, dtype=float)
    np.testing.assert_array_equal(f.numpy(), np.full(8, 1.23, dtype=np.float32))
    fi = wp.full((2, 2), 7)
    assert fi.dtype is wp.int32
    np.testing.assert_array_equal(fi.numpy(), np.full((2, 2), 7))
    fv = wp.full(3, wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(fv.numpy(), np.tile([1.0, 2.0, 3.0], (3, 1)))
    o = wp.ones(5, dtype=wp.uint8)
    np.testing.assert_array_equal(o.numpy(), np.ones(5, dtype=np.uint8))
    legacy = wp.zeros(n=6, dtype=float)
    assert legacy.shape == (6,)


def test_like_constructors_clone_copy_to(wp):
    src_np = sample(np.float32, (6, 2), seed=5)
    src = wp.array(src_np, dtype=float)
    assert wp.zeros_like(src).shape == (6, 2)
    np.testing.assert_array_equal(wp.zeros_like(src).numpy(), np.zeros((6, 2), np.float32))
    assert wp.empty_like(src).dtype is wp.float32
    np.testing.assert_array_equal(wp.full_like(src, 2.0).numpy(), np.full((6, 2), 2.0, np.float32))
    c = wp.clone(src)
    np.testing.assert_array_equal(c.numpy(), src_np)
    dst = wp.empty_like(src)
    wp.copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), src_np)
    assert src.to(src.device) is src and src.to(str(src.device)) is src
    again = wp.array(src)
    np.testing.assert_array_equal(again.numpy(), src_np)


def test_fill_zero_assign(wp):
    a = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    a.fill_(4.5)
    np.testing.assert_array_equal(a.numpy(), np.full(10, 4.5, np.float32))
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), np.zeros(10, np.float32))
    a.assign(np.arange(10, 20, dtype=np.float64))
    np.testing.assert_array_equal(a.numpy(), np.arange(10, 20, dtype=np.float32))
    b = wp.zeros(10, dtype=float)
    b.assign(a)
    np.testing.assert_array_equal(b.numpy(), np.arange(10, 20, dtype=np.float32))
    v = wp.zeros(4, dtype=wp.vec3)
    v.fill_(wp.vec3(1.0, -1.0, 0.5))
    np.testing.assert_array_equal(v.numpy(), np.tile([1.0, -1.0, 0.5], (4, 1)).astype(np.float32))
    i8 = wp.zeros(3, dtype=wp.int8)
    i8.fill_(-7)
    np.testing.assert_array_equal(i8.numpy(), np.full(3, -7, np.int8))


def test_from_numpy_infers_vectors(wp):
    a = np.ones((10, 3), dtype=np.float32)
    v = wp.from_numpy(a, dtype=wp.vec3, device="cpu")
    assert v.dtype is wp.vec3 and v.shape == (10,)
    w = wp.from_numpy(a)
    assert w.dtype is wp.vec3 and w.shape == (10,)
    s = wp.from_numpy(np.arange(4, dtype=np.float64))
    assert s.dtype is wp.float64
    np.testing.assert_array_equal(s.numpy(), np.arange(4))


def test_zero_size_array(wp):
    a = wp.zeros(0, dtype=float)
    assert a.shape == (0,) and a.size == 0
    assert a.numpy().shape == (0,)


def test_device_properties(wp):
    a = wp.zeros(3, dtype=float, device="cpu")
    assert a.device == "cpu" and str(a.device) == "cpu"
    assert a.device.is_cpu and not a.device.is_cuda
    # As in Warp: the alias names the device, the name is the product (the CPU model).
    assert wp.get_device("cpu").alias == "cpu" and repr(wp.get_device("cpu")) == "'cpu'"
    cpu = wp.get_device("cpu")
    assert cpu.arch == 0 and cpu.sm_count == 0 and cpu.uuid is None and not cpu.is_cuda
    assert not (cpu.is_uva or cpu.is_mempool_supported or cpu.is_mempool_enabled or cpu.is_ipc_supported)
    assert any(d.alias == "cpu" for d in wp.get_devices())
    from warpd.v1 import runtime_pb2
    from warpd.context import runtime

    info = runtime().call("GetServerInfo", runtime_pb2.GetServerInfoRequest())
    cpu_model = next(d.alias for d in info.devices if d.name == "cpu")
    assert wp.get_device("cpu").name == cpu_model
    assert wp.get_device(wp.get_device("cpu").alias) is wp.get_device("cpu")


def test_bad_shapes_and_data(wp):
    with pytest.raises(ValueError, match="1 to 4"):
        wp.zeros((1, 2, 3, 4, 5), dtype=float)
    with pytest.raises(ValueError, match="negative"):
        wp.zeros((-1,), dtype=float)
    with pytest.raises(ValueError, match="trailing dimension"):
        wp.array(np.zeros((4, 2), np.float32), dtype=wp.vec3)
    with pytest.raises(TypeError):
        wp.zeros(3, dtype=str)
    if not wp.is_cuda_available():
        with pytest.raises(wp.DeviceError, match="no such CUDA device"):
            wp.zeros(3, dtype=float, device="cuda")


def test_frees_are_batched(wp):
    rt = context.runtime()
    stream = rt.stream(wp.get_device().alias)  # the default device's (cuda:0 where a GPU runs work)
    wp.synchronize()
    submits = stream.submits
    for _ in range(50):
        a = wp.zeros(16, dtype=float)
        del a
    gc.collect()
    assert stream.submits == submits  # nothing sent yet
    wp.synchronize()
    assert stream.submits == submits + 1  # 50 frees in one Submit
    assert not stream._frees
