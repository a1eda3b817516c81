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


def test_array_slices_are_views_with_pythons_bounds():
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


def test_vector_and_matrix_slices_follow_numpy():
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
    ("v = wp.vec3(1.0, 2.0, 3.0)\nw = v[2:1]\n", "selects no component"),
    ("v = wp.vec3(1.0, 2.0, 3.0)\nw = v[::0]\n", "step cannot be zero"),
    ("v = wp.vec3(1.0, 2.0, 3.0)\nv[0:2] = wp.vec2(1.0, 2.0)\n", "a slice cannot be assigned"),
    ("y = x[::0]\n", "step cannot be zero"),
    ("x[0:2] = 1.0\n", "a slice cannot be assigned"),
    ("s = float(n)\nr = s[0:2]\n", "cannot be sliced"),
])
def test_slice_mistakes_are_compile_errors(tmp_path, body, message):
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


def test_extreme_steps_take_pythons_lengths():
    """Steps near the int64 limits take the lengths Python gives (never a negative extent)."""
    xv = np.arange(N, dtype=np.float32)
    steps = [2**63 - 1, -(2**63 - 1), -(2**63), 2**62, -3, 3]
    lens = wp.zeros(len(steps), dtype=int)
    firsts = wp.zeros(len(steps), dtype=float)
    wp.launch(extreme_steps, dim=1, inputs=[wp.array(xv), wp.array(steps, dtype=wp.int64), lens, firsts])
    assert list(lens.numpy()) == [len(xv[::s]) for s in steps]
    np.testing.assert_array_equal(firsts.numpy(), [xv[::s][-1] for s in steps])
