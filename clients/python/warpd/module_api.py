"""Warp's module functions: ``wp.get_module``, ``wp.set_module_options``,
``wp.get_module_options``, ``wp.load_module`` and ``wp.force_load``.

A module (module.py) is the unit the daemon compiles: by default every kernel
of one Python module. Loading is what the first launch does anyway; these
functions do it ahead of time (a program that wants compile errors or compile
time up front), on one device or all.
"""

from __future__ import annotations

import sys
import types as pytypes

from .module import Module, all_modules, get_module as _get_module

def _caller_module_name(depth: int) -> str:
    frame = sys._getframe(depth + 1)
    try:
        return frame.f_globals.get("__name__", "__main__")
    finally:
        del frame


def _module_of(module, depth: int) -> Module:
    if module is None:
        return _get_module(_caller_module_name(depth + 1))
    if isinstance(module, Module):
        return module
    if isinstance(module, pytypes.ModuleType):
        return _get_module(module.__name__)
    if isinstance(module, str):
        return _get_module(module)
    raise TypeError(f"expected a module, a module name or None, got {type(module).__name__}")


def get_module(name: str) -> Module:
    """The kernel module of that name (a Python module's ``__name__``)."""
    return _get_module(name)


def set_module_options(options: dict, module=None):
    """Sets options of the caller's module (or `module`): ``enable_backward``,
    ``max_unroll``, ``fast_math``, ``mode``, ... (module.py, _DEFAULT_OPTIONS)."""
    if not isinstance(options, dict):
        raise TypeError("wp.set_module_options expects a dict")
    _module_of(module, 1).options.update(options)


def get_module_options(module=None) -> dict:
    """The options of the caller's module (or `module`), Warp's defaults filled in."""
    return dict(_module_of(module, 1).options)


def _devices(rt, device) -> list:
    if device is None:
        return [rt.default_device]
    if isinstance(device, (list, tuple)):
        return [rt.device(d) for d in device]
    if device == "all":
        return list(rt.devices.values())
    return [rt.device(device)]


def load_module(module=None, device=None, recursive: bool = False, block_dim=None):
    """Compiles and loads the caller's module (or `module`) on `device` now, as the first
    launch of one of its kernels would; with `recursive`, also the modules of its
    submodules (names starting with its name and a dot)."""
    from .context import runtime  # noqa: PLC0415 - modules need no runtime until loaded

    rt = runtime()
    m = _module_of(module, 1)
    targets = [m]
    if recursive:
        prefix = m.name + "."
        targets += [x for x in all_modules() if x.name.startswith(prefix)]
    for target in targets:
        if not target.has_kernels():
            continue
        for dev in _devices(rt, device):
            target.load(rt, dev)


def force_load(device=None, modules=None, block_dim=None):
    """Loads every module with kernels (or those in `modules`) on `device` (default: the
    current device; "all" or a list for several)."""
    from .context import runtime  # noqa: PLC0415

    rt = runtime()
    targets = all_modules() if modules is None else [_module_of(x, 1) for x in modules]
    for target in targets:
        if not target.has_kernels():
            continue
        for dev in _devices(rt, device):
            target.load(rt, dev)
