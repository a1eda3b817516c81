"""Warp's value types in Python scope, and their wire form (``wp.types``).

One module per family, each one class following the protocol of family.py:

  scalar.py     int8 ... uint64, float16/32/64, bool (Python float/int/bool are aliases)
  vector.py     vector(length, dtype): vec2..vec4 with suffixes, spatial_vector
  matrix.py     matrix(shape, dtype): mat22..mat44 with suffixes, spatial_matrix
  quat.py       quaternion(dtype): quat, quatf/d/h
  transform.py  transformation(dtype): transform, transformf/d/h
  struct.py     @wp.struct
  query.py      HashGridQuery (values of kernels only)

The functions here work on any dtype through that protocol: ``to_typeref``
and ``from_typeref`` (the IR's TypeRef), ``describe`` (a TypeRef spelled as
the daemon spells it, for messages), ``pack`` (a kernel argument's bytes),
``canonical_dtype`` and the layout helpers array.py uses.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..v1 import ir_pb2
from . import introspect
from .family import Value
from .generic import Float, GenericValue, Int, Scalar, is_generic
from .introspect import *  # noqa: F403 - Warp's type tables and predicates (introspect.__all__)
from .matrix import Matrix, is_matrix_type, matrix
from .quat import Quat, quaternion
from .query import (BvhQuery, HashGridQuery, MeshQuery, MeshQueryAABB, MeshQueryPoint, MeshQueryRay, hash_grid_query_type,
                    is_query_type)
from .scalar import (SCALAR_TYPES, SUFFIX, _Scalar, bool_, float16, float32, float64, half, handle,
                     int8, int16, int32, int64, is_scalar_type, scalar_from_numpy, scalar_from_proto,
                     scalar_type, uint8, uint16, uint32, uint64)
from .struct import Struct, holds_array, is_struct_type, struct, struct_from_name
from .transform import Transform, transformation
from .vector import Vector, is_vector_type, vector

# Backwards-compatible name of the vector base class.
_Vector = Vector

# ------------------------------------------------------------- named types

NAMED_TYPES: dict = {}


def _name(name, t):
    NAMED_TYPES[name] = t


for _st, _sfx in SUFFIX.items():
    if _sfx == "bf":  # Warp 1.19 names no bfloat16 vectors or matrices: vector(3, wp.bfloat16)
        continue
    for _n in (2, 3, 4):
        _name(f"vec{_n}{_sfx}", vector(_n, _st))
        _name(f"mat{_n}{_n}{_sfx}", matrix((_n, _n), _st))
for _n in (2, 3, 4):
    _name(f"vec{_n}", vector(_n, float32))
    _name(f"mat{_n}{_n}", matrix((_n, _n), float32))
for _st, _sfx in ((float32, "f"), (float64, "d"), (float16, "h")):
    _name(f"quat{_sfx}", quaternion(_st))
    _name(f"transform{_sfx}", transformation(_st))
    _name(f"spatial_vector{_sfx}", vector(6, _st))
    _name(f"spatial_matrix{_sfx}", matrix((6, 6), _st))
_name("quat", quaternion(float32))
_name("transform", transformation(float32))
_name("spatial_vector", vector(6, float32))
_name("spatial_matrix", matrix((6, 6), float32))
globals().update(NAMED_TYPES)
del _st, _sfx, _n

from .introspect import _get_ml_dtypes_bfloat16  # noqa: E402,F401 - Warp's probe: None here
from .scalar import bfloat16  # noqa: E402 - beside the named types: no NumPy dtype, see scalar.py

# ------------------------------------------------------------ dtypes at large


def is_value_type(t) -> builtins.bool:
    """A type usable as an array dtype or kernel value: scalar, vector, matrix,
    quaternion, transformation or struct."""
    if scalar_type(t) is not None:
        return True
    return isinstance(t, type) and (
        (issubclass(t, Value) and t._wp_scalar_type_ is not None) or is_struct_type(t))


def canonical_dtype(t):
    """float -> float32, int -> int32, bool -> bool; other value types unchanged."""
    st = scalar_type(t)
    if st is not None:
        return st
    if is_value_type(t):
        return t
    raise TypeError(f"unsupported dtype {t!r}: expected a scalar type (wp.float32, int, ...), a "
                    f"vector, matrix, quaternion or transformation type (wp.vec3, wp.mat33, ...) "
                    f"or a @wp.struct")


def type_size_in_bytes(t) -> int:
    """The size of one element of t in bytes (C layout)."""
    return canonical_dtype(t)._wp_size_


def type_size(t) -> int:
    """Warp's type_size: the number of components of t (1 for scalars and structs, the length
    of a vector, rows * cols of a matrix); type_size_in_bytes is its size in bytes."""
    t = canonical_dtype(t)
    return 1 if is_struct_type(t) else max(1, t._length_)


def type_scalar(t):
    """The scalar type of t's components (None for structs)."""
    return canonical_dtype(t)._wp_scalar_type_


def type_length(t) -> int:
    """Scalar components per element: 1 for scalars, rows * cols for matrices, 0 for structs."""
    return canonical_dtype(t)._length_


