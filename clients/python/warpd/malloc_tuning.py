"""glibc malloc thresholds for a process that streams bulk data over gRPC.

A remote client receives ``numpy()`` as 2 MiB messages. gRPC's reader
threads allocate their receive buffers per message and free them once it is
read; under glibc's default thresholds each free hands the pages back to the
system (an arena's top is trimmed past a few MiB, and blocks above the
threshold are mmapped and unmapped), so the next message faults fresh pages
in again: on the bench host 25,000-50,000 page faults per 256 MiB download,
and the download ran at 1.0 GB/s against 1.6 GB/s without them (five runs
each, in turn). The daemon tunes its own process the same way
(server/main.cc, TuneMalloc).

``apply()`` sets, once per process, blocks under 8 MiB to come from the heap
and each heap to keep up to 32 MiB free at its top. The cost is that much
freed memory staying with the process, per malloc arena (one per thread that
allocates, at most 8 per core). ``warpd`` calls it when it connects to a
daemon over TCP unless ``wp.config.tune_malloc`` is False (or
WARPD_TUNE_MALLOC=0); it does nothing where the C library is not glibc.
"""

import ctypes

MMAP_THRESHOLD = 8 << 20
TRIM_THRESHOLD = 32 << 20

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_applied = False


def apply() -> bool:
    """Sets the thresholds (once); True when they are set."""
    global _applied
    if _applied:
        return True
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):
            return False  # another C library: its mallopt means something else, if anything
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
    except (OSError, AttributeError):
        return False
    # Both, or dynamic thresholds would undo half of it (mallopt of either
    # one turns glibc's adjustment of both off).
    _applied = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    return _applied


def applied() -> bool:
    return _applied
