"""Devices of the connected daemon ("cpu", "cuda:0", ...), as Warp names them."""

from __future__ import annotations

from .errors import DeviceError


class Device:
    """One device of the daemon. As in Warp, ``alias`` is what names it ("cpu", "cuda:0";
    also its ``str()``) and ``name`` the product (the CPU model or the GPU's name). Compares
    equal to its alias."""

    def __init__(self, info):
        self.alias: str = info.name
        self.name: str = info.alias or info.name
        self.kind: str = info.kind or ("cpu" if info.name == "cpu" else "cuda")
        # As in Warp: the compute capability as an int (90 for sm_90), 0 for the CPU.
        arch = info.arch
        self.arch: int = int(arch[3:]) if arch.startswith("sm_") and arch[3:].isdigit() else 0
        self.uuid = info.uuid or None  # as in Warp: None for the CPU
        self.sm_count: int = int(getattr(info, "sm_count", 0))
        # Warp's capability flags, as a client of the daemon has them: GPUs have
        # unified addressing and stream-ordered pools (the daemon's, always on;
        # mempool.py), run in their primary contexts, and take CUBIN where the
        # driver cannot JIT the PTX; arrays are not shared by CUDA IPC (yet).
        gpu = self.kind == "cuda"
        self.is_uva: bool = gpu
        self.is_mempool_supported: bool = gpu
        self.is_mempool_enabled: bool = gpu
        self.is_primary: bool = gpu
        self.is_cubin_supported: bool = gpu
        self.is_ipc_supported: bool = False
        self.total_memory: int = info.memory_bytes
        self.ordinal: int = int(self.alias.split(":")[1]) if ":" in self.alias else -1
        # Why the daemon cannot run work on it ("" when it can): GPUs are
        # listed before the daemon can run anything on them.
        self.unavailable: str = getattr(info, "unavailable", "")

    @property
    def free_memory(self) -> int:
        """Bytes this client could still allocate on the device now (Warp's free_memory): the
        device's free memory (for the CPU, the daemon host's available memory), at most what
        the tenant's memory quota leaves. Asks the daemon at each read; 0 when unknown."""
        from .context import runtime
        from .v1 import runtime_pb2

        rt = runtime()
        info = rt.call("GetServerInfo", runtime_pb2.GetServerInfoRequest())
        free = next((d.free_bytes for d in info.devices if d.name == self.alias), 0)
        usage = rt.call("GetUsage", runtime_pb2.GetUsageRequest(session=rt.session))
        for q in usage.quotas:
            if q.resource == "memory_bytes" and q.limit:
                left = max(0, q.limit - q.used)
                free = min(free, left) if free else left
        return int(free)

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    def __str__(self):
        return self.alias

    def __repr__(self):
        return f"'{self.alias}'"

    def __eq__(self, other):
        if isinstance(other, Device):
            return self.alias == other.alias
        if isinstance(other, str):
            return self.alias == other
        return NotImplemented

    def __hash__(self):
        return hash(self.alias)


def resolve(devices: dict, default: Device, ident, unavailable: dict | None = None) -> Device:
    """The Device for a Warp device identifier (None, "cpu", "cuda", "cuda:N", Device).
    `unavailable`: devices the daemon lists but cannot run work on; naming one
    raises DeviceError saying why."""
    if ident is None:
        return default
    if isinstance(ident, Device):
        if ident.alias in devices:
            return devices[ident.alias]
        ident = ident.alias
    if not isinstance(ident, str):
        raise DeviceError(f"invalid device identifier {ident!r}: expected a string such as "
                          f"\"cpu\" or \"cuda:0\"")
    name = ident
    if name == "cuda":
        cudas = sorted((d for d in devices.values() if d.is_cuda), key=lambda d: d.ordinal)
        if cudas:
            return cudas[0]
        listed = sorted((d for d in (unavailable or {}).values() if d.is_cuda), key=lambda d: d.ordinal)
        if listed:
            name = listed[0].alias
    dev = devices.get(name)
    if dev is not None:
        return dev
    # A device's product name names it too when no other device shares it.
    by_name = [d for d in devices.values() if d.name == name]
    if len(by_name) == 1:
        return by_name[0]
    have = ", ".join(f'"{n}"' for n in devices)
    dev = (unavailable or {}).get(name)
    if dev is not None:
        raise DeviceError(f"device \"{name}\" ({dev.name}) cannot run work on the warpd server: "
                          f"{dev.unavailable} (usable devices: {have})")
    if name.startswith("cuda"):
        raise DeviceError(f"device \"{name}\" is not available: the warpd server has no such CUDA "
                          f"device (its devices: {have})")
    raise DeviceError(f"unknown device \"{name}\" (the warpd server's devices: {have})")
