"""``@wp.kernel``: Python functions launched in the daemon (``@wp.func``: function.py).

A Kernel belongs to a Module (by default its Python module, as in Warp; or a
module of its own with ``@wp.kernel(module="unique")``). Its IR is built on
first use, not at decoration, so it may call functions defined later in the
file. A Function (``@wp.func``, with all of its overloads) is included in
every module whose kernels call it, directly or through other functions.
"""

from __future__ import annotations

import functools

import types as pytypes

import numpy as np

from . import frontend, staticexpr
from . import types as wt
from .function import Function, callee_names
from .module import get_module, unique_module
from .v1 import ir_pb2


class Kernel:
    """A kernel; launch it with ``wp.launch``."""

    def __init__(self, func, key=None, module=None, options=None, enable_backward=None):
        self.func = func
        self.key = key if key is not None else func.__name__
        # Warp's per-kernel options (enable_backward, launch_bounds, ...); the CUDA-only
        # ones are kept for the CUDA device and change nothing on the CPU.
        self.options = dict(options or {})
        if enable_backward is None:
            enable_backward = self.options.get("enable_backward")
        self.qualname = func.__qualname__
        self._declared = frontend.declare(func)  # wp.static() values, evaluated now as in Warp
        self.ir_name = frontend.mangle(func, self._declared)
        self.enable_backward = enable_backward
        self._ir = None
        self._deps = ()
        self._callees = ()
        self._again = False
        # (runtime, device name) -> (module version, launch plan); see launch.py.
        self._plans: dict = {}
        # (runtime, Device, module version, plan) of the latest launch: wp.launch's fast check.
        self._last_plan = None
        # A generic kernel (a parameter annotated typing.Any, wp.array(dtype=Any), wp.Float...)
        # is a template: never built itself; each distinct tuple of argument types it is
        # launched with (or wp.overload names) gets an instance, a Kernel of its own.
        self._hints = _evaluated_annotations(func)  # once: launches read them
        code = func.__code__
        self._param_names = code.co_varnames[:code.co_argcount]
        self.generic_params = tuple(n for n in self._param_names
                                    if n in self._hints and wt.is_generic(self._hints[n]))
        self._instances: dict = {}  # binding (annotation keys) -> instance
        self._by_args: dict = {}  # the argument types' identities a launch saw -> instance
        if module == "unique":
            self.module = unique_module(self)
        elif isinstance(module, str) and module:
            self.module = get_module(module)
        elif module is not None and hasattr(module, "register"):
            self.module = module
        else:
            self.module = get_module(frontend.module_of(func))
        if not self.generic_params:
            self.module.register(self)
        else:  # found by a later @wp.overload stub of the same name (see overload); kept, as a
            # module keeps its kernels
            _GENERIC_KERNELS.setdefault((frontend.module_of(func), func.__qualname__), []).append(self)
        functools.update_wrapper(self, func)

    @property
    def adj(self):
        """Warp's ``kernel.adj``, for the facts programs read from it: ``args`` (``label``,
        ``type``), ``source``, ``filename``, ``resolved_static_expressions``,
        ``has_unresolved_static_expressions`` (kernel_info.py)."""
        from .kernel_info import KernelInfo

        return KernelInfo(self)

    @property
    def overloads(self) -> dict:
        """Warp's Kernel.overloads: this generic kernel's instances made so far (by
        wp.overload or by launches), keyed by their concrete parameter types."""
        return dict(self._instances)

    @property
    def is_generic(self) -> bool:
        return bool(self.generic_params)

    def instance(self, types: dict) -> Kernel:
        """The instance of this generic kernel with the generic parameters given `types`
        (parameter name -> concrete type or array annotation); made once per binding."""
        key = tuple((name, frontend.annotation_key(self.func, types[name])) for name in self.generic_params)
        inst = self._instances.get(key)
        if inst is None:
            annotations = dict(self._hints)
            annotations.update({name: types[name] for name in self.generic_params})
            f = pytypes.FunctionType(self.func.__code__, self.func.__globals__, self.func.__name__,
                                     self.func.__defaults__, self.func.__closure__)
            f.__kwdefaults__ = self.func.__kwdefaults__
            f.__dict__.update(self.func.__dict__)
            f.__module__ = self.func.__module__
            f.__qualname__ = self.func.__qualname__
            f.__annotations__ = annotations
            inst = Kernel(f, key=self.key, module=self.module, options=self.options,
                          enable_backward=self.enable_backward)
            self._instances[key] = inst
        return inst

    def instance_for(self, args) -> Kernel:
        """The instance a launch with `args` (inputs then outputs) runs. A launch whose
        arguments have types already seen costs one dict lookup over their identities."""
        names = self._param_names
        if len(args) != len(names):
            raise TypeError(f"kernel '{self.key}' takes {len(names)} arguments "
                            f"({', '.join(names)}), but {len(args)} were given")
        ident = tuple(_type_identity(a) for a in args)
        inst = self._by_args.get(ident)
        if inst is not None:
            return inst
        types = {}
        for name, value in zip(names, args):
            if name not in self.generic_params:
                continue
            t = _argument_type(value)
            hint = self._hints[name]
            if t is None or not wt.generic.matches(hint, t):
                raise TypeError(f"kernel '{self.key}' argument '{name}': got "
                                f"{_describe(value, t)}, which the generic annotation "
                                f"{wt.type_repr(hint)} does not take")
            types[name] = t
        inst = self.instance(types)
        self._by_args[ident] = inst
        return inst

    def build(self):
        """(ir_pb2.Function, [Function]) — translated once, again per module build when a
        wp.static() could only be evaluated at translation (as Warp does), or when a
        function it calls got another overload (its set was renamed, function.py)."""
        if self._ir is None or self._again or self._callees != callee_names(self._deps):
            self._ir, deps, self._again = frontend.translate(
                self.func, ir_pb2.FUNCTION_KERNEL, self.ir_name, Function, self._declared)
            self._deps = tuple(deps)
            self._callees = callee_names(self._deps)
        return self._ir, list(self._deps)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.key}' cannot be called directly; launch it with "
                        f"wp.launch({self.key}, dim=..., inputs=[...])")

    def __repr__(self):
        return f"<warpd kernel {frontend.module_of(self.func)}.{self.qualname}>"


