"""svd3, svd2, qr3 and eig3: against independent NumPy references, against the
conventions that Warp's algorithms imply, and against real Warp 1.19's outputs.

Singular vectors and eigenvectors are defined only up to sign, and eig3's
eigenvalues in no particular order, so to give Warp's answers warpd runs
Warp's algorithms (runtime/native/warpd/native/svd.h). Three kinds of checks,
for float32, float64 and float16:

1. Defining properties, with NumPy as the reference: U diag(sigma) V^T == A,
   Q R == A, Q diag(d) Q^T == A, orthogonality, the singular values and
   eigenvalues themselves. Tolerances are Warp's accuracy: a fixed number of
   approximate Jacobi sweeps leaves float32 results up to about 1e-3 off
   where values nearly repeat.
2. Conventions, each derived from the algorithm and checked as a property:
   - svd3: U and V are rotations; sigma is sorted by decreasing magnitude with
     sigma[0], sigma[1] >= 0, and sigma[2] carries det(A)'s sign. On a
     diagonal A, Jacobi does nothing (every rotation angle is 0), so V is the
     signed permutation of the sorting network ((0,1), (0,2), (1,2), each swap
     negating the column moved back) and U the same permutation, signed. On A = 0 every Jacobi
     step takes the fixed half angle pi/8, so V = (Rz Rx Ry)^4 with rotations
     by pi/4, U = I and sigma = 0.
   - svd2: V[:, 0] points along (l1 - r, q) - (q, l1 - p) for A^T A = [p q; q
     r] with largest eigenvalue l1; U[:, 0] = A V[:, 0] / sigma[0] and U[:, 1]
     is U[:, 0] turned by +90 degrees times sign(det A). Where A^T A = c^2 I,
     V = I and U = A / c (here warpd departs from Warp, whose U = I is no
     factorization unless A = c I).
   - qr3: Q is a rotation, R upper triangular with R[0][0], R[1][1] >= 0, so
     for a nonsingular A the factors are unique: NumPy's QR with those signs.
   - eig3: Q is a rotation computed from A's lower triangle only, and d =
     diag(Q^T A Q) with the whole of A. The eigenvalues are not sorted: on a
     nearly diagonal A each stays at its diagonal position, with Q near I.
3. Warp's own outputs for a fixed set of random and special matrices
   (tests/fixtures/warp_decompositions_1.19.json, made by
   tools/gen_warp_decompositions.py with real Warp on the CPU), to 1e-4
   (float32) and 1e-10 (float64), relative to max |A| for values with A's
   units. float16 runs in float32 in warpd, so it is compared to 2e-2 and only
   where Warp's float16 results are finite and the input is not degenerate
   (Warp rounds every operation to half: its signs at ties follow that
   rounding, and inputs as plain as diag(1, 2, 3) give NaN there). Where warpd
   departs from Warp on purpose (svd2 on c times a rotation or reflection;
   svd2's second singular value where Warp's is NaN), the test checks the
   departure instead.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "warp_decompositions_1.19.json"

DTYPES = {"float32": (wp.float32, np.float32), "float64": (wp.float64, np.float64), "float16": (wp.float16, np.float16)}
# Accuracy of Warp's algorithms (point 1): reconstruction relative to max |A|, and orthogonality.
RECON = {"float32": 2e-3, "float64": 1e-12, "float16": 4e-3}
RECON_SVD2 = {"float32": 2e-3, "float64": 1e-7, "float16": 4e-3}  # svd2's eigenvector formula cancels
ORTH = {"float32": 1e-5, "float64": 1e-13, "float16": 2e-3}
# Agreement with Warp (point 3).
AGREE = {"float32": 1e-4, "float64": 1e-10, "float16": 2e-2}
# qr3 leaves an entry below the diagonal alone when it and its pivot have norm <= this.
QR_THRESHOLD = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-6}
# Input kinds whose float16 results in Warp follow half rounding at ties, or (scaled by 1e-2)
# lose A^T A's squares to underflow in half.
DEGENERATE = {"identity", "zero", "repeated", "rank1", "rank2", "orthogonal", "permutation", "scaled"}


def _t(m):
    return np.swapaxes(m, -1, -2)


def _make_kernel(T, tag):
    M2 = wp.types.matrix(shape=(2, 2), dtype=T)
    M3 = wp.types.matrix(shape=(3, 3), dtype=T)
    V2 = wp.types.vector(length=2, dtype=T)
    V3 = wp.types.vector(length=3, dtype=T)

    @specialize(tag)
    def decompose(a3: wp.array(dtype=M3), a2: wp.array(dtype=M2), s3: wp.array(dtype=M3),
                  u3: wp.array(dtype=M3), sig3: wp.array(dtype=V3), v3: wp.array(dtype=M3),
                  q3: wp.array(dtype=M3), r3: wp.array(dtype=M3),
                  u2: wp.array(dtype=M2), sig2: wp.array(dtype=V2), v2: wp.array(dtype=M2),
                  e3: wp.array(dtype=M3), d3: wp.array(dtype=V3)):
        i = wp.tid()
        if i < a3.shape[0]:
            U = M3()
            s = V3()
            V = M3()
            wp.svd3(a3[i], U, s, V)
            u3[i] = U
            sig3[i] = s
            v3[i] = V
            Q = M3()
            R = M3()
            wp.qr3(a3[i], Q, R)
            q3[i] = Q
            r3[i] = R
        if i < a2.shape[0]:
            U2 = M2()
            t = V2()
            W2 = M2()
            wp.svd2(a2[i], U2, t, W2)
            u2[i] = U2
            sig2[i] = t
            v2[i] = W2
        if i < s3.shape[0]:
            E = M3()
            d = V3()
            wp.eig3(s3[i], E, d)
            e3[i] = E
            d3[i] = d

    return decompose, M2, M3, V2, V3


KERNELS = {tag: _make_kernel(spec[0], tag) for tag, spec in DTYPES.items()}


def _fixture():
    with open(FIXTURE) as f:
        doc = json.load(f)
    assert doc["warp_version"] == "1.19.0"
    for c in doc["cases"]:
        c["in"] = [float(x) for x in c["in"]]  # "nan", "inf" and "-inf" are strings
        c["out"] = [float(x) for x in c["out"]]
    return doc["cases"]


CASES = _fixture()


def _rotation(rng):
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _extra_inputs():
    """Inputs for the properties beyond the fixture's: (kind, matrix) per family."""
    rng = np.random.default_rng(24)
    a3 = [("random", m) for m in rng.uniform(-3, 3, (120, 3, 3))]
    a3 += [("diagonal", np.diag(d)) for d in ([5.0, -2.0, 0.5], [0.5, 2.0, -4.0], [-1.0, -3.0, 2.0], [1.0, 0.0, 3.0],
                                               [-2.0, 7.0, -5.0], [0.25, -0.5, 1.0])]
    a3.append(("zero", np.zeros((3, 3))))
    for _ in range(20):
        a3.append(("repeated", _rotation(rng) @ np.diag([2.0, 2.0, rng.uniform(0.1, 1)]) @ _rotation(rng).T))
    a2 = [("random", m) for m in rng.uniform(-3, 3, (120, 2, 2))]
    a2 += [("rank1", np.outer(rng.standard_normal(2), rng.standard_normal(2))) for _ in range(20)]
    # c times a rotation or a reflection, exactly: A^T A = c^2 I with no rounding
    for r in ([[3.0, -4.0], [4.0, 3.0]], [[0.0, 2.0], [-2.0, 0.0]], [[-1.5, 2.0], [-2.0, -1.5]]):
        r = np.array(r)
        a2 += [("scaled_rotation", r), ("scaled_reflection", r @ np.diag([1.0, -1.0]))]
    sym = [("random", m + m.T) for m in rng.uniform(-3, 3, (120, 3, 3))]
    for _ in range(10):  # distinct diagonal, small symmetric perturbation
        n = rng.uniform(-1e-3, 1e-3, (3, 3))
        sym.append(("near_diagonal", np.diag(rng.permutation([-4.0, 1.0, 6.0])) + n + n.T))
    for _ in range(10):  # not symmetric
        sym.append(("nonsymmetric", rng.uniform(-3, 3, (3, 3))))
    return a3, a2, sym


