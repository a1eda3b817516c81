"""wp.static(expr): evaluated by the client, with Warp 1.19's rules, against NumPy.

Semantics checked against warp-lang 1.19.0 (CPU) on the same kernel code:

- the expression is evaluated when @wp.kernel/@wp.func is applied, in the
  function's globals and closure; changing a global afterwards (even before
  the first launch) does not change the kernel; a kernel defined after the
  change sees the new value;
- expressions that need a compile-time local (the index of a loop over a
  constant range(), a local assigned a literal or a static value) are
  evaluated when the module is built, and again whenever it is rebuilt
  (another kernel defined in it): then they see the globals of that time;
- a local shadowing a global does not hide it (Warp: the global's value);
- ``m = n`` or ``m = int(3)`` makes m an ordinary variable (wp.static(m) fails);
- the value may be a scalar, a vector/matrix, or a Warp function to call
  (``wp.static(table[key])(a, b)``, ``f = wp.static(...)``, ``wp.static(wp.sin)``);
  ``if wp.static(c)`` generates only the branch taken (the other one need not
  type-check);
- None, tuples, lists, dicts, types and arrays are errors, as are expressions
  that raise. (Warp 1.19 crashes on ``break`` in an unrolled loop and on
  ``print(wp.static("text"))``; warpd refuses the first and prints the second.)
"""

import enum
import inspect
import os
import re

import numpy as np
import pytest

import warpd as wp
from ir_helpers import calls, exprs

FILE = os.path.abspath(__file__)
N = 16


def line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {func.__name__}")


def compile_error(wp, kernel, *inputs):
    out = wp.zeros(N, dtype=float)
    with pytest.raises(wp.CompileError) as info:
        wp.launch(kernel, dim=1, inputs=[out, *inputs])
    return str(info.value)


def launch(wp, kernel, *inputs, n=N, x=None):
    """out[i] after one launch over n threads; x: the input array (0..n-1 if None)."""
    x = np.arange(n, dtype=np.float32) if x is None else x
    out = wp.zeros(n, dtype=float)
    wp.launch(kernel, dim=n, inputs=[wp.array(x, dtype=float), out, *inputs])
    return out.numpy()


# ------------------------------------------------------------ scalars: globals, closures

SCALE = 1.5
OFFSET = wp.constant(4)


class Mode(enum.IntEnum):
    FAST = 3


@wp.kernel
def scaled(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * wp.static(SCALE * 2.0) + float(wp.static(OFFSET + int(Mode.FAST)))


def test_scalar_from_globals(wp):
    x = np.linspace(-2.0, 3.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, scaled, x=x), x * 3.0 + 7.0, rtol=1e-6)


def make_poly(a, b):
    @wp.kernel(module="unique")
    def poly(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        # the closure's values, combined in Python at declaration
        out[i] = wp.static(a * b) * x[i] + wp.static(float(a - b))

    return poly


def test_scalar_from_closure(wp):
    x = np.linspace(0.0, 1.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, make_poly(2.0, 5.0), x=x), 10.0 * x - 3.0, rtol=1e-6)
    np.testing.assert_allclose(launch(wp, make_poly(-1.0, 0.5), x=x), -0.5 * x - 1.5, rtol=1e-6)


@wp.kernel
def typed_values(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    d = wp.static(wp.float64(0.1))  # a float64 constant, as wp.float64(0.1) would be
    out[i] = float(d * wp.float64(x[i])) + float(wp.static(wp.int64(2**40)) >> wp.int64(38))


def test_typed_scalars_keep_their_type(wp):
    x = np.arange(N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, typed_values, x=x), (0.1 * x.astype(np.float64) + 4.0)
                               .astype(np.float32), rtol=1e-6)


# ------------------------------------------------------------ vectors and matrices

ROT = wp.mat33(0.0, -1.0, 0.0,
               1.0, 0.0, 0.0,
               0.0, 0.0, 1.0)
