"""Zero-copy GPU arrays for a client on the daemon's host (CUDA IPC).

A GPU array's memory belongs to the daemon's process. A client that reached
the daemon over its Unix socket asks the share socket beside it
(``<socket>.share``, server/local/share_socket.h) for one of its session's
arrays on ``cuda:N``; the daemon answers with a new file descriptor of the
session's own memory pool on that GPU (SCM_RIGHTS), the 64 bytes that name
the array's allocation in it, and the GPU's UUID. This process then imports
the pool (``cuMemPoolImportFromShareableHandle``, once per pool) and the
allocation (``cuMemPoolImportPointer``) into its primary context of the GPU
with that UUID (so ``CUDA_VISIBLE_DEVICES`` may number the GPUs differently
here), through this process's own ``libcuda.so.1``.

``a.__cuda_array_interface__`` (version 3) is then a device pointer of this
process into the array's memory: torch, CuPy or Numba on this host use it
without a copy, and their writes change the array. The daemon gives a
session only its own arrays' pool, and a pool holds only that session's plain
arrays (descriptors and the daemon's objects live elsewhere), so nothing
imported here reaches another session's data.

Ordering: the interface waits for the array's queued work first (its
``stream`` is None: nothing is left to wait for), but the daemon cannot see
this process's streams: work queued here on the memory (a torch kernel) must
finish (``torch.cuda.synchronize()``) before the array is used by warpd
again. An import is freed (``cuMemFree``) when the array that made it is
freed, before the daemon is told to free the array, as CUDA requires.

Where the import is not possible (a TCP client, a CPU array, no driver in this
process, a driver without IPC), ``__cuda_array_interface__`` raises
AttributeError saying why, so libraries fall back to other protocols.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_uint, c_uint64, c_ulonglong, c_void_p

from . import local_map

_API_VERSION = 12000  # the entry points' version asked of cuGetProcAddress (as the daemon)
_HANDLE_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR


class CudaIpcError(RuntimeError):
    """The memory of a GPU array cannot be mapped into this process; the message says why."""


class _Driver:
    """This process's libcuda.so.1: the few entry points an import needs, resolved
    through cuGetProcAddress_v2 as the daemon resolves its own."""

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaIpcError(f"this process cannot load the NVIDIA driver (libcuda.so.1): {e}") from None
        get = getattr(lib, "cuGetProcAddress_v2", None)
        if get is None:
            raise CudaIpcError("this process's NVIDIA driver is too old for CUDA IPC (no cuGetProcAddress_v2)")
        get.argtypes = [c_char_p, POINTER(c_void_p), c_int, c_uint64, POINTER(c_int)]
        get.restype = c_int
        self._get = get
        self.error_name = self._fn("cuGetErrorName", [c_int, POINTER(c_char_p)])
        self.init = self._fn("cuInit", [c_uint])
        self.device_count = self._fn("cuDeviceGetCount", [POINTER(c_int)])
        self.device_get = self._fn("cuDeviceGet", [POINTER(c_int), c_int])
        self.device_uuid = self._fn("cuDeviceGetUuid", [ctypes.c_char * 16, c_int])
        self.retain = self._fn("cuDevicePrimaryCtxRetain", [POINTER(c_void_p), c_int])
        self.push = self._fn("cuCtxPushCurrent", [c_void_p])
        self.pop = self._fn("cuCtxPopCurrent", [POINTER(c_void_p)])
        self.import_pool = self._fn("cuMemPoolImportFromShareableHandle",
                                    [POINTER(c_void_p), c_void_p, c_int, c_ulonglong])
        self.import_pointer = self._fn("cuMemPoolImportPointer", [POINTER(c_uint64), c_void_p, c_void_p])
        self.free = self._fn("cuMemFree", [c_uint64])
        self.dtoh = self._fn("cuMemcpyDtoH", [c_void_p, c_uint64, ctypes.c_size_t])
        self.destroy_pool = self._fn("cuMemPoolDestroy", [c_void_p])
        self.check(self.init(0), "cuInit")
        self._contexts: dict[str, c_void_p] = {}
        self.ordinals: dict[str, int] = {}  # this process's ordinal of each GPU by UUID

    def _fn(self, name: str, argtypes):
        p, status = c_void_p(), c_int()
        r = self._get(name.encode(), byref(p), _API_VERSION, 0, byref(status))
        if r != 0 or not p.value:
            raise CudaIpcError(f"this process's NVIDIA driver has no {name} (CUDA {_API_VERSION // 1000}+ needed)")
        return ctypes.CFUNCTYPE(c_int, *argtypes)(p.value)

    def check(self, r: int, what: str):
        if r != 0:
            name = c_char_p()
            self.error_name(r, byref(name))
            raise CudaIpcError(f"{what} failed: {(name.value or b'CUDA error').decode()} ({r})")

    def uuids(self) -> list[str]:
        """This process's GPUs' UUIDs ("GPU-..."), by ordinal."""
        count = c_int()
        self.check(self.device_count(byref(count)), "cuDeviceGetCount")
        found = []
        for i in range(count.value):
            dev = c_int()
            self.check(self.device_get(byref(dev), i), "cuDeviceGet")
            raw = (ctypes.c_char * 16)()
            self.check(self.device_uuid(raw, dev), "cuDeviceGetUuid")
            found.append(_format_uuid(bytes(raw)))
        return found

    def context(self, uuid: str) -> c_void_p:
        """This process's primary context of the GPU named `uuid` ("GPU-..."), retained once."""
        ctx = self._contexts.get(uuid)
        if ctx is not None:
            return ctx
        for i, found in enumerate(self.uuids()):
            if found == uuid:
                dev = c_int()
                self.check(self.device_get(byref(dev), i), "cuDeviceGet")
                ctx = c_void_p()
                self.check(self.retain(byref(ctx), dev), "cuDevicePrimaryCtxRetain")
                self._contexts[uuid] = ctx
                self.ordinals[uuid] = i
                return ctx
        raise CudaIpcError(f"the daemon's GPU {uuid} is not visible to this process "
                           f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")

    def in_context(self, ctx: c_void_p, fn):
        self.check(self.push(ctx), "cuCtxPushCurrent")
        try:
            return fn()
        finally:
            self.pop(byref(c_void_p()))


def _format_uuid(b: bytes) -> str:
    h = b.hex()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


# Re-entrant: a garbage collection while an import holds it may free another
# array, whose import's close() takes it again on the same thread.
_lock = threading.RLock()
_driver: _Driver | None = None
_driver_error: str | None = None
# (session, the daemon's pool serial): (this process's context, the imported pool).
_pools: dict[tuple[str, int], tuple[c_void_p, c_void_p]] = {}
_live: set[Import] = set()  # imports not yet freed (close_session frees a session's)


def _get_driver() -> _Driver:
    global _driver, _driver_error
    if _driver is None:
        if _driver_error is not None:
            raise CudaIpcError(_driver_error)
        try:
            _driver = _Driver()
        except CudaIpcError as e:
            _driver_error = str(e)
            raise
    return _driver


class Import:
    """One allocation of the daemon imported into this process: `address` is the array's
    first byte here (the allocation's `base` plus the array's offset in it); close()
    frees the import (before the daemon frees the allocation). `freed`: whether that
    free succeeded."""

    def __init__(self, driver: _Driver, ctx: c_void_p, session: str, base: int, offset: int, size: int,
                 ordinal: int):
        self._driver, self._ctx, self.session = driver, ctx, session
        self._base, self.address, self.size = base, base + offset, size
        self.ordinal = ordinal  # this process's ordinal of the GPU
        self.freed = False

    def close(self):
        with _lock:
            base, self._base, self.address = self._base, 0, 0
            _live.discard(self)
            if base:
                try:
                    self._driver.in_context(self._ctx, lambda: self._driver.check(self._driver.free(base),
                                                                                   "cuMemFree"))
                    self.freed = True
                except CudaIpcError:
                    pass


def import_array(rt, handle: int, nbytes: int) -> Import:
    """Imports the GPU array `handle` of rt's session (nbytes: its size) into this process."""
    if rt.share_path is None:
        raise CudaIpcError("only a client on the daemon's host (connected over its Unix socket) can map "
                           "GPU arrays; over TCP, numpy() copies")
    try:
        parts, fd = local_map.share_request(rt.share_path, rt.token, rt.session, handle)
    except OSError as e:
        raise CudaIpcError(f"the daemon's share socket cannot be reached: {e}") from None
    try:
        if parts and parts[0] == "error":
            raise CudaIpcError(" ".join(parts[2:]) or "the daemon refused")
        if len(parts) != 7 or parts[0] != "ok" or parts[4] != "cuda" or fd < 0:
            raise CudaIpcError("the daemon did not share this array as GPU memory")
        offset, size, serial, uuid, blob = int(parts[1]), int(parts[2]), int(parts[3]), parts[5], parts[6]
        data = bytes.fromhex(blob)
        if size != nbytes or offset < 0 or len(data) != 64:
            raise CudaIpcError("the daemon's answer does not describe this array")
        with _lock:
            driver = _get_driver()
            ctx = driver.context(uuid)
            known = _pools.get((rt.session, serial))
            if known is None:
                pool = c_void_p()
                handle = fd
                if handle == 0:  # a null handle to the driver: another number for the same file
                    handle = os.dup(fd)
                try:
                    driver.in_context(ctx, lambda: driver.check(
                        driver.import_pool(byref(pool), c_void_p(handle), _HANDLE_POSIX_FD, 0),
                        "cuMemPoolImportFromShareableHandle"))
                finally:
                    if handle != fd:
                        os.close(handle)
                known = _pools[(rt.session, serial)] = (ctx, pool)
            pool = known[1]
            ptr = c_uint64()
            blob_buf = (ctypes.c_ubyte * 64).from_buffer_copy(data)
            driver.in_context(ctx, lambda: driver.check(
                driver.import_pointer(byref(ptr), pool, ctypes.addressof(blob_buf)), "cuMemPoolImportPointer"))
            imported = Import(driver, ctx, rt.session, ptr.value, offset, size, driver.ordinals[uuid])
            _live.add(imported)
            return imported
    finally:
        if fd >= 0:
            os.close(fd)


def imported_root(a) -> Import:
    """The import of `a`'s root array (made on first use, kept with the root): a view is
    its root's memory at its offset. CudaIpcError where it cannot be."""
    root = a._root if a._root is not None else a
    with _lock:
        imported = root.__dict__.get("_cuda_import")
        if imported is not None and imported.address:
            return imported
        refusal = root.__dict__.get("_cuda_refusal")
        if refusal is not None:  # the daemon's answer does not change for this array
            raise CudaIpcError(refusal)
        try:
            imported = import_array(root._rt, root.handle, root.capacity)
        except CudaIpcError as e:
            root._cuda_refusal = str(e)
            raise
        root._cuda_import = imported
        return imported


def interface(a) -> dict:
    """``a.__cuda_array_interface__`` (module docstring); AttributeError where it cannot be."""
    import numpy as np  # noqa: PLC0415

    from . import array_view  # noqa: PLC0415
    from . import types as wt  # noqa: PLC0415

    if a.handle is None:
        raise AttributeError("__cuda_array_interface__: the array is not allocated")
    if not a.device.is_cuda:
        raise AttributeError(f"__cuda_array_interface__: the array is on {a.device}, not a GPU "
                             f"(use __array_interface__ or numpy())")
    np_dtype = wt.numpy_dtype(a.dtype)
    eshape = wt.element_shape(a.dtype)
    estrides = array_view.contiguous_strides(eshape, np_dtype.itemsize)
    shape = tuple(a.shape) + tuple(eshape)
    strides = tuple(a.strides) + tuple(estrides)
    if a.size == 0:
        return {"shape": shape, "typestr": np_dtype.str, "descr": np_dtype.descr, "data": (0, False),
                "strides": strides, "version": 3, "stream": None}
    try:
        imported = imported_root(a)
    except CudaIpcError as e:
        raise AttributeError(f"__cuda_array_interface__: {e}") from None
    a._rt.synchronize(a.device)
    return {"shape": shape, "typestr": np_dtype.str, "descr": np_dtype.descr,
            "data": (imported.address + a._offset, False),
            "strides": None if strides == array_view.contiguous_strides(shape, np_dtype.itemsize) else strides,
            "version": 3, "stream": None}


# ------------------------------------------------------------------ DLPack

KDL_CUDA = 2


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(ctypes.c_int64)), ("strides", POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", _Deleter)]

# What each capsule's tensor holds alive (the array, the shape and strides),
# by the address of its DLManagedTensor, until its deleter runs.
_exported: dict[int, tuple] = {}


@_Deleter
def _delete(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


_PyCapsule_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Function objects of this module's own (ctypes.pythonapi's attributes are
# shared: another module setting their argtypes would change these).
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, _PyCapsule_Destructor)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))


