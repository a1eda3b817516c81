"""Matrix types: ``wp.mat33``, ``wp.mat22d``, ``wp.spatial_matrix``,
``wp.types.matrix((3, 2), wp.float16)``.

A matrix type has a shape (rows, cols), each 1 to 64 with at most 1024
elements, and a scalar dtype (not bool); it is stored row-major.
``matrix(shape, dtype)`` returns the same class for the same arguments.

Python scope, as in Warp: ``mat22()`` is zero, ``mat22(s)`` fills it,
``mat22(1, 2, 3, 4)`` takes the elements row by row, ``mat22(row0, row1)``
takes rows (vectors or sequences), ``mat22([[1, 2], [3, 4]])`` a nested
sequence. ``m[i]`` is row i (a vector copy), ``m[i][j]`` and ``m[i, j]`` an
element; ``m * m`` and ``m @ m`` multiply matrices, ``m * v`` / ``m @ v`` and
``v * m`` / ``v @ m`` multiply by vectors; ``+``/``-`` with the same type,
``*``/``/`` by a scalar. ``np.array(m)`` has shape (rows, cols) (Warp's
ctypes-based matrices give a flat array; reshape works on both).
"""

from __future__ import annotations

import numpy as np

from ..v1 import ir_pb2
from .family import Value
from .generic import GenericValue, is_any_dim, is_generic
from .scalar import SUFFIX, bool_, convert, float16, float32, float64, is_number, scalar_type
from .vector import vector

MAX_DIM = 64
MAX_ELEMENTS = 1024


class Matrix(Value):
    """Base of the matrix types; make one with ``matrix(shape, dtype)``."""

    _wp_family_ = "matrix"
    __slots__ = ()

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        rows, cols = cls._shape_
        n = len(args)
        msg = (f"{cls.__name__}() takes 0 arguments, 1 value, {rows} rows or {rows * cols} "
               f"elements, got {n} arguments")
        if n == rows and n > 1 and not all(is_number(a) for a in args):
            out = cls._zeros()
            row_t = vector(cols, cls._wp_scalar_type_)
            for i, r in enumerate(args):
                if is_number(r):
                    raise ValueError(msg)
                out[i] = row_t._wp_storage_(r, wrap=True, what=f"{cls.__name__}() row {i}")
            return out
        return cls._parse_common(args, msg)

    @classmethod
    def _wp_typeref_(cls) -> ir_pb2.TypeRef:
        rows, cols = cls._shape_
        return ir_pb2.TypeRef(matrix=ir_pb2.MatrixType(rows=rows, cols=cols,
                                                       dtype=cls._wp_scalar_type_._proto_))

    @classmethod
    def _wp_fill_ctor_(cls, call, span):
        call.kind = ir_pb2.CALLEE_BUILTIN
        if cls._wp_builtin_:
            call.callee = cls._wp_builtin_
            return
        call.callee = "matrix"
        k = call.keywords.add(name="shape")
        k.value.span.CopyFrom(span)
        for d in cls._shape_:
            el = k.value.tuple.elements.add(span=span)
            el.constant.int_value = d
        k = call.keywords.add(name="dtype")
        k.value.span.CopyFrom(span)
        k.value.type_value.CopyFrom(cls._wp_scalar_type_._wp_typeref_())

    # ------------------------------------------------------------ indexing

    def _row_type(self):
        return vector(self._shape_[1], self._wp_scalar_type_)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError(f"{type(self).__name__} takes 1 or 2 indices, got {len(key)}")
            i = self._index(key[0])
            j = self._index(key[1], self._shape_[1])
            return self._v[i, j].item()
        if isinstance(key, slice):
            raise TypeError(f"{type(self).__name__} rows cannot be sliced")
        return self._row_type()._wp_wrap_(self._v[self._index(key)])

    def __setitem__(self, key, value):
        name = type(self).__name__
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError(f"{name} takes 1 or 2 indices, got {len(key)}")
            i = self._index(key[0])
            j = self._index(key[1], self._shape_[1])
            self._v[i, j] = convert(self._wp_scalar_type_, value, wrap=True, what=f"{name}[{i}, {j}]")
            return
        i = self._index(key)
        self._v[i] = self._row_type()._wp_storage_(value, wrap=True, what=f"{name}[{i}]")

    def __str__(self):
        rows = ",\n ".join(str(r) for r in self._v.tolist())
        return f"[{rows}]"

    # ------------------------------------------------------------ products

    def _product(self, a, b, other_t, left):
        st = self._wp_scalar_type_
        if other_t._wp_scalar_type_ is not st:
            x, y = (self, other_t) if left else (other_t, self)
            raise TypeError(f"cannot multiply {_tn(x)} by {_tn(y)} (Warp does not convert implicitly)")
        if a.shape[-1] != b.shape[0]:
            x, y = (self, other_t) if left else (other_t, self)
            raise ValueError(f"cannot multiply {_tn(x)} by {_tn(y)}: the shapes do not match")
        with np.errstate(all="ignore"):
            r = (a @ b).astype(st._np_dtype_)
        if r.ndim == 1:
            return vector(r.shape[0], st)._wp_wrap_(r)
        return matrix(r.shape, st)._wp_wrap_(r)

    def _wp_mul_(self, other):
        if other._wp_family_ in ("matrix", "vector"):
            return self._product(self._v, other._v, type(other), True)
        return NotImplemented

    def _wp_rmul_(self, other):
        if other._wp_family_ == "vector":
            return self._product(other._v, self._v, type(other), False)
        return NotImplemented

    def __matmul__(self, other):
        if isinstance(other, Value):
            return self._wp_mul_(other)
        return NotImplemented

    def __rmatmul__(self, other):
        if isinstance(other, Value):
            return self._wp_rmul_(other)
        return NotImplemented