@pytest.fixture(scope="module", params=list(DTYPES))
def run(wp, request):
    """Runs every decomposition on the fixture's inputs (first) and the extra
    inputs (after them); returns {"dtype", fn: (kinds, inputs as the dtype
    holds them in float64, outputs...), "n_fixture": {fn: count}}."""
    dtype = request.param
    T, np_t = DTYPES[dtype]
    kernel, M2, M3, V2, V3 = KERNELS[dtype]
    extra3, extra2, extra_sym = _extra_inputs()
    fam = {}
    n_fixture = {}
    for fn, extra in (("svd3", extra3), ("svd2", extra2), ("eig3", extra_sym)):
        cases = [c for c in CASES if c["fn"] == fn and c["dtype"] == dtype]
        n_fixture[fn] = len(cases)
        shape = (2, 2) if fn == "svd2" else (3, 3)
        kinds = [c["kind"] for c in cases] + [k for k, _ in extra]
        mats = [np.array(c["in"]).reshape(shape) for c in cases] + [m for _, m in extra]
        fam[fn] = (kinds, np.array(mats).astype(np_t))
    n3, n2, ns = (len(fam[f][1]) for f in ("svd3", "svd2", "eig3"))
    outs = [wp.zeros(n, dtype=t) for n, t in ((n3, M3), (n3, V3), (n3, M3), (n3, M3), (n3, M3),
                                              (n2, M2), (n2, V2), (n2, M2), (ns, M3), (ns, V3))]
    ins = [wp.array(fam["svd3"][1], dtype=M3), wp.array(fam["svd2"][1], dtype=M2), wp.array(fam["eig3"][1], dtype=M3)]
    wp.launch(kernel, dim=max(n3, n2, ns), inputs=ins + outs)
    o = [x.numpy().astype(np.float64) for x in outs]
    as64 = {f: fam[f][1].astype(np.float64) for f in fam}
    return {"dtype": dtype, "n_fixture": n_fixture,
            "svd3": (fam["svd3"][0], as64["svd3"], o[0], o[1], o[2]),
            "qr3": (fam["svd3"][0], as64["svd3"], o[3], o[4]),
            "svd2": (fam["svd2"][0], as64["svd2"], o[5], o[6], o[7]),
            "eig3": (fam["eig3"][0], as64["eig3"], o[8], o[9])}


