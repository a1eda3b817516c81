"""Warp's builtins in Python scope (warpd/pyscope*.py), differentially against kernels.

pyscope_cases.py calls every Python-scope builtin over float16/32/64, the
integer types, vectors, matrices, quaternions, transformations, random streams
and noise. Each builtin, in each family of arguments it takes (scalar, vector,
matrix, ...; see kernel_groups), runs twice on the same inputs: in Python
scope, and in a generated kernel that reads the inputs from arrays and writes
the result to an array of the Python-scope result's type (so the kernel must
return that type too: another one does not compile). The two must agree to
the dtype's tolerance, integers and booleans exactly.

Independently of the kernels, every call: values against Python/NumPy float64
references (math functions, C integer semantics, matrix algebra,
reconstructions of the decompositions, rotations) and values measured with
warp-lang 1.19 (random streams, noise, decompositions, return types); the
errors of kernel-only builtins and of calls no overload takes; keyword names;
expect_eq/expect_near messages against the kernel's.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import types

import numpy as np
import pytest

import warpd as wp
from pyscope_cases import KERNEL_ONLY, make_cases, make_mismatches

CASES = make_cases(wp)


# ------------------------------------------------------------ helpers

def arg_type(x):
    """The Warp type of a Python-scope argument (Python float/int/bool are float32/int32/bool)."""
    if isinstance(x, bool):
        return wp.bool
    if isinstance(x, int):
        return wp.int32
    if isinstance(x, float):
        return wp.float32
    return type(x)


def as_array(x) -> np.ndarray:
    """A Python-scope value as a float64/int NumPy array (0-d for scalars)."""
    if isinstance(x, wp.types.Value):
        return np.asarray(x)
    if isinstance(x, wp.types._Scalar):
        return np.asarray(x.value)
    return np.asarray(x)


def result_type(r):
    if isinstance(r, bool):
        return wp.bool
    if isinstance(r, int):
        return wp.int32
    if isinstance(r, float):
        return wp.float32
    return type(r)


def component_dtype(t):
    return wp.types.type_scalar(t) if t is not wp.bool else wp.bool


def tolerance(t, name):
    st = component_dtype(t)
    loose = name in ("svd3", "svd2", "qr3", "eig3", "quat_to_euler", "quat_slerp", "quat_to_axis_angle",
                     "erfinv", "erfcinv", "curlnoise", "poisson", "transform_decompose")
    if st is wp.float16:
        return dict(rtol=2e-3, atol=2e-3 if not loose else 8e-3)
    if st is wp.float32:
        return dict(rtol=1e-5, atol=1e-5) if not loose else dict(rtol=1e-4, atol=1e-4)
    if st is wp.float64:
        return dict(rtol=1e-12, atol=1e-12) if not loose else dict(rtol=1e-9, atol=1e-9)
    return dict(rtol=0, atol=0)


def python_scope(case):
    """The case's Python-scope result (a transform_set_* call: the modified copy)."""
    fn = getattr(wp, case.name)
    if case.name.startswith("transform_set_"):
        x = type(case.args[0])(case.args[0])
        assert fn(x, *case.args[1:]) is None
        return x
    return fn(*case.args)


# Compiling is what costs (0.1 to 0.3 s per call site with the daemon's CUDA
# verification), so the kernels call each builtin once per combination of argument
# families (scalar, vector, matrix, ...): two combinations at most, spread over those the
# cases have (_FAMILY_CAP: one for the componentwise builtins, more for mul and div), each
# in one dtype rotated over the builtins so that every dtype is exercised, with all the
# values of that signature in a loop. 169 call sites in 17 kernels of one module compile
# in 20-30 s. Python scope is checked in every dtype against the references below.
_FLOAT_ORDER = (wp.float32, wp.float16, wp.float64)
_INT_ORDER = (wp.int8, wp.uint64, wp.int32, wp.uint16, wp.int64, wp.uint8, wp.int16, wp.uint32)
_FAMILY_CAP = {"mul": 6, "div": 3, **{name: 1 for name in (
    "pos", "neg", "abs", "sign", "step", "nonzero", "isinf", "invert", "bit_and", "bit_or", "bit_xor",
    "cw_mul", "cw_div", "transpose", "trace", "ddot", "outer", "length_sq", "argmin", "argmax", "norm_huber",
    "norm_pseudo_huber", "smooth_normalize", "unot", "bit_count", "sub", "clamp")}}
