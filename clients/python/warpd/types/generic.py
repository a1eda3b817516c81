"""Generic type hints: what a parameter of a generic function or kernel may take.

    typing.Any                       any value
    wp.Scalar, wp.Float, wp.Int      a scalar of that family
    wp.types.vector(Any, float)      a float32 vector of any length
    wp.types.matrix((Any, Any), Any) any matrix
    wp.types.quaternion(Any)         any quaternion (also transformation(Any))
    wp.array(dtype=Any)              an array of any dtype (of the given ndim)

A generic @wp.func is instantiated by the daemon per argument types; a generic
kernel by the client at launch (kernel.py), from the arguments' types. A hint
is never a value type: it only answers ``matches(concrete)``.
"""

from __future__ import annotations

import typing

from .scalar import scalar_type


class _GenericScalar:
    """Base of wp.Scalar / wp.Float / wp.Int (classes, used only as annotations)."""

    _wp_generic_ = True
    _wp_kinds_: tuple = ()

    def __init__(self, *a, **k):
        raise TypeError(f"{type(self).__name__} is a generic type hint, not a value type")

    @classmethod
    def _wp_matches_(cls, t) -> bool:
        st = scalar_type(t)
        return st is not None and st._kind_ in cls._wp_kinds_


class Scalar(_GenericScalar):
    _wp_kinds_ = ("int", "float")


class Float(_GenericScalar):
    _wp_kinds_ = ("float",)


class Int(_GenericScalar):
    _wp_kinds_ = ("int",)


class GenericValue:
    """A vector, matrix, quaternion or transformation hint with some parts Any."""

    _wp_generic_ = True

    def __init__(self, family: str, shape, dtype, name: str):
        self._wp_family_ = family
        self.shape = shape  # tuple with ints or typing.Any
        self.dtype = dtype  # a scalar type, a generic scalar hint or typing.Any
        self.__name__ = name

    def _wp_matches_(self, t) -> bool:
        if not isinstance(t, type) or getattr(t, "_wp_family_", None) != self._wp_family_:
            return False
        if any(want is not typing.Any and want != got for want, got in zip(self.shape, t._shape_)):
            return False
        return dtype_matches(self.dtype, t._wp_scalar_type_)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.__name__} is a generic type hint; it cannot construct values")

    def __repr__(self):
        return self.__name__


def is_generic(t) -> bool:
    """Whether an annotation is generic: typing.Any, a hint above, or an array of one."""
    if t is typing.Any:
        return True
    if getattr(t, "_wp_generic_", False) is True:
        return True
    dtype = getattr(t, "_wp_annotation_dtype_", None)
    if dtype is not None and getattr(t, "_wp_array_", False):
        return is_generic(dtype)
    return False


def dtype_matches(hint, t) -> bool:
    """Whether the concrete dtype t fits a (possibly generic) dtype hint."""
    if hint is typing.Any:
        return True
    m = getattr(hint, "_wp_matches_", None)
    if m is not None and getattr(hint, "_wp_generic_", False) is True:
        return m(t)
    a, b = scalar_type(hint), scalar_type(t)
    if a is not None or b is not None:
        return a is b
    return hint is t


def matches(hint, value_type) -> bool:
    """Whether a parameter annotated `hint` takes a value of `value_type` (a dtype, or an
    array annotation describing an array argument)."""
    if hint is typing.Any:
        return True
    if getattr(hint, "_wp_array_", False):
        return (getattr(value_type, "_wp_array_", False) and hint.ndim == value_type.ndim
                and dtype_matches(hint.dtype, value_type.dtype))
    return dtype_matches(hint, value_type)


def is_any_dim(x) -> bool:
    return x is typing.Any or getattr(x, "_wp_generic_", False) is True
