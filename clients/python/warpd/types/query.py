"""Warp's HashGridQuery: the traversal state of a hash grid neighbour query.

Made in kernels by ``wp.hash_grid_query`` and advanced by
``wp.hash_grid_query_next``; never a kernel argument, array dtype or struct
member. ``wp.HashGridQuery`` is the float32 query; ``wp.HashGridQuery[dtype]``
(float16, float32, float64) names each precision in function annotations.
All three are spelled "HashGridQuery", as Warp spells them.
"""

from __future__ import annotations

from ..v1 import ir_pb2
from . import scalar as _scalar


class HashGridQuery:
    """Object used to track state during :class:`warp.HashGrid` neighbour traversal."""

    _wp_native_name_ = "hash_grid_query_f"
    _wp_public_name_ = "HashGridQuery"
    _wp_type_name_ = "HashGridQuery"
    _wp_query_dtype_ = _scalar.float32

    def __class_getitem__(cls, dtype):
        return hash_grid_query_type(dtype)

    def __init__(self, *args, **kwargs):
        raise RuntimeError("HashGridQuery objects are made in kernels by wp.hash_grid_query()")

    @classmethod
    def _wp_query_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(query=ir_pb2.QueryType(kind=ir_pb2.QUERY_HASH_GRID,
                                                     dtype=cls._wp_query_dtype_._proto_))


class _HashGridQueryH(HashGridQuery):
    _wp_native_name_ = "hash_grid_query_h"
    _wp_query_dtype_ = _scalar.float16


class _HashGridQueryD(HashGridQuery):
    _wp_native_name_ = "hash_grid_query_d"
    _wp_query_dtype_ = _scalar.float64


_QUERY_TYPES = {_scalar.float16: _HashGridQueryH, _scalar.float32: HashGridQuery, _scalar.float64: _HashGridQueryD}


def hash_grid_query_type(dtype):
    """The HashGridQuery class of `dtype` (float16, float32 or float64)."""
    query = _QUERY_TYPES.get(_scalar.scalar_type(dtype))
    if query is None:
        raise TypeError(f"Unsupported dtype {dtype} for HashGridQuery. Supported types: float16, float32, float64")
    return query


def is_query_type(t) -> bool:
    """A query type usable in function annotations (HashGridQuery[dtype], MeshQueryPoint, ...)."""
    return isinstance(t, type) and hasattr(t, "_wp_query_typeref_")


class BvhQuery:
    """Object used to track state during BVH traversal (Warp's ``wp.BvhQuery``): made in
    kernels by ``wp.bvh_query_aabb``, ``_ray``, ``_sphere`` or ``_capsule`` and advanced by
    ``wp.bvh_query_next``. Each query builtin makes its own kind; this erased parent (in
    function annotations, or a variable given queries of two kinds) holds a query of any
    kind and advances as the kind it was made with."""

    _wp_native_name_ = "bvh_query_t"
    _wp_type_name_ = "BvhQuery"

    def __init__(self, *args, **kwargs):
        raise RuntimeError("BvhQuery objects are made in kernels by wp.bvh_query_aabb() and its kin")

    @classmethod
    def _wp_query_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(query=ir_pb2.QueryType(kind=ir_pb2.QUERY_BVH, dtype=_scalar.float32._proto_))


class _MeshQueryType:
    """A mesh query value type of kernels and functions (never a kernel argument)."""

    _wp_query_kind_ = ir_pb2.QUERY_KIND_UNSPECIFIED

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} values are made in kernels by the mesh query builtins")

    @classmethod
    def _wp_query_typeref_(cls) -> ir_pb2.TypeRef:
        return ir_pb2.TypeRef(query=ir_pb2.QueryType(kind=cls._wp_query_kind_, dtype=_scalar.float32._proto_))


class MeshQueryPoint(_MeshQueryType):
    """Output for the mesh query point functions (Warp's ``wp.MeshQueryPoint``): ``result``
    (bool), ``sign`` (float32, < 0 inside), ``face`` (int32), ``u``, ``v`` (float32 barycentrics)."""

    _wp_native_name_ = "mesh_query_point_t"
    _wp_type_name_ = "MeshQueryPoint"
    _wp_query_kind_ = ir_pb2.QUERY_MESH_POINT


class MeshQueryRay(_MeshQueryType):
    """Output for the mesh ray query (Warp's ``wp.MeshQueryRay``): ``result``, ``sign``,
    ``face``, ``t``, ``u``, ``v`` and ``normal`` (vec3f)."""

    _wp_native_name_ = "mesh_query_ray_t"
    _wp_type_name_ = "MeshQueryRay"
    _wp_query_kind_ = ir_pb2.QUERY_MESH_RAY


class MeshQueryAABB(_MeshQueryType):
    """The state of a mesh box query (Warp's ``wp.MeshQueryAABB``): made by
    ``wp.mesh_query_aabb`` and advanced by ``wp.mesh_query_aabb_next``."""

    _wp_native_name_ = "mesh_query_aabb_t"
    _wp_type_name_ = "MeshQueryAABB"
    _wp_query_kind_ = ir_pb2.QUERY_MESH_AABB


class MeshQuery(_MeshQueryType):
    """Warp's erased mesh query type: a ``wp.MeshQueryAABB`` or a sphere query
    (``wp.mesh_query_sphere``) in function annotations, or a variable given queries of both
    kinds; ``wp.mesh_query_next`` advances it as the kind it was made with."""

    _wp_native_name_ = "mesh_query_t"
    _wp_type_name_ = "MeshQuery"
    _wp_query_kind_ = ir_pb2.QUERY_MESH

    def __init__(self, *args, **kwargs):
        raise RuntimeError("MeshQuery objects are made in kernels by wp.mesh_query_aabb() or wp.mesh_query_sphere()")