_GROUPS_PER_KERNEL = 10


def _family(t):
    if t is wp.bool:
        return "bool"
    f = t._wp_family_
    return t._kind_ if f == "scalar" else f


def kernel_groups(cases):
    """The calls the kernels make: lists of cases of one signature (see above)."""
    buckets: dict = {}
    for c in cases:
        fams = ("kernel", c.kernel) if c.kernel else tuple(_family(arg_type(a)) for a in c.args)
        by_sig = buckets.setdefault((c.name, fams), {})
        by_sig.setdefault(_signature(c), []).append(c)
    names: dict = {}
    for (name, _), by_sig in buckets.items():
        names.setdefault(name, []).append(by_sig)
    groups = []
    b = 0
    for name, family_buckets in names.items():
        cap = _FAMILY_CAP.get(name, 2)
        if len(family_buckets) > cap:  # evenly spread over the families, first and last kept
            step = (len(family_buckets) - 1) / max(cap - 1, 1)
            family_buckets = [family_buckets[round(k * step)] for k in range(cap)]
        for by_sig in family_buckets:
            def rank(sig, b=b):
                st = component_dtype(sig[2][0]) if sig[2] and not sig[1] else None
                order = _FLOAT_ORDER if st in _FLOAT_ORDER else _INT_ORDER
                if st not in order:
                    return 0
                return (order.index(st) - b) % len(order)
            groups.append(by_sig[min(by_sig, key=rank)])
            b += 1
    return groups


class KernelSource:
    """One generated kernel. Calls of one builtin with one signature share a line, run in a
    loop over their inputs (inputs and outputs sit contiguously in one array per type)."""

    def __init__(self, index):
        self.index = index
        self.inputs: dict = {}   # type -> list of values
        self.outputs: dict = {}  # type -> number of slots
        self.groups: list = []   # (case, [arg base per position], [(type, base) per result], count)

    def _take(self, table, t, values):
        lst = table.setdefault(t, [])
        base = len(lst)
        lst.extend(values)
        return base

    def add_group(self, cases, results):
        first = cases[0]
        args = []
        if not first.kernel:
            for p in range(len(first.args)):
                t = arg_type(first.args[p])
                args.append((t, self._take(self.inputs, t, [c.args[p] for c in cases])))
        outs = []
        for m, r in enumerate(results[0]):
            t = result_type(r)
            outs.append((t, self.outputs.get(t, 0)))
            self.outputs[t] = self.outputs.get(t, 0) + len(cases)
        self.groups.append((first, args, outs, len(cases)))
        return outs

    def text(self):
        ins, outs = list(self.inputs), list(self.outputs)
        params = [f"i{k}: wp.array(dtype=T_IN_{self.index}[{k}])" for k in range(len(ins))]
        params += [f"o{k}: wp.array(dtype=T_OUT_{self.index}[{k}])" for k in range(len(outs))]
        body = []
        for g, (case, args, slots, count) in enumerate(self.groups):
            loop = count > 1
            ind = "        " if loop else "    "
            j = " + j" if loop else ""
            exprs = [f"i{ins.index(t)}[{b}{j}]" for t, b in args]
            outs_at = [f"o{outs.index(t)}[{b}{j}]" for t, b in slots]
            if loop:
                body.append(f"    for j in range({count}):")
            if case.name.startswith("transform_set_"):
                body += [f"{ind}v{g} = {exprs[0]}", f"{ind}wp.{case.name}(v{g}, {exprs[1]})",
                         f"{ind}{outs_at[0]} = v{g}"]
                continue
            call = case.kernel or f"wp.{case.name}({', '.join(exprs)})"
            names = [f"r{g}_{m}" for m in range(len(slots))]
            body.append(f"{ind}{', '.join(names)} = {call}")
            body += [f"{ind}{o} = {r}" for o, r in zip(outs_at, names)]
        return f"@wp.kernel(enable_backward=False)\ndef pyscope_{self.index}({', '.join(params)}):\n" + "\n".join(body) + "\n"


