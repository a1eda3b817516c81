"""wp.Volume: a sparse volume (one NanoVDB grid), kept by the daemon.

    volume = wp.Volume.load_from_nvdb(open("sphere.nvdb", "rb"))
    wp.launch(k, dim=n, inputs=[volume.id, points, out])

    @wp.kernel
    def k(volume: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        tid = wp.tid()
        uvw = wp.volume_world_to_index(volume, points[tid])
        out[tid] = wp.volume_sample_f(volume, uvw, wp.Volume.LINEAR)

The daemon reads the file (codecs none, ZIP, BLOSC), checks the grid once
and keeps a copy (runtime/objects/volume.h); ``id`` is its handle, resolved
through each launch's object table (a freed or made-up id fails the launch
with a clear error). ``allocate``/``allocate_by_tiles`` build grids of
active 8^3 tiles on the daemon; ``array()``, ``get_tiles()``,
``get_voxels()`` and ``feature_array()`` copy what the daemon holds into
new arrays. The volume is freed (in stream order) when this object goes, or
with the session.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import NamedTuple

import numpy as np

from . import types as wt
from .context import runtime
from .server_object import ServerObject
from .v1 import runtime_pb2

# wp::volume_value_type (runtime/native/warpd/native/volume.h) of each
# allocatable value type, and Warp's type strings.
_ALLOC_TYPES = (
    ("int32", wt.int32, 4, np.int32), ("uint32", wt.uint32, 10, np.uint32), ("int64", wt.int64, 5, np.int64),
    ("float", wt.float32, 1, np.float32), ("double", wt.float64, 2, np.float64), ("Vec3f", wt.vec3f, 6, np.float32),
    ("Vec3d", wt.vec3d, 7, np.float64), ("Vec4f", wt.vec4f, 17, np.float32), ("Vec4d", wt.vec4d, 18, np.float64),
)
_NVDB_TYPE_TO_DTYPE = {
    "float": wt.float32, "double": wt.float64, "int16": wt.int16, "int32": wt.int32, "int64": wt.int64,
    "Vec3f": wt.vec3f, "Vec3d": wt.vec3d, "Half": wt.float16, "uint32": wt.uint32,
    "Vec4f": wt.vec4f, "Vec4d": wt.vec4d, "uint8": wt.uint8,
}
_INDEX_TYPES = ("Index", "OnIndex", "IndexMask", "OnIndexMask")



def _allocation_points(method: str, name: str, points, device, unsupported: dict):
    """(device, points as an (n, 3) numpy array, their scalar type: int32 or float32) of the
    points Volume.allocate_by_tiles / allocate_by_voxels take, checked as Warp checks them;
    NotImplementedError for the options warpd does not take."""
    from .array import array as _array  # noqa: PLC0415

    for k, v in unsupported.items():
        if v not in (None, False):
            raise NotImplementedError(f"Volume.{method}({k}=...) is not supported by warpd yet")
    dev = runtime().device(device)
    if not isinstance(points, _array):
        points = _array(np.asarray(points), device=dev)
    st = wt.type_scalar(points.dtype)
    flat = points.numpy().reshape(-1)
    if flat.size % 3 != 0 or st not in (wt.int32, wt.float32) or not points.is_contiguous:
        raise RuntimeError(f"{name} must be contiguous and either a 1D Warp array of vec3f or vec3i or a 2D "
                           "n-by-3 array of int32 or float32.")
    return dev, flat.reshape(-1, 3), st

class Volume(ServerObject):
    """Sparse volumetric data structure based on NanoVDB (Warp's ``wp.Volume``)."""

    CLOSEST = 0
    """Nearest-neighbour sampling."""
    LINEAR = 1
    """Trilinear sampling."""

    class GridInfo(NamedTuple):
        """Grid metadata."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: object
        transform_matrix: object

    class ActiveStats(NamedTuple):
        """Active topology statistics from the grid's metadata."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class RebuildInfo(NamedTuple):
        """Capacity metadata of rebuildable volumes (warpd has none yet)."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    class FeatureArrayInfo(NamedTuple):
        """Metadata of a supplemental data array."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None
        return instance

    def __init__(self, data=None, copy: bool = True):
        """A volume over one NanoVDB grid's bytes (a uint8 array); the daemon copies them."""
        if data is None:
            return
        from .array import array as _array_type  # noqa: PLC0415

        if not isinstance(data, _array_type):
            data = _to_uint8_array(data, None)
        self._create(data.device, runtime_pb2.VolumeFromNvdb(file=_handle(data), raw_grid=True), keep=None)

    # ------------------------------------------------------------ creation

    def _create(self, device, nvdb=None, tiles=None, keep=None, grid_index=0):
        rt = runtime()
        self._rt = rt
        self.device = rt.device(device)
        self._stream = rt.default_stream(self.device)
        self._file = keep  # the uploaded file, for load_next_grid
        self._file_index = grid_index
        req = runtime_pb2.CreateVolumeRequest(session=rt.session, device=self.device.alias)
        if nvdb is not None:
            req.nvdb.CopyFrom(nvdb)
        else:
            req.tiles.CopyFrom(tiles)
        # The file or tiles array may be written by commands of the stream.
        from .context import synchronize_device  # noqa: PLC0415

        synchronize_device(self.device)
        resp = rt.call("CreateVolume", req)
        self.id = resp.volume
        self._info = resp.info

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> Volume:
        """A volume from an .nvdb file (a file object, bytes, or a path-like's contents read by
        the caller): its first grid; ``load_next_grid`` gives the next."""
        try:
            data = file_or_buffer.read()
        except AttributeError:
            data = file_or_buffer
        data = bytes(data)
        if len(data) < 16:
            raise RuntimeError("NanoVDB signature not found")
        magic, version = struct.unpack("<QI", data[0:12])
        if magic not in (0x304244566F6E614E, 0x324244566F6E614E):
            raise RuntimeError("NanoVDB signature not found")
        if version >> 21 != 32:
            raise RuntimeError("Unsupported NanoVDB version")
        file = _to_uint8_array(data, device)
        v = cls.__new__(cls)
        v._create(file.device, runtime_pb2.VolumeFromNvdb(file=_handle(file), grid_index=0), keep=file)
        return v

    def load_next_grid(self) -> Volume | None:
        """The next grid of the file this volume was loaded from, or None after the last."""
        if getattr(self, "_file", None) is None:
            return None
        index = self._file_index + 1
        if index >= self._info.grid_count:
            return None
        v = Volume.__new__(Volume)
        v._create(self.device, runtime_pb2.VolumeFromNvdb(file=_handle(self._file), grid_index=index),
                  keep=self._file, grid_index=index)
        return v

    @staticmethod
    def _normalize_voxel_size(voxel_size):
        if isinstance(voxel_size, (int, float, np.floating, np.integer)) and not isinstance(voxel_size, bool):
            s = float(voxel_size)
            voxel_size = (s, s, s)
        elif isinstance(voxel_size, (list, tuple, np.ndarray)) or (
                hasattr(voxel_size, "__len__") and not isinstance(voxel_size, (str, bytes))):
            voxel_size = tuple(float(v) for v in voxel_size)
            if len(voxel_size) != 3:
                raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got length {len(voxel_size)}")
        else:
            raise TypeError(
                f"voxel_size must be a numeric scalar or a sequence of 3 floats, got {type(voxel_size).__name__}")
        if not all(math.isfinite(v) and v > 0.0 for v in voxel_size):
            raise ValueError(f"All voxel_size components must be finite and positive, got {voxel_size}")
        return voxel_size

    @staticmethod
    def _transform(voxel_size, transform):
        if transform is None:
            if voxel_size is None:
                raise ValueError("Either 'voxel_size' or 'transform' must be provided")
            vs = Volume._normalize_voxel_size(voxel_size)
            return [float(np.float32(vs[0])), 0.0, 0.0, 0.0, float(np.float32(vs[1])), 0.0, 0.0, 0.0,
                    float(np.float32(vs[2]))]
        if voxel_size is not None:
            raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
        m = np.asarray(transform, dtype=np.float32).reshape(-1)
        if m.size != 9:
            raise ValueError("transform must be a 3x3 matrix")
        return [float(x) for x in m]

    @classmethod
    def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                 points_in_world_space=False, device=None) -> Volume:
        """A volume with every tile (8^3 voxels) that covers [min, max] (inclusive; index
        space, or world space when points_in_world_space)."""
        voxel_size = cls._normalize_voxel_size(voxel_size)
        if points_in_world_space:
            vs = np.asarray(voxel_size, dtype=np.float32)
            min = np.around((np.array(min, dtype=np.float32) - translation) / vs)
            max = np.around((np.array(max, dtype=np.float32) - translation) / vs)
        tile_min = np.array(min, dtype=np.int32) // 8
        tile_max = np.array(max, dtype=np.int32) // 8
        tiles = np.array([[i, j, k] for i in range(tile_min[0], tile_max[0] + 1)
                          for j in range(tile_min[1], tile_max[1] + 1)
                          for k in range(tile_min[2], tile_max[2] + 1)], dtype=np.int32).reshape(-1, 3)
        from .array import array as _array  # noqa: PLC0415

        return cls.allocate_by_tiles(_array(tiles * 8, dtype=wt.int32, device=device), voxel_size, bg_value,
                                     translation, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                          device=None, transform=None, **unsupported) -> Volume:
        """A volume with the tiles (8^3 voxels, all active with ``bg_value``) that hold
        ``tile_points`` (int32: index space; float32: world space). ``bg_value`` sets the
        value type (int32, uint32, int64, float32, float64, vec3f/d, vec4f/d)."""
        from .array import array as _array  # noqa: PLC0415

        dev, pts, st = _allocation_points("allocate_by_tiles", "tile_points", tile_points, device, unsupported)
        mat = cls._transform(voxel_size, transform)
        tr = [float(np.float32(t)) for t in translation]
        if st == wt.float32:
            inv = np.linalg.inv(np.asarray(mat, dtype=np.float64).reshape(3, 3))
            pts = np.floor((pts.astype(np.float64) - np.asarray(tr)) @ inv.T).astype(np.int64)
        tiles = np.unique((np.floor_divide(pts.astype(np.int64), 8) * 8).astype(np.int32), axis=0)
        # bg_value None: an index volume (every voxel of the tiles numbered).
        code, bg_bytes = (102, b"") if bg_value is None else _background(bg_value)
        tiles_array = _array(np.ascontiguousarray(tiles, dtype=np.int32), dtype=wt.int32, device=dev)
        v = cls.__new__(cls)
        v._create(dev, tiles=runtime_pb2.VolumeFromTiles(tiles=_handle(tiles_array), value_type=code,
                                                         background=bg_bytes, transform=mat, translation=tr))
        return v

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0,
                        device=None) -> Volume:
        """A volume holding a dense 3-D array (4-D with 3 components for vec3f) from ``min_world``."""
        from .array import array as _array  # noqa: PLC0415
        from .launch import launch  # noqa: PLC0415

        voxel_size = cls._normalize_voxel_size(voxel_size)
        target = tuple(math.ceil(ndarray.shape[i] / 8) * 8 for i in range(3))
        if hasattr(bg_value, "__len__"):
            padded = np.full((*target, 3), bg_value, dtype=np.single)
            padded[0:ndarray.shape[0], 0:ndarray.shape[1], 0:ndarray.shape[2], :] = ndarray
        else:
            padded = np.full(target, bg_value, dtype=ndarray.dtype)
            padded[:ndarray.shape[0], :ndarray.shape[1], :ndarray.shape[2]] = ndarray
        shape = padded.shape
        volume = cls.allocate(min_world, [min_world[i] + (shape[i] - 1) * voxel_size[i] for i in range(3)],
                              voxel_size, bg_value=bg_value, points_in_world_space=True, translation=min_world,
                              device=device)
        k = _copy_kernels()
        dim = (shape[0], shape[1], shape[2])
        if hasattr(bg_value, "__len__"):
            launch(k["v"], dim=dim, inputs=[volume.id, _array(padded, dtype=wt.vec3, device=device)], device=device)
        elif isinstance(bg_value, int):
            launch(k["i"], dim=dim, inputs=[volume.id, _array(padded, dtype=wt.int32, device=device)], device=device)
        else:
            launch(k["f"], dim=dim, inputs=[volume.id, _array(padded, dtype=wt.float32, device=device)],
                   device=device)
        return volume

    @classmethod
    def allocate_by_voxels(cls, voxel_points, voxel_size=None, translation=(0.0, 0.0, 0.0), device=None,
                           transform=None, point_mask=None, **unsupported) -> Volume:
        """An index volume with an active voxel for each of ``voxel_points`` (int32: index space;
        float32: world space, rounded to the nearest voxel as Warp does); repeated points are
        one voxel. ``point_mask`` (int32, one per point): points with 0 are left out. Its voxels
        are numbered in the volume's order (:meth:`get_voxels`), the indices
        ``wp.volume_lookup_index`` gives and ``wp.volume_sample_index`` reads data at."""
        from .array import array as _array  # noqa: PLC0415

        dev, pts, st = _allocation_points("allocate_by_voxels", "voxel_points", voxel_points, device, unsupported)
        if point_mask is not None:
            mask = np.asarray(point_mask.numpy() if isinstance(point_mask, _array) else point_mask).reshape(-1)
            if mask.shape[0] != pts.shape[0]:
                raise RuntimeError("point_mask must have one int32 entry per voxel point")
            pts = pts[mask != 0]
        mat = cls._transform(voxel_size, transform)
        tr = [float(np.float32(t)) for t in translation]
        if st == wt.float32:
            # NanoVDB's applyInverseMapF(p).round(): in float32, then floor(x + 0.5).
            inv = np.linalg.inv(np.asarray(mat, dtype=np.float64).reshape(3, 3)).astype(np.float32)
            local = (pts.astype(np.float32) - np.asarray(tr, dtype=np.float32)) @ inv.T
            pts = np.floor(local + np.float32(0.5)).astype(np.int64)
            if np.abs(pts).max(initial=0) >= 2**31:
                raise RuntimeError("voxel_points lie outside the volume's int32 index space")
        voxels = np.unique(pts.astype(np.int32), axis=0)
        voxels_array = _array(np.ascontiguousarray(voxels, dtype=np.int32), dtype=wt.int32, device=dev)
        v = cls.__new__(cls)
        v._create(dev, tiles=runtime_pb2.VolumeFromTiles(tiles=_handle(voxels_array), value_type=103,
                                                         background=b"", transform=mat, translation=tr))
        return v

    # ------------------------------------------------------------ metadata

    def _check(self):
        if not self.id:
            raise RuntimeError("Invalid Volume")

    def get_grid_info(self) -> Volume.GridInfo:
        self._check()
        i = self._info
        return Volume.GridInfo(i.name, i.grid_bytes, i.grid_index, i.grid_count, i.type_name,
                               wt.vec3f(*i.translation), wt.mat33f(*i.transform))

    def get_voxel_size(self) -> tuple[float, float, float]:
        self._check()
        return tuple(float(np.float32(v)) for v in self._info.voxel_size)

    def get_tile_count(self) -> int:
        self._check()
        return self._info.leaf_count

    def get_voxel_count(self) -> int:
        self._check()
        return self._info.voxel_count

    def get_active_stats(self) -> Volume.ActiveStats:
        """The tree's active voxels and its leaf, lower and upper node counts."""
        self._check()
        i = self._info
        return Volume.ActiveStats(i.active_voxel_count, i.leaf_count, i.lower_count, i.upper_count)

    @property
    def is_rebuildable(self) -> bool:
        return False

    def get_rebuild_info(self) -> Volume.RebuildInfo:
        return Volume.RebuildInfo(None, 0, 0, 0, 0)

    @property
    def dtype(self):
        return _NVDB_TYPE_TO_DTYPE.get(self._info.type_name) if self.id else None

    @property
    def is_index(self) -> bool:
        return self.get_grid_info().type_str in _INDEX_TYPES

    def get_feature_array_count(self) -> int:
        self._check()
        return len(self._info.features)

    def get_feature_array_info(self, feature_index: int) -> Volume.FeatureArrayInfo:
        self._check()
        f = self._info.features[feature_index]
        size = f.bytes // f.count if f.count else 0
        return Volume.FeatureArrayInfo(f.name, 0, size, f.count, str(f.type))

    # ------------------------------------------------------------ contents

    def _read(self, what, out, feature=0):
        from .context import synchronize_device  # noqa: PLC0415

        synchronize_device(self.device)
        self._rt.call("ReadVolume", runtime_pb2.ReadVolumeRequest(
            session=self._rt.session, volume=self.id, what=what, feature=feature, out=_handle(out)))
        return out

    def array(self):
        """A copy of the grid's bytes as a uint8 array."""
        from .array import empty  # noqa: PLC0415

        self._check()
        out = empty(self._info.grid_bytes, dtype=wt.uint8, device=self.device)
        out.deleter = None  # Warp's: the array owns its memory (a copy here)
        return self._read(runtime_pb2.ReadVolumeRequest.BYTES, out)

    def get_tiles(self, out=None):
        """The origins of the volume's tiles (leaf nodes), an (N, 3) int32 array."""
        from .array import empty  # noqa: PLC0415

        self._check()
        if out is None:
            out = empty((self._info.leaf_count, 3), dtype=wt.int32, device=self.device)
        return self._read(runtime_pb2.ReadVolumeRequest.TILES, out)

    def get_voxels(self, out=None):
        """The coordinates of the volume's voxels, an (N, 3) int32 array (volume_lookup_index's order)."""
        from .array import empty  # noqa: PLC0415

        self._check()
        if out is None:
            out = empty((self._info.voxel_count, 3), dtype=wt.int32, device=self.device)
        return self._read(runtime_pb2.ReadVolumeRequest.VOXELS, out)

    def feature_array(self, feature_index: int, dtype=None):
        """A copy of supplemental data array ``feature_index`` (as ``dtype``, default uint8)."""
        from .array import empty  # noqa: PLC0415

        self._check()
        if feature_index < 0 or feature_index >= len(self._info.features):
            raise RuntimeError(f"Invalid feature index {feature_index}")
        f = self._info.features[feature_index]
        dtype = wt.uint8 if dtype is None else dtype
        size = wt.type_size_in_bytes(dtype) if hasattr(wt, "type_size_in_bytes") else np.dtype(dtype).itemsize
        if f.bytes % size != 0:
            raise RuntimeError(f"feature array of {f.bytes} bytes is not a whole number of {dtype}")
        out = empty(f.bytes // size, dtype=dtype, device=self.device)
        return self._read(runtime_pb2.ReadVolumeRequest.FEATURE, out, feature_index)

    def save_to_nvdb(self, path, codec="none"):
        """Write this volume (and the grids after it in the file it came from) to an .nvdb
        file at ``path``, with codec "none", "zip" or "blosc" (the ``blosc`` module)."""
        codecs = {"none": 0, "zip": 1, "blosc": 2}
        if codec not in codecs:
            raise RuntimeError(f"Unsupported codec requested: {codec}")
        code = codecs[codec]
        if code == 2:
            try:
                import blosc  # noqa: PLC0415
            except ImportError as err:
                raise RuntimeError(f"blosc compression was requested, but Python module could not be imported: "
                                   f"{err}") from err
        self._check()
        if self._info.grid_index > 0:
            raise RuntimeError("Saving of aliased Volumes is not supported. Use `save_to_nvdb` on the original "
                               "volume, before any `load_next_grid` calls.")
        volumes = [self]
        while len(volumes) < max(1, self._info.grid_count):
            nxt = volumes[-1].load_next_grid()
            if nxt is None:
                break
            volumes.append(nxt)
        # The file's records (nanovdb/util/IO.h's io::Header and io::MetaData),
        # filled as Warp 1.19 fills them.
        version = 32 << 21 | 3 << 10 | 3
        header = struct.pack("<QIHH", 0x304244566F6E614E, version, len(volumes), code)
        metas, payloads = [], []
        for v in volumes:
            info = v._info
            raw = v.array().numpy().tobytes()
            if code == 1:
                packed = zlib.compress(raw)
            elif code == 2:
                packed = blosc.compress(raw)
            else:
                packed = raw
            name = info.name.encode("utf-8")
            meta = struct.pack("<QQQQII6d6i3dI4I3IHHI", info.grid_bytes, len(packed), 0, 0, info.grid_type,
                               info.grid_class, *(list(info.world_bbox) + [0.0] * 6)[:6], *([0] * 6),
                               *info.voxel_size, len(name) + 1, *([0] * 4), *([0] * 3), code, 0, version)
            metas.append(meta + name + b"\0")
            payloads.append((struct.pack("<Q", len(packed)) if code else b"") + packed)
        with open(path, "wb") as f:
            f.write(header)
            for m in metas:
                f.write(m)
            for p in payloads:
                f.write(p)
        return path


def _handle(a):
    h = getattr(a, "handle", None)
    if not isinstance(h, int) or not h:
        raise RuntimeError("not an array of this session")
    return h


def _to_uint8_array(data, device):
    from .array import array as _array  # noqa: PLC0415

    return _array(np.frombuffer(bytes(data), dtype=np.uint8).copy(), dtype=wt.uint8, device=device)


def _background(bg_value):
    """(wp::volume_value_type, little-endian bytes) of a background value."""
    t = type(bg_value)
    if isinstance(bg_value, bool):
        raise TypeError("Unsupported bg_value type for volume allocation bool")
    if isinstance(bg_value, int):
        return 4, np.int32(bg_value).tobytes()
    if isinstance(bg_value, float):
        return 1, np.float32(bg_value).tobytes()
    for _, wtype, code, np_type in _ALLOC_TYPES:
        if t is wtype or (isinstance(wtype, type) and isinstance(bg_value, wtype)):
            values = [x for x in bg_value] if hasattr(bg_value, "__len__") else [bg_value]
            values = [getattr(x, "value", x) for x in values]
            return code, np.asarray(values, dtype=np_type).tobytes()
    if isinstance(bg_value, (np.floating,)):
        return (2 if bg_value.dtype == np.float64 else 1), np.asarray(bg_value).tobytes()
    if isinstance(bg_value, (np.integer,)):
        return 4, np.int32(bg_value).tobytes()
    if hasattr(bg_value, "__len__"):
        values = [float(x) for x in bg_value]
        if len(values) == 3:
            return 6, np.asarray(values, dtype=np.float32).tobytes()
        if len(values) == 4:
            return 17, np.asarray(values, dtype=np.float32).tobytes()
    raise TypeError(f"Unsupported bg_value type for volume allocation {t.__name__}. Supported volume types are "
                    + ", ".join(n for n, _, _, _ in _ALLOC_TYPES) + ".")


_COPY_KERNELS = {}


def _copy_kernels():
    """Kernels that store a dense array into a volume (load_from_numpy)."""
    if _COPY_KERNELS:
        return _COPY_KERNELS
    from . import _volume_kernels  # noqa: PLC0415

    _COPY_KERNELS.update(f=_volume_kernels.copy_dense_volume_to_nano_vdb_f,
                         v=_volume_kernels.copy_dense_volume_to_nano_vdb_v,
                         i=_volume_kernels.copy_dense_volume_to_nano_vdb_i)
    return _COPY_KERNELS