def _tn(t):
    return t._wp_type_name_


_CACHE: dict = {}


def matrix(shape, dtype=float32):
    """The matrix type of `shape` (rows, cols) with scalar type `dtype`; with a
    dimension or `dtype` typing.Any (or wp.Float...), a generic hint (generic.py)."""
    if is_generic(dtype) or (isinstance(shape, (tuple, list)) and any(is_any_dim(d) for d in shape)):
        return GenericValue("matrix", tuple(shape), dtype, f"matrix(shape={tuple(shape)!r}, dtype={dtype!r})")
    st = scalar_type(dtype)
    if st is None:
        raise TypeError(f"matrix dtype must be a scalar type such as wp.float32, got {dtype!r}")
    try:
        rows, cols = (int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"matrix shape must be (rows, cols), got {shape!r}") from None
    if not (1 <= rows <= MAX_DIM and 1 <= cols <= MAX_DIM and rows * cols <= MAX_ELEMENTS):
        raise ValueError(f"matrix shape ({rows}, {cols}) is out of range (each dimension 1 to "
                         f"{MAX_DIM}, at most {MAX_ELEMENTS} elements)")
    cls = _CACHE.get((rows, cols, st))
    if cls is None:
        cls = _make(rows, cols, st)
        _CACHE[(rows, cols, st)] = cls
    return cls


def _make(rows, cols, st):
    suffix = SUFFIX[st]
    builtin_suffix = "" if st is float32 else suffix
    if rows == cols and 2 <= rows <= 4 and st is not bool_:
        name = type_name = f"mat{rows}{cols}{suffix}"
        builtin = f"mat{rows}{cols}{builtin_suffix}"
    else:
        type_name = f"matrix(shape=({rows}, {cols}), dtype={st._wp_name_})"
        builtin_suffix = "" if st is bool_ else builtin_suffix
        if rows == cols == 6 and st in (float16, float32, float64):
            name, builtin = f"spatial_matrix{suffix}", f"spatial_matrix{builtin_suffix}"
        else:
            name = f"mat{rows}{cols}{suffix}" if rows < 10 and cols < 10 else f"mat{rows}x{cols}{suffix}"
            builtin = ""
    return type(name, (Matrix,), {
        "__slots__": (), "__module__": "warpd.types", "__qualname__": name,
        "_length_": rows * cols, "_shape_": (rows, cols), "_wp_scalar_type_": st,
        "_wp_np_dtype_": np.dtype((st._wp_np_dtype_, (rows, cols))),
        "_wp_size_": rows * cols * st._size_, "_wp_align_": st._size_,
        "_wp_type_name_": type_name, "_wp_builtin_": builtin,
    })


def is_matrix_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, Matrix) and t is not Matrix

