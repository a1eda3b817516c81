"""Warp's value types in Python scope: scalars, vectors, and their wire form.

Scalar types (``wp.float32``, ``wp.int8``, ...) are classes whose instances hold
one value (``wp.float32(1.5).value``); Python's ``float``, ``int`` and ``bool``
are aliases of float32, int32 and bool. Vector types (``wp.vec3``,
``wp.types.vector(5, wp.float64)``) are classes of fixed length whose
instances behave like small sequences with ``x``/``y``/``z``/``w``.

``to_typeref`` turns any of these (and array annotations) into the IR's
``TypeRef``; ``describe`` spells a TypeRef the way Warp does, for messages.
"""

from __future__ import annotations

import builtins
import numbers
import struct
from typing import Any

import numpy as np

from .v1 import ir_pb2

# ----------------------------------------------------------------- scalars


class _Scalar:
    """Base of the scalar types. Class attributes describe the type."""

    _wp_name_: str = ""
    _proto_: int = 0
    _size_: int = 0
    _np_dtype_: Any = None
    _fmt_: str = ""
    _kind_: str = ""  # "float", "int", "bool"
    _signed_: builtins.bool = True

    __slots__ = ("value",)

    def __init__(self, value=0):
        if isinstance(value, _Scalar):
            value = value.value
        self.value = _cast_scalar(type(self), value)

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __index__(self):
        if self._kind_ == "float":
            raise TypeError(f"{self._wp_name_} cannot be used as an index")
        return int(self.value)

    def __bool__(self):
        return builtins.bool(self.value)

    def __eq__(self, other):
        if isinstance(other, _Scalar):
            other = other.value
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"{self._wp_name_}({self.value!r})"


def _cast_scalar(t, value):
    if t._kind_ == "bool":
        return builtins.bool(value)
    if t._kind_ == "float":
        return float(np.asarray(value, dtype=t._np_dtype_))
    if isinstance(value, float):
        value = int(value)
    return int(np.asarray(value).astype(t._np_dtype_))


def _make_scalar(name, proto, np_dtype, fmt, kind, signed=True):
    size = struct.calcsize("<" + fmt)
    return type(
        name,
        (_Scalar,),
        {
            "__slots__": (),
            "__module__": __name__,
            "__qualname__": name,
            "_wp_name_": name,
            "_proto_": proto,
            "_size_": size,
            "_np_dtype_": np.dtype(np_dtype),
            "_fmt_": fmt,
            "_kind_": kind,
            "_signed_": signed,
        },
    )


_S = ir_pb2
int8 = _make_scalar("int8", _S.SCALAR_INT8, np.int8, "b", "int")
uint8 = _make_scalar("uint8", _S.SCALAR_UINT8, np.uint8, "B", "int", False)
int16 = _make_scalar("int16", _S.SCALAR_INT16, np.int16, "h", "int")
uint16 = _make_scalar("uint16", _S.SCALAR_UINT16, np.uint16, "H", "int", False)
int32 = _make_scalar("int32", _S.SCALAR_INT32, np.int32, "i", "int")
uint32 = _make_scalar("uint32", _S.SCALAR_UINT32, np.uint32, "I", "int", False)
int64 = _make_scalar("int64", _S.SCALAR_INT64, np.int64, "q", "int")
uint64 = _make_scalar("uint64", _S.SCALAR_UINT64, np.uint64, "Q", "int", False)
float16 = _make_scalar("float16", _S.SCALAR_FLOAT16, np.float16, "e", "float")
float32 = _make_scalar("float32", _S.SCALAR_FLOAT32, np.float32, "f", "float")
float64 = _make_scalar("float64", _S.SCALAR_FLOAT64, np.float64, "d", "float")
bool_ = _make_scalar("bool", _S.SCALAR_BOOL, np.bool_, "?", "bool", False)
half = float16

SCALAR_TYPES = (bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                float16, float32, float64)
_SCALAR_BY_PROTO = {t._proto_: t for t in SCALAR_TYPES}
_SCALAR_BY_NAME = {t._wp_name_: t for t in SCALAR_TYPES}
_SCALAR_BY_NP = {t._np_dtype_: t for t in SCALAR_TYPES}

# Python's own types stand for Warp's defaults.
_PY_ALIASES = {builtins.float: float32, builtins.int: int32, builtins.bool: bool_}


def is_scalar_type(t) -> builtins.bool:
    return t in _PY_ALIASES or (isinstance(t, type) and issubclass(t, _Scalar) and t is not _Scalar)


def scalar_type(t):
    """The scalar class for t (a scalar class, or Python float/int/bool)."""
    t = _PY_ALIASES.get(t, t)
    if isinstance(t, type) and issubclass(t, _Scalar) and t is not _Scalar:
        return t
    return None


def scalar_from_proto(proto: int):
    return _SCALAR_BY_PROTO.get(proto)


def scalar_from_numpy(dt):
    return _SCALAR_BY_NP.get(np.dtype(dt))


