"""Elementwise arithmetic on arrays in Python scope, as Warp 1.19's arrays have it:
``a + b``, ``a - s``, ``s * a``, ``a % b``, ``a ** s``, ``-a``, ``a @ b`` ...

Each operator launches a kernel over the elements of contiguous one-dimensional views
of its operands; the result is a new array of the operands' shape on their device. A
kernel is made once per operator, operand forms and types, each in a module of its own
(so a new type compiles one small module, never the others again). An operand is an array or a
scalar/value of the array's dtype (Python numbers are float32/int32, as in kernels).
Types follow the kernels' rules: no implicit conversion, so a mismatch is the
kernel's compile error naming both types.
"""

from __future__ import annotations

from typing import Any

import warpd as wp

from .array import array


def _elementwise(op, operands: str, types: tuple):
    """A kernel applying the builtin `op` to array elements ('a') and values ('s') of `types`
    (the parameters' annotations, the output last)."""
    if operands == "aa":
        def k(a: wp.array(dtype=Any), b: wp.array(dtype=Any), out: wp.array(dtype=Any)):
            i = wp.tid()
            out[i] = op(a[i], b[i])
    elif operands == "as":
        def k(a: wp.array(dtype=Any), b: Any, out: wp.array(dtype=Any)):
            i = wp.tid()
            out[i] = op(a[i], b)
    elif operands == "sa":
        def k(a: Any, b: wp.array(dtype=Any), out: wp.array(dtype=Any)):
            i = wp.tid()
            out[i] = op(a, b[i])
    else:  # "a": unary
        def k(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
            i = wp.tid()
            out[i] = op(a[i])
    name = f"array_{op.__name__}_{operands}"
    k.__name__ = k.__qualname__ = name
    params = k.__code__.co_varnames[:k.__code__.co_argcount]
    k.__annotations__ = dict(zip(params, types))
    module = f"warpd.array_ops.{name}_{len(_KERNELS)}"
    return wp.kernel(k, name=name, module=module)


_KERNELS: dict = {}


def _kernel(name: str, operands: str, args: list):
    """The kernel for `name` over `args` (inputs then the output), made on first use."""
    from . import frontend
    from .kernel import _argument_type

    types = []
    for v in args:
        t = _argument_type(v)
        if t is None:
            raise TypeError(f"wp.array {name}: cannot use a {type(v).__name__} as an operand")
        types.append(t)
    key = (name, operands, tuple(frontend.annotation_key(None, t) for t in types))
    k = _KERNELS.get(key)
    if k is None:
        k = _KERNELS[key] = _elementwise(getattr(wp, name), operands, tuple(types))
    return k


def _flat(a: array) -> array:
    return (a if a.is_contiguous else a.contiguous()).flatten()


def binary(name: str, left, right):
    """left <op> right with at least one array operand; NotImplemented for other operands."""
    la, ra = isinstance(left, array), isinstance(right, array)
    if not (la or ra):
        return NotImplemented
    for v in (left, right):
        if not isinstance(v, array) and not wt_value(v):
            return NotImplemented
    shaped = left if la else right
    if la and ra and left.shape != right.shape:
        raise ValueError(f"array shapes {left.shape} and {right.shape} differ (Warp's array operators do "
                         f"not broadcast)")
    out = wp.empty(shaped.shape, dtype=shaped.dtype, device=shaped.device)
    if out.size == 0:
        return out
    kind = ("a" if la else "s") + ("a" if ra else "s")
    args = [_flat(v) if isinstance(v, array) else v for v in (left, right)] + [out.flatten()]
    wp.launch(_kernel(name, kind, args), dim=out.size, inputs=args, device=shaped.device)
    return out


def unary(name: str, a: array) -> array:
    out = wp.empty(a.shape, dtype=a.dtype, device=a.device)
    if out.size:
        args = [_flat(a), out.flatten()]
        wp.launch(_kernel(name, "a", args), dim=out.size, inputs=args, device=a.device)
    return out


def wt_value(v) -> bool:
    """A scalar or value a kernel can take as an argument."""
    import numbers

    import numpy as np

    from . import types as wt
    return isinstance(v, (numbers.Number, np.number, np.bool_, wt.Value)) or wt.is_scalar_type(type(v))
