"""Calls of Warp's builtins for the Python-scope tests: each a builtin name and its
arguments, built by `make_cases(wp)` from whichever module `wp` is (warpd, or
warp-lang for tools/pyscope_vs_warp.py), so the same calls can be compared.

Inputs are deterministic, drawn from a seeded NumPy generator inside each
builtin's domain (acos in [-1, 1], log > 0, well-conditioned matrices, unit
quaternions where a builtin assumes them), plus hand-picked edge values
(integer overflow and division by negatives, ties of round/rint, NaN/inf for
isnan/isinf/isfinite, zero vectors for normalize).

A case may carry `kernel`: the kernel expression to use instead of
``wp.<name>(args)`` (for builtins with compile-time arguments), with {0}, {1}
for the arguments.
"""

from __future__ import annotations

import numpy as np


class Case:
    def __init__(self, name, args, kernel=None, tag=""):
        self.name = name
        self.args = tuple(args)
        self.kernel = kernel
        self.tag = tag

    def __repr__(self):
        return f"{self.name}{self.tag}({', '.join(_show(a) for a in self.args)})"


def _show(a):
    if isinstance(a, float):
        return f"{a!r}"
    return f"{type(a).__name__}({np.asarray(a).reshape(-1).tolist() if hasattr(a, '__len__') else a})"


UNARY_DOMAINS = {
    "acos": (-1, 1), "asin": (-1, 1), "atan": (-10, 10), "cbrt": (-100, 100), "ceil": (-10, 10),
    "cos": (-10, 10), "cosh": (-5, 5), "degrees": (-10, 10), "erf": (-3, 3), "erfc": (-3, 3),
    "erfcinv": (0.01, 1.99), "erfinv": (-0.99, 0.99), "exp": (-5, 5), "floor": (-10, 10),
    "frac": (-10, 10), "log": (0.01, 100), "log10": (0.01, 100), "log2": (0.01, 100),
    "radians": (-1000, 1000), "rint": (-10, 10), "round": (-10, 10), "sin": (-10, 10),
    "sinh": (-5, 5), "sqrt": (0, 100), "tan": (-1.4, 1.4), "tanh": (-5, 5), "trunc": (-10, 10),
}
BINARY_DOMAINS = {"atan2": ((-10, 10), (-10, 10)), "copysign": ((-10, 10), (-10, 10)),
                  "pow": ((0.1, 4), (-3, 3))}