def _scale(a):
    return np.maximum(np.abs(a).max(axis=(1, 2)), np.finfo(np.float64).tiny)


def _assert_rows_le(values, bound, what, kinds=None):
    bad = np.nonzero(~(values <= bound))[0]
    assert len(bad) == 0, f"{what}: {len(bad)} cases, worst {np.nanmax(values):.3g} > {np.max(bound):.3g}" + (
        f" (first: #{bad[0]} {kinds[bad[0]]})" if kinds is not None else "")


def _assert_rotation(m, tol, what):
    n = m.shape[-1]
    _assert_rows_le(np.abs(m @ _t(m) - np.eye(n)).max(axis=(1, 2)), tol, f"{what} orthonormal")
    _assert_rows_le(np.abs(np.linalg.det(m) - 1.0), 10 * tol, f"{what} det +1")


# --- 1 and 2: properties ------------------------------------------------------------


def test_svd3_factorization(run):
    dtype = run["dtype"]
    kinds, a, U, s, V = run["svd3"]
    scale = _scale(a)
    rec = np.abs(U @ (s[:, :, None] * _t(V)) - a).max(axis=(1, 2)) / scale
    _assert_rows_le(rec, RECON[dtype], "U diag(sigma) V^T == A", kinds)
    _assert_rotation(U, ORTH[dtype], "U")
    _assert_rotation(V, ORTH[dtype], "V")
    ref = np.linalg.svd(a, compute_uv=False)
    _assert_rows_le(np.abs(np.abs(s) - ref).max(axis=1) / scale, RECON[dtype], "|sigma| == singular values", kinds)


def test_svd3_sign_and_order(run):
    dtype = run["dtype"]
    kinds, a, U, s, V = run["svd3"]
    scale = _scale(a)
    assert np.all(s[:, :2] >= 0), "sigma[0], sigma[1] >= 0"
    slack = RECON[dtype] * scale
    assert np.all(s[:, 0] >= s[:, 1] - slack) and np.all(s[:, 1] >= np.abs(s[:, 2]) - slack), "sorted by magnitude"
    det = np.linalg.det(a)
    clear = np.abs(det) > 1e-2 * scale ** 3
    np.testing.assert_array_equal(np.sign(s[clear, 2]), np.sign(det[clear]), err_msg="sigma[2] has det's sign")