def _input_array(t, values):
    if issubclass(t, wp.types.Value):
        data = np.stack([np.asarray(v) for v in values])
    else:
        data = np.array([as_array(v).item() for v in values], dtype=wp.types.numpy_dtype(t))
    return wp.array(data, dtype=t)


def _signature(case):
    return (case.name, case.kernel, tuple(arg_type(a) for a in case.args))


@pytest.fixture(scope="module")
def evaluated(wp, tmp_path_factory):
    """(case, Python-scope result, kernel result) for every case of the kernel subset."""
    group_list = kernel_groups(CASES)
    sources, placed = [], []
    for g, members in enumerate(group_list):
        if g % _GROUPS_PER_KERNEL == 0:
            sources.append(KernelSource(len(sources)))
        results = [python_scope(c) for c in members]
        results = [list(r) if isinstance(r, tuple) else [r] for r in results]
        slots = sources[-1].add_group(members, results)
        placed.append((sources[-1], members, results, slots))
    # The kernels' array dtypes, for the annotations: a module the generated file imports.
    dtypes = types.ModuleType("pyscope_kernel_dtypes")
    for s in sources:
        setattr(dtypes, f"T_IN_{s.index}", list(s.inputs))
        setattr(dtypes, f"T_OUT_{s.index}", list(s.outputs))
    sys.modules[dtypes.__name__] = dtypes
    path = tmp_path_factory.mktemp("pyscope") / "pyscope_kernels.py"
    path.write_text("import warpd as wp\nfrom pyscope_kernel_dtypes import *  # noqa: F403\n\n\n" +
                    "\n\n".join(src.text() for src in sources))
    spec = importlib.util.spec_from_file_location("pyscope_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    host = {}
    for s in sources:
        ins = [_input_array(t, v) for t, v in s.inputs.items()]
        outs = [wp.empty(n, dtype=t) for t, n in s.outputs.items()]
        wp.launch(getattr(module, f"pyscope_{s.index}"), dim=1, inputs=ins + outs)
        host[s.index] = {t: o.numpy() for t, o in zip(s.outputs, outs)}
    evaluated = []
    for s, members, results, slots in placed:
        for k, (case, res) in enumerate(zip(members, results)):
            kernel = [host[s.index][t][base + k] for t, base in slots]
            evaluated.append((case, res, kernel))
    return evaluated


def assert_close(actual, expected, t, name, what):
    a = np.asarray(actual, dtype=np.float64) if component_dtype(t) in (wp.float16, wp.float32, wp.float64) \
        else np.asarray(actual)
    e = np.asarray(expected, dtype=a.dtype).reshape(a.shape)
    np.testing.assert_allclose(a, e, equal_nan=True, err_msg=what, **tolerance(t, name))


# ------------------------------------------------------------ Python scope against kernels

def test_python_scope_equals_kernel(evaluated):
    failures = []
    for case, results, kernel in evaluated:
        for r, k in zip(results, kernel):
            try:
                assert_close(as_array(r), k, result_type(r), case.name, repr(case))
            except AssertionError as e:
                failures.append(f"{case!r}: Python scope {as_array(r).tolist()} kernel "
                                f"{np.asarray(k).tolist()}\n{str(e).splitlines()[-1]}")
    assert not failures, f"{len(failures)} of {len(evaluated)} calls differ:\n" + "\n".join(failures[:40])


def test_cases_cover_every_python_scope_builtin():
    """Every exported Python-scope builtin (but the kernel-only ones and those tested below)
    appears in the differential cases."""
    called = {c.name for c in CASES}
    skip = set(KERNEL_ONLY) | set(wp.pyscope.KERNEL_ONLY) | set(wp.pyscope.NO_PYTHON_OVERLOAD) | {
        "tid", "block_dim", "expect_eq", "expect_near", "identity"}
    missing = sorted(set(wp.pyscope.__all__) - called - skip)
    assert not missing, f"no differential case for {missing}"


def test_identity_and_block_dim(wp):
    assert wp.identity(3, dtype=wp.float64) == wp.mat33d(1, 0, 0, 0, 1, 0, 0, 0, 1)
    assert type(wp.identity(2, dtype=wp.int16)) is wp.types.matrix((2, 2), wp.int16)
    assert wp.block_dim() == 256  # Warp's Python-scope answer (its default block size)


# ------------------------------------------------------------ independent references

def _f64(x):
    return as_array(x).astype(np.float64)


def _c_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _wrap(v, t):
    bits = 8 * t._size_
    v &= (1 << bits) - 1
    return v - (1 << bits) if t._signed_ and v >= 1 << (bits - 1) else v


def _round_away(x):
    t = math.trunc(x)
    return t + (math.copysign(1.0, x) if abs(x - t) >= 0.5 else 0.0)


_SCALAR_REF = {
    "acos": math.acos, "asin": math.asin, "atan": math.atan, "cbrt": np.cbrt, "ceil": math.ceil,
    "cos": math.cos, "cosh": math.cosh, "degrees": math.degrees, "erf": math.erf, "erfc": math.erfc,
    "exp": math.exp, "floor": math.floor, "frac": lambda x: x - math.trunc(x), "log": math.log,
    "log10": math.log10, "log2": math.log2, "radians": math.radians, "rint": np.rint,
    "round": _round_away, "sin": math.sin, "sinh": math.sinh, "sqrt": math.sqrt, "tan": math.tan,
    "tanh": math.tanh, "trunc": math.trunc, "atan2": math.atan2, "copysign": math.copysign,
    "pow": math.pow, "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "min": min, "max": max, "abs": abs, "neg": lambda x: -x, "pos": lambda x: x,
    "sign": lambda x: -1.0 if x < 0 else 1.0, "step": lambda x: 1.0 if x < 0 else 0.0,
    "nonzero": lambda x: 0.0 if x == 0 else 1.0, "clamp": lambda x, lo, hi: min(max(x, lo), hi),
    "mod": math.fmod, "floordiv": lambda a, b: math.floor(a / b), "div": lambda a, b: a / b,
    "lerp": lambda a, b, t: a * (1 - t) + b * t,
    "smoothstep": lambda a, b, x: (lambda u: u * u * (3 - 2 * u))(min(max((x - a) / (b - a), 0.0), 1.0)),
}
_INT_REF = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "min": min, "max": max,
    "div": _c_div, "mod": lambda a, b: 0 if b == 0 else a - _c_div(a, b) * b,
    "floordiv": lambda a, b: 0 if b == 0 else a // b, "bit_and": lambda a, b: a & b,
    "bit_or": lambda a, b: a | b, "bit_xor": lambda a, b: a ^ b, "abs": abs, "neg": lambda a: -a,
    "pos": lambda a: a, "invert": lambda a: ~a, "sign": lambda a: -1 if a < 0 else 1,
    "step": lambda a: 1 if a < 0 else 0, "nonzero": lambda a: 0 if a == 0 else 1,
    "clamp": lambda x, lo, hi: min(max(x, lo), hi),
}


