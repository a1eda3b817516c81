"""Warp's scalar math builtins in Python scope: wp.sin, wp.abs, wp.min, wp.clamp, ...

Float functions take float16, float32 and float64 scalars (a Python float is
float32) and return the argument's type; abs, sign, min and max also take
vectors, componentwise (min/max of one vector reduce it). See pyscope_core.py
for the matching and return-type rules, and runtime/native/warpd/native/
scalar.h for the kernels' semantics followed here (sign(0) == 1, step(x) is
1 for x < 0, frac keeps the sign, round breaks ties away from zero, rint to
even, min/max skip a NaN operand, acos/asin clamp their argument).
"""

from __future__ import annotations

import math

import numpy as np

from . import types as wt
from .pyscope_core import (builtin, const, dtype, family, fmax, fmin, ignore_fp, int_elementwise,
                           is_float, is_int, is_number, is_vec, math1, math2, no_match, result,
                           type_of, value_of)


# ------------------------------------------------------------ float functions

def _round_half_away(x):
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)


def _clamp_unit(x):
    # fmax(NaN, -1) is -1: a NaN argument becomes -1, as in the kernels.
    return np.fmin(np.fmax(x, -1.0), 1.0)


_SQRT_PI = math.sqrt(math.pi)


def _erfinv_estimate(y, w):
    """M. Giles' single-precision estimate of erfinv(y), w = -log((1 - y)(1 + y))."""
    if w < 5.0:
        w -= 2.5
        coeffs = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
    else:
        w = math.sqrt(w) - 3.0
        coeffs = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
    p = 0.0
    for c in coeffs:
        p = p * w + c
    return p * y


def _log_erfc(x):
    """log(erfc(x)), by the asymptotic series where erfc underflows."""
    if x < 26.0:
        return math.log(math.erfc(x))
    u = 0.5 / (x * x)
    s = 1.0 + u * (-1.0 + u * (3.0 + u * (-15.0 + u * 105.0)))
    return -x * x - math.log(x * _SQRT_PI) + math.log(s)


def _erfcinv_tail(c):
    """x > 0 with erfc(x) = c, for 0 < c <= 0.5: Newton on log(erfc(x)) = log(c)."""
    w = -math.log(c * (2.0 - c))
    x = _erfinv_estimate(1.0 - c, w) if w < 40.0 else math.sqrt(w)
    lc = math.log(c)
    for _ in range(60):
        lx = _log_erfc(x)
        # d/dx log(erfc(x)) = -2 exp(-x^2) / (sqrt(pi) erfc(x)) = -2 exp(-x^2 - log erfc(x)) / sqrt(pi)
        slope = -2.0 / _SQRT_PI * math.exp(-x * x - lx)
        step = (lx - lc) / slope
        x -= step
        if abs(step) <= 1e-17 * x:
            break
    return x


def _erfinv_center(y):
    x = _erfinv_estimate(y, -math.log1p(-y * y))
    for _ in range(4):
        x -= (math.erf(x) - y) / (2.0 / _SQRT_PI * math.exp(-x * x))
    return x


def _erfinv64(y):
    a = abs(y)
    if not a < 1.0:
        return math.copysign(math.inf, y) if a == 1.0 else math.nan
    if a < 0.5:
        return _erfinv_center(y)
    return math.copysign(_erfcinv_tail(1.0 - a), y)


def _erfcinv64(c):
    if not 0.0 < c < 2.0:
        return math.inf if c == 0.0 else (-math.inf if c == 2.0 else math.nan)
    if c <= 0.5:
        return _erfcinv_tail(c)
    if c < 1.5:
        return _erfinv_center(1.0 - c)
    return -_erfcinv_tail(2.0 - c)


def _vectorized(f):
    return np.vectorize(f, otypes=[np.float64])


