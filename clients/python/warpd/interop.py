"""Interop with other array libraries on the same host: DLPack and PyTorch.

warpd arrays live in the daemon. Where a CPU array's memory is mapped into
this process (a client on the daemon's Unix socket, arrays of 64 KiB or
more: local_map.py), its DLPack export (``a.__dlpack__()``,
``wp.to_dlpack(a)``, and so ``np.from_dlpack(a)``, ``wp.to_torch(a)``) is a
view of that memory: no copy, writes through it change the array, and it
keeps the array alive. A GPU array of such a client is exported as GPU
memory (``__dlpack_device__`` is (kDLCUDA, the GPU's ordinal in this
process)), imported through CUDA IPC (cuda_ipc.py): ``wp.to_torch(a)`` is
then a CUDA tensor on the same memory, as in Warp. Elsewhere (small arrays,
clients over TCP, a GPU array this process cannot import) the export holds a
copy in host memory downloaded at the call (``copy=False`` then raises
BufferError; ``__dlpack_device__`` is (kDLCPU, 0)). The call first waits for
the array's queued work.

The other way, ``wp.from_dlpack(x)`` / ``wp.from_torch(t)`` copy the data
into a new daemon array (the daemon cannot adopt this process's memory),
except that a ``wp.array`` given to ``from_dlpack`` is returned itself. A
CUDA tensor of this process is read through this process's driver
(``cuMemcpyDtoH``) and lands on the daemon's GPU with the same UUID (when no
``device`` is given and the daemon has it).

PyTorch is optional: ``to_torch``/``from_torch`` raise ImportError saying so
when ``import torch`` fails.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

DLPACK_CPU = (1, 0)  # (kDLCPU, device 0)
_KDL_CPU = 1
_KDL_CUDA = 2
_KDL_CUDA_HOST = 3  # pinned host memory


def dlpack_device(a) -> tuple[int, int]:
    """``a.__dlpack_device__()``: see the module docstring."""
    from . import cuda_ipc  # noqa: PLC0415

    return cuda_ipc.dlpack_device(a) or DLPACK_CPU


def dlpack_capsule(a, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``a.__dlpack__(...)``: see the module docstring."""
    from . import cuda_ipc  # noqa: PLC0415

    a._check_live()
    on_gpu = cuda_ipc.dlpack_device(a)
    if on_gpu is not None and (dl_device is None or tuple(dl_device) == on_gpu):
        if copy:
            raise BufferError("a GPU array is exported as its own memory: this process cannot copy it on the "
                              "GPU (pass dl_device=(1, 0) for a copy in host memory)")
        return cuda_ipc.dlpack_capsule(a)  # the consumer's stream needs no wait: nothing is queued after it
    if dl_device is not None and tuple(dl_device) != DLPACK_CPU:
        raise BufferError(f"this warpd array can be exported as host memory only (dl_device {tuple(dl_device)} "
                          f"was asked for)")
    local = a._local_view() if a.size else None
    if local is not None:
        a._rt.synchronize(a.device)
        values = local.copy() if copy else local
    else:
        if copy is False:
            raise BufferError("this warpd array is not mapped into this process (it is small, on a GPU, or "
                              "the client is not on the daemon's host): exporting it needs a copy")
        values = a.numpy()
        if not values.flags.writeable:
            values = values.copy()
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    return values.__dlpack__(stream=stream, **kwargs)


def to_dlpack(a):
    """A DLPack capsule of `a`'s data (legacy, unversioned, as Warp's): shares the
    memory where `a` is mapped into this process, else a copy (module docstring)."""
    return a.__dlpack__()