@_PyCapsule_Destructor
def _capsule_gone(capsule):
    # Not consumed (still named "dltensor"): the capsule's tensor goes with it.
    if _capsule_is_valid(capsule, b"dltensor"):
        address = _capsule_pointer(capsule, b"dltensor")
        if address:
            _exported.pop(address, None)


def _dl_type(np_dtype) -> tuple[int, int]:
    if np_dtype.kind == "b":
        return 6, 8  # kDLBool
    code = {"i": 0, "u": 1, "f": 2}.get(np_dtype.kind)
    if code is None:
        raise BufferError(f"DLPack: no DLPack type for {np_dtype}")
    return code, np_dtype.itemsize * 8


def dlpack_device(a) -> tuple[int, int] | None:
    """(kDLCUDA, this process's ordinal of the GPU) when `a` can be exported here as GPU
    memory; None otherwise."""
    if a.handle is None or not a.device.is_cuda or a.size == 0:
        return None
    try:
        return (KDL_CUDA, imported_root(a).ordinal)
    except CudaIpcError:
        return None


def dlpack_capsule(a):
    """A legacy DLPack capsule ("dltensor") of `a`'s GPU memory in this process (kDLCUDA;
    no copy), after the array's queued work; it keeps `a` alive. CudaIpcError where the
    memory cannot be imported."""
    import numpy as np  # noqa: PLC0415

    from . import array_view  # noqa: PLC0415
    from . import types as wt  # noqa: PLC0415

    imported = imported_root(a)
    a._rt.synchronize(a.device)
    np_dtype = wt.numpy_dtype(a.dtype)
    code, bits = (4, 16) if a.dtype is getattr(wt, "bfloat16", None) else _dl_type(np.dtype(np_dtype))
    eshape = tuple(wt.element_shape(a.dtype))
    shape = tuple(a.shape) + eshape
    itemsize = np.dtype(np_dtype).itemsize
    strides = tuple(a.strides) + tuple(array_view.contiguous_strides(eshape, itemsize))
    if any(st % itemsize for st in strides):
        raise BufferError("DLPack: the array's strides are not whole elements")
    shape_buf = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    strides_buf = (ctypes.c_int64 * max(1, len(shape)))(*(st // itemsize for st in strides))
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data = imported.address + a._offset
    t.device = _DLDevice(KDL_CUDA, imported.ordinal)
    t.ndim = len(shape)
    t.dtype = _DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape_buf, POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_buf, POINTER(ctypes.c_int64))
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _exported[address] = (a, managed, shape_buf, strides_buf)
    return _capsule_new(address, b"dltensor", _capsule_gone)


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_VersionedDeleter = ctypes.CFUNCTYPE(None, POINTER(_DLManagedTensorVersioned))
_DLManagedTensorVersioned._fields_ = [("version", _DLPackVersion), ("manager_ctx", c_void_p),
                                      ("deleter", _VersionedDeleter), ("flags", ctypes.c_uint64),
                                      ("dl_tensor", _DLTensor)]
_capsule_name = ctypes.PYFUNCTYPE(c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer_of = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_capsule_set_name = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))
_USED = {b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}


