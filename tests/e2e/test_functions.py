"""@wp.func overloads by parameter types and generic (typing.Any) parameters, as in Warp 1.19.

The client keeps every definition of a @wp.func name in one Function (an
overload set) and emits each overload as its own IR function sharing
``overload_set``; calls name the set, and the daemon picks the overload whose
parameter types match the argument types (typing.Any matches anything, fewer
generic parameters preferred) and instantiates generic ones per argument types.

The first part checks the IR the client emits (no daemon). The second launches
kernels and compares with NumPy; the expected values were obtained by running
the same kernels (the definitions between the "Warp 1.19" markers, with
``import warp as wp``) under warp-lang 1.19.0 on the CPU, with an empty kernel
cache.
"""

import os
import re
import textwrap
from typing import Any

import inspect

import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2

import helper_funcs
from ir_helpers import calls, exprs, line_of

FILE = os.path.abspath(__file__)

# ----------------------------------------------------- Warp 1.19: definitions
# noqa markers: redefining a @wp.func name is how overloads are written.


@wp.func
def scale(x: float):
    return x * 2.0


@wp.func
def scale(x: wp.vec3):  # noqa: F811
    return x * 3.0


@wp.func
def scale(x: int):  # noqa: F811
    return x + 100


@wp.func
def combine(a: float):
    return a * 10.0


@wp.func
def combine(a: float, b: float):  # noqa: F811
    return a + b


@wp.func
def combine(a: float, b: float, c: float):  # noqa: F811
    return a * b - c


@wp.func
def double(x: Any):
    return x + x


@wp.func
def quadruple(x: Any):
    return double(double(x))


@wp.func
def pair_sum(a: Any, i: int):
    return a[i] + a[i + 1]


@wp.func
def kind_of(x: Any):
    return 1


@wp.func
def kind_of(x: float):  # noqa: F811
    return 2


@wp.func
def kind_of(x: float, y: Any):  # noqa: F811
    return 3


@wp.func
def kind_of(x: Any, y: Any):  # noqa: F811
    # Defined after kind_of(float, Any): Warp 1.19 tries generic overloads in definition
    # order after the concrete ones, so (1.0, 2) takes kind_of(float, Any).
    return 4


@wp.kernel(module="unique")
def by_type(xs: wp.array(dtype=float), vs: wp.array(dtype=wp.vec3), ns: wp.array(dtype=int),
            out_x: wp.array(dtype=float), out_v: wp.array(dtype=wp.vec3), out_n: wp.array(dtype=int)):
    i = wp.tid()
    out_x[i] = scale(xs[i])
    out_v[i] = scale(vs[i])
    out_n[i] = scale(ns[i])


