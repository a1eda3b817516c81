"""Scalar types: ``wp.int8`` ... ``wp.uint64``, ``wp.float16/32/64``, ``wp.bfloat16``, ``wp.bool``.

Each is a class whose instances hold one value (``wp.float32(1.5).value``);
Python's ``float``, ``int`` and ``bool`` stand for float32, int32 and bool.
The class attributes follow the family protocol of ``family.py``.

``convert`` is the one place a Python value becomes a component of a given
scalar type, with Warp's strictness: an integer type never takes a float.

bfloat16 has no NumPy dtype. Its values live in Python scope as float32
numbers (``_np_dtype_``, exact: every bfloat16 is a float32) and are stored
as their bits, uint16 (``_wp_np_dtype_``), which is what Warp's ``numpy()``
returns for them. ``_wp_encode_`` / ``_wp_decode_`` convert between the two
at the storage boundary (arrays, argument and struct bytes); for the other
scalar types they return their argument.
"""

from __future__ import annotations

import builtins
import ctypes
import math
import numbers
import struct
from typing import Any

import numpy as np

from .. import config
from ..v1 import ir_pb2


class _Scalar:
    """Base of the scalar types. Class attributes describe the type."""

    _wp_family_ = "scalar"
    _wp_name_: str = ""
    _wp_type_name_: str = ""
    _wp_builtin_: str = ""
    _proto_: int = 0
    _size_: int = 0
    _np_dtype_: Any = None
    _fmt_: str = ""
    _kind_: str = ""  # "float", "int", "bool"
    _signed_: builtins.bool = True
    _shape_: tuple = ()
    _length_ = 1

    # _from_int: a float built from an integer shows as one ("float16(-1)"), as Warp's,
    # whose float scalars keep the Python value they were given.
    __slots__ = ("value", "_from_int")

    def __init__(self, value=0):
        self._from_int = isinstance(value, (numbers.Integral, np.integer)) and not isinstance(
            value, (builtins.bool, np.bool_))
        if isinstance(value, _Scalar):
            self._from_int = value._kind_ == "int"
            value = value.value
        if self._kind_ == "bool" and is_number(value):
            # wp.bool(x) is x != 0 for any number (wp.bool(0.0), wp.bool(123)), as in Warp.
            self.value = builtins.bool(value != 0)
            return
        self.value = convert(type(self), value, wrap=True, what=f"{self._wp_name_}()")

    # ------------------------------------------------------------ protocol

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(scalar=cls._proto_)

    @classmethod
    def _wp_storage_(cls, value, wrap=False):
        return convert(cls, value, wrap=wrap)

    @classmethod
    def _wp_from_storage_(cls, raw):
        return np.asarray(raw).item()

    @classmethod
    def _wp_components_(cls, value) -> list:
        return [cls._wp_storage_(value, wrap=True)]

    # Values (a number or an ndarray of _np_dtype_) <-> what arrays store.
    @classmethod
    def _wp_encode_(cls, values):
        return values

    @classmethod
    def _wp_decode_(cls, stored):
        return stored

    # ------------------------------------------------------------ values

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

    # Comparisons as Warp's: a float type compares float(self) with float(other) (so a
    # Python int too large for a float is an OverflowError, wp.float32(1) == 2**1024);
    # an integer type compares as floats with a float and as integers otherwise.
    def _operands(self, other):
        """(a, b) Python numbers to compare, or None when other is not a number."""
        if isinstance(other, _Scalar):
            other_float = other._kind_ == "float"
            other = other.value
        elif isinstance(other, (numbers.Real, np.number, np.bool_)):
            other_float = isinstance(other, (float, np.floating)) or not isinstance(
                other, (numbers.Integral, np.integer, np.bool_))
        else:
            return None
        if self._kind_ == "float" or (self._kind_ == "int" and other_float):
            return float(self.value), float(other)
        if self._kind_ == "int":
            return int(self.value), int(other)
        return self.value, other

    def _cmp(self, other, op):
        pair = self._operands(other)
        if pair is None:
            return NotImplemented
        return op(*pair)

    def __eq__(self, other):
        pair = self._operands(other)
        if pair is None:
            return self.value == other if self._kind_ == "bool" else NotImplemented
        return pair[0] == pair[1]

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.value)

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    # abs() and round() as Warp's scalar values have them (builtins called in Python scope
    # return these for float16, float64 and the integer types but int32).
    def __abs__(self):
        return type(self)(abs(self.value))

    def __round__(self, ndigits=None):
        return type(self)(round(self.value, ndigits)) if ndigits is not None else type(self)(round(self.value))

    def __repr__(self):
        return f"{self._wp_name_}({self})"

    def __str__(self):
        if self._kind_ != "float":
            return str(self.value)
        if getattr(self, "_from_int", False) and math.isfinite(self.value) and self.value == int(self.value):
            return str(int(self.value))
        # The shortest decimal that reads back as the same value of this type: float32(0.1)
        # shows as 0.1, as Warp's does, not as the double 0.10000000149011612.
        return str(self._np_dtype_.type(self.value)) if self._np_dtype_ is not None else str(self.value)

    # Arithmetic in Python scope gives plain Python numbers, as in Warp; integer results
    # wrap to the type's width (wp.uint8(1) - wp.uint8(5) == 252), as C does.
    def _arith(self, other, op, reflected=False):
        if isinstance(other, _Scalar):
            if type(other) is not type(self):
                return NotImplemented
            other = other.value
        elif not isinstance(other, (numbers.Number, np.number)):
            return NotImplemented
        a, b = (other, self.value) if reflected else (self.value, other)
        r = op(a, b)
        if self._kind_ == "int" and isinstance(r, numbers.Integral):
            return convert(type(self), int(r), wrap=True)
        return r

    def __mod__(self, o):
        return self._arith(o, _c_mod)

    def __rmod__(self, o):
        return self._arith(o, _c_mod, True)

    def __pow__(self, o):
        if self._kind_ != "float":
            raise TypeError(f"unsupported operand type(s) for ** or pow(): '{self._wp_name_}' (Warp's pow "
                            f"takes floating-point values)")
        return self._arith(o, lambda a, b: float(a) ** float(b))

    def __rpow__(self, o):
        if self._kind_ != "float":
            raise TypeError(f"unsupported operand type(s) for ** or pow(): '{self._wp_name_}' (Warp's pow "
                            f"takes floating-point values)")
        return self._arith(o, lambda a, b: float(a) ** float(b), True)

    def __add__(self, o):
        return self._arith(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._arith(o, lambda a, b: a + b, True)

    def __sub__(self, o):
        return self._arith(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._arith(o, lambda a, b: a - b, True)

    def __mul__(self, o):
        return self._arith(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._arith(o, lambda a, b: a * b, True)

    def __truediv__(self, o):
        return self._arith(o, lambda a, b: a / b)

    def __rtruediv__(self, o):
        return self._arith(o, lambda a, b: a / b, True)

    def __neg__(self):
        if self._kind_ == "int":
            return convert(type(self), -self.value, wrap=True)
        return -self.value

    def __pos__(self):
        return self.value


def _c_mod(a, b):
    """C's remainder (the sign of the dividend), as Warp's kernels compute %."""
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        if b == 0:
            raise ZeroDivisionError("integer modulo by zero")
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    return math.fmod(a, b)


def _int_range(st):
    bits = st._size_ * 8
    if st._signed_:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _describe_value(v) -> str:
    if isinstance(v, _Scalar):
        return f"{v._wp_name_} {v.value!r}"
    if isinstance(v, (np.generic,)):
        return f"{np.dtype(type(v)).name} {v.item()!r}"
    return f"{type(v).__name__} {v!r}"


def convert(st, v, wrap=False, what=None):
    """v as a Python number of scalar type st (a _Scalar subclass).

    Integers never take floats (TypeError). Out-of-range integers wrap when
    `wrap` (constructors, as in Warp) and are a ValueError otherwise (kernel
    arguments). Messages start with "got ..." so callers can prefix them;
    `what` prefixes them here.
    """
    try:
        return _convert(st, v, wrap)
    except (TypeError, ValueError) as e:
        if what is None:
            raise
        raise type(e)(f"{what} expects {st._wp_name_}, {e}") from None


def _convert(st, v, wrap):
    if isinstance(v, _Scalar):
        if v._kind_ == "float" and st._kind_ != "float":
            raise TypeError(f"got {_describe_value(v)} (Warp does not convert implicitly; use int(x))")
        v = v.value
    kind = st._kind_
    if isinstance(v, (str, bytes, complex)) or not isinstance(v, (numbers.Number, np.number, np.bool_)):
        raise TypeError(f"got {type(v).__name__} {v!r}")
    if kind == "bool":
        if isinstance(v, (builtins.bool, np.bool_, numbers.Integral, np.integer)):
            return builtins.bool(v)
        raise TypeError(f"got {_describe_value(v)}")
    if kind == "float":
        if st._wp_name_ == "bfloat16":
            return float(bfloat16_round(np.float32(float(v))))
        return float(np.asarray(float(v), dtype=st._np_dtype_))
    # integers
    if isinstance(v, (np.floating, numbers.Real)) and not isinstance(
            v, (numbers.Integral, np.integer, np.bool_)):
        raise TypeError(f"got {_describe_value(v)} (Warp does not convert implicitly; use int(x))")
    v = int(v)
    lo, hi = _int_range(st)
    if lo <= v <= hi:
        return v
    if not wrap:
        raise ValueError(f"got {v}, which is out of range for {st._wp_name_}")
    bits = st._size_ * 8
    v &= (1 << bits) - 1
    if st._signed_ and v >= (1 << (bits - 1)):
        v -= 1 << bits
    return v


# Warp's ctypes type of each scalar (``wp.int16._type_(v).value`` wraps as C does);
# float16 is its bits, a c_uint16, as in Warp.
_CTYPES = {"?": ctypes.c_bool, "b": ctypes.c_int8, "B": ctypes.c_uint8, "h": ctypes.c_int16,
           "H": ctypes.c_uint16, "i": ctypes.c_int32, "I": ctypes.c_uint32, "q": ctypes.c_int64,
           "Q": ctypes.c_uint64, "e": ctypes.c_uint16, "f": ctypes.c_float, "d": ctypes.c_double}


def float_to_bfloat16_bits(values) -> np.ndarray:
    """float32 values (any shape) -> bfloat16 bits (uint16): to nearest, ties to even; a NaN
    stays a NaN (its quiet bit set), as the kernels' wp::float_to_bfloat16 rounds."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)  # room for the carry of the rounding add
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet = (bits | 0x00400000) >> 16
    return np.where(np.isnan(f), quiet, rounded).astype(np.uint16)


def bfloat16_bits_to_float(bits) -> np.ndarray:
    """bfloat16 bits (uint16, any shape) -> their float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bfloat16_round(values) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16, as float32."""
    return bfloat16_bits_to_float(float_to_bfloat16_bits(values))


class _BFloat16(_Scalar):
    """Storage of bfloat16: bits (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def _wp_storage_(cls, value, wrap=False):
        return int(float_to_bfloat16_bits(convert(cls, value, wrap=wrap)))

    @classmethod
    def _wp_from_storage_(cls, raw):
        return float(bfloat16_bits_to_float(raw))

    @classmethod
    def _wp_components_(cls, value) -> list:
        return [convert(cls, value, wrap=True)]

    @classmethod
    def _wp_encode_(cls, values):
        return float_to_bfloat16_bits(values)

    @classmethod
    def _wp_decode_(cls, stored):
        return bfloat16_bits_to_float(stored)


def _make_scalar(name, proto, np_dtype, fmt, kind, signed=True, base=None, storage_dtype=None):
    size = struct.calcsize("<" + fmt)
    return type(
        name,
        (base or _Scalar,),
        {
            "__slots__": (),
            "__module__": "warpd.types",
            "__qualname__": name,
            "_wp_name_": name,
            "_wp_type_name_": name,
            "_wp_builtin_": name,
            "_proto_": proto,
            "_size_": size,
            "_wp_size_": size,
            "_wp_align_": size,
            "_np_dtype_": np.dtype(np_dtype),
            "_wp_np_dtype_": np.dtype(storage_dtype or np_dtype),
            "_fmt_": fmt,
            "_type_": _CTYPES[fmt],
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
# Values as float32, stored as uint16 bits (format "H", ctypes c_uint16, as Warp's _type_).
bfloat16 = _make_scalar("bfloat16", _S.SCALAR_BFLOAT16, np.float32, "H", "float", base=_BFloat16,
                        storage_dtype=np.uint16)
bool_ = _make_scalar("bool", _S.SCALAR_BOOL, np.bool_, "?", "bool", False)
half = float16

for _t in (int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64,
           bfloat16, bool_):
    _t._wp_scalar_type_ = _t
    if _t is not bfloat16:
        # NumPy's dtype protocol (NumPy 2.4+): np.dtype(wp.float32), np.zeros(3, dtype=wp.int16),
        # structured dtypes with Warp scalar fields, as Warp 1.19 declares it. bfloat16 has
        # no NumPy dtype (np.dtype(wp.bfloat16) stays object, as in Warp).
        _t.__numpy_dtype__ = _t._np_dtype_


class handle(uint64):
    """Warp's type of object handles (Mesh, Volume, BVH ids): a uint64 in every respect
    (scalar_type(handle) is uint64, so arrays and parameters of it are uint64's)."""

    __slots__ = ()
    __module__ = "warpd.types"

SCALAR_TYPES = (bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                float16, float32, float64, bfloat16)
_SCALAR_BY_PROTO = {t._proto_: t for t in SCALAR_TYPES}
# NumPy data infers these (uint16 data is uint16, never bfloat16, as in Warp).
_SCALAR_BY_NP = {t._np_dtype_: t for t in SCALAR_TYPES if t is not bfloat16}

# Python's own types stand for Warp's defaults.
_PY_ALIASES = {builtins.float: float32, builtins.int: int32, builtins.bool: bool_, handle: uint64}

# Warp's suffixes of named types (vec3f, mat22d, quath), by scalar type.
SUFFIX = {bool_: "bool", float32: "f", float64: "d", float16: "h", bfloat16: "bf", int8: "b", uint8: "ub",
          int16: "s", uint16: "us", int32: "i", uint32: "ui", int64: "l", uint64: "ul"}


# Types whose components Python scope reads as Python numbers (Warp's native_scalar_types).
NATIVE_TYPES = (int32, float32, bool_)


def export(st, value):
    """A component of scalar type st (a Python number of it) as Warp 1.19 returns it from
    a vector, matrix, quaternion or transformation: the number for int32, float32 and
    bool (and for every type with wp.config.legacy_scalar_return_types), else an
    instance of st (wp.vec3d(1, 2, 3)[0] is wp.float64(1.0))."""
    if st in NATIVE_TYPES:
        return value
    if config.legacy_scalar_return_types:
        return value
    obj = st.__new__(st)
    obj.value = value
    return obj


def is_scalar_type(t) -> builtins.bool:
    return scalar_type(t) is not None


def scalar_type(t):
    """The scalar class for t (a scalar class, or Python float/int/bool); None otherwise."""
    try:
        t = _PY_ALIASES.get(t, t)
    except TypeError:  # unhashable
        return None
    if isinstance(t, type) and issubclass(t, _Scalar) and t is not _Scalar:
        return t
    return None


def scalar_from_proto(proto: int):
    return _SCALAR_BY_PROTO.get(proto)


def scalar_from_numpy(dt):
    try:
        return _SCALAR_BY_NP.get(np.dtype(dt))
    except TypeError:
        return None


def is_number(v) -> builtins.bool:
    """A Python, NumPy or Warp scalar value."""
    return isinstance(v, (numbers.Number, np.number, np.bool_, _Scalar)) and not isinstance(v, complex)