_UNARY = {
    "acos": lambda x: np.arccos(_clamp_unit(x)),
    "asin": lambda x: np.arcsin(_clamp_unit(x)),
    "atan": np.arctan, "cbrt": np.cbrt, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh,
    "degrees": lambda x: x * 57.29577951308232087679,
    "erf": _vectorized(math.erf), "erfc": _vectorized(math.erfc),
    "erfcinv": _vectorized(_erfcinv64), "erfinv": _vectorized(_erfinv64),
    "exp": np.exp, "floor": np.floor, "frac": lambda x: x - np.trunc(x), "log": np.log,
    "log10": np.log10, "log2": np.log2,
    "radians": lambda x: x * 0.01745329251994329577,
    "rint": np.rint, "round": _round_half_away, "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
    "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
}

_BINARY = {"atan2": np.arctan2, "copysign": np.copysign, "pow": np.power}


def _float_unary(name, f64):
    def fn(x):
        t = type_of(x)
        if not is_float(t):
            raise no_match(name, (x,))
        return result(t, math1(f64, value_of(x, t)))

    fn.__doc__ = f"wp.{name}(x) of a float16, float32 or float64 scalar, in its precision."
    return builtin(fn, name=name)


def _float_binary(name, f64):
    def fn(x, y):
        t = type_of(x)
        if not is_float(t) or type_of(y) is not t:
            raise no_match(name, (x, y))
        return result(t, math2(f64, value_of(x, t), value_of(y, t)))

    def atan2(y, x):  # Warp's parameter names: atan2(y, x)
        return fn(y, x)

    out = atan2 if name == "atan2" else fn
    out.__doc__ = f"wp.{name} of two float scalars of one type, in their precision."
    return builtin(out, name=name)


for _name, _f in _UNARY.items():
    globals()[_name] = _float_unary(_name, _f)
for _name, _f in _BINARY.items():
    globals()[_name] = _float_binary(_name, _f)


# ------------------------------------------------------------ scalars and vectors

def sign_of(a):
    """-1 for a < 0, else 1 (NaN and 0 give 1), in a's dtype."""
    return np.where(a < 0, -1, 1).astype(a.dtype)


def abs_of(a):
    return np.abs(a).astype(a.dtype)  # integers wrap: abs(INT_MIN) == INT_MIN


def min_of(a, b):
    return fmin(a, b) if a.dtype.kind == "f" else np.minimum(a, b)


def max_of(a, b):
    return fmax(a, b) if a.dtype.kind == "f" else np.maximum(a, b)


def _scalar_or_vec(name, args):
    t = type_of(args[0])
    if not (is_number(t) or is_vec(t)) or any(type_of(a) is not t for a in args[1:]):
        raise no_match(name, args)
    return t


@builtin
@ignore_fp
def abs_(x):
    """|x| of a scalar or, componentwise, a vector (integers wrap: abs(INT_MIN) is INT_MIN)."""
    t = _scalar_or_vec("abs", (x,))
    return result(t, abs_of(value_of(x, t)))


@builtin
@ignore_fp
def sign(x):
    """-1 where x < 0, else 1 (also for 0 and NaN); componentwise on vectors."""
    t = _scalar_or_vec("sign", (x,))
    return result(t, sign_of(value_of(x, t)))


def _reduce(name, x, pick):
    t = type_of(x)
    v = value_of(x, t)
    r = v[0]
    for c in v[1:]:
        r = pick(r, c)
    return result(dtype(t), r)


@builtin
@ignore_fp
def min_(a, b=None):
    """The smaller of two scalars or vectors (componentwise; a NaN operand is skipped), or
    the smallest component of one vector."""
    if b is None:
        if not is_vec(type_of(a)):
            raise no_match("min", (a,))
        return _reduce("min", a, min_of)
    t = _scalar_or_vec("min", (a, b))
    return result(t, min_of(value_of(a, t), value_of(b, t)))


@builtin
@ignore_fp
def max_(a, b=None):
    """The larger of two scalars or vectors (componentwise; a NaN operand is skipped), or
    the largest component of one vector."""
    if b is None:
        if not is_vec(type_of(a)):
            raise no_match("max", (a,))
        return _reduce("max", a, max_of)
    t = _scalar_or_vec("max", (a, b))
    return result(t, max_of(value_of(a, t), value_of(b, t)))


