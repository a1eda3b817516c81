"""The geometry of Python-scope array views, by Warp 1.19's rules.

Slicing and indexing (``a[1:3]``, ``a[:, 1]``, ``a[::2]``, ``a[i]`` of an
n-d array), ``reshape``, ``flatten``, ``transpose`` and ``view(dtype)`` make
arrays that share their base's memory. This module only computes what such
a view is, from the base's shape, byte strides and dtype:

    Geometry(offset=16, shape=(3,), strides=(16,), dtype=None)

(``offset`` in bytes from the base's element 0; ``dtype`` None: the
base's), raising Warp's exceptions with Warp's messages for what Warp
refuses. array.py then asks the daemon for a handle to that view
(CreateView), and the daemon checks it again (runtime/objects/
array_view.h): nothing here is trusted for safety.

What Warp refuses, so do we: reading one element (``a[i]`` of a 1-D array,
``a[i, j]`` of a 2-D one: RuntimeError "Item indexing is not supported"),
negative steps (their extent comes out negative: ValueError "Array shapes
must be non-negative"), a zero step, out-of-range starts and stops (no
clamping, unlike NumPy), Ellipsis, None and NumPy integer scalars as
indices, reshaping or flattening a non-contiguous array.
"""

from __future__ import annotations

import numbers
import operator
from typing import NamedTuple

from . import types as wt

MAX_DIMS = 4


class Geometry(NamedTuple):
    offset: int      # bytes from the base's element 0
    shape: tuple
    strides: tuple   # bytes
    dtype: object    # None: the base's
    index_arrays: dict | None = None  # dim -> index array (a[idx] makes an indexedarray)


def contiguous_strides(shape, itemsize: int) -> tuple:
    """Row-major byte strides of `shape`, as Warp computes them (a zero extent
    makes the strides outside it zero)."""
    strides = [0] * len(shape)
    acc = itemsize
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def _is_index_array(k) -> bool:
    return getattr(k, "_wp_array_", False) and getattr(k, "handle", None) is not None


def subscript(shape, strides, key) -> Geometry:
    """The view ``a[key]`` of an array of `shape` and byte `strides`."""
    ndim = len(shape)
    if isinstance(key, int):
        if ndim == 1:
            raise RuntimeError("Item indexing is not supported on wp.array objects")
        key = (key,)
    elif isinstance(key, slice) or _is_index_array(key):
        key = (key,)
    elif isinstance(key, tuple):
        if len(key) > ndim:
            raise IndexError(f"too many indices for array: array is {ndim}-dimensional, "
                             f"but {len(key)} were indexed")
        ints_only = all(isinstance(k, numbers.Integral) for k in key)
        if ints_only and len(key) == ndim:
            raise RuntimeError("Item indexing is not supported on wp.array objects")
    else:
        raise RuntimeError(f"Invalid index: {key}")
    key = tuple(key) + (slice(None),) * (ndim - len(key))

    offset = 0
    new_shape, new_strides = [], []
    index_arrays = {}
    for d, k in enumerate(key):
        extent, stride = shape[d], strides[d]
        if isinstance(k, slice):
            try:
                start = 0 if k.start is None else operator.index(k.start)
                stop = extent if k.stop is None else operator.index(k.stop)
                step = 1 if k.step is None else operator.index(k.step)
            except TypeError:
                raise RuntimeError(f"Invalid index: {k}") from None
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if start < 0:
                start += extent
            if stop < 0:
                stop += extent
            if not 0 <= start < extent or not 0 <= stop <= extent or stop < start:
                # An empty slice at the end (a[n:n]) is refused too, as in Warp;
                # an empty one inside (a[1:1]) is not.
                raise RuntimeError(f"Invalid indexing in slice: {start}:{stop}:{step}")
            n = -((stop - start) // -step)
            if n < 0:
                raise ValueError(f"Array shapes must be non-negative, got {n} in dimension "
                                 f"{len(new_shape)}")
            if step < 0:
                # Warp builds a zero-size view with a negative stride here; the
                # daemon has no negative strides.
                raise ValueError(f"slice {k.start}:{k.stop}:{k.step}: negative steps are not "
                                 f"supported in Python scope (index the array in a kernel)")
            new_shape.append(n)
            new_strides.append(stride * step)
            offset += stride * start
        elif _is_index_array(k):
            index_arrays[d] = k
            new_shape.append(extent)
            new_strides.append(stride)
        elif isinstance(k, numbers.Integral):  # inside a tuple NumPy integers work too, as in Warp
            i = operator.index(k)
            i = i + extent if i < 0 else i
            if not 0 <= i < extent:
                raise RuntimeError(f"Invalid indexing in slice: {k}")
            offset += stride * i
        else:
            raise RuntimeError(f"Invalid index: {k}")
    return Geometry(offset, tuple(new_shape), tuple(new_strides), None, index_arrays or None)


def reshape(shape, size: int, is_contiguous: bool, itemsize: int, new_shape) -> Geometry:
    """``a.reshape(new_shape)`` (one extent may be -1); contiguous arrays only."""
    if not is_contiguous:
        raise RuntimeError("Reshaping non-contiguous arrays is unsupported.")
    if new_shape is None:
        raise RuntimeError("shape parameter is required.")
    if isinstance(new_shape, int):
        new_shape = (new_shape,)
    new_shape = tuple(int(s) for s in new_shape)
    if len(new_shape) > MAX_DIMS:
        raise RuntimeError(f"Arrays may only have {MAX_DIMS} dimensions maximum, trying to create "
                           f"array with {len(new_shape)} dims.")
    if not new_shape:
        raise RuntimeError("cannot reshape an array into a 0-dimensional shape")
    if new_shape.count(-1) > 1:
        raise RuntimeError("Cannot infer shape if more than one index is -1.")
    if -1 in new_shape:
        known = 1
        for s in new_shape:
            if s != -1:
                known *= s
        inferred = size // known if known else 0
        new_shape = tuple(inferred if s == -1 else s for s in new_shape)
    total = 1
    for s in new_shape:
        total *= s
    if any(s < 0 for s in new_shape) or total != size:
        raise RuntimeError(f"cannot reshape array of shape {shape} (size {size}) into shape "
                           f"{new_shape} (size {total})")
    return Geometry(0, new_shape, contiguous_strides(new_shape, itemsize), None)


def transpose(shape, strides, axes) -> Geometry:
    """``a.transpose(axes)``: the axes permuted (reversed when None)."""
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim))[::-1]
    elif len(axes) != ndim:
        raise RuntimeError("Length of parameter axes must be equal in length to array shape")
    for a in axes:
        if not isinstance(a, int):
            raise RuntimeError(f"axis index {a} is not of type int")
        if not -ndim <= a < ndim:
            raise RuntimeError(f"axis index {a} must be smaller than the number of axes in array")
    axes = tuple(a % ndim for a in axes)
    if sorted(axes) != list(range(ndim)):
        raise RuntimeError(f"axes {tuple(axes)} are not a permutation of the array's {ndim} axes")
    return Geometry(0, tuple(shape[a] for a in axes), tuple(strides[a] for a in axes), None)


