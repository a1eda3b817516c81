"""Compile errors raise Warp's exception classes with Warp's wording.

The daemon decides each error's category where it finds it (sema); the
client raises the matching class (a CompileError subclass that is also
Warp's WarpCodegenTypeError, ...). The message is "file:line:col: error:
<text>" with the text last, so Warp's ``...$`` patterns match; the location
and the kernel are attributes (the kernel also a note). A module whose every
kernel fails reports each kernel's own error (error details of LoadModule);
one with a good kernel reports the failing ones beside the good one.
"""

import re

import numpy as np
import pytest


def _raises(wp, kernel, cls, pattern, inputs=()):
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim=1, inputs=list(inputs))
    assert isinstance(info.value, wp.CompileError)
    assert re.search(pattern, str(info.value)), str(info.value)
    return info.value


def test_warp_hierarchy(wp):
    # As in Warp 1.19: only WarpCodegenError is a RuntimeError; the others derive from
    # the builtin exception of their name and not from WarpCodegenError.
    assert issubclass(wp.WarpCodegenError, RuntimeError)
    for cls, base in [(wp.WarpCodegenTypeError, TypeError), (wp.WarpCodegenValueError, ValueError),
                      (wp.WarpCodegenAttributeError, AttributeError), (wp.WarpCodegenKeyError, KeyError),
                      (wp.WarpCodegenIndexError, IndexError)]:
        assert issubclass(cls, base)
        assert not issubclass(cls, wp.WarpCodegenError)


def test_type_error_from_the_daemon(wp):
    @wp.kernel(module="unique")
    def unequal_compare(out: wp.array(dtype=float)):
        x = wp.int32(10)
        if x == True:  # noqa: E712
            out[0] = 1.0

    e = _raises(wp, unequal_compare, wp.WarpCodegenTypeError, r"error: cannot compare int32 == bool \(Warp does not "
                r"convert implicitly\)$", [wp.zeros(1, dtype=float)])
    assert isinstance(e, TypeError) and isinstance(e, wp.WarpCodegenError)
    path, line, col = e.location.rsplit(":", 2)
    assert path == __file__ and int(line) == unequal_compare.func.__code__.co_firstlineno + 3 and int(col) > 0
    assert str(e) == f"{e.location}: error: {e.text}"
    assert e.function == "kernel 'unequal_compare'"
    assert "in kernel 'unequal_compare'" in e.__notes__
    # Raised again from the client's cache: the same class and text.
    e2 = _raises(wp, unequal_compare, wp.WarpCodegenTypeError, r"cannot compare", [wp.zeros(1, dtype=float)])
    assert e2 is not e and e2.text == e.text


def test_mixed_scalar_operands_are_warps_runtime_error(wp):
    @wp.kernel(module="unique")
    def mixed_mul(out: wp.array(dtype=float)):
        out[0] = float(1 * 1.0)

    e = _raises(wp, mixed_mul, wp.WarpCodegenError, r"Input types must be the same, got \['int32', 'float32'\]$",
                [wp.zeros(1, dtype=float)])
    assert type(e) is wp.CompileError and isinstance(e, RuntimeError)


def test_each_failing_kernel_raises_its_own_error(wp):
    # Neither kernel compiles, so LoadModule fails; each launch still gets its kernel's error.
    @wp.kernel(module="err_classes_all_bad")
    def bad_name(out: wp.array(dtype=float)):
        out[0] = missing_symbol  # noqa: F821

    @wp.kernel(module="err_classes_all_bad")
    def bad_slice(out: wp.array(dtype=float)):
        v = wp.vec3(1.0, 2.0, 3.0)
        w = v[::0]
        out[0] = w[0]

    out = wp.zeros(1, dtype=float)
    e = _raises(wp, bad_name, wp.WarpCodegenKeyError, r"^.*:\d+:\d+: error: Referencing undefined symbol: missing_symbol$",
                [out])
    assert isinstance(e, KeyError) and "Slice" not in str(e)
    e = _raises(wp, bad_slice, wp.WarpCodegenValueError, r"error: Slice step cannot be zero\.$", [out])
    assert isinstance(e, ValueError) and "missing_symbol" not in str(e)