def _np_type(code: int, bits: int, lanes: int):
    import numpy as np  # noqa: PLC0415

    if lanes != 1:
        raise TypeError(f"wp.from_dlpack: vector lanes ({lanes}) are not supported")
    name = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8",
            (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32",
            (2, 64): "float64", (4, 16): "uint16", (6, 8): "bool"}.get((code, bits))
    if name is None:
        raise TypeError(f"wp.from_dlpack: no NumPy type for DLPack type code {code} with {bits} bits")
    return np.dtype(name)


def host_copy(capsule):
    """(a NumPy copy of the tensor of a kDLCUDA DLPack capsule, this process's ordinal of its GPU,
    whether its type is bfloat16 (held as uint16 here)):
    the bytes it spans, read through this process's driver (cuMemcpyDtoH, after the work on
    the legacy default stream), then packed. The capsule is consumed (its deleter called)."""
    import numpy as np  # noqa: PLC0415

    name = _capsule_name(capsule)
    if name not in _USED:
        raise TypeError(f"wp.from_dlpack: a capsule named {name!r} is not an unconsumed DLPack tensor")
    address = _capsule_pointer_of(capsule, name)
    managed = (_DLManagedTensor if name == b"dltensor" else _DLManagedTensorVersioned).from_address(address)
    if name == b"dltensor_versioned" and managed.version.major != 1:
        raise BufferError(f"wp.from_dlpack: DLPack {managed.version.major}.{managed.version.minor} is not "
                          f"supported (1.x is)")
    t = managed.dl_tensor
    if t.device.device_type != KDL_CUDA:
        raise TypeError("wp.from_dlpack: not a CUDA tensor")
    dtype = _np_type(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    bfloat16 = (t.dtype.code, t.dtype.bits) == (4, 16)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = dtype.itemsize
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides, step = [], 1
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
        strides = tuple(strides)
    ordinal = t.device.device_id
    size = 1
    for n in shape:
        size *= n
    lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides) if n > 0)
    hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides) if n > 0) + 1
    span = np.empty(max(0, hi - lo) * itemsize if size else 0, dtype=np.uint8)
    try:
        if span.size:
            with _lock:
                driver = _get_driver()
                uuids = driver.uuids()
                if not 0 <= ordinal < len(uuids):
                    raise CudaIpcError(f"the tensor is on GPU {ordinal}, which this process does not see")
                ctx = driver.context(uuids[ordinal])
                source = t.data + t.byte_offset + lo * itemsize
                driver.in_context(ctx, lambda: driver.check(
                    driver.dtoh(span.ctypes.data, source, span.nbytes), "cuMemcpyDtoH"))
        values = np.ndarray(shape, dtype=dtype, buffer=span if span.size else None,
                            offset=-lo * itemsize if span.size else 0,
                            strides=tuple(st * itemsize for st in strides)).copy() if size else \
            np.empty(shape, dtype=dtype)
    finally:
        # The consumer's part: the capsule is used, its tensor released.
        _capsule_set_name(capsule, _USED[name])
        if managed.deleter:
            managed.deleter(ctypes.pointer(managed))
    return values, ordinal, bfloat16


def dlpack_device_readable() -> bool:
    """Whether this process has a driver to read CUDA tensors with."""
    try:
        with _lock:
            _get_driver()
        return True
    except CudaIpcError:
        return False


def uuid_of(ordinal: int) -> str | None:
    """The UUID of this process's GPU `ordinal`, or None."""
    try:
        with _lock:
            uuids = _get_driver().uuids()
    except CudaIpcError:
        return None
    return uuids[ordinal] if 0 <= ordinal < len(uuids) else None


def release(a):
    """Frees `a`'s import, if it made one (its __del__, before the daemon frees it)."""
    imported = a.__dict__.pop("_cuda_import", None)
    if imported is not None:
        imported.close()


def close_session(session: str):
    """Frees every import of `session` and its imported pools (before the session
    closes, which frees its arrays)."""
    with _lock:
        for imported in [i for i in _live if i.session == session]:
            imported.close()
        for key in [k for k in _pools if k[0] == session]:
            ctx, pool = _pools.pop(key)
            try:
                _driver.in_context(ctx, lambda pool=pool: _driver.destroy_pool(pool))
            except CudaIpcError:
                pass


__all__ = ["CudaIpcError", "Import", "import_array", "interface", "release"]
