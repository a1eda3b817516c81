#!/usr/bin/env python3
"""Writes tests/fixtures/warp_decompositions_1.19.json: what NVIDIA Warp's
svd3, svd2, qr3 and eig3 return for a small fixed set of matrices, in float32,
float64 and float16. tests/e2e/test_builtins_decompositions.py checks warpd
against it. The tests never run this script.

It needs warp-lang 1.19.0 (and numpy) in a virtual environment of its own;
Warp is never a dependency of warpd. Warp's CPU backend compiles the kernels
with its bundled clang, so no GPU is needed:

    python3 -m venv /tmp/warpref
    /tmp/warpref/bin/pip install warp-lang==1.19.0 numpy
    /tmp/warpref/bin/python tools/gen_warp_decompositions.py

The kernels are compiled with -ffp-contract=off, as warpd's CPU JIT compiles,
so that no multiply-add is fused.

Format: {"warp_version", "cpu_compiler_flags", "cases": [{"fn", "dtype",
"kind", "in", "out"}, ...]}. "in" is the input matrix, row-major and flat, as
the dtype holds it; "out" is the outputs one after the other, each flat and
row-major: svd3 U, sigma, V (21 numbers); svd2 U, sigma, V (10); qr3 Q, R
(18); eig3 Q, d (12). Numbers are repr() of the value widened to float64,
so they read back exactly; NaN and infinities are the strings "nan", "inf"
and "-inf" (Warp gives them for some float16 inputs). "kind" names the input
family (random, diagonal, identity, zero, rank1, rank2, repeated, negdet,
orthogonal, scaled, ...).
"""

import json
import os
import sys

import numpy as np
import warp as wp

WARP_VERSION = "1.19.0"
CPU_FLAGS = "-ffp-contract=off"

if wp.config.version != WARP_VERSION:
    sys.exit("needs warp-lang %s, found %s" % (WARP_VERSION, wp.config.version))

wp.config.quiet = True
wp.config.cpu_compiler_flags = CPU_FLAGS
wp.init()

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "warp_decompositions_1.19.json")
DTYPES = {"float32": (wp.float32, np.float32), "float64": (wp.float64, np.float64),
          "float16": (wp.float16, np.float16)}


def rotation(rng):
    """A random rotation (det +1)."""
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def inputs3(rng):
    """(kind, 3x3 matrix) for svd3 and qr3."""
    out = [("random", rng.standard_normal((3, 3))) for _ in range(16)]
    out += [("diagonal", np.diag([1.0, 2.0, 3.0])), ("identity", np.eye(3)), ("diagonal", np.diag([-1.0, 2.0, -3.0])),
            ("zero", np.zeros((3, 3))), ("identity", -np.eye(3)), ("repeated", np.diag([3.0, 3.0, 1.0])),
            ("diagonal", np.diag([2.0, -3.0, 0.5])), ("permutation", np.array([[0.0, 0, 5], [0, 1, 0], [3, 0, 0]])),
            ("rank1", np.outer([1.0, 2, 3], [1.0, 2, 3])), ("rank2", np.arange(1.0, 10.0).reshape(3, 3)),
            ("orthogonal", np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])),
            ("orthogonal", np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])),
            ("rank1", np.array([[0.0, 0, 0], [0, 0, 0], [1, 2, 3]])),
            ("triangular", np.array([[2.0, 1, -1], [0, 3, 4], [0, 0, 5]]))]
    for k in range(4):
        s = [2.0, 2.0, 0.5] if k % 2 else [3.0, 1.0, 1.0]
        out.append(("repeated", rotation(rng) @ np.diag(s) @ rotation(rng).T))
    for _ in range(4):
        a = rng.standard_normal((3, 3))
        a[2] = 0.5 * a[0] - 2.0 * a[1]
        out.append(("rank2", a))
    for _ in range(4):
        a = rng.standard_normal((3, 3))
        if np.linalg.det(a) > 0:
            a[0] = -a[0]
        out.append(("negdet", a))
    for e in (-2.0, 2.0):
        out.append(("scaled", rng.standard_normal((3, 3)) * 10.0 ** e))
    return out


def inputs2(rng):
    """(kind, 2x2 matrix) for svd2."""
    out = [("random", rng.standard_normal((2, 2))) for _ in range(16)]
    out += [("diagonal", np.diag([1.0, 2.0])), ("identity", np.eye(2)), ("zero", np.zeros((2, 2))),
            ("diagonal", np.diag([-1.0, 2.0])), ("diagonal", np.diag([2.0, -3.0])), ("identity", 5.0 * np.eye(2)),
            ("rank1", np.array([[1.0, 0], [0, 0]])), ("rank1", np.array([[0.0, 0], [0, 2]])),
            ("rank1", np.array([[1.0, 1], [-1, -1]])), ("triangular", np.array([[3.0, 0], [4, 5]])),
            ("near_identity", np.array([[1.001, 0.001], [-0.001, 0.999]])),
            ("orthogonal", np.array([[0.0, -1], [1, 0]])), ("orthogonal", np.array([[0.0, 1], [1, 0]])),
            ("identity", -np.eye(2))]
    for _ in range(4):
        out.append(("rank1", np.outer(rng.standard_normal(2), rng.standard_normal(2))))
    for _ in range(4):
        a = rng.standard_normal((2, 2))
        if np.linalg.det(a) > 0:
            a[0] = -a[0]
        out.append(("negdet", a))
    for e in (-2.0, 2.0):
        out.append(("scaled", rng.standard_normal((2, 2)) * 10.0 ** e))
    return out


