"""``wp.matmul``: d = alpha * (a @ b) + beta * c, computed by the daemon's BLAS.

    wp.matmul(a, b, c, d, alpha=1.0, beta=0.0)     # 2-D arrays
    wp.batched_matmul(a, b, c, d)                    # 3-D: one product per batch item
    d = a @ b                                        # a new array

This is the API of Warp 1.x (``warp.matmul``, ``batched_matmul``,
``adj_matmul``, ``adj_batched_matmul``; Warp 1.19 has dropped it for tile
programming). Each call queues one ``Matmul`` command on the device stream
(ordered with launches and copies, and it may be captured in a graph): the
daemon runs OpenBLAS's sgemm/dgemm over the operands where they lie (any
strides; float16 is computed in float32), on the device's worker threads
(runtime/exec/matmul.h). ``d`` may be ``c`` itself.

On a ``wp.Tape`` the call records its adjoint, as in Warp: backward() runs,
on the daemon, ``a.grad += alpha * d.grad @ b^T`` and ``b.grad += alpha *
a^T @ d.grad`` (two more Matmul commands over transposed views) and ``c.grad
+= beta * d.grad`` (a small kernel); when ``d`` is ``c`` (in place), ``d.grad``
becomes ``beta * d.grad`` instead, the gradient that flows to the old ``c``.
"""

from __future__ import annotations

from typing import Any

import warpd as wp

from . import types as wt
from .array import array
from .errors import InvalidArgumentError

_FLOATS = (wt.float16, wt.float32, wt.float64)


_SCALED_ADD: dict = {}


def _scaled_add(ndim: int):
    """The kernel y <- y + s * x (accumulate) or y <- s * x over `ndim`-D arrays, made on first use."""
    k = _SCALED_ADD.get(ndim)
    if k is not None:
        return k
    if ndim == 2:
        def scaled_add_2d(x: wp.array2d(dtype=Any), y: wp.array2d(dtype=Any), s: Any, accumulate: int):
            i, j = wp.tid()
            if accumulate != 0:
                y[i, j] = y[i, j] + s * x[i, j]
            else:
                y[i, j] = s * x[i, j]
        k = wp.kernel(scaled_add_2d, module="warpd.matmul")
    else:
        def scaled_add_3d(x: wp.array3d(dtype=Any), y: wp.array3d(dtype=Any), s: Any, accumulate: int):
            i, j, l = wp.tid()
            if accumulate != 0:
                y[i, j, l] = y[i, j, l] + s * x[i, j, l]
            else:
                y[i, j, l] = s * x[i, j, l]
        k = wp.kernel(scaled_add_3d, module="warpd.matmul")
    _SCALED_ADD[ndim] = k
    return k


def _same_elements(x: array, y: array) -> bool:
    """The same memory in the same layout (an in-place d = ... + beta * d)."""
    if x is y:
        return True
    root_x = x._root if x._root is not None else x
    root_y = y._root if y._root is not None else y
    return root_x is root_y and x._offset == y._offset and x.shape == y.shape and x.strides == y.strides


def _check(name: str, ndim: int, arrays: dict, device):
    """Warp's checks of matmul's operands (None entries are skipped); returns the device."""
    present = {k: v for k, v in arrays.items() if v is not None}
    for k, v in present.items():
        if not isinstance(v, array):
            raise TypeError(f"wp.{name}: {k} must be a wp.array, got {type(v).__name__}")
    devices = {v.device for v in present.values()}
    if device is not None:
        devices.add(wp.get_device(device))
    if len(devices) != 1:
        raise InvalidArgumentError(f"wp.{name}: matrices {', '.join(present)} must all be on the same device")
    first = next(iter(present.values()))
    if any(not wt.types_equal(v.dtype, first.dtype) for v in present.values()):
        raise InvalidArgumentError(f"wp.{name} currently only supports operation between {{"
                                   f"{', '.join(present)}}} matrices of the same type")
    if wt.scalar_type(first.dtype) not in _FLOATS or not wt.is_scalar_type(first.dtype):
        raise InvalidArgumentError(f"wp.{name}: unsupported dtype {wt.type_repr(first.dtype)} (float16, float32 "
                                   f"and float64 arrays only)")
    for k, v in present.items():
        if v.ndim != ndim:
            raise InvalidArgumentError(f"wp.{name}: {k} has {v.ndim} dimensions, expected {ndim}")
    return next(iter(devices))


def _queue(a, b, c, d, alpha, beta):
    """Appends one Matmul command to d's stream."""
    with d._rt.lock:
        keep = (a, b, d) if c is None else (a, b, c, d)
        cmd = d._stream.add(keep=keep)
        m = cmd.matmul
        m.a, m.b, m.d = a.handle, b.handle, d.handle
        m.c = 0 if c is None else c.handle
        m.alpha, m.beta = float(alpha), float(beta)