def _network_permutation(d):
    """V for a diagonal A: the identity with svd3's column swaps applied."""
    v, n2 = np.eye(3), np.array(d, dtype=np.float64) ** 2
    for p, q in ((0, 1), (0, 2), (1, 2)):
        if n2[p] < n2[q]:
            v[:, [p, q]] = np.stack([v[:, q], -v[:, p]], axis=1)
            n2[[p, q]] = n2[[q, p]]
    return v


def test_svd3_diagonal_input(run):
    kinds, a, U, s, V = run["svd3"]
    tol = AGREE[run["dtype"]]
    diag = [i for i, k in enumerate(kinds) if k == "diagonal" and len(set(np.abs(np.diag(a[i])))) == 3]
    assert len(diag) >= 6
    for i in diag:
        np.testing.assert_allclose(V[i], _network_permutation(np.diag(a[i])), atol=tol, err_msg=f"V of {np.diag(a[i])}")
        # U = A V diag(1 / sigma): a signed permutation too, its signs those that leave sigma[0], sigma[1] >= 0
        np.testing.assert_allclose(np.abs(U[i]), np.abs(V[i]), atol=tol, err_msg=f"U of {np.diag(a[i])}")


def test_svd3_zero_matrix(run):
    kinds, a, U, s, V = run["svd3"]

    def rot(axis, angle):
        p, q = [(1, 2), (2, 0), (0, 1)][axis]
        m = np.eye(3)
        m[p, p] = m[q, q] = np.cos(angle)
        m[q, p], m[p, q] = np.sin(angle), -np.sin(angle)
        return m

    want = np.eye(3)
    for _ in range({"float64": 8}.get(run["dtype"], 4)):
        want = want @ rot(2, np.pi / 4) @ rot(0, np.pi / 4) @ rot(1, np.pi / 4)
    zero = [i for i, k in enumerate(kinds) if k == "zero"]
    assert zero
    for i in zero:
        np.testing.assert_allclose(V[i], want, atol=AGREE[run["dtype"]], err_msg="V of the zero matrix")
        np.testing.assert_array_equal(U[i], np.eye(3))
        np.testing.assert_array_equal(s[i], 0)


def test_svd2_factorization(run):
    dtype = run["dtype"]
    kinds, a, U, s, V = run["svd2"]
    scale = _scale(a)
    assert np.all(np.isfinite(s)), "finite (Warp's NaN for rank-1 inputs counts as 0 here)"
    rec = np.abs(U @ (s[:, :, None] * _t(V)) - a).max(axis=(1, 2)) / scale
    _assert_rows_le(rec, RECON_SVD2[dtype], "U diag(sigma) V^T == A", kinds)
    _assert_rows_le(np.abs(U @ _t(U) - np.eye(2)).max(axis=(1, 2)), ORTH[dtype], "U orthonormal")
    _assert_rotation(V, ORTH[dtype], "V")
    assert np.all(s[:, 1] >= 0) and np.all(s[:, 0] >= s[:, 1]), "sigma >= 0, sorted"
    ref = np.linalg.svd(a, compute_uv=False)
    _assert_rows_le(np.abs(s - ref).max(axis=1) / scale, RECON_SVD2[dtype], "sigma == singular values", kinds)


def test_svd2_conventions(run):
    dtype = run["dtype"]
    kinds, a, U, s, V = run["svd2"]
    tol = 10 * AGREE[dtype]
    p = a[:, 0, 0] ** 2 + a[:, 1, 0] ** 2
    q = a[:, 0, 0] * a[:, 0, 1] + a[:, 1, 0] * a[:, 1, 1]
    r = a[:, 0, 1] ** 2 + a[:, 1, 1] ** 2
    l1 = np.linalg.eigvalsh(_t(a) @ a)[:, 1]
    v = np.stack([(l1 - r) - q, q - (l1 - p)], axis=1)
    vlen = np.linalg.norm(v, axis=1)
    det = np.linalg.det(a)
    scale = _scale(a)
    checked = 0
    for i in range(len(a)):
        if vlen[i] > 0.1 * scale[i] ** 2 and s[i, 0] - s[i, 1] > 0.1 * scale[i]:
            np.testing.assert_allclose(V[i, :, 0], v[i] / vlen[i], atol=tol, err_msg=f"V[:, 0] of {kinds[i]} #{i}")
            checked += 1
        if abs(det[i]) > 1e-2 * scale[i] ** 2:
            u0 = U[i, :, 0]
            np.testing.assert_allclose(U[i, :, 1], np.sign(det[i]) * np.array([-u0[1], u0[0]]), atol=tol,
                                       err_msg=f"U[:, 1] of {kinds[i]} #{i}")
    assert checked > 100


