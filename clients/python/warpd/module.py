"""Kernel modules: the unit the daemon compiles and loads, as in Warp.

All kernels of one Python module (plus the user functions they call, from any
module, each with all of its overloads) form one ``warpd.v1.Module``: as in
Warp, the latest kernel of each qualified name and any other kernel object
still referenced (kernels made by one factory share their qualified name;
their IR names differ, frontend.mangle). It is built and sent with LoadModule
on the first launch of any of its kernels on a device, and cached by the
SHA-256 of its serialized IR: a launch after new kernels were defined (or an
overload added to a function) builds a new module; identical content is never
loaded twice per device. Compile errors are
cached the same way and raised again without another round trip.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import warnings
import weakref

from . import config, progress
from .errors import CompileError, from_failure
from .v1 import ir_pb2, runtime_pb2

_registry: dict[str, Module] = {}
# Warp's name for the registry (warp._src.context.user_modules): module name -> Module.
user_modules = _registry
_registry_lock = threading.Lock()
# Bumped when a @wp.func gets another overload in place (function.py): the IR of
# every module that reaches it may change, though none of its kernels did.
_functions_epoch = 0


# Bumped when this process's loaded modules were released in the daemon (a cleared
# kernel cache on a shared daemon): every launch plan names a stale module handle.
_loads_epoch = 0


def loads_released():
    """Invalidates every module's launch plans: the next launch loads its module again."""
    global _loads_epoch
    with _registry_lock:
        _loads_epoch += 1


def functions_changed():
    """Drops every module's cached build (a @wp.func was given another overload)."""
    global _functions_epoch
    with _registry_lock:
        _functions_epoch += 1


# Warp 1.19's module options and their defaults.
_DEFAULT_OPTIONS = {
    "max_unroll": 16,
    "enable_backward": True,
    "fast_math": False,
    "fuse_fp": True,
    "lineinfo": False,
    "cuda_output": None,
    "mode": "release",
    "block_dim": 256,
    "compile_time_trace": False,
}


def default_options() -> dict:
    """A new module's options: Warp's defaults, with wp.config's mode and enable_backward."""
    from . import config  # noqa: PLC0415 - config is tiny; imported late to keep this module leaf

    out = dict(_DEFAULT_OPTIONS)
    out["enable_backward"] = getattr(config, "enable_backward", True)
    out["mode"] = getattr(config, "mode", "release")
    return out


def _warn_failures(module: str, kernels: dict, functions) -> None:
    """Says once per load which kernels (and uncalled functions) were left out, and why."""
    lines = [f"warpd: module '{module}' loaded without {len(kernels)} kernel(s) that failed "
             f"to compile; launching one raises its error:"]
    messages = [str(e) for e in kernels.values()] + [str(from_failure(f)) for f in functions]
    lines += [f"  {m}" for m in dict.fromkeys(messages)]  # a function's error once
    warnings.warn("\n".join(lines), UserWarning, stacklevel=4)


class LoadedModule:
    """A module as loaded on one device: its handle and each kernel's KernelInfo."""

    def __init__(self, handle: int, kernels: dict, response, failed: dict):
        self.handle = handle
        self.kernels = kernels  # IR name -> KernelInfo
        self.response = response
        # IR name -> CompileError of each kernel left out (it failed to translate on the
        # client or to type-check on the daemon); launching it raises that error.
        self.failed = failed


