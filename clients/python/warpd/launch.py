"""``wp.launch``: check arguments against the kernel's signature and queue the launch.

The signature is the daemon's (KernelInfo from LoadModule), so the client
checks exactly what the daemon will run: the argument count; for arrays the
dtype, ndim and device; for values Warp's strictness (an int parameter
rejects a float; a float parameter accepts ints; a vec3f takes a vec3f or a
sequence of 3 numbers, not a vec3d; a struct only an instance of its
@wp.struct). Values are packed by their type (types.pack: little-endian, C
layout, structs with their padding) and must come out at the size the daemon
gives the parameter. Nothing is sent until a sync point (see stream.py).

``record_cmd=True`` returns a ``Launch`` (checked and packed once, queued
again by ``Launch.launch()``). Launch options of Warp that warpd does not
implement (adjoint launches, streams, CUDA block sizes) raise
NotImplementedError naming the option; none is silently ignored.
"""

from __future__ import annotations

import numbers

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
        self.want = wt.describe(info.type)
        if self.which == "array":
            self.ndim = info.type.array.ndim
            self.elem_type = wt.from_typeref(info.type.array.dtype)
            self.type = None
            return
        self.type = wt.from_typeref(info.type)
        if self.type is None:
            what = ("a struct this process did not define" if self.which == "struct_type"
                    else "a type this client does not know")
            raise TypeError(f"kernel '{kernel_name}' parameter '{self.name}' has {what} "
                            f"({self.want})")
        if wt.type_size(self.type) != self.size:
            raise RuntimeError(f"kernel '{kernel_name}' parameter '{self.name}' ({self.want}): the "
                               f"daemon lays it out in {self.size} bytes, this client in "
                               f"{wt.type_size(self.type)}")

    def where(self) -> str:
        return f"argument '{self.name}' of kernel '{self.kernel}'"

    def pack(self, value, device):
        if self.which == "array":
            return True, self._pack_array(value, device)
        if isinstance(value, array):
            raise TypeError(f"{self.where()} expects {self.want}, got an array")
        try:
            return False, wt.pack(self.type, value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.where()} expects {self.want}, {e}") from None

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


def _unsupported(kernel, adj_inputs, adj_outputs, stream, adjoint, record_cmd, max_blocks,
                 block_dim):
    """NotImplementedError for the first launch option warpd does not implement."""
    why = None
    if adjoint:
        why = "adjoint=True (adjoint launches)"
    elif adj_inputs is not None and len(adj_inputs) > 0:
        why = "adj_inputs (adjoint launches)"
    elif adj_outputs is not None and len(adj_outputs) > 0:
        why = "adj_outputs (adjoint launches)"
    elif stream is not None:
        why = "stream= (launches run on the session's stream for the device)"
    elif max_blocks:
        why = "max_blocks= (a CUDA grid limit)"
    elif block_dim is not None:
        why = "block_dim= (a CUDA block size)"
    if why:
        raise NotImplementedError(f"wp.launch of kernel '{kernel.key}': {why} is not supported "
                                  f"by warpd yet")


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=None):
    """Queues a launch of `kernel` over a 1-4-D grid `dim` on `device`.

    Arguments are checked here (TypeError/ValueError naming the kernel and the
    parameter); faults while running are raised at the next sync point.
    `record_tape` matters only while a wp.Tape records, and warpd has no Tape
    yet, so both values mean the same here; the other options of Warp's launch
    raise NotImplementedError unless left at their defaults.
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(f"wp.launch expects a @wp.kernel, got {type(kernel).__name__}")
    _unsupported(kernel, adj_inputs, adj_outputs, stream, adjoint, record_cmd, max_blocks,
                 block_dim)
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
    if record_cmd:
        return Launch(kernel, rt, dev, plan, dims, args, packed)
    if 0 in dims:
        return
    with rt.lock:
        _fill(rt.stream(dev).add(keep=args).launch, plan, dims, packed)


def _fill(la, plan, dims, packed):
    la.module = plan.module
    la.kernel = plan.name
    la.dim.extend(dims)
    for is_array, v in packed:
        arg = la.args.add()
        if is_array:
            arg.array = v
        else:
            arg.bytes = v


class Launch:
    """A recorded launch (``wp.launch(..., record_cmd=True)``): checked and
    packed once; ``launch()`` queues it again without re-checking anything,
    and ``set_param_*``/``set_dim`` change one part of it (checked like the
    original argument)."""

    def __init__(self, kernel, rt, device, plan, dims, args, packed):
        self.kernel = kernel
        self.device = device
        self._rt = rt
        self._session = rt.session
        self._plan = plan
        self._dims = tuple(dims)
        self._args = list(args)  # keeps the arrays alive while recorded
        self._packed = list(packed)
        self._template = None

    def _command(self):
        if self._template is None:
            from .v1 import runtime_pb2

            self._template = runtime_pb2.Command()
            _fill(self._template.launch, self._plan, self._dims, self._packed)
        return self._template

    def launch(self, stream=None):
        """Queues the recorded launch on its device's stream."""
        if stream is not None:
            raise NotImplementedError("Launch.launch: stream= is not supported by warpd yet")
        if self._rt.session != self._session:
            raise RuntimeError(f"this recorded launch of kernel '{self.kernel.key}' belongs to an "
                               f"earlier session of the daemon; record it again")
        if 0 in self._dims:
            return
        cmd = self._command()
        with self._rt.lock:
            self._rt.stream(self.device).add(keep=self._args).CopyFrom(cmd)

    def set_dim(self, dim):
        dims = _dims(self.kernel, dim)
        if self._plan.tid_ndim > 1 and self._plan.tid_ndim != len(dims):
            raise ValueError(f"kernel '{self.kernel.key}' unpacks wp.tid() into {self._plan.tid_ndim} "
                             f"indices, but was given {len(dims)}-D dim {dims}")
        self._dims = dims
        self._template = None

    def set_param_at_index(self, index: int, value, adjoint: bool = False):
        if adjoint:
            raise NotImplementedError("Launch.set_param_at_index: adjoint parameters are not supported by warpd yet")
        params = self._plan.params
        if not -len(params) <= index < len(params):
            raise IndexError(f"kernel '{self.kernel.key}' has {len(params)} parameters, no index {index}")
        self._packed[index] = params[index].pack(value, self.device)
        self._args[index] = value
        self._template = None

    def set_param_by_name(self, name: str, value, adjoint: bool = False):
        for i, p in enumerate(self._plan.params):
            if p.name == name:
                self.set_param_at_index(i, value, adjoint)
                return
        raise ValueError(f"Argument '{name}' not found in kernel '{self.kernel.key}'")

    def set_params(self, values):
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    def set_param_at_index_from_ctype(self, index, value, adjoint=False):
        raise NotImplementedError("Launch: ctypes parameters are not supported by warpd (pass the value)")

    def set_param_by_name_from_ctype(self, name, value):
        raise NotImplementedError("Launch: ctypes parameters are not supported by warpd (pass the value)")

    def set_params_from_ctypes(self, values):
        raise NotImplementedError("Launch: ctypes parameters are not supported by warpd (pass the values)")
