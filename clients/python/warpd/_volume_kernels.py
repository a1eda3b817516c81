"""Kernels of wp.Volume.load_from_numpy: store a dense array into a volume's voxels.

Imported on first use (the package is complete by then)."""

from __future__ import annotations

import warpd as wp


@wp.kernel
def copy_dense_volume_to_nano_vdb_v(volume: wp.uint64, volume_array: wp.array(dtype=wp.vec3, ndim=3)):
    i, j, k = wp.tid()
    wp.volume_store_v(volume, i, j, k, volume_array[i, j, k])


@wp.kernel
def copy_dense_volume_to_nano_vdb_f(volume: wp.uint64, volume_array: wp.array(dtype=wp.float32, ndim=3)):
    i, j, k = wp.tid()
    wp.volume_store_f(volume, i, j, k, volume_array[i, j, k])


@wp.kernel
def copy_dense_volume_to_nano_vdb_i(volume: wp.uint64, volume_array: wp.array(dtype=wp.int32, ndim=3)):
    i, j, k = wp.tid()
    wp.volume_store_i(volume, i, j, k, volume_array[i, j, k])