def inputs_sym(rng):
    """(kind, 3x3 matrix) for eig3: symmetric, but for one."""
    out = []
    for _ in range(16):
        a = rng.standard_normal((3, 3))
        out.append(("random", a + a.T))
    out += [("diagonal", np.diag([1.0, 2.0, 3.0])), ("identity", np.eye(3)), ("diagonal", np.diag([3.0, 2.0, 1.0])),
            ("zero", np.zeros((3, 3))), ("diagonal", np.diag([-1.0, 2.0, -3.0])), ("repeated", np.diag([2.0, 2.0, 5.0])),
            ("repeated", np.array([[0.0, 1, 1], [1, 0, 1], [1, 1, 0]])), ("rank1", np.ones((3, 3))),
            ("near_diagonal", np.array([[3.0, 1e-3, 0], [1e-3, -1, 2e-3], [0, 2e-3, 2]])),
            # Not symmetric: Q comes from the lower triangle, d from the whole matrix.
            ("nonsymmetric", np.array([[2.0, 7.0, -1.0], [1.0, 3.0, 4.0], [0.5, -2.0, 1.0]]))]
    for k in range(4):
        q = rotation(rng)
        out.append(("repeated", q @ np.diag([1.0, 1.0, 2.0] if k % 2 else [-1.0, 3.0, 3.0]) @ q.T))
    for _ in range(2):
        v = rng.standard_normal(3)
        out.append(("rank1", np.outer(v, v)))
    for e in (-2.0, 2.0):
        a = rng.standard_normal((3, 3)) * 10.0 ** e
        out.append(("scaled", a + a.T))
    return out


def kernels(T):
    M3 = wp.types.matrix(shape=(3, 3), dtype=T)
    M2 = wp.types.matrix(shape=(2, 2), dtype=T)
    V3 = wp.types.vector(length=3, dtype=T)
    V2 = wp.types.vector(length=2, dtype=T)

    @wp.kernel(module="unique")
    def k_svd3(a: wp.array(dtype=M3), u: wp.array(dtype=M3), s: wp.array(dtype=V3), v: wp.array(dtype=M3)):
        i = wp.tid()
        uu = M3()
        ss = V3()
        vv = M3()
        wp.svd3(a[i], uu, ss, vv)
        u[i] = uu
        s[i] = ss
        v[i] = vv

    @wp.kernel(module="unique")
    def k_svd2(a: wp.array(dtype=M2), u: wp.array(dtype=M2), s: wp.array(dtype=V2), v: wp.array(dtype=M2)):
        i = wp.tid()
        uu = M2()
        ss = V2()
        vv = M2()
        wp.svd2(a[i], uu, ss, vv)
        u[i] = uu
        s[i] = ss
        v[i] = vv

    @wp.kernel(module="unique")
    def k_qr3(a: wp.array(dtype=M3), q: wp.array(dtype=M3), r: wp.array(dtype=M3)):
        i = wp.tid()
        qq = M3()
        rr = M3()
        wp.qr3(a[i], qq, rr)
        q[i] = qq
        r[i] = rr

    @wp.kernel(module="unique")
    def k_eig3(a: wp.array(dtype=M3), q: wp.array(dtype=M3), d: wp.array(dtype=V3)):
        i = wp.tid()
        qq = M3()
        dd = V3()
        wp.eig3(a[i], qq, dd)
        q[i] = qq
        d[i] = dd

    return {"svd3": (k_svd3, M3, (M3, V3, M3)), "svd2": (k_svd2, M2, (M2, V2, M2)),
            "qr3": (k_qr3, M3, (M3, M3)), "eig3": (k_eig3, M3, (M3, V3))}


def number(x):
    x = float(x)
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x


def main():
    rng = np.random.default_rng(20261126)
    families = {"svd3": inputs3(rng), "svd2": inputs2(rng), "eig3": inputs_sym(rng)}
    families["qr3"] = families["svd3"]
    cases = []
    for dname, (T, np_t) in DTYPES.items():
        ks = kernels(T)
        for fn in ("svd3", "svd2", "qr3", "eig3"):
            kernel, in_type, out_types = ks[fn]
            kinds = [k for k, _ in families[fn]]
            a = np.array([m for _, m in families[fn]]).astype(np_t)
            outs = [wp.zeros(len(a), dtype=t, device="cpu") for t in out_types]
            wp.launch(kernel, dim=len(a), inputs=[wp.array(a, dtype=in_type, device="cpu")] + outs, device="cpu")
            flat = np.concatenate([o.numpy().reshape(len(a), -1) for o in outs], axis=1)
            for kind, m, row in zip(kinds, a, flat):
                cases.append({"fn": fn, "dtype": dname, "kind": kind,
                              "in": [number(x) for x in m.reshape(-1)], "out": [number(x) for x in row]})
    doc = {"warp_version": WARP_VERSION, "cpu_compiler_flags": CPU_FLAGS, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(OUT)))


if __name__ == "__main__":
    main()
