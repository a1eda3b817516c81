"""``wp.indexedarray``: the elements of an array picked by index arrays, as in Warp.

``wp.indexedarray(data, [idx0, None, ...])`` (or ``data[idx]``, ``data[:, idx]``
for an int32 index array ``idx``) views element
``data[idx0[i], j, ...]`` as its element ``(i, j, ...)``: a dimension with
an index array has the index array's length, the others keep data's extent.

In Python scope it reads and writes like Warp's: ``numpy()``, ``list()``,
``contiguous()``, ``fill_()``, ``zero_()``, ``assign()`` and ``wp.copy`` to or
from it. The client does the indexing with NumPy: it reads ``data`` (a
mapped array's memory directly), and a write changes the picked elements and
writes ``data`` back (after the device's queued work, in stream order).
Indices are checked when used (IndexError), not when the indexedarray is made.

As kernel arguments (``a: wp.indexedarray(dtype=float)``, ``wp.indexedarray[float,
Literal[2]]``, ``wp.indexedarray2d(dtype=...)``; also struct members) an indexed
array is sent as the handles of its data and index arrays; the daemon checks them
and writes Warp's ``indexedarray_t`` (docs/launch_abi.md), and every access in a
kernel is bounds-checked through the index arrays.
"""

from __future__ import annotations

import numpy as np

from . import types as wt
from .array import MAX_DIMS, _fill_bytes, _outer_shape, _to_numpy, array, elements_list


def _check_index_array(indices, device):
    if not isinstance(indices, array):
        raise ValueError(f"Indices must be a Warp array, got {type(indices)}")
    if indices.ndim != 1:
        raise ValueError(f"Index array must be one-dimensional, got {indices.ndim}")
    if indices.dtype is not wt.int32:
        raise ValueError(f"Index array must use int32, got dtype {wt.type_repr(indices.dtype)}")
    if indices.device != device:
        raise ValueError(f"Index array device ({indices.device} does not match data array device ({device}))")


def _refuse_capture(data):
    """Indexed writes are done by the client (or as one command per element), not by a
    command a graph could record: inside a capture they would run once, now."""
    if data._stream.capturing:
        raise NotImplementedError(
            "writes to an indexedarray (fill_, zero_, assign) cannot be captured in a graph: "
            "they are not stream commands; write the elements with a kernel, or outside the capture")


