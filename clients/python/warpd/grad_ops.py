"""The backward steps of Python-scope array operations recorded on a wp.Tape.

As in Warp 1.19, ``wp.copy`` (and ``wp.clone``) and ``fill_`` inside ``with
tape:`` are differentiable: backward() runs, at their place in the tape,
``src.grad += dest.grad`` over the copied window, then consumes the window of
``dest.grad`` (resets it: the copy was the final write there, the rule
kernels' stores follow) unless ``dest`` retains its gradient; a fill
consumes its array's gradient (a constant has none to pass on). Each step is
a small generic kernel launched by the tape, so it runs on the daemon like
the kernels' adjoints.
"""

from __future__ import annotations

from typing import Any

import warpd as wp

from .array import array


@wp.kernel(module="warpd.grad_ops")
def _copy_adjoint_1d(dest_grad: wp.array(dtype=Any), src_grad: wp.array(dtype=Any), consume: int):
    i = wp.tid()
    g = dest_grad[i]
    if src_grad:
        src_grad[i] = src_grad[i] + g
    if consume != 0:
        dest_grad[i] = g - g


@wp.kernel(module="warpd.grad_ops")
def _copy_adjoint_2d(dest_grad: wp.array2d(dtype=Any), src_grad: wp.array2d(dtype=Any), consume: int):
    i, j = wp.tid()
    g = dest_grad[i, j]
    if src_grad:
        src_grad[i, j] = src_grad[i, j] + g
    if consume != 0:
        dest_grad[i, j] = g - g


@wp.kernel(module="warpd.grad_ops")
def _copy_adjoint_3d(dest_grad: wp.array3d(dtype=Any), src_grad: wp.array3d(dtype=Any), consume: int):
    i, j, k = wp.tid()
    g = dest_grad[i, j, k]
    if src_grad:
        src_grad[i, j, k] = src_grad[i, j, k] + g
    if consume != 0:
        dest_grad[i, j, k] = g - g


@wp.kernel(module="warpd.grad_ops")
def _copy_adjoint_4d(dest_grad: wp.array4d(dtype=Any), src_grad: wp.array4d(dtype=Any), consume: int):
    i, j, k, l = wp.tid()
    g = dest_grad[i, j, k, l]
    if src_grad:
        src_grad[i, j, k, l] = src_grad[i, j, k, l] + g
    if consume != 0:
        dest_grad[i, j, k, l] = g - g


_COPY_ADJOINTS = {1: _copy_adjoint_1d, 2: _copy_adjoint_2d, 3: _copy_adjoint_3d, 4: _copy_adjoint_4d}


def _differentiable(dtype) -> bool:
    """Float elements (scalars, vectors, matrices, ...): structs and integers carry no gradient here."""
    return getattr(dtype, "_wp_scalar_type_", None) in (wp.float16, wp.bfloat16, wp.float32, wp.float64)


def record_copy(tape, dest: array, src: array):
    """Records the adjoint of copying src into dest (equal shapes: the windows copied)."""
    if dest.grad is None or not _differentiable(dest.dtype) or dest.dtype is not src.dtype:
        return

    def backward():
        dest_grad = dest.grad
        if dest_grad is None:
            return
        src_grad = src.grad if src.grad is not None and src.grad.shape == dest_grad.shape else None
        wp.launch(_COPY_ADJOINTS[dest.ndim], dim=dest.shape, inputs=[dest_grad, src_grad, 0 if dest.retain_grad else 1],
                  device=dest.device, record_tape=False)

    tape.record_func(backward, arrays=[dest, src])


def record_fill(tape, a: array):
    """Records the adjoint of filling `a` with a constant: its gradient is consumed."""
    if a.grad is None or a.retain_grad or not _differentiable(a.dtype):
        return

    def backward():
        if a.grad is not None:
            a.grad.zero_()

    tape.record_func(backward, arrays=[a])
