"""The type-family protocol, and ``Value``, the base of the fixed-size value families.

Every dtype class (a scalar, vector, matrix, quaternion, transformation or
struct type) answers the same questions through class attributes and class
methods, so arrays (array.py), launches (launch.py) and the front end
(frontend.py) never ask which family a type belongs to; a new family is one
class that fills these in:

  _wp_family_          "scalar", "vector", "matrix", "quat", "transform", "struct"
  _wp_scalar_type_     scalar class of the components (None for structs)
  _shape_              shape of one element inside NumPy arrays: (), (n,), (rows, cols)
  _length_             number of scalar components (structs: 0)
  _wp_np_dtype_        NumPy dtype of one element: the scalar dtype, a subarray
                       dtype ("(3,)<f4") or a structured dtype with C offsets
  _wp_size_, _wp_align_  its C layout in bytes, as the daemon computes it
                       (common/types/type.cc; docs/native_headers.md)
  _wp_type_name_       Warp's spelling, as the daemon writes it in messages
                       ("vec3f", "matrix(shape=(2, 3), dtype=float32)", "Particle")
  _wp_builtin_         the kernel constructor's builtin name ("vec3", "mat33d");
                       "" for generic types, which construct by keywords

  _wp_typeref_()                 the IR TypeRef
  _wp_storage_(value, wrap)      value checked and converted to what NumPy stores
                                 for one element: a Python number, an ndarray of
                                 _shape_, or a tuple (structs); for vectors and
                                 matrices of bfloat16 still the values (float32):
                                 _wp_scalar_type_._wp_encode_ makes them bits. TypeError or
                                 ValueError whose message starts with "got ...".
                                 `wrap` is a constructor's leniency (constructors,
                                 struct members, fills): out-of-range integers
                                 wrap and values of another dtype convert; kernel
                                 arguments (wrap=False) must fit exactly.
  _wp_from_storage_(raw)         an instance (or Python number) from one stored element
                                 (bits, for bfloat16)
  _wp_components_(value)         the scalar components, flat and row-major
                                 (a kernel constant is a constructor call of these)
  _wp_fill_ctor_(call, span)     sets an IR Call's callee (and keywords) so that
                                 it constructs this type

``Value`` implements the parts shared by vectors, matrices, quaternions and
transformations: instances hold their components in a small NumPy array and
behave as values in Python scope (indexing, ==, arithmetic within one type,
``np.array(v)``, repr), with Warp's strictness (no mixing of dtypes).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..v1 import ir_pb2
from .scalar import (SUFFIX, _Scalar, bfloat16, convert, export, float16, float32, float64, is_number,
                     scalar_type)



# Warp's builtin of each Python operator, for its "no overload" message.
_OPERATOR_BUILTINS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod", "@": "mul"}


def no_overload(builtin, *operands):
    """Warp 1.19's RuntimeError when no overload of `builtin` takes the operands' types
    (Python scope: Warp does not convert implicitly)."""
    names = ", ".join(getattr(type(o), "_wp_type_name_", None) or type(o).__name__ for o in operands)
    return RuntimeError(f"Couldn't find a function '{builtin}' compatible with the arguments '{names}'")


class Value:
    """Base of the vector, matrix, quaternion and transformation types."""

    _wp_family_ = ""
    _wp_scalar_type_ = None
    _shape_: tuple = ()
    _length_ = 0
    _wp_builtin_ = ""
    _wp_type_name_ = ""
    # Whether `value + scalar` adds to every component (vectors, as in Warp's Python scope).
    _wp_scalar_add_ = False
    # Warp's word for the family in constructor messages ("Invalid number of arguments in
    # vector constructor ..."); quaternions and transformations are vectors in Warp.
    _wp_ctor_kind_ = "vector"

    # "__dict__": instances take other attributes (v.foo = 123), as Warp's ctypes-based values do.
    __slots__ = ("_v", "__dict__")
    # NumPy defers to our reflected operators (np.float32(2) * v is a vector, not an ndarray).
    __array_ufunc__ = None
    __hash__ = None  # mutable, as in Warp

    def __init__(self, *args, **kwargs):
        self._v = self._wp_parse_(args, kwargs)

    # ------------------------------------------------------------ building

    @classmethod
    def _wp_wrap_(cls, arr):
        """An instance holding arr (converted to the dtype and shape; copied)."""
        obj = cls.__new__(cls)
        st = cls._wp_scalar_type_
        with np.errstate(all="ignore"):
            obj._v = np.array(arr, dtype=st._np_dtype_).reshape(cls._shape_)
            if st._wp_np_dtype_ != st._np_dtype_:  # bfloat16: float32 values rounded to it
                obj._v = st._wp_decode_(st._wp_encode_(obj._v))
        return obj

    @classmethod
    def _zeros(cls):
        return np.zeros(cls._shape_, dtype=cls._wp_scalar_type_._np_dtype_)

    @classmethod
    def _splat(cls, v):
        st = cls._wp_scalar_type_
        return np.full(cls._shape_, convert(st, v, wrap=True, what=f"{cls.__name__}()"),
                       dtype=st._np_dtype_)

    @classmethod
    def _components(cls, values, wrap=True, what=None):
        """values (numbers, flat) converted to the scalar type, shaped as one element."""
        st = cls._wp_scalar_type_
        out = [convert(st, v, wrap=wrap, what=what) for v in values]
        return np.array(out, dtype=st._np_dtype_).reshape(cls._shape_)

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        """Constructor arguments -> components (families override)."""
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        return cls._parse_common(args)

    @classmethod
    def _parse_common(cls, args, count_msg=None):
        """0 args: zeros; 1 number: every component; 1 value of this family and shape: a
        copy (converting the dtype); 1 other sequence: its items taken as the arguments,
        as Warp does (vec3([1, 2]) is vec3(1, 2)); _length_ numbers: the components
        (row-major)."""
        n = len(args)
        what = f"{cls.__name__}()"
        if n == 0:
            return cls._zeros()
        if n == 1 and is_number(args[0]):
            return cls._splat(args[0])
        if n == 1:
            a = args[0]
            same = isinstance(a, Value) and a._wp_family_ == cls._wp_family_ and a._shape_ == cls._shape_
            if not same and hasattr(a, "__len__") and not isinstance(a, (str, bytes)):
                return cls._wp_parse_(tuple(a), {})
            return cls._wp_storage_(a, wrap=True, what=what)
        if n == cls._length_ and all(is_number(a) for a in args):
            return cls._components(args, what=what)
        raise ValueError(count_msg or f"Invalid number of arguments in {cls._wp_ctor_kind_} constructor, "
                                      f"expected {cls._length_} elements, got {n}")

    # ------------------------------------------------------------ protocol

    @classmethod
    def _wp_storage_(cls, value, wrap=False, what=None):
        def fail(exc, msg):
            raise exc(f"{what} expects {cls._wp_type_name_}, {msg}" if what else msg)

        if isinstance(value, Value):
            if type(value) is cls:
                return value._v.copy()
            other = type(value)
            if other._wp_family_ == cls._wp_family_ and other._shape_ == cls._shape_ and wrap:
                # Constructors convert between dtypes (vec3(vec3d(...))), as in Warp.
                with np.errstate(all="ignore"):
                    return value._v.astype(cls._wp_scalar_type_._np_dtype_)
            fail(TypeError, f"got {other._wp_type_name_}")
        if is_number(value):
            fail(TypeError, f"got a single value of type {type(value).__name__} (construct it "
                            f"explicitly, e.g. {cls.__name__}(...))")
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            fail(TypeError, f"got {type(value).__name__}")
        flat = _flatten(value)
        if flat is None:
            fail(TypeError, f"got {type(value).__name__} {value!r}")
        shape, items = flat
        if shape != cls._shape_ and shape != (cls._length_,):
            fail(TypeError,
                 f"got a sequence of shape {shape}; expected {cls._shape_}"
                 if len(shape) > 1 or len(cls._shape_) > 1 else
                 f"got a sequence of {shape[0] if shape else 0} components; expected "
                 f"{cls._length_}")
        try:
            return cls._components(items, wrap=wrap)
        except (TypeError, ValueError) as e:
            fail(type(e), str(e))

    @classmethod
    def from_ptr(cls, ptr):
        """Warp's value read from address `ptr` of this process (an element of a CPU array
        mapped here: ``a.ptr + i * a.strides[0]``); RuntimeError for a null pointer, as in
        Warp. Any other address is read as it is, as Warp reads it."""
        if not ptr:
            raise RuntimeError("NULL pointer exception")
        import ctypes

        from . import element_shape, numpy_dtype, type_size_in_bytes
        raw = np.frombuffer(ctypes.string_at(int(ptr), type_size_in_bytes(cls)), dtype=numpy_dtype(cls))
        return cls._wp_from_storage_(raw.reshape(element_shape(cls)).copy())

    @classmethod
    def _wp_from_storage_(cls, raw):
        return cls._wp_wrap_(cls._wp_scalar_type_._wp_decode_(raw))

    @classmethod
    def _wp_components_(cls, value) -> list:
        return cls._wp_storage_(value, wrap=True).reshape(-1).tolist()

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        raise NotImplementedError

    @classmethod
    def _wp_fill_ctor_(cls, call, span):
        call.kind = ir_pb2.CALLEE_BUILTIN
        call.callee = cls._wp_builtin_

    # ------------------------------------------------------------ values

    def __array__(self, dtype=None, copy=None):
        return self._v.astype(dtype) if dtype is not None else self._v.copy()

    def __len__(self):
        return self._shape_[0]

    def __bytes__(self):
        """The components as stored (C layout), as bytes() of a Warp value gives."""
        return np.asarray(self._wp_scalar_type_._wp_encode_(self._v)).tobytes()

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key):
        """v[i]: a component (Warp 1.19: a Python number for float32, int32 and bool, an
        instance of the scalar type otherwise, see scalar.export); v[a:b]: a vector."""
        if isinstance(key, slice):
            from .vector import vector

            part = self._v.reshape(-1)[key]
            return vector(len(part), self._wp_scalar_type_)._wp_wrap_(part)
        i = self._index(key, key_error="int or slice")
        return export(self._wp_scalar_type_, self._v.reshape(-1)[i].item())

    def __setitem__(self, key, value):
        flat = self._v.reshape(-1)
        if isinstance(key, slice):
            self._assign_slice(flat, key, value)
            return
        flat[self._index(key, key_error="int or slice")] = self._assigned(value)

    def _assigned(self, value):
        """value as a component to store, with Warp's message when it cannot be one."""
        st = self._wp_scalar_type_
        try:
            return convert(st, value, wrap=True)
        except (TypeError, ValueError):
            raise TypeError(f"Expected to assign a `{st._wp_name_}` value but got "
                            f"`{type(value).__name__}` instead") from None

    def _assign_slice(self, flat, key, value):
        """flat[key] = value: a scalar fills the slice, a sequence of as many scalars sets
        it. As in Warp, 16-bit float types convert the values before the size check, the
        others after (which error a bad sequence gets follows)."""
        st = self._wp_scalar_type_
        idx = range(len(flat))[key]
        if is_number(value):
            c = self._assigned(value)
            for k in idx:
                flat[k] = c
            return
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError(f"Expected to assign a slice from a sequence of values but got "
                            f"`{type(value).__name__}` instead")
        values = list(value)

        def converted():
            out = []
            for x in values:
                try:
                    out.append(convert(st, x, wrap=True))
                except (TypeError, ValueError):
                    raise TypeError(f"Expected to assign a slice from a sequence of `{st._wp_name_}` "
                                    f"values but got `{type(x).__name__}` instead") from None
            return out

        if st._size_ == 2 and st._kind_ == "float":
            values = converted()
        if len(values) != len(idx):
            raise ValueError("Can only assign sequence of same size")
        for k, c in zip(idx, converted()):
            flat[k] = c

    def _index(self, i, extent=None, key_error=None):
        """i (an integer: Python, NumPy or Warp) as an index in [0, extent). Anything else is
        Warp's KeyError naming the keys taken (`key_error`), or a TypeError without one."""
        if isinstance(i, (_Scalar, np.integer)) and not isinstance(i, (np.bool_,)):
            i = int(i)
        if not isinstance(i, numbers.Integral) or isinstance(i, bool):
            if key_error:
                raise KeyError(f"Invalid key {i}, expected {key_error}")
            raise TypeError(f"{type(self).__name__} indices must be integers, got "
                            f"{type(i).__name__}")
        n = self._shape_[0] if extent is None else extent
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for {type(self).__name__} "
                             f"(length {n})")
        return i % n

    def __copy__(self):
        return type(self)._wp_wrap_(self._v)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __eq__(self, other):
        if isinstance(other, Value):
            return other._shape_ == self._shape_ and bool(np.all(self._v == other._v))
        if isinstance(other, (list, tuple, np.ndarray)):
            try:
                o = np.asarray(other)
            except (TypeError, ValueError):
                return NotImplemented
            if o.shape == self._shape_ or o.shape == (self._length_,):
                return bool(np.all(self._v.reshape(o.shape) == o))
            return False
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self):
        """Warp's: the type as Warp spells it and each component's repr
        (vec4d([float64(1.0), ...]), vector(length=5, dtype=float32)([1.0, ...]))."""
        return f"{self._wp_type_name_}([{', '.join(repr(c) for c in self)}])"

    def __str__(self):
        return str(self._v.tolist())

    # ------------------------------------------------------------ arithmetic

    def _scalar(self, other):
        """other as a 0-d array of our dtype when it is a scalar; None otherwise."""
        st = self._wp_scalar_type_
        if isinstance(other, _Scalar):
            if type(other) is not st:
                raise TypeError(f"cannot combine {self._wp_type_name_} with {other._wp_name_} "
                                f"(Warp does not convert implicitly)")
            return np.asarray(other.value, dtype=st._np_dtype_)
        if isinstance(other, np.generic) and not isinstance(other, np.bool_):
            if np.dtype(type(other)) != st._np_dtype_:
                raise TypeError(f"cannot combine {self._wp_type_name_} with "
                                f"{np.dtype(type(other)).name} (Warp does not convert implicitly)")
            return np.asarray(other)
        if isinstance(other, numbers.Real):
            return np.asarray(convert(st, other, wrap=True, what=f"{self._wp_type_name_} arithmetic"),
                              dtype=st._np_dtype_)
        return None

    def _same(self, other, symbol):
        if isinstance(other, Value):
            if type(other) is not type(self):
                raise no_overload(_OPERATOR_BUILTINS.get(symbol, symbol), self, other)
            return other._v
        return None

    def _new(self, arr):
        return type(self)._wp_wrap_(arr)

    def _elementwise(self, other, op, symbol, reflected=False):
        o = self._same(other, symbol)
        if o is None and self._wp_scalar_add_:
            o = self._scalar(other)
        if o is None:
            return NotImplemented
        with np.errstate(all="ignore"):
            return self._new(op(o, self._v) if reflected else op(self._v, o))

    def __add__(self, other):
        return self._elementwise(other, np.add, "+")

    def __radd__(self, other):
        return self._elementwise(other, np.add, "+", True)

    def __sub__(self, other):
        return self._elementwise(other, np.subtract, "-")

    def __rsub__(self, other):
        return self._elementwise(other, np.subtract, "-", True)

    def _wp_mul_(self, other):
        """self * other for another Value (families override); NotImplemented if none."""
        return NotImplemented

    def _wp_rmul_(self, other):
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, Value):
            return self._wp_mul_(other)
        s = self._scalar(other)
        if s is None:
            return NotImplemented
        with np.errstate(all="ignore"):
            return self._new(self._v * s)

    def __rmul__(self, other):
        if isinstance(other, Value):
            return self._wp_rmul_(other)
        s = self._scalar(other)
        if s is None:
            return NotImplemented
        with np.errstate(all="ignore"):
            return self._new(s * self._v)

    def __truediv__(self, other):
        s = self._scalar(other)
        if s is None:
            return NotImplemented
        return self._new(_divide(self._v, s))

    def __rtruediv__(self, other):
        s = self._scalar(other)
        if s is None:
            return NotImplemented
        return self._new(_divide(s, self._v))

    def __mod__(self, other):
        """Componentwise C remainder (fmod: the dividend's sign) by a scalar or, for vectors,
        by a vector of the same type (v % v, as Warp's Python scope computes it)."""
        s = self._same(other, "%") if self._wp_scalar_add_ else None
        if s is None:
            s = self._scalar(other)
        if s is None:
            return NotImplemented
        if self._wp_scalar_type_._kind_ == "int" and np.any(s == 0):
            raise ZeroDivisionError(f"{self._wp_type_name_} modulo by zero")
        with np.errstate(all="ignore"):
            return self._new(np.fmod(self._v, s))

    def __neg__(self):
        with np.errstate(all="ignore"):
            return self._new(-self._v)

    def __pos__(self):
        return self._new(self._v)


