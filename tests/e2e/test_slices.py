"""Slices inside kernels (issue 24): arrays (views sharing memory, any bounds known at run
time), vectors and matrices (constant bounds: the length is part of the type). The
references are NumPy's slices of the same data, which follow the same Python rules."""

import textwrap

import numpy as np
import pytest

import warpd as wp

N = 7
mat23 = wp.types.matrix(shape=(2, 3), dtype=float)


@wp.kernel(module="unique")
def array_slices(x: wp.array(dtype=float), y: wp.array2d(dtype=float), bounds: wp.array(dtype=int),
                 lens: wp.array(dtype=int), firsts: wp.array(dtype=float)):
    i = wp.tid()
    row = y[1:2, :]                   # a 2-D view of row 1: writes land in y
    row[0, i] = 2.0 * x[i]
    cols = y[:, 2]                    # column 2, strided
    lens[0] = cols.shape[0]
    a = x[1:6:2]
    lens[1] = a.shape[0]
    firsts[0] = a[2]
    b = x[-3:]
    lens[2] = b.shape[0]
    firsts[1] = b[0]
    c = x[bounds[0]:bounds[1]:bounds[2]]   # bounds known only at run time
    lens[3] = c.shape[0]
    firsts[2] = c[c.shape[0] - 1]
    d = x[5:100]                       # clamped to the extent, as Python does
    lens[4] = d.shape[0]
    e = x[4:2]                         # empty
    lens[5] = e.shape[0]
    f = y[2, 1:4]                      # an index and a slice: 1-D
    lens[6] = f.shape[0]
    firsts[3] = f[0]
    g = y[::2]                         # rows 0 and 2, all columns
    lens[7] = g.shape[0] * 100 + g.shape[1]
    firsts[4] = g[1, 3]
    h = x[::-1]                        # negative steps walk backwards
    lens[8] = h.shape[0]
    firsts[5] = h[0]
    r = x[5:1:-2]
    lens[9] = r.shape[0]
    firsts[6] = r[1]
    rr = x[bounds[3]::-1]              # a negative step known only at run time
    lens[10] = rr.shape[0]
    firsts[7] = rr[rr.shape[0] - 1]
    lens[11] = h.ndim * 10 + h.shape[1]   # ndim, and shape past ndim is 0 (as Warp)


def test_array_slices_are_views_with_pythons_bounds(wp):
    xv = np.arange(N, dtype=np.float32) * 1.5
    yv = np.arange(3 * N, dtype=np.float32).reshape(3, N)
    x = wp.array(xv)
    y = wp.array(yv)
    lens = wp.zeros(12, dtype=int)
    firsts = wp.zeros(8, dtype=float)
    wp.launch(array_slices, dim=N, inputs=[x, y, wp.array([-5, 7, 2, 3], dtype=int), lens, firsts])
    want_y = yv.copy()
    want_y[1, :] = 2.0 * xv
    np.testing.assert_array_equal(y.numpy(), want_y)  # written through the row view
    c = xv[-5:7:2]
    assert list(lens.numpy()) == [3, len(xv[1:6:2]), len(xv[-3:]), len(c), len(xv[5:100]), len(xv[4:2]),
                                  len(yv[2, 1:4]), 2 * 100 + N, len(xv[::-1]), len(xv[5:1:-2]), len(xv[3::-1]),
                                  10]
    # y's row 1 changed before the reads of row 2 and rows ::2 only in lanes that ran first;
    # the values read here come from rows 0 and 2, which no thread writes.
    np.testing.assert_array_equal(firsts.numpy(), [xv[1:6:2][2], xv[-3:][0], c[-1], yv[2, 1:4][0],
                                                   yv[::2][1, 3], xv[::-1][0], xv[5:1:-2][1], xv[3::-1][-1]])


@wp.kernel(module="unique")
def component_slices(ov2: wp.array(dtype=wp.vec2), ov3: wp.array(dtype=wp.vec3), om: wp.array(dtype=wp.mat22),
                     om23: wp.array(dtype=mat23), j: wp.array(dtype=int)):
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    ov2[0] = v[1:3]
    ov2[1] = v[::3]
    ov2[2] = v[-1:-3:-1]
    ov3[0] = v[:3]
    ov3[1] = v[3:0:-1]
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    om[0] = m[0:2, 1:3]
    om[1] = m[::2, ::2]
    ov3[2] = m[:, 1]                  # a column
    ov3[3] = m[2, :]                  # a row
    ov2[3] = m[1:3, j[0]]             # part of a column at a run-time index
    ov2[4] = m[j[0], :2]
    om23[0] = m[1:]                   # whole rows
    ov3[4] = wp.vec3(1.0, 2.0, 3.0)[-2:][0] * wp.vec3(1.0, 1.0, 1.0)