def from_dlpack(source, dtype=None, device=None, requires_grad=False):
    """A new warpd array holding a copy of `source`'s data: an object with
    ``__dlpack__`` (NumPy, PyTorch, ...) or a DLPack capsule, in host memory.
    `dtype` as for ``wp.array`` (e.g. ``wp.vec3`` for an (n, 3) float32 source);
    its scalar type must be the source's (as in Warp: no conversion). A
    ``wp.array`` is returned itself (no copy)."""
    from . import types as wt  # noqa: PLC0415
    from .array import array  # noqa: PLC0415 - array imports this module lazily

    if isinstance(source, array):
        return source
    capsule = source
    if not _is_capsule(source):
        if not hasattr(source, "__dlpack__") or not hasattr(source, "__dlpack_device__"):
            raise TypeError(f"wp.from_dlpack: expected an object with __dlpack__ and __dlpack_device__, or a "
                            f"DLPack capsule, got {type(source).__name__}")
        source_device = tuple(source.__dlpack_device__())
        _check_device(source_device)
        # A GPU tensor's producer orders its work before the legacy default stream (1),
        # which the copy below follows.
        capsule = source.__dlpack__(stream=1) if source_device[0] == _KDL_CUDA else source.__dlpack__()
        if not _is_capsule(capsule):
            raise TypeError(f"Expected a valid DLPack capsule, got {type(capsule).__name__}")
    wrapped = _Capsule(capsule)
    _check_device(wrapped.device)
    if wrapped.device[0] == _KDL_CUDA:
        from . import cuda_ipc  # noqa: PLC0415
        try:
            values, ordinal, bfloat16 = cuda_ipc.host_copy(capsule)
        except cuda_ipc.CudaIpcError as e:
            raise TypeError(f"wp.from_dlpack: cannot read this GPU tensor here: {e}") from None
        if bfloat16 and dtype is None:
            dtype = _bfloat16()  # its bits, held as uint16 by NumPy
        if device is None:
            device = _daemon_gpu(cuda_ipc.uuid_of(ordinal))
    else:
        values = np.from_dlpack(wrapped)
    if dtype is not None:
        want = wt.numpy_dtype(wt.canonical_dtype(dtype))
        same = want == values.dtype or (wt.canonical_dtype(dtype) is _bfloat16() and values.dtype == np.uint16)
        if values.dtype == np.bool_ and want in (np.int8, np.uint8):  # bool bytes as (u)int8, as Warp
            values, same = values.view(want), True
        if not same:
            raise RuntimeError(f"Incompatible data types: DLPack {_dl_name(values.dtype)} and Warp "
                               f"{wt.type_name(wt.canonical_dtype(dtype))}")
    return array(values, dtype=dtype if dtype is not None else Any, device=device, requires_grad=requires_grad)


def _bfloat16():
    from . import types as wt  # noqa: PLC0415

    return wt.bfloat16


def _dl_name(dt: np.dtype) -> str:
    """DLPack's name of a NumPy dtype, as Warp spells it (bool8, float32, uint16...)."""
    if dt.kind == "b":
        return "bool8"
    kind = {"f": "float", "i": "int", "u": "uint", "c": "complex"}.get(dt.kind, dt.kind)
    return f"{kind}{dt.itemsize * 8}"


def _check_device(dev: tuple):
    if dev[0] not in (_KDL_CPU, _KDL_CUDA_HOST, _KDL_CUDA):
        raise TypeError(f"Unsupported source device for DLPack: device_type={dev[0]}, device_id={dev[1]} "
                        f"(warpd reads DLPack data in host memory or on a CUDA GPU of this process)")


def _daemon_gpu(uuid: str | None):
    """The daemon's device that is the GPU `uuid`, else None (the default device)."""
    if uuid is None:
        return None
    from .context import runtime  # noqa: PLC0415

    for d in runtime().devices.values():
        if getattr(d, "uuid", None) == uuid:
            return d.alias
    return None


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _torch():
    try:
        import torch  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise ImportError(f"PyTorch is not installed in this Python environment ({e}): wp.to_torch and "
                          f"wp.from_torch need it (pip install torch); wp.to_dlpack, wp.from_dlpack and "
                          f"array.numpy() work without it") from None
    return torch


def _torch_dtypes(torch) -> list:
    """(torch dtype, warpd scalar type) pairs, Warp's table."""
    from . import types as wt  # noqa: PLC0415

    return [(torch.float16, wt.float16), (torch.float32, wt.float32), (torch.float64, wt.float64),
            (torch.int8, wt.int8), (torch.uint8, wt.uint8), (torch.int16, wt.int16), (torch.int32, wt.int32),
            (torch.int64, wt.int64), (torch.bool, wt.bool), (torch.bfloat16, wt.bfloat16)]


