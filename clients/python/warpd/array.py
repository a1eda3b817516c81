"""``wp.array``: an n-d array (1-4 dims) of any value type that lives in the daemon.

Element types are scalars, vectors, matrices, quaternions, transformations
and structs (see types/); their layout and NumPy form come from the type's
family protocol, so this file never asks which family a dtype is.

``wp.array(dtype=..., ndim=...)`` without data or shape is a kernel parameter
annotation; with data or a shape it allocates daemon memory and returns a
handle-backed array. Data moves in 2 MiB chunks (Upload/Download streams,
encoded and decoded here with wire.py: one copy of the bytes in Python each
way); fills, copies and frees are queued on the device's command stream.

A client on the daemon's host (connected over its Unix socket) maps CPU
arrays of 64 KiB or more (local_map.py): ``numpy()`` waits for the device's
queued work and returns a view of the array's memory, as Warp does for CPU
arrays (writing to it changes the array; it keeps the array alive), and
uploads are one copy into that memory; such arrays also have an
``__array_interface__``, and their DLPack export (``__dlpack__``,
``wp.to_dlpack``; interop.py) shares that memory. Otherwise ``numpy()``
returns a copy downloaded from the daemon, and DLPack exports a copy.

Views (``a[1:3]``, ``a[:, 1]``, ``reshape``, ``flatten``, ``transpose``,
``view(dtype)``; geometry and Warp's rules in array_view.py) are arrays of
their own daemon handle (CreateView) sharing the base's memory: kernels,
fills, copies and transfers use them like any array, and the daemon keeps
the memory while any view holds it. A view keeps its base object alive
(``_ref``, as in Warp) and is mapped through its root array: its
``numpy()`` is then a strided view of the root's mapping.
"""

from __future__ import annotations

import ctypes
import numbers
import operator
import weakref
from typing import Any

import grpc
import numpy as np

from . import array_view
from . import types as wt
from . import local_commands, local_map, wire
from .context import runtime
from .errors import ResourceExhaustedError, WarpdError, from_rpc_error
from .v1 import runtime_pb2

CHUNK_BYTES = 2 << 20
# From this size on, a local client moves a GPU array's bytes through CPU
# arrays mapped here and copies on the GPU's stream (the daemon's pinned
# staging) instead of gRPC messages (array._staged_upload, _staged_download).
HOST_STAGED_MIN_BYTES = 1 << 20
# ... in pieces of at most this many bytes, two CPU arrays at a time: the
# client fills one while the daemon copies the other (uploads).
HOST_STAGED_CHUNK_BYTES = 64 << 20
MAX_DIMS = 4
# What an empty array's __array_interface__ points at (NumPy wants a pointer, never reads it).
_EMPTY_DATA = ctypes.c_char(0)

# This process's live arrays by handle (handles are 64 random bits per session): a
# struct's array member read back from the daemon names its array by handle.
LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def normalize_shape(shape, what="shape") -> tuple:
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of ints, got {shape!r}") from None
    if not 1 <= len(shape) <= MAX_DIMS:
        raise ValueError(f"{what} {shape} has {len(shape)} dimensions; arrays have 1 to {MAX_DIMS}")
    for d, s in enumerate(shape):
        if s < 0:  # Warp's words
            raise ValueError(f"Array shapes must be non-negative, got {s} in dimension {d}")
    return shape


def _infer_dtype(data):
    if isinstance(data, array):
        return data.dtype
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, (wt.Value, wt.Struct, wt._Scalar)):
        return type(first)
    arr = np.asarray(data)
    st = wt.scalar_from_numpy(arr.dtype)
    if st is None:
        raise TypeError(f"cannot infer a Warp dtype from data of NumPy dtype {arr.dtype}; pass dtype=")
    return st


def _struct_records(data, dtype) -> np.ndarray:
    """data (a structured NumPy array, or nested sequences of struct instances) as records."""
    dt = dtype._wp_np_dtype_
    if isinstance(data, np.ndarray) and data.dtype.names is not None:
        if data.dtype == dt:
            return data
        try:
            return data.astype(dt)
        except (TypeError, ValueError) as e:
            raise TypeError(f"a structured array of dtype {data.dtype} does not fit struct "
                            f"{dtype.__name__} ({e})") from None
    shape, items = [], data
    while isinstance(items, (list, tuple)):
        shape.append(len(items))
        if not items:
            break
        items = items[0]
    if not shape:
        raise TypeError(f"an array of struct {dtype.__name__} needs a sequence of "
                        f"{dtype.__name__} instances or a NumPy structured array, got "
                        f"{type(data).__name__}; use wp.full() for a single value")
    out = np.zeros(tuple(shape), dtype=dt)
    for index in np.ndindex(*shape):
        item = data
        for k in index:
            item = item[k]
        try:
            out[index] = dtype._wp_storage_(item)
        except TypeError as e:
            raise TypeError(f"element {index if len(index) > 1 else index[0]} of the data: "
                            f"expected {dtype.__name__}, {e}") from None
    return out