# ----------------------------------------------------------------- vectors


class _Vector:
    """Base of the vector types: a fixed-length sequence of one scalar type."""

    _length_: int = 0
    _wp_scalar_type_: Any = float32
    _wp_name_: str = ""  # the builtin name when the type is one of Warp's named types

    __slots__ = ("_v",)

    def __init__(self, *args):
        n = self._length_
        if len(args) == 0:
            values = [0] * n
        elif len(args) == 1 and _is_sequence(args[0]):
            values = list(args[0])
            if len(values) != n:
                raise ValueError(f"{type(self).__name__} expects {n} components, got {len(values)}")
        elif len(args) == 1:
            values = [args[0]] * n
        elif len(args) == n:
            values = list(args)
        else:
            raise TypeError(f"{type(self).__name__} expects 0, 1 or {n} arguments, got {len(args)}")
        st = self._wp_scalar_type_
        self._v = [_cast_scalar(st, v.value if isinstance(v, _Scalar) else v) for v in values]

    def __len__(self):
        return self._length_

    def __iter__(self):
        return iter(self._v)

    def __getitem__(self, i):
        return self._v[i]

    def __setitem__(self, i, value):
        st = self._wp_scalar_type_
        if isinstance(i, slice):
            self._v[i] = [_cast_scalar(st, v) for v in value]
            if len(self._v) != self._length_:
                raise ValueError("slice assignment cannot change a vector's length")
        else:
            self._v[i] = _cast_scalar(st, value)

    def _component(i):  # noqa: N805 - a property factory, not a method
        def get(self):
            return self._v[i]

        def set_(self, value):
            self[i] = value

        return property(get, set_)

    x = _component(0)
    y = _component(1)
    z = _component(2)
    w = _component(3)
    del _component

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._v, dtype=dtype or self._wp_scalar_type_._np_dtype_)

    def _binary(self, other, op):
        if isinstance(other, _Vector) or _is_sequence(other):
            if len(other) != self._length_:
                raise ValueError("vector lengths differ")
            return type(self)(*(op(a, b) for a, b in zip(self._v, other)))
        if isinstance(other, (numbers.Number, _Scalar)):
            other = other.value if isinstance(other, _Scalar) else other
            return type(self)(*(op(a, other) for a in self._v))
        return NotImplemented

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        if isinstance(other, _Vector):
            return NotImplemented
        return self._binary(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, _Vector):
            return NotImplemented
        return self._binary(other, lambda a, b: a / b)

    def __neg__(self):
        return type(self)(*(-a for a in self._v))

    def __pos__(self):
        return type(self)(*self._v)

    def __eq__(self, other):
        if isinstance(other, _Vector) or _is_sequence(other):
            return len(other) == self._length_ and all(a == b for a, b in zip(self._v, other))
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self._v))

    def __repr__(self):
        return "[" + ", ".join(repr(v) for v in self._v) + "]"


def _is_sequence(v) -> builtins.bool:
    if isinstance(v, (str, bytes)):
        return False
    if isinstance(v, np.ndarray):
        return v.ndim >= 1
    return isinstance(v, (_Vector, list, tuple)) or (hasattr(v, "__len__") and hasattr(v, "__getitem__"))


_VECTOR_CACHE: dict = {}

# Warp's suffixes for named vector types, by component type.
_SUFFIX = {"float32": "f", "float64": "d", "float16": "h", "int8": "b", "uint8": "ub",
           "int16": "s", "uint16": "us", "int32": "i", "uint32": "ui", "int64": "l", "uint64": "ul"}


def vector(length: int, dtype=float32):
    """The vector type of ``length`` components of scalar type ``dtype``.

    Repeated calls with the same arguments return the same class.
    """
    st = scalar_type(dtype)
    if st is None:
        raise TypeError(f"vector dtype must be a scalar type, got {dtype!r}")
    length = int(length)
    if not 1 <= length <= 16:
        raise ValueError(f"vector length must be in [1, 16], got {length}")
    key = (length, st)
    cls = _VECTOR_CACHE.get(key)
    if cls is None:
        suffix = _SUFFIX.get(st._wp_name_)
        name = f"vec{length}{suffix}" if suffix else f"vector{length}_{st._wp_name_}"
        cls = type(name, (_Vector,), {"__slots__": (), "__module__": __name__, "__qualname__": name,
                                      "_length_": length, "_wp_scalar_type_": st, "_wp_name_": ""})
        _VECTOR_CACHE[key] = cls
    return cls


def _named_vector(length, dtype, name, canonical=False):
    cls = vector(length, dtype)
    if canonical or not cls._wp_name_:
        cls._wp_name_ = name
        cls.__name__ = cls.__qualname__ = name
    return cls


