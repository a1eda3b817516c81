"""``wp.launch``: check arguments against the kernel's signature and queue the launch.

The signature is the daemon's (KernelInfo from LoadModule), so the client
checks exactly what the daemon will run: the argument count; for arrays the
dtype, ndim and device; for scalars Warp's strictness (an int parameter
rejects a float; a float parameter accepts ints); for vectors a wp.vecN or a
sequence of N numbers. Scalars and vectors are packed little-endian at the
parameter's size. Nothing is sent until a sync point (see stream.py).
"""

from __future__ import annotations

import numbers
import struct

import numpy as np

from . import types as wt
from .array import array
from .context import runtime
from .kernel import Kernel


class _Param:
    """Checks and packs one argument. ``pack`` returns (is_array, handle or bytes)."""

    def __init__(self, kernel_name: str, index: int, info):
        self.kernel = kernel_name
        self.name = info.name or f"#{index}"
        self.typeref = info.type
        self.size = info.size
        self.which = info.type.WhichOneof("kind")
        self.type = wt.from_typeref(info.type)
        if self.which == "array":
            self.ndim = info.type.array.ndim
            self.elem_type = wt.from_typeref(info.type.array.dtype)
            self.want = wt.describe(info.type)
        elif self.type is None:
            raise TypeError(f"kernel '{kernel_name}' parameter '{self.name}' has a type this client "
                            f"does not know ({info.type})")
        else:
            st = wt.type_scalar(self.type)
            self.scalar = st
            self.length = wt.type_length(self.type)
            self.fmt = "<" + st._fmt_ * self.length
            packed = struct.calcsize(self.fmt)
            self.pad = b"\0" * max(0, self.size - packed)

    def where(self) -> str:
        return f"argument '{self.name}' of kernel '{self.kernel}'"

    def pack(self, value, device):
        if self.which == "array":
            return True, self._pack_array(value, device)
        if self.which == "vector":
            comps = self._vector_components(value)
        else:
            comps = [self._component(value)]
        try:
            data = struct.pack(self.fmt, *comps)
        except struct.error as e:
            raise ValueError(f"{self.where()}: {value!r} does not fit "
                             f"{wt.type_name(self.type)} ({e})") from None
        return False, data + self.pad

    def _pack_array(self, value, device):
        want = self.want
        if not isinstance(value, array) or value.handle is None:
            got = "a type annotation" if isinstance(value, array) else type(value).__name__
            raise TypeError(f"{self.where()} expects {want}, got {got}")
        if value.ndim != self.ndim:
            raise TypeError(f"{self.where()} expects a {self.ndim}-D array ({want}), got a "
                            f"{value.ndim}-D array of shape {value.shape}")
        if value.dtype is not self.elem_type:
            raise TypeError(f"{self.where()} expects {want}, got an array of "
                            f"dtype={wt.type_name(value.dtype)}")
        if value.device != device:
            raise ValueError(f"{self.where()} is an array on device \"{value.device}\", but the "
                             f"kernel is launched on \"{device}\"")
        return value.handle

    def _component(self, v):
        st = self.scalar
        kind = st._kind_
        if isinstance(v, wt._Scalar):
            if kind == "int" and v._kind_ == "float":
                raise TypeError(f"{self.where()} expects {st._wp_name_}, got {v._wp_name_} "
                                f"(Warp does not convert implicitly; use int(x))")
            v = v.value
        if kind == "float":
            if isinstance(v, (numbers.Real, np.bool_)) and not isinstance(v, complex):
                return float(v)
        elif kind == "int":
            if isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_)):
                v = int(v)
                lo, hi = _int_range(st)
                if not lo <= v <= hi:
                    raise ValueError(f"{self.where()}: {v} is out of range for {st._wp_name_}")
                return v
            if isinstance(v, bool):
                return int(v)
            if isinstance(v, (numbers.Real, np.floating)):
                raise TypeError(f"{self.where()} expects {st._wp_name_}, got "
                                f"{type(v).__name__} {v!r} (Warp does not convert implicitly; "
                                f"use int(x))")
        else:  # bool
            if isinstance(v, (bool, np.bool_, numbers.Integral)):
                return bool(v)
        raise TypeError(f"{self.where()} expects {st._wp_name_}, got {type(v).__name__} {v!r}")

    def _vector_components(self, v):
        t = self.type
        if isinstance(v, wt._Vector):
            if type(v) is not t and (v._length_ != t._length_ or
                                     v._wp_scalar_type_ is not t._wp_scalar_type_):
                raise TypeError(f"{self.where()} expects {wt.type_name(t)}, got "
                                f"{wt.type_name(type(v))}")
            return [self._component(c) for c in v]
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, (list, tuple)):
            if len(v) != t._length_:
                raise TypeError(f"{self.where()} expects {wt.type_name(t)} ({t._length_} "
                                f"components), got a sequence of {len(v)}")
            return [self._component(c) for c in v]
        raise TypeError(f"{self.where()} expects {wt.type_name(t)}, got {type(v).__name__}")


