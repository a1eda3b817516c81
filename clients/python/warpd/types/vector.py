"""Vector types: ``wp.vec3``, ``wp.vec2h``, ``wp.spatial_vector``,
``wp.types.vector(5, wp.float64)``.

A vector type is a class of fixed length (1 to 64) and scalar dtype (not
bool); ``vector(length, dtype)`` returns the same class for the same
arguments, so ``wp.types.vector(3, wp.float32) is wp.vec3``. A spatial
vector is a vector of length 6 (as in Warp and the daemon).

Python scope, as in Warp: ``vec3()`` is zero, ``vec3(1.0)`` fills every
component, ``vec3(1, 2, 3)`` or ``vec3([1, 2, 3])`` sets them; ``v.x``..``v.w``,
``v[i]`` and slices; ``+``/``-`` with the same type or a scalar, ``*``/``/``/``%``
by a scalar, and products with matrices (see matrix.py).
"""

from __future__ import annotations

import operator

import numpy as np

from ..v1 import ir_pb2
from .family import Value
from .generic import GenericValue, is_any_dim, is_generic
from .scalar import SUFFIX, bool_, float16, float32, float64, scalar_type

MAX_LENGTH = 1024  # common/types/type.h kMaxVectorLength


class Vector(Value):
    """Base of the vector types; make one with ``vector(length, dtype)``."""

    _wp_family_ = "vector"
    _wp_generic_type_str_ = "vec_t"  # Warp's name of the family's C++ template
    _wp_scalar_add_ = True
    __slots__ = ()

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        # A spatial vector from its angular and linear parts (w, v), as kernels accept.
        if cls._length_ == 6 and len(args) == 2 and all(
                isinstance(a, Value) and a._wp_family_ == "vector" and a._length_ == 3 for a in args):
            return cls._components(list(args[0]._v) + list(args[1]._v))
        return cls._parse_common(args)

    def __setattr__(self, name, value):
        # Other attributes may be set (v.foo = 123), as in Warp; but a name spelled only
        # with component letters (v.xy, v.w of a vec3) asks for components, and storing
        # it would silently shadow nothing: AttributeError, as Warp raises.
        if name and not name.strip("xyzw") and not hasattr(type(self), name):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        object.__setattr__(self, name, value)

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(vector=ir_pb2.VectorType(length=cls._length_,
                                                       dtype=cls._wp_scalar_type_._proto_))

    @classmethod
    def _wp_fill_ctor_(cls, call, span):
        call.kind = ir_pb2.CALLEE_BUILTIN
        if cls._wp_builtin_:
            call.callee = cls._wp_builtin_
            return
        call.callee = "vector"
        k = call.keywords.add(name="length")
        k.value.span.CopyFrom(span)
        k.value.constant.int_value = cls._length_
        k = call.keywords.add(name="dtype")
        k.value.span.CopyFrom(span)
        k.value.type_value.CopyFrom(cls._wp_scalar_type_._wp_typeref_())


def _component(i, name):
    def check(self):
        if i >= self._length_:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def get(self):
        check(self)
        return self[i]

    def set_(self, value):
        check(self)
        self[i] = value

    return property(get, set_)


for _i, _n in enumerate("xyzw"):
    setattr(Vector, _n, _component(_i, _n))

_CACHE: dict = {}


def vector(length, dtype=float32):
    """The vector type of `length` (1 to 64) components of scalar type `dtype`; with
    `length` or `dtype` typing.Any (or wp.Float...), a generic hint (generic.py)."""
    if is_any_dim(length) or is_generic(dtype):
        return GenericValue("vector", (length,), dtype, f"vector(length={length!r}, dtype={dtype!r})")
    st = scalar_type(dtype)
    if st is None:
        raise TypeError(f"vector dtype must be a scalar type such as wp.float32, got {dtype!r}")
    length = operator.index(length)
    # Length 0 exists as in Warp (what an empty slice such as t[3:3] gives).
    if not 0 <= length <= MAX_LENGTH:
        raise ValueError(f"vector length must be in [0, {MAX_LENGTH}], got {length}")
    cls = _CACHE.get((length, st))
    if cls is None:
        cls = _make(length, st)
        _CACHE[(length, st)] = cls
    return cls


def _make(length, st):
    suffix = SUFFIX[st]
    builtin_suffix = "" if st is float32 else suffix
    if 2 <= length <= 4 and st is bool_:  # Warp has no vec3bool builtin: vector(dtype=bool)
        name, builtin, type_name = f"vec{length}{suffix}", "", f"vector(length={length}, dtype=bool)"
    elif 2 <= length <= 4:
        name, builtin = f"vec{length}{suffix}", f"vec{length}{builtin_suffix}"
        type_name = name
    else:
        type_name = f"vector(length={length}, dtype={st._wp_name_})"
        if length == 6 and st in (float16, float32, float64):
            name, builtin = f"spatial_vector{suffix}", f"spatial_vector{builtin_suffix}"
        else:
            name, builtin = f"vec{length}{suffix}", ""
    size = length * st._size_
    return type(name, (Vector,), {
        "__slots__": (), "__module__": "warpd.types", "__qualname__": name,
        "_length_": length, "_shape_": (length,), "_wp_scalar_type_": st,
        "_wp_np_dtype_": np.dtype((st._wp_np_dtype_, (length,))),
        "_wp_size_": size, "_wp_align_": st._size_,
        "_wp_type_name_": type_name, "_wp_builtin_": builtin,
    })


def is_vector_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, Vector) and t is not Vector
