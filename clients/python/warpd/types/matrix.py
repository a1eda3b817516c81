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

import numbers

import numpy as np

from ..v1 import ir_pb2
from .family import Value, _flatten
from .generic import GenericValue, is_any_dim, is_generic
from .scalar import SUFFIX, _Scalar, bool_, export, float16, float32, float64, is_number, scalar_type
from .vector import vector

MAX_DIM = 64
MAX_ELEMENTS = 1024


class Matrix(Value):
    """Base of the matrix types; make one with ``matrix(shape, dtype)``."""

    _wp_family_ = "matrix"
    _wp_generic_type_str_ = "mat_t"  # Warp's name of the family's C++ template
    __slots__ = ()

    _wp_ctor_kind_ = "matrix"

    @classmethod
    def _wp_parse_(cls, args, kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        rows, cols = cls._shape_
        n = len(args)
        if n == rows and n > 1 and n != rows * cols:
            # Rows (sequences or vectors; Warp itself refuses vectors here and points to
            # wp.matrix_from_rows, which warpd's constructor does for them).
            out = cls._zeros()
            row_t = vector(cols, cls._wp_scalar_type_)
            for i, r in enumerate(args):
                if is_number(r) or isinstance(r, (str, bytes)) or not hasattr(r, "__len__") \
                        or len(r) != cols:
                    raise TypeError(f"Invalid argument in matrix constructor, expected row of "
                                    f"length {cols}, got {r}")
                out[i] = row_t._wp_storage_(r, wrap=True, what=f"{cls.__name__}() row {i}")
            return out
        return cls._parse_common(args)

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

    def _int_key(self, key):
        """key as a Python int when it is an integer (Python, NumPy or Warp); else None."""
        if isinstance(key, (_Scalar, np.integer)) and not isinstance(key, np.bool_):
            if isinstance(key, _Scalar) and key._kind_ != "int":
                return None
            return int(key)
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            return key
        return None

    def _pair(self, key):
        """The numpy key of m[i, j] (ints checked against the shape, slices kept)."""
        if len(key) != 2:
            raise KeyError(f"Invalid key, expected one or two indices, got {len(key)}")
        out = []
        for k, extent in zip(key, self._shape_):
            if isinstance(k, slice):
                out.append(k)
                continue
            i = self._int_key(k)
            if i is None:
                raise KeyError(f"Invalid key {key}, expected int or pair of ints")
            if not -extent <= i < extent:
                raise IndexError(f"index {i} is out of range for {type(self).__name__} "
                                 f"(extent {extent})")
            out.append(i % extent)
        return tuple(out)

    def _part_type(self, part):
        st = self._wp_scalar_type_
        if part.ndim == 1:
            return vector(part.shape[0], st)
        # An empty block is (0, 0) whichever side is empty, as in Warp.
        return matrix((0, 0) if 0 in part.shape else part.shape, st)

    def __getitem__(self, key):
        """m[i]: row i (a vector copy); m[i, j]: an element (as vectors' components,
        see scalar.export); m[a:b], m[i, a:b], m[a:b, j], m[a:b, c:d]: a matrix or vector copy."""
        if isinstance(key, tuple):
            k = self._pair(key)
            part = self._v[k]
            if part.ndim == 0:
                return export(self._wp_scalar_type_, part.item())
            return self._part_type(part)._wp_wrap_(part)
        if isinstance(key, slice):
            part = self._v[key]
            return self._part_type(part)._wp_wrap_(part)
        i = self._int_key(key)
        if i is None:
            raise KeyError(f"Invalid key {key}, expected int or pair of ints")
        return self.get_row(i)

    def __setitem__(self, key, value):
        if isinstance(key, tuple):
            k = self._pair(key)
            target = self._v[k]
            if target.ndim == 0:
                if not is_number(value) and hasattr(value, "__len__") \
                        and not isinstance(value, (str, bytes)):
                    shape = np.shape(np.asarray(value, dtype=object))
                    raise RuntimeError(f"The provided value is expected to be a scalar but got an "
                                       f"object of shape {shape} instead")
                self._v[k] = self._assigned(value)
                return
            self._v[k] = self._block(value, target.shape)
            return
        if isinstance(key, slice):
            self._v[key] = self._block(value, self._v[key].shape)
            return
        i = self._int_key(key)
        if i is None:
            raise KeyError(f"Invalid key {key}, expected int or pair of ints")
        self.set_row(i, value)

    def _block(self, value, shape):
        """value (a scalar, or values of `shape`) converted for a sliced assignment."""
        st = self._wp_scalar_type_
        if is_number(value):
            return np.full(shape, self._assigned(value), dtype=st._np_dtype_)
        flat = _flatten(value)
        if flat is None or (flat[0] != shape and flat[0] != (int(np.prod(shape)),)):
            got = flat[0] if flat is not None else type(value).__name__
            raise RuntimeError(f"The shape of the provided value ({got}) isn't compatible with the "
                               f"given slice (expected {shape})")
        return np.array([self._assigned(x) for x in flat[1]], dtype=st._np_dtype_).reshape(shape)

    def _line(self, i, extent, what):
        j = self._int_key(i)
        if j is None:
            raise TypeError(f"{what} index must be an integer, got {type(i).__name__}")
        if not -extent <= j < extent:
            raise IndexError(f"Invalid {what} index")
        return j % extent

    def get_row(self, r):
        """Row r (negative counts from the end) as a new vector; IndexError "Invalid row
        index" when out of range, as in Warp."""
        return self._row_type()._wp_wrap_(self._v[self._line(r, self._shape_[0], "row")])

    def get_col(self, c):
        """Column c as a new vector; IndexError "Invalid column index" when out of range."""
        col_t = vector(self._shape_[0], self._wp_scalar_type_)
        return col_t._wp_wrap_(self._v[:, self._line(c, self._shape_[1], "column")])

    def set_row(self, r, v):
        """Sets row r to v: a scalar for every element, or one value per column."""
        i = self._line(r, self._shape_[0], "row")
        self._assign_slice(self._v[i], slice(None), v)

    def set_col(self, c, v):
        """Sets column c to v: a scalar for every element, or one value per row."""
        j = self._line(c, self._shape_[1], "col")
        col = self._v[:, j].copy()
        self._assign_slice(col, slice(None), v)
        self._v[:, j] = col

    def __repr__(self):
        return f"{self._wp_type_name_}({self._v.tolist()!r})"

    def __str__(self):
        rows = ",\n ".join(str(r) for r in self._v.tolist())
        return f"[{rows}]"

    # ------------------------------------------------------------ products

    def _product(self, a, b, other_t, left):
        st = self._wp_scalar_type_
        if other_t._wp_scalar_type_ is not st or a.shape[-1] != b.shape[0]:
            x, y = (self, other_t) if left else (other_t, self)
            raise RuntimeError(f"Couldn't find a function 'mul' compatible with the arguments '{_tn(x)}, {_tn(y)}'")
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
    # Dimension 0 exists as in Warp (an empty slice of rows, m[9:], has shape (0, 0)).
    if not (0 <= rows <= MAX_DIM and 0 <= cols <= MAX_DIM and rows * cols <= MAX_ELEMENTS):
        raise ValueError(f"matrix shape ({rows}, {cols}) is out of range (each dimension 0 to "
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

