"""``wp.autograd``: Jacobians of kernels and functions, by the adjoints and by finite
differences, and ``gradcheck`` comparing the two (Warp 1.19's helpers).

``function`` is a ``@wp.kernel`` (launched with ``dim``, ``inputs`` and ``outputs``;
inputs precede outputs in its parameters) or a Python function of ``inputs`` that
launches kernels and returns an array or a list of arrays. Only arrays with
``requires_grad=True`` take part. A Jacobian is a 2-D array of shape (number of
scalars of the output, number of elements of the input) of the input's dtype: row
i is the gradient of the output's i-th scalar with respect to the input, as one
backward pass with that scalar's gradient set to 1 computes it (the adjoints run
on the daemon); ``jacobian_fd`` evaluates the function forward with each input
scalar moved by +-eps (central differences). Keys are (input index, output index).
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np

from . import types as wt
from .array import array
from .kernel import Kernel
from .tape import Tape

__all__ = ["gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd", "zero_grads"]


def zero_grads(arrays: Sequence) -> None:
    """Zeroes the gradients of the arrays among `arrays`."""
    for a in arrays:
        if isinstance(a, array) and a.grad is not None:
            a.grad.zero_()


def _scalars(a: array) -> np.ndarray:
    return np.asarray(a.numpy(), dtype=np.float64).reshape(-1)


def _labels(function, inputs, outputs):
    if isinstance(function, Kernel):
        names = list(function.func.__code__.co_varnames[:function.func.__code__.co_argcount])
        return names[:len(inputs)], names[len(inputs):len(inputs) + len(outputs)]
    return [f"input_{i}" for i in range(len(inputs))], [f"output_{j}" for j in range(len(outputs))]


def _mask(mask, in_labels, out_labels):
    if not mask:
        return None
    out = set()
    for i, o in mask:
        ii = i if isinstance(i, int) else in_labels.index(i)
        oo = o if isinstance(o, int) else out_labels.index(o)
        out.add((ii, oo))
    return out


def _pairs(inputs, outputs, mask):
    for i, o in itertools.product(range(len(inputs)), range(len(outputs))):
        if mask is not None and (i, o) not in mask:
            continue
        a, b = inputs[i], outputs[o]
        if isinstance(a, array) and a.requires_grad and isinstance(b, array) and b.requires_grad:
            yield i, o


def _snapshot(inputs):
    return [a.numpy().copy() if isinstance(a, array) else None for a in inputs]


def _restore(inputs, snapshot):
    for a, values in zip(inputs, snapshot):
        if values is not None:
            a.assign(array(values, dtype=a.dtype, device=a.device))


def _evaluate(function, dim, inputs, outputs, device):
    """Runs the function forward once; the list of output arrays."""
    if isinstance(function, Kernel):
        from .launch import launch  # noqa: PLC0415

        for o in outputs:
            if isinstance(o, array):
                o.zero_()
        launch(function, dim, inputs=inputs, outputs=outputs, device=device, record_tape=False)
        return list(outputs)
    result = function(*inputs)
    return [result] if isinstance(result, array) else list(result)


def _as_jacobian(values: np.ndarray, a: array) -> array:
    """A (rows, a.size) array of a's dtype from float64 values of shape (rows, a.size * scalars)."""
    rows = values.shape[0]
    scalar = wt.numpy_dtype(a.dtype)
    shaped = values.astype(scalar).reshape((rows, a.size) + tuple(wt.element_shape(a.dtype)))
    return array(shaped, dtype=a.dtype, device=a.device)


def jacobian(function: Kernel | Callable, dim=None, inputs: Sequence | None = None,
             outputs: Sequence | None = None, input_output_mask=None, device=None, max_blocks=0,
             block_dim=None, max_outputs_per_var=-1, plot_jacobians=False, metadata=None,
             restore_inputs=True) -> dict:
    """The Jacobians by backward passes, {(input index, output index): 2-D array}."""
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    inputs = list(inputs)
    tape = Tape()
    snapshot = None
    if isinstance(function, Kernel):
        if function.options.get("enable_backward") is False:
            raise ValueError("Kernel must have backward pass enabled to compute Jacobians")
        if not outputs:
            raise ValueError("A list of output arguments must be provided to compute kernel Jacobians")
        outputs = list(outputs)
        tape.record_launch(function, dim, inputs, outputs, device)
    else:
        snapshot = _snapshot(inputs) if restore_inputs else None
        with tape:
            outputs = _evaluate(function, dim, inputs, outputs, device)
    in_labels, out_labels = _labels(function, inputs, outputs)
    mask = _mask(input_output_mask, in_labels, out_labels)
    jacobians = {}
    try:
        zero_grads(inputs)
        zero_grads(outputs)
        for i, o in _pairs(inputs, outputs, mask):
            x, y = inputs[i], outputs[o]
            n_out = y.size * int(np.prod(wt.element_shape(y.dtype), dtype=np.int64))
            rows = n_out if max_outputs_per_var <= 0 else min(n_out, max_outputs_per_var)
            values = np.full((n_out, _scalars(x).size), np.nan)
            seed = np.zeros(n_out)
            for r in range(rows):
                seed[:] = 0.0
                seed[r] = 1.0
                shaped = seed.astype(wt.numpy_dtype(y.dtype)).reshape(y.shape + tuple(wt.element_shape(y.dtype)))
                y.grad.assign(array(shaped, dtype=y.dtype, device=y.device))
                tape.backward()
                values[r] = _scalars(x.grad)
                zero_grads(inputs)
                zero_grads(outputs)
            jacobians[i, o] = _as_jacobian(values, x)
    finally:
        if snapshot is not None:
            _restore(inputs, snapshot)
    return jacobians


