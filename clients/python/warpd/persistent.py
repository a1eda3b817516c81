"""Persistent arrays: data that outlives the session (and, when asked, the daemon).

An ordinary array is freed when its session ends (the client exits, or
stops renewing its lease). A persistent array belongs to the tenant under a
name, so a later session (another process, another notebook) can attach to it::

    a = wp.array(np.arange(10, dtype=np.float32), dtype=float)
    wp.persistent.save("weights", a)                 # until the daemon stops
    wp.persistent.save("table", t, durable=True)     # also across restarts

    # later, in another process of the same tenant
    w = wp.persistent.load("weights")                # a wp.array sharing the data
    wp.persistent.list()                             # [PersistentArray(name=..., ...)]
    wp.persistent.delete("weights")

Names are 1-128 characters of ``[A-Za-z0-9._-]``. ``durable`` arrays are
written to the daemon's state directory (``--state-dir``) when saved and
again when the daemon shuts down cleanly, and loaded when it starts; a crash
loses what was written to them since. ``load`` returns an array that shares
memory with the persistent one: writes through it are seen by every
session attached to the name.
"""

from __future__ import annotations

from typing import NamedTuple

from . import types as wt
from .array import LIVE, array
from .context import runtime
from .v1 import runtime_pb2


class PersistentArray(NamedTuple):
    name: str
    dtype: object
    shape: tuple
    nbytes: int
    durable: bool
    device: str


def _info(info) -> PersistentArray:
    return PersistentArray(info.name, wt.from_typeref(info.dtype), tuple(info.shape), info.size_bytes,
                           info.durable, info.device)


def save(name: str, arr: array, durable: bool = False) -> None:
    """Names `arr` persistent for this tenant (ALREADY_EXISTS if the name is taken)."""
    arr._check_live()
    rt = runtime()
    arr._stream.flush()
    rt.call("PersistArray", runtime_pb2.PersistArrayRequest(session=rt.session, handle=arr.handle, name=name,
                                                            durable=bool(durable)))


def load(name: str) -> array:
    """A new array of this session attached to the persistent array `name`."""
    rt = runtime()
    resp = rt.call("AttachPersistent", runtime_pb2.AttachPersistentRequest(session=rt.session, name=name))
    info = _info(resp.info)
    if info.dtype is None:
        raise TypeError(f"persistent array '{name}' has a struct dtype this program has not defined; "
                        f"define the @wp.struct first")
    a = array.__new__(array)
    a._requires_grad = False
    a._grad = None
    a.dtype = wt.canonical_dtype(info.dtype)
    a.shape = info.shape
    a.ndim = len(info.shape)
    size = 1
    for s in info.shape:
        size *= s
    a.size = size
    a.device = rt.device(info.device)
    a.handle = resp.handle
    LIVE[a.handle] = a
    a.strides = tuple(resp.strides)
    a._rt = rt
    a._stream = rt.default_stream(a.device)
    return a


def list() -> list[PersistentArray]:  # noqa: A001 (the natural name in this namespace)
    """This tenant's persistent arrays, by name."""
    rt = runtime()
    resp = rt.call("ListPersistent", runtime_pb2.ListPersistentRequest(session=rt.session))
    return [_info(i) for i in resp.arrays]


def delete(name: str) -> None:
    """Drops the name (and a durable array's file); sessions still attached keep their data."""
    rt = runtime()
    rt.call("DeletePersistent", runtime_pb2.DeletePersistentRequest(session=rt.session, name=name))
