"""Values of the Utility builtins (and lower_bound, static), against NumPy and brute force.

Semantics checked against warp-lang 1.19.0 on CPU: block_dim() is 1 on the
CPU; lerp(a, b, t) = a (1 - t) + b t component-wise (quaternions and
transforms too, no slerp); smoothstep(a, b, x) = t^2 (3 - 2t) with t =
clamp((x - a) / (b - a), 0, 1); where(cond, a, b) takes bool or integer
conditions and arrays (non-null: true; an empty array is null: false); `not
arr` is true for an empty array; len(transform) == 7, len(mat33) == 3;
wp.cast(x, dtype) reinterprets the bits (cast(1.0, int32) == 1065353216);
print/printf/expect_near write "1 2.5 -3 ", "0 0 0 1", "Error, expect_near()
failed with tolerance 0.1" and the values (exact output in
test_print_printf_expect_near).
"""

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

N = 64


# ------------------------------------------------------------ tid, block_dim, breakpoint

@wp.kernel
def tid_1d(out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = i + wp.block_dim() * 1000


@wp.kernel
def tid_2d(out: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    out[i, j] = i * 10 + j


@wp.kernel
def tid_3d(out: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    wp.breakpoint()  # a no-op without a debugger
    out[i, j, k] = i * 100 + j * 10 + k


@wp.kernel
def tid_4d(out: wp.array4d(dtype=wp.int32)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = i * 1000 + j * 100 + k * 10 + l


def test_tid_block_dim_breakpoint(wp):
    for kernel, shape in ((tid_1d, (7,)), (tid_2d, (3, 5)), (tid_3d, (2, 3, 4)), (tid_4d, (2, 3, 2, 3))):
        out = wp.zeros(shape, dtype=wp.int32)
        wp.launch(kernel, dim=shape, inputs=[out])
        idx = np.indices(shape)
        want = sum(idx[d] * 10 ** (len(shape) - 1 - d) for d in range(len(shape)))
        if len(shape) == 1:
            want = want + 1000  # block_dim() == 1 on the CPU
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"tid {len(shape)}-D")


# ------------------------------------------------------------ atomics

ATOMIC_DTYPES = {"int32": (wp.int32, np.int32), "uint32": (wp.uint32, np.uint32), "int64": (wp.int64, np.int64),
                 "uint64": (wp.uint64, np.uint64), "float32": (wp.float32, np.float32),
                 "float64": (wp.float64, np.float64), "float16": (wp.float16, np.float16)}
INT_ATOMICS = ("int32", "uint32", "int64", "uint64")
SLOTS = 4
ATOMIC_OPS = ["atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exch", "atomic_cas", "atomic_and",
              "atomic_or", "atomic_xor"]


def _make_atomic_kernels(T, tag, bitwise):
    """atomic_add alone (what the native runtime has), and every atomic (in a module of its own)."""
    # acc[op, slot]: thread i works on slot i % SLOTS; old[op, i]: what each call returned.
    atomic_add_only = None
    if tag != "float16":
        @specialize(tag)
        def atomic_add_only(v: wp.array(dtype=T), acc: wp.array2d(dtype=T), old: wp.array2d(dtype=T)):
            i = wp.tid()
            old[0, i] = wp.atomic_add(acc, 0, i % 4, v[i])

    if tag == "float16":  # Warp 1.19 has only atomic_add and atomic_sub on float16
        @specialize(tag, module="unique")
        def atomics(v: wp.array(dtype=T), acc: wp.array2d(dtype=T), old: wp.array2d(dtype=T)):
            i = wp.tid()
            old[0, i] = wp.atomic_add(acc, 0, i % 4, v[i])
            old[1, i] = wp.atomic_sub(acc, 1, i % 4, v[i])
    elif bitwise:
        @specialize(tag, module="unique")
        def atomics(v: wp.array(dtype=T), acc: wp.array2d(dtype=T), old: wp.array2d(dtype=T)):
            i = wp.tid()
            s = i % 4
            old[0, i] = wp.atomic_add(acc, 0, s, v[i])
            old[1, i] = wp.atomic_sub(acc, 1, s, v[i])
            old[2, i] = wp.atomic_min(acc, 2, s, v[i])
            old[3, i] = wp.atomic_max(acc, 3, s, v[i])
            old[4, i] = wp.atomic_exch(acc, 4, s, v[i])
            old[5, i] = wp.atomic_cas(acc, 5, s, T(0), v[i])
            old[6, i] = wp.atomic_and(acc, 6, s, v[i])
            old[7, i] = wp.atomic_or(acc, 7, s, v[i])
            old[8, i] = wp.atomic_xor(acc, 8, s, v[i])
    else:
        @specialize(tag, module="unique")
        def atomics(v: wp.array(dtype=T), acc: wp.array2d(dtype=T), old: wp.array2d(dtype=T)):
            i = wp.tid()
            s = i % 4
            old[0, i] = wp.atomic_add(acc, 0, s, v[i])
            old[1, i] = wp.atomic_sub(acc, 1, s, v[i])
            old[2, i] = wp.atomic_min(acc, 2, s, v[i])
            old[3, i] = wp.atomic_max(acc, 3, s, v[i])
            old[4, i] = wp.atomic_exch(acc, 4, s, v[i])
            old[5, i] = wp.atomic_cas(acc, 5, s, T(0), v[i])

    return atomic_add_only, atomics


ATOMIC_KERNELS = {tag: _make_atomic_kernels(T, tag, tag in INT_ATOMICS) for tag, (T, _) in ATOMIC_DTYPES.items()}


def _run_atomics(wp, dtype, kernel, nops):
    """Launches N threads on SLOTS elements per op; returns (v, init, final acc, old values)."""
    T, np_t = ATOMIC_DTYPES[dtype]
    rng = np.random.default_rng(700)
    # distinct positive values (exact in every dtype: small integers), so that old values order the calls
    v = (rng.permutation(N) + 1).astype(np_t)
    init = np.zeros((nops, SLOTS), dtype=np.float64)
    if nops > 1:
        init[1] = 2048  # atomic_sub counts down from here: no unsigned wrap, exact in float16
    if nops > 2:
        init[2] = N + 1  # atomic_min starts above every value
    if nops > 6:
        init[6] = (1 << 20) - 1  # atomic_and from all ones (20 bits)
    acc = wp.array(init.astype(np_t), dtype=T)
    old = wp.zeros((nops, N), dtype=T)
    wp.launch(kernel, dim=N, inputs=[wp.array(v, dtype=T), acc, old])
    return v, init, acc.numpy().astype(np.float64), old.numpy().astype(np.float64)


def _check_atomics(v, init, got, gold, nops):
    vf = v.astype(np.float64)
    for s in range(SLOTS):
        mine = np.arange(N) % SLOTS == s
        vs, o = vf[mine], gold[:, mine]
        assert got[0, s] == vs.sum(), "atomic_add total"
        order = np.argsort(o[0])  # each add returned the sum of the adds before it
        np.testing.assert_array_equal(o[0][order], np.concatenate([[0], np.cumsum(vs[order])[:-1]]), "atomic_add old")
        if nops == 1:
            continue
        assert got[1, s] == init[1, s] - vs.sum(), "atomic_sub total"
        order = np.argsort(-o[1])
        np.testing.assert_array_equal(o[1][order], init[1, s] - np.concatenate([[0], np.cumsum(vs[order])[:-1]]),
                                      "atomic_sub old")
        if nops == 2:
            continue
        assert got[2, s] == vs.min() and np.all(o[2] >= vs.min()) and o[2].max() == N + 1, "atomic_min"
        assert got[3, s] == vs.max() and np.all(o[3] <= vs.max()) and o[3].min() == 0, "atomic_max"
        # exch: the old values and the final value are the initial 0 and the written values, each once
        np.testing.assert_array_equal(np.sort(np.append(o[4], got[4, s])), np.sort(np.append(vs, 0)), "atomic_exch")
        # cas(compare=0): exactly one thread finds 0 and writes; the others see its value
        winners = o[5] == 0
        assert winners.sum() == 1 and got[5, s] == vs[winners][0] and np.all(o[5][~winners] == got[5, s]), "atomic_cas"
        if nops > 6:
            vi = [int(x) for x in v[mine]]
            a, b, c = (1 << 20) - 1, 0, 0
            for x in vi:
                a, b, c = a & x, b | x, c ^ x
            assert (got[6, s], got[7, s], got[8, s]) == (a, b, c), "atomic_and/or/xor totals"
            assert all(int(x) & a == a for x in o[6]), "atomic_and old values hold the final bits"
            assert all(int(x) | b == b for x in o[7]), "atomic_or old values are subsets"


@pytest.mark.parametrize("dtype", [d for d in ATOMIC_DTYPES if d != "float16"])
def test_atomic_add(wp, dtype):
    """Final sums and the returned old values, many threads per element."""
    _check_atomics(*_run_atomics(wp, dtype, ATOMIC_KERNELS[dtype][0], 1), 1)


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES)
def test_all_atomics(wp, dtype):
    nops = 9 if dtype in INT_ATOMICS else 2 if dtype == "float16" else 6
    _check_atomics(*_run_atomics(wp, dtype, ATOMIC_KERNELS[dtype][1], nops), nops)


@wp.kernel
def atomic_add_nd(v: wp.array(dtype=float), a2: wp.array2d(dtype=float), a3: wp.array3d(dtype=float),
                  a4: wp.array4d(dtype=float), av: wp.array(dtype=wp.vec3), avd: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    wp.atomic_add(a2, i % 2, i % 3, v[i])
    wp.atomic_add(a3, i % 2, 0, i % 3, -v[i])
    wp.atomic_add(a4, 0, i % 2, 1, i % 3, v[i] * 2.0)
    wp.atomic_add(av, 0, wp.vec3(v[i], 1.0, -v[i]))
    wp.atomic_add(avd, 0, wp.vec2d(wp.float64(v[i]), wp.float64(2.0)))


def test_atomic_add_multidim_and_vectors(wp):
    v = (np.arange(N) + 1).astype(np.float32)
    a2 = wp.zeros((2, 3), dtype=float)
    a3 = wp.zeros((2, 1, 3), dtype=float)
    a4 = wp.zeros((1, 2, 2, 3), dtype=float)
    av = wp.zeros(1, dtype=wp.vec3)
    avd = wp.zeros(1, dtype=wp.vec2d)
    wp.launch(atomic_add_nd, dim=N, inputs=[wp.array(v), a2, a3, a4, av, avd])
    i = np.arange(N)
    w2 = np.zeros((2, 3))
    np.add.at(w2, (i % 2, i % 3), v)
    np.testing.assert_array_equal(a2.numpy(), w2, err_msg="2-D atomic_add")
    np.testing.assert_array_equal(a3.numpy()[:, 0], -w2, err_msg="3-D atomic_add")
    np.testing.assert_array_equal(a4.numpy()[0, :, 1], 2 * w2, err_msg="4-D atomic_add")
    np.testing.assert_array_equal(av.numpy(), [[v.sum(), N, -v.sum()]], err_msg="vec3 atomic_add (component-wise)")
    np.testing.assert_array_equal(avd.numpy(), [[v.sum(), 2.0 * N]], err_msg="vec2d atomic_add")


# ------------------------------------------------------------ lerp, smoothstep

def _make_lerp_kernel(T, V3, V4, tag):
    @specialize(tag)
    def lerp_smooth(a: wp.array(dtype=V4), b: wp.array(dtype=V4), t: wp.array(dtype=T), out: wp.array2d(dtype=V4),
                    os: wp.array2d(dtype=T)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        os[i, 0] = wp.lerp(x[0], y[0], t[i])
        os[i, 1] = wp.smoothstep(x[0], y[0], t[i])
        out[i, 0] = wp.lerp(x, y, t[i])
        m = wp.lerp(wp.matrix_from_rows(V3(x[0], x[1], x[2]), V3(x[3], x[2], x[1])),
                    wp.matrix_from_rows(V3(y[0], y[1], y[2]), V3(y[3], y[2], y[1])), t[i])
        out[i, 1] = V4(m[0, 0], m[0, 1], m[0, 2], m[1, 0])
        q = wp.lerp(wp.quaternion(x[0], x[1], x[2], x[3], dtype=T), wp.quaternion(y[0], y[1], y[2], y[3], dtype=T),
                    t[i])
        out[i, 2] = V4(q[0], q[1], q[2], q[3])
        tr = wp.lerp(wp.transformation(V3(x[3], x[2], x[1]), wp.quaternion(x[0], x[1], x[2], x[3], dtype=T), dtype=T),
                     wp.transformation(V3(y[3], y[2], y[1]), wp.quaternion(y[0], y[1], y[2], y[3], dtype=T), dtype=T),
                     t[i])
        out[i, 3] = V4(tr.p[0], tr.p[1], tr.p[2], tr.q[0])
        out[i, 4] = V4(tr.q[1], tr.q[2], tr.q[3], T(0.0))

    return lerp_smooth


LERP = {"float32": (wp.float32, np.float32, wp.vec3f, wp.vec4f), "float64": (wp.float64, np.float64, wp.vec3d, wp.vec4d),
        "float16": (wp.float16, np.float16, wp.vec3h, wp.vec4h)}
LERP_KERNELS = {tag: _make_lerp_kernel(T, V3, V4, tag) for tag, (T, _, V3, V4) in LERP.items()}


@pytest.mark.parametrize("dtype", LERP)
def test_lerp_smoothstep(wp, dtype):
    T, np_t, V3, V4 = LERP[dtype]
    rng = np.random.default_rng(701)
    a = rng.uniform(-3, 3, (N, 4)).astype(np_t)
    b = rng.uniform(-3, 3, (N, 4)).astype(np_t)
    t = rng.uniform(-0.5, 1.5, N).astype(np_t)  # smoothstep clamps outside [a, b]
    b[0, 0] = a[0, 0]  # a == b: smoothstep divides by zero; not compared below
    out = wp.zeros((N, 5), dtype=V4)
    os = wp.zeros((N, 2), dtype=T)
    wp.launch(LERP_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=V4), wp.array(b, dtype=V4), wp.array(t, dtype=T),
                                                 out, os])
    g, gs = out.numpy().astype(np.float64), os.numpy().astype(np.float64)
    a, b, t = a.astype(np.float64), b.astype(np.float64), t.astype(np.float64)
    tt = t[:, None]
    lerp = a * (1 - tt) + b * tt
    tol = {"float16": dict(rtol=5e-3, atol=5e-3), "float32": dict(rtol=1e-5, atol=1e-5),
           "float64": dict(rtol=1e-12, atol=1e-12)}[dtype]
    np.testing.assert_allclose(gs[:, 0], lerp[:, 0], err_msg="lerp scalar", **tol)
    u = np.clip((t - a[:, 0]) / np.where(b[:, 0] != a[:, 0], b[:, 0] - a[:, 0], 1), 0, 1)
    np.testing.assert_allclose(gs[1:, 1], (u * u * (3 - 2 * u))[1:], err_msg="smoothstep", **tol)
    np.testing.assert_allclose(g[:, 0], lerp, err_msg="lerp vec4", **tol)
    np.testing.assert_allclose(g[:, 1], lerp[:, [0, 1, 2, 3]], err_msg="lerp mat23", **tol)
    np.testing.assert_allclose(g[:, 2], lerp, err_msg="lerp quat (component-wise)", **tol)
    np.testing.assert_allclose(g[:, 3], np.concatenate([lerp[:, [3, 2, 1]], lerp[:, :1]], 1), err_msg="lerp transform",
                               **tol)
    np.testing.assert_allclose(g[:, 4, :3], lerp[:, 1:], err_msg="lerp transform q", **tol)


# ------------------------------------------------------------ where, select, len, not

@wp.kernel
def where_select_len(c: wp.array(dtype=wp.int32), x: wp.array(dtype=wp.vec3), full: wp.array(dtype=float),
                     empty: wp.array(dtype=float), out: wp.array2d(dtype=float), ov: wp.array2d(dtype=wp.vec3),
                     oi: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    ci = c[i]
    cb = ci > 0
    out[i, 0] = wp.where(cb, x[i][0], x[i][1])
    out[i, 1] = wp.where(ci, x[i][0], x[i][1])  # an integer condition: nonzero
    out[i, 2] = wp.where(wp.int8(ci), x[i][0], x[i][1])
    out[i, 3] = wp.where(wp.uint64(ci * ci), x[i][0], x[i][1])
    out[i, 4] = wp.select(cb, x[i][0], x[i][1])  # select(cond, value_if_false, value_if_true)
    out[i, 5] = wp.where(full, x[i][0], x[i][1])
    out[i, 6] = wp.where(empty, x[i][0], x[i][1])
    out[i, 7] = wp.select(full, x[i][0], x[i][1])
    ov[i, 0] = wp.where(cb, x[i], -x[i])
    m = wp.where(cb, wp.identity(n=3, dtype=float), wp.diag(x[i]))
    ov[i, 1] = m[1]
    ov[i, 2] = wp.select(ci, x[i], -x[i])
    oi[i, 0] = len(x[i])
    oi[i, 1] = len(wp.quat_identity())
    oi[i, 2] = len(m)
    oi[i, 3] = len(wp.transform_identity())
    oi[i, 4] = len(full)
    oi[i, 5] = len(empty)
    oi[i, 6] = len(wp.matrix(1.0, shape=(2, 5), dtype=float))


def test_where_select_len_not(wp):
    rng = np.random.default_rng(702)
    c = rng.integers(-2, 3, N).astype(np.int32)
    x = rng.uniform(-5, 5, (N, 3)).astype(np.float32)
    full = wp.zeros(5, dtype=float)
    empty = wp.zeros(0, dtype=float)
    out = wp.zeros((N, 8), dtype=float)
    ov = wp.zeros((N, 3), dtype=wp.vec3)
    oi = wp.zeros((N, 7), dtype=wp.int32)
    wp.launch(where_select_len, dim=N, inputs=[wp.array(c, dtype=wp.int32), wp.array(x, dtype=wp.vec3), full, empty,
                                              out, ov, oi])
    g = out.numpy()
    pos, nz = c > 0, c != 0
    np.testing.assert_array_equal(g[:, 0], np.where(pos, x[:, 0], x[:, 1]), err_msg="where(bool)")
    np.testing.assert_array_equal(g[:, 1], np.where(nz, x[:, 0], x[:, 1]), err_msg="where(int32)")
    np.testing.assert_array_equal(g[:, 2], np.where(nz, x[:, 0], x[:, 1]), err_msg="where(int8)")
    np.testing.assert_array_equal(g[:, 3], np.where(nz, x[:, 0], x[:, 1]), err_msg="where(uint64)")
    np.testing.assert_array_equal(g[:, 4], np.where(pos, x[:, 1], x[:, 0]), err_msg="select(bool)")
    np.testing.assert_array_equal(g[:, 5], x[:, 0], err_msg="where(array)")
    np.testing.assert_array_equal(g[:, 6], x[:, 1], err_msg="where(empty array)")
    np.testing.assert_array_equal(g[:, 7], x[:, 1], err_msg="select(array)")
    gv = ov.numpy()
    np.testing.assert_array_equal(gv[:, 0], np.where(pos[:, None], x, -x), err_msg="where(vec3)")
    np.testing.assert_array_equal(gv[:, 1], np.where(pos[:, None], [0.0, 1.0, 0.0], x * [0, 1, 0]),
                                  err_msg="where(mat33)")
    np.testing.assert_array_equal(gv[:, 2], np.where(nz[:, None], -x, x), err_msg="select(int32, vec3)")
    np.testing.assert_array_equal(oi.numpy(), np.tile([3, 4, 3, 7, 5, 0, 2], (N, 1)),
                                  err_msg="len(vec3, quat, mat33, transform, array, empty array, mat25)")


@wp.kernel(module="unique")
def not_array(full: wp.array(dtype=float), empty: wp.array(dtype=float), out: wp.array(dtype=wp.int32)):
    out[0] = int(not full)
    out[1] = int(not empty)
    out[2] = int(wp.unot(full))


def test_not_array(wp):
    out = wp.zeros(3, dtype=wp.int32)
    wp.launch(not_array, dim=1, inputs=[wp.zeros(5, dtype=float), wp.zeros(0, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [0, 1, 0])


# ------------------------------------------------------------ lower_bound

def _make_lower_bound_kernel(T, tag):
    @specialize(tag)
    def lower_bound(arr: wp.array(dtype=T), q: wp.array(dtype=T), out: wp.array2d(dtype=wp.int32)):
        i = wp.tid()
        out[i, 0] = wp.lower_bound(arr, q[i])
        out[i, 1] = wp.lower_bound(arr, 3, 9, q[i])

    return lower_bound


LOWER_BOUND = {"int32": (wp.int32, np.int32), "float32": (wp.float32, np.float32), "float64": (wp.float64, np.float64),
               "uint64": (wp.uint64, np.uint64)}
LOWER_BOUND_KERNELS = {tag: _make_lower_bound_kernel(T, tag) for tag, (T, _) in LOWER_BOUND.items()}


@pytest.mark.parametrize("dtype", LOWER_BOUND)
def test_lower_bound(wp, dtype):
    T, np_t = LOWER_BOUND[dtype]
    rng = np.random.default_rng(703)
    arr = np.sort(rng.integers(0, 30, 16)).astype(np_t)  # with duplicates
    q = np.concatenate([arr[::2], rng.integers(0, 32, N - 8)]).astype(np_t)
    out = wp.zeros((N, 2), dtype=wp.int32)
    wp.launch(LOWER_BOUND_KERNELS[dtype], dim=N, inputs=[wp.array(arr, dtype=T), wp.array(q, dtype=T), out])

    def brute(lo, hi, v):  # Warp 1.19: the first index in [lo, hi - 1] whose value is >= v, else hi - 1
        return next((k for k in range(lo, hi - 1) if arr[k] >= v), hi - 1)

    np.testing.assert_array_equal(out.numpy()[:, 0], [brute(0, len(arr), v) for v in q], err_msg="lower_bound")
    np.testing.assert_array_equal(out.numpy()[:, 1], [brute(3, 9, v) for v in q], err_msg="lower_bound range")


# ------------------------------------------------------------ print, printf, expect_near

@wp.kernel
def printing(a: wp.array(dtype=float)):
    print(7)
    print(a[0])
    print(wp.vec3(1.0, 2.5, -3.0))
    print(wp.float64(0.1))
    print(wp.mat22(1.0, 2.0, 3.0, 4.0))
    print(wp.quat(0.0, 0.0, 0.0, 1.0))
    wp.printf("i=%d f=%f g=%.3f\n", 3, a[0], a[0])
    wp.expect_near(a[0], 1.25, 0.1)  # passes: prints nothing
    wp.expect_near(a[0], 2.0, 0.1)
    wp.expect_near(wp.vec2(a[0], 1.0), wp.vec2(1.0, 1.0), 0.5)


def test_print_printf_expect_near(wp, capsys):
    wp.synchronize()
    capsys.readouterr()
    wp.launch(printing, dim=1, inputs=[wp.array([1.25], dtype=float)])
    wp.synchronize()
    # the exact output of warp-lang 1.19.0 (CPU) for this kernel
    assert capsys.readouterr().out == ("7\n1.25\n1 2.5 -3 \n0.1\n1 2 \n3 4 \n0 0 0 1\ni=3 f=1.250000 g=1.250\n"
                                       "Error, expect_near() failed with tolerance 0.1\n    Expected: 2\n"
                                       "    Actual: 1.25\n    Absolute difference: 0.75\n")


@wp.kernel(module="unique")
def expect_near_quat_mat():
    wp.expect_near(wp.quat(0.0, 0.0, 0.5, 1.0), wp.quat_identity(), 0.1)
    wp.expect_near(wp.mat22(1.0, 0.0, 0.3, 1.0), wp.identity(n=2, dtype=float), 0.1)
    wp.expect_near(wp.quat(0.0, 0.0, 0.05, 1.0), wp.quat_identity(), 0.1)  # within the tolerance: silent
    wp.expect_near(wp.mat22(1.0, 0.0, 0.0, 1.0), wp.identity(n=2, dtype=float), 0.1)


def test_expect_near_quat_matrix(wp, capsys):
    wp.synchronize()
    capsys.readouterr()
    wp.launch(expect_near_quat_mat, dim=1)
    wp.synchronize()
    # the exact output of warp-lang 1.19.0 (CPU) for this kernel
    assert capsys.readouterr().out == ("Error, expect_near() failed with tolerance 0.1\n    Expected: 0 0 0 1\n"
                                       "    Actual: 0 0 0.5 1\n    Max absolute difference: 0.5\n"
                                       "Error, expect_near() failed with tolerance 0.1\n    Expected: 1 0 \n0 1 \n"
                                       "    Actual: 1 0 \n0.3 1 \n    Max absolute difference: 0.3\n")


# ------------------------------------------------------------ known gaps (xfail: each turns into a failure once fixed)

@wp.kernel(module="unique")
def bit_cast(out: wp.array(dtype=wp.int32), outf: wp.array(dtype=float)):
    out[0] = wp.cast(1.0, wp.int32)
    outf[0] = wp.cast(1065353216, wp.float32)


def test_cast_reinterprets_bits(wp):
    out = wp.zeros(1, dtype=wp.int32)
    outf = wp.zeros(1, dtype=float)
    wp.launch(bit_cast, dim=1, inputs=[out, outf])
    assert out.numpy()[0] == 1065353216
    assert outf.numpy()[0] == 1.0


@wp.struct
class Pun:
    f: wp.float16
    i: wp.int16


@wp.struct
class Padded:
    a: wp.int8
    b: wp.int32


@wp.struct
class WithArray:
    a: wp.array(dtype=float)
    pad: wp.int32


@wp.kernel(module="unique")
def struct_cast(out: wp.array(dtype=wp.int32)):
    # Warp 1.19 (test_codegen test_cast): a struct's bytes as an int32 and back
    p = Pun()
    p.f = wp.float16(2.0)
    p.i = wp.int16(123)
    out[0] = wp.cast(p, wp.int32)
    q = wp.cast(out[0], Pun)
    out[1] = wp.int32(q.i)
    out[2] = wp.int32(float(q.f) * 10.0)


def test_cast_of_structs(wp):
    out = wp.zeros(3, dtype=wp.int32)
    wp.launch(struct_cast, dim=1, inputs=[out])
    # float16 2.0 is 0x4000 (low half), int16 123 the high half
    assert out.numpy().tolist() == [0x007B4000, 123, 20]

    # Padding bytes hold whatever the stack held, descriptors are addresses: refused.
    @wp.kernel(module="unique")
    def padded(out: wp.array(dtype=wp.int64)):
        out[0] = wp.cast(Padded(), wp.int64)

    @wp.kernel(module="unique")
    def forged(out: wp.array(dtype=wp.int64)):
        s = wp.cast(wp.mat44d(), WithArray)  # noqa: F841

    for k in (padded, forged):
        with pytest.raises(wp.CompileError, match="a struct casts only when it holds no array and has no padding"):
            wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=wp.int64)])


@wp.kernel(module="unique")
def local_zeros(out: wp.array(dtype=float)):
    a = wp.zeros(shape=(3,), dtype=float)
    a[1] = 2.0
    out[0] = a[0] + a[1] + float(len(a))


def test_local_zeros(wp):
    out = wp.zeros(1, dtype=float)
    wp.launch(local_zeros, dim=1, inputs=[out])
    assert out.numpy()[0] == 5.0


SCALE = 3.0


@wp.kernel(module="unique")
def static_expr(out: wp.array(dtype=float)):
    out[0] = wp.static(SCALE * 2.0)


def test_static(wp):
    out = wp.zeros(1, dtype=float)
    wp.launch(static_expr, dim=1, inputs=[out])
    assert out.numpy()[0] == 6.0


@wp.kernel(module="unique")
def tuple_len(out: wp.array(dtype=float)):
    t = (1.0, 2.0, 3.0)
    out[0] = float(len(t))


def test_len_of_tuple(wp):
    out = wp.zeros(1, dtype=float)
    wp.launch(tuple_len, dim=1, inputs=[out])
    assert out.numpy()[0] == 3.0


@wp.kernel(module="unique")
def array_from_pointer(out: wp.array(dtype=float)):
    a = wp.array(ptr=wp.uint64(0), shape=(1,), dtype=float)
    out[0] = a[0]


def test_array_from_pointer_is_refused(wp):
    """wp.array(ptr=...) in kernels is refused by design: pointers are not safe to share between tenants."""
    with pytest.raises(wp.CompileError, match="not available in warpd kernels"):
        wp.launch(array_from_pointer, dim=1, inputs=[wp.zeros(1, dtype=float)])


@wp.kernel
def augmented_atomics(m: wp.array(dtype=wp.mat22), h: wp.array(dtype=wp.float16), q: wp.array(dtype=wp.quatd),
                      t: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    m[0] += wp.mat22(1.0, 2.0, 3.0, float(i))
    m[1] -= wp.mat22(1.0, 1.0, 1.0, 1.0)
    h[0] += wp.float16(1.0)
    q[0] += wp.quatd(wp.float64(1.0), wp.float64(0.0), wp.float64(-1.0), wp.float64(0.5))
    old = wp.atomic_max(t, 0, wp.vec3(float(i), 0.0, -float(i)))
    wp.atomic_min(m, 1, old[0] * wp.mat22(0.0, 0.0, 0.0, 1.0))


def test_augmented_assignment_atomics_on_composites_and_half(wp):
    """a[i] += x on matrix, quaternion and float16 arrays is an atomic add per component."""
    n = 200
    m = wp.zeros(2, dtype=wp.mat22)
    h = wp.zeros(1, dtype=wp.float16)
    q = wp.zeros(1, dtype=wp.quatd)
    t = wp.zeros(1, dtype=wp.vec3)
    wp.launch(augmented_atomics, dim=n, inputs=[m, h, q, t])
    got = m.numpy()
    np.testing.assert_array_equal(got[0], [[n, 2 * n], [3 * n, n * (n - 1) / 2]])
    # m[1]: -n in every component; the min with old[0] >= 0 never lowers it.
    np.testing.assert_array_equal(got[1], [[-n, -n], [-n, -n]])
    assert h.numpy()[0] == n  # exact in float16
    np.testing.assert_array_equal(q.numpy()[0], [n, 0, -n, n / 2])
    np.testing.assert_array_equal(t.numpy()[0], [n - 1, 0, 0])


@wp.kernel
def transform_atomics(x: wp.array(dtype=wp.transform), xd: wp.array(dtype=wp.transformd),
                      add: wp.array(dtype=wp.transform), sub: wp.array(dtype=wp.transform),
                      addd: wp.array(dtype=wp.transformd), old: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    add[0] += x[i]
    sub[i % 2] -= x[i]
    wp.atomic_add(addd, 0, xd[i])
    old[i] = wp.atomic_sub(addd, 1, xd[i])


@wp.kernel
def transform_atomic_ops(x: wp.array(dtype=wp.transform), y: wp.array(dtype=wp.transform)):
    i = wp.tid()
    y[i] += x[i]
    wp.atomic_sub(y, i, x[i] * 3.0)


def test_atomic_add_sub_on_transforms(wp):
    """a[i] += t and wp.atomic_add/sub on arrays of transforms: component-wise (Warp 1.19 adds p and q)."""
    n = 64
    rng = np.random.default_rng(7)
    vals = (rng.integers(-8, 8, size=(n, 7)) / 4.0).astype(np.float32)  # exact sums
    x = wp.array(vals, dtype=wp.transform)
    xd = wp.array(vals.astype(np.float64), dtype=wp.transformd)
    add = wp.zeros(1, dtype=wp.transform)
    sub = wp.zeros(2, dtype=wp.transform)
    addd = wp.zeros(2, dtype=wp.transformd)
    old = wp.zeros(n, dtype=wp.transformd)
    wp.launch(transform_atomics, dim=n, inputs=[x, xd, add, sub, addd, old])
    np.testing.assert_array_equal(add.numpy()[0], vals.sum(0))
    np.testing.assert_array_equal(sub.numpy(), [-vals[0::2].sum(0), -vals[1::2].sum(0)])
    np.testing.assert_array_equal(addd.numpy(), [vals.sum(0), -vals.sum(0)])
    # The old values: each thread saw the element before its own subtraction,
    # so the final value lies one step past exactly one of them.
    seen = old.numpy()
    assert np.any(np.all(seen == 0.0, axis=1)), "one thread came first"
    assert sum(np.array_equal(seen[i] - vals[i], -vals.sum(0)) for i in range(n)) == 1, "one thread came last"


def test_atomic_add_sub_on_transforms_differentiate(wp):
    # y[i] += x[i]; y[i] -= 3 x[i]: dL/dx = (1 - 3) dL/dy, component-wise.
    n = 4
    x = wp.array(np.arange(n * 7, dtype=np.float32).reshape(n, 7), dtype=wp.transform, requires_grad=True)
    y = wp.zeros(n, dtype=wp.transform, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(transform_atomic_ops, dim=n, inputs=[x], outputs=[y])
    np.testing.assert_array_equal(y.numpy(), -2.0 * x.numpy())
    seed = np.linspace(0.5, 4.0, n * 7, dtype=np.float32).reshape(n, 7)
    y.grad = wp.array(seed, dtype=wp.transform)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), -2.0 * seed, rtol=1e-6)


@pytest.mark.parametrize("op", ["atomic_min", "atomic_max", "atomic_exch"])
def test_other_atomics_on_transforms_are_refused(wp, tmp_path, op):
    path = tmp_path / "refused.py"
    path.write_text(f"import warpd as wp\n\n@wp.kernel(module='unique')\ndef k(a: wp.array(dtype=wp.transform)):\n"
                    f"    wp.{op}(a, 0, wp.transform_identity())\n")
    ns = {"__name__": f"refused_{op}"}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    with pytest.raises(wp.CompileError, match=rf"{op}\(\) on an array of transformf is not supported"):
        wp.launch(ns["k"], dim=1, inputs=[wp.zeros(1, dtype=wp.transform)])
