"""wp.Bvh: a bounding volume hierarchy over item boxes, kept and built by the daemon.

    bvh = wp.Bvh(lowers, uppers)        # arrays of wp.vec3 (contiguous, same length)
    wp.launch(k, dim=n, inputs=[bvh.id, ...])
    bvh.refit()                         # after lowers/uppers changed: same tree, new boxes

    @wp.kernel
    def k(bvh: wp.uint64, ...):
        query = wp.bvh_query_aabb(bvh, lo, hi)   # or bvh_query_ray / _sphere / _capsule
        item = int(0)
        while wp.bvh_query_next(query, item):
            ...

The tree lives in the daemon (runtime/objects/bvh.h) and belongs to this
client's session; ``id`` is its handle, an unguessable uint64 that only this
session's kernels resolve (through the launch's object table): an id of
another session, a freed BVH's or a made-up one fails the launch with a
clear error. The BVH holds its ``lowers`` and ``uppers`` arrays; the build
(at construction), ``refit`` and ``rebuild`` are stream commands, ordered
with launches and copies (they may be captured in a graph, and each replay
builds again from the arrays' current contents). The BVH is freed when this
object is garbage-collected (in stream order) or when the session ends.

Construction costs one short round trip (``_make_tree``): the client draws
the id and sends the object's making and its build in one batch; the
daemon's checks (and a memory quota) raise at the constructor, the build
runs in stream order while Python goes on, and a later synchronize or
launch sees the built tree.
"""

from __future__ import annotations

import enum
import operator
import os
import warnings

from . import types as wt
from .context import runtime
from .server_object import ServerObject
from .v1 import runtime_pb2

_SPLIT = {"sah": 0, "median": 1}


class BvhConstructor(enum.IntEnum):
    """BVH construction algorithm selection (Warp's names and values)."""

    SAH = 0
    MEDIAN = 1
    LBVH = 2
    CUBQL = -1

    @classmethod
    def from_str(cls, value: str) -> BvhConstructor:
        try:
            return cls[value.upper()]
        except KeyError:
            raise ValueError(
                f"Unknown BVH constructor '{value}', expected one of: {', '.join(m.name.lower() for m in cls)}"
            ) from None


def _constructor(constructor) -> BvhConstructor | None:
    """`constructor` (None, a name or a BvhConstructor) as a BvhConstructor, or None."""
    if constructor is None or isinstance(constructor, BvhConstructor):
        return constructor
    return BvhConstructor.from_str(constructor)


def _cpu_constructor(constructor) -> BvhConstructor:
    """The CPU construction for `constructor` (None: SAH), as Warp picks it for a CPU tree."""
    constructor = _constructor(constructor)
    if constructor is None:
        return BvhConstructor.SAH
    if constructor == BvhConstructor.LBVH:
        warnings.warn("LBVH constructor is not available for a CPU tree. Falling back to SAH constructor.",
                      stacklevel=3)
        return BvhConstructor.SAH
    if constructor == BvhConstructor.CUBQL:
        raise RuntimeError("the cuBQL BVH constructor is not available in warpd (use 'sah' or 'median')")
    return constructor


def _check_vec3(a, what: str):
    """Warp's check of a tree's box or point array: a contiguous wp.vec3 array."""
    if not wt.types_equal(a.dtype, wt.vec3) or not a.is_contiguous:
        raise RuntimeError(f"{what} should be a contiguous array of type wp.vec3")


def _check_leaf_size(value, name: str) -> int:
    """Items per leaf: 1..64 (Warp's lower bound; warpd's traversal keeps leaves small)."""
    value = operator.index(value)
    if value < 1:
        raise ValueError(f"{name} must be greater than or equal to 1, current value: {value}")
    if value > 64:
        raise ValueError(f"{name} must be at most 64 in warpd, current value: {value}")
    return value


def _check_groups(groups, count: int, device, same_device_as: str, length_of: str) -> int:
    """The handle of a tree's `groups` array (Warp's checks: contiguous int32, one per item,
    on the tree's device), or 0 for None."""
    if groups is None:
        return 0
    if not wt.types_equal(groups.dtype, wt.int32) or not groups.is_contiguous:
        raise RuntimeError("groups should be a contiguous array of type wp.int32")
    if groups.device != device:
        raise RuntimeError(f"groups must live on the same device as {same_device_as}")
    if groups.size != count:
        raise RuntimeError(f"groups must have the same length as {length_of}")
    return groups.handle


def _draw_id() -> int:
    """A new object's id, drawn by the client: 64 random bits, never 0 (the daemon refuses
    0 and ids its session already uses)."""
    while True:
        h = int.from_bytes(os.urandom(8), "little")
        if h:
            return h


