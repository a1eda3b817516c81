"""Measurements written once against the Warp API, run by warpd and by Warp.

Each function takes the package as ``wp`` (warpd or warp), the kernels
module (bench/kernels.py, imported for that package) and the plan (sizes and
repeats from bench/run.py), and returns plain numbers for JSON. Results are
checked where it is cheap, so that a row never reports a kernel that did
not compute.
"""

import numpy as np

from timing import measure, median_s, once_s, paired_median_s

_EXPECT_TOL = 1e-4


def sincos_reference(x: np.ndarray, iters: int) -> np.ndarray:
    v = x.astype(np.float32).copy()
    for _ in range(iters):
        v = np.sin(v) * np.float32(0.5) + np.cos(v) * np.float32(0.25)
    return v


def cold_first_launch(wp, kernel) -> dict:
    """The first launch + synchronize of `kernel` (saxpy's signature) in this
    process (its module translated, compiled and loaded then), in ms; arrays
    made beforehand."""
    x = wp.array(np.ones(1024, dtype=np.float32), dtype=float, device="cpu")
    y = wp.zeros(1024, dtype=float, device="cpu")
    wp.synchronize()

    def first():
        wp.launch(kernel, dim=1024, inputs=[x, y, 2.0], device="cpu")
        wp.synchronize()

    return {"ms": once_s(first) * 1e3}


def _timed(run, repeats: int, native=None, warmup: int = 2) -> dict:
    """{"ms": median of run()}; with a native runner (bench/native.py),
    also "native_ms", the native loop called in turn with run()."""
    if native is None:
        return {"ms": median_s(run, repeats, warmup) * 1e3}
    native_run, native_verify = native
    t, t_native = paired_median_s(run, native_run, repeats, warmup)
    native_verify()
    return {"ms": t * 1e3, "native_ms": t_native * 1e3}


