"""Warp's memory pool and peer access functions, as a client of a shared daemon
sees them.

warpd's GPU memory always comes from the daemon's stream-ordered pools
(cuMemPoolCreate, one per GPU), shared by every session and configured by
the daemon's operator, and devices never map each other's memory for a
client (copies between devices run in the daemon). So: the pools are
supported and enabled on every CUDA device and cannot be turned off;
their release threshold is the daemon's (read from GetServerInfo), and a
client's request to change it is ignored with a warning (it only tunes
when reserved memory goes back to the driver); peer and pool access
between devices is never supported, and asking to enable it raises as
Warp does for devices that cannot. The usage counters are the client's
own: the bytes its session's arrays take on the device (GetUsage), as
Warp's count a process's.
"""

from __future__ import annotations

import warnings

from .context import runtime


def is_mempool_supported(device) -> bool:
    """Whether `device` allocates from a stream-ordered memory pool: CUDA devices do
    (DESIGN.md); the CPU has none, as in Warp. Raises DeviceError for an unknown device."""
    return runtime().device(device).is_cuda


def is_mempool_enabled(device) -> bool:
    """The same as is_mempool_supported: a device's pool is always on."""
    return is_mempool_supported(device)


def _peer_pair(target, peer):
    rt = runtime()
    return rt.device(target), rt.device(peer)


def is_mempool_access_supported(target_device, peer_device) -> bool:
    """Whether `peer_device` may read `target_device`'s pool directly: never through
    warpd (copies between devices run in the daemon); False as Warp gives for the CPU."""
    _peer_pair(target_device, peer_device)
    return False


def is_mempool_access_enabled(target_device, peer_device) -> bool:
    """See is_mempool_access_supported."""
    return is_mempool_access_supported(target_device, peer_device)


def is_peer_access_supported(target_device, peer_device) -> bool:
    """Whether the two devices map each other's memory: never for a client of warpd."""
    _peer_pair(target_device, peer_device)
    return False


def is_peer_access_enabled(target_device, peer_device) -> bool:
    """See is_peer_access_supported."""
    return is_peer_access_supported(target_device, peer_device)


def _cuda_pool_device(device):
    d = runtime().device(device)
    if not d.is_cuda:
        raise ValueError("Memory pools are only supported on CUDA devices")
    return d


def set_mempool_enabled(device, enable: bool) -> None:
    """Enabling is a no-op on CUDA devices (always on); disabling raises RuntimeError
    (see the module doc). On the CPU, enabling raises ValueError, as in Warp."""
    d = runtime().device(device)
    if not d.is_cuda:
        if enable:
            raise ValueError("Memory pools are only supported on CUDA devices")
        return
    if not enable:
        raise RuntimeError(f"warpd allocates on {d} from the daemon's stream-ordered memory pool, shared by all "
                           f"of its sessions: it cannot be turned off for one client")


def get_mempool_release_threshold(device=None) -> int:
    """Bytes the device's pool keeps reserved across synchronizations: the daemon's setting."""
    d = _cuda_pool_device(device)
    rt = runtime()
    info = rt.info if rt.info is not None else rt.refresh_info()
    return int(next((x.mempool_release_threshold for x in info.devices if x.name == d.alias), 0))


def set_mempool_release_threshold(device, threshold) -> None:
    """Checks `threshold` as Warp does (bytes, or a fraction in (0, 1] of the device's
    memory), then leaves the daemon's setting as it is, with a warning when it differs:
    the pool is shared by every session (see the module doc)."""
    d = _cuda_pool_device(device)
    if threshold < 0:
        raise ValueError(f"Invalid memory pool release threshold {threshold}: it must be non-negative")
    if 0 < threshold <= 1:
        threshold = int(threshold * d.total_memory)
    current = get_mempool_release_threshold(d)
    if int(threshold) != current:
        warnings.warn(f"wp.set_mempool_release_threshold({d}, {int(threshold)}): the warpd daemon's pool on {d} is "
                      f"shared by all of its sessions; its release threshold stays {current} bytes (the daemon "
                      f"operator's setting)", RuntimeWarning, stacklevel=2)


def _session_device_memory(device):
    from .v1 import runtime_pb2

    d = _cuda_pool_device(device)
    rt = runtime()
    usage = rt.call("GetUsage", runtime_pb2.GetUsageRequest(session=rt.session))
    return next((m for m in usage.device_memory if m.device == d.alias), None)


def get_mempool_used_mem_current(device=None) -> int:
    """Bytes of `device`'s pool this client's session uses now: the data of its arrays there
    (as Warp's counts the process's allocations; other sessions' use is theirs to know)."""
    m = _session_device_memory(device)
    return int(m.used_bytes) if m is not None else 0


def get_mempool_used_mem_high(device=None) -> int:
    """The most bytes of `device`'s pool this client's session has used at once since it
    connected (see get_mempool_used_mem_current)."""
    m = _session_device_memory(device)
    return int(m.peak_bytes) if m is not None else 0


def _access(kind, target_device, peer_device, enable):
    target, peer = _peer_pair(target_device, peer_device)
    if not target.is_cuda or not peer.is_cuda:
        if enable:
            raise ValueError(f"{kind} access is only supported between CUDA devices")
        return
    if enable and target != peer:
        raise RuntimeError(f"Device {peer} cannot access device {target}: a warpd client's devices never map "
                           f"each other's memory (copies between devices run in the daemon)")


def set_mempool_access_enabled(target_device, peer_device, enable: bool) -> None:
    """Enabling raises RuntimeError for two different CUDA devices (never supported
    through warpd), ValueError for the CPU (as Warp); disabling is a no-op."""
    _access("Memory pool", target_device, peer_device, enable)


def set_peer_access_enabled(target_device, peer_device, enable: bool) -> None:
    """As set_mempool_access_enabled, for peer access."""
    _access("Peer", target_device, peer_device, enable)


class _Scoped:
    """Calls `_set(*args)` on entering a scope (warpd has nothing to restore on leaving:
    only the calls that change nothing succeed)."""

    _set = None

    def __init__(self, *args):
        self.args = args

    def __enter__(self):
        type(self)._set(*self.args)
        return self

    def __exit__(self, *exc):
        return False


class ScopedMempool(_Scoped):
    """Warp's: set_mempool_enabled(device, enable) for a scope."""

    _set = staticmethod(set_mempool_enabled)

    def __init__(self, device, enable: bool):
        super().__init__(device, enable)


class ScopedMempoolAccess(_Scoped):
    """Warp's: set_mempool_access_enabled for a scope."""

    _set = staticmethod(set_mempool_access_enabled)

    def __init__(self, target_device, peer_device, enable: bool = True):
        super().__init__(target_device, peer_device, enable)


class ScopedPeerAccess(_Scoped):
    """Warp's: set_peer_access_enabled for a scope."""

    _set = staticmethod(set_peer_access_enabled)

    def __init__(self, target_device, peer_device, enable: bool = True):
        super().__init__(target_device, peer_device, enable)