@wp.kernel(module="unique")
def by_arity(xs: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    x = xs[i]
    out[i, 0] = combine(x)
    out[i, 1] = combine(x, 2.0)
    out[i, 2] = combine(x, 3.0, 1.0)


@wp.kernel(module="unique")
def generic_values(xs: wp.array(dtype=float), ns: wp.array(dtype=wp.int32), vs: wp.array(dtype=wp.vec3),
                   ms: wp.array(dtype=wp.mat22), out_x: wp.array(dtype=float), out_n: wp.array(dtype=wp.int32),
                   out_v: wp.array(dtype=wp.vec3), out_m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    out_x[i] = double(xs[i])
    out_n[i] = double(ns[i])
    out_v[i] = double(vs[i])
    out_m[i] = double(ms[i])


@wp.kernel(module="unique")
def generic_calls_generic(xs: wp.array(dtype=float), ns: wp.array(dtype=int), vs: wp.array(dtype=wp.vec3),
                          out_x: wp.array(dtype=float), out_n: wp.array(dtype=int),
                          out_v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out_x[i] = quadruple(xs[i])
    out_n[i] = quadruple(ns[i])
    out_v[i] = quadruple(vs[i])


@wp.kernel(module="unique")
def generic_array(xs: wp.array(dtype=float), vs: wp.array(dtype=wp.vec3),
                  out_x: wp.array(dtype=float), out_v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out_x[i] = pair_sum(xs, i)
    out_v[i] = pair_sum(vs, i)


@wp.kernel(module="unique")
def mixed(out: wp.array(dtype=int)):
    out[0] = kind_of(1.0)  # the concrete kind_of(float)
    out[1] = kind_of(1)  # kind_of(Any)
    out[2] = kind_of(wp.vec3(1.0, 2.0, 3.0))  # kind_of(Any)
    out[3] = kind_of(1.0, 2)  # kind_of(float, Any)
    out[4] = kind_of(1, 2)  # kind_of(Any, Any)


@wp.func
def first_generic(x: Any, y: Any):
    return 1


@wp.func
def first_generic(x: float, y: Any):  # noqa: F811
    # Defined after first_generic(Any, Any): both are generic, so the first defined that fits wins
    return 2


@wp.kernel(module="unique")
def generic_order(out: wp.array(dtype=int)):
    out[0] = first_generic(1.0, 2)

# ---------------------------------------------------------- end of Warp 1.19


def module_of(kernel):
    return kernel.module.build()[0]


def functions_by_name(mod):
    return {f.name: f for f in mod.functions}


# ------------------------------------------------------------ IR (no daemon)


def test_overloads_are_one_function_and_one_set():
    assert isinstance(scale, wp.Function)
    assert [f.__name__ for f in scale.overloads] == ["scale"] * 3
    assert re.fullmatch(r"scale_[0-9a-f]{8}", scale.ir_name)
    mod = module_of(by_type)
    funcs = [f for f in mod.functions if f.display_name == "scale"]
    # one IR function per overload: "<set>_<index>", in definition order, all in the set
    assert [f.name for f in funcs] == [f"{scale.ir_name}_{i}" for i in range(3)]
    assert all(f.overload_set == scale.ir_name and f.kind == ir_pb2.FUNCTION_FUNC for f in funcs)
    types = [f.params[0].type for f in funcs]
    assert types[0].scalar == ir_pb2.SCALAR_FLOAT32
    assert types[1].vector == ir_pb2.VectorType(length=3, dtype=ir_pb2.SCALAR_FLOAT32)
    assert types[2].scalar == ir_pb2.SCALAR_INT32
    # every call names the set, whatever the argument
    kernel_ir = functions_by_name(mod)[by_type.ir_name]
    user = [c.call for c in calls(kernel_ir) if c.call.kind == ir_pb2.CALLEE_FUNCTION]
    assert [c.callee for c in user] == [scale.ir_name] * 3
    # the IR function names are C identifiers, all distinct
    names = [f.name for f in mod.functions]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names + [scale.ir_name])


def test_a_single_definition_keeps_its_name_and_no_set():
    mod = module_of(generic_calls_generic)
    by_name = functions_by_name(mod)
    for f in (double, quadruple):
        ir = by_name[f.ir_name]  # the set of one is the function's own name
        assert ir.overload_set == ""
        assert ir.display_name == f.__name__
    assert [c.call.callee for c in calls(by_name[quadruple.ir_name])] == [double.ir_name] * 2


def test_generic_parameters_are_any():
    mod = module_of(mixed)
    funcs = [f for f in mod.functions if f.display_name == "kind_of"]
    kinds = [[p.type.WhichOneof("kind") for p in f.params] for f in funcs]
    assert kinds == [["any"], ["scalar"], ["scalar", "any"], ["any", "any"]]
    assert all(f.overload_set == kind_of.ir_name for f in funcs)
    pair = functions_by_name(module_of(generic_array))[pair_sum.ir_name]
    assert pair.params[0].type.HasField("any") and pair.params[1].type.scalar == ir_pb2.SCALAR_INT32
    assert not pair.HasField("return_type")


def test_return_annotation_any_means_none_and_string_annotations_work(tmp_path):
    ns = load(tmp_path, "ret_any", """
        from __future__ import annotations
        import typing
        import warpd as wp

        @wp.func
        def ident(x: typing.Any) -> typing.Any:
            return x

        @wp.func
        def typed(x: typing.Any) -> float:
            return float(x)
    """)
    ident = ns["ident"].build()[0][0]
    assert ident.params[0].type.HasField("any") and not ident.HasField("return_type")
    typed = ns["typed"].build()[0][0]
    assert typed.return_type.scalar == ir_pb2.SCALAR_FLOAT32


def test_all_overloads_reachable_from_a_kernel_are_emitted():
    # by_arity reaches combine; generic_calls_generic reaches double through quadruple.
    arity = [f for f in module_of(by_arity).functions if f.display_name == "combine"]
    assert [len(f.params) for f in arity] == [1, 2, 3]
    assert len({f.overload_set for f in arity}) == 1
    names = {f.name for f in module_of(generic_calls_generic).functions}
    assert {double.ir_name, quadruple.ir_name} <= names


def load(tmp_path, name, src, ns=None, file=None):
    """Runs src as (more of) the Python module `name`, from a file so that its functions
    have a source; returns the module's namespace."""
    path = tmp_path / f"{file or name}.py"
    path.write_text(textwrap.dedent(src))
    ns = ns if ns is not None else {"__name__": name}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns


def test_same_types_replace_an_overload_as_in_warp(tmp_path):
    ns = load(tmp_path, "replace_mod", """
        import warpd as wp

        @wp.func
        def f(x: float):
            return x * 2.0

        @wp.func
        def f(x: wp.vec3):
            return x * 3.0

        first = f

        @wp.func
        def f(y: float):          # the types of the first overload: a new Function, as in Warp
            return y * 5.0

        second = f

        @wp.func
        def f(x: wp.vec3):        # the types of another overload: replaced in place
            return x * 7.0

        @wp.kernel(module="unique")
        def k(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
            a[0] = f(1.0)
            v[0] = f(v[0])
    """)
    first, second, f = ns["first"], ns["second"], ns["f"]
    assert second is not first and f is second
    assert len(first.overloads) == 2 and len(f.overloads) == 2
    assert first.ir_name != f.ir_name
    mod = module_of(ns["k"])
    funcs = [fn for fn in mod.functions if fn.display_name == "f"]
    assert len(funcs) == 2
    consts = [sorted(e.constant.float_value for e in _constants(fn)) for fn in funcs]
    assert consts == [[5.0], [7.0]]  # the float overload keeps its place (as in Warp)
    # the old Function is left as it was
    old = [sorted(e.constant.float_value for e in _constants(ir)) for ir in first.build()[0]]
    assert old == [[2.0], [3.0]]


def _constants(fn):
    return [e for e in exprs(fn, "constant") if e.constant.HasField("float_value")]


def test_overloads_in_a_function_body_and_per_call_sets(tmp_path):
    def make(extra):
        @wp.func
        def g(x: float):
            return x

        if extra:
            @wp.func
            def g(x: wp.vec3):  # noqa: F811
                return x

        @wp.kernel(module="unique")
        def k(a: wp.array(dtype=float)):
            a[0] = g(1.0)

        return g, k

    g1, k1 = make(False)
    g2, k2 = make(True)
    g3, _ = make(True)
    assert len(g1.overloads) == 1 and len(g2.overloads) == 2
    # the set's name covers its overloads: the two kernels must not stand in for one another
    assert g1.ir_name != g2.ir_name and k1.ir_name != k2.ir_name
    assert g2.ir_name == g3.ir_name  # deterministic
    assert len([f for f in module_of(k2).functions if f.display_name == "g"]) == 2


def test_names_are_deterministic(tmp_path):
    src = """
        import typing
        import warpd as wp

        @wp.func
        def h(x: float):
            return x

        @wp.func
        def h(x: typing.Any):
            return x
    """
    a = load(tmp_path, "same_name_mod", src)["h"]
    b = load(tmp_path, "same_name_mod", src)["h"]
    assert a is not b and a.ir_name == b.ir_name
    assert [f.name for f in a.build()[0]] == [f.name for f in b.build()[0]]


def test_types_from_globals_give_distinct_overloads(tmp_path):
    # One source, different annotations: the overload names must differ.
    ns = load(tmp_path, "loop_defs", """
        import warpd as wp

        for T in (float, wp.vec3, wp.mat22):
            @wp.func
            def ident(x: T):
                return x
    """)
    irs = ns["ident"].build()[0]
    assert [fn.params[0].type.WhichOneof("kind") for fn in irs] == ["scalar", "vector", "matrix"]
    assert len({fn.name for fn in irs}) == 3


def test_an_imported_function_is_not_extended(tmp_path):
    ns = load(tmp_path, "importer", """
        import warpd as wp
        from helper_funcs import helper_inner

        @wp.func
        def helper_inner(x: wp.vec3):
            return x
    """)
    assert len(helper_funcs.helper_inner.overloads) == 1
    assert ns["helper_inner"] is not helper_funcs.helper_inner
    assert len(ns["helper_inner"].overloads) == 1


def test_an_overload_added_later_rebuilds_the_module_and_renames_the_calls(tmp_path):
    ns = load(tmp_path, "late_overload", """
        import warpd as wp

        @wp.func
        def late(x: float):
            return x

        @wp.kernel(module="unique")
        def k(a: wp.array(dtype=float)):
            a[0] = late(a[0])
    """)
    k, late = ns["k"], ns["late"]
    mod1, h1 = k.module.build()
    assert [c.call.callee for c in calls(k.build()[0]) if c.call.kind == ir_pb2.CALLEE_FUNCTION] \
        == [late.ir_name]
    load(tmp_path, "late_overload", """
        @wp.func
        def late(x: wp.vec3):
            return x
    """, ns=ns, file="late_overload_more")
    assert ns["late"] is late and len(late.overloads) == 2
    mod2, h2 = k.module.build()
    assert h2 != h1
    assert [c.call.callee for c in calls(k.build()[0]) if c.call.kind == ir_pb2.CALLEE_FUNCTION] \
        == [late.ir_name]
    assert [f.overload_set for f in mod2.functions if f.display_name == "late"] == [late.ir_name] * 2


def test_static_function_selection_names_the_set():
    funcs = (scale, double)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=float)):
        for j in range(2):
            a[j] = wp.static(funcs[j])(a[j])
        f = wp.static(scale)
        a[2] = f(a[2])

    mod = module_of(k)
    user = [c.call.callee for c in calls(functions_by_name(mod)[k.ir_name])
            if c.call.kind == ir_pb2.CALLEE_FUNCTION]
    assert user == [scale.ir_name, double.ir_name, scale.ir_name]
    assert len([f for f in mod.functions if f.overload_set == scale.ir_name]) == 3


def test_a_generic_kernel_is_a_template_never_translated_itself():
    @wp.kernel(module="unique")
    def generic_kernel(a: wp.array(dtype=float), x: Any):
        a[0] = 1.0

    assert generic_kernel.generic_params == ("x",)
    with pytest.raises(wp.CompileError) as info:
        generic_kernel.build()
    msg = str(info.value)
    line, col = line_of(generic_kernel.func, "x: Any")
    assert msg.startswith(f"{FILE}:{line}:{col}: error: "), msg
    assert "generic kernel is instantiated per argument types" in msg


def test_python_scope_calls_pick_the_overload():
    # Warp 1.19 gives the same for one-argument calls; it binds Python-scope calls to the
    # parameters of the first definition, so combine(2.0, 3.0) and kind_of(1.0, 2) raise
    # TypeError there. warpd picks by arity too, with the daemon's preference order.
    assert scale(1.5) == 3.0
    assert scale(7) == 107
    assert list(scale(wp.vec3(1.0, 2.0, 3.0))) == [3.0, 6.0, 9.0]
    assert combine(2.0) == 20.0 and combine(2.0, 3.0) == 5.0 and combine(2.0, 3.0, 1.0) == 5.0
    assert kind_of(1.0) == 2 and kind_of(1) == 1 and kind_of(1.0, 2) == 3 and kind_of(1, 2) == 4
    assert double(3) == 6
    with pytest.raises(RuntimeError, match="no overload found"):
        scale(wp.vec2(1.0, 2.0))


@wp.func
def halve_f64(x: wp.float64):
    return x / wp.float64(2.0)


def test_python_scope_calls_check_argument_types_of_a_single_overload():
    # Warp 1.19 (test_cpython_call_user_function_with_wrong_argument_types): a Python float
    # is a float32, which a float64 parameter does not take, one overload or several.
    with pytest.raises(RuntimeError, match=r"^Error calling function 'halve_f64', no overload found "
                                           r"for arguments \(1.0,\)$"):
        halve_f64(1.0)
    assert halve_f64(wp.float64(3.0)) == 1.5


def test_module_hash_covers_every_overload(tmp_path):
    # Only the body of the overload no call takes differs: the module still differs.
    src = """
        import warpd as wp

        @wp.func
        def f(x: float):
            return x

        @wp.func
        def f(x: int):
            return x + {}

        @wp.kernel(module="functions_hash")
        def k(a: wp.array(dtype=float)):
            a[0] = f(a[0])
    """
    ka = load(tmp_path, "hash_mod", src.format(1), file="hash_a")["k"]
    mod_a, h1 = ka.module.build()
    kb = load(tmp_path, "hash_mod", src.format(2), file="hash_b")["k"]
    mod_b, h2 = kb.module.build()
    assert ka.module is kb.module and h1 != h2
    assert [f.display_name for f in mod_b.functions] == ["f", "f", "k"]


# ---------------------------------------------------------- daemon (e2e)

N = 5


def test_overloads_chosen_by_argument_type(wp):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(N).astype(np.float32)
    vs = rng.standard_normal((N, 3)).astype(np.float32)
    ns = rng.integers(-50, 50, N).astype(np.int32)
    out_x, out_v, out_n = wp.zeros(N, dtype=float), wp.zeros(N, dtype=wp.vec3), wp.zeros(N, dtype=int)
    wp.launch(by_type, dim=N, inputs=[wp.array(xs, dtype=float), wp.array(vs, dtype=wp.vec3),
                                      wp.array(ns, dtype=int), out_x, out_v, out_n])
    # Warp 1.19: scale(1.5) = 3.0, scale(vec3(1, 2, 3)) = (3, 6, 9), scale(7) = 107
    np.testing.assert_allclose(out_x.numpy(), xs * 2.0, rtol=1e-6)
    np.testing.assert_allclose(out_v.numpy(), vs * 3.0, rtol=1e-6)
    np.testing.assert_array_equal(out_n.numpy(), ns + 100)


def test_overloads_chosen_by_arity(wp):
    xs = np.linspace(-2.0, 2.0, N).astype(np.float32)
    out = wp.zeros((N, 3), dtype=float)
    wp.launch(by_arity, dim=N, inputs=[wp.array(xs, dtype=float), out])
    # Warp 1.19: combine(1.0) = 10.0 (a), combine(1.0, 2.0) = 3.0 (a + b)
    np.testing.assert_allclose(out.numpy(), np.stack([xs * 10.0, xs + 2.0, xs * 3.0 - 1.0], axis=1),
                               rtol=1e-6)


def test_generic_function_with_scalars_vectors_and_matrices(wp):
    rng = np.random.default_rng(2)
    xs = rng.standard_normal(N).astype(np.float32)
    ns = rng.integers(-1000, 1000, N).astype(np.int32)
    vs = rng.standard_normal((N, 3)).astype(np.float32)
    ms = rng.standard_normal((N, 2, 2)).astype(np.float32)
    outs = [wp.zeros(N, dtype=float), wp.zeros(N, dtype=wp.int32), wp.zeros(N, dtype=wp.vec3),
            wp.zeros(N, dtype=wp.mat22)]
    wp.launch(generic_values, dim=N, inputs=[wp.array(xs, dtype=float), wp.array(ns, dtype=wp.int32),
                                             wp.array(vs, dtype=wp.vec3), wp.array(ms, dtype=wp.mat22),
                                             *outs])
    # Warp 1.19: double(2.5) = 5.0, double(21) = 42 (int32), double(vec3(1, 2, 3)) = (2, 4, 6),
    # double(mat22(1, 2, 3, 4)) = ((2, 4), (6, 8))
    np.testing.assert_allclose(outs[0].numpy(), xs + xs, rtol=1e-6)
    assert outs[1].numpy().dtype == np.int32
    np.testing.assert_array_equal(outs[1].numpy(), ns + ns)
    np.testing.assert_allclose(outs[2].numpy(), vs + vs, rtol=1e-6)
    np.testing.assert_allclose(outs[3].numpy(), ms + ms, rtol=1e-6)


def test_generic_function_calling_a_generic_function(wp):
    xs = np.linspace(-1.0, 1.0, N).astype(np.float32)
    ns = np.arange(N, dtype=np.int32) - 2
    vs = np.arange(3 * N, dtype=np.float32).reshape(N, 3)
    out_x, out_n, out_v = wp.zeros(N, dtype=float), wp.zeros(N, dtype=int), wp.zeros(N, dtype=wp.vec3)
    wp.launch(generic_calls_generic, dim=N, inputs=[wp.array(xs, dtype=float), wp.array(ns, dtype=int),
                                                    wp.array(vs, dtype=wp.vec3), out_x, out_n, out_v])
    # Warp 1.19: quadruple(5) = 20, quadruple(vec3(1, 2, 3)) = (4, 8, 12)
    np.testing.assert_allclose(out_x.numpy(), 4.0 * xs, rtol=1e-6)
    np.testing.assert_array_equal(out_n.numpy(), 4 * ns)
    np.testing.assert_allclose(out_v.numpy(), 4.0 * vs, rtol=1e-6)


def test_generic_array_parameter(wp):
    xs = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], dtype=np.float32)
    vs = np.arange(18, dtype=np.float32).reshape(6, 3)
    out_x, out_v = wp.zeros(5, dtype=float), wp.zeros(5, dtype=wp.vec3)
    wp.launch(generic_array, dim=5, inputs=[wp.array(xs, dtype=float), wp.array(vs, dtype=wp.vec3),
                                            out_x, out_v])
    # Warp 1.19: pair_sum([1, 2, 4], 0) = 3.0; pair_sum of vec3 rows 1 and 2 of 1..9 = (11, 13, 15)
    np.testing.assert_allclose(out_x.numpy(), xs[:-1] + xs[1:])
    np.testing.assert_allclose(out_v.numpy(), vs[:-1] + vs[1:])


