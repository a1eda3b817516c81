"""Questions about types that Warp programs (and Warp's own tests) ask in Python
scope: the scalar tables (``int_types``, ``float_types``, ``scalar_types``...),
NumPy dtype conversion (``dtype_from_numpy``, ``dtype_to_numpy``), family
predicates (``type_is_vector``, ``is_matrix``...), ``types_equal`` and
``type_repr``, with Warp 1.19's meaning.

The float tables hold float16, bfloat16, float32 and float64, in Warp's
order; bfloat16 has no NumPy dtype (``dtype_to_numpy`` gives uint16, its bits).
"""

from __future__ import annotations

import builtins
import typing

import numpy as np

from .matrix import Matrix, matrix
from .quat import Quat, quaternion
from .scalar import (SUFFIX, bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64,
                     scalar_type, uint8, uint16, uint32, uint64)
from .struct import is_struct_type
from .transform import Transform, transformation
from .vector import Vector, vector

int_types = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
float_types = (float16, bfloat16, float32, float64)
scalar_types = int_types + float_types
scalar_and_bool_types = (*scalar_types, bool_)
# Integer types atomics do not take, as in Warp 1.19.
non_atomic_types = (int8, uint8, int16, uint16)

# Warp 1.19's table of named composite types, in its order: vectors of the integer and
# float16/32/64 scalars (vec2b ... vec4d; no bool or bfloat16 vectors), then the float
# square matrices, quaternions, transforms, spatial vectors and spatial matrices.
_SIZED = (int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64)
_FLOATS = (float16, float32, float64)
vector_types = (tuple(vector(n, st) for n in (2, 3, 4) for st in _SIZED)
                + tuple(matrix((n, n), st) for n in (2, 3, 4) for st in _FLOATS)
                + tuple(quaternion(st) for st in _FLOATS)
                + tuple(transformation(st) for st in _FLOATS)
                + tuple(vector(6, st) for st in _FLOATS)
                + tuple(matrix((6, 6), st) for st in _FLOATS))
# warpd's own: every named square matrix type (mat22b ... mat44d; none of bfloat16).
matrix_types = tuple(matrix((n, n), st) for n in (2, 3, 4) for st in SUFFIX if st is not bfloat16)

# NumPy has no bfloat16: its arrays hold the bits (uint16), and uint16 data is uint16.
_NUMPY_TO_WARP = {np.dtype(st._np_dtype_): st for st in scalar_and_bool_types if st is not bfloat16}
# Keys as Warp has them: NumPy scalar classes and dtype objects both.
np_dtype_to_warp_type = {**{d.type: st for d, st in _NUMPY_TO_WARP.items()}, **_NUMPY_TO_WARP}
warp_type_to_np_dtype = {st: np.dtype(st._wp_np_dtype_).type for st in scalar_and_bool_types}


def _get_ml_dtypes_bfloat16():
    """The ml_dtypes bfloat16 NumPy dtype that bfloat16 arrays convert to, or None: warpd
    converts to none (numpy() gives the bits, uint16, as Warp does without ml_dtypes)."""
    return None


def dtype_from_numpy(numpy_dtype):
    """The Warp scalar type of a NumPy dtype (np.float32, np.dtype("int16"), ...)."""
    try:
        st = _NUMPY_TO_WARP.get(np.dtype(numpy_dtype))
    except TypeError:
        st = None
    if st is None:
        raise TypeError(f"Cannot convert {numpy_dtype} to a Warp type")
    return st


def dtype_to_numpy(warp_dtype):
    """The NumPy scalar type of a Warp scalar type (float is float32, int is int32)."""
    st = scalar_type(warp_dtype)
    if st is None:
        raise TypeError(f"Cannot convert {warp_dtype} to a NumPy type")
    return warp_type_to_np_dtype[st]


# ------------------------------------------------------------- predicates


def _family(t) -> str:
    return getattr(t, "_wp_family_", "") if isinstance(t, type) else ""


def type_is_int(t) -> builtins.bool:
    return scalar_type(t) in int_types


def type_is_float(t) -> builtins.bool:
    return scalar_type(t) in float_types


def type_is_scalar(t) -> builtins.bool:
    return type_is_int(t) or type_is_float(t)


def type_is_vector(t) -> builtins.bool:
    return _family(t) == "vector" and t is not Vector


def type_is_matrix(t) -> builtins.bool:
    return _family(t) == "matrix" and t is not Matrix


def type_is_quaternion(t) -> builtins.bool:
    return _family(t) == "quat" and t is not Quat


def type_is_transformation(t) -> builtins.bool:
    return _family(t) == "transform" and t is not Transform


def type_is_composite(t) -> builtins.bool:
    return (type_is_vector(t) or type_is_matrix(t) or type_is_quaternion(t)
            or type_is_transformation(t))


def type_is_value(t) -> builtins.bool:
    return t in (int, float, builtins.bool) or scalar_type(t) is not None or type_is_composite(t)