def test_svd2_multiple_of_orthogonal(run):
    kinds, a, U, s, V = run["svd2"]
    tol = AGREE[run["dtype"]]
    idx = [i for i, k in enumerate(kinds) if k in ("scaled_rotation", "scaled_reflection", "orthogonal", "identity")]
    assert len(idx) >= 8
    for i in idx:
        c = np.linalg.norm(a[i, :, 0])
        np.testing.assert_allclose(V[i], np.eye(2), atol=tol, err_msg=f"V of {kinds[i]} #{i}")
        np.testing.assert_allclose(U[i], a[i] / c, atol=tol, err_msg=f"U of {kinds[i]} #{i}")
        np.testing.assert_allclose(s[i], [c, c], rtol=tol)


def test_qr3(run):
    dtype = run["dtype"]
    kinds, a, Q, R = run["qr3"]
    scale = _scale(a)
    _assert_rows_le(np.abs(Q @ R - a).max(axis=(1, 2)) / scale, RECON[dtype], "Q R == A", kinds)
    _assert_rotation(Q, ORTH[dtype], "Q")
    below = np.abs(np.tril(R, -1)).max(axis=(1, 2))
    _assert_rows_le(below, np.maximum(QR_THRESHOLD[dtype], RECON[dtype] * scale), "R upper triangular", kinds)
    assert np.all(R[:, 0, 0] >= 0) and np.all(R[:, 1, 1] >= 0), "R[0][0], R[1][1] >= 0"
    # Unique for nonsingular A: NumPy's QR with R[0][0], R[1][1] > 0 and det(Q) = +1.
    qn, rn = np.linalg.qr(a)
    sign = np.sign(np.diagonal(rn, axis1=1, axis2=2)).copy()
    sign[:, 2] = sign[:, 0] * sign[:, 1] * np.sign(np.linalg.det(qn))
    qn, rn = qn * sign[:, None, :], rn * sign[:, :, None]
    cond = np.linalg.cond(a)
    ok = cond < 1e3
    assert ok.sum() > 100
    tol = {"float32": 1e-4, "float64": 1e-12, "float16": 4e-3}[dtype]
    _assert_rows_le(np.abs(Q[ok] - qn[ok]).max(axis=(1, 2)), tol * cond[ok], "Q == NumPy's")
    _assert_rows_le(np.abs(R[ok] - rn[ok]).max(axis=(1, 2)) / scale[ok], tol * cond[ok], "R == NumPy's")
    det = np.linalg.det(a)
    clear = np.abs(det) > 1e-2 * scale ** 3
    np.testing.assert_array_equal(np.sign(R[clear, 2, 2]), np.sign(det[clear]), err_msg="R[2][2] has det's sign")


def test_eig3(run):
    dtype = run["dtype"]
    kinds, a, Q, d = run["eig3"]
    sym = np.array([k != "nonsymmetric" for k in kinds])
    a, Q, d = a[sym], Q[sym], d[sym]
    scale = _scale(a)
    rec = np.abs(Q @ (d[:, :, None] * _t(Q)) - a).max(axis=(1, 2)) / scale
    _assert_rows_le(rec, RECON[dtype], "Q diag(d) Q^T == A")
    _assert_rotation(Q, ORTH[dtype], "Q")
    _assert_rows_le(np.abs(np.sort(d, axis=1) - np.linalg.eigvalsh(a)).max(axis=1) / scale, RECON[dtype],
                    "d == eigenvalues")


