"""Kernels made by factories, one per dtype, for the table-driven builtin tests."""

import warpd as wp


def specialize(tag, module=None):
    """Names a kernel made by a factory after its types, so each one is its own kernel."""
    def wrap(fn):
        fn.__name__ = f"{fn.__name__}_{tag}"
        fn.__qualname__ = f"{fn.__qualname__}_{tag}"
        return wp.kernel(fn, module=module)
    return wrap
