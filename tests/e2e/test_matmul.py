"""wp.matmul (Warp 1.x's GEMM, run by the daemon's BLAS): forward against NumPy on every
operand layout, A @ B, batches, the Tape's backward against NumPy's closed form and central
finite differences in float64, graph capture, and bad operands refused by the client and by
the daemon (which keeps serving)."""

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd.v1 import runtime_pb2

NP = {wp.float16: np.float16, wp.float32: np.float32, wp.float64: np.float64}
TOL = {wp.float16: dict(rtol=2e-3, atol=2e-2), wp.float32: dict(rtol=1e-5, atol=1e-5),
       wp.float64: dict(rtol=1e-12, atol=1e-12)}


def _laid_out(wp, values, dtype, layout):
    """A wp array holding `values` (2-D) as a plain array, a transposed view, a column slice
    of a wider array, or every other column of a wider array (not addressable by the BLAS)."""
    rows, cols = values.shape
    npt = NP[dtype]
    if layout == "row":
        return wp.array(values.astype(npt), dtype=dtype)
    if layout == "col":
        return wp.array(np.ascontiguousarray(values.T).astype(npt), dtype=dtype).transpose()
    if layout == "padded":
        wide = np.zeros((rows, cols + 3), dtype=npt)
        wide[:, :cols] = values
        return wp.array(wide, dtype=dtype)[:, :cols]
    wide = np.zeros((rows, 2 * cols), dtype=npt)
    wide[:, ::2] = values
    return wp.array(wide, dtype=dtype)[:, ::2]


@pytest.mark.parametrize("dtype", [wp.float32, wp.float64, wp.float16], ids=lambda t: t.__name__)
def test_forward_matches_numpy(wp, dtype):
    rng = np.random.default_rng(7)
    shapes = [(1, 1, 1), (1, 9, 6), (6, 9, 1), (1, 5, 1), (7, 1, 8), (5, 3, 4), (33, 17, 65)]
    layouts = ["row", "col", "padded", "strided"]
    for i, (m, k, n) in enumerate(shapes):
        for alpha, beta in ((1.0, 0.0), (-0.5, 1.5)):
            la, lb, lc, ld = (layouts[(i + j) % 4] for j in range(4))
            av = rng.uniform(-1, 1, (m, k)).astype(NP[dtype])
            bv = rng.uniform(-1, 1, (k, n)).astype(NP[dtype])
            cv = rng.uniform(-1, 1, (m, n)).astype(NP[dtype])
            a, b, c = (_laid_out(wp, v, dtype, l) for v, l in ((av, la), (bv, lb), (cv, lc)))
            d = _laid_out(wp, np.full((m, n), np.nan), dtype, ld)
            wp.matmul(a, b, c, d, alpha=alpha, beta=beta)
            want = alpha * (av.astype(np.float64) @ bv.astype(np.float64)) + beta * cv.astype(np.float64)
            got = d.numpy()
            assert got.dtype == NP[dtype]
            np.testing.assert_allclose(got.astype(np.float64), want, **TOL[dtype],
                                       err_msg=f"{m}x{k}x{n} {la} {lb} {lc} {ld} alpha={alpha} beta={beta}")


def test_in_place_and_overlapping_output(wp):
    rng = np.random.default_rng(3)
    av, bv, cv = (rng.standard_normal((4, 4)) for _ in range(3))
    a, b, c = (wp.array(v, dtype=wp.float64) for v in (av, bv, cv))
    wp.matmul(a, b, c, c, alpha=2.0, beta=0.5)  # d is c
    np.testing.assert_allclose(c.numpy(), 2.0 * av @ bv + 0.5 * cv, rtol=1e-12)
    wp.matmul(a, b, None, a)  # d is a: a's old values are read first
    np.testing.assert_allclose(a.numpy(), av @ bv, rtol=1e-12)
    wp.matmul(b.transpose(), b, None, b)  # d is b, read through another layout too
    np.testing.assert_allclose(b.numpy(), bv.T @ bv, rtol=1e-12)


def test_operator_and_batches(wp):
    rng = np.random.default_rng(11)
    av, bv = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 7)).astype(np.float32)
    d = wp.array(av) @ wp.array(bv)
    assert d.shape == (5, 7) and d.dtype is wp.float32
    np.testing.assert_allclose(d.numpy(), av @ bv, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Invalid shapes"):
        _ = wp.array(av) @ wp.array(av)
    # Arrays of matrices keep their elementwise product.
    m = wp.array(np.ones((2, 2, 2), dtype=np.float32), dtype=wp.mat22)
    np.testing.assert_allclose((m @ m).numpy(), np.full((2, 2, 2), 2.0))

    av, bv, cv = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5, 2)), rng.standard_normal((4, 3, 2))
    a, b, c = (wp.array(v, dtype=wp.float64) for v in (av, bv, cv))
    d = wp.zeros((4, 3, 2), dtype=wp.float64)
    wp.batched_matmul(a, b.transpose((0, 2, 1)).transpose((0, 2, 1)), c, d, alpha=0.5, beta=-1.0)
    np.testing.assert_allclose(d.numpy(), 0.5 * av @ bv - cv, rtol=1e-12)


