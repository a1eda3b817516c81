"""A tiny known-good kernel, run after error cases to show the daemon still serves."""

import numpy as np

import warpd as wp


@wp.kernel(module="serving_check")
def _axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def run_check(wp_mod=wp):
    n = 17
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    xa = wp_mod.array(x, dtype=float)
    ya = wp_mod.array(y, dtype=float)
    wp_mod.launch(_axpy, dim=n, inputs=[xa, ya, 1.5])
    np.testing.assert_allclose(ya.numpy(), np.float32(1.5) * x + y, rtol=1e-6)