def _repr(t) -> str:
    return wt.type_repr(wt.canonical_dtype(t))


def view_dtype(shape, strides, dtype, new_dtype) -> Geometry:
    """``a.view(new_dtype)``: the same bytes as another element type of the same
    size, or a vector/matrix array as its scalars (extra trailing dims) and back."""
    dtype = wt.canonical_dtype(dtype)
    new_dtype = wt.canonical_dtype(new_dtype)
    size, new_size = wt.type_size_in_bytes(dtype), wt.type_size_in_bytes(new_dtype)
    if new_size == size:
        return Geometry(0, tuple(shape), tuple(strides), new_dtype)
    src_scalar = wt.type_scalar(dtype)
    dst_scalar = wt.type_scalar(new_dtype)
    if wt.type_is_scalar(new_dtype) and src_scalar is not None and wt.element_shape(dtype):
        if new_size != wt.type_size_in_bytes(src_scalar):
            raise TypeError(f"cannot create an array view with dtype {_repr(new_dtype)} from source dtype "
                            f"{_repr(dtype)}: source scalar dtype {_repr(src_scalar)} has size "
                            f"{wt.type_size_in_bytes(src_scalar)} bytes, but target dtype has size {new_size} bytes")
        eshape = wt.element_shape(dtype)
        if len(shape) + len(eshape) > MAX_DIMS:
            raise RuntimeError(f"Arrays may only have {MAX_DIMS} dimensions maximum, trying to create "
                               f"array with {len(shape) + len(eshape)} dims.")
        return Geometry(0, tuple(shape) + eshape,
                        tuple(strides) + contiguous_strides(eshape, new_size), new_dtype)
    if wt.type_is_scalar(dtype) and dst_scalar is not None and wt.element_shape(new_dtype):
        if size != wt.type_size_in_bytes(dst_scalar):
            raise TypeError(f"cannot create an array view with dtype {_repr(new_dtype)} from source dtype "
                            f"{_repr(dtype)}: source dtype has size {size} bytes, but target scalar "
                            f"dtype {_repr(dst_scalar)} has size {wt.type_size_in_bytes(dst_scalar)} bytes")
        eshape = wt.element_shape(new_dtype)
        k = len(eshape)
        if len(shape) < k or tuple(shape[-k:]) != eshape:
            raise RuntimeError(f"The shape of the source array {tuple(shape)} is not compatible with the "
                               f"requested data type {wt.type_name(new_dtype)}")
        if tuple(strides[-k:]) != contiguous_strides(eshape, size):
            raise RuntimeError(f"The inner strides of the source array {tuple(strides)} are not "
                               f"compatible with the requested data type {wt.type_name(new_dtype)}")
        # Warp has no 0-d arrays: one vector or matrix is a 1-element array.
        return Geometry(0, tuple(shape[:-k]) or (1,), tuple(strides[:-k]) or (new_size,), new_dtype)
    raise TypeError(f"cannot create an array view with dtype {_repr(new_dtype)} from source dtype "
                    f"{_repr(dtype)}: source dtype has size {size} bytes, but target dtype has size "
                    f"{new_size} bytes")