def _ref_tol(t):
    st = component_dtype(t)
    return {wp.float16: dict(rtol=2e-3, atol=2e-3), wp.float32: dict(rtol=2e-6, atol=2e-6),
            wp.float64: dict(rtol=1e-13, atol=1e-13)}[st]


def test_scalar_values_against_python_math():
    checked = 0
    for case in CASES:
        ts = [arg_type(a) for a in case.args]
        if not ts or any(not wp.types.is_scalar_type(t) or t is wp.bool for t in ts) or len(set(ts)) != 1:
            continue
        t = ts[0]
        if t._kind_ == "float" and case.name in _SCALAR_REF:
            args = [float(_f64(a)) for a in case.args]
            with np.errstate(all="ignore"):
                try:
                    want = float(_SCALAR_REF[case.name](*args))
                except (ValueError, ZeroDivisionError, OverflowError):
                    continue
            if t is wp.float16:  # computed through float32 and rounded once to half
                want = float(np.float16(np.float32(want)))
            got = as_array(python_scope(case)).astype(np.float64)
            np.testing.assert_allclose(got, want, equal_nan=True, err_msg=repr(case), **_ref_tol(t))
            checked += 1
        elif t._kind_ == "int" and case.name in _INT_REF:
            if case.name in ("lshift", "rshift"):
                continue
            args = [int(as_array(a)) for a in case.args]
            want = _wrap(_INT_REF[case.name](*args), t)
            assert as_array(python_scope(case)) == want, repr(case)
            checked += 1
    assert checked > 400