def test_concrete_overload_preferred_to_generic(wp):
    out = wp.zeros(5, dtype=int)
    wp.launch(mixed, dim=1, inputs=[out])
    # Warp 1.19: [2, 1, 1, 3, 4]
    np.testing.assert_array_equal(out.numpy(), [2, 1, 1, 3, 4])


def test_generic_overloads_are_tried_in_definition_order(wp):
    out = wp.zeros(1, dtype=int)
    wp.launch(generic_order, dim=1, inputs=[out])
    assert out.numpy()[0] == 1  # Warp 1.19 (run here) gives 1: the first generic overload defined


def test_overload_added_after_a_launch(wp):
    @wp.func
    def late(x: float):
        return x + 1.0

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        a[0] = late(a[0])

    a, v = wp.zeros(1, dtype=float), wp.zeros(1, dtype=wp.vec3)
    wp.launch(k, dim=1, inputs=[a, v])
    np.testing.assert_array_equal(a.numpy(), [1.0])

    @wp.func
    def late(x: wp.vec3):  # noqa: F811
        return x * 2.0

    @wp.kernel(module="unique")
    def k2(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
        a[0] = late(a[0])
        v[0] = late(wp.vec3(1.0, 2.0, 3.0))

    wp.launch(k, dim=1, inputs=[a, v])  # its module is rebuilt with both overloads
    wp.launch(k2, dim=1, inputs=[a, v])
    np.testing.assert_array_equal(a.numpy(), [3.0])
    np.testing.assert_array_equal(v.numpy(), [[2.0, 4.0, 6.0]])


def test_no_overload_matches(wp, serving):
    @wp.kernel(module="unique")
    def no_match(a: wp.array(dtype=float)):
        a[0] = scale(wp.vec2(1.0, 2.0))[0]

    # Warp 1.19: "Couldn't find function overload for 'scale' that matched inputs with types: [vec2f]"
    with pytest.raises(wp.CompileError) as info:
        wp.launch(no_match, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "no overload of" in msg and "scale" in msg, msg
    line, _ = line_of(no_match.func, "scale(wp.vec2")
    assert re.search(re.escape(FILE) + rf":{line}(:\d+)?", msg), msg
    assert serving()


def test_no_overload_takes_that_many_arguments(wp, serving):
    @wp.kernel(module="unique")
    def too_many(a: wp.array(dtype=float)):
        a[0] = combine(1.0, 2.0, 3.0, 4.0)

    # Warp 1.19: "Couldn't find function overload for 'combine' that matched inputs with types:
    # [float32, float32, float32, float32]"
    with pytest.raises(wp.CompileError) as info:
        wp.launch(too_many, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "no overload of" in msg and "combine" in msg, msg
    line, _ = line_of(too_many.func, "combine(1.0")
    assert re.search(re.escape(FILE) + rf":{line}(:\d+)?", msg), msg
    assert serving()


def test_generic_function_called_with_wrong_arity(wp, serving):
    @wp.kernel(module="unique")
    def wrong_arity(a: wp.array(dtype=float)):
        a[0] = double(1.0, 2.0)

    # Warp 1.19: "Couldn't find function overload for 'double' that matched inputs with types:
    # [float32, float32]"
    with pytest.raises(wp.CompileError) as info:
        wp.launch(wrong_arity, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "double" in msg, msg
    line, _ = line_of(wrong_arity.func, "double(1.0, 2.0)")
    assert re.search(re.escape(FILE) + rf":{line}(:\d+)?", msg), msg
    assert serving()


def test_generic_kernel_is_specialized_at_launch(wp):
    @wp.kernel(module="unique")
    def generic_kernel(a: wp.array(dtype=float), x: Any):
        a[0] = 1.0 + float(x)

    # As in Warp 1.19: one instance per type of x (tests/e2e/test_generics.py has more).
    a = wp.zeros(1, dtype=float)
    wp.launch(generic_kernel, dim=1, inputs=[a, 2.0])
    assert a.numpy()[0] == 3.0
    wp.launch(generic_kernel, dim=1, inputs=[a, wp.int16(5)])
    assert a.numpy()[0] == 6.0
    assert len(generic_kernel._instances) == 2


# ------------------------------------------------ locals bound to functions (Warp 1.19)


@wp.func
def bound_double(a: float):
    return a * 2.0


@wp.func
def bound_halve(a: float):
    return a * 0.5


def test_local_bound_to_a_function_is_called(wp):
    @wp.kernel(module="unique")
    def calls_through_locals(out: wp.array(dtype=float)):
        f = bound_double
        g = f  # a copy names the same function
        out[0] = f(3.0) + g(1.0)
        f = bound_double  # the same function again is allowed
        out[1] = f(0.25)
        h = wp.static(bound_halve)
        out[2] = h(3.0)

    out = wp.zeros(3, dtype=float)
    wp.launch(calls_through_locals, dim=1, inputs=[out])
    np.testing.assert_allclose(out.numpy(), [8.0, 0.5, 1.5])


def test_rebinding_a_function_valued_local_is_an_error(wp):
    @wp.kernel(module="unique")
    def to_another_function(out: wp.array(dtype=float)):
        f = bound_double
        f = bound_halve
        out[0] = f(3.0)

    @wp.kernel(module="unique")
    def to_a_value(out: wp.array(dtype=float)):
        f = bound_double
        f = 1.0
        out[0] = f

    @wp.kernel(module="unique")
    def through_a_tuple(out: wp.array(dtype=float)):
        f = bound_double
        f, x = (1.0, 2.0)
        out[0] = x

    @wp.kernel(module="unique")
    def through_augassign(out: wp.array(dtype=float)):
        f = bound_double
        f += 1.0
        out[0] = 1.0

    cases = [(to_another_function, "to a different function"), (to_a_value, "to a non-function value"),
             (through_a_tuple, "to a non-function value"), (through_augassign, "to a non-function value")]
    for k, what in cases:
        with pytest.raises(wp.WarpCodegenError, match=f"rebinding function-valued local 'f' {what} is not "
                                                      f"supported. Warp does not have function pointers"):
            wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_func_declares_overloads_for_type_checkers():
    # Warp 1.19 (test_func_decorator_has_overloads): @wp.func and @wp.func(...) as typing
    # overloads returning Callable, so checkers keep the decorated function's signature.
    import typing

    overloads = typing.get_overloads(wp.func)
    assert len(overloads) == 2
    assert all("Callable[_P, _R]" in str(o.__annotations__["return"]) for o in overloads)
    assert list(inspect.signature(halve_f64).parameters) == ["x"]
