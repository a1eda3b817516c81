"""Augmented assignment (x op= v) to members, components and array elements, as in Warp 1.19.

Checked against warp-lang 1.19.0 (CPU) on the same kernels:
- the target's place (its index expressions, with their side effects) is
  evaluated before the right side, then its current value, as in Python;
- user functions named like an operator (add, sub, ...) in the kernel's
  module are called for a member or component target when an overload takes
  the operand types (emit_AugAssign); not for an array element (an atomic)
  or a component of a local vector under += and -= (an in-place builtin).
"""

import numpy as np

import helper_user_operators as ops
import warpd as wp


@wp.func
def bump_index(state: wp.array(dtype=int)) -> int:
    i = state[0]
    state[0] = 1
    return i


@wp.func
def read_state(state: wp.array(dtype=int)) -> float:
    return float(state[0]) * 100.0


@wp.kernel
def target_before_value(mats: wp.array(dtype=wp.mat33), vecs: wp.array(dtype=wp.vec3),
                        flat: wp.array(dtype=float), state: wp.array(dtype=int)):
    # Each index expression sets state[0] to 1, which the right side reads afterwards.
    state[0] = 0
    mats[bump_index(state)][1] += wp.vec3(read_state(state), 0.0, 0.0)
    state[0] = 0
    vecs[bump_index(state)].y -= read_state(state)
    state[0] = 0
    flat[bump_index(state)] += read_state(state)  # an atomic add
    state[0] = 0
    v = wp.vec3(0.0)
    v[bump_index(state)] += read_state(state)
    flat[2] = v[0]


def test_target_is_evaluated_before_the_value(wp):
    mats = wp.zeros(2, dtype=wp.mat33)
    vecs = wp.zeros(2, dtype=wp.vec3)
    flat = wp.zeros(3, dtype=float)
    state = wp.zeros(1, dtype=int)
    wp.launch(target_before_value, dim=1, inputs=[mats, vecs, flat, state])
    expect = np.zeros((2, 3, 3), dtype=np.float32)
    expect[0, 1, 0] = 100.0
    np.testing.assert_array_equal(mats.numpy(), expect)
    np.testing.assert_array_equal(vecs.numpy(), [[0.0, -100.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(flat.numpy(), [100.0, 0.0, 100.0])


def test_user_operators_for_array_slots(wp):
    # Warp 1.19 test_array_slot_augassign_uses_user_operator, and matrix slots.
    values = wp.array([wp.vec3(3.0)], dtype=wp.vec3)
    mats = wp.array([wp.mat22(3.0, 3.0, 3.0, 3.0)], dtype=wp.mat22)
    wp.launch(ops.update_slots, dim=1, inputs=[values, mats, 2.0])
    np.testing.assert_array_equal(values.numpy(), [[3.0 - 2.0, 3.0 - 2.0, 3.0 * 2.0]])
    np.testing.assert_array_equal(mats.numpy(), [[[3.0, 3.0 - 2.0], [3.0 * 2.0, 3.0]]])


def test_user_operators_for_locals_and_elements(wp):
    out = wp.array([3.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0], dtype=float)
    wp.launch(ops.update_locals, dim=1, inputs=[out, wp.vec3(3.0, 4.0, 5.0), 2.0])
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0 - 2.0, 5.0 + 2.0, 3.0 - 2.0, 4.0 - 2.0, 5.0 * 2.0, 5.0])