def _divide(a, b):
    """a / b with the kernels' semantics: integers truncate toward zero."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise ZeroDivisionError("integer division by zero")
        with np.errstate(all="ignore"):
            q = a // b
            q = q + ((a % b != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
        return q
    with np.errstate(all="ignore"):
        return a / b


def _flatten(value):
    """(shape, flat list of numbers) of a nested sequence; None if it is ragged or not numeric."""
    if isinstance(value, Value):
        return value._shape_, value._v.reshape(-1).tolist()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            return None
        return value.shape, value.reshape(-1).tolist()
    if is_number(value):
        return (), [value]
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return None
    parts = [_flatten(v) for v in value]
    if any(p is None for p in parts):
        return None
    if not parts:
        return (0,), []
    inner = parts[0][0]
    if any(p[0] != inner for p in parts):
        return None
    return (len(parts),) + inner, [x for p in parts for x in p[1]]


def float_family_type(base, prefix: str, count: int, dtype, cache: dict, what: str):
    """The class of `base` (Quat, Transform) with `count` components of a float
    `dtype`: one per dtype (cached), named as Warp names it (quatd, transformh)."""
    st = scalar_type(dtype)
    if st not in (float16, bfloat16, float32, float64):
        raise TypeError(f"{what} dtype must be wp.float16, wp.bfloat16, wp.float32 or wp.float64, "
                        f"got {dtype!r}")
    cls = cache.get(st)
    if cls is None:
        suffix = SUFFIX[st]
        name = f"{prefix}{suffix}"
        cls = type(name, (base,), {
            "__slots__": (), "__module__": "warpd.types", "__qualname__": name,
            "_wp_scalar_type_": st, "_wp_np_dtype_": np.dtype((st._wp_np_dtype_, (count,))),
            "_wp_size_": count * st._size_, "_wp_align_": st._size_, "_wp_type_name_": name,
            "_wp_builtin_": prefix + ("" if st is float32 else suffix),
        })
        cache[st] = cls
    return cls
