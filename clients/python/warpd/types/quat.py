"""Quaternion types: ``wp.quat`` (``quatf``), ``wp.quatd``, ``wp.quath``,
``wp.types.quaternion(dtype)``.

Components x, y, z, w (w is the real part), of a float dtype. Python scope,
as in Warp: ``quat()`` is zero (use ``wp.quat_identity()`` for the identity),
``quat(x, y, z, w)``, ``quat(s)``, ``quat([x, y, z, w])``; also
``quat(v, w)`` with a 3-vector v, as kernels accept. ``q * q`` is the
quaternion product, ``+``/``-`` with the same type, ``*``/``/`` by a scalar.
"""

from __future__ import annotations

import numpy as np

from ..v1 import ir_pb2
from .family import Value, float_family_type, no_overload
from .generic import GenericValue, is_generic
from .scalar import float32, is_number


class Quat(Value):
    """Base of the quaternion types; make one with ``quaternion(dtype)``."""

    _wp_family_ = "quat"
    _wp_generic_type_str_ = "quat_t"  # Warp's name of the family's C++ template
    _length_ = 4
    _shape_ = (4,)
    __slots__ = ()

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        if len(args) == 2 and not is_number(args[0]) and is_number(args[1]):
            from .vector import vector

            v = vector(3, cls._wp_scalar_type_)._wp_storage_(args[0], wrap=True,
                                                             what=f"{cls.__name__}() ijk")
            return cls._components(list(v) + [args[1]], what=f"{cls.__name__}()")
        return cls._parse_common(
            args, f"{cls.__name__}() takes 0 arguments, 1 value, (ijk, real) or 4 components, "
                  f"got {len(args)} arguments")

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(quat=ir_pb2.QuatType(dtype=cls._wp_scalar_type_._proto_))

    def _wp_mul_(self, other):
        if type(other) is not type(self):
            if other._wp_family_ == "quat":
                raise no_overload("mul", self, other)
            return NotImplemented
        return self._new(quat_multiply(self._v, other._v))


def quat_multiply(a, b):
    """The quaternion product a * b of two (x, y, z, w) arrays, in their dtype."""
    x1, y1, z1, w1 = a.astype(np.float64)
    x2, y2, z2, w2 = b.astype(np.float64)
    r = np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                  w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                  w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                  w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])
    return r.astype(a.dtype)


def quat_rotate(q, v):
    """v (3 components) rotated by the quaternion q (x, y, z, w), Warp's formula."""
    q64 = q.astype(np.float64)
    v64 = np.asarray(v, dtype=np.float64)
    qv, w = q64[:3], q64[3]
    r = v64 * (2.0 * w * w - 1.0) + np.cross(qv, v64) * w * 2.0 + qv * np.dot(qv, v64) * 2.0
    return r.astype(q.dtype)


def _component(i, name):
    def get(self):
        return self[i]

    def set_(self, value):
        self[i] = value

    return property(get, set_)


for _i, _n in enumerate("xyzw"):
    setattr(Quat, _n, _component(_i, _n))

_CACHE: dict = {}


def quaternion(dtype=float32):
    """The quaternion type of a float `dtype`."""
    if is_generic(dtype):
        return GenericValue("quat", (4,), dtype, f"quaternion(dtype={dtype!r})")
    return float_family_type(Quat, "quat", 4, dtype, _CACHE, "quaternion")
