"""Warp builtins that also work in Python scope, on wp.vecN values.

Inside kernels these names are the daemon's builtins; here they are small
Python implementations so that host code can use them too.
"""

from __future__ import annotations

import math

from . import types as wt


def _vec(v, name):
    if not isinstance(v, wt._Vector):
        raise TypeError(f"wp.{name} expects vectors in Python scope, got {type(v).__name__}")
    return v


def dot(a, b):
    _vec(a, "dot")
    _vec(b, "dot")
    return sum(x * y for x, y in zip(a, b))


def cross(a, b):
    _vec(a, "cross")
    _vec(b, "cross")
    if len(a) != 3 or len(b) != 3:
        raise ValueError("wp.cross needs 3-component vectors")
    return type(a)(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def length_sq(a):
    return dot(a, a)


def length(a):
    return math.sqrt(length_sq(a))


def normalize(a):
    n = length(a)
    return a / n if n > 0.0 else type(a)()


def tid():
    """The thread index; only meaningful inside a kernel."""
    raise RuntimeError("wp.tid() can only be called inside a kernel")
