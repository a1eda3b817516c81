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


def module_request(module=None, backward: bool = False):
    """The LoadModuleRequest this client sends for the caller's module (or `module`), with
    no session and no devices: what :func:`save_module` writes. `backward`: the module with
    its backward pass (``Module.backward``), every kernel's adjoint and the custom
    gradients and replays (``@wp.func_grad``, ``@wp.func_replay``) they reach."""
    from .v1 import ir_pb2, runtime_pb2  # noqa: PLC0415

    m = _module_of(module, 1)
    mod, _ = m.build()
    if backward:
        if not m.options.get("enable_backward", True):
            raise RuntimeError(f"module '{m.name}' has enable_backward=False: it has no backward pass to save")
        failed = m.translation_failures()
        with m._lock:
            kernels = {k.ir_name: k for k in [*m.kernels.values(), *m._live.values()]}
        out = ir_pb2.Module(name=m.name, backward=True)
        names = set()
        for name, k in kernels.items():
            if name in failed:
                continue
            part = m.backward_ir(k)
            error = m.adjoint_error(k)
            if error is not None:
                raise error.fresh()
            for f in part.functions:
                if f.name not in names:
                    names.add(f.name)
                    out.functions.append(f)
        mod = out
    return runtime_pb2.LoadModuleRequest(module=mod)


def save_module(path, module=None, backward: bool = False) -> None:
    """Writes the caller's module (or `module`: a name, a Python module or a Module) to
    `path` as the serialized ``warpd.v1.LoadModuleRequest`` this client would send to load
    it, with no session and no devices (:func:`module_request`). Another client loads the
    file by sending it with its own session and devices: the C++ client's
    ``Client::LoadModuleFile`` (clients/cpp/README.md). Kernels are named there by their
    Python names. `backward`: include the backward pass (needed for adjoint launches and
    tape backward through kernels with custom gradients)."""
    import os  # noqa: PLC0415

    data = module_request(module if module is not None else _caller_module_name(1), backward).SerializeToString(
        deterministic=True)
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