def make_cases(wp):
    rng = np.random.default_rng(24)
    cases = []

    def add(name, *args, kernel=None, tag=""):
        cases.append(Case(name, args, kernel, tag))

    def u(lo, hi, n=None):
        v = rng.uniform(lo, hi, n)
        return np.round(v, 3).tolist() if n is not None else round(float(v), 3)

    floats = [wp.float16, wp.float32, wp.float64]
    ints = [wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64]
    signed = [wp.int8, wp.int16, wp.int32, wp.int64]

    def scal(T, x):
        return float(x) if T is float else T(x)

    # ------------------------------------------------------------ scalar math
    for T in floats + [float]:
        for name, (lo, hi) in UNARY_DOMAINS.items():
            for x in (u(lo, hi), u(lo, hi)):
                add(name, scal(T, x))
        for name, ((lo0, hi0), (lo1, hi1)) in BINARY_DOMAINS.items():
            for _ in range(2):
                add(name, scal(T, u(lo0, hi0)), scal(T, u(lo1, hi1)))
        for x in (2.5, -2.5, -0.5, 3.5):  # ties
            add("round", scal(T, x))
            add("rint", scal(T, x))
        add("frac", scal(T, -1.25))
        add("acos", scal(T, 1.0))
        a, b = sorted((u(-5, 5), u(-5, 5)))
        for x in (u(-6, 6), a - 1.0, b + 1.0):
            add("smoothstep", scal(T, a), scal(T, b), scal(T, x))
        add("lerp", scal(T, u(-5, 5)), scal(T, u(-5, 5)), scal(T, u(0, 1)))
        for x, y in ((u(-9, 9), u(0.5, 4)), (-7.5, 2.0), (7.5, -2.0)):
            add("floordiv", scal(T, x), scal(T, y))
            add("mod", scal(T, x), scal(T, y))
            add("div", scal(T, x), scal(T, y))
        for name in ("add", "sub", "mul", "min", "max"):
            add(name, scal(T, u(-9, 9)), scal(T, u(-9, 9)))
        add("clamp", scal(T, u(-9, 9)), scal(T, -2.0), scal(T, 3.0))
        for x in (u(-9, 9), -0.0, 0.0, -3.0):
            for name in ("abs", "sign", "step", "nonzero", "neg", "pos"):
                add(name, scal(T, x))
        for x in (1.0, float("nan"), float("inf"), -float("inf")):
            for name in ("isnan", "isinf", "isfinite"):
                add(name, scal(T, x))

    def iscal(T, x):
        return int(x) if T is int else T(x)

    for T in ints + [int]:
        uns = T in (wp.uint8, wp.uint16, wp.uint32, wp.uint64)
        for x, y in ((7, 2), (-7, 2), (7, -2), (-7, -2), (100, 3), (-128, -1), (5, 0)):
            if uns and (x < 0 or y < 0):
                continue
            for name in ("div", "mod", "floordiv"):
                add(name, iscal(T, x), iscal(T, y))
        for x, y in ((100, 3), (-100, 27), (120, 120), (-5, 9)):
            if uns and (x < 0 or y < 0):
                continue
            for name in ("add", "sub", "mul", "min", "max", "bit_and", "bit_or", "bit_xor"):
                add(name, iscal(T, x), iscal(T, y))
        for x, s in ((3, 2), (-3, 1), (1, 9), (64, 70)):
            if uns and x < 0:
                continue
            add("lshift", iscal(T, x), iscal(T, s))
            add("rshift", iscal(T, x), iscal(T, s))
        for x in (0, 5, -3, -128, 127):
            if uns and x < 0:
                continue
            for name in ("abs", "sign", "step", "nonzero", "neg", "pos", "invert", "bit_count", "unot"):
                add(name, iscal(T, x))
        add("clamp", iscal(T, 9), iscal(T, 2), iscal(T, 5))
    add("unot", True)
    add("unot", False)
    add("abs", -2147483648)  # wraps: abs(INT32_MIN) is INT32_MIN
    add("mul", 123456, 654321)  # wraps in int32

    # ------------------------------------------------------------ vectors
    def vec(T, n, lo=-5.0, hi=5.0):
        return wp.types.vector(n, T)(*u(lo, hi, n))

    for T in floats:
        for n in (2, 3, 4, 5):
            a, b = vec(T, n), vec(T, n)
            for name in ("dot", "min"):
                add(name, a, b)
            for name in ("length", "length_sq", "normalize", "min", "argmax"):
                add(name, a)
        for n in (3, 5):
            a, b = vec(T, n), vec(T, n)
            s = T(u(0.5, 3))
            for name in ("add", "sub", "max", "cw_mul"):
                add(name, a, b)
            add("cw_div", a, vec(T, n, 0.5, 4))
            add("mod", a, vec(T, n, 0.5, 4))
            for name in ("abs", "sign", "neg", "pos", "max", "argmin", "norm_l1", "norm_l2", "norm_huber",
                         "norm_pseudo_huber", "smooth_normalize", "isnan", "isinf", "isfinite"):
                add(name, a)
            add("mul", a, s)
            add("mul", s, a)
            add("div", a, s)
            add("div", s, vec(T, n, 0.5, 4))
            add("lerp", a, b, T(u(0, 1)))
            add("outer", a, vec(T, 3))
            add("normalize", wp.types.vector(n, T)())
            add("norm_huber", a, T(0.5))
            add("norm_pseudo_huber", a, T(2.0))
            add("smooth_normalize", a, T(2.0))
        add("matrix_from_rows", vec(T, 3), vec(T, 3))
        add("matrix_from_cols", vec(T, 2), vec(T, 2), vec(T, 2))
        add("cross", vec(T, 3), vec(T, 3))
        add("skew", vec(T, 3))
        add("diag", vec(T, 3))
    for T in (wp.int32, wp.int8, wp.uint16, wp.int64):
        lo = 0 if T is wp.uint16 else -50
        a = wp.types.vector(3, T)(*[int(x) for x in rng.integers(lo, 50, 3)])
        b = wp.types.vector(3, T)(*[int(x) for x in rng.integers(1, 50, 3)])
        for name in ("add", "sub", "min", "max", "cw_mul", "cw_div", "mod", "dot", "cross", "bit_and",
                     "bit_xor", "lshift", "rshift"):
            add(name, a, b)
        for name in ("abs", "sign", "neg", "min", "max", "argmin", "argmax", "length_sq", "invert"):
            add(name, a)
        add("mul", a, T(3))
        add("div", a, T(3))

    # ------------------------------------------------------------ matrices
    def mat(T, r, c, lo=-3.0, hi=3.0):
        return wp.types.matrix((r, c), T)(*u(lo, hi, r * c))

    def well_conditioned(T, n):
        m = np.round(rng.uniform(-1, 1, (n, n)), 3) + np.eye(n) * 3.0
        return wp.types.matrix((n, n), T)(*m.reshape(-1).tolist())

    def rotation(T, n=3):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        x, y, z, w = q
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        if n == 4:
            r4 = np.eye(4)
            r4[:3, :3] = r
            r4[:3, 3] = np.round(rng.uniform(-3, 3, 3), 3)
            r = r4
        return wp.types.matrix((n, n), T)(*r.reshape(-1).tolist())

    for T in floats:
        for n in (2, 3, 4):
            a = mat(T, n, n)
            for name in ("transpose", "trace", "determinant"):
                add(name, a)
            add("inverse", well_conditioned(T, n))
            add("mul", a, mat(T, n, n))
            add("mul", a, vec(T, n))
        a, b = mat(T, 3, 3), mat(T, 3, 3)
        s = T(u(0.5, 3))
        for name in ("add", "sub", "cw_mul", "ddot"):
            add(name, a, b)
        add("cw_div", a, mat(T, 3, 3, 0.5, 3))
        for name in ("get_diag", "neg", "pos", "isnan", "isfinite"):
            add(name, a)
        add("mul", a, s)
        add("mul", s, a)
        add("div", a, s)
        add("div", s, mat(T, 3, 3, 0.5, 3))
        add("mul", vec(T, 3), a)
        add("lerp", a, b, T(u(0, 1)))
        a23 = mat(T, 2, 3)
        add("transpose", a23)
        add("mul", a23, mat(T, 3, 4))
        add("mul", a23, vec(T, 3))
        add("mul", vec(T, 2), a23)
        add("ddot", a23, mat(T, 2, 3))
        add("inverse", wp.types.matrix((3, 3), T)())  # singular: zeros
        add("svd3", well_conditioned(T, 3))
        add("svd3", mat(T, 3, 3))
        add("svd2", mat(T, 2, 2))
        add("qr3", mat(T, 3, 3))
        sym = np.round(rng.uniform(-2, 2, (3, 3)), 3)
        add("eig3", wp.types.matrix((3, 3), T)(*(sym + sym.T).reshape(-1).tolist()))
        add("quat_from_matrix", rotation(T))
        add("quat_from_matrix", rotation(T, 4))
        add("transform_point", rotation(T, 4), vec(T, 3))
        add("transform_vector", rotation(T, 4), vec(T, 3))
    for T in (wp.int32, wp.int16):
        a = wp.types.matrix((2, 2), T)(*[int(x) for x in rng.integers(-9, 9, 4)])
        b = wp.types.matrix((2, 2), T)(*[int(x) for x in rng.integers(1, 9, 4)])
        for name in ("add", "sub", "mul", "cw_mul", "cw_div", "ddot", "bit_or"):
            add(name, a, b)
        for name in ("transpose", "trace", "neg", "invert"):
            add(name, a)

    # ------------------------------------------------------------ quaternions, transforms
    def unit_quat(T):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        return wp.types.quaternion(T)(*q.tolist())

    def xform(T):
        return wp.types.transformation(T)(wp.types.vector(3, T)(*u(-3, 3, 3)), unit_quat(T))

    for T in floats:
        q, r = unit_quat(T), unit_quat(T)
        v = vec(T, 3)
        angle = T(u(-3, 3))
        for name in ("add", "sub", "mul", "dot"):
            add(name, q, r)
        for name in ("neg", "pos", "length", "length_sq", "normalize", "quat_inverse", "quat_to_matrix",
                     "quat_to_axis_angle", "isnan", "isfinite"):
            add(name, q)
        add("mul", q, T(2.0))
        add("div", q, T(2.0))
        add("lerp", q, r, T(0.25))
        add("normalize", wp.types.quaternion(T)())
        add("quat_rotate", q, v)
        add("quat_rotate_inv", q, v)
        add("quat_from_axis_angle", wp.types.vector(3, T)(0.0, 0.6, 0.8), angle)
        add("quat_rpy", T(u(-3, 3)), T(u(-1.5, 1.5)), T(u(-3, 3)))
        add("quat_slerp", q, r, T(u(0, 1)))
        a, b = xform(T), xform(T)
        for name in ("add", "sub", "mul", "transform_multiply"):
            add(name, a, b)
        for name in ("transform_inverse", "transform_get_translation", "transform_get_rotation"):
            add(name, a)
        add("mul", a, T(2.0))
        add("lerp", a, b, T(0.5))
        add("transform_point", a, v)
        add("transform_vector", a, v)
        add("transform_set_translation", a, v)
        add("transform_set_rotation", a, r)
        sv, sw = vec(T, 6), vec(T, 6)
        for name in ("spatial_dot", "spatial_cross", "spatial_cross_dual"):
            add(name, sv, sw)
        add("spatial_top", sv)
        add("spatial_bottom", sv)
    q, v = unit_quat(wp.float32), vec(wp.float32, 3)
    axis = wp.vec3(0.0, 0.6, 0.8)
    add("quat_to_rpy", q)
    for ijk in ((0, 1, 2), (2, 1, 0), (0, 1, 0), (1, 2, 1)):
        add("quat_to_euler", q, *ijk)
        add("quat_from_euler", v, *ijk)
    add("quat_twist", axis, q)
    add("quat_twist_angle", axis, q)
    add("quat_twist_angle_signed", axis, q)
    # (Warp has float16/float64 overloads of these four too; the daemon has float32 ones.)
    add("transform_to_matrix", xform(wp.float32))
    add("transform_from_matrix", rotation(wp.float32, 4))
    add("transform_decompose", rotation(wp.float32, 4))
    add("transform_compose", v, q, vec(wp.float32, 3, 0.5, 2))
    add("transform_twist", xform(wp.float32), vec(wp.float32, 6))
    add("transform_wrench", xform(wp.float32), vec(wp.float32, 6))
    add("velocity_at_point", vec(wp.float32, 6), v)
    add("quat_identity", kernel="wp.quat_identity()")
    add("quat_identity", wp.float64, kernel="wp.quat_identity(dtype=wp.float64)")
    add("transform_identity", wp.float16, kernel="wp.transform_identity(dtype=wp.float16)")

    # ------------------------------------------------------------ random numbers and noise
    for seed in (0, 1, 12345, -7):
        add("rand_init", seed)
        add("rand_init", seed, 99)
    for s in (1, 5, 2831084092, 4000000000):
        st = wp.uint32(s)
        for name in ("randf", "randi", "randu", "randn", "sample_triangle", "sample_unit_ring",
                     "sample_unit_disk", "sample_unit_sphere_surface", "sample_unit_sphere",
                     "sample_unit_hemisphere_surface", "sample_unit_hemisphere", "sample_unit_square",
                     "sample_unit_cube"):
            add(name, st)
        add("randf", st, -2.0, 3.0)
        add("randi", st, -10, 10)
        add("randu", st, wp.uint32(5), wp.uint32(500))
        add("poisson", st, 3.0)
        add("poisson", st, 42.5)
        add("noise", st, u(-9, 9))
        add("noise", st, wp.vec2(*u(-9, 9, 2)))
        add("noise", st, wp.vec3(*u(-9, 9, 3)))
        add("noise", st, wp.vec4(*u(-9, 9, 4)))
        add("pnoise", st, u(-9, 9), 4)
        add("pnoise", st, wp.vec2(*u(-9, 9, 2)), 3, 5)
        add("pnoise", st, wp.vec3(*u(-9, 9, 3)), 3, 5, 2)
        add("pnoise", st, wp.vec4(*u(-9, 9, 4)), 3, 5, 2, 4)
        add("curlnoise", st, wp.vec2(*u(-9, 9, 2)), wp.uint32(2), 2.0, 0.5)
        add("curlnoise", st, wp.vec3(*u(-9, 9, 3)), wp.uint32(3), 2.0, 0.5)
        add("curlnoise", st, wp.vec4(*u(-9, 9, 4)), wp.uint32(1), 2.0, 0.5)
    return cases


# Builtins Warp runs only in kernels: Python scope raises RuntimeError "... function is undefined".
KERNEL_ONLY = ("atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_cas", "atomic_exch",
               "atomic_and", "atomic_or", "atomic_xor", "printf", "address", "view", "load", "store",
               "array_store", "lower_bound", "select", "where", "sample_cdf", "dense_gemm", "dense_solve")

# Calls that no overload takes (no implicit conversion): RuntimeError "Couldn't find a function".
def make_mismatches(wp):
    return [("sin", (1,)), ("sin", (True,)), ("min", (1.0, 2)), ("pow", (2, 3)), ("abs", (True,)),
            ("dot", (wp.vec3(1.0, 2.0, 3.0), wp.vec3d(1.0, 2.0, 3.0))),
            ("mul", (wp.vec3d(1.0, 2.0, 3.0), 2.0)), ("clamp", (wp.vec3(), wp.vec3(), wp.vec3())),
            ("sin", (wp.vec3(1.0, 2.0, 3.0),)), ("determinant", (wp.types.matrix((2, 3), float)(),)),
            ("randf", (1,)), ("quat_rotate", (wp.quat(), wp.vec3d()))]