def _to_numpy(data, dtype) -> np.ndarray:
    """data as a C-contiguous NumPy array in dtype's storage: (*shape, *element shape) of the
    scalar dtype, or (*shape) records for structs."""
    if wt.is_struct_type(dtype):
        return np.ascontiguousarray(_struct_records(data, dtype))
    st = wt.type_scalar(dtype)
    eshape = wt.element_shape(dtype)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], wt._Scalar):
        data = [v.value for v in data]
    arr = np.asarray(data)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"data of NumPy dtype {arr.dtype} cannot be stored as {wt.type_name(dtype)}")
    if st._wp_np_dtype_ != st._np_dtype_:
        # bfloat16: uint16 data is already its bits (as in Warp); other data rounds to it.
        if arr.dtype != st._wp_np_dtype_:
            arr = st._wp_encode_(arr.astype(st._np_dtype_))
    elif arr.dtype != st._np_dtype_:
        arr = arr.astype(st._np_dtype_)
    k = len(eshape)
    if k:
        # Warp's rules: trailing extents of 1 are dropped; then the inner
        # dimensions are the element's, or the last one is its component
        # count or a multiple of it ((4, 6) float data is (4, 2) vec3); data
        # of exactly one element is a 1-element array.
        n = int(np.prod(eshape))
        while arr.ndim > 1 and arr.shape[-1] == 1 and eshape[-1] != 1:
            arr = arr.reshape(arr.shape[:-1])
        if arr.ndim >= k and arr.shape[-k:] == eshape:
            pass
        elif arr.ndim >= 1 and arr.shape[-1] == n:
            arr = arr.reshape(arr.shape[:-1] + eshape)
        elif arr.ndim >= 1 and arr.shape[-1] % n == 0:
            arr = arr.reshape(arr.shape[:-1] + (arr.shape[-1] // n,) + eshape)
        else:
            want = f"{eshape}" if k > 1 else f"{n}"
            raise ValueError(f"data of shape {arr.shape} does not fit dtype {wt.type_name(dtype)}: "
                             f"expected trailing dimensions {want}"
                             + (f" or {n}" if k > 1 else "") + f" (or a last dimension that is a multiple of {n})")
        if arr.ndim == k:
            arr = arr.reshape((1,) + eshape)
    return np.ascontiguousarray(arr)


def _outer_shape(values: np.ndarray, dtype) -> tuple:
    k = len(wt.element_shape(dtype))
    return values.shape[:values.ndim - k] if k else values.shape



def elements_list(values: np.ndarray, dtype) -> list:
    """An array's elements (as numpy() gives them), flat: Python numbers, or instances of
    the value or struct type `dtype`."""
    eshape = wt.element_shape(dtype)
    if eshape or wt.is_struct_type(dtype):
        return [dtype._wp_from_storage_(e) for e in values.reshape((-1,) + eshape)]
    return dtype._wp_decode_(values.reshape(-1)).tolist()  # bfloat16: bits -> values

class array:
    """A daemon-resident array, or (without data or shape) a kernel parameter annotation."""

    # Set only on annotations: the element type (see types.to_typeref).
    _wp_annotation_dtype_ = None
    _wp_array_ = True
    # Views (see the module docstring): the array viewed (kept alive), the
    # root array whose memory it is, and the view's byte offset in the root.
    _ref = None
    _root = None
    _offset = 0
    _requires_grad = False
    _grad = None
    _retain_grad = False

    def __class_getitem__(cls, dtype):
        """``wp.array[float]``: the annotation ``wp.array(dtype=float)``."""
        return cls(dtype=dtype)

    def __init__(self, data=None, dtype: Any = Any, shape=None, strides=None, length=None,
                 ptr=None, capacity=None, device=None, pinned=False, copy=True, owner=False,
                 deleter=None, ndim=None, grad=None, requires_grad=False, retain_grad=False):
        self.handle = None
        self._requires_grad = False
        self._grad = None
        if retain_grad and not (requires_grad or grad is not None):
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(retain_grad)
        self._wants_grad = bool(requires_grad) or grad is not None
        self._given_grad = grad
        if length is not None and shape is None:
            shape = length
        if data is None and shape is None and ptr is None:
            # An annotation: wp.array(dtype=wp.vec3, ndim=2); wp.array(dtype=Any) is generic
            # (a kernel taking it is instantiated per argument types, kernel.py).
            self.dtype = dtype if wt.is_generic(dtype) else wt.canonical_dtype(dtype)
            self._wp_annotation_dtype_ = self.dtype
            self.ndim = int(ndim) if ndim is not None else 1
            if not 1 <= self.ndim <= MAX_DIMS:
                raise ValueError(f"array ndim must be 1 to {MAX_DIMS}, got {self.ndim}")
            self.shape = (0,) * self.ndim
            self.size = 0
            self.device = None
            return
        if ptr is not None:
            self._from_ptr(int(ptr), dtype, shape, strides, device)
            return
        if data is None:
            if dtype is Any:
                dtype = wt.float32
            self._allocate(normalize_shape(shape), dtype, device, zero=False)
            return
        if isinstance(data, array) and data.handle is not None:
            if (dtype is Any or wt.canonical_dtype(dtype) is data.dtype) and shape is None:
                self._allocate(data.shape, data.dtype, device if device is not None else data.device,
                               zero=False)
                copy_array(self, data)
                return
            # Another dtype or shape: its values, as Warp reads them through
            # the array interface (float32 (n, 3) data as n vec3).
            data = data.numpy()
        if dtype is Any:
            dtype = _infer_dtype(data)
        dtype = wt.canonical_dtype(dtype)
        values = _to_numpy(data, dtype)
        outer = _outer_shape(values, dtype)
        if shape is not None:
            shape = normalize_shape(shape)
            if int(np.prod(shape)) != int(np.prod(outer)):
                raise ValueError(f"data of shape {outer} cannot be viewed as an array of shape {shape}")
            outer = shape
        if len(outer) == 0:
            raise ValueError("cannot make an array from a single value; use wp.full() or a 1-element list")
        if ndim is not None and int(ndim) != len(outer):
            raise ValueError(f"data has {len(outer)} dimensions, ndim={ndim} was requested")
        if wt.holds_array(dtype):  # made with its contents (see _upload)
            self._allocate(normalize_shape(outer), dtype, device, zero=False, contents=values)
            return
        self._allocate(normalize_shape(outer), dtype, device, zero=False)
        self._upload(values, fresh=True)

    # ----------------------------------------------------------- allocation

    def _allocate(self, shape, dtype, device, zero, contents=None):
        rt = runtime()
        dev = rt.device(device)
        self.dtype = wt.canonical_dtype(dtype)
        self.shape = shape
        self.ndim = len(shape)
        self.size = int(np.prod(shape, dtype=np.int64)) if shape else 0
        self.device = dev
        request = runtime_pb2.CreateArrayRequest(
            session=rt.session, device=dev.alias, dtype=wt.to_typeref(self.dtype), shape=list(shape),
            init=runtime_pb2.ARRAY_INIT_ZEROS if zero else runtime_pb2.ARRAY_INIT_EMPTY)
        if contents is not None:
            request.init = runtime_pb2.ARRAY_INIT_CONTENTS
            request.contents = np.ascontiguousarray(contents).tobytes()
        try:
            resp = rt.call("CreateArray", request)
        except ResourceExhaustedError:
            # The CPU arrays kept for GPU transfers (_staging_pieces) give way first.
            if not _drop_staging(rt):
                raise
            resp = rt.call("CreateArray", request)
        self.handle = resp.handle
        LIVE[self.handle] = self
        self._segment = (resp.segment, resp.segment_offset)  # where it is, for a local map
        # local_map.Mapping once mapped; False: not mappable (the elements of a
        # struct holding arrays are descriptors only the daemon sees).
        self._mapping = False if wt.holds_array(self.dtype) else None
        self.strides = tuple(resp.strides) if resp.strides else _row_major_strides(
            shape, wt.type_size_in_bytes(self.dtype))
        self._rt = rt
        self._stream = rt.default_stream(dev)  # frees and transfers
        self._take_wanted_grad()

    def _take_wanted_grad(self):
        """The gradient the constructor asked for (grad= or requires_grad=), once the array exists."""
        if self.__dict__.pop("_wants_grad", False):
            given = self.__dict__.pop("_given_grad", None)
            if given is not None:
                self.grad = given
                self._requires_grad = True
            else:
                self.requires_grad = True

    @classmethod
    def _create(cls, shape, dtype, device, zero, requires_grad=False, retain_grad=False) -> array:
        if retain_grad and not requires_grad:
            raise ValueError("retain_grad=True requires requires_grad=True")
        a = cls.__new__(cls)
        a.handle = None
        a._requires_grad = False
        a._grad = None
        a._retain_grad = bool(retain_grad)
        a._wants_grad = bool(requires_grad)
        a._allocate(normalize_shape(shape), dtype, device, zero)
        return a

    # ------------------------------------------------------------ gradients

    @property
    def requires_grad(self) -> bool:
        """Whether the array has a gradient (``grad``, same shape, zeroed when made), as in Warp:
        setting it True makes the gradient array in the daemon; False drops it."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        value = bool(value)
        if value and self._grad is None and self.handle is not None:
            self._grad = array._create(self.shape, self.dtype, self.device, zero=True)
        elif not value:
            self._grad = None
            self._retain_grad = False
        self._requires_grad = value

    @property
    def grad(self):
        """The array gradients accumulate into in backward passes (None without one). Assigning
        an array of the same dtype, shape, strides and device sets requires_grad; None clears it."""
        return self._grad

    @grad.setter
    def grad(self, grad):
        if grad is None:
            self._grad = None
            self._requires_grad = False
            return
        if not isinstance(grad, array):
            raise TypeError(f"a gradient must be a wp.array, got {type(grad).__name__}")
        for what in ("dtype", "shape", "device", "strides"):
            mine, theirs = getattr(self, what, None), getattr(grad, what, None)
            if self.handle is not None and mine != theirs:
                raise ValueError(f"The given gradient array is incompatible: expected {what} {mine}, got {theirs}")
        self._grad = grad
        self._requires_grad = True

    @property
    def retain_grad(self) -> bool:
        """Keep the gradient when a backward pass goes through a store into this array (Warp
        1.19's stores otherwise consume it: the final write wins)."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value):
        if value and not self._requires_grad:
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(value)

    def __del__(self):
        h = getattr(self, "handle", None)
        if h is None:
            return
        self.handle = None
        try:
            if "_cuda_import" in self.__dict__:  # freed here before the daemon frees the memory
                from . import cuda_ipc  # noqa: PLC0415
                cuda_ipc.release(self)
            if not self._rt.closed:
                m = getattr(self, "_mapping", None)
                if m:  # no view is left (a view keeps its array alive)
                    self._rt.spare_mappings.put(m)
                self._stream.free_later(h)
        except Exception:
            pass

    # ------------------------------------------------------------ properties

    @property
    def capacity(self) -> int:
        return self.size * wt.type_size_in_bytes(self.dtype)

    nbytes = capacity

    @property
    def is_contiguous(self) -> bool:
        """Whether the strides are the shape's row-major strides (Warp's rule)."""
        if self.handle is None and self._wp_annotation_dtype_ is not None:
            return False
        return self.strides == array_view.contiguous_strides(self.shape, wt.type_size_in_bytes(self.dtype))

    # -------------------------------------------------------------- views

    def _view(self, g: array_view.Geometry, into: array | None = None) -> array:
        """A new daemon handle for the view `g` of this array (CreateView), made into the
        array object `into` (wp.array(ptr=...), which takes no gradient from this array)
        or a new one."""
        self._check_live()
        rt = self._rt
        dtype = self.dtype if g.dtype is None else g.dtype
        req = runtime_pb2.CreateViewRequest(session=rt.session, base=self.handle, offset_bytes=g.offset,
                                            shape=list(g.shape), strides=list(g.strides))
        if g.dtype is not None:
            req.dtype.CopyFrom(wt.to_typeref(dtype))
        with rt.lock:
            if rt.commands is not None:
                # The command socket answers in order: collect the replies of
                # Submits sent without waiting before this call reads its own.
                for stream in rt.all_streams():
                    stream.wait_pending()
            resp = rt.call("CreateView", req)
        v = into if into is not None else array.__new__(array)
        v.handle = resp.handle
        LIVE[v.handle] = v
        v.dtype = dtype
        v.shape = tuple(g.shape)
        v.ndim = len(g.shape)
        v.size = int(np.prod(g.shape, dtype=np.int64))
        v.strides = tuple(g.strides)
        v.device = self.device
        v._rt = rt
        v._stream = self._stream
        v._mapping = False  # mapped through its root
        v._ref = self
        v._root = self._root if self._root is not None else self
        v._offset = self._offset + g.offset
        v._requires_grad = self._requires_grad
        v._retain_grad = self._retain_grad
        grad = self._grad if into is None else None
        # The gradient is viewed the same way, as in Warp (when it is laid out like the array).
        if isinstance(grad, array) and grad.handle is not None and grad.shape == self.shape \
                and grad.strides == self.strides:
            v._grad = grad._view(g)
        else:
            v._grad = None
        return v

    # Elementwise arithmetic, as Warp 1.19's arrays (array_ops.py: a kernel per operator).
    def _binary(self, name, other, reflected=False):
        from . import array_ops
        return array_ops.binary(name, other, self) if reflected else array_ops.binary(name, self, other)

    def __add__(self, o):
        return self._binary("add", o)

    def __radd__(self, o):
        return self._binary("add", o, True)

    def __sub__(self, o):
        return self._binary("sub", o)

    def __rsub__(self, o):
        return self._binary("sub", o, True)

    def __mul__(self, o):
        return self._binary("mul", o)

    def __rmul__(self, o):
        return self._binary("mul", o, True)

    def __truediv__(self, o):
        return self._binary("div", o)

    def __rtruediv__(self, o):
        return self._binary("div", o, True)

    def __mod__(self, o):
        return self._binary("mod", o)

    def __rmod__(self, o):
        return self._binary("mod", o, True)

    def __pow__(self, o):
        return self._binary("pow", o)

    def __rpow__(self, o):
        return self._binary("pow", o, True)

    def __matmul__(self, o):
        from .matmul import is_matrix, matmul_operator  # noqa: PLC0415 - matmul imports this module
        if is_matrix(self) and is_matrix(o):
            return matmul_operator(self, o)  # Warp 1.x: a GEMM on the daemon
        return self._binary("mul", o)

    def __neg__(self):
        from . import array_ops
        return array_ops.unary("neg", self)

    def __pos__(self):
        from . import array_ops
        return array_ops.unary("pos", self)

    def __getitem__(self, key):
        """A view: ``a[1:3]``, ``a[:, 1]``, ``a[::2]``, ``a[i]`` of an n-d array;
        index arrays give a ``wp.indexedarray``. Reading one element raises, as in Warp."""
        self._check_live()
        g = array_view.subscript(self.shape, self.strides, key)
        if g.index_arrays:
            from .indexedarray import indexedarray
            base = self._view(g._replace(index_arrays=None))
            return indexedarray(base, [g.index_arrays.get(d) for d in range(self.ndim)])
        return self._view(g)

    def reshape(self, shape) -> array:
        """A view of a contiguous array with another shape (one extent may be -1)."""
        self._check_live()
        return self._view(array_view.reshape(self.shape, self.size, self.is_contiguous,
                                             wt.type_size_in_bytes(self.dtype), shape))

    def flatten(self) -> array:
        """A 1-D view of a contiguous array (the array itself when it is 1-D)."""
        self._check_live()
        if self.ndim == 1:
            return self
        if not self.is_contiguous:
            raise RuntimeError("Flattening non-contiguous arrays is unsupported.")
        return self.reshape((self.size,))

    def view(self, dtype) -> array:
        """The same memory as another element type: one of the same size, or a
        vector/matrix array as its scalars (trailing dims) and back."""
        self._check_live()
        return self._view(array_view.view_dtype(self.shape, self.strides, self.dtype, dtype))

    def transpose(self, axes=None) -> array:
        """A view with the axes permuted (reversed by default); a 1-D array itself."""
        self._check_live()
        if self.ndim == 1:
            return self
        return self._view(array_view.transpose(self.shape, self.strides, axes))

    def contiguous(self) -> array:
        """The array itself when contiguous, else a contiguous copy."""
        self._check_live()
        if self.is_contiguous:
            return self
        a = empty_like(self)
        copy_array(a, self)
        return a

    def __len__(self):
        return self.shape[0]

    @property
    def ptr(self):
        """Warp's address of the data, in this process: a CPU array of a client on the
        daemon's host is mapped here (local_map.py), and its ptr is where its first element
        is in that mapping, valid while the array lives (wp.array(ptr=...) within it makes a
        view of it; ctypes and NumPy may read and write it). None for an empty array, as in
        Warp. An array that is not mapped here (a client over TCP, elements holding array
        members) has none: reading it is an AttributeError that says so."""
        if self.handle is not None and self.size == 0:
            return None
        root = self._root if getattr(self, "_root", None) is not None else self
        raw = root._local_bytes() if self.handle is not None else None
        if raw is None:
            raise AttributeError("'array' object has no attribute 'ptr': this array lives in the warpd "
                                 "daemon and is not mapped into this process (only CPU arrays of a "
                                 "client on the daemon's host are); read it with numpy() or list(), "
                                 "write it with assign() or wp.copy()")
        return raw.ctypes.data + (self._offset if root is not self else 0)

    def _from_ptr(self, ptr, dtype, shape, strides, device):
        """wp.array(ptr=..., dtype, shape, strides): a view of the mapped array whose memory
        holds every element it reaches (Warp wraps the address as it is; warpd arrays live in
        the daemon, so the address must be one of theirs)."""
        if dtype is Any:
            dtype = wt.float32
        dtype = wt.canonical_dtype(dtype)
        shape = normalize_shape(shape if shape is not None else 0)
        itemsize = wt.type_size_in_bytes(dtype)
        strides = tuple(int(x) for x in strides) if strides is not None else \
            array_view.contiguous_strides(shape, itemsize)
        if len(strides) != len(shape):
            raise ValueError(f"wp.array(ptr=...): {len(strides)} strides for {len(shape)} dimensions")
        # The bytes the view reaches, relative to ptr.
        lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides) if n > 0)
        hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides) if n > 0) + itemsize
        for base in list(LIVE.values()):
            if getattr(base, "_root", None) is not None or base.handle is None or base.size == 0:
                continue
            m = getattr(base, "_mapping", None)
            if not m:
                continue
            start = base.ptr
            if start <= ptr + lo and ptr + hi <= start + base.capacity:
                if device is not None and base._rt.device(device) is not base.device:
                    raise ValueError(f"wp.array(ptr=...): the address is in an array on "
                                     f"{base.device}, not on {device}")
                retain = self._retain_grad  # the constructor's, not the base's
                base._view(array_view.Geometry(ptr - start, tuple(shape), strides, dtype), into=self)
                self._requires_grad = False
                self._retain_grad = retain
                self._take_wanted_grad()
                return
        raise ValueError(f"wp.array(ptr={ptr:#x}): warpd arrays live in the daemon, and this address is "
                         f"not inside a CPU array mapped into this process (an address from another "
                         f"array's .ptr, within its memory, is); pass data or a shape instead")

    def _check_live(self):
        if self.handle is None:
            if self._wp_annotation_dtype_ is not None:
                raise TypeError("this wp.array is a type annotation, not an allocated array")
            raise ValueError("array has been freed")

    # ----------------------------------------------------------- data moves

    def _local_bytes(self):
        """A uint8 view of the array's memory when it is mapped here (local
        client, large enough, shared by the daemon); else None."""
        m = getattr(self, "_mapping", False)
        if m is False:
            return None
        if m is None:
            rt = self._rt
            m = False
            if rt.share_path is not None:
                if self.capacity < local_map.SHARE_MIN_BYTES:  # its file may be mapped already
                    serial, offset = getattr(self, "_segment", (0, 0))
                    m = rt.segments.view(serial, offset, self.capacity) or False
                if m is False:
                    m = local_map.map_array(rt.share_path, rt.token, rt.session, self.handle, self.capacity,
                                            rt.spare_mappings, rt.segments) or False
            self._mapping = m
            if m is False:
                return None
        return local_map.byte_view(m, self)

    def _local_view(self):
        """A NumPy view (the shape numpy() returns) of the array's memory when
        its root array is mapped here; else None."""
        root = self._root if self._root is not None else self
        raw = root._local_bytes()
        if raw is None:
            return None
        np_dtype = wt.numpy_dtype(self.dtype)
        eshape = wt.element_shape(self.dtype)
        full_shape = self.shape + eshape
        if root is self:
            return raw.view(np_dtype).reshape(full_shape)
        estrides = array_view.contiguous_strides(eshape, np_dtype.itemsize)
        return np.ndarray(full_shape, dtype=np_dtype, buffer=raw, offset=self._offset,
                          strides=self.strides + estrides)

    @property
    def __array_interface__(self):
        """NumPy's array interface of the array's memory, only where it is
        mapped into this process (numpy() otherwise copies; AttributeError
        makes NumPy fall back to __array__). Waits for the device's queued work."""
        if self.handle is None:
            raise AttributeError("__array_interface__: the array is not allocated")
        np_dtype = wt.numpy_dtype(self.dtype)
        eshape = wt.element_shape(self.dtype)
        if self.size == 0:  # no memory: a valid pointer that is never read, as Warp's
            return {"data": (ctypes.addressof(_EMPTY_DATA), False), "shape": self.shape + eshape,
                    "strides": self.strides + array_view.contiguous_strides(eshape, np_dtype.itemsize),
                    "typestr": np_dtype.str, "descr": np_dtype.descr, "version": 3}
        local = self._local_view()
        if local is None:
            raise AttributeError("__array_interface__ is available for arrays mapped into this "
                                 "process only (CPU arrays of a client on the daemon's host)")
        self._rt.synchronize(self.device)
        return local.__array_interface__

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (version 3) of a GPU array, for a client on the
        daemon's host: a device pointer of this process into the array's memory
        (CUDA IPC, cuda_ipc.py), so torch, CuPy or Numba use it without a copy.
        Waits for the array's queued work. AttributeError (saying why) elsewhere."""
        from . import cuda_ipc  # noqa: PLC0415
        return cuda_ipc.interface(self)

    def _host_staged(self) -> bool:
        """Whether this GPU array's bytes move through CPU arrays mapped into this process
        and copies in the daemon (_staged_upload, _staged_download) rather than gRPC
        streams: a local client's contiguous arrays of HOST_STAGED_MIN_BYTES or more, not of
        structs holding arrays."""
        return (not self.device.is_cpu and self._rt.share_path is not None and self.is_contiguous
                and self.capacity >= HOST_STAGED_MIN_BYTES and not wt.holds_array(self.dtype))

    def _staging_pieces(self):
        """(this array's flat element ranges as views: (view, first element, count), the
        CPU arrays to stage them in: one or two, mapped here), or None when a CPU array
        cannot be made or mapped (the memory quota, a daemon that does not share). The
        caller hands the CPU arrays back with _return_staging once done with them."""
        elem = wt.type_size_in_bytes(self.dtype)
        per = max(1, HOST_STAGED_CHUNK_BYTES // elem)
        starts = range(0, self.size, per)
        key = (wt.type_name(self.dtype), elem, min(per, self.size), min(2, len(starts)))
        # The last transfer's CPU arrays, when they fit this one (a transfer of the same
        # geometry again): mapped and faulted in already. Taken out while in use, so a
        # transfer on another thread makes its own.
        cached = self._rt.__dict__.pop("_staging_cache", None)
        if cached is not None and cached[0] == key:
            bufs = cached[1]
        else:
            del cached  # its arrays are freed with the next batch
            try:
                bufs = [array._create((key[2],), self.dtype, "cpu", zero=False) for _ in range(key[3])]
            except WarpdError:
                return None
            if any(b._local_view() is None for b in bufs):
                return None
        pieces = []
        for start in starts:
            count = min(per, self.size - start)
            whole = start == 0 and count == self.size and self.ndim == 1
            pieces.append((self if whole else self._view(array_view.Geometry(start * elem, (count,), (elem,), None)),
                           start, count))
        return pieces, (key, bufs)

    def _return_staging(self, staging):
        """Keeps a transfer's CPU arrays (_staging_pieces) for the next one, unless another
        transfer kept its own meanwhile. They stay the session's memory until a CPU array
        or a GPU transfer of another geometry needs it (_drop_staging)."""
        self._rt.__dict__.setdefault("_staging_cache", staging)

    def _staged_upload(self, buf: memoryview) -> bool:
        """Writes `buf` (the whole array's bytes) through mapped CPU arrays and daemon copies
        on this array's stream, the client filling one CPU array while the daemon copies
        from the other; waits for the last. False when staging cannot be used."""
        staging = self._staging_pieces()
        if staging is None:
            return False
        pieces, (key, bufs) = staging
        elem = wt.type_size_in_bytes(self.dtype)
        src = np.frombuffer(buf, dtype=np.uint8)
        for i, (view, start, count) in enumerate(pieces):
            host = bufs[i % len(bufs)]
            if i >= len(bufs):
                self._stream.synchronize()  # the copy from `host` (and all before it) is done
            part = host if count == host.size else host[:count]
            np.copyto(_mapped_bytes(part), src[start * elem:(start + count) * elem])
            _host_copy(view, part, self._stream, wait=False, join=True)
        self._stream.synchronize()
        self._return_staging((key, bufs))
        return True

    def _staged_download(self):
        """The array's bytes (uint8) through mapped CPU arrays and daemon copies on its
        stream, piece by piece; None when staging cannot be used."""
        staging = self._staging_pieces()
        if staging is None:
            return None
        pieces, (key, bufs) = staging
        elem = wt.type_size_in_bytes(self.dtype)
        out = np.empty(self.capacity, dtype=np.uint8)
        for view, start, count in pieces:
            host = bufs[0]
            part = host if count == host.size else host[:count]
            _host_copy(part, view, self._stream, join=True)
            np.copyto(out[start * elem:(start + count) * elem], _mapped_bytes(part))
        self._return_staging((key, bufs))
        return out

    def _upload(self, values: np.ndarray, fresh: bool = False):
        """Writes values (already in storage layout) into the whole array.

        fresh: the array was just created, so no queued command can use it.
        """
        self._check_live()
        values = np.ascontiguousarray(values)
        if values.nbytes != self.capacity:
            raise ValueError(f"data has {values.nbytes} bytes, the array {self.capacity}")
        if values.nbytes == 0:
            return
        if wt.holds_array(self.dtype):
            # Never uploaded into: the values go to the daemon in a new array's
            # request, which binds their array handles, then copied in order.
            tmp = array.__new__(array)
            tmp.handle = None
            tmp._requires_grad = False
            tmp._grad = None
            tmp._allocate(self.shape, self.dtype, self.device, zero=False, contents=values)
            copy_array(self, tmp)
            return
        buf = memoryview(values.reshape(-1)).cast("B")
        rt = self._rt
        if self._host_staged() and self._staged_upload(buf):
            return
        local = self._local_bytes() if self._root is None else self._local_view()
        if local is not None:
            if not fresh:
                # Queued work may use this array: let it finish first.
                rt.synchronize(self.device)
            if self._root is None:
                np.copyto(local, np.frombuffer(buf, dtype=np.uint8))
            else:  # a view: its elements, where they are in the root's memory
                local[...] = np.frombuffer(buf, dtype=local.dtype).reshape(local.shape)
            return
        if not fresh:
            # Queued work may touch this array: send it first. The daemon runs an
            # upload after the session's stream on the device has drained.
            with rt.lock:
                self._stream.flush()

        header = wire.upload_header(rt.session, self.handle, 0)

        def chunks():  # each chunk's bytes copied once, into the message
            for off in range(0, buf.nbytes, CHUNK_BYTES):
                yield wire.upload_chunk(buf[off:off + CHUNK_BYTES], header if off == 0 else b"")

        try:
            rt.raw_method("Upload")(chunks())
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def _download(self) -> np.ndarray:
        """The array's bytes (uint8) after its device's queued work."""
        self._check_live()
        rt = self._rt
        if self._host_staged():
            out = self._staged_download()
            if out is not None:
                return out
        if rt.commands is not None and self.capacity <= local_commands.MAX_DOWNLOAD:
            # A local client's small array: one frame on the command socket
            # (a gRPC stream's round trips were most of a small numpy()).
            request = runtime_pb2.DownloadRequest(session=rt.session, handle=self.handle)
            with rt.lock:
                self._stream.flush()
                if rt.commands is not None:
                    chunk = rt.call_stream("Download", request, self._stream.device)
                    if len(chunk.data) != self.capacity:
                        raise ValueError(f"the daemon sent {len(chunk.data)} of the array's "
                                         f"{self.capacity} bytes")
                    self._stream.in_flight = False
                    return np.frombuffer(chunk.data, dtype=np.uint8).copy()
        with rt.lock:
            self._stream.flush()
        # Not zero-filled first (bytearray(n) was): every byte is written below.
        out = np.empty(self.capacity, dtype=np.uint8)
        pos = 0
        request = runtime_pb2.DownloadRequest(session=rt.session, handle=self.handle).SerializeToString()
        try:
            for msg in rt.raw_method("Download")(request):
                data, output = wire.download_chunk(msg)
                rt.emit_output(output)  # kernel output of the work waited for
                n = len(data)
                if pos + n > len(out):
                    raise ValueError(f"the daemon sent more than the array's {len(out)} bytes")
                # np.copyto lets go of the GIL, so gRPC's thread receives the
                # next chunk meanwhile (a memoryview copy held it).
                np.copyto(out[pos:pos + n], np.frombuffer(data, dtype=np.uint8))
                pos += n
        except grpc.RpcError as e:
            err = from_rpc_error(e)
            rt.read_output(self._stream.device, after=err)
            raise err from None
        if pos != len(out):
            raise ValueError(f"the daemon sent {pos} of the array's {len(out)} bytes")
        self._stream.in_flight = False
        return out

    def numpy(self) -> np.ndarray:
        """The data as NumPy (a view of the array's memory for a local client,
        see the module docstring; else a copy): shape (*shape) for scalars, (*shape, n) for vectors,
        quaternions (4) and transformations (7), (*shape, rows, cols) for matrices; a
        structured array of shape (*shape) for structs.

        Waits for queued work on the array's device; raises its faults.
        """
        self._check_live()
        np_dtype = wt.numpy_dtype(self.dtype)
        full_shape = self.shape + wt.element_shape(self.dtype)
        if self.size == 0:
            return np.zeros(full_shape, dtype=np_dtype)
        local = self._local_view()
        if local is not None:
            self._rt.synchronize(self.device)
            return local
        return np.frombuffer(self._download(), dtype=np_dtype).reshape(full_shape)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def list(self) -> list:
        """The elements, flat: Python numbers, or instances of the value or struct type."""
        return elements_list(self.numpy(), self.dtype)

    def assign(self, src):
        """Copies src (an array, NumPy array or sequence) into this array."""
        self._check_live()
        if isinstance(src, array):
            copy_array(self, src)
            return
        values = _to_numpy(src, self.dtype)
        outer = _outer_shape(values, self.dtype)
        if int(np.prod(outer)) != self.size:
            raise ValueError(f"cannot assign data of shape {outer} to an array of shape {self.shape}")
        self._upload(values)

    def fill_(self, value):
        """Sets every element to value (queued on the device stream)."""
        self._check_live()
        self._fill_bytes_(_fill_bytes(self.dtype, value))
        from . import tape as _tape  # noqa: PLC0415 - tape imports this module

        if _tape._current is not None and self._grad is not None:
            from . import grad_ops  # noqa: PLC0415

            grad_ops.record_fill(_tape._current, self)
        return self

    def _fill_bytes_(self, data: bytes):
        with self._rt.lock:
            cmd = self._rt.stream(self._stream.device).add(keep=(self,))  # the current stream
            cmd.fill.array = self.handle
            cmd.fill.value = data

    fill = fill_

    def zero_(self):
        """Sets every byte to zero (any dtype, structs included)."""
        self._check_live()
        self._fill_bytes_(bytes(wt.type_size_in_bytes(self.dtype)))
        return self

    def to(self, device) -> array:
        """This array on `device` (itself when it is already there)."""
        self._check_live()
        dev = self._rt.device(device)
        if dev == self.device:
            return self
        return clone(self, device=dev)

    def __str__(self):
        if self.handle is None:
            return repr(self)
        return str(self.numpy())

    def __repr__(self):
        """``array([values...], shape=(...), dtype=..., device="...")``: the values
        as NumPy prints ``numpy()``, large arrays summarized and read only where
        shown (array_repr.py)."""
        if self._wp_annotation_dtype_ is not None:
            return f"array(dtype={wt.type_repr(self.dtype)}, ndim={self.ndim})"
        from . import array_repr  # noqa: PLC0415 - only when shown
        return array_repr.array_repr(self)

    def _repr_html_(self):
        """The notebook's view: shape, dtype, device and a preview of the values."""
        if self._wp_annotation_dtype_ is not None:
            return None  # IPython falls back to repr
        from . import array_repr  # noqa: PLC0415
        return array_repr.array_html(self)

    # DLPack (interop.py): a view of the memory where it is mapped here, else a copy.
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The array as a DLPack capsule: shares the array's memory where it is mapped
        into this process (a local client's CPU arrays of 64 KiB or more, in host memory;
        its GPU arrays, as GPU memory through CUDA IPC), else holds a host copy
        (``copy=False`` then raises BufferError)."""
        from . import interop  # noqa: PLC0415
        return interop.dlpack_capsule(self, stream=stream, max_version=max_version, dl_device=dl_device,
                                      copy=copy)

    def __dlpack_device__(self):
        """(kDLCUDA, ordinal) for a GPU array this process imports (CUDA IPC), else
        (kDLCPU, 0): the export is a host copy (interop.py)."""
        from . import interop  # noqa: PLC0415
        return interop.dlpack_device(self)

    def __setitem__(self, key, value):
        raise NotImplementedError("element assignment to a warpd array in Python scope is not "
                                  "supported; use .assign(), .fill_() or a kernel")


def _fill_bytes(dtype, value) -> bytes:
    """One element's bytes for a fill: a value of dtype, or one number for every component."""
    try:
        if wt.element_shape(dtype) and wt.scalar.is_number(value):
            return np.asarray(wt.type_scalar(dtype)._wp_encode_(dtype._splat(value))).tobytes()
        return wt.pack(dtype, value, wrap=True)
    except (TypeError, ValueError) as e:
        raise type(e)(f"fill value for {wt.type_name(dtype)}: {e}") from None


def _row_major_strides(shape, itemsize):
    strides = []
    acc = itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


# ------------------------------------------------------- type-hint helpers


class _FixedNdim:
    """``wp.array2d``: ``wp.array`` with ndim fixed, callable (``wp.array2d(dtype=float)``,
    ``wp.array2d(data)``) and subscriptable (``wp.array2d[float]``) as in Warp."""

    def __init__(self, ndim):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"array{ndim}d"

    def __call__(self, *args, **kwargs):
        return array(*args, ndim=self.ndim, **kwargs)

    def __getitem__(self, dtype):
        return array(dtype=dtype, ndim=self.ndim)

    def __repr__(self):
        return f"<warpd {self.__name__}>"


array1d = _FixedNdim(1)
array2d = _FixedNdim(2)
array3d = _FixedNdim(3)
array4d = _FixedNdim(4)


# ---------------------------------------------------------- constructors


def _shape_arg(shape, kwargs):
    if shape is None:
        shape = kwargs.pop("n", None)
    if shape is None:
        raise TypeError("a shape is required")
    for k in ("pinned",):
        kwargs.pop(k, None)
    if kwargs:
        raise TypeError(f"unexpected arguments: {', '.join(kwargs)}")
    return shape


def zeros(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
          **kwargs) -> array:
    """A zero-initialized array."""
    return array._create(_shape_arg(shape, kwargs), dtype, device, zero=True,
                         requires_grad=requires_grad, retain_grad=retain_grad)


def empty(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
          **kwargs) -> array:
    """An array whose contents are unspecified."""
    return array._create(_shape_arg(shape, kwargs), dtype, device, zero=False,
                         requires_grad=requires_grad, retain_grad=retain_grad)


def _value_dtype(value):
    if isinstance(value, bool):
        return wt.bool_
    if isinstance(value, numbers.Integral):
        return wt.int32
    if isinstance(value, numbers.Real):
        return wt.float32
    if isinstance(value, (wt._Scalar, wt.Value, wt.Struct)):
        return type(value)
    if hasattr(value, "__len__"):
        # A vector or matrix of the scalar type NumPy infers, as in Warp ([1, 2] is a
        # vector of int64, np.array([1, 2], np.int8) a vector of int8).
        try:
            na = np.asarray(value)
        except Exception as e:
            raise ValueError(f"Failed to interpret the value as a vector or matrix: {e}") from e
        st = wt.scalar_from_numpy(na.dtype)
        if st is None:
            raise ValueError(f"Failed to convert {na.dtype} to a Warp data type")
        if na.ndim == 1:
            return wt.vector(na.size, st)
        if na.ndim == 2:
            return wt.matrix(na.shape, st)
        raise ValueError("Values with more than two dimensions are not supported")
    raise ValueError(f"Invalid value type for Warp array: {type(value)}")


def full(shape=None, value=0, dtype=Any, device=None, requires_grad=False, pinned=False,
         retain_grad=False, **kwargs) -> array:
    """An array with every element set to value."""
    if dtype is Any:
        dtype = _value_dtype(value)
    a = empty(shape, dtype, device, requires_grad=requires_grad, retain_grad=retain_grad, **kwargs)
    return a.fill_(value)


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
         **kwargs) -> array:
    return full(shape, 1, dtype, device, requires_grad, retain_grad=retain_grad, **kwargs)