def kernel(f=None, *, name=None, enable_backward=None, launch_bounds=None, cuda_max_registers=None,
           enable_cuda_smem_spilling=None, cluster_dim=None, module=None, module_options=None,
           entry_point_abi=None, grid_stride=None):
    """Decorator: ``@wp.kernel`` or ``@wp.kernel(module="unique", enable_backward=False)``.

    ``launch_bounds``, ``cuda_max_registers``, ``enable_cuda_smem_spilling``,
    ``cluster_dim`` and ``grid_stride`` are CUDA options: kept, unused on the CPU.
    ``module_options`` are set on the kernel's module (wp.set_module_options)."""
    if entry_point_abi not in (None, "warp"):
        raise NotImplementedError(f"entry_point_abi={entry_point_abi!r} is not supported by warpd "
                                  f"(only Warp's own kernel ABI)")
    if name is not None and not (isinstance(name, str) and name.isidentifier() and name.isascii()):
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")
    options = {k: v for k, v in (("enable_backward", enable_backward), ("launch_bounds", launch_bounds),
                                 ("cuda_max_registers", cuda_max_registers),
                                 ("enable_cuda_smem_spilling", enable_cuda_smem_spilling),
                                 ("cluster_dim", cluster_dim), ("grid_stride", grid_stride))
               if v is not None}

    def wrap(func):
        k = Kernel(func, key=name, module=module, options=options, enable_backward=enable_backward)
        if not k.generic_params:
            prev = k.module.identical_kernel(k)
            if prev is not None:  # declared again, unchanged: the same kernel (Warp 1.19)
                k.module.register(prev)
                k = prev
        if module_options:
            k.module.options.update(module_options)
        return k

    return wrap(f) if f is not None else wrap


def _evaluated_annotations(func) -> dict:
    """func's parameter annotations as objects (string annotations evaluated where they can be)."""
    out = {}
    ns = None
    for name, ann in getattr(func, "__annotations__", {}).items():
        if isinstance(ann, str):
            if ns is None:
                ns = staticexpr.namespace(func.__globals__, staticexpr.closure_of(func))
            try:
                ann = eval(ann, ns)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - translation reports it with file:line
                pass
        out[name] = ann
    return out


def _type_identity(value):
    """What decides a launch argument's type: (dtype, ndim) of an array, else its class."""
    if getattr(value, "_wp_array_", False):
        return (value.dtype, value.ndim)
    if getattr(value, "_wp_indexed_", False):
        return ("indexed", value.dtype, value.ndim)
    if isinstance(value, np.generic):
        return value.dtype
    return value.__class__