class Module:
    def __init__(self, name: str):
        self.name = name
        # Warp's module options (wp.set_module_options), defaults filled in as in Warp;
        # warpd's CPU compiler reads none of them yet.
        self.options: dict = default_options()
        self.kernels: dict = {}  # qualname -> the latest Kernel of that name (kept alive)
        # IR name -> a Kernel of that IR name while one is referenced (older definitions,
        # other kernels of a factory); the first one registered stays while it lives.
        self._live = weakref.WeakValueDictionary()
        self._kernels_version = 0  # bumped whenever a kernel is (re)defined
        self._lock = threading.Lock()
        self._built = None  # (version, ir_pb2.Module, content hash, {IR name: CompileError})
        self._custom_errors: dict = {}  # kernel IR name -> custom gradient error (backward_ir)

    def register(self, kernel):
        with self._lock:
            self.kernels[kernel.qualname] = kernel
            if self._live.get(kernel.ir_name) is None:
                self._live[kernel.ir_name] = kernel
            self._kernels_version += 1

    def identical_kernel(self, kernel):
        """A live kernel of this module other than `kernel` declared the same way: by the same
        definition (code object and globals: a factory called again), with the same name, IR
        name (annotations and what it was made with: identity.py) and options. Declaring a
        kernel again gives that one, as in Warp."""
        with self._lock:
            prev = self._live.get(kernel.ir_name)
        if (prev is None or prev is kernel or prev.func.__code__ is not kernel.func.__code__
                or prev.func.__globals__ is not kernel.func.__globals__ or prev.key != kernel.key
                or prev.options != kernel.options or prev.enable_backward != kernel.enable_backward
                or prev.generic_params):
            return None
        return prev

    def has_kernels(self) -> bool:
        """Whether the module holds a kernel to build (generic templates do not count)."""
        with self._lock:
            return bool(self.kernels) or len(self._live) > 0

    @property
    def version(self) -> tuple:
        """Changes whenever the module's IR may have (a kernel (re)defined, an overload added)
        or its loads were released in the daemon: launch plans are cached per version."""
        return (self._kernels_version, _functions_epoch, _loads_epoch)

    def build(self):
        """(ir_pb2.Module, content hash) for the current kernels; cached per version.

        A kernel that fails to translate (or calls a function that does) is left out
        and remembered (:meth:`translation_failures`): one broken kernel does not take
        its module down. When every kernel fails, the first one's error is raised.
        """
        with self._lock:
            if self._built is not None and self._built[0] == self.version:
                return self._built[1], self._built[2]
            version = self.version
            kernels, names = [], set()
            for k in [*self.kernels.values(), *self._live.values()]:
                if k.ir_name not in names:
                    names.add(k.ir_name)
                    kernels.append(k)
        funcs, seen = [], set()

        def add_function(f, out, new):
            # Every overload of a function a kernel reaches (the daemon picks among them).
            if f.ir_name in seen or f.ir_name in new:
                return
            new.add(f.ir_name)
            irs, deps = f.build()
            for d in deps:
                add_function(d, out, new)
            out.extend(irs)

        kernel_irs, failed = [], {}
        for k in kernels:
            k_funcs, k_seen = [], set()
            try:
                ir, deps = k.build()
                for d in deps:
                    add_function(d, k_funcs, k_seen)
            except CompileError as e:
                failed[k.ir_name] = e
                continue
            funcs.extend(k_funcs)
            seen.update(k_seen)
            kernel_irs.append(ir)
        if kernels and not kernel_irs:
            raise next(iter(failed.values()))
        mod = ir_pb2.Module(name=self.name)
        mod.functions.extend(funcs)
        mod.functions.extend(kernel_irs)
        digest = hashlib.sha256(mod.SerializeToString(deterministic=True)).hexdigest()
        with self._lock:
            self._built = (version, mod, digest, failed)
        return mod, digest

    def hash_module(self) -> str:
        """A hex digest of what the module's kernels compute: their IR (sources as translated,
        parameter and struct types, inlined constants and wp.static() values, the functions
        they reach). Two modules with the same content hash equal whatever their names and
        source files (the names warpd derives from them are numbered in order of appearance,
        file paths dropped); a change to any of that changes it, as Warp's does."""
        mod, _ = self.build()
        canon = ir_pb2.Module()
        canon.CopyFrom(mod)
        canon.name = ""
        numbered: dict = {}

        def rename(text):
            return _DERIVED_NAME.sub(lambda m: numbered.setdefault(m.group(1), f"_n{len(numbered)}"), text)

        _canonicalize(canon, rename)
        return hashlib.sha256(canon.SerializeToString(deterministic=True)).hexdigest()

    def backward_ir(self, kernel) -> ir_pb2.Module:
        """The module the backward pass of `kernel` is compiled in: the kernel, the functions
        it reaches, and their custom gradients and replays (custom_grad.py) with what those
        call; Module.backward set. One per differentiated kernel, so a program pays only for
        the adjoints it runs (a module's other kernels are not compiled again)."""
        kernel_ir, deps = kernel.build()
        out = ir_pb2.Module(name=self.name, backward=True)
        present, reached = set(), []
        stack = list(deps)
        while stack:
            f = stack.pop()
            if f.ir_name in present:
                continue
            present.add(f.ir_name)
            reached.append(f)
            irs, fdeps = f.build()
            out.functions.extend(irs)
            stack.extend(fdeps)
        out.functions.append(kernel_ir)
        names = {f.name for f in out.functions}
        by_name = {f.name: f for f in out.functions}
        error = None
        for f in reached:
            try:
                customs = f.custom_irs()
            except CompileError as e:
                error = error or e  # the kernel's adjoint launches raise it (adjoint_error)
                continue
            for name, kind, ir, cdeps in customs:
                target = by_name.get(name)
                if target is None or ir.name in names:
                    continue
                if kind == "grad":
                    target.custom_grad = ir.name
                else:
                    target.custom_replay = ir.name
                out.functions.append(ir)
                names.add(ir.name)
                stack.extend(cdeps)
        while stack:  # what the custom functions call
            f = stack.pop()
            if f.ir_name in present:
                continue
            present.add(f.ir_name)
            irs, fdeps = f.build()
            for ir in irs:
                if ir.name not in names:
                    out.functions.append(ir)
                    names.add(ir.name)
            stack.extend(fdeps)
        with self._lock:
            self._custom_errors[kernel.ir_name] = error
        return out

    def adjoint_error(self, kernel):
        """The error of a custom gradient or replay that `kernel` reaches and that failed to
        translate when its backward module was built, or None."""
        with self._lock:
            return self._custom_errors.get(kernel.ir_name)

    def translation_failures(self) -> dict:
        """IR name -> CompileError of the kernels the last build() left out."""
        with self._lock:
            return dict(self._built[3]) if self._built is not None else {}

    def load(self, rt, device, kernel: str | None = None, backward=None) -> LoadedModule:
        """The module loaded on `device` (LoadModule on first use of this content).

        `backward` (a Kernel): the module of that kernel's backward pass
        (backward_ir), loaded the first time its gradient is needed, so
        forward-only programs never compile one. When no kernel compiles,
        raises the error of `kernel` (an IR name) if the daemon listed it,
        else the module's error (every kernel's)."""
        mod, digest = self.build()
        if backward is not None:
            if not self.options.get("enable_backward", True):
                raise RuntimeError(f"module '{self.name}' was built with enable_backward=False: its "
                                   f"kernels have no adjoint (set it True to differentiate them)")
            mod = self.backward_ir(backward)
            digest = hashlib.sha256(mod.SerializeToString(deterministic=True)).hexdigest()
        key = (digest, device.alias, backward is not None)
        with rt.lock:
            cached = rt.loaded_modules.get(key)
        if isinstance(cached, CompileError):
            raise _error_of(cached, kernel).fresh()
        if cached is not None:
            return cached
        req = runtime_pb2.LoadModuleRequest(session=rt.session, module=mod, devices=[device.alias])
        shown = progress.CompileProgress(f"module '{self.name}'{' (backward)' if backward is not None else ''} "
                                         f"on {device.alias}")
        start = time.monotonic()
        try:
            resp = rt.call_waiting("LoadModule", req, compiling=True, delay=config.compile_progress_delay,
                                   waiting=shown.update)
        except CompileError as e:
            shown.finish(time.monotonic() - start, ok=False)
            with rt.lock:
                rt.loaded_modules[key] = e
            raise _error_of(e, kernel).fresh() from None
        except BaseException:
            shown.finish(time.monotonic() - start, ok=False)
            raise
        shown.finish(time.monotonic() - start, ok=True)
        failed = self.translation_failures()
        for f in resp.failed:
            if f.kernel:
                failed[f.name] = from_failure(f)
        loaded = LoadedModule(resp.module, {k.name: k for k in resp.kernels}, resp, failed)
        with rt.lock:
            rt.loaded_modules[key] = loaded
        if failed or resp.failed:
            _warn_failures(self.name, failed, [f for f in resp.failed if not f.kernel])
        return loaded

    def __repr__(self):
        return f"<warpd module {self.name}: {len(self.kernels)} kernels>"


