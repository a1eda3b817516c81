"""print() in adjoint launches and Tape backward passes, as Warp 1.19 prints there:
the replay prints the forward values again (print and printf, in forward order),
then each print() prints "adj: <adjoint>" where the reverse sweep passes it. The
expected texts are Warp 1.19's, run on the CPU (its test_print.py
test_print_adjoint, and the kernels below run by real Warp)."""

from typing import Any

import numpy as np
import pytest

import warpd as wpd


@wpd.kernel
def generic_print(x: Any):
    print(x)


@wpd.struct
class Pair:
    a: float
    b: int


SCALARS = [wpd.int8, wpd.uint8, wpd.int16, wpd.uint16, wpd.int32, wpd.uint32, wpd.int64, wpd.uint64,
           wpd.float16, wpd.float32, wpd.float64]
VALUE_TYPES = list(SCALARS)
for _s in SCALARS:
    for _n in (2, 3, 4):
        VALUE_TYPES.append(wpd.types.vector(_n, _s))
        VALUE_TYPES.append(wpd.types.matrix((_n, _n), _s))
VALUE_TYPES += [wpd.bool, wpd.quatf, wpd.quatd, wpd.transformf, wpd.transformd, Pair]
for _t in VALUE_TYPES:
    wpd.overload(generic_print, [_t])


def _adjoint_output(wp, capfd, value, adj):
    wp.launch(generic_print, dim=1, inputs=[value], adj_inputs=[adj], adjoint=True)
    wp.synchronize()
    return capfd.readouterr().out


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda t: t.__name__)
def test_scalars_vectors_and_matrices(wp, capfd, scalar):
    assert _adjoint_output(wp, capfd, scalar(17), scalar(42)) == "17\nadj: 42\n"
    for n in (2, 3, 4):
        vt = wp.types.vector(n, scalar)
        data = np.arange(n, dtype=wp.dtype_to_numpy(scalar))
        want = " ".join(str(k) for k in range(n)) + " \nadj: " + " ".join(str(k) for k in reversed(range(n))) + "\n"
        assert _adjoint_output(wp, capfd, vt(data), vt(data[::-1])) == want
        mt = wp.types.matrix((n, n), scalar)
        data = np.arange(n * n, dtype=wp.dtype_to_numpy(scalar))
        rows = [[r * n + c for c in range(n)] for r in range(n)]
        adj_rows = [[n * n - 1 - (r * n + c) for c in range(n)] for r in range(n)]
        want = "".join(" ".join(str(v) for v in row) + " \n" for row in rows)
        want += "".join(("adj: " if r == 0 else "     ") + " ".join(str(v) for v in row) + "\n"
                        for r, row in enumerate(adj_rows))
        assert _adjoint_output(wp, capfd, mt(data), mt(data[::-1])) == want


def test_bools_quaternions_transforms_and_structs(wp, capfd):
    assert _adjoint_output(wp, capfd, True, False) == "True\nadj: False\n"
    assert _adjoint_output(wp, capfd, wp.quatf(1.0, 2.0, 3.0, 4.0), wp.quatf(5.0, 6.0, 7.0, 8.0)) == \
        "1 2 3 4\nadj: 5 6 7 8\n"
    assert _adjoint_output(wp, capfd, wp.quatd(0.5, 2.0, 3.0, 4.0), wp.quatd(5.0, 6.0, 7.0, -8.0)) == \
        "0.5 2 3 4\nadj: 5 6 7 -8\n"
    t = wp.transformf(wp.vec3(1.0, 2.0, 3.0), wp.quatf(0.0, 0.0, 0.0, 1.0))
    adj = wp.transformf(wp.vec3(4.0, 5.0, 6.0), wp.quatf(1.0, 1.0, 1.0, 1.0))
    assert _adjoint_output(wp, capfd, t, adj) == "(1 2 3) (0 0 0 1)\nadj: (4 5 6) (1 1 1 1)\n"
    assert _adjoint_output(wp, capfd, Pair(), Pair()) == \
        "<type without print implementation>\nadj: <type without print implementation>\n"


@wpd.kernel
def mixed(x: float, v: wpd.vec3, m: wpd.mat22, q: wpd.quat, t: wpd.transform, i: int):
    print(x)
    y = x * 2.0
    print(y)
    print(v)
    print(m)
    print(q)
    print(t)
    print(i)
    print("hello")
    wpd.printf("pf %f\n", x)
    for j in range(2):
        print(x + float(j))


def test_replay_then_adjoints_in_reverse_order(wp, capfd):
    args = [1.5, wp.vec3(1.0, 2.0, 3.0), wp.mat22(1.0, 2.0, 3.0, 4.0), wp.quat(1.0, 2.0, 3.0, 4.0),
            wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0)), 7]
    adj = [2.5, wp.vec3(4.0, 5.0, 6.0), wp.mat22(5.0, 6.0, 7.0, 8.0), wp.quat(5.0, 6.0, 7.0, 8.0),
           wp.transform(wp.vec3(4.0, 5.0, 6.0), wp.quat(1.0, 1.0, 1.0, 1.0)), 9]
    forward = "1.5\n3\n1 2 3 \n1 2 \n3 4 \n1 2 3 4\n(1 2 3) (0 0 0 1)\n7\nhello\npf 1.500000\n1.5\n2.5\n"
    wp.launch(mixed, dim=1, inputs=args)
    wp.synchronize()
    assert capfd.readouterr().out == forward
    wp.launch(mixed, dim=1, inputs=args, adj_inputs=adj, adjoint=True)
    wp.synchronize()
    # Real Warp 1.19 prints exactly this (y and the loop's sums are temporaries: adjoint 0).
    assert capfd.readouterr().out == forward + (
        "adj: 0\nadj: 0\nadj: hello\nadj: 9\nadj: (4 5 6) (1 1 1 1)\nadj: 5 6 7 8\nadj: 5 6\n     7 8\n"
        "adj: 4 5 6\nadj: 0\nadj: 2.5\n")


@wpd.func
def shown_square(x: float):
    print(x)
    return x * x


@wpd.kernel
def calls_shown(x: float, out: wpd.array(dtype=float)):
    y = x + 1.0
    print(y)
    out[0] = shown_square(y)


def test_functions_print_in_the_replay_and_their_adjoint(wp, capfd):
    out = wp.zeros(1, dtype=float)
    wp.launch(calls_shown, dim=1, inputs=[1.5, out], adj_inputs=[0.0, wp.ones(1, dtype=float)], adjoint=True)
    wp.synchronize()
    # Real Warp 1.19: the replay prints y and the call's x; the function's adjoint replays it
    # (x again) and prints d(x*x)/dx = 5; then print(y)'s adjoint, the same 5.
    assert capfd.readouterr().out == "2.5\n2.5\n2.5\nadj: 5\nadj: 5\n"


def test_tape_backward_prints_as_warp_does(wp, capfd):
    @wp.kernel
    def noisy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        v = x[i]
        print(v)
        y[i] = v * 3.0

    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(noisy, 2, inputs=[x, y])
    wp.synchronize()
    assert capfd.readouterr().out == "1\n2\n"
    tape.backward(grads={y: wp.array(np.array([1.0, 0.5], dtype=np.float32))})
    wp.synchronize()
    # Each thread: the value again, then its adjoint at the print (3 * the output's gradient).
    assert capfd.readouterr().out == "1\nadj: 3\n2\nadj: 1.5\n"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 1.5])
