"""warpd: the NVIDIA Warp API, run by a warpd daemon.

    import warpd as wp

    wp.init()

    @wp.kernel
    def scale(a: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = a[i] * s

    a = wp.array([1.0, 2.0, 3.0], dtype=float)
    wp.launch(scale, dim=len(a), inputs=[a, 2.0])
    print(a.numpy())

Kernels are translated to IR here and compiled and run by the daemon; arrays
live in the daemon. See docs/ in the repository for the architecture.
"""

import math as _math

from . import autograd, build, config, persistent, types
from .array import (array, array1d, array2d, array3d, array4d, clone, empty, empty_like,
                    from_numpy, full, full_like, ones, ones_like, zeros, zeros_like)
from .array import copy_array as copy
from .interop import (device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_dlpack, from_torch,
                      to_dlpack, to_torch)
from .indexedarray import indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d
from .context import (get_cuda_device_count, get_cuda_devices, get_device, get_devices,
                      get_preferred_device, init, is_cpu_available, is_cuda_available,
                      is_device_available, is_initialized, set_device, shutdown,
                      synchronize, synchronize_device)
from .mempool import (ScopedMempool, ScopedMempoolAccess, ScopedPeerAccess, get_mempool_release_threshold,
                      get_mempool_used_mem_current, get_mempool_used_mem_high, is_mempool_access_enabled,
                      is_mempool_access_supported, is_mempool_enabled, is_mempool_supported, is_peer_access_enabled,
                      is_peer_access_supported, set_mempool_access_enabled, set_mempool_enabled,
                      set_mempool_release_threshold, set_peer_access_enabled)
from .device import Device
from .errors import (AuthenticationError, CompileError, DaemonStartError, DeviceError, InvalidArgumentError,
                     KernelError, NotFoundError, SessionError, UnavailableError, VersionMismatchError,
                     WarpCodegenAttributeError,
                     WarpCodegenError, WarpCodegenIndexError, WarpCodegenKeyError, WarpCodegenTypeError,
                     WarpCodegenValueError, WarpdError)
from .function import Function, func, func_grad, func_native, func_replay
from .gradwrapper import grad
from .graph import Graph, ScopedCapture, capture_begin, capture_end, capture_if, capture_launch, capture_while
from .bvh import Bvh, BvhConstructor
from .hash_grid import HashGrid
from .mesh import Mesh, is_cubql_available
from .volume import Volume
from .kernel import Kernel, kernel, overload
from .launch import Launch, launch
from .tape import Tape
from .matmul import adj_batched_matmul, adj_matmul, batched_matmul, matmul
from .module_api import (force_load, get_module, get_module_options, load_module, module_request, save_module,
                         set_module_options)
from .staticexpr import static
from .pyscope import *  # noqa: F401,F403 - Warp's builtins in Python scope (wp.sin, wp.mul, ...)
from .types import (Float, Int, Scalar, dtype_from_numpy, dtype_to_numpy)
from .types import BvhQuery, HashGridQuery, MeshQuery, MeshQueryAABB, MeshQueryPoint, MeshQueryRay
from .types import (bfloat16, bool, constant, float16, float32, float64, half, handle, int8, int16, int32,
                    int64, struct, uint8, uint16, uint32, uint64)

# Every named value type: vec2..vec4, mat22..mat44 (with Warp's suffixes f d h
# b ub s us i ui l ul), quat/quatf/d/h, transform/transformf/d/h,
# spatial_vector/f/d/h and spatial_matrix/f/d/h.
globals().update(types.NAMED_TYPES)
from .utils import ScopedDevice, ScopedTimer
from .streams import (Event, ScopedStream, Stream, get_event_elapsed_time, get_stream, record_event,
                      set_stream, synchronize_event, synchronize_stream, wait_event, wait_stream)

__version__ = config.version
LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = (config.LOG_DEBUG, config.LOG_INFO, config.LOG_WARNING,
                                             config.LOG_ERROR)

# Warp's constants (folded into kernels like any module-level number).
E = e = _math.e
LOG2E = log2e = 1.44269504088896340736
LOG10E = log10e = 0.43429448190325182765
LN2 = ln2 = 0.69314718055994530942
LN10 = ln10 = 2.30258509299404568402
PHI = phi = 1.61803398874989484820
PI = pi = _math.pi
HALF_PI = half_pi = _math.pi / 2
TAU = tau = _math.tau
INF = inf = _math.inf
NAN = nan = _math.nan