def _error_of(module_error: CompileError, kernel: str | None) -> CompileError:
    """`kernel`'s own error among a failed load's, else the module's."""
    return getattr(module_error, "failures", {}).get(kernel) or module_error


def all_modules() -> list:
    """Every module made so far, in creation order."""
    with _registry_lock:
        return list(_registry.values())


# Names the client derives from a Python module and qualified name plus a content
# hash (frontend.mangle, types/struct._ir_name): "<identifier>_<8 hex digits>".
_DERIVED_NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*_[0-9a-f]{8})\b")


def _canonicalize(msg, rename):
    """In place: every string field of `msg` (at any depth) through rename(), source
    positions (file, line, column) and struct display names (module-qualified, for
    messages only) cleared."""
    for fd, value in msg.ListFields():
        if fd.name == "display_name" and msg.DESCRIPTOR.name == "StructType":
            msg.ClearField(fd.name)
            continue
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
        if fd.type == fd.TYPE_MESSAGE:
            if fd.message_type.name == "SourceSpan":
                msg.ClearField(fd.name)
                continue
            for v in (value if repeated else (value,)):
                _canonicalize(v, rename)
        elif fd.type == fd.TYPE_STRING:
            if repeated:
                new = [rename(v) for v in value]
                del value[:]
                value.extend(new)
            else:
                setattr(msg, fd.name, rename(value))


def get_module(name: str) -> Module:
    with _registry_lock:
        m = _registry.get(name)
        if m is None:
            m = Module(name)
            _registry[name] = m
        return m


def unique_module(kernel) -> Module:
    """A module holding only `kernel` (``@wp.kernel(module="unique")``); a kernel given its own
    name (``name=``) gets a module of its own beside another one of the same source."""
    suffix = "" if kernel.key == kernel.func.__name__ else f".{kernel.key}"
    return get_module(f"{kernel.func.__module__ or '__main__'}.{kernel.ir_name}{suffix}")
