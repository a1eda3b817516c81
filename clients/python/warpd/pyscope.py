"""Warp builtins that also work in Python scope, on warpd's value types.

Inside kernels these names are the daemon's builtins (the front end calls
them by name); here they are small Python implementations so that host code
can use them too, with Warp's semantics (no implicit dtype conversion).
"""

from __future__ import annotations

import math

import numpy as np

from . import types as wt
from .types.quat import quat_rotate as _rotate


def _builtin(fn):
    """Marks fn as the Python-scope version of the kernel builtin of its name."""
    fn._wp_builtin_ = fn.__name__
    return fn


def _value(v, name, family=None):
    if not isinstance(v, wt.Value) or (family is not None and v._wp_family_ != family):
        want = {"vector": "vectors", "matrix": "a matrix", "quat": "a quaternion",
                "transform": "a transformation"}.get(family, "vectors")
        raise TypeError(f"wp.{name} expects {want} in Python scope, got {type(v).__name__}")
    return v


def _same(a, b, name):
    if type(a) is not type(b):
        raise TypeError(f"wp.{name}: {a._wp_type_name_} and {b._wp_type_name_} differ (Warp does "
                        f"not convert implicitly)")


@_builtin
def dot(a, b):
    _value(a, "dot")
    _value(b, "dot")
    _same(a, b, "dot")
    return float(np.dot(a._v.astype(np.float64), b._v.astype(np.float64))) \
        if a._wp_scalar_type_._kind_ == "float" else int(np.dot(a._v, b._v))


@_builtin
def cross(a, b):
    _value(a, "cross", "vector")
    _value(b, "cross", "vector")
    _same(a, b, "cross")
    if len(a) != 3:
        raise ValueError("wp.cross needs 3-component vectors")
    return type(a)._wp_wrap_(np.cross(a._v, b._v))


@_builtin
def length_sq(a):
    return dot(a, a)


@_builtin
def length(a):
    return math.sqrt(length_sq(a))


@_builtin
def normalize(a):
    n = length(a)
    return a / n if n > 0.0 else type(a)._wp_wrap_(type(a)._zeros())


@_builtin
def transpose(m):
    _value(m, "transpose", "matrix")
    r, c = m._shape_
    return wt.matrix((c, r), m._wp_scalar_type_)._wp_wrap_(m._v.T)


@_builtin
def identity(n, dtype=wt.float32):
    """The n x n identity matrix of `dtype`."""
    t = wt.matrix((n, n), dtype)
    return t._wp_wrap_(np.eye(n))


@_builtin
def quat_identity(dtype=wt.float32):
    return wt.quaternion(dtype)(0, 0, 0, 1)


@_builtin
def quat_from_axis_angle(axis, angle):
    """The rotation by `angle` radians about `axis` (not normalized, as in Warp)."""
    _value(axis, "quat_from_axis_angle", "vector")
    st = axis._wp_scalar_type_
    half = float(angle) * 0.5
    v = axis._v.astype(np.float64) * math.sin(half)
    return wt.quaternion(st)(*v.tolist(), math.cos(half))


@_builtin
def quat_rotate(q, v):
    _value(q, "quat_rotate", "quat")
    _value(v, "quat_rotate", "vector")
    if v._wp_scalar_type_ is not q._wp_scalar_type_ or len(v) != 3:
        raise TypeError(f"wp.quat_rotate: {q._wp_type_name_} rotates a 3-vector of its dtype, got "
                        f"{v._wp_type_name_}")
    return type(v)._wp_wrap_(_rotate(q._v, v._v))


@_builtin
def transform_identity(dtype=wt.float32):
    return wt.transformation(dtype)()


@_builtin
def transform_point(t, p):
    _value(t, "transform_point", "transform")
    q = t.q
    return quat_rotate(q, p) + t.p


@_builtin
def transform_vector(t, v):
    _value(t, "transform_vector", "transform")
    return quat_rotate(t.q, v)


@_builtin
def tid():
    """The thread index; only meaningful inside a kernel."""
    raise RuntimeError("wp.tid() can only be called inside a kernel")
