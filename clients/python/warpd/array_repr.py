"""How a ``wp.array`` shows itself: ``repr`` and, in notebooks, ``_repr_html_``.

Both show the shape, dtype and device and a preview of the values, printed
exactly as NumPy prints ``a.numpy()`` (its default print options: arrays of
more than 1000 elements show the first and last 3 along each axis longer
than 6). The preview reads no more than it shows: an array that is mapped
into this process (local_map.py) or small (at most FULL_BYTES) is read as
``numpy()`` reads it; a larger one is read through views of its corners (the
first and last EDGE indices of each long axis: at most 2**ndim small
downloads), so a remote client's preview of a 1 GB array moves a few hundred
bytes. Reading the values waits for the array's queued work, as ``numpy()``.
"""

from __future__ import annotations

import html
import itertools

import numpy as np

from . import types as wt

# NumPy's defaults (np.get_printoptions()): summarize past THRESHOLD elements,
# showing EDGE items at each end of an axis.
THRESHOLD = 1000
EDGE = 3
# Arrays up to this many bytes are read whole for a preview.
FULL_BYTES = 64 << 10


def preview(a) -> tuple[np.ndarray, bool]:
    """(values, summarized): NumPy values that print like ``a.numpy()``
    with NumPy's default options when printed with threshold 0 if
    `summarized`. Along an axis longer than 2*EDGE of a summarized array the
    values hold the first EDGE, one filler (never printed) and the last EDGE."""
    summarized = a.size > THRESHOLD
    if not summarized or a.capacity <= FULL_BYTES or a._local_view() is not None:
        return a.numpy(), summarized
    np_dtype = wt.numpy_dtype(a.dtype)
    eshape = wt.element_shape(a.dtype)
    long_axes = [n > 2 * EDGE for n in a.shape]
    out_shape = tuple(2 * EDGE + 1 if long else n for n, long in zip(a.shape, long_axes)) + eshape
    out = np.zeros(out_shape, dtype=np_dtype)
    # Each corner: per axis, (where in `a`, where in `out`).
    per_axis = []
    for n, long in zip(a.shape, long_axes):
        if long:
            per_axis.append([(slice(0, EDGE), slice(0, EDGE)), (slice(n - EDGE, n), slice(EDGE + 1, 2 * EDGE + 1))])
        else:
            per_axis.append([(slice(None), slice(None))])
    for corner in itertools.product(*per_axis):
        src = tuple(c[0] for c in corner)
        dst = tuple(c[1] for c in corner)
        out[dst] = a[src].numpy()
    return out, True


def values_text(a, prefix: str = "", separator: str = ", ") -> str:
    """The preview of `a`'s values as NumPy prints them (continuation lines
    indented by len(prefix))."""
    values, summarized = preview(a)
    with np.printoptions(threshold=0 if summarized else THRESHOLD, edgeitems=EDGE):
        return np.array2string(values, separator=separator, prefix=prefix)


def _described(a) -> str:
    return f"shape={tuple(a.shape)}, dtype={wt.type_name(a.dtype)}, device=\"{a.device}\""


def array_repr(a, name: str = "array") -> str:
    """``array([...values...], shape=(...), dtype=..., device="...")``."""
    if a.handle is None:
        return f"{name}(<freed>, {_described(a)})"
    if getattr(a, "_rt", None) is not None and a._rt.closed:
        return f"{name}(<session closed>, {_described(a)})"
    prefix = f"{name}("
    return f"{prefix}{values_text(a, prefix)}, {_described(a)})"


def array_html(a, name: str = "array") -> str:
    """A small HTML block: the shape, dtype and device, then the preview."""
    head = (f"<b>warpd {html.escape(name)}</b> shape <code>{html.escape(str(tuple(a.shape)))}</code>, "
            f"dtype <code>{html.escape(wt.type_name(a.dtype))}</code>, "
            f"device <code>{html.escape(str(a.device))}</code>")
    if a.handle is None or (getattr(a, "_rt", None) is not None and a._rt.closed):
        return f"<div>{head} ({'freed' if a.handle is None else 'session closed'})</div>"
    body = html.escape(values_text(a, separator=" "))
    return f"<div>{head}<pre style=\"margin: 0.3em 0 0 0\">{body}</pre></div>"
