"""for i in reversed(range(...)) in kernels (Warp 1.19's hidden `reversed`
builtin): the range's values, last first, as Python orders them; empty
ranges stay empty; the loop differentiates like any other."""

import re

import numpy as np
import pytest

import warpd as wp

MAX = 16


@wp.kernel
def record_reversed(bounds: wp.array(dtype=wp.vec3i), out: wp.array2d(dtype=int), count: wp.array(dtype=int)):
    t = wp.tid()
    b = bounds[t]
    k = int(0)
    for i in reversed(range(b[0], b[1], b[2])):
        out[t, k] = i
        k += 1
    count[t] = k


@wp.kernel
def record_forms(out: wp.array2d(dtype=int), count: wp.array(dtype=int), n: int):
    # One-argument and two-argument ranges, a double reversal, int64 bounds.
    k = int(0)
    for i in reversed(range(n)):
        out[0, k] = i
        k += 1
    count[0] = k
    k = 0
    for i in reversed(range(2, n)):
        out[1, k] = i
        k += 1
    count[1] = k
    k = 0
    for i in reversed(reversed(range(1, n, 2))):
        out[2, k] = i
        k += 1
    count[2] = k
    k = 0
    for j in reversed(range(wp.int64(-3), wp.int64(n))):
        out[3, k] = int(j)
        k += 1
    count[3] = k


CASES = [(0, 8, 3), (0, 9, 3), (5, 0, -1), (7, -5, -4), (3, 3, 1), (4, 1, 1), (1, 4, -1), (-6, 6, 5), (2, 9, 0)]


def test_values_last_first_as_python(wp):
    bounds = wp.array(np.array(CASES, dtype=np.int32), dtype=wp.vec3i)
    out = wp.full((len(CASES), MAX), -99, dtype=int)
    count = wp.zeros(len(CASES), dtype=int)
    wp.launch(record_reversed, dim=len(CASES), inputs=[bounds, out, count])
    got, n = out.numpy(), count.numpy()
    for t, (a, b, c) in enumerate(CASES):
        want = list(reversed(range(a, b, c))) if c != 0 else []  # Warp: a zero step runs nothing
        assert list(got[t, : n[t]]) == want, (a, b, c)


def test_range_forms_and_double_reversal(wp):
    out = wp.full((4, MAX), -99, dtype=int)
    count = wp.zeros(4, dtype=int)
    wp.launch(record_forms, dim=1, inputs=[out, count, 7])
    got, n = out.numpy(), count.numpy()
    assert list(got[0, : n[0]]) == [6, 5, 4, 3, 2, 1, 0]
    assert list(got[1, : n[1]]) == [6, 5, 4, 3, 2]
    assert list(got[2, : n[2]]) == [1, 3, 5]
    assert list(got[3, : n[3]]) == list(range(6, -4, -1))


@wp.kernel
def horner(x: wp.array(dtype=float), w: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # y = x[0] + w (x[1] + w (x[2] + ...)): the order matters.
    acc = float(0.0)
    for i in reversed(range(n)):
        acc = acc * w[0] + x[i]
    y[0] = acc


@wp.kernel
def strided_sum(n: int, stride: int, x: wp.array(dtype=float), s: wp.array(dtype=float)):
    tid = wp.tid()
    acc = float(0.0)
    for i in reversed(range(tid, n, stride)):
        acc = acc + x[i] * x[i]
    wp.atomic_add(s, 0, acc)


def test_gradient_matches_finite_differences(wp):
    n = 5
    xv = np.array([0.5, -1.0, 2.0, 0.25, 1.5], dtype=np.float32)
    wv = np.array([0.75], dtype=np.float32)

    def f(xs, ws):
        y = wp.zeros(1, dtype=float)
        wp.launch(horner, dim=1, inputs=[wp.array(xs, dtype=float), wp.array(ws, dtype=float), n, y])
        return float(y.numpy()[0])

    assert f(xv, wv) == pytest.approx(np.polynomial.polynomial.polyval(wv[0], xv), rel=1e-6)
    x = wp.array(xv, dtype=float, requires_grad=True)
    w = wp.array(wv, dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(horner, dim=1, inputs=[x, w, n, y])
    tape.backward(grads={y: wp.array([1.0], dtype=float)})
    h = 1e-2
    for i in range(n):
        e = np.zeros(n, dtype=np.float32)
        e[i] = h
        fd = (f(xv + e, wv) - f(xv - e, wv)) / (2 * h)
        assert x.grad.numpy()[i] == pytest.approx(fd, rel=1e-3, abs=1e-4), i
    fd_w = (f(xv, wv + h) - f(xv, wv - h)) / (2 * h)
    assert w.grad.numpy()[0] == pytest.approx(fd_w, rel=1e-3)


def test_strided_gradient_counts_each_visit(wp):
    # d/dx[i] of sum over threads of sum x[i]^2 = 2 x[i] per thread visiting i.
    n, stride, dim = 8, 3, 12
    xv = np.linspace(-1.0, 2.0, 16).astype(np.float32)
    x = wp.array(xv, dtype=float, requires_grad=True)
    s = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(strided_sum, dim=dim, inputs=[n, stride, x, s])
    visits = np.zeros(16, dtype=np.float32)
    for t in range(dim):
        visits[t:n:stride] += 1.0
    assert s.numpy()[0] == pytest.approx(float((visits * xv * xv).sum()), rel=1e-5)
    tape.backward(grads={s: wp.array([1.0], dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * visits * xv, rtol=1e-6)


@pytest.mark.parametrize(
    "body, message",
    [
        # The argument is analysed first: its range() is what is misplaced.
        ("r = reversed(range(3))", r"range\(\) may only be used as the iterator of a for loop"),
        ("r = reversed(3)", r"reversed\(\) may only be used as the iterator of a for loop"),
        ("for i in reversed(range(3), 1):\n        pass", r"reversed\(\) takes exactly one argument, a range\(\.\.\.\)"),
        ("for i in reversed(wp.vec3()):\n        pass", r"for loops iterate over range\(\.\.\.\) only"),
    ],
)
def test_misuse_is_refused_naming_the_line(wp, tmp_path, body, message):
    path = tmp_path / "misuse.py"
    path.write_text(f"import warpd as wp\n\n@wp.kernel(module='unique')\ndef k():\n    {body}\n")
    ns = {"__name__": "reversed_misuse_" + str(abs(hash(body)))}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    with pytest.raises(wp.CompileError) as info:
        wp.launch(ns["k"], dim=1)
    assert re.search(rf"misuse\.py:5:\d+: error: {message}", str(info.value)), str(info.value)