def test_vector_and_matrix_slices_follow_numpy(wp):
    ov2 = wp.zeros(5, dtype=wp.vec2)
    ov3 = wp.zeros(5, dtype=wp.vec3)
    om = wp.zeros(2, dtype=wp.mat22)
    om23 = wp.zeros(1, dtype=mat23)
    wp.launch(component_slices, dim=1, inputs=[ov2, ov3, om, om23, wp.array([2], dtype=int)])
    v = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    m = np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(ov2.numpy(), [v[1:3], v[::3], v[-1:-3:-1], m[1:3, 2], m[2, :2]])
    np.testing.assert_array_equal(ov3.numpy(), [v[:3], v[3:0:-1], m[:, 1], m[2, :], [2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(om.numpy(), [m[0:2, 1:3], m[::2, ::2]])
    np.testing.assert_array_equal(om23.numpy(), [m[1:]])


def load(tmp_path, name, body):
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    path = tmp_path / f"{name}.py"
    path.write_text("import warpd as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float), n: int):\n" + lines)
    ns = {"__name__": name}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("body, message", [
    ("v = wp.vec3(1.0, 2.0, 3.0)\nw = v[0:n]\n", "needs constant bounds"),
    ("v = wp.vec3(1.0, 2.0, 3.0)\nw = v[::0]\n", "step cannot be zero"),
    ("v = wp.vec3(1.0, 2.0, 3.0)\nv[0:2][0] = 1.0\n", "a slice cannot be assigned"),
    ("y = x[::0]\n", "step cannot be zero"),
    ("x[0:2] = 1.0\n", "a slice cannot be assigned"),
    ("s = float(n)\nr = s[0:2]\n", "cannot be sliced"),
])
def test_slice_mistakes_are_compile_errors(wp, tmp_path, body, message):
    k = load(tmp_path, f"slice_err_{abs(hash(body))}", body)
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(k, dim=1, inputs=[wp.zeros(3, dtype=float), 1])


@wp.kernel(module="unique")
def extreme_steps(x: wp.array(dtype=float), steps: wp.array(dtype=wp.int64), lens: wp.array(dtype=int),
                  firsts: wp.array(dtype=float)):
    for k in range(steps.shape[0]):
        s = x[::steps[k]]
        lens[k] = s.shape[0]
        if s.shape[0] > 0:
            firsts[k] = s[s.shape[0] - 1]


def test_extreme_steps_take_pythons_lengths(wp):
    """Steps near the int64 limits take the lengths Python gives (never a negative extent)."""
    xv = np.arange(N, dtype=np.float32)
    steps = [2**63 - 1, -(2**63 - 1), -(2**63), 2**62, -3, 3]
    lens = wp.zeros(len(steps), dtype=int)
    firsts = wp.zeros(len(steps), dtype=float)
    wp.launch(extreme_steps, dim=1, inputs=[wp.array(xv), wp.array(steps, dtype=wp.int64), lens, firsts])
    assert list(lens.numpy()) == [len(xv[::s]) for s in steps]
    np.testing.assert_array_equal(firsts.numpy(), [xv[::s][-1] for s in steps])


# ------------------------------------------------- assignment to component slices

vec0 = wp.types.vector(0, float)
mat00 = wp.types.matrix(shape=(0, 0), dtype=float)


@wp.kernel(module="unique")
def slice_stores(a: wp.array(dtype=wp.vec4), b: wp.array(dtype=wp.mat44), j: wp.array(dtype=int),
                 ov: wp.array(dtype=wp.vec4), oq: wp.array(dtype=wp.quat), ot: wp.array(dtype=wp.transform),
                 om: wp.array(dtype=wp.mat44)):
    x = a[0]
    y = a[1]
    v = x
    v[1:] = y[:3]
    v[::-2] += wp.vec2(y[0], y[1])
    v[-123:2] -= x[2:]                 # clamped as Python does
    v[::-1] = v                        # the old value, reversed (the value is copied first)
    v[1:3] *= 2.0
    v[:] %= wp.vec4(3.0, 5.0, 7.0, 11.0)
    v[4:] = vec0()                     # empty: nothing changes
    ov[0] = v
    q = wp.quat(x[0], x[1], x[2], x[3])
    q[1::2] = y[::3]
    q[:-1] /= 4.0
    oq[0] = q
    t = wp.transform(wp.vec3(x[0], x[1], x[2]), wp.quat(y[0], y[1], y[2], y[3]))
    t[2:5] = x[1:]                     # across p and q
    t[::-3] += wp.vec3(1.0, 2.0, 3.0)  # components 6, 3, 0
    ot[0] = t
    m = b[0]
    n = b[1]
    m[1:] = n[:3]                      # whole rows
    m[:2, 1:3] += n[2:, ::2]
    m[j[0], 1:] = x[:3]                # a row chosen at run time
    m[1:3, j[0]] -= y[:2]              # a column chosen at run time
    m[::-1, 3] = x
    m[:2, :2] *= 0.5
    m[9:, 1:] = mat00()                # empty
    om[0] = m
    ov[1] = x                          # an array element's components
    ov[1][2:] = y[:2]
    ov[2] = x
    ov[2][:3] += y[1:]


def test_slice_assignment_follows_numpy(wp):
    rng = np.random.default_rng(11)
    av = rng.uniform(1.0, 9.0, (2, 4)).astype(np.float32)
    bv = rng.uniform(-5.0, 5.0, (2, 4, 4)).astype(np.float32)
    ov = wp.zeros(3, dtype=wp.vec4)
    oq = wp.zeros(1, dtype=wp.quat)
    ot = wp.zeros(1, dtype=wp.transform)
    om = wp.zeros(1, dtype=wp.mat44)
    wp.launch(slice_stores, dim=1, inputs=[wp.array(av, dtype=wp.vec4), wp.array(bv, dtype=wp.mat44),
                                           wp.array([2], dtype=int), ov, oq, ot, om])
    x, y = av
    v = x.copy()
    v[1:] = y[:3]
    v[::-2] += y[:2]
    v[-123:2] -= x[2:]
    v[::-1] = v.copy()
    v[1:3] *= np.float32(2.0)
    v[:] = np.fmod(v, np.array([3, 5, 7, 11], dtype=np.float32))  # Warp's % is C's fmod
    q = x.copy()
    q[1::2] = y[::3]
    q[:-1] /= np.float32(4.0)
    t = np.concatenate([x[:3], y])
    t[2:5] = x[1:]
    t[::-3] += np.array([1, 2, 3], dtype=np.float32)
    m, n = bv[0].copy(), bv[1]
    m[1:] = n[:3]
    m[:2, 1:3] += n[2:, ::2]
    m[2, 1:] = x[:3]
    m[1:3, 2] -= y[:2]
    m[::-1, 3] = x
    m[:2, :2] *= np.float32(0.5)
    e1, e2 = x.copy(), x.copy()
    e1[2:] = y[:2]
    e2[:3] += y[1:]
    np.testing.assert_array_equal(ov.numpy(), [v, e1, e2])
    np.testing.assert_array_equal(oq.numpy(), [q])
    np.testing.assert_array_equal(ot.numpy(), [t])
    np.testing.assert_array_equal(om.numpy(), [m])


@wp.kernel(module="unique")
def empty_slices(a: wp.array(dtype=wp.vec4), b: wp.array(dtype=wp.mat44), out: wp.array(dtype=int)):
    v = a[0]
    m = b[0]
    out[0] = len(v[4:]) + len(v[2:2]) + len(v[:-123]) + len(v[1:3:-1])
    out[1] = len(m[9:]) + len(m[1:, 4:]) + len(m[2, 7:]) + len(m[5:, 0])
    if v[123:] == vec0() and m[:-123] == mat00() and m[2:, 9:] == mat00():
        out[2] = 1
    e = v[3:1]
    e += vec0()
    v[3:3] = e
    m[1:1, :] = m[4:]
    if v == a[0] and m == b[0]:
        out[3] = 1
    t = wp.transform_identity()
    out[4] = len(t[7:]) + len(t[3:3])
    q = wp.quat_identity()
    q[5:] -= vec0()
    if q == wp.quat_identity():
        out[5] = 1


def test_empty_slices_are_zero_length_values(wp):
    out = wp.zeros(6, dtype=int)
    wp.launch(empty_slices, dim=1, inputs=[wp.array(np.ones((1, 4), np.float32), dtype=wp.vec4),
                                           wp.array(np.ones((1, 4, 4), np.float32), dtype=wp.mat44), out])
    assert list(out.numpy()) == [0, 0, 1, 1, 0, 1]
    # Python scope agrees: a block with an empty side has shape (0, 0), as in Warp.
    assert wp.types.vector(0, float)()._length_ == 0
    assert wp.mat44()[9:]._shape_ == (0, 0) and wp.mat44()[1:, 4:]._shape_ == (0, 0)


@pytest.mark.parametrize("body, message", [
    ("v = wp.vec4()\nv[1:] = wp.vec3d()\n",
     r"The provided vector is expected to be of length 3 with dtype float32\."),
    ("v = wp.vec4()\nv[1:] = wp.float64(5.0)\n",
     r"The provided value is expected to be a vector of length 3, with dtype float32\."),
    ("v = wp.vec4()\nv[1:] = wp.mat22()\n",
     r"The provided value is expected to be a vector of length 3, with dtype float32\."),
    ("v = wp.vec4()\nv[1:] = wp.vec2()\n",
     r"The length of the provided vector \(2\) isn't compatible with the given slice \(expected 3\)\."),
    ("v = wp.vec4()\nv[1:] += 1.0\n",
     r"The provided value is expected to be a vector of length 3, with dtype float32\."),
    ("q = wp.quat()\nq[:] = wp.quat()\n",
     r"The provided value is expected to be a vector of length 4, with dtype float32\."),
    ("t = wp.transform()\nt[1:] = wp.vec3()\n",
     r"The length of the provided vector \(3\) isn't compatible with the given slice \(expected 6\)\."),
    ("m = wp.mat44()\nm[1:, :2] = wp.mat22()\n",
     r"The shape of the provided matrix \(\(2, 2\)\) isn't compatible with the given slice \(expected \(3, 2\)\)\."),
    ("m = wp.mat44()\nm[:2, 1:] = 1.0\n",
     r"The provided value is expected to be a matrix of shape \(2, 3\), with dtype float32\."),
    ("m = wp.mat44()\nm[:2, 1:] = wp.matrix(wp.float64(0.0), shape=(2, 3))\n",
     r"The provided matrix is expected to be of shape \(2, 3\) with dtype float32\."),
    ("m = wp.mat44()\nm[9:] = wp.mat22()\n",
     r"The shape of the provided matrix \(\(2, 2\)\) isn't compatible with the given slice \(expected \(0, 0\)\)\."),
    ("m = wp.mat44()\nm[1, 1:] = wp.vec2()\n",
     r"The length of the provided vector \(2\) isn't compatible with the given slice \(expected 3\)\."),
    ("m = wp.mat44()\nm[:2, 1:] *= wp.vec3()\n",
     r"The provided value is expected to be a matrix of shape \(2, 3\), with dtype float32\."),
])
def test_slice_assignment_mistakes_are_warps_value_errors(wp, tmp_path, body, message):
    k = load(tmp_path, f"slice_assign_err_{abs(hash(body))}", body)
    with pytest.raises(ValueError, match=message):
        wp.launch(k, dim=1, inputs=[wp.zeros(3, dtype=float), 1])


@wp.kernel(module="unique")
def slice_store_chain(x: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat33d), q: wp.array(dtype=wp.quatd),
                      out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    v = wp.vec4d(a[0], a[1], a[2], a[0] * a[1])
    v[1:] = wp.cw_mul(a, a)
    v[::-2] += wp.vec2d(wp.sin(a[2]), a[0] * a[2])
    v[:3] *= a[1]
    r = q[i]
    r[1::2] -= v[:2]
    r[:-1] = r[::-1][1:] * r[3]
    t = wp.transformd(wp.vec3d(a[2], a[1], a[0]), r)
    t[2:5] = v[1:] * t[6]
    t[::3] /= a[0] + wp.float64(3.0)
    b = m[i]
    b[1:, :2] = b[:2, 1:] * b[0, 0]
    b[0, 1:] += wp.vec2d(v[0], t[3])
    b[:, 2] -= wp.vec3d(t[0], t[4], r[1]) * b[1, 1]
    b[::-1] = b * b[2, 0]
    out[i] = wp.dot(v, v) + wp.dot(t[:], t[:]) + wp.ddot(b, b) + wp.dot(r, r)


def _loss(wp, x, m, q):
    out = wp.zeros(x.shape[0], dtype=wp.float64)
    wp.launch(slice_store_chain, dim=x.shape[0], inputs=[x, m, q, out])
    return out.numpy().sum()


def test_slice_assignment_gradients_match_finite_differences(wp):
    rng = np.random.default_rng(5)
    n = 3
    values = [rng.uniform(0.5, 1.5, (n, 3)), rng.uniform(-1.0, 1.0, (n, 3, 3)), rng.uniform(-1.0, 1.0, (n, 4))]
    dtypes = [wp.vec3d, wp.mat33d, wp.quatd]
    arrays = [wp.array(v, dtype=d, requires_grad=True) for v, d in zip(values, dtypes)]
    out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(slice_store_chain, dim=n, inputs=arrays + [out])
    tape.backward(grads={out: wp.ones(n, dtype=wp.float64)})
    eps = 1e-6
    for which, base in enumerate(values):
        fd = np.zeros(base.size)
        for k in range(base.size):
            plus, minus = base.copy().reshape(-1), base.copy().reshape(-1)
            plus[k] += eps
            minus[k] -= eps
            args_p = [wp.array(v, dtype=d) for v, d in zip(values, dtypes)]
            args_m = [wp.array(v, dtype=d) for v, d in zip(values, dtypes)]
            args_p[which] = wp.array(plus.reshape(base.shape), dtype=dtypes[which])
            args_m[which] = wp.array(minus.reshape(base.shape), dtype=dtypes[which])
            fd[k] = (_loss(wp, *args_p) - _loss(wp, *args_m)) / (2 * eps)
        np.testing.assert_allclose(arrays[which].grad.numpy().reshape(-1), fd, rtol=1e-5, atol=1e-6)


@wp.kernel(module="unique")
def warp_slice_backward(arr_x: wp.array(dtype=wp.vec2), arr_y: wp.array(dtype=mat23), arr_z: wp.array(dtype=wp.mat44)):
    i = wp.tid()
    z = arr_z[i]
    z[0, :2] = arr_x[i]                # overwritten components take no gradient
    z[:2, 1:] = arr_y[i]
    z[:2, 3] += arr_x[i][:2]
    z[1:-1, :2] += arr_y[i][::-1, :-1]
    z[2:, 3] -= arr_x[i][0:]
    z[3:, -1:] -= arr_y[i][:1, :1]
    arr_z[i] = z


def test_overwritten_slices_take_no_gradient(wp):
    """Warp's own case, hand-computed: z[0, :2] = x is overwritten at (0, 1) by z[:2, 1:] = y, so
    x[1] reaches the sum of z only through z[1, 3] (+1) and z[3, 3] (-1): its gradient is 0 (Warp
    gives it with wp.config.enable_vector_component_overwrites, test_mat_assign_copy.py)."""
    x = wp.ones(1, dtype=wp.vec2, requires_grad=True)
    y = wp.ones(1, dtype=mat23, requires_grad=True)
    z = wp.zeros(1, dtype=wp.mat44, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(warp_slice_backward, 1, inputs=(x, y), outputs=(z,))
    z.grad = wp.ones_like(z)
    tape.backward()
    np.testing.assert_array_equal(z.numpy()[0], [[1, 1, 1, 2], [1, 2, 1, 2], [1, 1, 0, -1], [0, 0, 0, -2]])
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0]])
    np.testing.assert_array_equal(y.grad.numpy(), [[[1.0, 2.0, 1.0], [2.0, 2.0, 1.0]]])


def test_too_many_indices_use_warps_words(wp):
    # Warp 1.19 (test_struct test_assign_view): out[0] of a 2-D array is a 1-D view; [2, 2]
    # on it is too many indices.
    @wp.kernel(module="unique")
    def assign_view(out: wp.array2d(dtype=wp.mat44)):
        out[0][2, 2] = 6.0

    with pytest.raises(wp.WarpCodegenError, match=r"Incorrect number of indices specified for array indexing: "
                                                  r"an array with ndim=1 indexed with 2 indices"):
        wp.launch(assign_view, dim=[1, 1], inputs=[wp.zeros((1, 1), dtype=wp.mat44)])
