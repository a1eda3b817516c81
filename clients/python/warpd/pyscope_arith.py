"""Warp's operator builtins in Python scope: wp.add, wp.sub, wp.mul, wp.div, wp.mod,
wp.neg, wp.pos, wp.cw_mul, wp.cw_div, wp.lerp and the bitwise ones (bit_and,
bit_or, bit_xor, lshift, rshift, invert).

The overloads are the kernels' (docs/builtins.md): two values of one type,
or a value and a scalar of its dtype for scaling; wp.mul also multiplies
matrices, matrices and vectors, quaternions, and composes transformations.
Integer division truncates toward zero and modulo takes the dividend's sign
(C semantics); both give 0 for a zero divisor, as the kernels define it. Shift
amounts are taken modulo the bit width.
"""

from __future__ import annotations

import numpy as np

from .pyscope_core import (builtin, const, dtype, family, ignore_fp, int_elementwise, is_float,
                           is_int, is_mat, is_number, is_quat, is_vec, is_xform, mat_t, no_match,
                           result, type_of, value_of, vec_t)
from .pyscope_linalg import matmul_mm, matmul_mv, matmul_vm
from .pyscope_quat import qmul, xmul
from .pyscope_scalar import int_div, int_mod


def _numeric_value(t) -> bool:
    """A scalar, vector or matrix type of integer or float dtype."""
    return is_number(t) or is_vec(t) or is_mat(t)


def _float_value(t) -> bool:
    """A quaternion or transformation type (their dtype is a float)."""
    return is_quat(t) or is_xform(t)


def _same_type(name, a, b, ok):
    t = type_of(a)
    if not ok(t) or type_of(b) is not t:
        raise no_match(name, (a, b))
    return t, value_of(a, t), value_of(b, t)


def _scaled(t, s_type):
    """Whether (value of type t, scalar of type s_type) is a scaling pair."""
    return family(t) in ("vector", "matrix", "quat", "transform") and s_type is dtype(t)


@builtin
@ignore_fp
def add(a, b):
    """a + b of two scalars, vectors, matrices, quaternions or transformations of one type."""
    t, x, y = _same_type("add", a, b, lambda t: _numeric_value(t) or _float_value(t))
    return result(t, x + y)


@builtin
@ignore_fp
def sub(a, b):
    """a - b of two scalars, vectors, matrices, quaternions or transformations of one type."""
    t, x, y = _same_type("sub", a, b, lambda t: _numeric_value(t) or _float_value(t))
    return result(t, x - y)


@builtin
@ignore_fp
def mul(a, b):
    """a * b: scalars; a value scaled by a scalar of its dtype (either side); matrix times
    matrix, matrix times vector, vector times matrix; the quaternion product; transformation
    composition."""
    ta, tb = type_of(a), type_of(b)
    if ta is not None and tb is not None:
        if ta is tb and (is_number(ta) or is_quat(ta)):
            x, y = value_of(a, ta), value_of(b, tb)
            return result(ta, qmul(x, y) if is_quat(ta) else x * y)
        if ta is tb and is_xform(ta):
            return result(ta, xmul(value_of(a, ta), value_of(b, tb)))
        if _scaled(ta, tb):
            return result(ta, value_of(a, ta) * value_of(b, tb))
        if _scaled(tb, ta):
            return result(tb, value_of(a, ta) * value_of(b, tb))
        if (is_mat(ta) or is_mat(tb)) and family(ta) in ("vector", "matrix") and \
                family(tb) in ("vector", "matrix") and dtype(ta) is dtype(tb):
            x, y = value_of(a, ta), value_of(b, tb)
            st = dtype(ta)
            if is_mat(ta) and is_mat(tb) and ta._shape_[1] == tb._shape_[0]:
                return result(mat_t(ta._shape_[0], tb._shape_[1], st), matmul_mm(x, y))
            if is_mat(ta) and is_vec(tb) and ta._shape_[1] == tb._length_:
                return result(vec_t(ta._shape_[0], st), matmul_mv(x, y))
            if is_vec(ta) and is_mat(tb) and ta._length_ == tb._shape_[0]:
                return result(vec_t(tb._shape_[1], st), matmul_vm(x, y))
    raise no_match("mul", (a, b))


def _divide(x, y, st):
    if is_int(st):
        return int_elementwise(int_div, st, *np.broadcast_arrays(x, y))
    return x / y


