"""What Warp's builtins share when they are called in Python scope (pyscope*.py).

Warp runs a builtin outside kernels by matching the arguments' types exactly
against the builtin's overloads; nothing converts implicitly. A Python float,
int or bool stands for float32, int32 or bool (an int wraps to 32 bits, as
Warp's ctypes call does), a NumPy scalar for its dtype, a Warp scalar, vector,
matrix, quaternion or transformation for its type. ``type_of`` gives that type
and ``no_match`` Warp's error when no overload takes the arguments.

Each implementation computes on NumPy arrays of the dtype (``value_of``: 0-d
for scalars), so every operation rounds to the dtype as kernels do: float16
computes in float32 and rounds (NumPy's float16 arithmetic does the same),
integers wrap. ``math1`` evaluates a function in float64 and rounds it to the
dtype (through float32 for float16, as the kernels' half functions do).
``result`` makes Warp's Python-scope return value: a Python float, int or bool
for float32, int32 and bool, an instance of the Warp scalar type for the other
scalar types (``wp.config.legacy_scalar_return_types``: Python numbers for all),
the value type otherwise.

Semantics are those of the daemon's kernels (runtime/native/warpd/native/*.h),
which follow Warp 1.19; where Warp has undefined behaviour (integer division
by zero) the kernels' defined result is used.
"""

from __future__ import annotations

import numpy as np

from . import config
from . import types as wt
from .types.family import Value
from .types.scalar import _Scalar

F16, F32, F64 = wt.float16, wt.float32, wt.float64
# bfloat16 computes as float32 (its Python-scope dtype); results round to it
# when they become values (the bfloat16 constructor, Value._wp_wrap_).
FLOATS = (F16, wt.bfloat16, F32, F64)
_NATIVE = (wt.int32, wt.float32, wt.bool_)


def builtin(fn=None, *, name=None):
    """Marks fn as the Python-scope version of the kernel builtin `name` (fn's name)."""
    def mark(f):
        # Implementations named after Python builtins carry a trailing underscore (abs_).
        f.__name__ = f.__qualname__ = f._wp_builtin_ = name or f.__name__.rstrip("_")
        return f
    return mark(fn) if fn is not None else mark


# ------------------------------------------------------------ types

def type_of(x):
    """The Warp type a Python-scope argument has for overload matching; None if it has none."""
    if isinstance(x, (np.generic,)):  # first: np.float64 is also a Python float
        return wt.scalar_from_numpy(x.dtype)
    if isinstance(x, bool):
        return wt.bool_
    if isinstance(x, int):
        return wt.int32
    if isinstance(x, float):
        return wt.float32
    if isinstance(x, (_Scalar, Value)):
        return type(x)
    return None


def family(t) -> str:
    """"float", "int", "bool", "vector", "matrix", "quat", "transform" or "" for type t."""
    if t is None:
        return ""
    f = getattr(t, "_wp_family_", "")
    if f == "scalar":
        return t._kind_
    return f


def dtype(t):
    """The scalar type of t's components (t itself for a scalar type)."""
    return t._wp_scalar_type_


def is_float(t) -> bool:
    return t in FLOATS


def is_int(t) -> bool:
    return family(t) == "int"


def is_number(t) -> bool:
    return family(t) in ("int", "float")


def is_vec(t, length=None, float_only=False) -> bool:
    """A vector type (of `length`; of a float dtype) of numbers: no builtin takes bool vectors."""
    return family(t) == "vector" and (length is None or t._length_ == length) and \
        (is_float(t._wp_scalar_type_) if float_only else is_number(t._wp_scalar_type_))


def is_mat(t, shape=None, float_only=False) -> bool:
    """A matrix type (of `shape`; of a float dtype) of numbers: no builtin takes bool matrices."""
    return family(t) == "matrix" and (shape is None or t._shape_ == shape) and \
        (is_float(t._wp_scalar_type_) if float_only else is_number(t._wp_scalar_type_))


def is_square(t, sizes=None) -> bool:
    return is_mat(t) and t._shape_[0] == t._shape_[1] and (sizes is None or t._shape_[0] in sizes)


def is_quat(t) -> bool:
    return family(t) == "quat"


def is_xform(t) -> bool:
    return family(t) == "transform"


def vec_t(n, st):
    return wt.vector(n, st)


def mat_t(r, c, st):
    return wt.matrix((r, c), st)