def test_failing_kernel_beside_a_good_one(wp):
    @wp.kernel(module="err_classes_mixed")
    def good(out: wp.array(dtype=float)):
        out[wp.tid()] = 2.5

    @wp.kernel(module="err_classes_mixed")
    def bad_index(out: wp.array(dtype=float)):
        v = wp.vec3(1.0, 2.0, 3.0)
        out[0] = v[3]

    out = wp.zeros(2, dtype=float)
    with pytest.warns(UserWarning):
        wp.launch(good, dim=2, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2.5, 2.5])
    e = _raises(wp, bad_index, wp.WarpCodegenIndexError, r"index 3 is out of range for vec3f$", [out])
    assert isinstance(e, IndexError)


def test_starred_expression_errors(wp):
    @wp.kernel(module="unique")
    def starred_int(out: wp.array(dtype=int)):
        x = 42
        v = wp.vec3i(*x)
        out[0] = v[0]

    @wp.kernel(module="unique")
    def starred_open(a: wp.array(dtype=int)):
        v = wp.vec3i(*a[0:])
        a[0] = v[0]

    a = wp.zeros(10, dtype=int)
    _raises(wp, starred_int, wp.WarpCodegenTypeError, r"Starred expressions are only supported for", [a])
    _raises(wp, starred_open, wp.WarpCodegenValueError, r"requires explicit upper bound", [a])


def test_unknown_functions_name_what_was_written(wp):
    @wp.kernel(module="unique")
    def missing_builtin():
        x = wp.missing_func(42)  # noqa: F841

    @wp.kernel(module="unique")
    def missing_in_submodule():
        i = wp.types.tid()  # noqa: F841

    @wp.kernel(module="unique")
    def missing_namespace():
        i = wp.foo.bar.tid()  # noqa: F841

    _raises(wp, missing_builtin, wp.WarpCodegenAttributeError, r"Could not find function wp\.missing_func as a built-in")
    _raises(wp, missing_in_submodule, wp.WarpCodegenAttributeError, r"Could not find function wp\.types\.tid ")
    e = _raises(wp, missing_namespace, wp.WarpCodegenAttributeError, r"`foo` is not an attribute of 'wp'")
    assert e.location.endswith(f":{missing_namespace.func.__code__.co_firstlineno + 2}:13")


def test_front_end_errors_use_warp_classes(wp):
    @wp.kernel(module="unique")
    def returns_none(x: float):
        return None

    @wp.kernel(module="unique")
    def annotated(x: float) -> float:
        return

    @wp.kernel(module="unique")
    def makes_list(x: float):
        y = [1.0, 2.0]  # noqa: F841

    pattern = r"Warp kernels cannot return values\. .* use `-> None`\.$"
    e = _raises(wp, returns_none, wp.WarpCodegenTypeError, pattern, [1.0])
    assert e.function == "kernel 'returns_none'"
    _raises(wp, annotated, wp.WarpCodegenTypeError, pattern, [1.0])
    _raises(wp, makes_list, wp.WarpCodegenError, r"List constructs are not supported in kernels\. Use vectors", [1.0])


def test_call_of_a_call_of_an_undefined_name_is_warps_key_error(wp):
    # Warp evaluates g(i) of g(i)(0) first: an undefined g is "Referencing undefined symbol".
    @wp.kernel(module="unique")
    def misspelled():
        i = wp.tid()
        _ = typez(i)(0)  # noqa: F821

    e = _raises(wp, misspelled, wp.WarpCodegenKeyError, r":\d+:\d+: error: Referencing undefined symbol: typez$")
    assert isinstance(e, KeyError)

    # A defined callee that is not a function value stays unsupported.
    @wp.kernel(module="unique")
    def call_of_call(out: wp.array(dtype=float)):
        out[0] = wp.sin(0.5)(1.0)

    _raises(wp, call_of_call, wp.CompileError, r"only calls of named functions are supported$",
            [wp.zeros(1, dtype=float)])