def element_shape(t) -> tuple:
    """Shape one element adds to NumPy arrays: (), (n,), (rows, cols); () for structs."""
    return canonical_dtype(t)._shape_


def numpy_dtype(t) -> np.dtype:
    """The dtype of t's NumPy arrays: the scalar dtype, or a structured dtype for structs."""
    t = canonical_dtype(t)
    if is_struct_type(t):
        return t._wp_np_dtype_
    return t._wp_scalar_type_._wp_np_dtype_  # bfloat16: its bits, uint16


def type_name(t) -> str:
    """Warp's spelling of a dtype, as the daemon writes it."""
    return canonical_dtype(t)._wp_type_name_


def pack(t, value, wrap=False) -> bytes:
    """value as one element of dtype t, in the daemon's layout (C, little-endian).

    TypeError/ValueError with a message starting "got ..." when value does not fit.
    """
    t = canonical_dtype(t)
    rec = np.zeros((), dtype=t._wp_np_dtype_)
    stored = t._wp_storage_(value, wrap=wrap)
    if isinstance(t, type) and issubclass(t, Value):
        stored = t._wp_scalar_type_._wp_encode_(stored)  # bfloat16 components: bits
    rec[...] = stored
    return rec.tobytes()


def constant(x):
    """A compile-time constant for kernels (folded in where it is used): a value of a
    Warp value type (a Python or Warp scalar, vector, matrix, quaternion or
    transformation); anything else is Warp's TypeError."""
    if not introspect.is_value(x):
        raise TypeError(f"Invalid constant type: {type(x)}")
    return x


# ------------------------------------------------------------------ TypeRef


def to_typeref(t) -> ir_pb2.TypeRef | None:
    """The IR TypeRef of a dtype or an array annotation; None for anything else."""
    if is_value_type(t):
        return canonical_dtype(t)._wp_typeref_()
    if is_query_type(t):  # wp.HashGridQuery[dtype]: function annotations only
        return t._wp_query_typeref_()
    dtype = getattr(t, "_wp_annotation_dtype_", None)
    if dtype is not None:
        inner = to_typeref(dtype)
        if inner is None:
            return None
        return ir_pb2.TypeRef(array=ir_pb2.ArrayType(dtype=inner, ndim=t.ndim,
                                                     indexed=bool(getattr(t, "_wp_indexed_", False))))
    return None


def from_typeref(tr: ir_pb2.TypeRef):
    """The Python dtype of a value TypeRef; None for arrays, unknown structs and invalid types."""
    which = tr.WhichOneof("kind")
    try:
        if which == "scalar":
            return scalar_from_proto(tr.scalar)
        if which == "vector":
            return vector(tr.vector.length, scalar_from_proto(tr.vector.dtype))
        if which == "matrix":
            return matrix((tr.matrix.rows, tr.matrix.cols), scalar_from_proto(tr.matrix.dtype))
        if which == "quat":
            return quaternion(scalar_from_proto(tr.quat.dtype))
        if which == "transform":
            return transformation(scalar_from_proto(tr.transform.dtype))
        if which == "struct_type":
            return struct_from_name(tr.struct_type.name)
    except (TypeError, ValueError):
        return None
    return None


def describe(tr: ir_pb2.TypeRef) -> str:
    """A TypeRef spelled as the daemon spells it: "float32", "vec3f", "mat33d",
    "matrix(shape=(2, 3), dtype=float32)", "Particle", "array(dtype=quatf, ndim=2)"."""
    which = tr.WhichOneof("kind")
    if which == "array":
        kind = "indexedarray" if tr.array.indexed else "array"
        return f"{kind}(dtype={describe(tr.array.dtype)}, ndim={tr.array.ndim})"
    if which == "struct_type":  # the class name (the display name is module-qualified)
        return tr.struct_type.display_name.rsplit(".", 1)[-1] or tr.struct_type.name
    if which == "scalar":
        st = scalar_from_proto(tr.scalar)
        return st._wp_name_ if st is not None else "<unknown scalar>"
    t = from_typeref(tr)
    return t._wp_type_name_ if t is not None else f"<invalid {which} type>"


# ``bool`` last: the name shadows Python's bool inside this module from here on.
bool = bool_  # noqa: A001

__all__ = [
    *introspect.__all__, "Float", "GenericValue", "Int", "Scalar", "is_generic",
    "SCALAR_TYPES", "Matrix", "NAMED_TYPES", "Quat", "Struct", "Transform", "Value", "Vector",
    "bfloat16", "bool", "bool_", "canonical_dtype", "constant", "describe", "element_shape", "float16",
    "float32", "float64", "from_typeref", "half", "handle", "int8", "int16", "int32", "int64",
    "is_matrix_type", "is_scalar_type", "is_struct_type", "is_value_type", "is_vector_type",
    "matrix", "numpy_dtype", "pack", "quaternion", "scalar_from_numpy", "scalar_from_proto",
    "scalar_type", "struct", "to_typeref", "transformation", "type_length", "type_name",
    "type_scalar", "type_size", "type_size_in_bytes", "uint8", "uint16", "uint32", "uint64", "vector",
    *NAMED_TYPES,
]
