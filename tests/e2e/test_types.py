"""Value types: vectors, matrices, quaternions, transformations and spatial types,
in Python scope, in arrays, as kernel arguments and constants, and in kernels.

Every value is checked against an independent reference: NumPy, hand-computed
numbers, or results real Warp 1.19 gives in Python scope (noted where used).
The kernels of this file form one module (compiled once).
"""

import ctypes
import math

import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2

from ir_helpers import calls

mat23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)
mat32h = wp.types.matrix((3, 2), wp.float16)
mat23i = wp.types.matrix((2, 3), wp.int32)
vec5d = wp.types.vector(length=5, dtype=wp.float64)
vec1b = wp.types.vector(1, wp.int8)
vec64 = wp.types.vector(64, wp.float32)
mat16x64 = wp.types.matrix((16, 64), wp.float32)  # 1024 elements, the largest matrix
quatd_t = wp.types.quaternion(dtype=wp.float64)
xformh = wp.types.transformation(dtype=wp.float16)

# Captured from module scope as kernel constants.
M_CONST = wp.mat22(1.0, 2.0, 3.0, 4.0)
MI_CONST = mat23i(1, -2, 3, -4, 5, -6)
Q_CONST = wp.quatd(0.0, 0.0, 0.6, 0.8)
T_CONST = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0))
SV_CONST = wp.spatial_vectord(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
V5_CONST = vec5d(1.0, 2.0, 3.0, 4.0, 5.0)
H_CONST = mat32h(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)


# ------------------------------------------------------- NumPy references


def np_quat_mul(a, b):
    """Hamilton product of (..., 4) arrays in (x, y, z, w) order."""
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    w = aw * bw - np.sum(av * bv, axis=-1, keepdims=True)
    return np.concatenate([v, w], axis=-1)


def np_quat_matrix(q):
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) (x, y, z, w)."""
    x, y, z, w = (q[..., k] for k in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def unit_quats(rng, n):
    q = rng.standard_normal((n, 4))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


# ------------------------------------------------------------------ kernels


@wp.func
def scale_h(m: mat32h, s: wp.float16) -> mat32h:
    return m * s


@wp.kernel
def mat_ops(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3), s: float,
            mv: wp.array(dtype=wp.vec3), vm: wp.array(dtype=wp.vec3), mm: wp.array(dtype=wp.mat33),
            mt: wp.array(dtype=wp.mat33), ms: wp.array(dtype=wp.mat33),
            rows: wp.array(dtype=wp.mat33), det: wp.array(dtype=float),
            elems: wp.array2d(dtype=float), g: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    a = m[i]
    mv[i] = a * v[i]
    vm[i] = v[i] @ a
    mm[i] = a @ a
    mt[i] = wp.transpose(a)
    ms[i] = a * s - a / 2.0 + wp.identity(n=3, dtype=float)
    rows[i] = wp.matrix_from_rows(a[2], a[0], a[1])
    det[i] = wp.determinant(a)
    elems[i, 0] = a[0, 1]
    elems[i, 1] = a[2][0]
    b = a
    b[1] = v[i]
    b[0, 2] = 9.0
    elems[i, 2] = b[1, 1] + b[0][2]
    x = mat23(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    g[i] = x @ v[i]


@wp.kernel
def quat_ops(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3), t: wp.array(dtype=wp.transform),
             rot: wp.array(dtype=wp.vec3), qq: wp.array(dtype=wp.quat), qinv: wp.array(dtype=wp.quat),
             qm: wp.array(dtype=wp.mat33), tp: wp.array(dtype=wp.vec3), tv: wp.array(dtype=wp.vec3),
             tt: wp.array(dtype=wp.transform), parts: wp.array2d(dtype=float)):
    i = wp.tid()
    rot[i] = wp.quat_rotate(q[i], v[i])
    qq[i] = q[i] * q[i]
    qinv[i] = wp.quat_inverse(q[i])
    qm[i] = wp.quat_to_matrix(q[i])
    tp[i] = wp.transform_point(t[i], v[i])
    tv[i] = wp.transform_vector(t[i], v[i])
    tt[i] = wp.transform_multiply(t[i], t[i])
    parts[i, 0] = q[i].x
    parts[i, 1] = q[i].w
    parts[i, 2] = wp.transform_get_translation(t[i])[1]
    parts[i, 3] = t[i][6]


@wp.kernel
def constructors(out_v5: wp.array(dtype=vec5d), out_vk: wp.array(dtype=vec5d),
                 out_m: wp.array(dtype=mat23), out_mh: wp.array(dtype=mat32h),
                 out_qd: wp.array(dtype=quatd_t), out_xh: wp.array(dtype=xformh),
                 out_id: wp.array(dtype=wp.mat44d), out_sv: wp.array(dtype=wp.spatial_vectord),
                 out_sm: wp.array(dtype=wp.spatial_matrix), out_mi: wp.array(dtype=mat23i),
                 out_c: wp.array(dtype=wp.mat22), out_t: wp.array(dtype=wp.transform),
                 out_rows: wp.array(dtype=wp.mat22d), out_spv: wp.array(dtype=wp.spatial_vector)):
    out_v5[0] = vec5d(wp.float64(1.0), wp.float64(2.0), wp.float64(3.0), wp.float64(4.0),
                      wp.float64(5.0)) + V5_CONST
    out_vk[0] = wp.vector(wp.float64(2.5), length=5) + wp.vector(dtype=wp.float64, length=5)
    out_m[0] = wp.matrix(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, shape=(2, 3), dtype=wp.float32)
    out_mh[0] = scale_h(H_CONST, wp.float16(2.0))
    out_qd[0] = Q_CONST * wp.quaternion(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0),
                                        wp.float64(2.0))
    out_xh[0] = xformh(wp.vec3h(wp.float16(1.0), wp.float16(2.0), wp.float16(3.0)),
                       wp.quath(wp.float16(0.0), wp.float16(0.0), wp.float16(0.0), wp.float16(1.0)))
    out_id[0] = wp.identity(n=4, dtype=wp.float64) * wp.float64(3.0)
    out_sv[0] = SV_CONST
    out_sm[0] = wp.spatial_matrix() + wp.identity(n=6, dtype=float)
    out_mi[0] = MI_CONST
    out_c[0] = M_CONST * 2.0
    out_t[0] = T_CONST
    out_rows[0] = wp.matrix_from_rows(wp.vec2d(wp.float64(1.0), wp.float64(2.0)),
                                      wp.vec2d(wp.float64(3.0), wp.float64(4.0)))
    out_spv[0] = wp.spatial_vector(wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))


@wp.kernel
def value_args(a: wp.mat33d, b: mat23, c: quatd_t, d: xformh, e: wp.spatial_vector,
               f: vec1b, g: vec64, h: mat16x64, i8: wp.int8, u64: wp.uint64, hf: wp.float16,
               flag: wp.bool, mi: mat23i,
               oa: wp.array(dtype=wp.mat33d), ob: wp.array(dtype=mat23), oc: wp.array(dtype=quatd_t),
               od: wp.array(dtype=xformh), oe: wp.array(dtype=wp.spatial_vector),
               of: wp.array(dtype=vec1b), og: wp.array(dtype=vec64), oh: wp.array(dtype=mat16x64),
               oi8: wp.array(dtype=wp.int8), ou64: wp.array(dtype=wp.uint64),
               ohf: wp.array(dtype=wp.float16), oflag: wp.array(dtype=wp.bool),
               omi: wp.array(dtype=mat23i)):
    oa[0] = a
    ob[0] = b
    oc[0] = c
    od[0] = d
    oe[0] = e
    of[0] = f
    og[0] = g
    oh[0] = h
    oi8[0] = i8
    ou64[0] = u64
    ohf[0] = hf
    oflag[0] = flag
    omi[0] = mi


# ------------------------------------------------------------ Python scope


def test_named_types_and_generic_types_are_one_family():
    assert wp.vec3.__name__ == "vec3f" and wp.mat33d.__name__ == "mat33d"
    assert wp.quat.__name__ == "quatf" and wp.transformh.__name__ == "transformh"
    assert wp.spatial_vector.__name__ == "spatial_vectorf"
    assert wp.spatial_matrixd.__name__ == "spatial_matrixd"
    assert wp.types.vector(3, float) is wp.vec3 is wp.vec3f
    assert wp.types.vector(3, wp.float64) is wp.vec3d
    assert wp.types.matrix((3, 3), wp.float64) is wp.mat33d
    assert wp.types.vector(6, wp.float16) is wp.spatial_vectorh
    assert wp.types.matrix(shape=(6, 6), dtype=wp.float32) is wp.spatial_matrix
    assert wp.types.quaternion(dtype=wp.float64) is wp.quatd
    assert wp.types.transformation(wp.float32) is wp.transform is wp.transformf
    for suffix, st in [("b", wp.int8), ("ub", wp.uint8), ("s", wp.int16), ("us", wp.uint16),
                       ("i", wp.int32), ("ui", wp.uint32), ("l", wp.int64), ("ul", wp.uint64),
                       ("h", wp.float16), ("f", wp.float32), ("d", wp.float64)]:
        for n in (2, 3, 4):
            assert getattr(wp, f"vec{n}{suffix}") is wp.types.vector(n, st)
            assert getattr(wp, f"mat{n}{n}{suffix}") is wp.types.matrix((n, n), st)
    # Warp's class attributes.
    assert wp.mat22._shape_ == (2, 2) and wp.mat22._length_ == 4
    assert wp.mat22._wp_scalar_type_ is wp.float32
    assert wp.quat._length_ == 4 and wp.transform._length_ == 7 and vec5d._length_ == 5
    # Limits: the daemon's (vectors up to 1024 components, matrices 64 per side and 1024
    # elements); a vector of length 0 exists as in Warp (t[3:3]) but kernels refuse it.
    assert vec64._length_ == 64 and mat16x64._length_ == 1024
    assert wp.types.vector(1024, wp.float16)._length_ == 1024 and wp.types.vector(0, float)._length_ == 0
    with pytest.raises(ValueError, match="0, 1024"):
        wp.types.vector(1025, wp.float32)
    with pytest.raises(ValueError, match="out of range"):
        wp.types.matrix((64, 17), wp.float32)
    # bool vectors and matrices exist, as in Warp (no vec3bool name: Warp has none)
    assert wp.types.vector(3, wp.bool)._wp_scalar_type_ is wp.bool
    assert wp.types.matrix((2, 2), wp.bool)._wp_scalar_type_ is wp.bool
    with pytest.raises(TypeError, match="float"):
        wp.types.quaternion(wp.int32)


def test_vector_values():
    v = wp.vec3(1, 2, 3)
    assert (v.x, v.y, v.z) == (1.0, 2.0, 3.0) and v[-1] == 3.0 and len(v) == 3
    assert repr(v) == "vec3f([1.0, 2.0, 3.0])" and str(v) == "[1.0, 2.0, 3.0]"
    assert wp.vec3() == [0, 0, 0] and wp.vec3(2.5) == (2.5, 2.5, 2.5)
    assert wp.vec3([4, 5, 6]) == wp.vec3(np.array([4, 5, 6]))
    assert wp.vec3(wp.vec3d(1, 2, 3)) == v  # constructors convert between dtypes
    assert v[1:] == wp.vec2(2, 3) and type(v[1:]) is wp.vec2
    a = np.array(v)
    assert a.dtype == np.float32 and a.shape == (3,)
    np.testing.assert_array_equal(np.array(wp.vec4(1, 2, 3, 4) * 2.0 - wp.vec4(1, 1, 1, 1)),
                                  [1, 3, 5, 7])
    np.testing.assert_array_equal(np.array(2.0 * v / 4.0 + 1.0), [1.5, 2.0, 2.5])
    np.testing.assert_array_equal(np.array(-v), [-1, -2, -3])
    np.testing.assert_allclose(np.array(2.0 / v), 2.0 / np.array([1, 2, 3], np.float32))
    assert np.float32(2.0) * v == wp.vec3(2, 4, 6)  # NumPy scalars defer to the vector
    v.y = 7
    v[2] = 8
    assert v == [1, 7, 8]
    assert wp.vec3(1, 2, 3) == wp.vec3d(1, 2, 3)  # value equality, as in Warp
    with pytest.raises(AttributeError):
        wp.vec2().z
    with pytest.raises(ValueError, match=r"^Invalid number of arguments in vector constructor, expected 3 "
                                         r"elements, got 2$"):
        wp.vec3(1, 2)
    with pytest.raises(RuntimeError, match=r"^Couldn't find a function 'add' compatible with the arguments "
                                           r"'vec3f, vec3d'$"):
        wp.vec3() + wp.vec3d()
    with pytest.raises(TypeError):
        wp.vec3() * wp.vec3()  # Warp has no vec * vec (use cw_mul)
    with pytest.raises(TypeError, match="float64"):
        wp.vec3() * wp.float64(2.0)
    with pytest.raises(TypeError):
        hash(v)  # mutable, as in Warp


def test_integer_and_half_vectors():
    # Integer division truncates toward zero and % keeps the dividend's sign (kernels' C
    # semantics; real Warp gives vec3i([-1, 1, 1]) and vec3i([-1, 0, 1]) here).
    assert wp.vec3i(-3, 2, 3) / 2 == [-1, 1, 1]
    assert wp.vec3i(-1, 2, 3) % 2 == [-1, 0, 1]
    assert wp.vec3i(7, 2, 3) * 2 == [14, 4, 6]
    assert wp.vec3ub(300, 2, 3) == [44, 2, 3]  # wraps as in Warp
    assert wp.vec2b(-129, 128) == [127, -128]
    with pytest.raises(TypeError, match="int32, got float 1.5"):
        wp.vec3i(1.5, 2, 3)
    with pytest.raises(TypeError):
        wp.vec3i(1, 2, 3) * 1.5
    with pytest.raises(ZeroDivisionError):
        wp.vec2i(1, 2) / 0
    h = wp.vec3h(1.1, 2, 3)
    assert h.x == float(np.float16(1.1)) and np.array(h).dtype == np.float16
    big = vec5d(1, 2, 3, 4, 5)
    # Warp 1.19's repr: the type as Warp spells it, the float64 components as wp.float64
    assert repr(big) == ("vector(length=5, dtype=float64)([float64(1.0), float64(2.0), float64(3.0), "
                         "float64(4.0), float64(5.0)])") and big[4] == 5.0


def test_matrix_values():
    m = wp.mat22(1, 2, 3, 4)
    M = np.array([[1, 2], [3, 4]], np.float32)
    assert str(m) == "[[1.0, 2.0],\n [3.0, 4.0]]" and repr(m) == "mat22f([[1.0, 2.0], [3.0, 4.0]])"
    assert m[0] == wp.vec2(1, 2) and type(m[1]) is wp.vec2 and m[0][1] == 2.0 and m[1, 0] == 3.0
    assert len(m) == 2 and list(m) == [wp.vec2(1, 2), wp.vec2(3, 4)]
    # Every constructor form Warp accepts gives the same matrix.
    for other in (wp.mat22(wp.vec2(1, 2), wp.vec2(3, 4)), wp.mat22([1, 2], [3, 4]),
                  wp.mat22([[1, 2], [3, 4]]), wp.mat22([1, 2, 3, 4]), wp.mat22(M), wp.mat22(m)):
        assert other == m
    assert wp.mat22() == [[0, 0], [0, 0]] and wp.mat22(5) == [[5, 5], [5, 5]]
    a = np.array(m)
    assert a.shape == (2, 2) and a.dtype == np.float32
    np.testing.assert_array_equal(np.array(m * m), M @ M)
    np.testing.assert_array_equal(np.array(m @ m), M @ M)
    np.testing.assert_array_equal(np.array(m * wp.vec2(1, 1)), [3, 7])  # real Warp: [3, 7]
    np.testing.assert_array_equal(np.array(wp.vec2(1, 1) * m), [4, 6])  # real Warp: [4, 6]
    np.testing.assert_array_equal(np.array(wp.vec2(1, 1) @ m), [4, 6])
    np.testing.assert_array_equal(np.array(m * 2.0 + 2.0 * m - m / 4.0), 4 * M - M / 4)
    np.testing.assert_array_equal(np.array(-m - m), -2 * M)
    assert m == [[1, 2], [3, 4]] and m != wp.mat22()
    # Other shapes multiply as matrices do.
    x = mat23(1, 2, 3, 4, 5, 6)
    X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.array(x @ wp.vec3(1, 1, 1)), X @ np.ones(3))
    y = x @ wp.transpose(x)
    assert type(y) is wp.mat22
    np.testing.assert_array_equal(np.array(y), X @ X.T)
    z = wp.transpose(x) * x
    assert type(z) is wp.mat33 and z == (X.T @ X)
    m[0, 1] = 7
    m[1] = wp.vec2(8, 9)
    assert m == [[1, 7], [8, 9]]
    md = wp.mat22d(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match=r"'add' compatible with the arguments 'mat22f, mat22d'$"):
        m + md
    with pytest.raises(RuntimeError, match=r"'mul' compatible with the arguments 'mat22f, mat22d'$"):
        m * md
    with pytest.raises(RuntimeError, match=r"^Couldn't find a function 'mul' compatible with the arguments"):
        x * x
    with pytest.raises(ValueError, match=r"^Invalid number of arguments in matrix constructor, expected 4 "
                                         r"elements, got 3$"):
        wp.mat22(1, 2, 3)
    with pytest.raises(TypeError):
        m + 1.0  # as in Warp: no matrix + scalar
    with pytest.raises(IndexError):
        m[2]
    ident = wp.identity(3, dtype=wp.float64)
    assert type(ident) is wp.mat33d and ident == np.eye(3)


def test_quaternion_and_transform_values():
    q = wp.quat(1, 2, 3, 4)
    assert (q.x, q.y, q.z, q.w) == (1.0, 2.0, 3.0, 4.0) and len(q) == 4
    assert q * q == [8, 16, 24, 2]  # real Warp 1.19: quatf([8.0, 16.0, 24.0, 2.0])
    rng = np.random.default_rng(7)
    a, b = unit_quats(rng, 2)
    np.testing.assert_allclose(np.array(wp.quat(a) * wp.quat(b)), np_quat_mul(a, b), atol=1e-6)
    assert wp.quat() == [0, 0, 0, 0]  # Python scope, as in Warp
    assert wp.quat_identity() == [0, 0, 0, 1] and wp.quat(wp.vec3(1, 2, 3), 4.0) == q
    np.testing.assert_array_equal(np.array(q / 2.0 + q - q), [0.5, 1, 1.5, 2])
    t = wp.transform()
    assert type(t) is wp.transformf and t == [0, 0, 0, 0, 0, 0, 1]  # the identity in Python scope
    t = wp.transform(wp.vec3(1, 2, 3), wp.quat(a))
    assert t.p == [1, 2, 3] and type(t.q) is wp.quat and t[6] == pytest.approx(a[3])
    assert wp.transform(p=(1, 2, 3), q=a) == t and wp.transform(*np.array(t)) == t
    t.p = (4, 5, 6)
    assert np.array(t)[:3].tolist() == [4, 5, 6]
    # Composition and the Python-scope helpers against rotation matrices.
    u = wp.transform(wp.vec3(-1, 0.5, 2), wp.quat(b))
    R1, R2 = np_quat_matrix(a.astype(np.float64)), np_quat_matrix(b.astype(np.float64))
    tu = t * u
    np.testing.assert_allclose(np.array(tu.p), R1 @ [-1, 0.5, 2] + [4, 5, 6], atol=1e-5)
    np.testing.assert_allclose(np.array(tu.q), np_quat_mul(a, b), atol=1e-6)
    np.testing.assert_allclose(np.array(wp.quat_rotate(wp.quat(b), wp.vec3(1, 2, 3))),
                               R2 @ [1, 2, 3], atol=1e-5)
    np.testing.assert_allclose(np.array(wp.transform_point(u, wp.vec3(1, 0, 0))),
                               R2 @ [1, 0, 0] + [-1, 0.5, 2], atol=1e-6)
    np.testing.assert_allclose(np.array(wp.transform_vector(u, wp.vec3(1, 0, 0))),
                               R2 @ [1, 0, 0], atol=1e-6)
    qa = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), math.pi / 2)
    np.testing.assert_allclose(np.array(wp.quat_rotate(qa, wp.vec3(1, 0, 0))), [0, 1, 0], atol=1e-6)
    with pytest.raises(RuntimeError, match=r"'mul' compatible with the arguments 'quatf, quatd'$"):
        wp.quat() * wp.quatd()
    sv = wp.spatial_vector(wp.vec3(1, 2, 3), wp.vec3(4, 5, 6))
    assert type(sv) is wp.spatial_vectorf and sv == [1, 2, 3, 4, 5, 6]
    assert np.array(wp.spatial_matrixd()).shape == (6, 6)


# ------------------------------------------------------------------- arrays

ARRAY_DTYPES = [wp.mat22, wp.mat33d, wp.mat44h, mat23, mat23i, wp.mat22ub, wp.quat, wp.quatd,
                wp.transform, wp.transformh, wp.spatial_vector, wp.spatial_matrixd, vec5d, vec1b,
                vec64, wp.types.matrix((1, 1), wp.float32), mat16x64]


def sample_values(t, n, seed):
    rng = np.random.default_rng(seed)
    shape = (n,) + t._shape_
    dt = t._wp_scalar_type_._np_dtype_
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    return (rng.standard_normal(shape) * 10).astype(dt)


@pytest.mark.parametrize("t", ARRAY_DTYPES, ids=lambda t: t.__name__)
def test_value_array_round_trip(wp, t):
    data = sample_values(t, 5, seed=t._length_)
    a = wp.array(data, dtype=t)
    assert a.shape == (5,) and a.dtype is t
    got = a.numpy()
    assert got.shape == (5,) + t._shape_ and got.dtype == data.dtype
    np.testing.assert_array_equal(got, data)
    items = a.list()
    assert len(items) == 5 and all(type(x) is t for x in items)
    assert items[3] == data[3]
    # From instances, and from rows of flat components (as Warp accepts).
    again = wp.array(items, dtype=t)
    np.testing.assert_array_equal(again.numpy(), data)
    flat = wp.array(data.reshape(5, -1), dtype=t)
    assert flat.shape == (5,)
    np.testing.assert_array_equal(flat.numpy(), data)
    assert wp.array(items).dtype is t  # inferred from the elements


def test_value_array_constructors(wp):
    z = wp.zeros((2, 3), dtype=wp.mat33)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3, 3, 3), np.float32))
    # ones() sets every component, also of quaternions and transforms (as in Warp).
    np.testing.assert_array_equal(wp.ones(2, dtype=wp.quat).numpy(), np.ones((2, 4)))
    np.testing.assert_array_equal(wp.ones(2, dtype=wp.transformd).numpy(), np.ones((2, 7)))
    f = wp.full(3, wp.mat22(1, 2, 3, 4))
    assert f.dtype is wp.mat22
    np.testing.assert_array_equal(f.numpy(), np.tile([[1, 2], [3, 4]], (3, 1, 1)))
    # Warp 1.19 infers the scalar type NumPy infers for a sequence: Python floats are float64
    assert wp.full(2, ((1.0, 2.0), (3.0, 4.0))).dtype is wp.mat22d
    np.testing.assert_array_equal(wp.full(2, 2.5, dtype=mat23).numpy(), np.full((2, 2, 3), 2.5))
    e = wp.empty(4, dtype=wp.transformh)
    assert e.numpy().shape == (4, 7) and e.numpy().dtype == np.float16
    q = wp.zeros(3, dtype=wp.quatd)
    q.fill_(wp.quatd(1, 2, 3, 4))
    np.testing.assert_array_equal(q.numpy(), np.tile([1, 2, 3, 4], (3, 1)))
    q.assign(np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(q.numpy(), np.arange(12).reshape(3, 4))
    m = wp.from_numpy(np.ones((4, 3, 3), np.float64))
    assert m.dtype is wp.mat33d and m.shape == (4,)
    assert wp.from_numpy(np.ones((4, 2, 4), np.float32)).dtype is wp.types.matrix((2, 4), float)
    assert wp.from_numpy(np.ones((4, 3), np.float32)).dtype is wp.vec3
    assert "mat33f" in repr(wp.zeros(1, dtype=wp.mat33))
    with pytest.raises(ValueError, match=r"trailing dimensions \(2, 2\) or 4"):
        wp.array(np.zeros((2, 2, 3), np.float32), dtype=wp.mat22)
    with pytest.raises(TypeError, match="int32, got float 2.5"):
        wp.zeros(2, dtype=wp.vec3i).fill_(2.5)
    with pytest.raises(TypeError, match="unsupported dtype"):
        wp.zeros(2, dtype=str)


# ------------------------------------------------------------------ kernels


def test_matrix_kernels_match_numpy(wp):
    n = 6
    rng = np.random.default_rng(1)
    M = rng.standard_normal((n, 3, 3)).astype(np.float32)
    V = rng.standard_normal((n, 3)).astype(np.float32)
    outs = {k: wp.zeros(n, dtype=wp.vec3) for k in ("mv", "vm")}
    outs.update({k: wp.zeros(n, dtype=wp.mat33) for k in ("mm", "mt", "ms", "rows")})
    det = wp.zeros(n, dtype=float)
    elems = wp.zeros((n, 3), dtype=float)
    g = wp.zeros(n, dtype=wp.vec2)
    wp.launch(mat_ops, dim=n, inputs=[wp.array(M, dtype=wp.mat33), wp.array(V, dtype=wp.vec3), 1.5,
                                      outs["mv"], outs["vm"], outs["mm"], outs["mt"], outs["ms"],
                                      outs["rows"], det, elems, g])
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["mv"].numpy(), np.einsum("nij,nj->ni", M, V), **tol)
    np.testing.assert_allclose(outs["vm"].numpy(), np.einsum("ni,nij->nj", V, M), **tol)
    np.testing.assert_allclose(outs["mm"].numpy(), M @ M, **tol)
    np.testing.assert_array_equal(outs["mt"].numpy(), M.transpose(0, 2, 1))
    np.testing.assert_allclose(outs["ms"].numpy(), M * 1.5 - M / 2 + np.eye(3), **tol)
    np.testing.assert_array_equal(outs["rows"].numpy(), M[:, [2, 0, 1], :])
    np.testing.assert_allclose(det.numpy(), np.linalg.det(M), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(elems.numpy()[:, 0], M[:, 0, 1])
    np.testing.assert_array_equal(elems.numpy()[:, 1], M[:, 2, 0])
    np.testing.assert_array_equal(elems.numpy()[:, 2], V[:, 1] + 9.0)
    X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(g.numpy(), V @ X.T, **tol)


def test_quaternion_and_transform_kernels_match_numpy(wp):
    n = 5
    rng = np.random.default_rng(2)
    Q = unit_quats(rng, n)
    V = rng.standard_normal((n, 3)).astype(np.float32)
    P = rng.standard_normal((n, 3)).astype(np.float32)
    T = np.concatenate([P, Q], axis=1)
    vec = {k: wp.zeros(n, dtype=wp.vec3) for k in ("rot", "tp", "tv")}
    qq, qinv = wp.zeros(n, dtype=wp.quat), wp.zeros(n, dtype=wp.quat)
    qm, tt = wp.zeros(n, dtype=wp.mat33), wp.zeros(n, dtype=wp.transform)
    parts = wp.zeros((n, 4), dtype=float)
    wp.launch(quat_ops, dim=n, inputs=[wp.array(Q, dtype=wp.quat), wp.array(V, dtype=wp.vec3),
                                       wp.array(T, dtype=wp.transform), vec["rot"], qq, qinv, qm,
                                       vec["tp"], vec["tv"], tt, parts])
    R = np_quat_matrix(Q.astype(np.float64))
    tol = dict(rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(vec["rot"].numpy(), np.einsum("nij,nj->ni", R, V), **tol)
    np.testing.assert_allclose(qq.numpy(), np_quat_mul(Q, Q), **tol)
    np.testing.assert_allclose(qinv.numpy(), Q * [-1, -1, -1, 1], **tol)
    np.testing.assert_allclose(qm.numpy(), R, **tol)
    np.testing.assert_allclose(vec["tp"].numpy(), np.einsum("nij,nj->ni", R, V) + P, **tol)
    np.testing.assert_allclose(vec["tv"].numpy(), np.einsum("nij,nj->ni", R, V), **tol)
    want_tt = np.concatenate([np.einsum("nij,nj->ni", R, P) + P, np_quat_mul(Q, Q)], axis=1)
    np.testing.assert_allclose(tt.numpy(), want_tt, **tol)
    np.testing.assert_array_equal(parts.numpy(), np.stack([Q[:, 0], Q[:, 3], P[:, 1], Q[:, 3]], 1))


def test_constructors_and_captured_constants(wp):
    types = [vec5d, vec5d, mat23, mat32h, quatd_t, xformh, wp.mat44d, wp.spatial_vectord,
             wp.spatial_matrix, mat23i, wp.mat22, wp.transform, wp.mat22d, wp.spatial_vector]
    outs = [wp.zeros(1, dtype=t) for t in types]
    wp.launch(constructors, dim=1, inputs=outs)
    got = [o.numpy()[0] for o in outs]
    np.testing.assert_array_equal(got[0], [2, 4, 6, 8, 10])
    np.testing.assert_array_equal(got[1], [2.5] * 5)
    np.testing.assert_array_equal(got[2], [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(got[3], [[2, 4], [6, 8], [10, 12]])
    assert got[3].dtype == np.float16
    # (0, 0, 0.6, 0.8) * (0, 0, 0, 2): the real part scales the quaternion.
    np.testing.assert_allclose(got[4], [0, 0, 1.2, 1.6], rtol=1e-12)
    np.testing.assert_array_equal(got[5], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(got[6], 3 * np.eye(4))
    np.testing.assert_array_equal(got[7], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(got[8], np.eye(6))
    np.testing.assert_array_equal(got[9], [[1, -2, 3], [-4, 5, -6]])
    np.testing.assert_array_equal(got[10], [[2, 4], [6, 8]])
    np.testing.assert_array_equal(got[11], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(got[12], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(got[13], [1, 2, 3, 4, 5, 6])


def test_closure_constants(wp):
    def make(c, q):
        @wp.kernel(module="unique")
        def k(out: wp.array(dtype=wp.mat22d), outq: wp.array(dtype=wp.quath)):
            out[0] = c + c
            outq[0] = q
        return k

    k = make(wp.mat22d(1.5, -2, 3, 4), wp.quath(0.5, 0.25, 0, 1))
    out, outq = wp.zeros(1, dtype=wp.mat22d), wp.zeros(1, dtype=wp.quath)
    wp.launch(k, dim=1, inputs=[out, outq])
    np.testing.assert_array_equal(out.numpy()[0], [[3, -4], [6, 8]])
    np.testing.assert_array_equal(outq.numpy()[0], [0.5, 0.25, 0, 1])


def test_value_kernel_arguments_round_trip(wp):
    rng = np.random.default_rng(3)
    vals = [
        wp.mat33d(*rng.standard_normal(9)),
        mat23(*range(6)),
        quatd_t(0.1, -0.2, 0.3, 0.9),
        xformh((1, 2, 3), (0, 0, 0.5, 0.75)),
        wp.spatial_vector(*range(6)),
        vec1b(-7),
        vec64(*rng.standard_normal(64)),
        mat16x64(rng.standard_normal((16, 64))),
        -100,
        (1 << 64) - 2,
        0.333,
        True,
        [[1, 2, 3], [4, 5, 6]],
    ]
    out_types = [wp.mat33d, mat23, quatd_t, xformh, wp.spatial_vector, vec1b, vec64, mat16x64,
                 wp.int8, wp.uint64, wp.float16, wp.bool, mat23i]
    outs = [wp.zeros(1, dtype=t) for t in out_types]
    wp.launch(value_args, dim=1, inputs=vals + outs)
    for v, t, o in zip(vals, out_types, outs):
        got = o.numpy()[0]
        want = np.asarray(np.array(v) if isinstance(v, wp.types.Value) else v,
                          dtype=wp.types.numpy_dtype(t))
        np.testing.assert_array_equal(got, want, err_msg=t.__name__)


def test_value_argument_errors_name_the_parameter(wp):
    args = [wp.mat33d(), mat23(), quatd_t(), xformh(), wp.spatial_vector(), vec1b(), vec64(),
            mat16x64(), 0, 0, 0.0, False, mat23i()]
    outs = [wp.zeros(1, dtype=t) for t in (wp.mat33d, mat23, quatd_t, xformh, wp.spatial_vector,
                                           vec1b, vec64, mat16x64, wp.int8, wp.uint64, wp.float16,
                                           wp.bool, mat23i)]

    def launch_with(i, value):
        bad = list(args)
        bad[i] = value
        wp.launch(value_args, dim=1, inputs=bad + outs)

    with pytest.raises(TypeError, match=r"argument 'a' of kernel 'value_args' expects mat33d, "
                                        r"got mat33f"):
        launch_with(0, wp.mat33())
    with pytest.raises(TypeError, match=r"argument 'b' .* expects matrix\(shape=\(2, 3\), "
                                        r"dtype=float32\), got a sequence of shape \(3, 2\)"):
        launch_with(1, np.zeros((3, 2)))
    with pytest.raises(TypeError, match=r"argument 'c' .* expects quatd, got quatf"):
        launch_with(2, wp.quat())
    # Warp 1.19's words (and class) for a single value given for a composite.
    with pytest.raises(RuntimeError, match=r"Error launching kernel 'value_args', argument 'd' expects transformh "
                                           r"but got a single value of type float\. Construct the value "
                                           r"explicitly, e\.g\.: transformh\(\.\.\.\)\.$"):
        launch_with(3, 1.0)
    with pytest.raises(ValueError, match=r"^Failed to convert argument for param d to transformh$"):
        launch_with(3, None)
    with pytest.raises(ValueError, match=r"argument 'i8' .* expects int8, got 300, which is out "
                                         r"of range"):
        launch_with(8, 300)
    with pytest.raises(TypeError, match=r"argument 'mi' .* expects matrix\(shape=\(2, 3\), "
                                        r"dtype=int32\), got float"):
        launch_with(12, [[1, 2, 3], [4, 5, 6.5]])
    with pytest.raises(TypeError, match=r"argument 'oa' .* expects array\(dtype=mat33d, ndim=1\), "
                                        r"got an array of dtype=mat33f"):
        wp.launch(value_args, dim=1, inputs=args + [wp.zeros(1, dtype=wp.mat33)] + outs[1:])


@wp.kernel
def count_threads(out: wp.array(dtype=int)):
    wp.atomic_add(out, 0, 1)


def test_launch_options(wp):
    args = [wp.mat33d(), mat23(), quatd_t(), xformh(), wp.spatial_vector(), vec1b(), vec64(),
            mat16x64(), 0, 0, 0.0, False, mat23i()]
    outs = [wp.zeros(1, dtype=t) for t in (wp.mat33d, mat23, quatd_t, xformh, wp.spatial_vector,
                                           vec1b, vec64, mat16x64, wp.int8, wp.uint64, wp.float16,
                                           wp.bool, mat23i)]
    with pytest.raises(TypeError, match="stream must be a wp.Stream"):
        wp.launch(value_args, dim=1, inputs=args + outs, stream=object())
    # CUDA grid shapes change nothing on the CPU, as in Warp: every thread runs.
    out = wp.zeros(1, dtype=int)
    wp.launch(count_threads, dim=(7, 9), inputs=[out], max_blocks=2, block_dim=32)
    assert out.numpy()[0] == 63
    for option, value in [("max_blocks", -1), ("max_blocks", 1.5), ("block_dim", 0), ("block_dim", "8")]:
        with pytest.raises(ValueError, match=option):
            wp.launch(count_threads, dim=1, inputs=[out], **{option: value})
    # record_tape=False: a launch a recording tape does not record.
    tape = wp.Tape()
    with tape:
        wp.launch(value_args, dim=1, inputs=args + outs, record_tape=False)
        wp.launch(value_args, dim=1, inputs=args + outs)
    assert len(tape.launches) == 1
    wp.synchronize()


# ----------------------------------------------------------- front end (IR)


def test_constructor_ir():
    fn = constructors.build()[0]
    generic = calls(fn, "matrix")
    assert len(generic) >= 2  # wp.matrix(...) and the captured int matrix MI_CONST
    kw = {k.name: k.value for k in generic[0].call.keywords}
    assert [e.constant.int_value for e in kw["shape"].tuple.elements] == [2, 3]
    assert kw["dtype"].type_value.scalar == ir_pb2.SCALAR_FLOAT32
    mi = [c for c in generic if {k.name: k.value for k in c.call.keywords}["dtype"]
          .type_value.scalar == ir_pb2.SCALAR_INT32]
    assert len(mi) == 1
    assert [a.constant.int_value for a in mi[0].call.args] == [1, -2, 3, -4, 5, -6]
    assert all(a.constant.dtype == ir_pb2.SCALAR_INT32 for a in mi[0].call.args)
    m22 = calls(fn, "mat22")
    assert [a.constant.float_value for a in m22[0].call.args] == [1.0, 2.0, 3.0, 4.0]
    v5 = calls(fn, "vector")
    assert any({k.name: k.value for k in c.call.keywords}.get("length", None) is not None and
               {k.name: k.value for k in c.call.keywords}["length"].constant.int_value == 5
               for c in v5)
    assert calls(fn, "quatd") and calls(fn, "spatial_vectord") and calls(fn, "transform")
    params = {p.name: p.type for p in mat_ops.build()[0].params}
    assert params["m"].array.dtype.matrix == ir_pb2.MatrixType(rows=3, cols=3,
                                                               dtype=ir_pb2.SCALAR_FLOAT32)
    vparams = {p.name: p.type for p in value_args.build()[0].params}
    assert vparams["c"].quat.dtype == ir_pb2.SCALAR_FLOAT64
    assert vparams["d"].transform.dtype == ir_pb2.SCALAR_FLOAT16
    assert vparams["h"].matrix.rows == 16 and vparams["h"].matrix.cols == 64


vec3bool = wp.types.vector(length=3, dtype=wp.bool)
mat22bool = wp.types.matrix(shape=(2, 2), dtype=wp.bool)
vec123h = wp.types.vector(123, dtype=wp.float16)
BOOL_SEL = wp.constant(vec3bool([True, False, True]))


@wp.kernel(module="unique")
def bool_and_long_vectors(out: wp.array(dtype=int), bv: wp.array(dtype=vec3bool), big: wp.array(dtype=vec123h),
                          idx: wp.array(dtype=int), f: wp.array(dtype=float)):
    s = int(0)
    if BOOL_SEL[0]:
        s += 1
    if BOOL_SEL[1]:
        s += 10
    if BOOL_SEL[-1]:
        s += 100
    out[0] = s
    b = bv[0]
    b[1] = True
    bv[1] = b
    bv[2] = vec3bool(False, True, True)
    m = mat22bool()
    m[0, 1] = True
    if m[0, 1] and not m[1, 0]:
        out[1] = 1
    v = big[0]
    out[2] = int(float(v[122]) + float(v[-1]))
    # negative indices count from the end, constant or not
    w = wp.vec3(1.0, 2.0, 3.0)
    w[-1] = 30.0
    w[-3] *= 2.0
    f[0] = w[-1]
    f[1] = w[0]
    f[2] = w[idx[0]]
    mm = wp.mat22(1.0, 2.0, 3.0, 4.0)
    f[3] = mm[-1, -2]
    f[4] = mm[idx[0], idx[1]]


def test_bool_vectors_long_vectors_and_negative_indices():
    out = wp.zeros(3, dtype=int)
    bv = wp.array([[True, False, False], [False] * 3, [False] * 3], dtype=vec3bool)
    big = wp.array(np.arange(123, dtype=np.float16)[None, :], dtype=vec123h)
    f = wp.zeros(5, dtype=float)
    wp.launch(bool_and_long_vectors, dim=1, inputs=[out, bv, big, wp.array([-1, -2], dtype=int), f])
    np.testing.assert_array_equal(out.numpy(), [101, 1, 244])
    np.testing.assert_array_equal(bv.numpy(), [[True, False, False], [True, True, False], [False, True, True]])
    assert bv.numpy().dtype == np.bool_
    np.testing.assert_array_equal(f.numpy(), [30.0, 2.0, 30.0, 3.0, 3.0])
    # out of range either way: a fault naming the index
    with pytest.raises(wp.KernelError, match="index -4 out of bounds for a vector of length 3"):
        wp.launch(bool_and_long_vectors, dim=1, inputs=[out, bv, big, wp.array([-4, 0], dtype=int), f])
        wp.synchronize()


def test_constant_indices_out_of_range_either_way_are_compile_errors(tmp_path):
    import textwrap
    for index in ("-4", "3"):
        path = tmp_path / f"neg_index_{index.replace('-', 'm')}.py"
        path.write_text(textwrap.dedent(f"""
            import warpd as wp

            @wp.kernel
            def k(out: wp.array(dtype=float)):
                v = wp.vec3(1.0, 2.0, 3.0)
                out[0] = v[{index}]
            """))
        ns = {"__name__": path.stem}
        exec(compile(path.read_text(), str(path), "exec"), ns)
        with pytest.raises(wp.CompileError, match=f"index {index} is out of range for vec3f"):
            wp.launch(ns["k"], dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_scalar_types_carry_warps_ctypes_type():
    # Warp's tests wrap values with wptype._type_(v).value: C conversion, as numpy's astype does.
    for st, npt in [(wp.int8, np.int8), (wp.uint8, np.uint8), (wp.int16, np.int16), (wp.uint16, np.uint16),
                    (wp.int32, np.int32), (wp.uint32, np.uint32), (wp.int64, np.int64), (wp.uint64, np.uint64)]:
        for v in (70000, -3, 2**40 + 5):
            assert st._type_(v).value == int(np.array(v).astype(npt)), (st, v)
    assert wp.float32._type_(0.1).value == float(np.float32(0.1))
    assert wp.float64._type_ is ctypes.c_double and wp.bool._type_ is ctypes.c_bool
    assert ctypes.sizeof(wp.float16._type_) == 2  # a half's bits, as in Warp


def test_log_levels_are_warps():
    assert (wp.LOG_DEBUG, wp.LOG_INFO, wp.LOG_WARNING, wp.LOG_ERROR) == (10, 20, 30, 40)
    assert wp.config.log_level == wp.LOG_INFO


def test_scalar_arithmetic_in_python_scope_wraps_like_c():
    for st, npt in [(wp.int8, np.int8), (wp.uint8, np.uint8), (wp.int16, np.int16), (wp.uint32, np.uint32),
                    (wp.uint64, np.uint64)]:
        a, b = st(1), st(5)
        with np.errstate(over="ignore"):
            assert a - b == int(np.array(1, npt) - np.array(5, npt)), st
            assert -a == int(-np.array(1, npt)), st
            assert st(100) * st(3) == int(np.array(100, npt) * np.array(3, npt)), st
    # % is C's remainder (the dividend's sign), as in kernels
    assert wp.int32(-7) % wp.int32(3) == -1 and wp.int32(7) % wp.int32(-3) == 1
    assert wp.float32(-7.5) % wp.float32(2.0) == math.fmod(-7.5, 2.0)
    # ** takes floats only, as Warp's pow
    assert wp.float32(2.0) ** wp.float32(3.0) == 8.0 and wp.float64(3.0) ** 2.0 == 9.0
    with pytest.raises(TypeError):
        wp.int32(2) ** wp.int32(3)


def test_scalar_repr_and_str_are_warps():
    # Real Warp 1.19 (test_print.py and in Python): a scalar shows the value it was given, an
    # integer given to a float type showing as an integer, a float as its shortest decimal.
    assert [repr(t(-1)) for t in (wp.float16, wp.float32, wp.float64)] == [
        "float16(-1)", "float32(-1)", "float64(-1)"]
    assert [repr(t(0.1)) for t in (wp.float16, wp.float32, wp.float64)] == [
        "float16(0.1)", "float32(0.1)", "float64(0.1)"]
    assert repr(wp.float32(1.5)) == "float32(1.5)" and str(wp.float32(0.1)) == "0.1"
    assert repr(wp.float32(1e20)) == "float32(1e+20)"
    # The value is still the type's: float32(0.1) is the float nearest 0.1 in single precision.
    assert float(wp.float32(0.1)) == float(np.float32(0.1))
    assert [repr(t(-1)) for t in (wp.int8, wp.uint8, wp.uint16, wp.uint32, wp.uint64)] == [
        "int8(-1)", "uint8(255)", "uint16(65535)", "uint32(4294967295)", "uint64(18446744073709551615)"]
    assert repr(wp.bool(-1)) == "bool(True)"
