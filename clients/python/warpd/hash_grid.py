"""wp.HashGrid: a hash grid for neighbour queries, kept and built by the daemon.

    grid = wp.HashGrid(128, 128, 128, device="cpu")
    grid.build(points, radius)          # queued on the device stream
    wp.launch(k, dim=n, inputs=[grid.id, points, ...])

    @wp.kernel
    def k(grid: wp.uint64, points: wp.array(dtype=wp.vec3), ...):
        for index in wp.hash_grid_query(grid, p, radius):
            ...

The grid lives in the daemon (runtime/objects/hash_grid.h) and belongs to
this client's session; ``id`` is its handle, an unguessable uint64 that only
this session's kernels resolve (through the launch's object table): an id
of another session, a freed grid's or a made-up one fails the launch with a
clear error. ``build`` is a stream command (ordered with launches and
copies, and it may be captured in a graph); the grid is freed when this
object is garbage-collected (in stream order) or when the session ends.
"""

from __future__ import annotations

import math
import operator

from . import types as wt
from .context import runtime
from .server_object import ServerObject
from .v1 import ir_pb2, runtime_pb2

_MAX_CELL_COUNT = (1 << 31) - 1
_DTYPE_PROTO = {wt.float16: ir_pb2.SCALAR_FLOAT16, wt.float32: ir_pb2.SCALAR_FLOAT32,
                wt.float64: ir_pb2.SCALAR_FLOAT64}


class HashGrid(ServerObject):
    """Hash-based spatial grid for accelerated neighbour queries on point data (Warp's
    ``wp.HashGrid``), with float16, float32 or float64 points (``dtype``)."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None
        return instance

    def __init__(self, dim_x, dim_y, dim_z, device=None, dtype=None):
        """Args:
            dim_x, dim_y, dim_z: cells along each axis (positive; at most 2^31 - 1 cells in all).
            device: the device of the grid; its points must live there too.
            dtype: the points' scalar type: float16, float32 (default) or float64.
        """
        if dtype is None:
            dtype = wt.float32
        st = wt.scalar_type(dtype) if isinstance(dtype, type) else None
        if st not in _DTYPE_PROTO:
            raise TypeError(f"Unsupported dtype {dtype} for HashGrid. Supported types: float16, float32, float64")
        self.dtype = st
        self._vec_type = wt.vector(3, st)
        try:
            dims = (operator.index(dim_x), operator.index(dim_y), operator.index(dim_z))
        except TypeError as e:
            raise TypeError("HashGrid dimensions must be integers") from e
        if min(dims) <= 0:
            raise RuntimeError("Hash grid dimensions must be positive")
        cells = dims[0] * dims[1] * dims[2]
        if cells > _MAX_CELL_COUNT:
            raise RuntimeError("Hash grid cell count exceeds supported limit: "
                               f"{dims[0]} * {dims[1]} * {dims[2]} = {cells} > {_MAX_CELL_COUNT}")
        rt = runtime()
        self._rt = rt
        self.device = rt.device(device)
        self._stream = rt.default_stream(self.device)
        self._dims = dims
        resp = rt.call("CreateHashGrid", runtime_pb2.CreateHashGridRequest(
            session=rt.session, device=self.device.alias, dim_x=dims[0], dim_y=dims[1], dim_z=dims[2],
            dtype=_DTYPE_PROTO[st]))
        self.id = resp.grid
        # Whether build() or reserve() prepared the grid (Warp's flag).
        self.reserved = False
        self.groups = None

    def build(self, points, radius, groups=None):
        """Sorts `points` (an array of vec3 of the grid's dtype, any shape) into cells of width
        `radius`; `groups` (int32, one per point) partitions each cell by group, for
        ``hash_grid_query(id, point, max_dist, group)``. Queued on the device stream."""
        from .array import array as _array  # noqa: PLC0415 - array imports context lazily too

        if not isinstance(points, _array):
            raise TypeError(f"Hash grid points should be a warp array, got {type(points).__name__}")
        if not wt.types_equal(points.dtype, self._vec_type):
            raise TypeError(f"Hash grid points should have type {self._vec_type._wp_type_name_}, "
                            f"got {getattr(points.dtype, '_wp_type_name_', points.dtype)}")
        radius = float(radius)
        if not radius > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if not math.isfinite(radius):
            raise ValueError(f"Hash grid cell width must be finite, got {radius}")
        if points.device != self.device:
            raise RuntimeError("points must live on the same device as this HashGrid")
        if groups is not None:
            if not isinstance(groups, _array) or not wt.types_equal(groups.dtype, wt.int32):
                raise RuntimeError("groups should be an array of type wp.int32")
            if groups.device != self.device:
                raise RuntimeError("groups must live on the same device as this HashGrid")
            if groups.size != points.size:
                raise RuntimeError("groups must have the same length as points")
        self._check_live()
        # As in Warp, the build runs on the device's current stream (a ScopedStream's).
        stream = self._rt.stream(self.device)
        if stream.capturing and stream.capture_savable:
            raise NotImplementedError(
                "HashGrid.build() cannot be used in a saveable APIC capture because HashGrid serialization is "
                "not yet supported; use apic=False or build outside capture")
        keep = (self, points) if groups is None else (self, points, groups)
        with self._rt.lock:
            cmd = stream.add(keep=keep)
            cmd.build_hash_grid.grid = self.id
            cmd.build_hash_grid.points = points.handle
            cmd.build_hash_grid.radius = radius
            if groups is not None:
                cmd.build_hash_grid.groups = groups.handle
        self.groups = groups
        self.reserved = True

    def reserve(self, num_points, with_groups=False):
        """Warp's reserve: the daemon allocates each build's buffers when it accepts the build,
        so this only checks `num_points`; like Warp, it cannot be called during a CPU capture."""
        if self._rt.stream(self.device).capturing:
            raise NotImplementedError(
                "HashGrid.reserve() cannot be called during CPU graph capture; reserve before capture")
        n = operator.index(num_points)
        if n < 0 or n > _MAX_CELL_COUNT:
            raise ValueError(f"HashGrid.reserve(): num_points must be in [0, {_MAX_CELL_COUNT}], got {n}")
        self._check_live()
        self.reserved = True

    def _check_live(self):
        if not self.id:
            raise RuntimeError("this HashGrid was not created or has been freed")
