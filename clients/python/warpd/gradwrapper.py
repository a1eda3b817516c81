"""``wp.grad(f)``: the gradient of a Warp function, called in forward code (Warp 1.19).

Inside a kernel or ``@wp.func``, ``wp.grad(f)(args)`` is the gradient of ``f`` at
``args``: the adjoints of the arguments for an adjoint of one in every component of
``f``'s result, one value for one argument and a tuple for several
(``db, da = wp.grad(wp.atan2)(b, a)``). ``f`` is a ``@wp.func`` or a differentiable
builtin. ``g = wp.grad(f)`` binds a local to it (``g(x)`` later); such a local cannot
be given another value.

The front end (frontend.py) sends the call as ``f(args)`` with ``Call.grad`` set
(ir.proto); the daemon runs ``f``'s adjoint there. The backward pass treats the
result as a constant, as Warp does, and a function that calls ``wp.grad()`` passes
no gradient back at all (Warp 1.19's rule).
"""

from __future__ import annotations


class GradWrapper:
    """What ``wp.grad(func)`` returns: callable in kernels and functions only."""

    def __init__(self, func):
        self.func = func

    def __call__(self, *args, **kwargs):
        raise RuntimeError("grad() wrapper can only be called inside Warp kernels and functions.")

    def __eq__(self, other):
        return isinstance(other, GradWrapper) and other.func is self.func

    def __hash__(self):
        return hash(("GradWrapper", id(self.func)))

    def __repr__(self):
        name = getattr(self.func, "key", None) or getattr(self.func, "_wp_builtin_", None) or \
            getattr(self.func, "__name__", repr(self.func))
        return f"GradWrapper({name})"


def is_function(func) -> bool:
    """Whether ``func`` is a Warp function: a @wp.func or a builtin (wp.sin, ...)."""
    from . import staticexpr
    from .function import Function

    if isinstance(func, (Function, staticexpr.Builtin)):
        return True
    mod = getattr(func, "__module__", None) or ""
    return callable(func) and not isinstance(func, type) and bool(getattr(func, "_wp_builtin_", None)) and \
        (mod == "warpd" or mod.startswith("warpd."))


def grad(func) -> GradWrapper:
    """The gradient of ``func`` (a @wp.func or a differentiable builtin), to call in a
    kernel or function: ``wp.grad(square)(x)`` is d square / dx at x; several
    arguments give a tuple of their adjoints."""
    if is_function(func):
        return GradWrapper(func)
    raise TypeError(f"grad() expects a Warp function, got {type(func)}")