def _make_tree(tree, kind: str, request, queue_build):
    """Makes ``tree``'s object in the daemon (``kind`` "bvh" or "mesh"; ``request`` its
    CreateBvhRequest / CreateMeshRequest, without session and device), sets ``tree.id`` and
    queues its build (``queue_build()`` adds the build_tree command).

    Outside a capture, one batch: a create_tree command under an id drawn here, then the
    build, sent at once (over the local command socket, a short round trip) with nothing
    before it but the stream's queued commands (sent first: a failure of theirs raises
    here, as from any flush). The daemon accepts the batch all or nothing, so when it
    refuses (its checks, a memory quota) nothing was made, the error raises here and
    ``tree.id`` stays None. The build runs in stream order, after every command queued
    before; its errors (a vertex index out of range) are the stream's, raised by the next
    synchronize. In a capture the build is recorded (each replay builds again) and the
    object is made at once by the CreateBvh / CreateMesh RPC."""
    rt, stream = tree._rt, tree._stream
    with rt.lock:
        if stream.capturing:
            request.session = rt.session
            request.device = tree.device.alias
            if kind == "mesh":
                tree.id = rt.call("CreateMesh", request).mesh
            else:
                tree.id = rt.call("CreateBvh", request).bvh
            queue_build()
            return
        if stream.queued:
            stream.flush()
        else:
            stream.wait_pending()
        cmd = stream.add()
        cmd.create_tree.id = _draw_id()
        getattr(cmd.create_tree, kind).CopyFrom(request)
        tree.id = cmd.create_tree.id
        try:
            queue_build()
            stream.flush()
        except BaseException:
            tree.id = None  # never made: nothing to free
            raise


class Bvh(ServerObject):
    """Bounding Volume Hierarchy (BVH) for accelerated spatial queries (Warp's ``wp.Bvh``)."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None
        return instance

    def __init__(self, lowers, uppers, constructor=None, groups=None, leaf_size: int = 1):
        """Args:
            lowers, uppers: contiguous arrays of wp.vec3, the items' boxes (the same length, on one device).
            constructor: "sah" (default on the CPU) or "median"; "lbvh" falls back to "sah" with a warning.
            groups: optional contiguous wp.int32 array, one group per item: each group's items form
                one subtree, whose root ``wp.bvh_get_group_root`` gives (for ``root=`` of the queries).
            leaf_size: items per leaf (1..64).
        """
        from .array import array as _array  # noqa: PLC0415 - array imports context lazily too

        if not isinstance(lowers, _array) or not isinstance(uppers, _array):
            raise TypeError("lowers and uppers should be warp arrays of type wp.vec3")
        if len(lowers) != len(uppers):
            raise RuntimeError("The same number of lower and upper bounds must be provided")
        if lowers.device != uppers.device:
            raise RuntimeError("Lower and upper bounds must live on the same device")
        _check_vec3(lowers, "lowers")
        _check_vec3(uppers, "uppers")
        groups_handle = _check_groups(groups, len(lowers), lowers.device, "lowers/uppers", "lowers/uppers")
        if _constructor(constructor) == BvhConstructor.CUBQL and groups is not None:
            raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        leaf_size = _check_leaf_size(leaf_size, "leaf_size")
        constructor = _cpu_constructor(constructor)
        rt = runtime()
        self._rt = rt
        self.device = lowers.device
        self._stream = rt.default_stream(self.device)
        self.lowers = lowers
        self.uppers = uppers
        self.groups = groups
        self.leaf_size = leaf_size
        self._constructor = constructor
        _make_tree(self, "bvh", runtime_pb2.CreateBvhRequest(
            lowers=lowers.handle, uppers=uppers.handle, leaf_size=leaf_size, groups=groups_handle),
            lambda: self._queue_build(refit=False, constructor=constructor))

    def _queue_build(self, refit: bool, constructor: BvhConstructor):
        if not self.id:
            raise RuntimeError("this Bvh was not created or has been freed")
        with self._rt.lock:
            # As in Warp, on the device's current stream (a ScopedStream's).
            cmd = self._rt.stream(self.device).add(
                keep=(self, self.lowers, self.uppers) + ((self.groups,) if self.groups else ()))
            cmd.build_tree.object = self.id
            cmd.build_tree.refit = refit
            cmd.build_tree.split = _SPLIT[constructor.name.lower()]

    def refit(self):
        """Recomputes the tree's boxes from the current ``lowers``/``uppers`` (the same
        tree); call it after changing them. Queued on the device stream."""
        self._queue_build(refit=True, constructor=self._constructor)

    def rebuild(self, constructor=None):
        """Builds the tree again from the current ``lowers``/``uppers`` (in place).
        Queued on the device stream."""
        constructor = _cpu_constructor(constructor)
        self._queue_build(refit=False, constructor=constructor)
        self._constructor = constructor
