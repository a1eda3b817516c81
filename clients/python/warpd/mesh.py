"""wp.Mesh: a triangle mesh kept by the daemon, queried by kernels by its id.

    mesh = wp.Mesh(points, indices)     # points: wp.vec3 array; indices: flat int32 array, 3 per triangle
    wp.launch(k, dim=n, inputs=[mesh.id, ...])
    mesh.refit()                        # after the points moved: same tree, new boxes

    @wp.kernel
    def k(mesh: wp.uint64, ...):
        q = wp.mesh_query_ray(mesh, start, dir, 1.0e6)
        if q.result:
            ... q.t, q.face, q.u, q.v, q.sign, q.normal ...

The mesh and its BVH (runtime/objects/mesh.h) live in the daemon and
belong to this client's session; ``id`` is an unguessable uint64 handle that
only this session's kernels resolve (through the launch's object table): an
id of another session, a freed mesh's or a made-up one fails the launch with
a clear error. The mesh holds its ``points``, ``indices`` and
``velocities`` arrays; the build (at construction) and ``refit`` are stream
commands, ordered with launches and copies (they may be captured in a
graph). Vertex indices are checked by the build and refit and by every
query. The mesh is freed when this object is garbage-collected (in stream
order) or when the session ends. Construction costs one short round trip:
the mesh is made and its build queued in one batch (bvh._make_tree).
"""

from __future__ import annotations

from . import types as wt
from .bvh import (_SPLIT, BvhConstructor, _check_groups, _check_leaf_size, _check_vec3, _constructor, _cpu_constructor,
                  _make_tree)
from .context import runtime
from .server_object import ServerObject
from .v1 import runtime_pb2


def is_cubql_available() -> bool:
    """Whether the cuBQL BVH builder is available (Warp's): never in warpd."""
    return False


def _check_replacement(new, old, name: str, what: str):
    """Warp's checks of an array assigned to mesh.points / mesh.velocities: the old one's device
    and shape (one dimension), and a contiguous wp.vec3 array."""
    if new.device != old.device:
        raise RuntimeError(
            f"The new {name} and the original {name} must live on the same device, the "
            f"new {name} are on {new.device} while the old {name} are on {old.device}.")
    if new.ndim != 1 or new.shape[0] != old.shape[0]:
        raise RuntimeError(
            f"The new {name} and the original {name} must have the same shape, the "
            f"new {name}' shape is {new.shape}, while the old {name}' shape is {old.shape}.")
    _check_vec3(new, what)


def _grad_handle(a) -> int:
    """The handle of the gradient array of ``a`` (Warp's ``a.grad``; 0: none), which the mesh
    holds: kernels' reads through ``wp.mesh_get(id).points`` / ``.velocities`` accumulate their
    adjoints there."""
    grad = getattr(a, "grad", None) if a is not None else None
    return grad.handle if grad is not None else 0


