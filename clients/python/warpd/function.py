"""``@wp.func``: user functions, overloaded by parameter types as in Warp 1.19.

    @wp.func
    def scale(x: float):
        return x * 2.0

    @wp.func
    def scale(x: wp.vec3):        # a second overload: `scale` now names both
        return x * 3.0

    @wp.func
    def twice(x: typing.Any):     # generic: one instance per argument types
        return x + x

A Function is an overload set. Defining a @wp.func under a name that its scope
(the module, class or function body it is defined in) already binds to a
Function of the same module and qualified name adds an overload to that
Function, which the name keeps. A definition with the parameter types of an
existing overload (types in order; names do not count) replaces it; when that
is the overload the Function was made with, the name is bound to a new
Function holding the other overloads too and the old object keeps its own, as
in Warp. A Function defined elsewhere (imported) is never extended: the name
is simply rebound.

Kernels call the set; the daemon picks, as Warp 1.19 does, the overload whose
parameter types match the argument types exactly, else the first (in definition
order) that fits with its ``typing.Any`` parameters matching anything, and
instantiates generic overloads per argument types.
Called from Python, a Function picks its overload the same way (Warp 1.19
binds such calls to the first definition's parameters, so it cannot pick by
arity there).

IR names are deterministic, so the daemon's module cache works across processes:

- a set of one overload is that definition's mangled name (frontend.mangle),
  and its IR function has that ``name`` and an empty ``overload_set``;
- a set of several is "<name>_<8 hex digits of its overloads' mangled names>";
  overload i is the IR function "<set>_<i>" with ``overload_set`` = the set.

A set's name (``Function.ir_name``, what calls and kernel identities use)
thus covers all of its overloads. Adding one renames the set: callers that were
translated before are translated again (their callee names are checked at each
build), and every module's cached build is dropped (module.functions_changed).
Definitions are expected at import time or between launches, not concurrently
with launches from other threads.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import numbers
import sys
import typing

import numpy as np

from . import frontend
from . import types as wt
from .errors import CompileError
from .module import functions_changed
from .v1 import ir_pb2


def callee_names(deps) -> tuple:
    """The names the calls of a translated function used (to notice a renamed set)."""
    return tuple(d.ir_name for d in deps)


class _Overload:
    """One definition of a @wp.func: a Python function and its translation."""

    def __init__(self, func):
        self.func = func
        self.declared = frontend.declare(func)  # wp.static() values, evaluated now as in Warp
        self.signature = frontend.signature(func)
        self.generic_params = sum(1 for k in self.signature if k == frontend.ANY)
        self.ir_name = frontend.mangle(func, self.declared)
        self._ir = None
        self._deps = ()
        self._callees = ()
        self._again = False

    def build(self):
        """(ir_pb2.Function named by its mangled name, [Function]) — translated once, again
        per module build when a wp.static() could only be evaluated at translation (as
        Warp does), or when a function it calls got another overload."""
        if self._ir is None or self._again or self._callees != callee_names(self._deps):
            self._ir, deps, self._again = frontend.translate(
                self.func, ir_pb2.FUNCTION_FUNC, self.ir_name, Function, self.declared)
            self._deps = tuple(deps)
            self._callees = callee_names(self._deps)
        return self._ir, self._deps


class Function:
    """A user function (an overload set) callable from kernels and, as plain Python, from Python."""

    def __init__(self, func, _first=None, _others=None):
        first = _first if _first is not None else _Overload(func)
        self.func = func  # the definition this Function was made with
        self.key = func.__name__
        self._top = first.signature
        overloads = dict(_others) if _others else {}
        overloads[first.signature] = first  # a replaced overload keeps its place
        self._overloads: dict[tuple, _Overload] = overloads  # signature -> overload, in definition order
        self._name = None
        self.custom_grads: list = []  # wp.func_grad functions (for the adjoint pass)
        self.custom_replays: list = []  # wp.func_replay functions
        functools.update_wrapper(self, func)

    @property
    def ir_name(self) -> str:
        """The name of the overload set: what calls name."""
        if self._name is None:
            ovs = list(self._overloads.values())
            if len(ovs) == 1:
                self._name = ovs[0].ir_name
            else:
                h = hashlib.sha256("\0".join(o.ir_name for o in ovs).encode()).hexdigest()
                self._name = f"{frontend.c_identifier(self.key)}_{h[:8]}"
        return self._name

    @property
    def overloads(self) -> list:
        """The Python functions of the overloads, in definition order."""
        return [o.func for o in self._overloads.values()]

    def _add(self, overload: _Overload):
        self._overloads[overload.signature] = overload
        self._name = None

    def build(self):
        """([ir_pb2.Function], [Function]): every overload, named for this set (see the
        module docstring), and the functions they call."""
        ovs = list(self._overloads.values())
        if len(ovs) == 1:
            ir, deps = ovs[0].build()
            return [ir], list(deps)
        name = self.ir_name
        irs, deps = [], []
        for i, ov in enumerate(ovs):
            ir, ov_deps = ov.build()
            named = ir_pb2.Function()
            named.CopyFrom(ir)
            named.name = f"{name}_{i}"
            named.overload_set = name
            irs.append(named)
            deps.extend(d for d in ov_deps if d not in deps)
        return irs, deps

    def custom_irs(self) -> list:
        """[(overload IR name, "grad" or "replay", ir_pb2.Function, deps)]: this set's
        wp.func_grad and wp.func_replay functions (custom_grad.py), each for the overload
        whose parameter types its leading parameters have (the last one defined wins)."""
        if not self.custom_grads and not self.custom_replays:
            return []
        from . import custom_grad  # noqa: PLC0415 - needed only for backward passes

        ovs = list(self._overloads.values())
        names = [ovs[0].ir_name] if len(ovs) == 1 else [f"{self.ir_name}_{i}" for i in range(len(ovs))]
        chosen = {}
        for kind, fns in (("grad", self.custom_grads), ("replay", self.custom_replays)):
            for fn in fns:
                sig = frontend.signature(fn)
                for ov, name in zip(ovs, names):
                    n = len(ov.signature)
                    if sig[:n] == ov.signature and (kind == "grad" or len(sig) == n):
                        chosen[(name, kind)] = (ov, fn)
                        break
                else:
                    raise CompileError(f"wp.func_{kind} function '{fn.__name__}': no overload of '{self.key}' "
                                       f"takes the parameter types its first parameters have")
        out = []
        for (name, kind), (ov, fn) in chosen.items():
            ir_name = f"{name}_{kind}"
            if kind == "grad":
                ir, deps = custom_grad.translate_grad(ov.func, fn, ir_name, Function)
            else:
                ir, deps = custom_grad.translate_replay(fn, ir_name, Function)
            out.append((name, kind, ir, deps))
        return out

    def __call__(self, *args, **kwargs):
        # Argument types are checked as a kernel's call would, one overload or several (Warp).
        return self._select(args, kwargs).func(*args, **kwargs)

    def _select(self, args, kwargs) -> _Overload:
        """The overload a call from Python takes, by the types of its arguments (as a kernel's
        call would: exact types; Python float is float32, int int32; an overload without
        generic parameters first, then definition order)."""
        for ov in sorted(self._overloads.values(), key=lambda o: o.generic_params > 0):
            try:
                bound = inspect.signature(ov.func).bind(*args, **kwargs)
            except TypeError:
                continue
            if all(key in (frontend.ANY, "") or key == _value_key(v)
                   for key, v in zip(ov.signature, bound.arguments.values())):
                return ov
        raise RuntimeError(f"Error calling function '{self.key}', no overload found for arguments {args}")

    def __repr__(self):
        n = len(self._overloads)
        more = f" ({n} overloads)" if n > 1 else ""
        return f"<warpd function {self.func.__module__}.{self.func.__qualname__}{more}>"


def _value_key(v) -> str | None:
    """frontend.annotation_key of the type of a Python value; None if it has no Warp type."""
    t = None
    if isinstance(v, (bool, np.bool_)):
        t = wt.bool_
    elif isinstance(v, (np.integer, np.floating)):
        t = wt.scalar_from_numpy(v.dtype)
    elif isinstance(v, numbers.Integral):
        t = wt.int32
    elif isinstance(v, numbers.Real):
        t = wt.float32
    elif isinstance(v, (wt._Scalar, wt.Value, wt.Struct)):
        t = type(v)
    if t is not None:
        tr = wt.to_typeref(t)
    elif getattr(v, "_wp_array_", False) and getattr(v, "dtype", None) is not None:
        inner = wt.to_typeref(v.dtype)
        tr = ir_pb2.TypeRef(array=ir_pb2.ArrayType(dtype=inner, ndim=v.ndim)) if inner is not None else None
    else:
        tr = None
    return tr.SerializeToString(deterministic=True).hex() if tr is not None else None


def define(fn, scope) -> Function:
    """The Function that ``@wp.func`` on fn gives, in a scope (a dict of the names bound
    where fn is defined): a new one, or an existing one with fn added as an overload."""
    overload = _Overload(fn)
    existing = scope.get(fn.__name__) if scope is not None else None
    if not isinstance(existing, Function) or (existing.func.__module__, existing.func.__qualname__) \
            != (fn.__module__, fn.__qualname__):
        return Function(fn, overload)
    if overload.signature == existing._top:
        # Warp: the redefinition becomes the Function the name is bound to; the old one is left as it was.
        return Function(fn, overload, existing._overloads)
    existing._add(overload)
    functools.update_wrapper(existing, fn)
    functions_changed()
    return existing


_P = typing.ParamSpec("_P")
_R = typing.TypeVar("_R")


# Signatures for static type checkers (Pyright/Pylance show the decorated function's own
# signature), as Warp declares them.
@typing.overload
def func(f: typing.Callable[_P, _R], *, name: str | None = None, module=None,
         inline: bool | None = None) -> typing.Callable[_P, _R]: ...


@typing.overload
def func(f: None = None, *, name: str | None = None, module=None, inline: bool | None = None
         ) -> typing.Callable[[typing.Callable[_P, _R]], typing.Callable[_P, _R]]: ...


def func(f=None, *, name=None, module=None, inline=None):
    """Decorator: ``@wp.func``. A name already bound to a @wp.func of the same module and
    qualified name gets another overload (see the module docstring). Warp's keyword
    options (``name``, ``module``, ``inline``) are accepted: functions belong to every
    module whose kernels call them, and inlining is the compiler's choice."""
    frame = sys._getframe(1)
    try:
        scope = frame.f_locals  # where the decorator is written: module, class or function body
    finally:
        del frame

    def wrap(fn):
        return define(fn, scope)

    return wrap(f) if f is not None else wrap


