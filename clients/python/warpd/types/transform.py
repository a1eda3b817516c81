"""Transformation types: ``wp.transform`` (``transformf``), ``wp.transformd``, ``wp.transformh``,
``wp.types.transformation(dtype)``.

A rigid transform: translation p (a 3-vector) then rotation q (a
quaternion), 7 components of one float dtype. Python scope, as in Warp:
``transform()`` is the identity, ``transform(p, q)`` or ``transform(p=..., q=...)``,
``transform(*7 components)``; ``t.p`` and ``t.q`` read and write the parts,
``t[i]`` a component; ``t * t`` composes (as ``wp.transform_multiply``),
``+``/``-`` with the same type and ``*``/``/`` by a scalar act per component.
"""

from __future__ import annotations

import numpy as np

from ..v1 import ir_pb2
from .family import Value, float_family_type
from .generic import GenericValue, is_generic
from .quat import quat_multiply, quat_rotate, quaternion
from .scalar import float32
from .vector import vector


class Transform(Value):
    """Base of the transformation types; make one with ``transformation(dtype)``."""

    _wp_family_ = "transform"
    _wp_generic_type_str_ = "transform_t"  # Warp's name of the family's C++ template
    _length_ = 7
    _shape_ = (7,)
    __slots__ = ()

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        name = f"{cls.__name__}()"
        if kwargs:
            unknown = set(kwargs) - {"p", "q"}
            if unknown:
                raise TypeError(f"{name} got an unexpected keyword argument '{sorted(unknown)[0]}'")
            if len(args) + len(kwargs) > 2 or ("p" in kwargs and args):
                raise TypeError(f"{name} takes (p, q)")
            p = kwargs.get("p", args[0] if args else (0, 0, 0))
            q = kwargs.get("q", (0, 0, 0, 1))
            args = (p, q)
        if len(args) == 0:
            return cls._components([0, 0, 0, 0, 0, 0, 1])
        if len(args) == 2:
            st = cls._wp_scalar_type_
            p = vector(3, st)._wp_storage_(args[0], wrap=True, what=f"{name} p")
            q = quaternion(st)._wp_storage_(args[1], wrap=True, what=f"{name} q")
            return np.concatenate([p, q])
        return cls._parse_common(
            args, f"{name} takes 0 arguments, (p, q), 1 value or 7 components, got {len(args)} "
                  f"arguments")

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(transform=ir_pb2.TransformType(dtype=cls._wp_scalar_type_._proto_))

    @property
    def p(self):
        return vector(3, self._wp_scalar_type_)._wp_wrap_(self._v[:3])

    @p.setter
    def p(self, value):
        self._v[:3] = vector(3, self._wp_scalar_type_)._wp_storage_(value, wrap=True,
                                                                    what=f"{type(self).__name__}.p")

    @property
    def q(self):
        return quaternion(self._wp_scalar_type_)._wp_wrap_(self._v[3:])

    @q.setter
    def q(self, value):
        self._v[3:] = quaternion(self._wp_scalar_type_)._wp_storage_(value, wrap=True,
                                                                     what=f"{type(self).__name__}.q")

    def _wp_mul_(self, other):
        if type(other) is not type(self):
            if other._wp_family_ == "transform":
                raise TypeError(f"cannot multiply {self._wp_type_name_} by {other._wp_type_name_} "
                                f"(Warp does not convert implicitly)")
            return NotImplemented
        a, b = self._v, other._v
        p = quat_rotate(a[3:], b[:3]).astype(np.float64) + a[:3]
        return self._new(np.concatenate([p.astype(a.dtype), quat_multiply(a[3:], b[3:])]))


_CACHE: dict = {}


def transformation(dtype=float32):
    """The transformation type of a float `dtype`."""
    if is_generic(dtype):
        return GenericValue("transform", (7,), dtype, f"transformation(dtype={dtype!r})")
    return float_family_type(Transform, "transform", 7, dtype, _CACHE, "transformation")