def zeros_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return zeros(src.shape, src.dtype, device if device is not None else src.device,
                 requires_grad=src.requires_grad if requires_grad is None else requires_grad,
                 retain_grad=retain_grad)


def empty_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return empty(src.shape, src.dtype, device if device is not None else src.device,
                 requires_grad=src.requires_grad if requires_grad is None else requires_grad,
                 retain_grad=retain_grad)


def full_like(src: array, value, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return full(src.shape, value, src.dtype, device if device is not None else src.device,
                requires_grad=src.requires_grad if requires_grad is None else requires_grad,
                retain_grad=retain_grad)


def ones_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return full_like(src, 1, device, requires_grad, retain_grad=retain_grad)


def clone(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    """A copy of src (on `device`, default src's); differentiable on a Tape as wp.copy is."""
    dst = empty_like(src, device, requires_grad, retain_grad=retain_grad)
    copy_array(dst, src)
    return dst


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """An array holding a copy of a NumPy array.

    Without dtype, as in Warp, two trailing dimensions of 2 to 4 (with at least
    three dimensions) make a matrix array (float32 data of shape (n, 3, 3) becomes
    n mat33), else a trailing dimension of 2, 3 or 4 a vector array ((n, 3): n vec3).
    """
    arr = np.asarray(arr)
    if dtype is None:
        st = wt.scalar_from_numpy(arr.dtype)
        if st is None:
            raise TypeError(f"unsupported NumPy dtype {arr.dtype}")
        small = (2, 3, 4)
        if st is not wt.bool_ and arr.ndim >= 3 and arr.shape[-2] in small and arr.shape[-1] in small:
            dtype = wt.matrix(arr.shape[-2:], st)
        elif st is not wt.bool_ and arr.ndim >= 2 and arr.shape[-1] in small:
            dtype = wt.vector(arr.shape[-1], st)
        else:
            dtype = st
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad)


def copy_array(dest: array, src: array, dest_offset=0, src_offset=0, count=0, stream=None):
    """Copies `count` elements (all of src when 0) of src, from element src_offset,
    into dest from element dest_offset, queued on dest's device stream.

    As in Warp: the element sizes must match (the bytes are copied); two
    contiguous arrays copy as flat element ranges whatever their shapes; a
    non-contiguous one (a strided view) copies element by element, into an
    array of the same shape, with offsets and a count for 1-D arrays only.
    """
    from .indexedarray import indexedarray

    if not isinstance(dest, (array, indexedarray)) or not isinstance(src, (array, indexedarray)):
        raise RuntimeError("Copy source and destination must be arrays")
    try:
        src_offset = operator.index(src_offset)
        dest_offset = operator.index(dest_offset)
        count = operator.index(count)
    except TypeError:
        raise RuntimeError("Copy src_offset, dest_offset, and count must be integers") from None
    if src_offset < 0:
        raise RuntimeError(f"Source offset must be non-negative, got {src_offset}")
    if dest_offset < 0:
        raise RuntimeError(f"Destination offset must be non-negative, got {dest_offset}")
    if count < 0:
        raise RuntimeError(f"Copy count must be non-negative, got {count}")
    dest._check_live()
    src._check_live()
    if isinstance(dest, indexedarray) or isinstance(src, indexedarray):
        _copy_indexed(dest, src, dest_offset, src_offset, count)
        return
    if count == 0:
        count = src.size
    if count == 0:
        return
    elem = wt.type_size_in_bytes(src.dtype)
    if wt.type_size_in_bytes(dest.dtype) != elem:
        raise RuntimeError(f"Incompatible array data types: destination dtype={wt.type_repr(dest.dtype)}, "
                           f"source dtype={wt.type_repr(src.dtype)}")
    whole = src_offset == 0 and dest_offset == 0 and count == src.size == dest.size
    if src.is_contiguous and dest.is_contiguous:
        nbytes = count * elem
        if (src_offset + count) * elem > src.size * elem:
            raise RuntimeError(f"Trying to copy source buffer with size ({nbytes}) from offset "
                               f"({src_offset * elem}) is larger than source size ({src.size * elem})")
        if (dest_offset + count) * elem > dest.size * elem:
            raise RuntimeError(f"Trying to copy source buffer with size ({nbytes}) to offset "
                               f"({dest_offset * elem}) is larger than destination size ({dest.size * elem})")
        if not (whole and src.shape == dest.shape):
            # Flat element ranges of both: one view each.
            src = src._view(array_view.Geometry(src_offset * elem, (count,), (elem,), None))
            dest = dest._view(array_view.Geometry(dest_offset * elem, (count,), (wt.type_size_in_bytes(dest.dtype),),
                                                  None))
    else:
        if not whole:
            if src.ndim != 1 or dest.ndim != 1:
                raise RuntimeError("dest_offset, src_offset, and count are only supported for 1-D "
                                   "non-contiguous arrays")
            if src_offset + count > src.size:
                raise RuntimeError(f"Trying to copy a range of {count} element(s) from source offset "
                                   f"({src_offset}) exceeds the source size ({src.size})")
            if dest_offset + count > dest.size:
                raise RuntimeError(f"Trying to copy a range of {count} element(s) to destination offset "
                                   f"({dest_offset}) exceeds the destination size ({dest.size})")
            src = src[src_offset:src_offset + count]
            dest = dest[dest_offset:dest_offset + count]
        if src.shape != dest.shape:
            raise RuntimeError(f"Incompatible array shapes: destination shape={dest.shape}, "
                               f"source shape={src.shape}")
    from . import tape as _tape  # noqa: PLC0415 - tape imports this module

    if _tape._current is not None and dest.grad is not None:
        from . import grad_ops  # noqa: PLC0415 - its kernels are made on first use

        grad_ops.record_copy(_tape._current, dest, src)
    if dest.device != src.device:
        from .streams import client_stream  # noqa: PLC0415 - streams imports context

        if _host_copy_possible(dest, src):
            gpu = src if dest.device.is_cpu else dest
            _host_copy(dest, src, client_stream(dest._rt, gpu.device.alias, stream))
        elif _peer_copy_possible(dest, src):
            # Between two GPUs: by the daemon, as Warp's, on `stream` (of either device)
            # or the destination's current stream, after the work sent to the other
            # device's current stream.
            rt = dest._rt
            on = dest.device if stream is None else stream.device
            other = src.device if on == dest.device else dest.device
            with rt.lock:
                to = client_stream(rt, on.alias, stream)
                to.wait_for(rt.stream(other.alias))
                cmd = to.add(keep=(dest, src))
                cmd.copy.dst = dest.handle
                cmd.copy.src = src.handle
        else:
            dest._upload(src.numpy())
        return
    from .streams import client_stream  # noqa: PLC0415 - streams imports context

    with dest._rt.lock:
        cmd = client_stream(dest._rt, dest._stream.device, stream).add(keep=(dest, src))
        cmd.copy.dst = dest.handle
        cmd.copy.src = src.handle


def _peer_copy_possible(dest: array, src: array) -> bool:
    """Whether the daemon copies dest <- src between two GPUs itself (PrepareCopy): not
    arrays of structs holding arrays."""
    return (not dest.device.is_cpu and not src.device.is_cpu and not wt.holds_array(dest.dtype)
            and not wt.holds_array(src.dtype))


def _host_copy_possible(dest: array, src: array) -> bool:
    """Whether the daemon copies dest <- src itself: a GPU array and a contiguous CPU
    array (not of structs holding arrays), on the GPU's stream (PrepareCopy)."""
    host = dest if dest.device.is_cpu else src
    gpu = src if dest.device.is_cpu else dest
    return (host.device.is_cpu and not gpu.device.is_cpu and host.is_contiguous
            and not wt.holds_array(dest.dtype) and not wt.holds_array(src.dtype))


def _mapped_bytes(a: array) -> np.ndarray:
    """A contiguous array's memory, mapped into this process, as uint8."""
    return a._local_view().reshape(-1).view(np.uint8)


def _drop_staging(rt) -> bool:
    """Frees the CPU arrays kept for GPU transfers (array._staging_pieces), if any, and
    waits until the daemon has; False when none were kept."""
    cached = rt.__dict__.pop("_staging_cache", None)
    if cached is None:
        return False
    stream = cached[1][0]._stream
    del cached
    stream.synchronize()  # sends the frees and waits for them
    return True


def _host_copy(dest: array, src: array, stream, wait: bool = True, join: bool = False):
    """dest <- src between a GPU array and a CPU array's host memory, by the daemon on
    `stream` (a client stream of the GPU), waited for as Warp's copies through pageable
    memory are: after it the CPU array may be read or written at once (`wait` False:
    sent, not waited for). The CPU side's own queued work runs first. `join`: as Warp's
    numpy() and array uploads, which run on the device's null stream, the copy also
    comes after the work sent to the device's other streams (when `stream` is the
    device's default stream, which joins them)."""
    rt = dest._rt
    host = dest if dest.device.is_cpu else src
    with rt.lock:
        cpu_stream = rt.stream(host.device.alias)
        if cpu_stream.queued or cpu_stream.in_flight:
            cpu_stream.synchronize()
        if join:
            stream.join_side_streams()
        cmd = stream.add(keep=(dest, src))
        cmd.copy.dst = dest.handle
        cmd.copy.src = src.handle
        if wait:
            stream.synchronize()
        else:
            stream.flush()


def _copy_indexed(dest, src, dest_offset, src_offset, count):
    """wp.copy to or from a wp.indexedarray (indexedarray.py: the client indexes with NumPy)."""
    if dest_offset or src_offset or (count and (count != src.size or count != dest.size)):
        raise RuntimeError("dest_offset, src_offset, and count are not supported when copying to/from "
                           "non-contiguous indexed or Fabric arrays")
    if src.shape != dest.shape:
        raise RuntimeError(f"Incompatible array shapes: destination shape={dest.shape}, "
                           f"source shape={src.shape}")
    if wt.type_size_in_bytes(dest.dtype) != wt.type_size_in_bytes(src.dtype):
        raise RuntimeError(f"Incompatible array data types: destination dtype={wt.type_repr(dest.dtype)}, "
                           f"source dtype={wt.type_repr(src.dtype)}")
    if src.size == 0:
        return
    raw = np.ascontiguousarray(src.numpy()).reshape(-1).view(np.uint8)
    values = raw.view(wt.numpy_dtype(dest.dtype)).reshape(dest.shape + wt.element_shape(dest.dtype))
    if isinstance(dest, array):
        dest._upload(values)
    else:
        dest._write(values)