def _custom_decorator(kind):
    def decorator(forward_fn):
        if not isinstance(forward_fn, Function):
            raise TypeError(f"wp.func_{kind} expects a @wp.func, got {type(forward_fn).__name__}")

        def wrapper(fn):
            if not callable(fn):
                raise TypeError(f"wp.func_{kind}(f) decorates a function")
            # Recorded per forward function; the adjoint pass (automatic differentiation,
            # not yet in warpd) is what will call it.
            getattr(forward_fn, f"custom_{kind}s").append(fn)
            return fn

        return wrapper

    return decorator


# @wp.func_grad(f): a custom gradient for f; @wp.func_replay(f): a custom replay of f.
func_grad = _custom_decorator("grad")
func_replay = _custom_decorator("replay")


class NativeSnippet:
    """What ``@wp.func_native(snippet)`` makes: a function whose body is C++/CUDA text.
    A shared daemon never turns a client's text into code, so a kernel that calls one
    fails to translate with an error saying so; defining one is harmless."""

    _wp_native_snippet_ = True

    def __init__(self, fn, snippet, adj_snippet, replay_snippet):
        self.func = fn
        self.key = fn.__name__
        self.snippet, self.adj_snippet, self.replay_snippet = snippet, adj_snippet, replay_snippet
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"'{self.key}' is a wp.func_native snippet; warpd does not run "
                                  f"client-supplied native code")


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """``@wp.func_native(snippet)``: accepted, never compiled (see NativeSnippet)."""

    def wrapper(fn):
        return NativeSnippet(fn, snippet, adj_snippet, replay_snippet)

    return wrapper
