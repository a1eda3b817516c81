"""Warp builtins in Python scope: every ``wp.<builtin>`` that Warp 1.19 runs outside
kernels, on warpd's value types, plus Warp's error for those it runs only inside.

    import warpd as wp
    wp.sin(1.0)                                  # 0.8414709568023682 (float32 math)
    wp.sin(wp.float64(1.0))                      # wp.float64(0.8414709848078965)
    wp.mul(wp.mat22(1, 2, 3, 4), wp.vec2(1, 1))  # vec2f([3.0, 7.0])
    wp.atomic_add(a, 0, 1.0)                     # RuntimeError: ... function is undefined

Inside kernels these names are the daemon's builtins: the front end calls them
by their ``_wp_builtin_`` name (frontend.py). Here they are Python
implementations with the kernels' semantics and Warp's Python-scope rules
(exact type matching, Python float/int as float32/int32, Warp's return types):
pyscope_core.py has the rules, and the other pyscope_*.py modules one family
of builtins each:

  pyscope_scalar.py   scalar math (sin, abs, min, clamp, floordiv, isnan, ...)
  pyscope_arith.py    operators (add, mul, div, mod, neg, bit_and, lshift, lerp, ...)
  pyscope_linalg.py   vectors and matrices (dot, cross, length, inverse, trace, ...)
  pyscope_decomp.py   svd2, svd3, qr3, eig3
  pyscope_quat.py     quaternions, transformations, spatial vectors
  pyscope_random.py   random streams, samplers, Perlin noise

``BUILTINS`` maps each name to its function; ``__all__`` lists them.
"""

from __future__ import annotations

import numpy as np

from . import pyscope_arith, pyscope_decomp, pyscope_linalg, pyscope_quat, pyscope_random, pyscope_scalar
from .pyscope_core import builtin, dtype, family, kernel_only, no_match, type_of, value_of

# Builtins that Warp runs only inside kernels (calling them in Python scope raises
# Warp's "function is undefined" RuntimeError); inside kernels they are the builtins.
KERNEL_ONLY = ("address", "array_store", "atomic_add", "atomic_and", "atomic_cas", "atomic_exch",
               "atomic_max", "atomic_min", "atomic_or", "atomic_sub", "atomic_xor", "dense_chol",
               "dense_chol_batched", "dense_gemm", "dense_gemm_batched", "dense_solve",
               "dense_solve_batched", "dense_subs", "load", "lower_bound", "printf", "sample_cdf",
               "select", "store", "view", "where")

# Warp builtins the daemon's table does not have (yet): their Python-scope stand-ins carry
# no kernel name, so a kernel that calls one fails in the daemon as an unknown function
# (tests/e2e/test_client_names.py holds every kernel name the client uses to the table).
NOT_IN_KERNELS = ("address", "array_store", "dense_chol", "dense_chol_batched", "dense_gemm",
                  "dense_gemm_batched", "dense_solve", "dense_solve_batched", "dense_subs", "extract",
                  "index", "indexref", "load", "store", "view")


@builtin
def tid():
    """The thread index; only meaningful inside a kernel."""
    raise RuntimeError("wp.tid() can only be called inside a kernel")


@builtin
def block_dim():
    """The number of threads in a block: Warp's Python scope answers its default, 256."""
    return 256


def _no_python_overload(name):
    """Builtins Warp exports but whose every Python-scope call finds no overload."""
    def call(*args, **kwargs):
        raise no_match(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"wp.{name}: a kernel builtin; in Python scope no overload takes any arguments (as in Warp)."
    call._wp_builtin_ = name
    return call


NO_PYTHON_OVERLOAD = ("extract", "index", "indexref")


def _format_scalar(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return "%g" % v
    return str(v)


def format_value(x) -> str:
    """x as a kernel's print() shows it (runtime/exec/kernel_output.cc)."""
    t = type_of(x)
    f = family(t)
    if f in ("", "int", "float", "bool"):
        v = value_of(x, t)[()].item() if t is not None else x
        return _format_scalar(v)
    v = value_of(x, t)
    comps = [_format_scalar(c) for c in v.reshape(-1).tolist()]
    if f == "vector":
        return "".join(c + " " for c in comps)
    if f == "matrix":
        cols = t._shape_[1]
        return "\n".join("".join(c + " " for c in comps[r * cols:(r + 1) * cols]) for r in range(t._shape_[0]))
    if f == "quat":
        return " ".join(comps)
    return f"({' '.join(comps[:3])}) ({' '.join(comps[3:])})"


@builtin
def expect_eq(a, b):
    """Prints Warp's error message when a != b (two values of one type); returns None."""
    t = type_of(a)
    if t is None or type_of(b) is not t:
        raise no_match("expect_eq", (a, b))
    if not bool((value_of(a, t) == value_of(b, t)).all()):
        print(f"Error, expect_eq() failed:\n\t Expected: {format_value(b)}\n\t Actual: {format_value(a)}")


@builtin
def expect_near(a, b, tolerance):
    """Prints Warp's error message when a and b (float values of one type) differ by more
    than `tolerance` (a scalar of their dtype) in some component; returns None."""
    t = type_of(a)
    if t is None or type_of(b) is not t or family(t) not in ("float", "vector", "matrix", "quat") or \
            family(dtype(t)) != "float" or type_of(tolerance) is not dtype(t):
        raise no_match("expect_near", (a, b, tolerance))
    diff = np.abs(value_of(a, t).astype(np.float64) - value_of(b, t).astype(np.float64)).max()
    tol = value_of(tolerance, dtype(t))[()]
    if diff > tol:
        label = "Absolute difference" if family(t) == "float" else "Max absolute difference"
        print(f"Error, expect_near() failed with tolerance {format_value(tolerance)}\n"
              f"    Expected: {format_value(b)}\n    Actual: {format_value(a)}\n"
              f"    {label}: {_format_scalar(float(diff))}")


def _collect():
    found = {}
    for mod in (pyscope_scalar, pyscope_arith, pyscope_linalg, pyscope_decomp, pyscope_quat,
                pyscope_random):
        for attr in mod.__all__:
            fn = getattr(mod, attr)
            found[fn._wp_builtin_] = fn
    for name in ("tid", "block_dim", "expect_eq", "expect_near"):
        found[name] = globals()[name]
    for name in KERNEL_ONLY:
        found[name] = kernel_only(name)
    for name in NO_PYTHON_OVERLOAD:
        found[name] = _no_python_overload(name)
    for name in NOT_IN_KERNELS:
        found[name]._wp_builtin_ = ""
    return found


BUILTINS = _collect()
# From here on abs, min, max, round and pow in this module are Warp's.
globals().update(BUILTINS)
__all__ = sorted(BUILTINS)