def _argument_type(value):
    """The concrete type a launch argument gives a generic parameter (an array annotation
    for arrays); None when it has none."""
    if getattr(value, "_wp_array_", False) and getattr(value, "handle", None) is not None:
        return _array_annotation(value.dtype, value.ndim)
    if getattr(value, "_wp_indexed_", False) and getattr(value, "data", None) is not None:
        from .indexedarray import indexedarray
        return indexedarray(dtype=value.dtype, ndim=value.ndim)
    if isinstance(value, bool):
        return wt.bool
    if isinstance(value, int):
        return wt.int32
    if isinstance(value, float):
        return wt.float32
    if isinstance(value, np.generic):
        return wt.scalar_from_numpy(value.dtype)
    t = type(value)
    if wt.is_value_type(t):
        return wt.canonical_dtype(t)
    return None


def _describe(value, t) -> str:
    return wt.type_repr(t) if t is not None else f"a {type(value).__name__}"


def _array_annotation(dtype, ndim):
    from .array import array  # noqa: PLC0415 - array imports the runtime, kernels need not
    return array(dtype=dtype, ndim=ndim)


# Generic kernels by their function's (module, qualified name), for @wp.overload stubs.
_GENERIC_KERNELS: dict = {}


def overload(kernel, arg_types=None):
    """``wp.overload``: an explicit instance of a generic kernel, from a list or dict of
    parameter types (``wp.overload(k, [wp.array(dtype=float)])``) or as a decorator on a
    function of the kernel's name whose annotations are concrete. On a @wp.func it is
    accepted and changes nothing: the daemon instantiates generic functions per call."""
    if isinstance(kernel, Kernel):
        if not kernel.is_generic:
            raise TypeError(f"wp.overload: kernel '{kernel.key}' is not generic")
        names = kernel._param_names
        if isinstance(arg_types, dict):
            types = dict(arg_types)
        elif isinstance(arg_types, (list, tuple)):
            if len(arg_types) != len(names):
                raise TypeError(f"wp.overload: kernel '{kernel.key}' takes {len(names)} arguments, "
                                f"{len(arg_types)} types were given")
            types = dict(zip(names, arg_types))
        else:
            raise TypeError("wp.overload(kernel, arg_types) needs a list or dict of types")
        missing = [n for n in kernel.generic_params if n not in types]
        if missing:
            raise TypeError(f"wp.overload: no type for generic parameter(s) {', '.join(missing)} "
                            f"of kernel '{kernel.key}'")
        return kernel.instance(types)
    if isinstance(kernel, Function):
        return kernel
    if callable(kernel) and arg_types is None:
        # Decorator form: the function names an existing generic kernel or @wp.func.
        ret = getattr(kernel, "__annotations__", {}).get("return", None)
        if ret is not None and ret is not type(None) and ret != "None":
            raise TypeError(f"Return annotations are not allowed on @wp.overload stubs "
                            f"('{kernel.__name__}' is annotated to return {ret!r})")
        # A generic kernel made from a function of this qualified name (the stub may
        # have rebound the name itself, as a module-level def does).
        made = _GENERIC_KERNELS.get((frontend.module_of(kernel), kernel.__qualname__), [])
        if len({k.key for k in made}) > 1:
            raise RuntimeError(f"Ambiguous kernel lookup for @wp.overload '{kernel.__qualname__}': kernels "
                               f"{', '.join(sorted({k.key for k in made}))} were made from functions of that "
                               f"name; call wp.overload(kernel, arg_types) on the one you mean")
        if made:
            overload(made[-1], _evaluated_annotations(kernel))
            return made[-1]
        target = kernel.__globals__.get(kernel.__name__)
        if target is None:
            import inspect  # noqa: PLC0415
            frame = inspect.currentframe().f_back
            target = frame.f_locals.get(kernel.__name__) if frame is not None else None
        if isinstance(target, Kernel):
            overload(target, _evaluated_annotations(kernel))
            return target
        if isinstance(target, Function):
            return target
        raise TypeError(f"wp.overload: no generic kernel or function named '{kernel.__name__}' "
                        f"is defined before this overload")
    raise TypeError(f"wp.overload expects a generic @wp.kernel, got {type(kernel).__name__}")