@builtin
@ignore_fp
def clamp(x, low, high):
    """min(max(low, x), high) of three scalars of one type."""
    t = type_of(x)
    if not is_number(t) or type_of(low) is not t or type_of(high) is not t:
        raise no_match("clamp", (x, low, high))
    return result(t, min_of(max_of(value_of(low, t), value_of(x, t)), value_of(high, t)))


@builtin
@ignore_fp
def step(x):
    """1 where x < 0, else 0 (Warp's step is the indicator of x < 0)."""
    t = type_of(x)
    if not is_number(t):
        raise no_match("step", (x,))
    a = value_of(x, t)
    return result(t, np.where(a < 0, const(1, a), const(0, a)))


@builtin
@ignore_fp
def nonzero(x):
    """0 where x == 0, else 1."""
    t = type_of(x)
    if not is_number(t):
        raise no_match("nonzero", (x,))
    a = value_of(x, t)
    return result(t, np.where(a == 0, const(0, a), const(1, a)))


@builtin
@ignore_fp
def smoothstep(a, b, x):
    """The smooth Hermite step from a to b at x: u*u*(3 - 2u), u = clamp((x - a)/(b - a), 0, 1)."""
    t = type_of(a)
    if not is_float(t) or type_of(b) is not t or type_of(x) is not t:
        raise no_match("smoothstep", (a, b, x))
    e0, e1, v = value_of(a, t), value_of(b, t), value_of(x, t)
    u = fmin(fmax((v - e0) / (e1 - e0), const(0, v)), const(1, v))
    return result(t, (u * u) * (const(3, v) - const(2, v) * u))


@builtin
@ignore_fp
def floordiv(a, b):
    """floor(a / b) of two scalars: floats floor the rounded quotient; integers round
    toward minus infinity (division by zero gives 0, as in the kernels)."""
    t = type_of(a)
    if not is_number(t) or type_of(b) is not t:
        raise no_match("floordiv", (a, b))
    x, y = value_of(a, t), value_of(b, t)
    if is_float(t):
        return result(t, np.floor(x / y))
    return result(t, int_elementwise(int_floordiv, t, x, y))


def int_div(a: int, b: int) -> int:
    """C's a / b (toward zero); 0 for b == 0 (the kernels' defined value)."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_mod(a: int, b: int) -> int:
    """C's a % b (the sign of a); 0 for b == 0."""
    if b == 0:
        return 0
    return a - int_div(a, b) * b


def int_floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b


@builtin
def bit_count(x):
    """The number of set bits of an integer's two's-complement representation (an int32)."""
    t = type_of(x)
    if not is_int(t):
        raise no_match("bit_count", (x,))
    v = int(value_of(x, t)) & ((1 << (8 * t._size_)) - 1)
    return result(wt.int32, bin(v).count("1"))


@builtin
def unot(a):
    """not a, for a bool or integer: True where a == 0."""
    t = type_of(a)
    if family(t) not in ("int", "bool"):
        raise no_match("unot", (a,))
    return bool(value_of(a, t) == 0)


def _any_float_value(name, x):
    t = type_of(x)
    if not (is_float(t) or (family(t) in ("vector", "matrix", "quat") and is_float(dtype(t)))):
        raise no_match(name, (x,))
    return value_of(x, t)


@builtin
def isnan(a):
    """Whether a float scalar, or any component of a vector, matrix or quaternion, is NaN."""
    return bool(np.any(np.isnan(_any_float_value("isnan", a))))


@builtin
def isinf(a):
    """Whether a float scalar, or any component of a vector, matrix or quaternion, is infinite."""
    return bool(np.any(np.isinf(_any_float_value("isinf", a))))


@builtin
def isfinite(a):
    """Whether a float scalar, or every component of a vector, matrix or quaternion, is finite."""
    return bool(np.all(np.isfinite(_any_float_value("isfinite", a))))


__all__ = [*_UNARY, *_BINARY, "abs_", "sign", "min_", "max_", "clamp", "step", "nonzero",
           "smoothstep", "floordiv", "bit_count", "unot", "isnan", "isinf", "isfinite"]