def _rot(q):
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _check_linalg(case, res):
    """Checks res against a NumPy float64 reference; False if there is none for the case."""
    if case.kernel or not case.args:
        return False
    name, args = case.name, [_f64(a) for a in case.args]
    kinds = [wp.types.type_name(arg_type(a)) for a in case.args]
    t = arg_type(case.args[0])
    st = component_dtype(t)
    if st not in (wp.float32, wp.float64) or any(k.startswith(("int", "uint")) for k in kinds):
        return False
    tol = dict(rtol=1e-4, atol=1e-4) if st is wp.float32 else dict(rtol=1e-10, atol=1e-10)
    r = res if isinstance(res, tuple) else _f64(res)
    if name in ("inverse", "determinant", "transpose", "trace", "get_diag") and \
            args[0].shape[0] == args[0].shape[-1]:
        want = {"inverse": lambda m: np.linalg.inv(m) if abs(np.linalg.det(m)) > 1e-12 else np.zeros_like(m),
                "determinant": np.linalg.det, "transpose": np.transpose, "trace": np.trace,
                "get_diag": np.diag}[name](args[0])
    elif name == "mul" and len(args[0].shape) + len(args[1].shape) >= 3 and args[0].ndim and args[1].ndim:
        want = args[0] @ args[1]
    elif name == "ddot":
        want = np.sum(args[0] * args[1])
    elif name == "outer":
        want = np.outer(args[0], args[1])
    elif name == "cross":
        want = np.cross(args[0], args[1])
    elif name in ("dot", "length", "length_sq") and kinds[0].startswith("vec"):
        want = {"dot": lambda: args[0] @ args[1], "length": lambda: np.linalg.norm(args[0]),
                "length_sq": lambda: args[0] @ args[0]}[name]()
    elif name in ("svd3", "svd2"):
        u, s, v = (_f64(x) for x in res)
        np.testing.assert_allclose(u @ np.diag(s) @ v.T, args[0], err_msg=repr(case), **tol)
        np.testing.assert_allclose(np.abs(s), np.linalg.svd(args[0], compute_uv=False), err_msg=repr(case), **tol)
        np.testing.assert_allclose(np.linalg.det(v), 1.0, **tol)
        return True
    elif name == "qr3":
        q, rr = (_f64(x) for x in res)
        np.testing.assert_allclose(q @ rr, args[0], err_msg=repr(case), **tol)
        np.testing.assert_allclose(q @ q.T, np.eye(3), **tol)
        np.testing.assert_allclose(np.tril(rr, -1), 0, **tol)
        return True
    elif name == "eig3":
        q, d = (_f64(x) for x in res)
        np.testing.assert_allclose(q @ np.diag(d) @ q.T, args[0], err_msg=repr(case), **tol)
        np.testing.assert_allclose(np.sort(d), np.linalg.eigvalsh(args[0]), err_msg=repr(case), **tol)
        return True
    elif name in ("quat_rotate", "quat_rotate_inv") and abs(np.linalg.norm(args[0]) - 1) < 1e-3:
        m = _rot(args[0])
        want = (m if name == "quat_rotate" else m.T) @ args[1]
    elif name == "quat_to_matrix":
        want = _rot(args[0])
    elif name == "quat_from_matrix" and args[0].shape == (3, 3):
        np.testing.assert_allclose(_rot(r), args[0], err_msg=repr(case), **tol)
        return True
    elif name == "transform_point" and kinds[0].startswith("transform"):
        want = _rot(args[0][3:]) @ args[1] + args[0][:3]
    elif name == "transform_inverse":
        m = _rot(args[0][3:])
        want = np.concatenate([-(m.T @ args[0][:3]), args[0][3:] * [-1, -1, -1, 1]])
    elif name in ("quat_slerp",):
        qa, qb, tt = args
        rel = _f64(wp.mul(wp.quat_inverse(case.args[0]), case.args[1]))
        angle = 2 * math.atan2(np.linalg.norm(rel[:3]), abs(rel[3]))
        np.testing.assert_allclose(abs(np.dot(r / np.linalg.norm(r), qa)), math.cos(tt * angle / 2),
                                   err_msg=repr(case), **tol)
        return True
    else:
        return False
    np.testing.assert_allclose(r, want, err_msg=repr(case), **tol)
    return True


