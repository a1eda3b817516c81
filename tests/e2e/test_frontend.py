"""The Python front end (AST -> warpd.v1 IR), without a daemon."""

import os
import re

import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2

import helper_funcs
from ir_helpers import calls, exprs, line_of, stmts

FILE = os.path.abspath(__file__)

GLOBAL_INT = 7
GLOBAL_FLOAT = 0.25
GLOBAL_BOOL = True
TYPED = wp.constant(wp.float64(2.5))
TYPED_INT = wp.constant(wp.int8(-3))
VEC = wp.constant(wp.vec3(1.0, 2.0, 3.0))
vec5d = wp.types.vector(length=5, dtype=wp.float64)


@wp.func
def square(x: float):
    return x * x


@wp.func
def twice(x: float) -> float:
    return square(x) + square(x)


@wp.kernel(module="frontend_simple")
def simple_kernel(a: wp.array(dtype=wp.vec3),
                  b: wp.array(dtype=wp.vec3),
                  c: wp.array(dtype=float)):
    """A docstring, dropped from the IR."""
    # get thread index
    tid = wp.tid()
    x = a[tid]
    y = b[tid]
    r = wp.dot(x, y)
    c[tid] = r


@wp.kernel(module="frontend_misc")
def compute_image(color: wp.array2d(dtype=wp.vec3), n: int, s: float, v: wp.vec3):
    i, j = wp.tid()
    r = float(i) / float(n)
    color[i, j] = wp.vec3(r, s, v.z)
    for k in range(0, n, 2):
        color[i, j] += v
    if i < j and j <= n:
        color[i, j] = -v
    elif not i == 0:
        pass
    else:
        color[i, j].x = 1.0
    while n > 0:
        n -= 1
        if n == 5:
            break
        continue


@wp.kernel(module="frontend_misc")
def constants_kernel(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64),
                     flags: wp.array(dtype=wp.int8)):
    i = wp.tid()
    a[i] = GLOBAL_FLOAT + float(GLOBAL_INT)
    b[i] = TYPED
    flags[i] = TYPED_INT
    ok = GLOBAL_BOOL
    w = VEC
    d = wp.float64(1.0)
    k = int(a[i])
    t = bool(k)
    m = wp.min(k, 3)
    mm = max(k, 3)
    ab = abs(a[i])
    inf = wp.pi


