"""Bad input of every kind: the right exception, a message naming the user's
file and line where there is one, and a daemon that keeps serving."""

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2

from ir_helpers import assert_names_line


# ------------------------------------------------------------ compile errors


def test_unknown_name(wp, serving):
    @wp.kernel(module="unique")
    def uses_unknown(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = undefined_variable * 2.0  # noqa: F821

    a = wp.zeros(4, dtype=float)
    with pytest.raises(wp.CompileError) as info:
        wp.launch(uses_unknown, dim=4, inputs=[a])
    msg = str(info.value)
    assert "undefined_variable" in msg
    assert_names_line(msg, uses_unknown.func, "undefined_variable * 2.0")
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    # Raised again (from the client's cache) without a new compile.
    with pytest.raises(wp.CompileError):
        wp.launch(uses_unknown, dim=4, inputs=[a])
    assert serving()


def test_unknown_builtin(wp, serving):
    @wp.kernel(module="unique")
    def uses_unknown_builtin(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = wp.no_such_builtin(a[i])

    with pytest.raises(wp.CompileError) as info:
        wp.launch(uses_unknown_builtin, dim=1, inputs=[wp.zeros(1, dtype=float)])
    assert "no_such_builtin" in str(info.value)
    assert_names_line(str(info.value), uses_unknown_builtin.func, "wp.no_such_builtin")
    assert serving()


def test_misspelled_builtin_gets_a_suggestion(wp, serving):
    @wp.kernel(module="unique")
    def misspelled(a: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        a[i] = wp.normalise(a[i])

    with pytest.raises(wp.CompileError) as info:
        wp.launch(misspelled, dim=1, inputs=[wp.zeros(1, dtype=wp.vec3)])
    assert "Did you mean normalize?" in str(info.value), str(info.value)
    assert_names_line(str(info.value), misspelled.func, "wp.normalise(a[i])")


def test_no_implicit_conversion_float_plus_int(wp, serving):
    @wp.kernel(module="unique")
    def mixes_types(a: wp.array(dtype=float), n: int):
        i = wp.tid()
        a[i] = a[i] + n

    with pytest.raises(wp.CompileError) as info:
        wp.launch(mixes_types, dim=1, inputs=[wp.zeros(1, dtype=float), 3])
    assert_names_line(str(info.value), mixes_types.func, "a[i] + n")
    assert "Input types must be the same, got ['float32', 'int32']" in str(info.value), str(info.value)
    assert serving()


def test_literal_int_float_mix_is_an_error(wp, serving):
    @wp.kernel(module="unique")
    def mixes_literals(a: wp.array(dtype=float)):
        i = wp.tid()
        x = float(0.0) + int(4)
        a[i] = x

    with pytest.raises(wp.CompileError) as info:
        wp.launch(mixes_literals, dim=1, inputs=[wp.zeros(1, dtype=float)])
    assert_names_line(str(info.value), mixes_literals.func, "float(0.0) + int(4)")
    assert serving()


def test_store_of_wrong_type(wp, serving):
    @wp.kernel(module="unique")
    def stores_float_in_int(a: wp.array(dtype=int)):
        i = wp.tid()
        a[i] = 1.5

    with pytest.raises(wp.CompileError) as info:
        wp.launch(stores_float_in_int, dim=1, inputs=[wp.zeros(1, dtype=int)])
    assert_names_line(str(info.value), stores_float_in_int.func, "a[i] = 1.5")
    assert serving()


def test_wrong_builtin_argument_types(wp, serving):
    @wp.kernel(module="unique")
    def dot_of_floats(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = wp.dot(a[i], a[i])

    with pytest.raises(wp.CompileError) as info:
        wp.launch(dot_of_floats, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "no overload of dot() takes (float32, float32)" in msg, msg
    # The candidates are listed with their patterns.
    assert "dot(a: vec(N, T), b: vec(N, T)) -> T" in msg, msg
    assert_names_line(msg, dot_of_floats.func, "wp.dot(a[i], a[i])")
    assert serving()


@wp.func
def recurse(x: float) -> float:
    return recurse(x - 1.0)


def test_recursion_is_rejected_clearly(wp, serving):
    @wp.kernel(module="unique")
    def calls_recursive(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = recurse(a[i])

    with pytest.raises(wp.CompileError) as info:
        wp.launch(calls_recursive, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "recursion is not supported" in msg, msg
    assert_names_line(msg, recurse.func, "return recurse(x - 1.0)")
    assert serving()


def test_unsupported_syntax_names_the_construct(wp):
    @wp.kernel(module="unique")
    def uses_lambda(a: wp.array(dtype=float)):
        i = wp.tid()
        f = lambda x: x  # noqa: E731
        a[i] = 1.0

    with pytest.raises(wp.CompileError) as info:
        wp.launch(uses_lambda, dim=1, inputs=[wp.zeros(1, dtype=float)])
    msg = str(info.value)
    assert "lambdas are not supported" in msg, msg
    assert_names_line(msg, uses_lambda.func, "f = lambda x: x")


def test_wrong_index_count(wp, serving):
    @wp.kernel(module="unique")
    def one_index_on_2d(a: wp.array2d(dtype=float)):
        i = wp.tid()
        a[i] = 1.0

    with pytest.raises(wp.CompileError) as info:
        wp.launch(one_index_on_2d, dim=1, inputs=[wp.zeros((1, 1), dtype=float)])
    assert_names_line(str(info.value), one_index_on_2d.func, "a[i] = 1.0")
    assert serving()


def test_client_side_syntax_error_names_line(wp):
    @wp.kernel(module="unique")
    def uses_list(a: wp.array(dtype=float)):
        i = wp.tid()
        v = [1.0, 2.0]

    with pytest.raises(wp.CompileError) as info:
        wp.launch(uses_list, dim=1, inputs=[wp.zeros(1, dtype=float)])
    assert_names_line(str(info.value), uses_list.func, "[1.0, 2.0]")


# ------------------------------------------------------------ launch errors


@wp.kernel(module="errors_launch")
def takes_three(a: wp.array(dtype=float), n: int, v: wp.vec3):
    i = wp.tid()
    a[i] = float(n) + v.x


def test_wrong_argument_count(wp, serving):
    a = wp.zeros(2, dtype=float)
    with pytest.raises(TypeError, match=r"kernel 'takes_three' takes 3 arguments \(a, n, v\), "
                                        r"but 2 were given"):
        wp.launch(takes_three, dim=2, inputs=[a, 1])
    with pytest.raises(TypeError, match="takes 3 arguments"):
        wp.launch(takes_three, dim=2, inputs=[a, 1, wp.vec3(), 4])
    assert serving()


def test_float_for_int_parameter(wp):
    a = wp.zeros(2, dtype=float)
    with pytest.raises(TypeError, match=r"argument 'n' of kernel 'takes_three' expects int32, "
                                        r"got float"):
        wp.launch(takes_three, dim=2, inputs=[a, 1.5, wp.vec3()])
    with pytest.raises(TypeError, match="'n'"):
        wp.launch(takes_three, dim=2, inputs=[a, np.float32(1.0), wp.vec3()])


def test_wrong_array_arguments(wp):
    with pytest.raises(TypeError, match=r"argument 'a' of kernel 'takes_three' expects "
                                        r"array\(dtype=float32, ndim=1\), got an array of "
                                        r"dtype=float64"):
        wp.launch(takes_three, dim=2, inputs=[wp.zeros(2, dtype=wp.float64), 1, wp.vec3()])
    with pytest.raises(TypeError, match=r"'a' .* expects a 1-D array"):
        wp.launch(takes_three, dim=2, inputs=[wp.zeros((2, 2), dtype=float), 1, wp.vec3()])
    with pytest.raises(TypeError, match=r"'a' .* got list"):
        wp.launch(takes_three, dim=2, inputs=[[0.0, 0.0], 1, wp.vec3()])
    # A NumPy array is taken on the CPU, as Warp takes it (test_warp_value_api), when its
    # scalar type is the dtype's: Warp's RuntimeError otherwise.
    with pytest.raises(RuntimeError, match=r"typestr='<f8' to Warp array with dtype=float32"):
        wp.launch(takes_three, dim=2, inputs=[np.zeros(2), 1, wp.vec3()], device="cpu")


def test_wrong_vector_argument(wp):
    a = wp.zeros(2, dtype=float)
    with pytest.raises(TypeError, match=r"'v' of kernel 'takes_three' expects vec3"):
        wp.launch(takes_three, dim=2, inputs=[a, 1, (1.0, 2.0)])
    with pytest.raises(TypeError, match=r"'v'"):
        wp.launch(takes_three, dim=2, inputs=[a, 1, wp.vec3d(1.0, 2.0, 3.0)])
    # A single number for a vector is Warp 1.19's RuntimeError.
    with pytest.raises(RuntimeError, match=r"argument 'v' expects vec3f but got a single value of type float"):
        wp.launch(takes_three, dim=2, inputs=[a, 1, 3.0])


def test_bad_dims(wp):
    a = wp.zeros(2, dtype=float)
    with pytest.raises(ValueError, match="1 to 4"):
        wp.launch(takes_three, dim=(1, 1, 1, 1, 1), inputs=[a, 1, wp.vec3()])
    with pytest.raises(TypeError, match="dim"):
        wp.launch(takes_three, dim="x", inputs=[a, 1, wp.vec3()])


def test_cuda_without_cuda_device(wp):
    if wp.is_cuda_available():
        pytest.skip("the daemon has a CUDA device")
    with pytest.raises(wp.DeviceError, match=r"\"cuda\" is not available"):
        wp.launch(takes_three, dim=2, inputs=[wp.zeros(2, dtype=float), 1, wp.vec3()],
                  device="cuda")


# ---------------------------------------------------------- runtime faults


@wp.kernel(module="errors_oob")
def reads_past_end(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i + 1]


@wp.kernel(module="errors_oob")
def writes_past_end_2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j + 1] = 1.0


def test_out_of_bounds_read_is_raised_at_sync(wp, serving):
    a = wp.zeros(8, dtype=float)
    b = wp.zeros(8, dtype=float)
    wp.launch(reads_past_end, dim=8, inputs=[a, b])  # queued: no error yet
    with pytest.raises(wp.KernelError) as info:
        wp.synchronize()
    msg = str(info.value)
    assert info.value.code == grpc.StatusCode.OUT_OF_RANGE
    assert "kernel 'reads_past_end' at " in msg  # the user's name, not the IR name
    assert_names_line(msg, reads_past_end.func, "b[i] = a[i + 1]")
    wp.synchronize()  # the error was reported and cleared
    assert serving()


def test_out_of_bounds_write_is_raised_at_numpy(wp, serving):
    a = wp.zeros((3, 4), dtype=float)
    wp.launch(writes_past_end_2d, dim=(3, 4), inputs=[a])
    with pytest.raises(wp.KernelError) as info:
        a.numpy()
    assert "kernel 'writes_past_end_2d' at " in str(info.value)
    assert_names_line(str(info.value), writes_past_end_2d.func, "a[i, j + 1] = 1.0")
    np.testing.assert_array_equal(wp.zeros(2, dtype=float).numpy(), [0.0, 0.0])
    assert serving()


# ------------------------------------------------------ raw protocol abuse


def _call(fn, *args, **kwargs):
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, **kwargs)
    return info.value


def _valid_function(name="ok_kernel"):
    span = ir_pb2.SourceSpan(file="raw.py", line=1, col=1)
    fn = ir_pb2.Function(name=name, kind=ir_pb2.FUNCTION_KERNEL, span=span)
    p = fn.params.add(name="a", span=span)
    p.type.array.dtype.scalar = ir_pb2.SCALAR_FLOAT32
    p.type.array.ndim = 1
    return fn


@pytest.mark.parametrize("mutate", [
    "bad_identifier", "expr_without_kind", "stmt_without_kind", "no_kind", "bad_enum",
    "deep_nesting", "bad_ndim", "duplicate_function",
])
def test_malformed_ir_is_invalid_argument(raw, serving, mutate):
    stub, session = raw
    span = ir_pb2.SourceSpan(file="raw.py", line=2, col=5)
    req = runtime_pb2.LoadModuleRequest(session=session)
    mod = req.module
    mod.name = "raw"
    if mutate == "duplicate_function":
        mod.functions.append(_valid_function())
    fn = mod.functions.add()  # built in place: deep trees cannot be copied in Python
    fn.CopyFrom(_valid_function())
    if mutate == "bad_identifier":
        fn.name = "1 not an identifier"
    elif mutate == "expr_without_kind":
        s = fn.body.add(span=span)
        s.expr.value.span.CopyFrom(span)  # an Expr with no kind
    elif mutate == "stmt_without_kind":
        fn.body.add(span=span)
    elif mutate == "no_kind":
        fn.kind = ir_pb2.FUNCTION_KIND_UNSPECIFIED
    elif mutate == "bad_enum":
        s = fn.body.add(span=span)
        b = s.expr.value
        b.span.CopyFrom(span)
        b.binary.op = 999
        b.binary.left.constant.int_value = 1
        b.binary.right.constant.int_value = 2
    elif mutate == "deep_nesting":
        s = fn.body.add(span=span)
        e = s.expr.value
        for _ in range(200):
            e.span.CopyFrom(span)
            e = e.unary.operand
            e.span.CopyFrom(span)
        e.constant.int_value = 1
    elif mutate == "bad_ndim":
        fn.params[0].type.array.ndim = 9
    err = _call(stub.LoadModule, req, timeout=30)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
    assert err.details()
    assert serving()


def test_unknown_session_is_unauthenticated(raw, serving):
    stub, _ = raw
    err = _call(stub.CreateArray, runtime_pb2.CreateArrayRequest(
        session="not-a-session", device="cpu",
        dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32), shape=[4]))
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert serving()


def test_unknown_handles_are_not_found(raw, wp, serving):
    stub, session = raw
    bogus = 0x5EED_0000_0000_0001
    real = wp.zeros(4, dtype=float)

    err = _call(lambda: list(stub.Download(runtime_pb2.DownloadRequest(session=session,
                                                                        handle=bogus))))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = _call(stub.FreeArray, runtime_pb2.FreeArrayRequest(session=session, handle=bogus))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = _call(stub.Upload, iter([runtime_pb2.UploadChunk(session=session, handle=bogus,
                                                           data=b"\0" * 16)]))
    assert err.code() == grpc.StatusCode.NOT_FOUND

    def submit(cmd):
        req = runtime_pb2.SubmitRequest(session=session, device="cpu")
        req.commands.append(cmd)
        return _call(stub.Submit, req)

    cmd = runtime_pb2.Command()
    cmd.copy.dst = real.handle
    cmd.copy.src = bogus
    assert submit(cmd).code() == grpc.StatusCode.NOT_FOUND
    cmd = runtime_pb2.Command()
    cmd.fill.array = bogus
    cmd.fill.value = b"\0\0\0\0"
    assert submit(cmd).code() == grpc.StatusCode.NOT_FOUND
    cmd = runtime_pb2.Command()
    cmd.free.array = bogus
    assert submit(cmd).code() == grpc.StatusCode.NOT_FOUND

    # A launch naming an unknown module, then an unknown array in a real module.
    cmd = runtime_pb2.Command()
    cmd.launch.module = bogus
    cmd.launch.kernel = "nothing"
    cmd.launch.dim.append(1)
    assert submit(cmd).code() == grpc.StatusCode.NOT_FOUND

    from warpd import context
    from warpd.launch import _plan

    plan = _plan(takes_three, context.runtime(), wp.get_device("cpu"))
    cmd = runtime_pb2.Command()
    cmd.launch.module = plan.module
    cmd.launch.kernel = plan.name
    cmd.launch.dim.append(1)
    cmd.launch.args.add().array = bogus
    cmd.launch.args.add().bytes = (1).to_bytes(4, "little")
    cmd.launch.args.add().bytes = b"\0" * 12
    assert submit(cmd).code() == grpc.StatusCode.NOT_FOUND

    # The real array is untouched and usable.
    np.testing.assert_array_equal(real.numpy(), np.zeros(4, np.float32))
    assert serving()


def test_bad_launch_arguments_on_the_wire(raw, wp, serving):
    stub, session = raw
    from warpd import context
    from warpd.launch import _plan

    plan = _plan(takes_three, context.runtime(), wp.get_device("cpu"))
    real = wp.zeros(4, dtype=float)

    def submit(args, dim=(1,), kernel=None):
        req = runtime_pb2.SubmitRequest(session=session, device="cpu")
        la = req.commands.add().launch
        la.module = plan.module
        la.kernel = kernel or plan.name
        la.dim.extend(dim)
        la.args.extend(args)
        return _call(stub.Submit, req)

    arr = runtime_pb2.LaunchArg(array=real.handle)
    n = runtime_pb2.LaunchArg(bytes=(1).to_bytes(4, "little"))
    v = runtime_pb2.LaunchArg(bytes=b"\0" * 12)
    cases = [
        ([arr, n], (1,), None),                                       # too few
        ([arr, n, v, v], (1,), None),                                 # too many
        ([n, n, v], (1,), None),                                      # bytes for an array
        ([arr, runtime_pb2.LaunchArg(bytes=b"\0"), v], (1,), None),   # short scalar
        ([arr, n, v], (1, 1, 1, 1, 1), None),                         # 5-D
        ([arr, n, v], (-1,), None),                                   # negative dim
    ]
    for args, dim, kernel in cases:
        err = submit(args, dim, kernel)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (args, dim, err.details())
    err = submit([arr, n, v], (1,), "no_such_kernel")
    assert err.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
    assert serving()


def test_create_array_limits(raw, serving):
    stub, session = raw
    f32 = ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32)
    for shape in ([], [1, 1, 1, 1, 1], [-1], [1 << 62, 1 << 62]):
        err = _call(stub.CreateArray, runtime_pb2.CreateArrayRequest(
            session=session, device="cpu", dtype=f32, shape=shape))
        assert err.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                              grpc.StatusCode.RESOURCE_EXHAUSTED), (shape, err.details())
    err = _call(stub.CreateArray, runtime_pb2.CreateArrayRequest(
        session=session, device="no-such-device", dtype=f32, shape=[4]))
    assert err.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    assert serving()


def test_submit_errors_surface_as_warpd_errors(wp, serving):
    from warpd import context

    a = wp.zeros(4, dtype=float)
    handle = a.handle
    rt = context.runtime()
    # Free behind the client's back, then use the array: the batch is rejected.
    rt.call("FreeArray", runtime_pb2.FreeArrayRequest(session=rt.session, handle=handle))
    a.fill_(1.0)
    with pytest.raises(wp.NotFoundError):
        wp.synchronize()
    a.handle = None  # already freed
    assert serving()


def test_strings_are_not_numbers(wp, serving):
    """Strings are print() text only (the server checks the same: sema_test StringsNeverTakeANumbersType);
    a string statement (a docstring) does nothing."""

    @wp.kernel(module="unique")
    def compares_a_string(a: wp.array(dtype=float)):
        """A docstring."""
        i = wp.tid()
        if a[i] > "range":
            a[i] = 1.0

    with pytest.raises(wp.CompileError, match=r"string constants are supported only as arguments of print\(\)") as info:
        wp.launch(compares_a_string, dim=1, inputs=[wp.zeros(1, dtype=float)])
    assert_names_line(str(info.value), compares_a_string.func, '"range"')

    @wp.kernel(module="unique")
    def has_docstring(a: wp.array(dtype=float)):
        """Docstrings are fine."""
        i = wp.tid()
        a[i] = 2.0

    a = wp.zeros(1, dtype=float)
    wp.launch(has_docstring, dim=1, inputs=[a])
    assert a.numpy()[0] == 2.0
    assert serving()


def test_builtin_arguments_of_one_shape_and_different_dtypes(wp):
    # Warp's words when the values would fit an overload if their dtypes agreed.
    @wp.kernel(module="unique")
    def mixed_dot():
        wp.expect_eq(wp.dot(wp.vec2(1.0, 2.0), wp.vec2h(1.0, 2.0)), 0.0)

    with pytest.raises(wp.CompileError, match=r"no overload of dot\(\) takes \(vec2f, vec2h\): Input types must "
                                              r"be exactly the same, got \['vec2f', 'vec2h'\]"):
        wp.launch(mixed_dot, dim=1)

    # Different shapes: no such claim, only the candidates.
    @wp.kernel(module="unique")
    def shapes_differ():
        wp.expect_eq(wp.dot(wp.vec2(1.0, 2.0), wp.vec3(1.0, 2.0, 3.0)), 0.0)

    with pytest.raises(wp.CompileError, match=r"no overload of dot\(\) takes \(vec2f, vec3f\); Warp does not "
                                              r"convert implicitly"):
        wp.launch(shapes_differ, dim=1)