def type_is_struct(t) -> builtins.bool:
    return is_struct_type(t)


def type_is_array(t) -> builtins.bool:
    return isinstance(t, type) and builtins.bool(getattr(t, "_wp_array_", False))


def type_is_tile(t) -> builtins.bool:
    return False  # warpd has no tiles yet


def is_int(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_int(type(x))


def is_float(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_float(type(x))


def is_scalar(x) -> builtins.bool:
    return is_int(x) or is_float(x)


def is_vector(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_vector(type(x))


def is_matrix(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_matrix(type(x))


def is_quaternion(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_quaternion(type(x))


def is_transformation(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_transformation(type(x))


def is_composite(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_composite(type(x))


def is_value(x) -> builtins.bool:
    return not isinstance(x, type) and type_is_value(type(x))


def is_struct(x) -> builtins.bool:
    return not isinstance(x, type) and is_struct_type(type(x))


def is_array(x) -> builtins.bool:
    """An array or an array annotation (wp.array(dtype=float), wp.array[float]); not an
    array class (wp.array itself: type_is_array)."""
    return not isinstance(x, type) and builtins.bool(getattr(x, "_wp_array_", False))


def is_tile(x) -> builtins.bool:
    return False  # warpd has no tiles yet


# ------------------------------------------------------------- equality, repr


def _canonical(t):
    st = scalar_type(t)  # float -> float32, int -> int32, bool -> wp.bool
    return st if st is not None else t


def types_equal(a, b) -> builtins.bool:
    """Whether two dtypes or array annotations denote the same type (float is float32,
    int is int32; arrays compare dtype and ndim)."""
    if is_array(a) or is_array(b):
        if not (is_array(a) and is_array(b)):
            return False
        return (getattr(a, "ndim", None) == getattr(b, "ndim", None)
                and types_equal(a.dtype, b.dtype))
    a, b = _canonical(a), _canonical(b)
    if a is b:
        return True
    fa, fb = _family(a), _family(b)
    if fa and fa == fb and fa != "scalar" and fa != "struct":
        return (getattr(a, "_shape_", None) == getattr(b, "_shape_", None)
                and a._wp_scalar_type_ is b._wp_scalar_type_)
    return False


def type_repr(t) -> str:
    """Warp's spelling of a type: "float32", "vec3f", "vector(length=5, dtype=float64)",
    "array(ndim=1, dtype=float32)" for an annotation, "array(shape=(4,), dtype=...)"."""
    if t is typing.Any:
        return "Any"
    if t is builtins.bool:
        return "bool"
    if t is float:
        return "float"
    if t is int:
        return "int"
    if is_array(t):
        name = "array" if isinstance(t, type) else type(t).__name__
        if isinstance(t, type) or getattr(t, "handle", None) is None:
            ndim = getattr(t, "ndim", typing.Any)
            return f"{name}(ndim={'Any' if ndim is typing.Any else ndim}, dtype={type_repr(t.dtype)})"
        return f"{name}(shape={tuple(t.shape)}, dtype={type_repr(t.dtype)})"
    st = scalar_type(t)
    if st is not None:
        return st._wp_name_
    fam = _family(t)
    if fam in ("vector", "matrix", "quat", "transform"):
        sc = t._wp_scalar_type_
        sfx = SUFFIX.get(sc)
        shape = t._shape_
        if fam == "transform":
            return f"transform{sfx}" if sfx else f"transform(dtype={type_repr(sc)})"
        if fam == "quat":
            return f"quat{sfx}" if sfx else f"quat(dtype={type_repr(sc)})"
        if fam == "vector":
            if sfx and shape[0] <= 4:
                return f"vec{shape[0]}{sfx}"
            return f"vector(length={shape[0]}, dtype={type_repr(sc)})"
        if sfx and shape[0] <= 4 and shape[1] <= 4:
            return f"mat{shape[0]}{shape[1]}{sfx}"
        return f"matrix(shape=({shape[0]}, {shape[1]}), dtype={type_repr(sc)})"
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None)
    if name is None:
        return repr(t)
    return f"{getattr(t, '__module__', '')}.{name}"


__all__ = [
    "dtype_from_numpy", "dtype_to_numpy", "float_types", "int_types", "is_array", "is_composite",
    "is_float", "is_int", "is_matrix", "is_quaternion", "is_scalar", "is_struct", "is_tile",
    "is_transformation", "is_value", "is_vector", "matrix_types", "non_atomic_types",
    "np_dtype_to_warp_type", "scalar_and_bool_types", "scalar_types", "type_is_array",
    "type_is_composite", "type_is_float", "type_is_int", "type_is_matrix", "type_is_quaternion",
    "type_is_scalar", "type_is_struct", "type_is_tile", "type_is_transformation", "type_is_value",
    "type_is_vector", "type_repr", "types_equal", "vector_types", "warp_type_to_np_dtype",
]