def jacobian_fd(function: Kernel | Callable, dim=None, inputs: Sequence | None = None,
                outputs: Sequence | None = None, input_output_mask=None, device=None, max_blocks=0,
                block_dim=None, max_inputs_per_var=-1, eps=1e-4, plot_jacobians=False, metadata=None,
                restore_inputs=True) -> dict:
    """The Jacobians by central finite differences, {(input index, output index): 2-D array}."""
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    inputs = list(inputs)
    if isinstance(function, Kernel) and not outputs:
        raise ValueError("A list of output arguments must be provided to compute kernel Jacobians")
    snapshot = _snapshot(inputs)
    base = _evaluate(function, dim, inputs, list(outputs or ()), device)
    in_labels, out_labels = _labels(function, inputs, base)
    mask = _mask(input_output_mask, in_labels, out_labels)
    pairs = list(_pairs(inputs, base, mask))
    jacobians = {}
    try:
        for i in sorted({i for i, _ in pairs}):
            x = inputs[i]
            flat = snapshot[i].astype(np.float64).reshape(-1)
            cols = flat.size if max_inputs_per_var <= 0 else min(flat.size, max_inputs_per_var)
            outs = [o for ii, o in pairs if ii == i]
            values = {o: np.full((_scalars(base[o]).size, flat.size), np.nan) for o in outs}
            for c in range(cols):
                sides = []
                for step in (eps, -eps):
                    moved = flat.copy()
                    moved[c] += step
                    x.assign(array(moved.astype(snapshot[i].dtype).reshape(snapshot[i].shape), dtype=x.dtype,
                                   device=x.device))
                    ys = _evaluate(function, dim, inputs, list(outputs or ()), device)
                    sides.append([_scalars(ys[o]) for o in outs])
                for k, o in enumerate(outs):
                    values[o][:, c] = (sides[0][k] - sides[1][k]) / (2 * eps)
                _restore([x], [snapshot[i]])
            for o in outs:
                jacobians[i, o] = _as_jacobian(values[o], x)
    finally:
        if restore_inputs or isinstance(function, Kernel):
            _restore(inputs, snapshot)
            if isinstance(function, Kernel):
                _evaluate(function, dim, inputs, list(outputs), device)
    return jacobians


def _compare(jacs_ad, jacs_fd, atol, rtol, show_summary, raise_exception, what):
    ok = True
    lines = []
    for key in sorted(jacs_fd):
        ad = jacs_ad.get(key)
        fd = np.asarray(jacs_fd[key].numpy(), dtype=np.float64)
        ad = np.asarray(ad.numpy(), dtype=np.float64) if ad is not None else np.full_like(fd, np.nan)
        rows = ~np.isnan(fd).all(axis=tuple(range(1, fd.ndim)))
        fd, ad = fd[rows], ad[rows]
        good = not np.isnan(ad).any() and bool(np.all(np.abs(ad - fd) <= atol + rtol * np.abs(fd)))
        err = float(np.max(np.abs(ad - fd))) if ad.size else 0.0
        lines.append(f"  input {key[0]} -> output {key[1]}: max abs error {err:.3g} {'pass' if good else 'FAIL'}")
        ok = ok and good
    if show_summary:
        print(f"{what}: {'passed' if ok else 'FAILED'}")
        print("\n".join(lines))
    if not ok and raise_exception:
        raise ValueError(f"{what} failed:\n" + "\n".join(lines))
    return ok


def gradcheck(function: Kernel | Callable, dim=None, inputs: Sequence | None = None,
              outputs: Sequence | None = None, *, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True,
              input_output_mask=None, device=None, max_blocks=0, block_dim=None, max_inputs_per_var=-1,
              max_outputs_per_var=-1, plot_relative_error=False, plot_absolute_error=False,
              show_summary=True, restore_inputs=True) -> bool:
    """Whether the adjoints' Jacobians match finite differences: |ad - fd| <= atol + rtol |fd|
    everywhere and no NaN (ValueError when not, with raise_exception)."""
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    jacs_ad = jacobian(function, dim, inputs, outputs, input_output_mask, device,
                       max_outputs_per_var=max_outputs_per_var, restore_inputs=restore_inputs)
    jacs_fd = jacobian_fd(function, dim, inputs, outputs, input_output_mask, device,
                          max_inputs_per_var=max_inputs_per_var, eps=eps, restore_inputs=restore_inputs)
    return _compare(jacs_ad, jacs_fd, atol, rtol, show_summary, raise_exception, "gradient check")


def gradcheck_tape(tape: Tape, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True, input_output_masks=None,
                   blacklist_kernels=None, whitelist_kernels=None, max_inputs_per_var=-1,
                   max_outputs_per_var=-1, plot_relative_error=False, plot_absolute_error=False,
                   show_summary=True, reverse_launches=False, skip_to_launch_index=0) -> bool:
    """gradcheck of every kernel launch the tape recorded."""
    ok = True
    launches = [entry for entry in tape.launches if not callable(entry)]
    if reverse_launches:
        launches = launches[::-1]
    for entry in launches[skip_to_launch_index:]:
        kernel, dim, _max_blocks, inputs, outputs, device = entry[:6]
        if whitelist_kernels and kernel.key not in whitelist_kernels:
            continue
        if blacklist_kernels and kernel.key in blacklist_kernels:
            continue
        mask = (input_output_masks or {}).get(kernel.key)
        ok = gradcheck(kernel, dim, inputs, outputs, eps=eps, atol=atol, rtol=rtol,
                       raise_exception=raise_exception, input_output_mask=mask, device=device,
                       max_inputs_per_var=max_inputs_per_var, max_outputs_per_var=max_outputs_per_var,
                       show_summary=show_summary) and ok
    return ok
