"""What a kernel or function was made with, as text: part of its IR name.

Kernels made by a factory share their source and qualified name, but not what
they capture: closure variables (a dtype, a constant, a @wp.func) and the
values of their ``wp.static()`` expressions. Two such kernels must have
different IR names, or one module would hold one of them under both names
(and run the wrong code, silently). ``fingerprint`` writes a value so that
equal plain values (numbers, strings, Warp values and types, functions by IR
name, containers of those) give the same text in every process, which keeps
the daemon's module cache useful; any other object is written with its id,
unique while the kernel (which references it) lives. A @wp.func's IR name is
that of its overload set, which hashes all of its overloads (function.py).
"""

from __future__ import annotations

import hashlib
import types as pytypes
import typing

import numpy as np

from . import types as wt

_MAX_ITEMS = 256  # larger containers and arrays are identified by id
_MAX_DEPTH = 4


def fingerprint(value, depth: int = 0) -> str:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value!r}"
    if isinstance(value, (wt._Scalar, wt.Value)):
        return f"{fingerprint(type(value), depth)}:{value!r}"
    ir_name = getattr(value, "ir_name", None)
    if isinstance(ir_name, str):  # a kernel, or a @wp.func: the name of its overload set covers them all
        return f"fn:{ir_name}"
    if value is typing.Any:  # a class since Python 3.11; its id differs from one process to the next
        return "type:typing.Any"
    if isinstance(value, type):
        try:
            tr = wt.to_typeref(value) if wt.is_value_type(value) else None
        except TypeError:  # a struct whose definition failed: only its uses report it
            tr = None
        if tr is not None:
            return f"type:{tr.SerializeToString(deterministic=True).hex()}"
        return f"type:{value.__module__}.{value.__qualname__}@{id(value):x}"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    if depth < _MAX_DEPTH:
        if isinstance(value, (list, tuple)) and len(value) <= _MAX_ITEMS:
            return f"{type(value).__name__}[" + ",".join(fingerprint(v, depth + 1) for v in value) + "]"
        if isinstance(value, dict) and len(value) <= _MAX_ITEMS:
            items = sorted(f"{fingerprint(k, depth + 1)}={fingerprint(v, depth + 1)}" for k, v in value.items())
            return "dict{" + ",".join(items) + "}"
        if isinstance(value, np.ndarray) and value.size <= _MAX_ITEMS and value.dtype != object:
            digest = hashlib.sha256(value.tobytes()).hexdigest()[:16]
            return f"ndarray:{value.dtype.str}{value.shape}:{digest}"
    return f"{type(value).__module__}.{type(value).__qualname__}@{id(value):x}"