def test_eig3_order_near_diagonal(run):
    kinds, a, Q, d = run["eig3"]
    idx = [i for i, k in enumerate(kinds) if k == "near_diagonal"]
    assert len(idx) >= 10
    for i in idx:
        np.testing.assert_allclose(d[i], np.diag(a[i]), atol=1e-2, err_msg="eigenvalues stay in place (not sorted)")
        assert np.all(np.diag(Q[i]) > 0.99), f"Q near I: {Q[i]}"


def test_eig3_reads_lower_triangle_for_q(run, wp):
    dtype = run["dtype"]
    T, np_t = DTYPES[dtype]
    kernel, M2, M3, V2, V3 = KERNELS[dtype]
    kinds, a, Q, d = run["eig3"]
    idx = [i for i, k in enumerate(kinds) if k == "nonsymmetric"]
    assert len(idx) >= 10
    lower = np.tril(a[idx]) + _t(np.tril(a[idx], -1))
    outs = [wp.zeros(0, dtype=t) for t in (M3, V3, M3, M3, M3, M2, V2, M2)]
    e, dd = wp.zeros(len(idx), dtype=M3), wp.zeros(len(idx), dtype=V3)
    wp.launch(kernel, dim=len(idx), inputs=[wp.zeros(0, dtype=M3), wp.zeros(0, dtype=M2),
                                            wp.array(lower.astype(np_t), dtype=M3)] + outs + [e, dd])
    np.testing.assert_array_equal(Q[idx], e.numpy().astype(np.float64), err_msg="Q depends on the lower triangle only")
    want = np.einsum("nij,nik,nkj->nj", Q[idx], a[idx], Q[idx])  # diag(Q^T A Q) with the whole of A
    np.testing.assert_allclose(d[idx], want, atol=10 * AGREE[dtype] * _scale(a[idx]).max())


# --- 3: Warp's outputs ------------------------------------------------------------------


def _split(fn, out):
    """Warp's flat outputs of one case as (name, array, has A's units)."""
    if fn == "svd3":
        return [("U", out[:9], False), ("sigma", out[9:12], True), ("V", out[12:], False)]
    if fn == "svd2":
        return [("U", out[:4], False), ("sigma", out[4:6], True), ("V", out[6:], False)]
    if fn == "qr3":
        return [("Q", out[:9], False), ("R", out[9:], True)]
    return [("Q", out[:9], False), ("d", out[9:], True)]


@pytest.mark.parametrize("fn", ["svd3", "svd2", "qr3", "eig3"])
def test_matches_warp(run, fn):
    dtype = run["dtype"]
    kinds, a, *ours = run[fn]
    cases = [c for c in CASES if c["fn"] == fn and c["dtype"] == dtype]
    assert len(cases) == run["n_fixture"]["eig3" if fn == "eig3" else "svd2" if fn == "svd2" else "svd3"] > 20
    compared = 0
    for i, c in enumerate(cases):
        np.testing.assert_array_equal(a[i].reshape(-1), c["in"])  # the same input, as the dtype holds it
        warp_out = np.array(c["out"])
        scale = max(np.abs(a[i]).max(), np.finfo(np.float64).tiny)
        got = np.concatenate([o[i].reshape(-1) for o in ours])
        if dtype == "float16" and (not np.all(np.isfinite(warp_out)) or c["kind"] in DEGENERATE):
            continue
        if fn == "svd2":
            p, q, r = a[i][:, 0] @ a[i][:, 0], a[i][:, 0] @ a[i][:, 1], a[i][:, 1] @ a[i][:, 1]
            if p == r and q == 0 and not np.allclose(a[i], np.sqrt(p) * np.eye(2)):
                continue  # c times a rotation or reflection: test_svd2_multiple_of_orthogonal
            if np.isnan(warp_out[5]):
                assert got[5] == 0 or abs(got[5]) < AGREE[dtype] * scale, "Warp's NaN sigma[1] is 0 here"
                warp_out[5] = got[5]
        for (name, want, units), (_, have, _) in zip(_split(fn, warp_out), _split(fn, got)):
            tol = AGREE[dtype] * (scale if units else 1.0)
            np.testing.assert_allclose(have, want, rtol=0, atol=tol,
                                       err_msg=f"{fn} {dtype} {name} of {c['kind']} input {a[i].tolist()}")
        compared += 1
    assert compared >= {"float16": 16}.get(dtype, len(cases) - 4)