@wp.kernel(module="frontend_misc")
def calls_funcs(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = twice(a[i]) + helper_funcs.helper_outer(a[i])


@wp.kernel(module="frontend_unknown")
def unknown_names(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = undefined_name + wp.not_a_builtin(1.0) + nomodule.func(2.0)  # noqa: F821


@wp.kernel(module="frontend_misc")
def typed_decls(a: wp.array(dtype=wp.float64, ndim=3), b: wp.array4d(dtype=wp.vec2h)):
    i, j, k = wp.tid()
    x: wp.float64 = a[i, j, k]
    v = vec5d()
    q = wp.vector(wp.float64(1.0), length=5)
    z = wp.zeros_like_in_kernel(dtype=wp.float64)  # noqa: just a keyword with a type value


def kernel_in_function():
    class Holder:
        @wp.kernel(module="unique")
        def nested(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 1.0

    return Holder.nested


def ir_of(k):
    return k.build()[0]


def test_simple_kernel_structure_and_spans():
    fn = ir_of(simple_kernel)
    assert fn.kind == ir_pb2.FUNCTION_KERNEL
    assert re.fullmatch(r"simple_kernel_[0-9a-f]{8}", fn.name)
    assert [p.name for p in fn.params] == ["a", "b", "c"]
    vec3 = ir_pb2.TypeRef(vector=ir_pb2.VectorType(length=3, dtype=ir_pb2.SCALAR_FLOAT32))
    assert fn.params[0].type.array.dtype == vec3
    assert fn.params[0].type.array.ndim == 1
    assert fn.params[2].type.array.dtype.scalar == ir_pb2.SCALAR_FLOAT32
    assert fn.span.file == FILE
    assert (fn.span.line, fn.span.col) == line_of(simple_kernel.func, "def simple_kernel")
    # Docstring dropped: five statements.
    assert [s.WhichOneof("kind") for s in fn.body] == ["assign"] * 5
    tid_stmt = fn.body[0]
    assert (tid_stmt.span.line, tid_stmt.span.col) == line_of(simple_kernel.func, "tid = wp.tid()")
    assert tid_stmt.assign.value.call.callee == "tid"
    assert tid_stmt.assign.value.call.kind == ir_pb2.CALLEE_BUILTIN
    dot = calls(fn, "dot")[0]
    line, col = line_of(simple_kernel.func, "wp.dot(x, y)")
    assert (dot.span.file, dot.span.line, dot.span.col) == (FILE, line, col)
    store = fn.body[4].assign.target
    assert store.subscript.value.name.id == "c"
    assert len(store.subscript.indices) == 1
    # every node has a span in this file
    for e in exprs(fn, "name") + calls(fn):
        assert e.span.file == FILE and e.span.line > 0 and e.span.col > 0


def test_2d_tid_tuple_subscript_and_vec3():
    fn = ir_of(compute_image)
    first = fn.body[0].assign
    assert first.target.WhichOneof("kind") == "tuple"
    assert [e.name.id for e in first.target.tuple.elements] == ["i", "j"]
    assert first.value.call.callee == "tid"
    store = fn.body[2].assign
    assert [i.name.id for i in store.target.subscript.indices] == ["i", "j"]
    ctor = store.value.call
    assert ctor.callee == "vec3" and ctor.kind == ir_pb2.CALLEE_BUILTIN and len(ctor.args) == 3
    assert ctor.args[2].attribute.attr == "z" and ctor.args[2].attribute.value.name.id == "v"
    assert fn.params[0].type.array.ndim == 2
    assert fn.params[1].type.scalar == ir_pb2.SCALAR_INT32
    assert fn.params[2].type.scalar == ir_pb2.SCALAR_FLOAT32
    assert fn.params[3].type.vector.length == 3


def test_control_flow():
    fn = ir_of(compute_image)
    loop = stmts(fn, "for_stmt")[0].for_stmt
    assert loop.target.name.id == "k"
    assert loop.iter.call.callee == "range" and len(loop.iter.call.args) == 3
    aug = loop.body[0].aug_assign
    assert aug.op == ir_pb2.BINOP_ADD and len(aug.target.subscript.indices) == 2
    cond = stmts(fn, "if_stmt")[0].if_stmt
    assert cond.test.bool_op.op == ir_pb2.BOOL_AND
    assert cond.test.bool_op.values[0].compare.ops == [ir_pb2.CMP_LT]
    assert cond.body[0].assign.value.unary.op == ir_pb2.UNARY_NEG
    elif_ = cond.orelse[0].if_stmt
    assert elif_.test.unary.op == ir_pb2.UNARY_NOT
    assert elif_.body[0].WhichOneof("kind") == "pass_stmt"
    assert elif_.orelse[0].assign.target.attribute.attr == "x"
    loop2 = stmts(fn, "while_stmt")[0].while_stmt
    assert loop2.test.compare.ops == [ir_pb2.CMP_GT]
    assert [s.WhichOneof("kind") for s in loop2.body] == ["aug_assign", "if_stmt", "continue_stmt"]
    assert stmts(fn, "break_stmt")
    r = calls(fn, "float32")
    assert len(r) == 2  # float(i) / float(n)


def test_constants_inline():
    fn = ir_of(constants_kernel)
    consts = [e.constant for e in exprs(fn, "constant")]
    assert any(c.WhichOneof("value") == "float_value" and c.float_value == 0.25 and c.dtype == 0
               for c in consts)
    assert any(c.WhichOneof("value") == "int_value" and c.int_value == 7 and c.dtype == 0
               for c in consts)
    assert any(c.float_value == 2.5 and c.dtype == ir_pb2.SCALAR_FLOAT64 for c in consts)
    assert any(c.WhichOneof("value") == "int_value" and c.int_value == -3 and
               c.dtype == ir_pb2.SCALAR_INT8 for c in consts)
    assert any(c.WhichOneof("value") == "bool_value" and c.bool_value for c in consts)
    pi = [c for c in consts if c.WhichOneof("value") == "float_value" and abs(c.float_value - np.pi) < 1e-12]
    assert pi
    # A vector constant becomes a constructor call of constants.
    vec = [c for c in calls(fn, "vec3")]
    assert len(vec) == 1 and [a.constant.float_value for a in vec[0].call.args] == [1.0, 2.0, 3.0]
    # No Name refers to a global.
    names = {e.name.id for e in exprs(fn, "name")}
    assert names <= {"a", "b", "flags", "i", "k", "ok", "w", "d", "t", "m", "mm", "ab", "inf"}


def test_builtin_names_and_conversions():
    fn = ir_of(constants_kernel)
    names = {e.call.callee for e in calls(fn)}
    assert {"tid", "float32", "float64", "int32", "bool", "min", "max", "abs", "vec3"} <= names
    for e in calls(fn):
        assert e.call.kind == ir_pb2.CALLEE_BUILTIN


def test_user_functions_transitive_and_cross_module():
    fn = ir_of(calls_funcs)
    user = [e.call for e in calls(fn) if e.call.kind == ir_pb2.CALLEE_FUNCTION]
    assert {c.callee for c in user} == {twice.ir_name, helper_funcs.helper_outer.ir_name}
    mod, _ = calls_funcs.module.build()
    by_name = {f.name: f for f in mod.functions}
    for f in (square, twice, helper_funcs.helper_inner, helper_funcs.helper_outer):
        assert by_name[f.ir_name].kind == ir_pb2.FUNCTION_FUNC
    # callees come before callers
    order = [f.name for f in mod.functions]
    assert order.index(square.ir_name) < order.index(twice.ir_name)
    assert order.index(helper_funcs.helper_inner.ir_name) < order.index(helper_funcs.helper_outer.ir_name)
    # return types only when annotated
    assert not by_name[square.ir_name].HasField("return_type")
    assert by_name[twice.ir_name].return_type.scalar == ir_pb2.SCALAR_FLOAT32
    assert by_name[helper_funcs.helper_inner.ir_name].span.file == os.path.abspath(helper_funcs.__file__)
    names = [f.name for f in mod.functions]
    assert len(names) == len(set(names))
    for n in names:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)


def test_unknown_names_pass_through():
    fn = ir_of(unknown_names)
    assert "undefined_name" in {e.name.id for e in exprs(fn, "name")}
    callees = {e.call.callee: e.call.kind for e in calls(fn)}
    assert callees["not_a_builtin"] == ir_pb2.CALLEE_BUILTIN
    assert callees["nomodule.func"] == ir_pb2.CALLEE_BUILTIN


def test_typed_declarations_vectors_and_type_values():
    fn = ir_of(typed_decls)
    a, b = fn.params
    assert a.type.array.ndim == 3 and a.type.array.dtype.scalar == ir_pb2.SCALAR_FLOAT64
    assert b.type.array.ndim == 4
    assert b.type.array.dtype.vector == ir_pb2.VectorType(length=2, dtype=ir_pb2.SCALAR_FLOAT16)
    decl = fn.body[1].assign
    assert decl.annotation.scalar == ir_pb2.SCALAR_FLOAT64
    custom = fn.body[2].assign.value.call
    assert custom.callee == "vector"
    kw = {k.name: k.value for k in custom.keywords}
    assert kw["length"].constant.int_value == 5
    assert kw["dtype"].type_value.scalar == ir_pb2.SCALAR_FLOAT64
    anon = fn.body[3].assign.value.call
    assert anon.callee == "vector" and anon.keywords[0].name == "length"
    tv = fn.body[4].assign.value.call.keywords[0].value
    assert tv.type_value.scalar == ir_pb2.SCALAR_FLOAT64


def test_nested_definition_spans_are_exact():
    k = kernel_in_function()
    fn = ir_of(k)
    line, col = line_of(k.func, "a[i] = 1.0")
    assert (fn.body[1].span.line, fn.body[1].span.col) == (line, col)
    assert (fn.span.line, fn.span.col) == line_of(k.func, "def nested")


@pytest.mark.parametrize("body,message", [
    ("    s = 'text'\n", "string constants"),
    ("    l = [1.0, 2.0]\n", "List constructs are not supported in kernels"),
    ("    f = lambda x: x\n", "lambdas"),
    ("    with x:\n        pass\n", "'with'"),
    ("    for i in range(3):\n        pass\n    else:\n        pass\n", "for ... else"),
    ("    y = a if a is None else a\n", "'is'"),
])
def test_unsupported_syntax_reports_file_line_col(tmp_path, body, message):
    src = ("import warpd as wp\n\n"
           "@wp.kernel(module='unique')\n"
           "def bad(a: wp.array(dtype=float)):\n"
           "    i = wp.tid()\n" + body)
    path = tmp_path / "bad_kernel.py"
    path.write_text(src)
    ns = {"__name__": "bad_kernel"}
    exec(compile(src, str(path), "exec"), ns)
    with pytest.raises(wp.CompileError) as info:
        ns["bad"].build()
    msg = str(info.value)
    m = re.match(re.escape(str(path)) + r":(\d+):(\d+): error: ", msg)
    assert m and int(m.group(1)) >= 6 and int(m.group(2)) >= 5, msg
    assert message in msg


def test_module_content_hash_tracks_kernels():
    mod = wp.kernel(module="frontend_hash")

    def k1(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0

    def k2(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0

    kk1 = mod(k1)
    m = kk1.module
    ir1, h1 = m.build()
    assert m.build()[1] == h1  # stable
    mod(k2)
    ir2, h2 = m.build()
    assert h2 != h1
    assert len(ir2.functions) == 2 and len(ir1.functions) == 1
    assert ir2.name == "frontend_hash"


def test_kernel_cannot_be_called():
    with pytest.raises(TypeError, match="wp.launch"):
        simple_kernel(1, 2, 3)


def test_func_is_callable_in_python_scope():
    assert square(3.0) == 9.0
    assert twice(2.0) == 8.0


def test_kernels_from_exec_without_a_module_name(wp, tmp_path):
    # A function made by exec() in a namespace without __name__ has __module__ None (as
    # Warp's test_recompiled_equal_code_object_reextracts makes them); it still
    # translates, and its source is read again when the file changes under an equal code
    # object.
    path = tmp_path / "exec_source.py"
    v1 = "import warpd as wp\n\ndef kf(a: wp.array(dtype=float)):\n    tid = wp.tid()\n    a[tid] = 1.0\n"

    def make(text):
        ns = {}
        exec(compile(text, str(path), "exec"), ns)  # noqa: S102 - the test's own source
        return ns["kf"]

    path.write_text(v1)
    os.utime(path, (1, 1))
    f_a = make(v1)
    assert f_a.__module__ is None
    k_a = wp.kernel(f_a, module="unique")
    a = wp.zeros(3, dtype=float)
    wp.launch(k_a, dim=3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0, 1.0])

    path.write_text(v1.replace("1.0", "42.25"))
    os.utime(path, (2, 2))
    f_b = make(v1)  # the old text again: an equal code object, read from the new file
    k_b = wp.kernel(f_b, module="unique")
    assert "42.25" in k_b.adj.source
    wp.launch(k_b, dim=3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [42.25, 42.25, 42.25])
    assert k_a.module.name != k_b.module.name