class Mesh(ServerObject):
    """Class representing a triangle mesh (Warp's ``wp.Mesh``)."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None
        return instance

    def __init__(self, points, indices, velocities=None, support_winding_number: bool = False,
                 bvh_constructor=None, bvh_leaf_size: int | None = None, groups=None):
        """Args:
            points: contiguous array of wp.vec3, the vertex positions.
            indices: contiguous 1-D array of wp.int32, 3 per triangle.
            velocities: optional contiguous array of wp.vec3, the vertex velocities.
            support_winding_number: accepted (warpd sums winding numbers exactly).
            bvh_constructor: "sah" (default) or "median"; "lbvh" falls back to "sah" with a warning.
            bvh_leaf_size: triangles per leaf (default 4; 1..64).
            groups: optional contiguous wp.int32 array, one group per triangle: each group's faces
                form one subtree, whose root ``wp.mesh_get_group_root`` gives (for ``root=``).
        """
        from .array import array as _array  # noqa: PLC0415 - array imports context lazily too

        if not isinstance(points, _array) or not isinstance(indices, _array):
            raise TypeError("Mesh points and indices should be warp arrays")
        if points.device != indices.device:
            raise RuntimeError("Mesh points and indices must live on the same device")
        _check_vec3(points, "Mesh points")
        if velocities is not None:
            if not isinstance(velocities, _array):
                raise RuntimeError("Mesh velocities should be a contiguous array of type wp.vec3")
            _check_vec3(velocities, "Mesh velocities")
        if not wt.types_equal(indices.dtype, wt.int32) or not indices.is_contiguous:
            raise RuntimeError("Mesh indices should be a contiguous array of type wp.int32")
        if indices.ndim > 1:
            raise RuntimeError("Mesh indices should be a flattened 1d array of indices")
        groups_handle = _check_groups(groups, indices.size // 3, points.device, "points", "indices / 3")
        if _constructor(bvh_constructor) == BvhConstructor.CUBQL:
            if groups is not None:
                raise RuntimeError("Grouped mesh queries are not supported with bvh_constructor='cubql'")
            if support_winding_number:
                raise RuntimeError("support_winding_number=True is not supported with bvh_constructor='cubql'")
        bvh_leaf_size = _check_leaf_size(4 if bvh_leaf_size is None else bvh_leaf_size, "bvh_leaf_size")
        constructor = _cpu_constructor(bvh_constructor)
        rt = runtime()
        self._rt = rt
        self.device = points.device
        self._stream = rt.default_stream(self.device)
        self._points = points
        self._velocities = velocities
        self.indices = indices
        self.groups = groups
        self.support_winding_number = bool(support_winding_number)
        self.bvh_leaf_size = bvh_leaf_size
        self._constructor = constructor
        _make_tree(self, "mesh", runtime_pb2.CreateMeshRequest(
            points=points.handle, indices=indices.handle,
            velocities=velocities.handle if velocities is not None else 0, leaf_size=bvh_leaf_size,
            support_winding_number=self.support_winding_number, groups=groups_handle,
            points_grad=_grad_handle(points), velocities_grad=_grad_handle(velocities)),
            lambda: self._queue_build(refit=False))

    def _queue_build(self, refit: bool, points=None, velocities=None):
        if not self.id:
            raise RuntimeError("this Mesh was not created or has been freed")
        new = (points, velocities, getattr(points, "grad", None), getattr(velocities, "grad", None))
        keep = tuple(a for a in (self, self._points, self.indices, self._velocities, self.groups, *new)
                     if a is not None)
        with self._rt.lock:
            # As in Warp, on the device's current stream (a ScopedStream's).
            cmd = self._rt.stream(self.device).add(keep=keep)
            cmd.build_tree.object = self.id
            cmd.build_tree.refit = refit
            cmd.build_tree.split = _SPLIT[self._constructor.name.lower()]
            if points is not None:
                cmd.build_tree.points = points.handle
                cmd.build_tree.points_grad = _grad_handle(points)
            if velocities is not None:
                cmd.build_tree.velocities = velocities.handle
                cmd.build_tree.velocities_grad = _grad_handle(velocities)

    @property
    def points(self):
        """The array of the mesh's vertex positions (wp.vec3). Modify it in place, then call :meth:`refit`."""
        return self._points

    @points.setter
    def points(self, points_new):
        """Makes ``points_new`` (the same shape, wp.vec3) the mesh's points and refits the tree to
        them (queued on the device stream)."""
        _check_replacement(points_new, self._points, "points", "Mesh points")
        self._points = points_new
        self._queue_build(refit=True, points=points_new)

    @property
    def velocities(self):
        """The array of the mesh's vertex velocities (wp.vec3), or None."""
        return self._velocities

    @velocities.setter
    def velocities(self, velocities_new):
        """Makes ``velocities_new`` (the same shape as the old velocities, or as the points when
        there were none; wp.vec3) the mesh's velocities (queued on the device stream; no refit)."""
        old = self._velocities if self._velocities is not None else self._points
        _check_replacement(velocities_new, old, "velocities", "Mesh velocities")
        self._velocities = velocities_new
        self._queue_build(refit=True, velocities=velocities_new)

    def refit(self):
        """Refits the BVH to the current points (queued on the device stream); call it after
        modifying ``points``."""
        self._queue_build(refit=True)