# ------------------------------------------------------------ errors

def no_match(name, args=(), kwargs=None) -> RuntimeError:
    """Warp's error for a Python-scope call that no overload of `name` takes."""
    values = tuple(args) + tuple((kwargs or {}).values())
    names = ", ".join(type(x).__name__ for x in values)
    return RuntimeError(f"Couldn't find a function '{name}' compatible with the arguments '{names}'")


def kernel_only(name):
    """A stand-in for a builtin that Warp runs only inside kernels: calling it in
    Python scope raises Warp's error; inside a kernel it is the builtin `name`."""
    def call(*args, **kwargs):
        raise RuntimeError(f"Error calling function '{name}', function is undefined")

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"wp.{name}: a kernel builtin; Warp does not run it in Python scope."
    call._wp_builtin_ = name
    return call


# ------------------------------------------------------------ values

def _wrap_int(v: int, st) -> int:
    bits = st._size_ * 8
    v &= (1 << bits) - 1
    if st._signed_ and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def value_of(x, t=None) -> np.ndarray:
    """x (an argument whose type is t) as a NumPy array of its dtype: 0-d for scalars."""
    t = t or type_of(x)
    if isinstance(x, Value):
        return x._v.copy()
    st = dtype(t)
    if isinstance(x, _Scalar):
        x = x.value
    elif isinstance(x, int) and not isinstance(x, bool):
        x = _wrap_int(x, st)  # Warp's ctypes conversion of a Python int
    return np.array(x, dtype=st._np_dtype_)


def result(t, v):
    """Warp's Python-scope value of type t holding v (an array or NumPy scalar)."""
    if family(t) in ("vector", "matrix", "quat", "transform"):
        return t._wp_wrap_(v)
    s = np.asarray(v, dtype=t._np_dtype_)[()]
    if t is wt.bool_:
        return bool(s)
    if t in _NATIVE or getattr(config, "legacy_scalar_return_types", False):
        return s.item()
    return t(s.item())


# ------------------------------------------------------------ arithmetic

def ignore_fp(fn):
    """Runs fn with NumPy's floating-point and integer-overflow warnings off (kernels wrap
    and produce inf/NaN silently)."""
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    run.__name__ = fn.__name__
    run.__qualname__ = fn.__qualname__
    run.__doc__ = fn.__doc__
    run.__wrapped__ = fn
    return run


def round_to(r64, dt) -> np.ndarray:
    """A float64 result rounded to the float dtype dt (float16 through float32)."""
    r64 = np.asarray(r64, dtype=np.float64)
    if dt == np.float64:
        return r64
    r32 = r64.astype(np.float32)
    return r32 if dt == np.float32 else r32.astype(np.float16)


def math1(f64, a) -> np.ndarray:
    """f64 (a function of float64 arrays) of the float array a, rounded to a's dtype."""
    with np.errstate(all="ignore"):
        return round_to(f64(np.asarray(a, dtype=np.float64)), a.dtype)


def math2(f64, a, b) -> np.ndarray:
    with np.errstate(all="ignore"):
        return round_to(f64(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)), a.dtype)


def const(value, like) -> np.ndarray:
    """value as a 0-d array of like's dtype (a kernel's cast<T>(value))."""
    return np.array(value, dtype=np.asarray(like).dtype)


def fmin(a, b):
    """min with C fmin's NaN rule (a NaN operand is missing), as the kernels' float min."""
    return np.fmin(a, b)


def fmax(a, b):
    return np.fmax(a, b)


def seq_sum(terms):
    """terms[0] + terms[1] + ... in order (each addition rounds to the dtype)."""
    acc = terms[0]
    for t in terms[1:]:
        acc = acc + t
    return acc


def dot_of(a, b):
    """a[0]*b[0] + a[1]*b[1] + ... summed left to right (the kernels' order)."""
    p = a * b
    return seq_sum([p[i] for i in range(p.shape[0])])


def int_elementwise(fn, st, *arrays) -> np.ndarray:
    """fn on Python ints, elementwise over integer arrays, wrapped to the dtype st."""
    flat = [np.asarray(a).reshape(-1) for a in arrays]
    shape = np.asarray(arrays[0]).shape
    out = [_wrap_int(fn(*(int(v) for v in vals)), st) for vals in zip(*flat)]
    return np.array(out, dtype=st._np_dtype_).reshape(shape)