class indexedarray:
    """Indexed access to a subset of the elements of a ``wp.array``."""

    is_contiguous = False
    requires_grad = False
    grad = None
    _wp_indexed_ = True
    _wp_annotation_dtype_ = None  # an annotation's dtype (types.to_typeref)

    def __class_getitem__(cls, params):
        """``wp.indexedarray[float]``, ``wp.indexedarray[float, Literal[2]]``: annotations."""
        if isinstance(params, tuple):
            dtype, nd = params
            ndim = getattr(nd, "__args__", (nd,))[0]  # typing.Literal[2] or 2
            return cls(dtype=dtype, ndim=int(ndim))
        return cls(dtype=params)

    def __init__(self, data: array | None = None, indices=None, dtype=None, ndim: int | None = None):
        self.data = data
        self.indices = [None] * MAX_DIMS
        if data is None:  # an annotation
            self.dtype = wt.canonical_dtype(dtype) if dtype is not None else None
            self._wp_annotation_dtype_ = self.dtype
            self.ndim = int(ndim) if ndim is not None else 1
            if not 1 <= self.ndim <= MAX_DIMS:
                raise ValueError(f"indexedarray ndim must be 1 to {MAX_DIMS}, got {self.ndim}")
            self.device = None
            self.shape = (0,) * self.ndim
            self.size = 0
            return
        if not isinstance(data, array):
            raise ValueError("Indexed array data must be a Warp array")
        data._check_live()
        if dtype is not None and wt.canonical_dtype(dtype) is not data.dtype:
            raise ValueError(f"Requested dtype ({wt.type_repr(dtype)}) does not match dtype of data array "
                             f"({wt.type_repr(data.dtype)})")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"Requested dimensionality ({ndim}) does not match dimensionality of data array "
                             f"({data.ndim})")
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.device = data.device
        shape = list(data.shape)
        if indices is not None:
            if isinstance(indices, (list, tuple)):
                if len(indices) > self.ndim:
                    raise ValueError(f"Number of indices provided ({len(indices)}) exceeds number of "
                                     f"dimensions ({self.ndim})")
                for d, idx in enumerate(indices):
                    if idx is not None:
                        _check_index_array(idx, data.device)
                        self.indices[d] = idx
                        shape[d] = len(idx)
            elif isinstance(indices, array):
                _check_index_array(indices, data.device)
                self.indices[0] = indices
                shape[0] = len(indices)
            else:
                raise ValueError("Indices must be a single Warp array or a list of Warp arrays")
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        if self.data is None:
            return f"indexedarray(dtype={wt.type_repr(self.dtype) if self.dtype else None}, ndim={self.ndim})"
        return (f"indexedarray(shape={self.shape}, dtype={wt.type_name(self.dtype)}, "
                f"device=\"{self.device}\")")

    def __str__(self):
        return repr(self) if self.data is None else str(self.numpy())

    def _check_live(self):
        if self.data is None:
            raise TypeError("this wp.indexedarray is a type annotation, not an indexed array")
        self.data._check_live()

    def _selector(self) -> tuple:
        """The NumPy index (outer indexing, np.ix_) that picks the elements from data's values."""
        parts = []
        for d in range(self.ndim):
            idx = self.indices[d]
            if idx is None:
                parts.append(np.arange(self.data.shape[d]))
            else:
                values = idx.numpy().astype(np.int64)
                bad = (values < 0) | (values >= self.data.shape[d])
                if bad.any():
                    k = int(np.argmax(bad))
                    raise IndexError(f"index {int(values[k])} at position {k} of the index array of "
                                     f"dimension {d} is out of range for extent {self.data.shape[d]}")
                parts.append(values)
        return np.ix_(*parts)

    # ------------------------------------------------------------- reads

    def numpy(self) -> np.ndarray:
        """A contiguous NumPy copy of the picked elements (waits for queued work)."""
        self._check_live()
        return np.ascontiguousarray(self.data.numpy()[self._selector()])

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def list(self) -> list:
        return elements_list(self.numpy(), self.dtype)

    def contiguous(self) -> array:
        """A new array holding the picked elements."""
        self._check_live()
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def to(self, device):
        self._check_live()
        return array(self.numpy(), dtype=self.dtype, device=device)

    # ------------------------------------------------------------ writes

    def _write(self, values: np.ndarray):
        """data[selector] <- values (broadcast), in stream order."""
        self._check_live()
        data = self.data
        _refuse_capture(data)
        if wt.holds_array(self.dtype):
            # Element by element: a whole-array write-back would clear the other elements'
            # bound arrays (never shown to the client).
            flat = np.broadcast_to(values, self.shape).reshape(-1)
            it = iter(range(flat.shape[0]))
            self._fill_each(lambda v: v.assign(flat[next(it)].reshape(1)))
            return
        sel = self._selector()
        local = data._local_view()
        if local is not None:
            data._rt.synchronize(data.device)  # queued work first
            local[sel] = values
            return
        current = data.numpy().copy()
        current[sel] = values
        data._upload(current)

    def assign(self, src):
        """The picked elements <- src (an array, indexed array, NumPy array or sequence)."""
        self._check_live()
        if isinstance(src, (array, indexedarray)):
            src = src.numpy()
        values = _to_numpy(src, self.dtype)
        if _outer_shape(values, self.dtype) != self.shape:
            raise RuntimeError(f"Incompatible array shapes: destination shape={self.shape}, "
                               f"source shape={_outer_shape(values, self.dtype)}")
        self._write(values)

    def _fill_each(self, fill):
        """fill(view) for a one-element view of data at each picked element: the daemon writes
        them (stream commands), so elements of structs holding arrays keep their bound arrays,
        which the client never sees and cannot write back (_write would clear them)."""
        data = self.data
        _refuse_capture(data)
        for coords in np.array(np.meshgrid(*[np.ravel(p) for p in self._selector()], indexing="ij")).reshape(
                self.ndim, -1).T:
            fill(data[tuple(slice(int(c), int(c) + 1) for c in coords)])

    def fill_(self, value):
        self._check_live()
        if self.size == 0:
            return
        if wt.holds_array(self.dtype):
            self._fill_each(lambda v: v.fill_(value))
            return
        element = np.frombuffer(_fill_bytes(self.dtype, value), dtype=wt.numpy_dtype(self.dtype))
        self._write(element.reshape(wt.element_shape(self.dtype)) if wt.element_shape(self.dtype)
                    else element[0])

    def zero_(self):
        # Zero bytes: a value of any dtype (structs too, where fill_(0) is no value).
        self._check_live()
        if self.size == 0:
            return
        if wt.holds_array(self.dtype):
            self._fill_each(lambda v: v.zero_())
            return
        self._write(np.zeros(wt.element_shape(self.dtype), dtype=wt.numpy_dtype(self.dtype)))

    # ------------------------------------------------------------ kernels

    def _wp_slot_(self, device=None) -> np.ndarray:
        """The 112 argument bytes (docs/launch_abi.md) as 14 uint64: data's handle, then at
        word 8 + d the handle of dimension d's index array (0: not indexed)."""
        self._check_live()
        if device is not None and self.device != device:
            raise ValueError(f"an indexedarray on device \"{self.device}\" is passed to a kernel "
                             f"launched on \"{device}\"")
        slot = np.zeros(14, dtype=np.uint64)
        slot[0] = self.data.handle
        for d, idx in enumerate(self.indices):
            if idx is not None:
                idx._check_live()
                if not idx.is_contiguous:
                    raise ValueError(f"the index array of dimension {d} must be contiguous")
                slot[8 + d] = idx.handle
        return slot


class _FixedNdim:
    def __init__(self, ndim):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"indexedarray{ndim}d"

    def __call__(self, *args, **kwargs):
        return indexedarray(*args, ndim=self.ndim, **kwargs)

    def __getitem__(self, dtype):
        return indexedarray(dtype=dtype, ndim=self.ndim)


indexedarray1d = _FixedNdim(1)
indexedarray2d = _FixedNdim(2)
indexedarray3d = _FixedNdim(3)
indexedarray4d = _FixedNdim(4)