def _int_range(st):
    bits = st._size_ * 8
    if st._signed_:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


class LaunchPlan:
    """What a launch of one kernel on one device needs, made once per module load."""

    def __init__(self, kernel: Kernel, loaded, info):
        self.module = loaded.handle
        self.name = info.name
        self.tid_ndim = info.tid_ndim
        self.params = [_Param(kernel.key, i, p) for i, p in enumerate(info.params)]


def _plan(kernel: Kernel, rt, device) -> LaunchPlan:
    key = (id(rt), device.name)
    cached = kernel._plans.get(key)
    if cached is not None and cached[0] == kernel.module.version and cached[1] is rt:
        return cached[2]
    version = kernel.module.version
    loaded = kernel.module.load(rt, device)
    info = loaded.kernels.get(kernel.ir_name)
    if info is None:
        raise RuntimeError(f"the daemon loaded module '{kernel.module.name}' without kernel "
                           f"'{kernel.ir_name}' (it returned: {', '.join(loaded.kernels) or 'none'})")
    plan = LaunchPlan(kernel, loaded, info)
    kernel._plans[key] = (version, rt, plan)
    return plan


def _dims(kernel, dim) -> tuple:
    if isinstance(dim, (numbers.Integral, np.integer)):
        dims = (int(dim),)
    else:
        try:
            if isinstance(dim, (str, bytes)):
                raise TypeError
            dims = tuple(int(d) for d in dim)
        except (TypeError, ValueError):
            raise TypeError(f"launch of kernel '{kernel.key}': dim must be an int or a tuple of "
                            f"1 to 4 ints, got {dim!r}") from None
    if not 1 <= len(dims) <= 4:
        raise ValueError(f"launch of kernel '{kernel.key}': dim must have 1 to 4 dimensions, "
                         f"got {len(dims)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"launch of kernel '{kernel.key}': negative launch dimension in {dims}")
    return dims


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=256):
    """Queues a launch of `kernel` over a 1-4-D grid `dim` on `device`.

    Arguments are checked here (TypeError/ValueError naming the kernel and the
    parameter); faults while running are raised at the next sync point.
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(f"wp.launch expects a @wp.kernel, got {type(kernel).__name__}")
    if adjoint:
        raise NotImplementedError("adjoint launches are not supported by warpd yet")
    rt = runtime()
    dev = rt.device(device)
    dims = _dims(kernel, dim)
    plan = _plan(kernel, rt, dev)
    args = list(inputs) + list(outputs)
    params = plan.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"kernel '{kernel.key}' takes {len(params)} arguments ({names}), "
                        f"but {len(args)} were given")
    if plan.tid_ndim > 1 and plan.tid_ndim != len(dims):
        raise ValueError(f"kernel '{kernel.key}' unpacks wp.tid() into {plan.tid_ndim} indices, "
                         f"but was launched with {len(dims)}-D dim {dims}")
    packed = [p.pack(a, dev) for p, a in zip(params, args)]
    if 0 in dims:
        return
    with rt.lock:
        cmd = rt.stream(dev).add()
        la = cmd.launch
        la.module = plan.module
        la.kernel = plan.name
        la.dim.extend(dims)
        for is_array, v in packed:
            arg = la.args.add()
            if is_array:
                arg.array = v
            else:
                arg.bytes = v