def dtype_from_torch(torch_dtype):
    """The warpd scalar type of a torch dtype (Warp's ``wp.dtype_from_torch``); TypeError otherwise."""
    torch = _torch()
    for t, w in _torch_dtypes(torch):
        if torch_dtype == t:
            return w
    raise TypeError(f"Cannot convert {torch_dtype} to a Warp type")


def dtype_to_torch(warp_dtype):
    """The torch dtype of a warpd type's scalars (Warp's ``wp.dtype_to_torch``: a vector or
    matrix type gives its scalar's); TypeError otherwise."""
    from . import types as wt  # noqa: PLC0415

    torch = _torch()
    scalar = wt.type_scalar(warp_dtype) if not wt.is_struct_type(warp_dtype) else None
    for t, w in _torch_dtypes(torch):
        if scalar is w:
            return t
    raise TypeError(f"Cannot convert {warp_dtype} to a Torch type")


def device_from_torch(torch_device) -> str:
    """The warpd device name of a torch device ("cpu", "cuda:N"; Warp's ``wp.device_from_torch``)."""
    torch = _torch()
    d = torch.device(torch_device)
    if d.type == "cuda":
        return f"cuda:{d.index if d.index is not None else torch.cuda.current_device()}"
    if d.type == "cpu":
        return "cpu"
    raise RuntimeError(f"Unsupported Torch device {d}")


def device_to_torch(warp_device) -> str:
    """The torch device string of a warpd device ("cpu", "cuda:N"; Warp's ``wp.device_to_torch``)."""
    from .device import Device

    name = warp_device.alias if isinstance(warp_device, Device) else str(warp_device)
    if name == "cuda":
        name = "cuda:0"
    if name != "cpu" and not name.startswith("cuda:"):
        raise RuntimeError(f"Invalid device '{warp_device}'")
    return name


def to_torch(a, requires_grad=None):
    """A ``torch.Tensor`` of `a`'s data through DLPack: shares the memory where `a` is
    mapped into this process (a CUDA tensor for a GPU array imported through CUDA IPC),
    else a CPU copy. `requires_grad` None: `a`'s."""
    torch = _torch()
    t = torch.from_dlpack(a)
    if requires_grad is None:
        requires_grad = bool(getattr(a, "requires_grad", False))
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_torch(t, dtype=None, requires_grad=None, device=None):
    """A new warpd array holding a copy of tensor `t` (a GPU tensor is copied to the
    host first). `requires_grad` None: `t`'s."""
    _torch()
    if requires_grad is None:
        requires_grad = bool(t.requires_grad)
    source = t.detach()
    if source.device.type != "cpu":
        if device is None and source.device.type == "cuda":
            device = f"cuda:{source.device.index or 0}"
        source = source.cpu()
    return from_dlpack(source, dtype=dtype, device=device, requires_grad=requires_grad)


# ----------------------------------------------------------------- raw capsules

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):  # DLTensor's first members
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class _DLManagedTensorVersionedHead(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensorHead)]


# Function objects of this module's own: ctypes.pythonapi's attributes are
# shared by every module of the process, so setting their argtypes would
# change other users' calls.
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class _Capsule:
    """A DLPack capsule given as such (Warp's and PyTorch's to_dlpack), as the
    object with ``__dlpack__`` that np.from_dlpack takes."""

    def __init__(self, capsule):
        name = _get_name(capsule)
        if name not in (b"dltensor", b"dltensor_versioned"):
            raise TypeError(f"wp.from_dlpack: a capsule named {name!r} is not an unconsumed DLPack tensor")
        ptr = _get_pointer(capsule, name)
        if name == b"dltensor":
            device = _DLTensorHead.from_address(ptr).device
        else:
            device = _DLManagedTensorVersionedHead.from_address(ptr).dl_tensor.device
        self._capsule = capsule
        self.device = (device.device_type, device.device_id)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("a DLPack capsule cannot be copied by its consumer")
        return self._capsule