def test_linear_algebra_and_rotations_against_numpy():
    checked = 0
    for case in CASES:
        checked += _check_linalg(case, python_scope(case))
    assert checked > 80


# Values printed by warp-lang 1.19.0 for the same calls in its Python scope.
WARP_VALUES = [
    (lambda: wp.randf(wp.uint32(1)), 0.6591631174087524),
    (lambda: wp.rand_init(1), 2831084092),
    (lambda: wp.randf(wp.rand_init(1)), 0.9108019471168518),
    (lambda: wp.rand_init(1, 2), 2112726488),
    (lambda: wp.randn(wp.uint32(5)), -0.9087358117103577),
    (lambda: wp.randu(wp.uint32(5)), 2161170183),
    (lambda: wp.randi(wp.uint32(1), 0, 10), 2),
    (lambda: wp.poisson(wp.uint32(5), 3.0), 2),
    (lambda: wp.noise(wp.uint32(1), 0.5), 0.007415056228637695),
    (lambda: wp.noise(wp.uint32(1), wp.vec2(0.3, 0.4)), 0.4507901966571808),
    (lambda: wp.curlnoise(wp.uint32(1), wp.vec3(0.3, 0.4, 0.5), wp.uint32(4), 1.0, 1.0),
     [-1.5978655815124512, 0.2940857410430908, -0.9992716908454895]),
    (lambda: wp.sample_unit_sphere(wp.uint32(5)), [-0.39080074429512024, -0.3182905316352844, -0.003212316194549203]),
    (lambda: wp.quat_rpy(0.1, 0.2, 0.3), [0.03427080065011978, 0.10602051019668579, 0.14357218146324158,
                                          0.983347475528717]),
    (lambda: wp.sin(1.0), 0.8414709568023682),
    (lambda: wp.sin(wp.float16(1.0)), 0.84130859375),
    (lambda: wp.degrees(1.0), 57.295780181884766),
    (lambda: wp.pow(2.0, 0.5), 1.4142135381698608),
    (lambda: wp.invert(wp.uint8(5)), 250),
    (lambda: wp.lshift(wp.int8(64), wp.int8(2)), 0),
    (lambda: wp.mul(wp.int16(-1234567890), wp.int16(-1234567890)), -3004),
    (lambda: wp.abs(2 ** 40), 0),  # a Python int is wrapped to int32, as Warp's ctypes call does
    (lambda: wp.quat_to_axis_angle(wp.quat(0.0, 0.0, 1.0, 0.0))[1], 3.1415927410125732),
    (lambda: wp.svd2(wp.mat22(1.0, 2.0, 3.0, 4.0))[1], [5.4649858474731445, 0.3659660518169403]),
    (lambda: wp.svd3(wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0))[1],
     [17.41250228881836, 0.8751611113548279, -0.19686660170555115]),
    (lambda: wp.smooth_normalize(wp.vec3(1.0, 2.0, 3.0)), [0.25819888710975647, 0.5163977742195129,
                                                           0.774596631526947]),
]