vec2 = _named_vector(2, float32, "vec2", canonical=True)
vec3 = _named_vector(3, float32, "vec3", canonical=True)
vec4 = _named_vector(4, float32, "vec4", canonical=True)
vec2f, vec3f, vec4f = vec2, vec3, vec4
vec2d = _named_vector(2, float64, "vec2d")
vec3d = _named_vector(3, float64, "vec3d")
vec4d = _named_vector(4, float64, "vec4d")
vec2h = _named_vector(2, float16, "vec2h")
vec3h = _named_vector(3, float16, "vec3h")
vec4h = _named_vector(4, float16, "vec4h")
vec2i = _named_vector(2, int32, "vec2i")
vec3i = _named_vector(3, int32, "vec3i")
vec4i = _named_vector(4, int32, "vec4i")
vec2ui = _named_vector(2, uint32, "vec2ui")
vec3ui = _named_vector(3, uint32, "vec3ui")
vec4ui = _named_vector(4, uint32, "vec4ui")
vec2ub = _named_vector(2, uint8, "vec2ub")
vec3ub = _named_vector(3, uint8, "vec3ub")
vec4ub = _named_vector(4, uint8, "vec4ub")
vec2b = _named_vector(2, int8, "vec2b")
vec3b = _named_vector(3, int8, "vec3b")
vec4b = _named_vector(4, int8, "vec4b")
vec2s = _named_vector(2, int16, "vec2s")
vec3s = _named_vector(3, int16, "vec3s")
vec4s = _named_vector(4, int16, "vec4s")
vec2us = _named_vector(2, uint16, "vec2us")
vec3us = _named_vector(3, uint16, "vec3us")
vec4us = _named_vector(4, uint16, "vec4us")
vec2l = _named_vector(2, int64, "vec2l")
vec3l = _named_vector(3, int64, "vec3l")
vec4l = _named_vector(4, int64, "vec4l")
vec2ul = _named_vector(2, uint64, "vec2ul")
vec3ul = _named_vector(3, uint64, "vec3ul")
vec4ul = _named_vector(4, uint64, "vec4ul")


def is_vector_type(t) -> builtins.bool:
    return isinstance(t, type) and issubclass(t, _Vector) and t is not _Vector


# ------------------------------------------------------------ dtypes at large


def is_value_type(t) -> builtins.bool:
    """A scalar or vector type usable as an array dtype."""
    return is_scalar_type(t) or is_vector_type(t)


def canonical_dtype(t):
    """float -> float32, int -> int32, bool -> bool; vector types unchanged."""
    st = scalar_type(t)
    if st is not None:
        return st
    if is_vector_type(t):
        return t
    raise TypeError(f"unsupported dtype {t!r}: expected a scalar type (wp.float32, int, ...) "
                    f"or a vector type (wp.vec3, ...)")


def type_size(t) -> int:
    t = canonical_dtype(t)
    if is_vector_type(t):
        return t._length_ * t._wp_scalar_type_._size_
    return t._size_


def type_scalar(t):
    t = canonical_dtype(t)
    return t._wp_scalar_type_ if is_vector_type(t) else t


def type_length(t) -> int:
    """Components per element: 1 for scalars."""
    t = canonical_dtype(t)
    return t._length_ if is_vector_type(t) else 1


def type_name(t) -> str:
    t = canonical_dtype(t)
    return t.__name__ if is_vector_type(t) else t._wp_name_


def constant(x):
    """A compile-time constant for kernels (folded in where it is used)."""
    return x


# ------------------------------------------------------------------ TypeRef


def to_typeref(t) -> ir_pb2.TypeRef | None:
    """The IR TypeRef of a Python-side type: scalar, vector, or array annotation.

    Returns None for anything else.
    """
    st = scalar_type(t)
    if st is not None:
        return ir_pb2.TypeRef(scalar=st._proto_)
    if is_vector_type(t):
        return ir_pb2.TypeRef(vector=ir_pb2.VectorType(length=t._length_,
                                                       dtype=t._wp_scalar_type_._proto_))
    dtype = getattr(t, "_wp_annotation_dtype_", None)
    if dtype is not None:
        inner = to_typeref(dtype)
        if inner is None:
            return None
        return ir_pb2.TypeRef(array=ir_pb2.ArrayType(dtype=inner, ndim=t.ndim))
    return None


def from_typeref(tr: ir_pb2.TypeRef):
    """The Python type of a scalar or vector TypeRef (None for arrays)."""
    which = tr.WhichOneof("kind")
    if which == "scalar":
        return scalar_from_proto(tr.scalar)
    if which == "vector":
        st = scalar_from_proto(tr.vector.dtype)
        return vector(tr.vector.length, st) if st is not None else None
    return None


def describe(tr: ir_pb2.TypeRef) -> str:
    """Warp's spelling of a TypeRef: "float32", "vec3f", "array(dtype=float32, ndim=2)"."""
    which = tr.WhichOneof("kind")
    if which == "array":
        return f"array(dtype={describe(tr.array.dtype)}, ndim={tr.array.ndim})"
    t = from_typeref(tr)
    if t is None:
        return "<unknown type>"
    return type_name(t)


# ``bool`` last: the name shadows Python's bool inside this module from here on.
bool = bool_  # noqa: A001