@builtin
@ignore_fp
def div(a, b):
    """a / b of two scalars, or of a vector, matrix or quaternion and a scalar of its dtype
    (either side: a scalar divided by each component). Integers truncate toward zero."""
    ta, tb = type_of(a), type_of(b)
    if ta is not None and ta is tb and is_number(ta):
        return result(ta, _divide(value_of(a, ta), value_of(b, tb), ta))
    for t, s in ((ta, tb), (tb, ta)):
        if t is not None and family(t) in ("vector", "matrix", "quat") and s is dtype(t):
            return result(t, _divide(value_of(a, ta), value_of(b, tb), dtype(t)))
    raise no_match("div", (a, b))


@builtin
@ignore_fp
def mod(a, b):
    """The remainder of a / b (C's fmod for floats; the dividend's sign for integers) of two
    scalars or, componentwise, two vectors of one type."""
    t, x, y = _same_type("mod", a, b, lambda t: is_number(t) or is_vec(t))
    st = dtype(t)
    if is_float(st):
        return result(t, np.fmod(x, y))
    return result(t, int_elementwise(int_mod, st, x, y))


@builtin
@ignore_fp
def neg(x):
    """-x of a scalar, vector, quaternion or matrix."""
    t = type_of(x)
    if not (_numeric_value(t) or is_quat(t)):
        raise no_match("neg", (x,))
    return result(t, -value_of(x, t))


@builtin
def pos(x):
    """+x (the value itself) of a scalar, vector, quaternion or matrix."""
    t = type_of(x)
    if not (_numeric_value(t) or is_quat(t)):
        raise no_match("pos", (x,))
    return result(t, value_of(x, t))


@builtin
@ignore_fp
def cw_mul(a, b):
    """The componentwise product of two vectors or matrices of one type."""
    t, x, y = _same_type("cw_mul", a, b, lambda t: is_vec(t) or is_mat(t))
    return result(t, x * y)


@builtin
@ignore_fp
def cw_div(a, b):
    """The componentwise quotient of two vectors or matrices of one type."""
    t, x, y = _same_type("cw_div", a, b, lambda t: is_vec(t) or is_mat(t))
    return result(t, _divide(x, y, dtype(t)))


@builtin
@ignore_fp
def lerp(a, b, t):
    """a (1 - t) + b t of two float values of one type (scalar, vector, matrix, quaternion,
    transformation) and a scalar t of their dtype."""
    ta = type_of(a)
    if ta is None or type_of(b) is not ta or not is_float(dtype(ta)) or type_of(t) is not dtype(ta):
        raise no_match("lerp", (a, b, t))
    x, y, s = value_of(a, ta), value_of(b, ta), value_of(t, dtype(ta))
    return result(ta, x * (const(1, s) - s) + y * s)


def _int_family(t) -> bool:
    return family(t) in ("int", "vector", "matrix") and is_int(dtype(t))


def _bitwise(name, op):
    def fn(a, b):
        t, x, y = _same_type(name, a, b, _int_family)
        return result(t, op(x, y, dtype(t)))

    fn.__doc__ = f"wp.{name}(a, b) of two integer scalars, vectors or matrices of one type."
    return builtin(ignore_fp(fn), name=name)


def _shift(left):
    def op(x, y, st):
        bits = 8 * st._size_

        def one(a, b):
            return (a << (b & (bits - 1))) if left else (a >> (b & (bits - 1)))
        return int_elementwise(one, st, x, y)
    return op


bit_and = _bitwise("bit_and", lambda x, y, st: x & y)
bit_or = _bitwise("bit_or", lambda x, y, st: x | y)
bit_xor = _bitwise("bit_xor", lambda x, y, st: x ^ y)
lshift = _bitwise("lshift", _shift(True))
rshift = _bitwise("rshift", _shift(False))


@builtin
def invert(a):
    """~a (bitwise not) of an integer scalar, vector or matrix."""
    t = type_of(a)
    if not _int_family(t):
        raise no_match("invert", (a,))
    return result(t, ~value_of(a, t))


__all__ = ["add", "sub", "mul", "div", "mod", "neg", "pos", "cw_mul", "cw_div", "lerp", "bit_and",
           "bit_or", "bit_xor", "lshift", "rshift", "invert"]
