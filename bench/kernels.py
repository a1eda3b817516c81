"""The benchmark kernels, one source for warpd and for Warp.

Both packages are imported as ``wp``; which one is chosen by BENCH_WP
("warpd", the default, or "warp"), set before this file is imported. Each
kernel is a module of its own (module="unique"), so the first launch of one
compiles that kernel alone; that is what the cold-compile row times. The
same math is in bench/native_ref.c.
"""

import importlib
import os

wp = importlib.import_module(os.environ.get("BENCH_WP", "warpd"))


@wp.kernel(module="unique")
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel(module="unique")
def vec3(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), c: wp.array(dtype=float)):
    i = wp.tid()
    c[i] = wp.dot(a[i], b[i]) + wp.length(a[i])


@wp.kernel(module="unique")
def sincos(x: wp.array(dtype=float), iters: int):
    i = wp.tid()
    v = x[i]
    for _k in range(iters):
        v = wp.sin(v) * 0.5 + wp.cos(v) * 0.25
    x[i] = v


@wp.kernel(module="unique")
def xform(t: wp.array(dtype=wp.transform), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = wp.transform_point(t[i], v[i])


@wp.kernel(module="unique")
def tiny(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


# saxpy again, as a module of its own: compiled after another module, with
# the compiler already warm (the second cold-compile figure).
@wp.kernel(module="unique")
def saxpy_again(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


# Autodiff rows (issue 25): each forward kernel beside its adjoint launch.
@wp.kernel(module="unique")
def ad_elementwise(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * v + v * v * 0.5


@wp.kernel(module="unique")
def ad_vec3_mat33(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33), y: wp.array(dtype=float)):
    i = wp.tid()
    a = m[i] * v[i]
    y[i] = wp.dot(a, v[i]) + wp.length(a)


@wp.kernel(module="unique")
def ad_loop(x: wp.array(dtype=float), iters: int, y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    s = float(0.0)
    for k in range(iters):
        s = s + wp.sin(v * float(k + 1)) * 0.5
    y[i] = s