def test_call_of_an_undefined_bare_name_is_warps_key_error(wp):
    # Warp 1.19: `undefined_helper(x)` is "Referencing undefined symbol" (a KeyError);
    # only wp.<name> that names nothing is "Could not find function" (an AttributeError).
    @wp.kernel(module="unique")
    def bare(a: wp.array(dtype=float)):
        a[0] = undefined_helper(a[0])  # noqa: F821

    e = _raises(wp, bare, wp.WarpCodegenKeyError, r":\d+:\d+: error: Referencing undefined symbol: undefined_helper$",
                [wp.zeros(1, dtype=float)])
    assert isinstance(e, KeyError)


_GLOBAL_ARRAY = None


def test_an_array_from_the_enclosing_scope_is_warps_type_error(wp):
    # Warp 1.19 (test_codegen test_error_global_var): arrays are kernel arguments, never
    # constants captured from globals or closures.
    global _GLOBAL_ARRAY
    _GLOBAL_ARRAY = wp.array((1.0, 2.0, 3.0), dtype=float)
    captured = wp.zeros(2, dtype=float)

    @wp.kernel(module="unique")
    def reads_global(out: wp.array(dtype=float)):
        out[0] = _GLOBAL_ARRAY[0]

    @wp.kernel(module="unique")
    def searches_closure(out: wp.array(dtype=float)):
        out[0] = float(wp.lower_bound(captured, 2.0))

    for k in (reads_global, searches_closure):
        e = _raises(wp, k, wp.WarpCodegenTypeError, r"Invalid external reference type: <class 'warpd\.array\.array'> "
                    r"\('(_GLOBAL_ARRAY|captured)' is an array: pass it to the kernel as an argument\)$",
                    [wp.zeros(1, dtype=float)])
        assert isinstance(e, TypeError)


def test_missing_attributes_are_named_as_warp_names_them(wp):
    # Warp 1.19: "Error, `<attr>` is not an attribute of '<expression>' (<type>)", a
    # struct by its module-qualified class name, a subscript as "<base>[...]".
    AttrHolder = wp.struct(type("AttrHolder", (), {"__annotations__": {"x": float}, "__module__": __name__}))

    @wp.kernel(module="unique")
    def struct_member(h: AttrHolder):
        _ = h.nonexisting

    @wp.kernel(module="unique")
    def vector_component(a: wp.array(dtype=wp.vec3)):
        _ = a[0].q

    @wp.kernel(module="unique")
    def array_attribute(a: wp.array2d(dtype=float)):
        _ = a.size

    _raises(wp, struct_member, wp.WarpCodegenAttributeError,
            rf"Error, `nonexisting` is not an attribute of .h. \({__name__}\.AttrHolder\)$", [AttrHolder()])
    _raises(wp, vector_component, wp.WarpCodegenAttributeError,
            r"Error, `q` is not an attribute of 'a\[\.\.\.\]' \(vec3f\)$", [wp.zeros(1, dtype=wp.vec3)])
    _raises(wp, array_attribute, wp.WarpCodegenAttributeError,
            r"Error, `size` is not an attribute of 'a' \(array\(ndim=2, dtype=float32\)\)$",
            [wp.zeros((1, 1), dtype=float)])

    @wp.kernel(module="unique")
    def array_address(a: wp.array(dtype=float), out: wp.array(dtype=wp.uint64)):
        out[0] = a.ptr

    # Warp's kernels may read an address; warpd's never do (by design), and say why.
    _raises(wp, array_address, wp.WarpCodegenAttributeError,
            r"Error, `ptr` is not an attribute of 'a' \(array\(ndim=1, dtype=float32\)\) in warpd: kernels "
            r"never see addresses", [wp.zeros(1, dtype=float), wp.zeros(1, dtype=wp.uint64)])
