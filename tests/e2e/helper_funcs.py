"""User functions in another Python module, for cross-module dependency tests."""

import warpd as wp


@wp.func
def helper_inner(x: float) -> float:
    return x + 1.0


@wp.func
def helper_outer(x: float):
    return helper_inner(x) * 2.0
