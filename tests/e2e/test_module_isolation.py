"""One broken kernel does not take its module down (issue 24).

A kernel that fails to translate on the client, or to type-check on the daemon
(directly or through a @wp.func it calls), is left out of its module: the other
kernels compile and run, loading the module warns once naming each failure, and
launching a broken kernel raises its own error with its file:line.
"""

import textwrap
import warnings

import numpy as np
import pytest

import warpd as wp

SRC = """
import warpd as wp

@wp.func
def broken_helper(x: float):
    return x < wp.vec3(1.0, 2.0, 3.0)          # line 6: float < vec3

@wp.func
def square(x: float):
    return x * x

@wp.kernel
def good(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = square(float(i)) + 1.0

@wp.kernel
def bad_on_daemon(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.no_such_builtin(1.0)             # line 20

@wp.kernel
def bad_through_func(a: wp.array(dtype=float)):
    i = wp.tid()
    if broken_helper(a[i]):
        a[i] = 0.0

@wp.kernel
def bad_on_client(a: wp.array(dtype=float)):
    i = wp.tid()
    f = lambda y: y                            # line 31
    a[i] = 0.0

@wp.kernel
def also_good(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * 2.0
"""


def load(tmp_path, name, src):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(src))
    ns = {"__name__": name}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns, str(path)


def test_good_kernels_run_beside_broken_ones(wp, tmp_path):
    ns, path = load(tmp_path, "isolation_mod", SRC)
    n = 8
    a = wp.zeros(n, dtype=float)
    b = wp.zeros(n, dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wp.launch(ns["good"], dim=n, inputs=[a])
        wp.launch(ns["also_good"], dim=n, inputs=[a, b])
    expected = np.arange(n, dtype=np.float32) ** 2 + 1.0
    np.testing.assert_array_equal(a.numpy(), expected)
    np.testing.assert_array_equal(b.numpy(), expected * 2.0)

    # One warning for the load, naming each failure once.
    mine = [str(w.message) for w in caught if "isolation_mod" in str(w.message)]
    assert len(mine) == 1, mine
    text = mine[0]
    assert "3 kernel(s)" in text
    assert f"{path}:20:" in text and "no_such_builtin" in text
    assert f"{path}:6:" in text and text.count(f"{path}:6:") == 1
    assert f"{path}:31:" in text

    # Each broken kernel raises its own error, with its file:line.
    with pytest.raises(wp.CompileError, match=rf"{path}:20:\d+: error: Could not find function wp.no_such_builtin "):
        wp.launch(ns["bad_on_daemon"], dim=n, inputs=[a])
    with pytest.raises(wp.CompileError, match=rf"{path}:6:\d+: error: cannot compare float32 < vec3f"):
        wp.launch(ns["bad_through_func"], dim=n, inputs=[a])
    with pytest.raises(wp.CompileError, match=rf"{path}:31:\d+: .*lambda"):
        wp.launch(ns["bad_on_client"], dim=n, inputs=[a])
    # ... and the good ones keep working, without a second warning.
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        wp.launch(ns["good"], dim=n, inputs=[b])
    assert not [w for w in again if "isolation_mod" in str(w.message)]
    np.testing.assert_array_equal(b.numpy(), expected)


def test_a_module_with_only_broken_kernels_fails_to_load(wp, tmp_path):
    ns, path = load(tmp_path, "all_broken_mod", """
        import warpd as wp

        @wp.kernel
        def k1(a: wp.array(dtype=float)):
            a[0] = wp.no_such_builtin_one(1.0)

        @wp.kernel
        def k2(a: wp.array(dtype=float)):
            a[0] = wp.no_such_builtin_two(1.0)
        """)
    a = wp.zeros(1, dtype=float)
    # Each kernel raises its own error (the daemon's error details list every failure).
    with pytest.raises(wp.CompileError) as info:
        wp.launch(ns["k1"], dim=1, inputs=[a])
    assert "no_such_builtin_one" in str(info.value) and "no_such_builtin_two" not in str(info.value)
    with pytest.raises(wp.WarpCodegenAttributeError) as info:
        wp.launch(ns["k2"], dim=1, inputs=[a])
    assert "no_such_builtin_two" in str(info.value) and "no_such_builtin_one" not in str(info.value)


def test_a_broken_kernel_defined_after_the_module_loaded_raises_its_own_error(wp, tmp_path):
    # Leaving the broken kernel out gives the module the IR it had before: the load is the
    # cached one, which must still answer for the new kernel with its error.
    ns, path = load(tmp_path, "late_broken_mod", """
        import warpd as wp

        @wp.kernel
        def first(a: wp.array(dtype=float)):
            a[0] = 1.0
        """)
    a = wp.zeros(1, dtype=float)
    wp.launch(ns["first"], dim=1, inputs=[a])
    more = tmp_path / "late_broken_more.py"
    more.write_text(textwrap.dedent("""
        @wp.kernel
        def late(a: wp.array(dtype=float)):
            f = lambda y: y
            a[0] = 2.0
        """))
    exec(compile(more.read_text(), str(more), "exec"), ns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(wp.CompileError, match="lambda"):
            wp.launch(ns["late"], dim=1, inputs=[a])
    wp.launch(ns["first"], dim=1, inputs=[a])
    assert a.numpy()[0] == 1.0