@pytest.mark.parametrize("index", range(len(WARP_VALUES)))
def test_values_measured_with_warp(index):
    call, want = WARP_VALUES[index]
    np.testing.assert_allclose(as_array(call()).astype(np.float64), want, rtol=2e-6, atol=1e-6)


def test_return_types_follow_warp():
    assert type(wp.sin(1.0)) is float and type(wp.sin(wp.float32(1.0))) is float
    assert type(wp.sin(np.float32(1.0))) is float
    assert type(wp.sin(wp.float64(1.0))) is wp.float64 and type(wp.sin(np.float64(1.0))) is wp.float64
    assert type(wp.sin(wp.float16(1.0))) is wp.float16
    assert type(wp.abs(-3)) is int and type(wp.abs(wp.int8(-3))) is wp.int8
    assert type(wp.dot(wp.vec3i(1, 2, 3), wp.vec3i(1, 2, 3))) is int
    assert type(wp.trace(wp.mat22d(1, 2, 3, 4))) is wp.float64
    assert type(wp.argmax(wp.vec3(1.0, 5.0, 3.0))) is wp.uint32
    assert type(wp.rand_init(1)) is wp.uint32 and type(wp.randu(wp.uint32(1))) is wp.uint32
    assert type(wp.isnan(1.0)) is bool and type(wp.unot(0)) is bool
    assert type(wp.min(wp.vec3(1.0, 5.0, 3.0), wp.vec3(4.0, 2.0, 6.0))) is wp.vec3
    assert type(wp.transform_identity()) is wp.transform
    assert type(wp.quat_identity(dtype=wp.float64)) is wp.quatd
    old = wp.config.legacy_scalar_return_types
    try:
        wp.config.legacy_scalar_return_types = True
        assert type(wp.sin(wp.float16(1.23))) is float and type(wp.sin(wp.float64(1.23))) is float
        assert type(wp.invert(wp.int16(-123))) is int
    finally:
        wp.config.legacy_scalar_return_types = old


def test_transform_set_modifies_in_place():
    x = wp.transform()
    assert wp.transform_set_translation(x, wp.vec3(1.0, 2.0, 3.0)) is None
    assert wp.transform_set_rotation(x, wp.quat(0.0, 0.0, 1.0, 0.0)) is None
    assert x == wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 1.0, 0.0))


# ------------------------------------------------------------ errors

@pytest.mark.parametrize("name", KERNEL_ONLY)
def test_kernel_only_builtins_raise_warps_error(name):
    with pytest.raises(RuntimeError, match=f"Error calling function '{name}', function is undefined"):
        getattr(wp, name)(1, 2, 3)


@pytest.mark.parametrize("index", range(len(make_mismatches(wp))))
def test_no_implicit_conversion(index):
    name, args = make_mismatches(wp)[index]
    names = ", ".join(type(a).__name__ for a in args)
    with pytest.raises(RuntimeError, match=f"Couldn't find a function '{name}' compatible with the "
                                           f"arguments '{names}'"):
        getattr(wp, name)(*args)