AXIS = wp.vec3(1.0, 2.0, 3.0)


@wp.kernel
def rotate(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    m = wp.static(ROT * 2.0)  # computed in Python: a mat33 constant
    v = m @ (wp.static(AXIS) * x[i])
    out[i] = v[0] + 10.0 * v[1] + 100.0 * v[2]


def test_vector_and_matrix_values(wp):
    x = np.linspace(-1.0, 1.0, N, dtype=np.float32)
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]) * 2.0
    v = (rot @ (np.array([1.0, 2.0, 3.0])[:, None] * x[None, :]))
    np.testing.assert_allclose(launch(wp, rotate, x=x), v[0] + 10.0 * v[1] + 100.0 * v[2],
                               rtol=1e-5, atol=1e-5)


@wp.kernel
def length_of_parameter(x: wp.array(dtype=float), out: wp.array(dtype=float), v: wp.vec4, m: wp.mat22):
    i = wp.tid()
    # len() of a parameter's fixed-length type is known: 4 and 2 (Warp's example uses it for identity(n=...))
    out[i] = float(wp.static(len(v) * 10) + wp.static(len(m))) + wp.ddot(wp.identity(n=wp.static(len(m) + 1),
                                                                          dtype=float),
                                                              wp.identity(n=3, dtype=float))


def test_len_of_a_parameter(wp):
    out = launch(wp, length_of_parameter, wp.vec4(), wp.mat22(), n=2)
    np.testing.assert_array_equal(out, [45.0, 45.0])


# ------------------------------------------------------------ loops

TERMS = 6


