"""Gradients through structs whose members are arrays (issue 25).

An array's gradient is an array: wherever the kernel puts an array (into a local,
into a struct it constructs, into a struct member, a whole struct copied to
another local, a struct nested in a struct), stores and reads through that place
must reach the gradient arrays of the launch's arguments. Each case is the same
computation as Warp 1.19's test_struct.py `kernel_step` / `kernel_step_with_copy`
(an explicit Euler step); gradients are checked against the closed form of the
linear step and against central finite differences of the forward launches."""

import numpy as np
import pytest

import warpd as wpd


@wpd.struct
class Model:
    dt: float
    gravity: wpd.vec3
    m: wpd.array(dtype=float)


@wpd.struct
class State:
    x: wpd.array(dtype=wpd.vec3)
    v: wpd.array(dtype=wpd.vec3)


@wpd.struct
class World:
    state: State
    scale: float


@wpd.kernel
def step_direct(state_in: State, state_out: State, model: Model):
    i = wpd.tid()
    state_out.v[i] = state_in.v[i] + model.gravity / model.m[i] * model.dt
    state_out.x[i] = state_in.x[i] + state_out.v[i] * model.dt


@wpd.kernel
def step_constructed(state_in: State, state_out: State, model: Model):
    # structs built in the kernel from the arguments' arrays
    i = wpd.tid()
    rescaled = Model(1.0, model.gravity / model.m[i] * model.dt, model.m)
    out = State(state_out.x, state_out.v)
    out.v[i] = state_in.v[i] + rescaled.gravity
    out.x[i] = state_in.x[i] + out.v[i] * model.dt


@wpd.kernel
def step_copied(state_in: State, state_out: State, model: Model):
    # a whole struct copied to a local, an array member replaced by assignment
    i = wpd.tid()
    src = state_in
    dst = State()
    dst.v = state_out.v
    dst.x = state_out.x
    dst.v[i] = src.v[i] + model.gravity / model.m[i] * model.dt
    dst.x[i] = src.x[i] + dst.v[i] * model.dt


@wpd.kernel
def step_nested(state_in: State, state_out: State, model: Model):
    # a struct holding a struct holding the arrays
    i = wpd.tid()
    w_in = World(state_in, 1.0)
    w_out = World()
    w_out.state = state_out
    w_out.state.v[i] = w_in.state.v[i] + model.gravity / model.m[i] * model.dt
    w_out.state.x[i] = w_in.state.x[i] + w_out.state.v[i] * model.dt * w_in.scale


@wpd.kernel
def loss_of(x: wpd.array(dtype=wpd.vec3), loss: wpd.array(dtype=float)):
    i = wpd.tid()
    wpd.atomic_add(loss, 0, wpd.dot(x[i], x[i]))


DIM = 5
DT = 0.01
GRAVITY = np.array([0.0, 0.0, -9.81])


def run(wp, kernel, x, v, m, backward=True):
    model = Model()
    model.m = wp.array(m, dtype=float, requires_grad=True)
    model.dt = DT
    model.gravity = wp.vec3(*GRAVITY)
    s_in, s_out = State(), State()
    s_in.x = wp.array(x, dtype=wp.vec3, requires_grad=True)
    s_in.v = wp.array(v, dtype=wp.vec3, requires_grad=True)
    s_out.x = wp.zeros_like(s_in.x, requires_grad=True)
    s_out.v = wp.zeros_like(s_in.v, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=DIM, inputs=[s_in, s_out, model])
        wp.launch(loss_of, dim=DIM, inputs=[s_out.x, loss])
    if not backward:
        return float(loss.numpy()[0])
    tape.backward(loss)
    grads = s_in.x.grad.numpy().copy(), s_in.v.grad.numpy().copy(), model.m.grad.numpy().copy()
    tape.zero()
    assert not s_in.x.grad.numpy().any() and not model.m.grad.numpy().any()
    return grads


@pytest.mark.parametrize("kernel", [step_direct, step_constructed, step_copied, step_nested],
                         ids=lambda k: k.key)
def test_gradients_reach_arrays_held_by_structs(wp, kernel):
    rng = np.random.default_rng(123)
    x, v = rng.normal(size=(DIM, 3)), rng.normal(size=(DIM, 3))
    m = rng.random(DIM) + 0.5
    gx, gv, gm = run(wp, kernel, x, v, m)
    # closed form: x' = x + (v + g/m dt) dt, loss = sum |x'|^2
    x_out = x + (v + GRAVITY / m[:, None] * DT) * DT
    np.testing.assert_allclose(gx, 2 * x_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, 2 * x_out * DT, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gm, (2 * x_out * DT * (-GRAVITY * DT / m[:, None] ** 2)).sum(-1),
                               rtol=1e-4, atol=1e-8)
    # and against central differences of the forward launches (float32: a coarse step)
    eps = 1e-2
    for k in range(DIM):
        mp, mm = m.copy(), m.copy()
        mp[k] += eps
        mm[k] -= eps
        fd = (run(wp, kernel, x, v, mp, False) - run(wp, kernel, x, v, mm, False)) / (2 * eps)
        np.testing.assert_allclose(gm[k], fd, rtol=5e-2, atol=1e-6)
        xp, xm = x.copy(), x.copy()
        xp[k, 0] += eps
        xm[k, 0] -= eps
        fd = (run(wp, kernel, xp, v, m, False) - run(wp, kernel, xm, v, m, False)) / (2 * eps)
        np.testing.assert_allclose(gx[k, 0], fd, rtol=1e-2, atol=1e-4)
