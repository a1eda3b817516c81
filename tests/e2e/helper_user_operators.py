"""Kernels in a module whose globals `add` and `sub` are user functions: Warp 1.19
calls them for + and - (and for += / -= where its rules say so; test_augassign.py)."""

import warpd as wp


@wp.func
def add(x: wp.float32, y: wp.float32) -> wp.float32:
    return wp.sub(x, y)  # deliberately not an addition (and not `-`, which is sub() here)


@wp.func
def sub(x: wp.float32, y: wp.float32) -> wp.float32:
    return wp.mul(x, y)


@wp.kernel(module="unique", enable_backward=False)
def update_slots(values: wp.array(dtype=wp.vec3), mats: wp.array(dtype=wp.mat22), rhs: float):
    values[0].x += rhs  # a component of an array element: add()
    values[0][1] += rhs  # add()
    values[0].z -= rhs  # sub()
    mats[0][1, 0] -= rhs  # sub()
    mats[0][0][1] += rhs  # add()


@wp.kernel(module="unique", enable_backward=False)
def update_locals(out: wp.array(dtype=float), v: wp.vec3, rhs: float):
    a = out[0]
    a += rhs  # a local name: add()
    out[1] = a
    out[2] += rhs  # an array element: an atomic add, never add()
    w = v
    w.x += rhs  # a member of a local: add()
    w[1] -= rhs  # a component of a local vector: the builtin (Warp's sub_inplace)
    w[2] *= rhs  # no user mul: the builtin
    out[3] = w.x
    out[4] = w.y
    out[5] = w.z
    x = wp.vec2d(wp.float64(1.0), wp.float64(2.0))
    x.y += wp.float64(3.0)  # no overload takes float64: the builtin
    out[6] = float(x.y)
