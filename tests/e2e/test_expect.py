"""wp.expect_eq / wp.expect_neq in kernels: which values they compare (bool
vectors and matrices included, as in Warp 1.19), what a failed check prints,
and Warp's error when the two values differ in type."""

import re

import pytest


def test_bool_vectors_and_matrices_compare(wp, capsys):
    vec3b = wp.types.vector(length=3, dtype=bool)
    mat22b = wp.types.matrix((2, 2), dtype=bool)

    @wp.kernel(module="unique")
    def bools(flip: bool):
        v = vec3b(True, False, True)
        wp.expect_eq(v, wp.types.vector(True, False, True))
        wp.expect_eq(vec3b(), wp.types.vector(False, False, False))
        wp.expect_neq(v, vec3b(True))
        m = mat22b(True, False, True, False)
        wp.expect_eq(m, wp.types.matrix(True, False, True, False, shape=(2, 2)))
        wp.expect_neq(m, mat22b())
        # Failing checks: each prints Warp's report.
        w = vec3b(flip, False, False)
        wp.expect_eq(w, vec3b())
        wp.expect_neq(mat22b(flip), mat22b(True))

    wp.launch(bools, dim=1, inputs=[True])
    wp.synchronize()
    out = capsys.readouterr().out
    assert out.count("Error, expect_eq() failed") == 1, out
    assert out.count("Error, expect_neq() failed") == 1, out

    # The same kernel with every check passing prints nothing.
    wp.launch(bools, dim=1, inputs=[False])
    wp.synchronize()
    out = capsys.readouterr().out
    assert "Error" not in out, out


@pytest.mark.parametrize(
    "call",
    [
        "wp.expect_neq(wp.vec3f(0.0, 0.0, 0.0), wp.vec2f(0.0, 0.0))",
        "wp.expect_eq(wp.vec3f(), wp.vec3d())",
        "wp.expect_neq(wp.mat33f(), wp.mat22f())",
        "wp.expect_eq(wp.mat22f(), wp.mat22d())",
        "wp.expect_eq(wp.types.vector(True, False), wp.types.vector(True, False, True))",
    ],
)
def test_values_of_different_types_are_refused(wp, tmp_path, call):
    # Warp 1.19's sametypes constraint: both vectors (or both matrices) of
    # Warp's scalars or both of bool, but not one type.
    src = tmp_path / "different_types.py"
    src.write_text(f"import warpd as wp\n\n@wp.kernel(module='unique')\ndef k():\n    {call}\n")
    ns = {"__name__": "different_types_" + str(abs(hash(call)))}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    with pytest.raises(RuntimeError) as info:
        wp.launch(ns["k"], dim=1)
    # str() as Warp's tests read it (pytest's match would also see the note).
    assert re.search(r"different_types\.py:5:\d+: error: Can't test equality for objects with different types$",
                     str(info.value)), str(info.value)


@pytest.mark.parametrize(
    "call, types",
    [
        ("wp.expect_eq(1.0, 1)", r"float32, int32"),
        ("wp.expect_eq(wp.vec3f(), wp.mat22f())", r"vec3f, mat22f"),
        ("wp.expect_eq(wp.types.vector(True, False, True), wp.vec3f())", r"vector\(length=3, dtype=bool\), vec3f"),
        ("wp.expect_eq(wp.quatf(), wp.quatd())", r"quatf, quatd"),
    ],
)
def test_values_no_overload_takes_are_refused(wp, tmp_path, call, types):
    # Not a sametypes case in Warp: no overload takes both (Warp: "Couldn't
    # find function overload").
    src = tmp_path / "no_overload.py"
    src.write_text(f"import warpd as wp\n\n@wp.kernel(module='unique')\ndef k():\n    {call}\n")
    ns = {"__name__": "no_overload_" + str(abs(hash(call)))}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    with pytest.raises(wp.CompileError, match=rf"no overload of expect_eq\(\) takes \({types}\)"):
        wp.launch(ns["k"], dim=1)
