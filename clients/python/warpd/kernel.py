"""``@wp.kernel``: Python functions launched in the daemon (``@wp.func``: function.py).

A Kernel belongs to a Module (by default its Python module, as in Warp; or a
module of its own with ``@wp.kernel(module="unique")``). Its IR is built on
first use, not at decoration, so it may call functions defined later in the
file. A Function (``@wp.func``, with all of its overloads) is included in
every module whose kernels call it, directly or through other functions.
"""

from __future__ import annotations

import functools

from . import frontend
from .function import Function, callee_names
from .module import get_module, unique_module
from .v1 import ir_pb2


class Kernel:
    """A kernel; launch it with ``wp.launch``."""

    def __init__(self, func, module=None, enable_backward=None):
        self.func = func
        self.key = func.__name__
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
        if module == "unique":
            self.module = unique_module(self)
        elif isinstance(module, str) and module:
            self.module = get_module(module)
        elif module is not None and hasattr(module, "register"):
            self.module = module
        else:
            self.module = get_module(func.__module__)
        self.module.register(self)
        functools.update_wrapper(self, func)

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
        return f"<warpd kernel {self.func.__module__}.{self.qualname}>"


def kernel(f=None, *, enable_backward=None, module=None):
    """Decorator: ``@wp.kernel`` or ``@wp.kernel(module="unique")``."""
    def wrap(func):
        return Kernel(func, module=module, enable_backward=enable_backward)

    return wrap(f) if f is not None else wrap
