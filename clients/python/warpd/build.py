"""``wp.build``: the daemon's kernel cache (location and clearing)."""

from __future__ import annotations

import os

from . import config
from . import context, module
from .v1 import runtime_pb2


def init_kernel_cache(path: str | None = None):
    """Uses `path` as the kernel cache directory (created if needed).

    Before ``wp.init()`` this only sets ``wp.config.kernel_cache_dir``; after,
    the daemon switches its cache (the daemon must allow it:
    ``--allow-client-cache-dir``). ``wp.config.kernel_cache_dir`` is updated.
    """
    if path is None:
        path = config.kernel_cache_dir
    if not context.is_initialized():
        config.kernel_cache_dir = path
        return
    if path is None:
        return
    rt = context.runtime()
    resp = rt.call("SetKernelCacheDir", runtime_pb2.SetKernelCacheDirRequest(
        session=rt.session, path=os.path.abspath(path)))
    rt.info.kernel_cache_dir = resp.kernel_cache_dir
    config.kernel_cache_dir = resp.kernel_cache_dir


def clear_kernel_cache() -> int:
    """Deletes the daemon's cached compiled kernels; returns how many entries were removed.

    On a daemon this process owns (a private daemon), the cache is deleted:
    modules already loaded stay loaded, later loads compile afresh. On a
    shared daemon the cache belongs to every tenant, so only this process's
    loaded modules are released (they load again on their next launch) and
    0 is returned.
    """
    rt = context.runtime()
    rt.flush_all()  # queued launches name the modules about to be released
    resp = rt.call("ClearKernelCache", runtime_pb2.ClearKernelCacheRequest(session=rt.session))
    if resp.modules_released:
        with rt.lock:
            rt.loaded_modules.clear()
        module.loads_released()  # kernels' cached launch plans name the released handles
    return resp.entries_removed