@wp.kernel(module="test_matmul_loss")
def weighted_sum(d: wp.array2d(dtype=wp.float64), w: wp.array2d(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, w[i, j] * d[i, j])


def _loss(wp, av, bv, cv, wv, alpha, beta):
    a, b, c = (wp.array(v, dtype=wp.float64) for v in (av, bv, cv))
    d = wp.zeros(wv.shape, dtype=wp.float64)
    loss = wp.zeros(1, dtype=wp.float64)
    wp.matmul(a, b, c, d, alpha, beta)
    wp.launch(weighted_sum, dim=wv.shape, inputs=[d, wp.array(wv, dtype=wp.float64), loss])
    return loss.numpy()[0]


@pytest.mark.parametrize("m, k, n", [(4, 3, 5), (1, 6, 4), (5, 2, 1)])
def test_tape_backward_matches_closed_form_and_finite_differences(wp, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    av, bv, cv, wv = (rng.standard_normal(s) for s in ((m, k), (k, n), (m, n), (m, n)))
    alpha, beta = 0.75, -1.25
    a, b, c = (wp.array(v, dtype=wp.float64, requires_grad=True) for v in (av, bv, cv))
    d = wp.zeros((m, n), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.matmul(a, b, c, d, alpha=alpha, beta=beta)
        wp.launch(weighted_sum, dim=(m, n), inputs=[d, wp.array(wv, dtype=wp.float64), loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(wv * (alpha * av @ bv + beta * cv)), rtol=1e-12)
    grads = {"a": a.grad.numpy(), "b": b.grad.numpy(), "c": c.grad.numpy()}
    np.testing.assert_allclose(grads["a"], alpha * wv @ bv.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grads["b"], alpha * av.T @ wv, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grads["c"], beta * wv, rtol=1e-12, atol=1e-14)
    # Central differences of the loss, computed by the daemon, at every entry.
    h = 1e-6
    values = {"a": av, "b": bv, "c": cv}
    for name, v in values.items():
        for idx in np.ndindex(v.shape):
            plus, minus = {k2: x.copy() for k2, x in values.items()}, {k2: x.copy() for k2, x in values.items()}
            plus[name][idx] += h
            minus[name][idx] -= h
            fd = (_loss(wp, plus["a"], plus["b"], plus["c"], wv, alpha, beta)
                  - _loss(wp, minus["a"], minus["b"], minus["c"], wv, alpha, beta)) / (2 * h)
            assert abs(fd - grads[name][idx]) < 1e-7 * max(1.0, abs(fd)), (name, idx, fd, grads[name][idx])
    tape.zero()
    assert not a.grad.numpy().any() and not b.grad.numpy().any()


def test_tape_accumulates_and_in_place(wp):
    # Warp's test_adjoint_accumulation: d2 = a @ b + (a @ b + c); each gradient counts both uses.
    a = wp.array(np.ones((2, 3)), dtype=float, requires_grad=True)
    b = wp.array(np.ones((3, 2)), dtype=float, requires_grad=True)
    c = wp.zeros((2, 2), dtype=float, requires_grad=True)
    d1 = wp.zeros((2, 2), dtype=float, requires_grad=True)
    d2 = wp.zeros((2, 2), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.matmul(a, b, c, d1, alpha=1.0, beta=1.0)
        wp.matmul(a, b, d1, d2, alpha=1.0, beta=1.0)
    tape.backward(grads={d2: wp.ones((2, 2), dtype=float)})
    np.testing.assert_array_equal(a.grad.numpy(), 4.0 * np.ones((2, 3)))
    np.testing.assert_array_equal(b.grad.numpy(), 4.0 * np.ones((3, 2)))
    np.testing.assert_array_equal(c.grad.numpy(), np.ones((2, 2)))

    # In place (d is c): d.grad becomes beta * d.grad, what flows to the old c.
    rng = np.random.default_rng(5)
    av, bv, cv, gv = (rng.standard_normal(s) for s in ((3, 4), (4, 2), (3, 2), (3, 2)))
    a, b, c = (wp.array(v, dtype=wp.float64, requires_grad=True) for v in (av, bv, cv))
    tape = wp.Tape()
    with tape:
        wp.matmul(a, b, c, c, alpha=2.0, beta=0.5)
    tape.backward(grads={c: wp.array(gv, dtype=wp.float64)})
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * gv @ bv.T, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * av.T @ gv, rtol=1e-12)
    np.testing.assert_allclose(c.grad.numpy(), 0.5 * gv, rtol=1e-12)

    # A @ B on a tape, and the batched form's adjoint.
    av, bv = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    a, b = (wp.array(v, dtype=wp.float64, requires_grad=True) for v in (av, bv))
    tape = wp.Tape()
    with tape:
        d = a @ b
    tape.backward(grads={d: wp.ones((3, 5), dtype=wp.float64)})
    np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 5)) @ bv.T, rtol=1e-12)
    av, bv, cv = (rng.standard_normal(s) for s in ((2, 3, 4), (2, 4, 2), (2, 3, 2)))
    a, b, c = (wp.array(v, dtype=wp.float64, requires_grad=True) for v in (av, bv, cv))
    d = wp.zeros((2, 3, 2), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.batched_matmul(a, b, c, d, alpha=1.5, beta=2.0)
    tape.backward(grads={d: wp.ones((2, 3, 2), dtype=wp.float64)})
    ones = np.ones((2, 3, 2))
    np.testing.assert_allclose(a.grad.numpy(), 1.5 * ones @ bv.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 1.5 * av.transpose(0, 2, 1) @ ones, rtol=1e-12)
    np.testing.assert_allclose(c.grad.numpy(), 2.0 * ones, rtol=1e-12)


def test_captured_forward_and_backward_replay(wp):
    m, n = 4, 6
    a = wp.ones((m, n), dtype=float, requires_grad=True)
    b = wp.ones((n, m), dtype=float, requires_grad=True)
    c = wp.zeros((m, m), dtype=float, requires_grad=True)
    d = wp.zeros((m, m), dtype=float, requires_grad=True)
    w = wp.ones((m, m), dtype=float)
    wp.synchronize()
    wp.capture_begin()
    try:
        tape = wp.Tape()
        with tape:
            wp.matmul(a, b, c, d)
        tape.backward(grads={d: w})
    finally:
        graph = wp.capture_end()
    assert not a.grad.numpy().any()  # nothing ran while capturing
    wp.capture_launch(graph)
    np.testing.assert_array_equal(d.numpy(), np.full((m, m), float(n)))
    np.testing.assert_array_equal(a.grad.numpy(), np.full((m, n), float(m)))
    a.assign(np.full((m, n), 2.0, dtype=np.float32))
    wp.capture_launch(graph)  # replays read the current values; gradients accumulate
    np.testing.assert_array_equal(d.numpy(), np.full((m, m), 2.0 * n))
    np.testing.assert_array_equal(a.grad.numpy(), np.full((m, n), 2.0 * m))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((n, m), 3.0 * m))


def test_bad_operands_are_refused_by_the_client(wp, serving):
    f32 = lambda *s: wp.zeros(s, dtype=wp.float32)  # noqa: E731
    cases = [
        ((f32(2, 3), f32(4, 5), f32(2, 5), f32(2, 5)), "Invalid shapes"),
        ((f32(2, 3), f32(3, 5), f32(2, 5), f32(5, 2)), "Invalid shapes"),
        ((f32(2, 3), wp.zeros((3, 5), dtype=wp.float64), f32(2, 5), f32(2, 5)), "same type"),
        ((wp.zeros((2, 2), dtype=int),) * 4, "unsupported dtype"),
        ((f32(2, 2, 2), f32(2, 2, 2), f32(2, 2, 2), f32(2, 2, 2)), "dimensions"),
    ]
    for args, words in cases:
        with pytest.raises(wp.InvalidArgumentError, match=words):
            wp.matmul(*args)
    with pytest.raises(wp.InvalidArgumentError, match="dimensions"):
        wp.batched_matmul(f32(2, 2), f32(2, 2), f32(2, 2), f32(2, 2))
    assert serving()


def test_daemon_validates_every_field(wp, raw, serving):
    stub, session = raw
    f32 = lambda *s: wp.zeros(s, dtype=wp.float32)  # noqa: E731
    a, b, c, d = f32(2, 3), f32(3, 4), f32(2, 4), f32(2, 4)
    wp.synchronize()

    def submit(**kw):
        cmd = runtime_pb2.Command()
        mm = cmd.matmul
        mm.a, mm.b, mm.c, mm.d, mm.alpha = a.handle, b.handle, c.handle, d.handle, 1.0
        for k, v in kw.items():
            setattr(mm, k, v)
        return stub.Submit(runtime_pb2.SubmitRequest(session=session, device="cpu", commands=[cmd],
                                                     synchronize=True))

    submit()
    submit(c=0)
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    for kw, code in ((dict(b=a.handle), invalid), (dict(d=b.handle), invalid), (dict(c=a.handle), invalid),
                     (dict(a=wp.zeros((2, 3), dtype=int).handle), invalid),
                     (dict(b=wp.zeros((3, 4), dtype=wp.float64).handle), invalid),
                     (dict(a=wp.zeros(6, dtype=wp.float32).handle), invalid),
                     (dict(a=wp.zeros((1, 2, 3), dtype=wp.float32).handle), invalid),
                     (dict(a=0), grpc.StatusCode.NOT_FOUND), (dict(d=12345), grpc.StatusCode.NOT_FOUND)):
        with pytest.raises(grpc.RpcError) as e:
            submit(**kw)
        assert e.value.code() == code, (kw, e.value.details())
    assert serving()
