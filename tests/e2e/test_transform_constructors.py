"""Transform constructors as Warp 1.19 has them, in Python scope and in
kernels: the forms (identity, fill, copy, p alone, p and q, keywords, 7
components) and Warp's error texts for the rest."""

import re

import numpy as np
import pytest

import warpd as wp

COMPONENTS = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
TYPES = [wp.transformh, wp.transformf, wp.transformd]


@pytest.mark.parametrize("T", TYPES, ids=lambda t: t.__name__)
def test_python_scope_forms(T):
    def vals(t):
        return [float(x) for x in t]

    assert vals(T()) == [0, 0, 0, 0, 0, 0, 1]
    assert vals(T(1.5)) == [1.5] * 7
    assert vals(T(True)) == [1.0] * 7
    assert vals(T(np.float32(1.5))) == [1.5] * 7
    assert vals(T(*COMPONENTS)) == COMPONENTS
    assert vals(T((1.0, 2.0, 3.0))) == [1, 2, 3, 0, 0, 0, 1]
    assert vals(T(wp.vec3(1.0, 2.0, 3.0))) == [1, 2, 3, 0, 0, 0, 1]
    assert vals(T(np.array([1.0, 2.0, 3.0]))) == [1, 2, 3, 0, 0, 0, 1]
    assert vals(T((1.0, 2.0, 3.0), (4.0, 5.0, 6.0, 7.0))) == COMPONENTS
    assert vals(T(p=(1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == COMPONENTS
    assert vals(T(q=(4.0, 5.0, 6.0, 7.0))) == [0, 0, 0, 4, 5, 6, 7]
    assert vals(T((1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == COMPONENTS
    for source in TYPES:
        assert vals(T(source(*COMPONENTS))) == COMPONENTS


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda T: T(1.0, 2.0, 3.0), ValueError, "Invalid number of arguments in vector constructor, expected 7 "
                                                 "elements, got 3"),
        (lambda T: T(*COMPONENTS, 8.0), ValueError, "Invalid number of arguments in vector constructor, expected 7 "
                                                    "elements, got 8"),
        (lambda T: T(*COMPONENTS, q=(8.0, 9.0, 10.0, 11.0)), TypeError, "multiple values for argument 'q'"),
        (lambda T: T((1.0, 2.0, 3.0), p=(1.0, 2.0, 3.0)), TypeError, "multiple values for argument 'p'"),
        (lambda T: T(*COMPONENTS, pos=(8.0, 9.0, 10.0)), TypeError, "got an unexpected keyword argument 'pos'"),
        (lambda T: T(pos=(8.0, 9.0, 10.0)), TypeError, "got an unexpected keyword argument 'pos'"),
        (lambda T: T(1.0, (0.0, 0.0, 0.0, 1.0)), TypeError,
         "Invalid argument 'p' in transformation constructor: expected a sequence, got float"),
        (lambda T: T(p=1.0), TypeError, "Invalid argument 'p' in transformation constructor: expected a sequence, "
                                        "got float"),
        (lambda T: T(q=1.0), TypeError, "Invalid argument 'q' in transformation constructor: expected a sequence, "
                                        "got float"),
        (lambda T: T(object()), TypeError, "Invalid argument in transformation constructor: expected a scalar "
                                           "value, got object"),
    ],
)
@pytest.mark.parametrize("T", TYPES, ids=lambda t: t.__name__)
def test_python_scope_errors(T, make, error, message):
    with pytest.raises(error) as info:
        make(T)
    assert re.fullmatch(re.escape(message), str(info.value)), str(info.value)


@wp.kernel
def kernel_forms(out: wp.array(dtype=wp.transform), outd: wp.array(dtype=wp.transformd)):
    p = wp.vec3(1.0, 2.0, 3.0)
    q = wp.quat(0.0, 0.6, 0.0, 0.8)
    out[0] = wp.transform(p, q)
    out[1] = wp.transform(p)
    out[2] = wp.transformation(p)
    out[3] = wp.transform(1.5)
    out[4] = wp.transform(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    out[5] = wp.transform()
    outd[0] = wp.transformd(wp.vec3d(p), wp.quatd(q))
    outd[1] = wp.transformation(wp.vec3d(p), dtype=wp.float64)


def test_kernel_forms(wp):
    out = wp.zeros(6, dtype=wp.transform)
    outd = wp.zeros(2, dtype=wp.transformd)
    wp.launch(kernel_forms, dim=1, inputs=[out, outd])
    np.testing.assert_allclose(out.numpy(), [[1, 2, 3, 0, 0.6, 0, 0.8], [1, 2, 3, 0, 0, 0, 1], [1, 2, 3, 0, 0, 0, 1],
                                             [1.5] * 7, COMPONENTS, [0] * 7], rtol=1e-7)
    np.testing.assert_allclose(outd.numpy(), [[1, 2, 3, 0, 0.6, 0, 0.8], [1, 2, 3, 0, 0, 0, 1]], rtol=1e-7)


@pytest.mark.parametrize(
    "call, message",
    [
        ("wp.transform(1.0, 2.0)", r"incompatible number of values given \(2\) when constructing a transform; "
                                   r"expected 0, 1, or 7$"),
        ("wp.transform(1.0, 2.0, 3.0)", r"incompatible number of values given \(3\) when constructing a transform; "
                                        r"expected 0, 1, or 7$"),
        ("wp.transform(wp.vec3(), wp.quatd())", r"all values given when constructing a transformation matrix must "
                                                r"have the same type$"),
        ("wp.transformd(wp.vec3(), wp.quat())", r"all values used to initialize this transformation matrix are "
                                                r"expected to be of the type `float64`$"),
        ("wp.transformd(wp.transform(1.0))", r"copy constructing a transform requires matching source and target "
                                             r"dtypes, got `float32` and `float64`$"),
    ],
)
def test_kernel_errors(wp, tmp_path, call, message):
    path = tmp_path / "bad_transform.py"
    path.write_text(f"import warpd as wp\n\n@wp.kernel(module='unique')\ndef k():\n    t = {call}\n")
    ns = {"__name__": "bad_transform_" + str(abs(hash(call)))}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    with pytest.raises(RuntimeError) as info:
        wp.launch(ns["k"], dim=1)
    assert re.search(r"bad_transform\.py:5:\d+: error: " + message, str(info.value)), str(info.value)
