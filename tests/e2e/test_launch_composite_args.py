"""Values given for vector, matrix, quaternion, transform and struct kernel
parameters, as Warp 1.19 converts them at launch: containers convert, a
Python or Warp scalar is refused, a NumPy number or a bool fills every
component with a DeprecationWarning, None is refused."""

import re
import warnings

import numpy as np
import pytest

import warpd as wp


@wp.struct
class Params:
    x: float


@wp.kernel
def composite_params(v: wp.vec3, m: wp.mat22, q: wp.quat, t: wp.transform, out: wp.array(dtype=float)):
    for i in range(3):
        out[i] = v[i]
    out[3] = m[0, 0]
    out[4] = m[0, 1]
    out[5] = m[1, 0]
    out[6] = m[1, 1]
    for i in range(4):
        out[7 + i] = q[i]
    for i in range(7):
        out[11 + i] = t[i]


@wp.kernel
def struct_param(params: Params, out: wp.array(dtype=float)):
    out[0] = params.x


PARAMS = [("v", "vec3f"), ("m", "mat22f"), ("q", "quatf"), ("t", "transformf")]


def launch_with(index, value, out):
    args = [wp.vec3(), wp.mat22(), wp.quat(), wp.transform()]
    args[index] = value
    wp.launch(composite_params, dim=1, inputs=[*args, out])


@pytest.mark.parametrize("value", [123, 1.5, wp.float32(1.5), wp.int32(2)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("index", range(4), ids=[p for p, _ in PARAMS])
def test_single_python_or_warp_values_are_refused(wp, index, value):
    name, type_name = PARAMS[index]
    with pytest.raises(RuntimeError) as info:
        launch_with(index, value, wp.zeros(18, dtype=float))
    assert str(info.value) == (f"Error launching kernel 'composite_params', argument '{name}' expects {type_name} "
                               f"but got a single value of type {type(value).__name__}. Construct the value "
                               f"explicitly, e.g.: {type_name}(...).")


@pytest.mark.parametrize("value", [True, np.bool_(True), wp.bool(True), np.float32(1.5), np.int64(3)],
                         ids=lambda v: type(v).__name__)
def test_numpy_numbers_and_bools_fill_with_a_deprecation_warning(wp, value):
    out = wp.zeros(18, dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        wp.launch(composite_params, dim=1, inputs=[value, value, value, value, out])
    np.testing.assert_array_equal(out.numpy(), np.full(18, float(value), dtype=np.float32))
    texts = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    for name, type_name in PARAMS:
        assert any(re.search(rf"type `{type(value).__name__}`.*`{type_name}`.*kernel parameter '{name}'.*deprecated",
                             t) for t in texts), texts
    assert all(w.filename == __file__ for w in caught), "the warning names the caller's line"


@pytest.mark.parametrize("value", [(1.0, 2.0, 3.0), [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]),
                                   wp.vec3(1.0, 2.0, 3.0)], ids=lambda v: type(v).__name__)
def test_containers_convert(wp, value):
    out = wp.zeros(18, dtype=float)
    launch_with(0, value, out)
    np.testing.assert_array_equal(out.numpy()[:3], [1.0, 2.0, 3.0])


def test_none_is_refused(wp):
    with pytest.raises(ValueError, match=r"^Failed to convert argument for param v to vec3f$"):
        launch_with(0, None, wp.zeros(18, dtype=float))
    with pytest.raises(RuntimeError, match=r"^Error launching kernel 'struct_param', argument 'params' expects "
                                           r"Params but got None$"):
        wp.launch(struct_param, dim=1, inputs=[None, wp.zeros(1, dtype=float)])


def test_recorded_launch_parameters_are_checked_alike(wp):
    cmd = wp.launch(composite_params, dim=1, inputs=[wp.vec3(), wp.mat22(), wp.quat(), wp.transform(),
                                                     wp.zeros(18, dtype=float)], record_cmd=True)
    for setter in (lambda: cmd.set_param_at_index(0, 123), lambda: cmd.set_param_by_name("v", 123)):
        with pytest.raises(RuntimeError, match=r"argument 'v' expects vec3f but got a single value"):
            setter()
    cmd.set_param_by_name("v", wp.vec3(1.0, 2.0, 3.0))


def test_a_default_launch_passes_zeros_and_shows_them_in_params(wp):
    # Warp 1.19's test_launch_cmd_composite_defaults: wp.Launch(kernel, device) leaves
    # value parameters zero (a quaternion's bytes too, not the identity).
    out = wp.full(18, -1.0, dtype=float)
    cmd = wp.Launch(composite_params, "cpu")
    cmd.set_param_by_name("out", out)
    cmd.set_dim(1)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), np.zeros(18, dtype=np.float32))
    params = cmd.params
    assert params[0] == (1,) and params[5] is out and len(params) == 6
    cmd = wp.Launch(composite_params, "cpu", adjoint=True)
    adj = cmd.params
    assert len(adj) == 1 + 2 * 5 and adj[5] is None and adj[10] is None
    values = np.concatenate([np.array(v, dtype=np.float32).reshape(-1) for v in adj[6:10]])
    np.testing.assert_array_equal(values, np.zeros(3 + 4 + 4 + 7, dtype=np.float32))
    # Its backward pass runs with the zero forward values: the unset adjoints come back zero.
    out = wp.full(18, -1.0, dtype=float, requires_grad=True)
    out.grad.fill_(1.0)
    cmd.set_param_by_name("out", out)
    cmd.set_param_by_name("out", out.grad, adjoint=True)
    cmd.set_dim(1)
    cmd.launch()
    wp.synchronize()
    # As in Warp 1.19: the backward pass writes no values, and each store consumes its
    # element's gradient (all 18 are stored).
    np.testing.assert_array_equal(out.numpy(), np.full(18, -1.0, dtype=np.float32))
    np.testing.assert_array_equal(out.grad.numpy(), np.zeros(18, dtype=np.float32))