@wp.kernel
def exp_series(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    term = float(1.0)
    for k in range(wp.static(TERMS)):
        s += term
        term = term * x[i] / float(k + 1)
    out[i] = s


def test_range_of_a_static_bound(wp):
    x = np.linspace(-1.0, 1.0, N, dtype=np.float32)
    expect = sum(x.astype(np.float64) ** k / np.prod(np.arange(1, k + 1)) for k in range(TERMS))
    np.testing.assert_allclose(launch(wp, exp_series, x=x), expect, rtol=1e-5)


WEIGHTS = (0.5, -2.0, 4.0, 0.25)


@wp.kernel
def weighted_powers(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    p = float(1.0)
    for k in range(wp.static(len(WEIGHTS))):
        # k is a compile-time constant in each unrolled copy
        s += wp.static(WEIGHTS[k]) * p + float(wp.static(k * k))
        p = p * x[i]
    out[i] = s
    out[i] += float(wp.static(k * 100))  # after the loop, k keeps its last value (Python, Warp)


def test_unrolled_loop_index_in_static(wp):
    x = np.linspace(-1.0, 1.0, N, dtype=np.float32).astype(np.float64)
    expect = sum(w * x ** k + k * k for k, w in enumerate(WEIGHTS)) + 300.0
    np.testing.assert_allclose(launch(wp, weighted_powers, x=x.astype(np.float32)), expect, rtol=1e-5)


@wp.kernel
def nested_unroll_and_local_constants(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    rows = 3  # a literal: a compile-time constant for wp.static()
    s = float(0.0)
    for r in range(rows):
        for c in range(1, wp.static(rows + 1)):
            s += float(wp.static(r * 10 + c)) * x[i]
    out[i] = s


def test_nested_unrolled_loops_and_local_constants(wp):
    x = np.linspace(0.0, 2.0, N, dtype=np.float32)
    coeff = sum(r * 10 + c for r in range(3) for c in range(1, 4))
    np.testing.assert_allclose(launch(wp, nested_unroll_and_local_constants, x=x), coeff * x, rtol=1e-6)


# A global named like the loop indices below: wp.static() must see the indices, not it.
shadowed_index = 999


@wp.kernel
def index_after_inner_loops(out: wp.array(dtype=float)):
    n = 0
    for shadowed_index in range(2):  # unrolled: wp.static() below names its index
        for shadowed_index in range(3):  # a plain loop; Warp unrolls it (3 <= max_unroll 16)
            out[8] += 1.0
        # Python and Warp: the index is the inner loop's last value, 2 (not the global 999)
        out[n] = float(wp.static(shadowed_index))
        n += 1
    for k in range(5, -4, -3):  # 5, 2, -1 (negative literal bounds count as constants, as in Warp)
        out[9] += float(k)
    out[2] = float(wp.static(k))
    e = 7
    for e in range(0):  # no iteration: e keeps its constant
        out[9] += 100.0
    out[3] = float(wp.static(e))
    for m in range(3, 19):  # 16 iterations: Warp's max_unroll, still unrolled
        continue
    out[4] = float(wp.static(m))


def test_index_after_a_loop_warp_unrolls(wp):
    # Warp 1.19 test_static_loop_variable_not_shadowed_by_global (its test 4), and more.
    out = wp.zeros(10, dtype=float)
    wp.launch(index_after_inner_loops, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, -1.0, 7.0, 18.0, 0.0, 0.0, 0.0, 6.0, 6.0])


def test_index_after_a_loop_warp_keeps(wp):
    # Loops Warp keeps as loops (a break of their own, more than max_unroll iterations):
    # after them the index is a run-time value, and wp.static() of it an error there too.
    @wp.kernel(module="unique")
    def breaks(out: wp.array(dtype=float)):
        for j in range(3):
            if out[0] > 1.0:
                break
        out[1] = float(wp.static(j))

    @wp.kernel(module="unique")
    def long_loop(out: wp.array(dtype=float)):
        for j in range(17):
            out[0] += 1.0
        out[1] = float(wp.static(j))

    for kernel in (breaks, long_loop):
        assert_error_at(compile_error(wp, kernel), kernel, "wp.static(j)", "name 'j' is not defined")


# ------------------------------------------------------------ functions


@wp.func
def op_add(a: float, b: float):
    return a + b


@wp.func
def op_sub(a: float, b: float):
    return a - b


@wp.func
def op_mul(a: float, b: float):
    return a * b


OPS = {"add": op_add, "sub": op_sub, "mul": op_mul}
NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def make_operate(op):
    """Warp's "function pointers" example: the kernel's operation chosen in Python."""
    @wp.kernel(module="unique")
    def operate(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.static(OPS[op])(x[i], 3.0)

    return operate


@pytest.mark.parametrize("op", sorted(OPS))
def test_function_chosen_by_a_factory(wp, op):
    x = np.linspace(-4.0, 4.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, make_operate(op), x=x), NUMPY_OPS[op](x, 3.0), rtol=1e-6)


def make_shared_module_kernel(op, module):
    @wp.kernel(module=module)
    def combine(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.static(OPS[op])(x[i], 3.0)

    return combine


@pytest.mark.parametrize("module", ["unique", "static_factories"])
def test_factory_kernels_coexist(wp, module):
    """All made first, launched after: each runs its own operation (Warp keeps every live
    kernel of a name; their IR names differ by what they captured)."""
    kernels = {op: make_shared_module_kernel(op, module) for op in sorted(OPS)}
    assert len({k.ir_name for k in kernels.values()}) == len(OPS)
    assert make_shared_module_kernel("add", module).ir_name == kernels["add"].ir_name  # same captures
    x = np.linspace(-4.0, 4.0, N, dtype=np.float32)
    for op, k in kernels.items():
        np.testing.assert_allclose(launch(wp, k, x=x), NUMPY_OPS[op](x, 3.0), rtol=1e-6)


def make_closure_func(scale, bias):
    @wp.func
    def affine(v: float):
        return v * scale + wp.static(bias * 2.0)  # a closure constant and a static value

    @wp.kernel(module="static_factories")
    def apply(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        out[wp.tid()] = affine(x[wp.tid()])

    return apply


def test_factory_functions_coexist(wp):
    kernels = [make_closure_func(2.0, 0.5), make_closure_func(-1.0, 3.0)]
    x = np.linspace(-1.0, 1.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, kernels[0], x=x), 2.0 * x + 1.0, rtol=1e-6)
    np.testing.assert_allclose(launch(wp, kernels[1], x=x), -x + 6.0, rtol=1e-6)


FUNCS = [op_add, op_sub, op_mul]
USED = (0, 2)  # which FUNCS this kernel supports


@wp.kernel
def apply_func_conditions(x: wp.array(dtype=float), out: wp.array(dtype=float), ids: wp.array(dtype=int)):
    # Warp's "branching elimination with static loop unrolling" example
    i = wp.tid()
    result = x[i]
    for k in range(wp.static(len(USED))):
        if ids[i] == wp.static(USED[k]):
            result = wp.static(FUNCS[USED[k]])(x[i], 2.0)
    out[i] = result


def test_functions_chosen_in_an_unrolled_loop(wp):
    x = np.linspace(-4.0, 4.0, N, dtype=np.float32)
    ids = np.arange(N, dtype=np.int32) % 3
    expect = np.where(ids == 0, x + 2.0, np.where(ids == 2, x * 2.0, x))
    np.testing.assert_allclose(launch(wp, apply_func_conditions, wp.array(ids, dtype=int), x=x), expect,
                               rtol=1e-6)


@wp.func
def through_alias(a: float):
    f = wp.static(OPS["mul"])  # f names op_mul from here on
    return f(a, a) + wp.static(wp.sin)(0.0) + wp.static(wp.dot)(wp.vec2(a, 1.0), wp.vec2(1.0, 0.0))


@wp.kernel
def uses_alias(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = through_alias(x[i])


def test_function_bound_to_a_local_and_builtins(wp):
    x = np.linspace(-2.0, 2.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, uses_alias, x=x), x * x + x, rtol=1e-6)


# ------------------------------------------------------------ conditions


def make_norm(dtype):
    @wp.kernel(module="unique")
    def norm(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        if wp.static(dtype == wp.vec3):
            out[i] = wp.length(dtype(x[i], 2.0 * x[i], 2.0 * x[i]))
        elif wp.static(dtype == wp.vec2):
            out[i] = wp.length(dtype(x[i], 0.0))
        else:
            out[i] = wp.abs(x[i])  # only generated for scalars
    return norm


def test_static_condition_generates_the_branch_taken(wp):
    # The branches not taken would not type-check (vec3 of 2 components, ...).
    x = np.linspace(-1.0, 1.0, N, dtype=np.float32)
    np.testing.assert_allclose(launch(wp, make_norm(wp.vec3), x=x), 3.0 * np.abs(x), rtol=1e-6)
    np.testing.assert_allclose(launch(wp, make_norm(wp.vec2), x=x), np.abs(x), rtol=1e-6)
    np.testing.assert_allclose(launch(wp, make_norm(float), x=x), np.abs(x), rtol=1e-6)


@wp.kernel
def static_string(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    print(wp.static("scale is " + str(SCALE)))
    wp.printf(wp.static("%d terms\n"), wp.static(TERMS))
    out[i] = x[i]


def test_static_strings_in_print(wp, capsys):
    wp.synchronize()
    capsys.readouterr()
    launch(wp, static_string, n=1)
    wp.synchronize()
    assert capsys.readouterr().out == "scale is 1.5\n6 terms\n"


# ------------------------------------------------------------ when it is evaluated

LATE = 2.0
SHADOWED = 5


@wp.kernel
def declared_value(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    SHADOWED = 3  # noqa: N806 - Warp evaluates wp.static() in the globals: this does not hide 5
    out[i] = wp.static(LATE * 10.0) + float(wp.static(SHADOWED)) + 0.0 * float(SHADOWED)


LATE = 3.0  # after the kernel was declared, before its first launch: not seen (as in Warp)


def test_value_is_taken_at_declaration(wp):
    np.testing.assert_array_equal(launch(wp, declared_value, n=2), [25.0, 25.0])


TABLE = [1.0, 2.0]


def test_changing_a_global_and_rebuilding(wp):
    """Warp 1.19: values taken at declaration stay; values that needed the translation
    (here: a loop index) are taken again when the module is rebuilt, which a new
    kernel in it causes."""
    global SCALE
    module = "static_rebuild"

    @wp.kernel(module=module)
    def k(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        s = float(0.0)
        for j in range(2):
            s += wp.static(TABLE[j])  # needs j: evaluated at translation
        out[i] = s + wp.static(SCALE) * 100.0

    old_scale = SCALE
    try:
        np.testing.assert_array_equal(launch(wp, k, n=1), [3.0 + 150.0])
        ir_before = k.build()[0].SerializeToString(deterministic=True)
        TABLE[0], SCALE = 10.0, 7.0
        np.testing.assert_array_equal(launch(wp, k, n=1), [3.0 + 150.0])  # no rebuild: kept

        @wp.kernel(module=module)
        def other(x: wp.array(dtype=float), out: wp.array(dtype=float)):
            out[wp.tid()] = wp.static(SCALE)

        # The module is rebuilt: TABLE is read again; SCALE was taken at declaration.
        np.testing.assert_array_equal(launch(wp, k, n=1), [12.0 + 150.0])
        np.testing.assert_array_equal(launch(wp, other, n=1), [7.0])
        # the value is part of the IR, hence of the module's content hash
        assert k.build()[0].SerializeToString(deterministic=True) != ir_before
    finally:
        TABLE[0], SCALE = 1.0, old_scale


# ------------------------------------------------------------ IR (no daemon)


def test_ir_holds_the_value_and_no_static_call():
    def make(v):
        @wp.kernel(module="unique")
        def k(x: wp.array(dtype=float), out: wp.array(dtype=float)):
            out[0] = wp.static(v * 2.0)
        return k

    mod_a, digest_a = make(1.25).module.build()
    mod_b, digest_b = make(1.5).module.build()
    assert not calls(mod_a, "static")
    assert [e.constant.float_value for e in exprs(mod_a, "constant") if e.constant.float_value] == [2.5]
    assert digest_a != digest_b


# ------------------------------------------------------------ errors


def assert_error_at(msg, func, text, *parts):
    line = line_of(func.func, text)
    assert re.search(re.escape(FILE) + rf":{line}:\d+: error: ", msg), f"expected {FILE}:{line} in: {msg}"
    for p in parts:
        assert p in msg, f"{p!r} not in: {msg}"


def test_expression_that_raises(wp, serving):
    @wp.kernel(module="unique")
    def divides_by_zero(out: wp.array(dtype=float)):
        out[0] = wp.static(SCALE / (TERMS - 6))

    msg = compile_error(wp, divides_by_zero)
    assert_error_at(msg, divides_by_zero, "wp.static(SCALE / (TERMS - 6))",
                    "Error evaluating static expression: float division by zero "
                    "(wp.static(SCALE / (TERMS - 6)) raised ZeroDivisionError)")
    assert serving()


@wp.kernel(module="unique")
def returns_none(out: wp.array(dtype=float)):
    out[0] = wp.static(None)


@wp.kernel(module="unique")
def returns_tuple(out: wp.array(dtype=float)):
    out[0] = wp.static((1.0, 2.0))[0]


@wp.kernel(module="unique")
def returns_list(out: wp.array(dtype=float)):
    out[0] = wp.static([1.0])[0]


@wp.kernel(module="unique")
def returns_type(out: wp.array(dtype=float)):
    out[0] = wp.static(wp.vec3)(1.0, 2.0, 3.0)[0]


@pytest.mark.parametrize("kernel, expr, expect", [
    (returns_none, "None", "None is returned"),
    (returns_tuple, "(1.0, 2.0)", "value of type <class 'tuple'> cannot be constructed inside Warp kernels"),
    (returns_list, "[1.0]", "value of type <class 'list'> cannot be constructed inside Warp kernels"),
    (returns_type, "wp.vec3", "it returned the type vec3f; Warp 1.19 does not accept types"),
])
def test_unsupported_values(wp, kernel, expr, expect):
    msg = compile_error(wp, kernel)
    assert_error_at(msg, kernel, f"wp.static({expr})",
                    f"Static expression returns an unsupported value: {expect}", f"(wp.static({expr}))")


def test_array_value(wp):
    @wp.kernel(module="unique")  # declared here, with a daemon to make the array
    def returns_array(out: wp.array(dtype=float)):
        out[0] = wp.static(wp.zeros(2, dtype=float))[0]

    assert_error_at(compile_error(wp, returns_array), returns_array, "wp.static(wp.zeros",
                    "Static expression returns an unsupported value: a Warp array cannot be created inside "
                    "Warp kernels (pass it as an argument) (wp.static(wp.zeros(2, dtype=float)))")


def test_index_of_a_dynamic_loop(wp):
    @wp.kernel(module="unique")
    def dynamic_index(out: wp.array(dtype=float), n: int):
        for j in range(n):
            out[0] += wp.static(WEIGHTS[j])

    msg = compile_error(wp, dynamic_index, 2)
    assert_error_at(msg, dynamic_index, "wp.static(WEIGHTS[j])",
                    "Error evaluating static expression: name 'j' is not defined. Make sure all variables "
                    "used in the static expression are constant. (wp.static(WEIGHTS[j]) raised NameError)",
                    "'j': a local variable whose value is not known")


def test_ordinary_local_is_not_constant(wp):
    @wp.kernel(module="unique")
    def copied(out: wp.array(dtype=float)):
        m = 3
        k = m  # a copy: an ordinary variable (Warp too)
        out[0] = float(wp.static(k + 1))

    msg = compile_error(wp, copied)
    assert_error_at(msg, copied, "wp.static(k + 1)", "name 'k' is not defined")


def test_break_in_an_unrolled_loop(wp):
    @wp.kernel(module="unique")
    def breaks(out: wp.array(dtype=float)):
        for j in range(3):
            if out[0] > 1.0:
                break
            out[0] += wp.static(WEIGHTS[j])

    msg = compile_error(wp, breaks)
    assert_error_at(msg, breaks, "break\n", "'break' is not supported in a loop unrolled for wp.static()")


def test_function_used_as_a_value_or_a_value_called(wp):
    @wp.kernel(module="unique")
    def function_value(out: wp.array(dtype=float)):
        out[0] = wp.static(op_add)

    @wp.kernel(module="unique")
    def value_called(out: wp.array(dtype=float)):
        out[0] = wp.static(SCALE)(1.0)

    assert_error_at(compile_error(wp, function_value), function_value, "wp.static(op_add)",
                    "gives the function 'op_add'; a function can only be called")
    assert_error_at(compile_error(wp, value_called), value_called, "wp.static(SCALE)(1.0)",
                    "wp.static(SCALE) is called, but it gives 1.5 (float), not a function")


def test_string_outside_print(wp):
    @wp.kernel(module="unique")
    def string_value(out: wp.array(dtype=float)):
        s = wp.static("text")
        out[0] = 1.0

    assert_error_at(compile_error(wp, string_value), string_value, 'wp.static("text")',
                    "gives a string; strings are supported only as arguments of print() and wp.printf()")


def test_static_needs_one_expression(wp):
    @wp.kernel(module="unique")
    def two(out: wp.array(dtype=float)):
        out[0] = wp.static(1.0, 2.0)

    assert_error_at(compile_error(wp, two), two, "wp.static(1.0, 2.0)", "wp.static() takes exactly one expression")


def test_python_scope_returns_the_value():
    assert wp.static(3) == 3
    assert wp.static(SCALE * 2.0) == 3.0


def test_static_len_of_a_run_time_local(wp):
    """wp.static(len(x)) of a local known only when the kernel runs (a tuple, a builtin's
    result, a vector made there): its length is part of its type, so it is that constant."""

    @wp.kernel(module="unique")
    def lengths(out: wp.array(dtype=int)):
        tid = wp.tid()
        t = (1, 2.5, wp.vec3(1.0, 2.0, 3.0), tid)
        r = wp.quat_to_axis_angle(wp.quat(1.0, 2.0, 3.0, 4.0))
        v = wp.vec4()
        out[0] = wp.static(len(t))
        out[1] = wp.static(len(r))
        out[2] = wp.static(len(v)) * 10

    out = wp.zeros(3, dtype=int)
    wp.launch(lengths, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [4, 2, 40])


@wp.struct
class StaticInner:
    h: wp.float16
    v: wp.vec3


@wp.struct
class StaticOuter:
    m: wp.mat22
    i: int
    f: float
    inner: StaticInner


@wp.struct
class StaticHoldsArray:
    a: wp.array(dtype=float)


def _make_static_outer():
    s = StaticOuter()
    s.m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    s.i = 7
    s.f = 0.5
    s.inner.h = wp.float16(1.5)
    s.inner.v = wp.vec3(4.0, 5.0, 6.0)
    return s


def test_static_struct_values_are_inlined(wp):
    # Warp 1.19: wp.static(f(...)) may return a struct, inlined with its member values.
    @wp.kernel(module="unique")
    def reads(out: wp.array(dtype=float)):
        s = wp.static(_make_static_outer())
        out[0] = s.m[1, 0] + float(s.i) + s.f + float(s.inner.h) + s.inner.v[2]

    out = wp.zeros(1, dtype=float)
    wp.launch(reads, dim=1, inputs=[out])
    assert out.numpy()[0] == 3.0 + 7 + 0.5 + 1.5 + 6.0

    @wp.kernel(module="unique")
    def holds(out: wp.array(dtype=float)):
        s = wp.static(StaticHoldsArray())
        out[0] = 1.0

    with pytest.raises(wp.CompileError, match="a Warp array cannot be created inside Warp kernels at StaticHoldsArray "):
        wp.launch(holds, dim=1, inputs=[out])


def test_kernel_adj_reports_declaration_facts(wp):
    # kernel.adj (Warp 1.19's name): parameters, source, and the wp.static() expressions
    # evaluated at declaration (a nested one only once); one in a loop over its variable
    # is left for translation.
    evals = []

    def inner():
        evals.append(1)
        return 3.0

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=wp.float32), n: int):
        tid = wp.tid()
        a[tid] = wp.static(1.0 + wp.static(inner()))
        s = float(0.0)
        for i in range(2):
            s += wp.static(float(i) + wp.static(1.0 + 1.0))
        a[tid] += s

    info = k.adj
    assert [x.label for x in info.args] == ["a", "n"] and info.args[1].type is int
    assert info.args[0].type.dtype is wp.float32 and info.args[0].type.ndim == 1
    assert info.source.startswith("@wp.kernel(module=\"unique\")\ndef k(")
    assert info.filename == __file__ and info.fun_name == "k"
    assert info.resolved_static_expressions == {"1.0 + wp.static(inner())": 4.0, "1.0 + 1.0": 2.0}
    assert info.has_unresolved_static_expressions and len(evals) == 1
    a = wp.zeros(2, dtype=float)
    wp.launch(k, dim=2, inputs=[a, 0])
    np.testing.assert_array_equal(a.numpy(), [4.0 + 2.0 + 3.0] * 2)
    assert len(evals) == 1

    @wp.kernel(module="unique")
    def plain(a: wp.array(dtype=float)):
        a[0] = 1.0

    assert plain.adj.resolved_static_expressions == {} and not plain.adj.has_unresolved_static_expressions


_static_alias = wp.static


def test_static_alias_rebound_after_declaration_keeps_its_value(wp):
    # A wp.static() call resolved at declaration (here through an alias) keeps its value
    # when the alias names something else by the first launch (Warp 1.19).
    global _static_alias

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=wp.int32)):
        out[0] = _static_alias(7)

    saved = _static_alias
    _static_alias = lambda v: v + 100  # noqa: E731
    try:
        out = wp.zeros(1, dtype=wp.int32)
        wp.launch(k, dim=1, inputs=[out])
        assert out.numpy()[0] == 7
    finally:
        _static_alias = saved


def test_declaring_a_kernel_again_unchanged_gives_the_same_kernel(wp):
    # Warp 1.19 (test_static_value_isolation_across_shared_tree): a factory's kernels with
    # different static values are different kernels with their own values; declaring one
    # again with the same values gives the kernel declared before.
    def make(v):
        @wp.kernel(module="unique")
        def k(a: wp.array(dtype=wp.float32)):
            tid = wp.tid()
            a[tid] = wp.static(v * 2.0)

        return k

    k1, k2 = make(1.0), make(2.0)
    assert k1 is not k2
    a = wp.zeros(2, dtype=float)
    wp.launch(k1, dim=2, inputs=[a])
    assert a.numpy().tolist() == [2.0, 2.0]
    wp.launch(k2, dim=2, inputs=[a])
    assert a.numpy().tolist() == [4.0, 4.0]
    assert make(1.0) is k1 and make(2.0) is k2
    wp.launch(make(1.0), dim=2, inputs=[a])
    assert a.numpy().tolist() == [2.0, 2.0]


@wp.kernel
def static_len_query(v1: wp.vec2, out: wp.array(dtype=float)):
    # Warp 1.19 (test_static_len_query): len() of a parameter and of a local first made by a
    # constructor are known to wp.static(); transform_identity takes its dtype positionally.
    v2 = wp.vec3()
    m = wp.identity(n=wp.static(len(v1) + len(v2) + 1), dtype=float)
    t = wp.transform_identity(float)
    q = wp.quat_identity(wp.float64)
    out[0] = wp.ddot(m, m) + float(wp.static(len(t))) * 10.0 + float(q[3]) * 100.0


def test_static_len_of_constructed_locals(wp):
    out = wp.zeros(1, dtype=float)
    wp.launch(static_len_query, dim=1, inputs=[wp.vec2(), out])
    assert out.numpy()[0] == 6.0 + 70.0 + 100.0


def test_a_struct_holding_an_array_is_refused_naming_where(wp):
    # Warp 1.19: "... a Warp array cannot be created inside Warp kernels at Foo.bar.baz",
    # the path to the struct whose member is the array.
    @wp.struct
    class Baz:
        data: wp.array(dtype=int)
        z: wp.vec3

    @wp.struct
    class Bar:
        baz: Baz
        y: float

    @wp.struct
    class Foo:
        bar: Bar

    foo = Foo()
    foo.bar = Bar()
    foo.bar.baz = Baz()
    foo.bar.baz.data = wp.zeros(3, dtype=int)

    @wp.kernel(module="unique")
    def returns_struct(out: wp.array(dtype=float)):
        wp.static(foo)

    msg = compile_error(wp, returns_struct)
    assert re.search(r"Static expression returns an unsupported value: the returned Warp struct contains a data "
                     r"type that cannot be constructed inside Warp kernels: a Warp array cannot be created inside "
                     r"Warp kernels at .*?Foo\.bar\.baz", msg), msg