def saxpy(wp, k, n: int, repeats: int, native=None) -> dict:
    xs = np.random.default_rng(1).random(n, dtype=np.float32)
    x = wp.array(xs, dtype=float, device="cpu")
    y = wp.zeros(n, dtype=float, device="cpu")
    calls = 0

    def run():
        nonlocal calls
        wp.launch(k.saxpy, dim=n, inputs=[x, y, 2.0], device="cpu")
        wp.synchronize()
        calls += 1

    result = _timed(run, repeats, native)
    got = y.numpy()
    check(got[[0, n // 2, n - 1]], 2.0 * calls * xs[[0, n // 2, n - 1]], "saxpy", rel=1e-4)
    return result


def vec3(wp, k, n: int, repeats: int, native=None) -> dict:
    rng = np.random.default_rng(2)
    an = rng.random((n, 3), dtype=np.float32)
    bn = rng.random((n, 3), dtype=np.float32)
    a = wp.array(an, dtype=wp.vec3, device="cpu")
    b = wp.array(bn, dtype=wp.vec3, device="cpu")
    c = wp.zeros(n, dtype=float, device="cpu")

    def run():
        wp.launch(k.vec3, dim=n, inputs=[a, b, c], device="cpu")
        wp.synchronize()

    result = _timed(run, repeats, native)
    idx = [0, n // 2, n - 1]
    want = (an[idx] * bn[idx]).sum(axis=1) + np.linalg.norm(an[idx], axis=1)
    check(c.numpy()[idx], want, "vec3", rel=1e-5)
    return result


def sincos(wp, k, n: int, iters: int, repeats: int, native=None) -> dict:
    x0 = np.random.default_rng(3).random(n, dtype=np.float32)
    x = wp.array(x0, dtype=float, device="cpu")

    def run():
        wp.launch(k.sincos, dim=n, inputs=[x, iters], device="cpu")
        wp.synchronize()

    run()  # the checked launch (and the warm-up)
    check(x.numpy()[:64], sincos_reference(x0[:64], iters), "sincos", rel=1e-4)
    return _timed(run, repeats, native, warmup=0)


def queued_launches(wp, k, count: int, repeats: int) -> dict:
    """dim=1 launches per second: `count` launches, then one synchronize."""
    x = wp.zeros(1, dtype=float, device="cpu")
    runs = 0

    def run():
        nonlocal runs
        for _ in range(count):
            wp.launch(k.tiny, dim=1, inputs=[x], device="cpu")
        wp.synchronize()
        runs += 1

    t = median_s(run, repeats)
    check(x.numpy()[:1], [float(count * runs)], "queued launches", rel=0)
    return {"per_s": count / t, "us_per_launch": t / count * 1e6}


def recorded_launches(wp, k, count: int, repeats: int) -> dict:
    """wp.Launch re-launches per second: cmd.launch() `count` times, then one synchronize."""
    x = wp.zeros(1, dtype=float, device="cpu")
    cmd = wp.launch(k.tiny, dim=1, inputs=[x], device="cpu", record_cmd=True)
    runs = 0

    def run():
        nonlocal runs
        for _ in range(count):
            cmd.launch()
        wp.synchronize()
        runs += 1

    t = median_s(run, repeats)
    check(x.numpy()[:1], [float(count * runs)], "recorded launches", rel=0)
    return {"per_s": count / t, "us_per_launch": t / count * 1e6}


def launch_sync(wp, k, repeats: int, echo=None) -> dict:
    """One dim=1 launch + synchronize, in us; with `echo` (a bare round trip
    to the daemon), also "echo_us", the echo timed in turns with it."""
    x = wp.zeros(1, dtype=float, device="cpu")

    def run():
        wp.launch(k.tiny, dim=1, inputs=[x], device="cpu")
        wp.synchronize()

    if echo is None:
        return {"us": median_s(run, repeats, warmup=3) * 1e6}
    t, t_echo = paired_median_s(run, echo, repeats, warmup=3)
    return {"us": t * 1e6, "echo_us": t_echo * 1e6}


def run_kernel_rows(wp, k, plan: dict, r: dict, native=None):
    """The rows both warpd and Warp run: kernels at each size, the sin/cos
    kernel, queued and recorded launch rates. With `native` (bench/native.py's
    Native), each kernel is timed in turn with its native loop (the
    vector-math build for sin/cos)."""
    reps = plan["repeats"]
    for n in plan["sizes"]:
        measure(r, f"saxpy_{n}", lambda: saxpy(wp, k, n, reps, native and native.saxpy_runner(n)))
        measure(r, f"vec3_{n}", lambda: vec3(wp, k, n, reps, native and native.vec3_runner(n)))
    n, iters = plan["sincos_threads"], plan["sincos_iters"]
    measure(r, "sincos", lambda: sincos(wp, k, n, iters, plan["sincos_repeats"],
                                        native and native.sincos_runner(n, iters, scalar=False)))
    measure(r, "queued_launches", lambda: queued_launches(wp, k, plan["launches"], reps))
    measure(r, "recorded_launches", lambda: recorded_launches(wp, k, plan["launches"], reps))


def check(got, want, what: str, rel: float):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if not np.allclose(got, want, rtol=rel, atol=_EXPECT_TOL if rel else 0):
        raise AssertionError(f"{what}: wrong result {got.tolist()}, expected {want.tolist()}")


def autodiff(wp, k, which: str, n: int, repeats: int, iters: int = 32) -> dict:
    """A kernel's forward launch + sync beside its adjoint launch (adjoint=True, the
    output's gradient seeded with ones) + sync, medians in ms and their ratio; and the
    first launch of each (warpd compiles the adjoint then; Warp compiled both at the
    forward's first launch). The adjoint is checked against the closed form."""
    rng = np.random.default_rng(3)
    if which == "elementwise":
        xs = rng.uniform(-1, 1, n).astype(np.float32)
        x = wp.array(xs, dtype=float, device="cpu", requires_grad=True)
        inputs, kernel = [x], k.ad_elementwise
        expected = np.cos(xs) * xs + np.sin(xs) + xs
    elif which == "vec3_mat33":
        vs = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
        ms = rng.uniform(-1, 1, (n, 3, 3)).astype(np.float32)
        x = wp.array(vs, dtype=wp.vec3, device="cpu", requires_grad=True)
        inputs, kernel = [x, wp.array(ms, dtype=wp.mat33, device="cpu", requires_grad=True)], k.ad_vec3_mat33
        a = np.einsum("nij,nj->ni", ms, vs)
        la = np.linalg.norm(a, axis=1, keepdims=True)
        expected = np.einsum("nji,nj->ni", ms, vs) + a + np.einsum("nji,nj->ni", ms, a / la)
    else:
        xs = rng.uniform(-1, 1, n).astype(np.float32)
        x = wp.array(xs, dtype=float, device="cpu", requires_grad=True)
        inputs, kernel = [x, iters], k.ad_loop
        ks = np.arange(1, iters + 1, dtype=np.float64)
        expected = (0.5 * np.cos(np.outer(xs, ks)) * ks).sum(axis=1)
    y = wp.zeros(n, dtype=float, device="cpu", requires_grad=True)
    seed = wp.array(np.ones(n, dtype=np.float32), dtype=float, device="cpu")
    adj_inputs = [x.grad, inputs[1].grad if which == "vec3_mat33" else 0][:len(inputs)]

    def forward():
        wp.launch(kernel, dim=n, inputs=inputs, outputs=[y], device="cpu")
        wp.synchronize()

    def backward():
        wp.launch(kernel, dim=n, inputs=inputs, outputs=[y], adj_inputs=adj_inputs, adj_outputs=[seed],
                  adjoint=True, device="cpu")
        wp.synchronize()

    first_forward = once_s(forward) * 1e3
    x.grad.zero_()
    first_backward = once_s(backward) * 1e3
    check(x.grad.numpy().reshape(expected.shape), expected, f"{which} adjoint", 1e-3)
    fwd = median_s(forward, repeats, 2) * 1e3
    bwd = median_s(backward, repeats, 2) * 1e3
    return {"forward_ms": fwd, "backward_ms": bwd, "ratio": bwd / fwd, "first_forward_ms": first_forward,
            "first_backward_ms": first_backward}


def run_autodiff_rows(wp, k, plan: dict, r: dict):
    n = plan["autodiff_size"]
    for which in ("elementwise", "vec3_mat33", "loop"):
        measure(r, f"autodiff_{which}", lambda: autodiff(wp, k, which, n, plan["repeats"]))
