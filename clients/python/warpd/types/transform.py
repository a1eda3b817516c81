"""Transformation types: ``wp.transform`` (``transformf``), ``wp.transformd``, ``wp.transformh``,
``wp.types.transformation(dtype)``.

A rigid transform: translation p (a 3-vector) then rotation q (a
quaternion), 7 components of one float dtype. Python scope, as in Warp:
``transform()`` is the identity, ``transform(p, q)`` or ``transform(p=..., q=...)``,
``transform(p)`` (the identity rotation), ``transform(value)`` (every component),
``transform(*7 components)``; ``t.p`` and ``t.q`` read and write the parts,
``t[i]`` a component; ``t * t`` composes (as ``wp.transform_multiply``),
``+``/``-`` with the same type and ``*``/``/`` by a scalar act per component.
"""

from __future__ import annotations

import numpy as np

from ..v1 import ir_pb2
from .family import Value, float_family_type, is_number, no_overload
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
        """Warp 1.19's forms: () the identity; (value) every component, (transform) a
        copy, (sequence) p with the identity q; (p, q); p=, q= keywords (bound as
        Python binds ``(p=(0, 0, 0), q=(0, 0, 0, 1))``, with its messages); else the
        7 components."""
        name = f"{cls.__name__}()"
        identity_q = (0, 0, 0, 1)
        if kwargs:
            unknown = sorted(set(kwargs) - {"p", "q"})
            if unknown:  # named before anything else, as Warp's signature check does
                raise TypeError(f"got an unexpected keyword argument '{unknown[0]}'")
            given = dict(zip(("p", "q"), args))
            for k in ("p", "q"):
                if k in kwargs and (k in given or (k == "q" and len(args) > 2)):
                    raise TypeError(f"multiple values for argument '{k}'")
            if len(args) > 2:
                raise TypeError("too many positional arguments")
            given.update(kwargs)
            return cls._from_pq(given.get("p", (0, 0, 0)), given.get("q", identity_q), name)
        if len(args) == 0:
            return cls._components([0, 0, 0, 0, 0, 0, 1])
        if len(args) == 1:
            value = args[0]
            if isinstance(value, Transform) or is_number(value):
                return cls._parse_common(args)  # a copy, or every component
            if not hasattr(value, "__len__"):
                raise TypeError("Invalid argument in transformation constructor: expected a scalar value, "
                                f"got {type(value).__name__}")
            return cls._from_pq(value, identity_q, name)
        if len(args) == 2:
            return cls._from_pq(args[0], args[1], name)
        return cls._parse_common(args)

    @classmethod
    def _from_pq(cls, p, q, name):
        for part, value in (("p", p), ("q", q)):
            if not hasattr(value, "__len__"):
                raise TypeError(f"Invalid argument '{part}' in transformation constructor: expected a sequence, "
                                f"got {type(value).__name__}")
        st = cls._wp_scalar_type_
        p = vector(3, st)._wp_storage_(p, wrap=True, what=f"{name} p")
        q = quaternion(st)._wp_storage_(q, wrap=True, what=f"{name} q")
        return np.concatenate([p, q])

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
                raise no_overload("mul", self, other)
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