def _matmul(name, ndim, a, b, c, d, alpha, beta, device):
    _check(name, ndim, {"A": a, "B": b, "C": c, "D": d}, device)
    lead = a.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.shape != (*lead, k, n) or d.shape != (*lead, m, n) or (c is not None and c.shape != (*lead, m, n)):
        raise InvalidArgumentError(f"Invalid shapes for matrices: A = {a.shape} B = {b.shape} "
                                   f"C = {None if c is None else c.shape} D = {d.shape}")
    for v in (a, b, c, d):
        if v is not None:
            v._check_live()
    _queue(a, b, c, d, alpha, beta)
    from . import tape as _tape  # noqa: PLC0415 - tape imports array, which imports this lazily

    tape = _tape._current
    if tape is not None:
        def backward():
            _adjoint(name, ndim, a, b, c, a.grad, b.grad, None if c is None else c.grad, d.grad, alpha, beta,
                     in_place=c is not None and _same_elements(c, d))

        backward.__name__ = name
        tape.record_func(backward, arrays=[v for v in (a, b, c, d) if v is not None])


def _transpose(x: array, ndim: int) -> array:
    return x.transpose() if ndim == 2 else x.transpose((0, 2, 1))


def _adjoint(name, ndim, a, b, c, adj_a, adj_b, adj_c, adj_d, alpha, beta, in_place=False):
    """adj_a += alpha * adj_d @ b^T, adj_b += alpha * a^T @ adj_d, adj_c += beta * adj_d (all on the daemon);
    in place (c is d, so adj_c is adj_d): adj_d <- beta * adj_d, after the others used it."""
    if adj_d is None:
        return
    if adj_a is not None:
        _matmul(f"adj_{name}", ndim, adj_d, _transpose(b, ndim), adj_a, adj_a, alpha, 1.0, None)
    if adj_b is not None:
        _matmul(f"adj_{name}", ndim, _transpose(a, ndim), adj_d, adj_b, adj_b, alpha, 1.0, None)
    if adj_c is not None and adj_d.size:
        wp.launch(_scaled_add(ndim), dim=adj_d.shape, inputs=[adj_d, adj_c, adj_d.dtype(beta), 0 if in_place else 1],
                  device=adj_d.device, record_tape=False)


def matmul(a: array, b: array, c: array, d: array, alpha: float = 1.0, beta: float = 0.0,
           allow_tf32x3_arith: bool = False, device=None):
    """Computes d = alpha * (a @ b) + beta * c (Warp 1.x's GEMM) on the daemon.

    Args:
        a: (M, K) array; b: (K, N); c and d: (M, N); one dtype, float16, float32 or float64.
            c may be None (then d = alpha * (a @ b)); d may be c itself.
        alpha, beta: the GEMM's factors.
        allow_tf32x3_arith: accepted for Warp compatibility (CUTLASS only; no effect here).
        device: the device of the arrays (default: theirs).
    """
    del allow_tf32x3_arith
    _matmul("matmul", 2, a, b, c, d, alpha, beta, device)


def batched_matmul(a: array, b: array, c: array, d: array, alpha: float = 1.0, beta: float = 0.0,
                   allow_tf32x3_arith: bool = False, device=None):
    """matmul over 3-D arrays: d[i] = alpha * (a[i] @ b[i]) + beta * c[i] for every batch item i."""
    del allow_tf32x3_arith
    _matmul("batched_matmul", 3, a, b, c, d, alpha, beta, device)


def adj_matmul(a: array, b: array, c: array, adj_a: array, adj_b: array, adj_c: array, adj_d: array,
               alpha: float = 1.0, beta: float = 0.0, allow_tf32x3_arith: bool = False, device=None):
    """The adjoint of matmul: adj_a += alpha * adj_d @ b^T, adj_b += alpha * a^T @ adj_d,
    adj_c += beta * adj_d (accumulated into the given arrays, as Warp's Tape does)."""
    del allow_tf32x3_arith
    _check("adj_matmul", 2, {"A": a, "B": b, "C": c, "adj_A": adj_a, "adj_B": adj_b, "adj_C": adj_c,
                             "adj_D": adj_d}, device)
    _adjoint("matmul", 2, a, b, c, adj_a, adj_b, adj_c, adj_d, alpha, beta)


def adj_batched_matmul(a: array, b: array, c: array, adj_a: array, adj_b: array, adj_c: array, adj_d: array,
                       alpha: float = 1.0, beta: float = 0.0, allow_tf32x3_arith: bool = False, device=None):
    """The adjoint of batched_matmul (see adj_matmul)."""
    del allow_tf32x3_arith
    _check("adj_batched_matmul", 3, {"A": a, "B": b, "C": c, "adj_A": adj_a, "adj_B": adj_b, "adj_C": adj_c,
                                     "adj_D": adj_d}, device)
    _adjoint("batched_matmul", 3, a, b, c, adj_a, adj_b, adj_c, adj_d, alpha, beta)


def is_matrix(x) -> bool:
    """A 2-D array of float scalars: ``@`` multiplies it as a matrix."""
    return isinstance(x, array) and x.ndim == 2 and wt.is_scalar_type(x.dtype) and x.dtype in _FLOATS


def matmul_operator(a: array, b: array) -> array:
    """``a @ b`` of two 2-D float arrays: a new (M, N) array (with a gradient when an operand has one)."""
    if a.shape[1] != b.shape[0]:
        raise InvalidArgumentError(f"Invalid shapes for matrices: A = {a.shape} B = {b.shape}")
    d = wp.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device,
                 requires_grad=a.requires_grad or b.requires_grad)
    _matmul("matmul", 2, a, b, None, d, 1.0, 0.0, None)
    return d