def test_builtins_with_no_python_scope_overload():
    """Warp exports index/indexref/extract, but no Python-scope call finds an overload."""
    for name in ("index", "indexref", "extract"):
        with pytest.raises(RuntimeError, match=f"Couldn't find a function '{name}' compatible with the "
                                               f"arguments 'mat22f, int, int'"):
            getattr(wp, name)(wp.mat22f(), 0, 1)


def test_keyword_arguments_use_warps_parameter_names():
    v = wp.vec3f(3.0, 1.0, 2.0)
    assert wp.max(a=v) == 3.0 and wp.min(v) == 1.0
    assert wp.atan2(y=1.0, x=-1.0) == pytest.approx(math.atan2(1.0, -1.0), rel=1e-6)
    m = wp.mat44f(1.0, 0.0, 0.0, 4.0, 0.0, 1.0, 0.0, 5.0, 0.0, 0.0, 1.0, 6.0, 0.0, 0.0, 0.0, 1.0)
    assert wp.transform_point(point=wp.vec3f(1.0, 2.0, 3.0), mat=m) == wp.vec3f(5.0, 7.0, 9.0)
    assert wp.transform_vector(vec=wp.vec3f(1.0, 2.0, 3.0), mat=m) == wp.vec3f(1.0, 2.0, 3.0)
    state = wp.rand_init(42)
    p = wp.vec3f(0.25, 0.5, 0.75)
    assert wp.curlnoise(xyz=p, state=state) == wp.curlnoise(state, p, wp.uint32(1), 2.0, 0.5)
    xy = wp.vec2f(0.3, 0.4)
    assert wp.noise(state, xy=xy) == wp.noise(state, xy)
    assert wp.pnoise(state, xy=xy, px=3, py=4) == wp.pnoise(state, xy, 3, 4)
    # dtype=None and dtype=float mean float32; other spellings of a type find no overload.
    assert type(wp.quat_identity(dtype=None)) is wp.quatf and type(wp.transform_identity(float)) is wp.transformf
    for bad in (wp.int32, int, np.float32, "float64", 7, [wp.float64]):
        with pytest.raises(RuntimeError, match="Couldn't find a function 'quat_identity'"):
            wp.quat_identity(dtype=bad)


def test_bytes_of_values_are_their_layout():
    assert bytes(wp.quat_identity(dtype=wp.float16)) == np.array([0, 0, 0, 1], dtype=np.float16).tobytes()
    assert bytes(wp.transform_identity(dtype=wp.float64)) == np.array([0, 0, 0, 0, 0, 0, 1.0]).tobytes()


# ------------------------------------------------------------ expect_eq / expect_near

@wp.kernel(module="unique")
def failing_expectations():
    wp.expect_eq(1, 2)
    wp.expect_eq(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 4.0))
    wp.expect_eq(wp.mat22(1.0, 0.0, 0.0, 1.0), wp.mat22(1.0, 0.0, 0.0, 2.0))
    wp.expect_near(1.25, 2.0, 0.1)
    wp.expect_near(wp.quat(0.0, 0.0, 0.5, 1.0), wp.quat(0.0, 0.0, 0.0, 1.0), 0.1)
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.05), 0.1)  # within the tolerance: silent


def test_expectations_print_as_in_kernels(wp, capsys):
    wp.synchronize()
    capsys.readouterr()
    wp.launch(failing_expectations, dim=1)
    wp.synchronize()
    kernel_out = capsys.readouterr().out
    wp.expect_eq(1, 2)
    wp.expect_eq(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 4.0))
    wp.expect_eq(wp.mat22(1.0, 0.0, 0.0, 1.0), wp.mat22(1.0, 0.0, 0.0, 2.0))
    wp.expect_near(1.25, 2.0, 0.1)
    wp.expect_near(wp.quat(0.0, 0.0, 0.5, 1.0), wp.quat(0.0, 0.0, 0.0, 1.0), 0.1)
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.05), 0.1)
    assert capsys.readouterr().out == kernel_out
    assert kernel_out.startswith("Error, expect_eq() failed:\n\t Expected: 2\n\t Actual: 1\n")
