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
again by ``Launch.launch()``). ``adjoint=True`` runs the kernel's adjoint
(its backward module is loaded the first time; see tape.py), with
``adj_inputs``/``adj_outputs`` lined up with inputs and outputs (None: the
argument's own gradient, as in Warp). A launch while a ``wp.Tape`` records
is recorded on it (unless ``record_tape=False``). Launch options of Warp
that warpd does not implement (streams, CUDA block sizes) raise
NotImplementedError naming the option; none is silently ignored.
"""

from __future__ import annotations

import numbers
import struct
import warnings

import numpy as np

from . import context, wire
from . import types as wt
from .array import array
from .context import runtime
from . import tape as _tape
from .kernel import Kernel
from .types.scalar import is_number
from .v1 import runtime_pb2

# Launch.args entries of array handles (wire.arg_array), by handle; cleared
# when it grows past _MAX_CACHED (handles are random, so a stale entry is
# still right: the bytes depend only on the handle).
_array_args: dict = {}
_MAX_CACHED = 4096
# Launch.dim fields by the `dim` a launch gave (an int or a tuple), per plan.
_EMPTY = ()
# The errors a struct packer raises for a value that it cannot pack; the
# checked path then decides (and words the error) as before.
_PACK_ERRORS = (struct.error, OverflowError, TypeError, ValueError)


def _array_arg(handle: int) -> bytes:
    entry = _array_args.get(handle)
    if entry is None:
        if len(_array_args) >= _MAX_CACHED:
            _array_args.clear()
        entry = _array_args[handle] = wire.arg_array(handle)
    return entry


class _Param:
    """Checks and packs one argument. ``pack`` returns (is_array, handle or bytes);
    ``encode`` returns the argument's Launch.args entry (wire.py).

    ``encode`` first tries what is known to give the same bytes as ``pack``
    without its checks: for an array, one of this parameter's dtype and
    ndim on the launch's device; for a float32/float64/integer parameter, a
    Python float or int packed by a precompiled ``struct.Struct`` (a value it
    cannot pack, such as an out-of-range int, goes through ``pack``, which
    raises the same error as before). Everything else goes through ``pack``.
    """

    def __init__(self, kernel_name: str, index: int, info):
        self.kernel = kernel_name
        self.name = info.name or f"#{index}"
        self.typeref = info.type
        self.size = info.size
        self.access = getattr(info, "access", 0)  # arrays: read / overwritten / accumulated bits (ParamInfo.access)
        self.which = info.type.WhichOneof("kind")
        self.want = wt.describe(info.type)
        self._fast = {}  # value class -> struct packer (see encode)
        if self.which == "array" and info.type.array.indexed:
            # Sent as bytes: the handles of the data and index arrays.
            self.which = "indexedarray"
            self.ndim = info.type.array.ndim
            self.elem_type = wt.from_typeref(info.type.array.dtype)
            self.type = None
            self._prefix = wire.arg_bytes_prefix(self.size)
            self.spec = (False, None, 0, self._prefix, {}, self)
            return
        if self.which == "array":
            self.ndim = info.type.array.ndim
            self.elem_type = wt.from_typeref(info.type.array.dtype)
            self.type = None
            self.encode = self._encode_array
            self.spec = (True, self.elem_type, self.ndim, None, None, self)
            return
        self.type = wt.from_typeref(info.type)
        if self.type is None:
            what = ("a struct this process did not define" if self.which == "struct_type"
                    else "a type this client does not know")
            raise TypeError(f"kernel '{kernel_name}' parameter '{self.name}' has {what} "
                            f"({self.want})")
        if wt.type_size_in_bytes(self.type) != self.size:
            raise RuntimeError(f"kernel '{kernel_name}' parameter '{self.name}' ({self.want}): the "
                               f"daemon lays it out in {self.size} bytes, this client in "
                               f"{wt.type_size_in_bytes(self.type)}")
        self._prefix = wire.arg_bytes_prefix(self.size)
        fmt = getattr(self.type, "_fmt_", "") if isinstance(self.type, type) and issubclass(
            self.type, wt._Scalar) else ""
        kind = getattr(self.type, "_kind_", "")
        if fmt and struct.calcsize("<" + fmt) == self.size:
            packer = struct.Struct("<" + fmt).pack
            if kind == "float" and fmt in ("f", "d"):  # not float16: numpy rounds it
                self._fast = {float: packer, int: packer}
            elif kind == "int":
                self._fast = {int: packer}
            elif kind == "bool":
                self._fast = {bool: packer}
        # What wp.launch's loop reads to run encode's fast paths inline.
        self.spec = (False, None, 0, self._prefix, self._fast, self)

    def encode(self, value, device) -> bytes:
        packer = self._fast.get(value.__class__)
        if packer is not None:
            try:
                return self._prefix + packer(value)
            except _PACK_ERRORS:
                pass
        return wire.arg_bytes(self.pack(value, device)[1])

    def _encode_array(self, value, device) -> bytes:
        if (value.__class__ is array and value.device is device and value.dtype is self.elem_type
                and value.ndim == self.ndim and value.handle is not None):
            return _array_arg(value.handle)
        return _array_arg(self._pack_array(value, device))

    def where(self) -> str:
        return f"argument '{self.name}' of kernel '{self.kernel}'"

    def pack(self, value, device):
        if self.which == "array":
            return True, self._pack_array(value, device)
        if self.which == "indexedarray":
            return False, self._pack_indexed(value, device)
        if isinstance(value, array):
            raise TypeError(f"{self.where()} expects {self.want}, got an array")
        if self.which == "struct_type" and value is None:
            raise RuntimeError(f"Error launching kernel '{self.kernel}', argument '{self.name}' expects "
                               f"{self.want} but got None")
        if isinstance(self.type, type) and issubclass(self.type, wt.Value):
            value = self._composite(value)
        try:
            return False, wt.pack(self.type, value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.where()} expects {self.want}, {e}") from None

    def _composite(self, value):
        """A vector, matrix, quaternion or transform argument, as Warp 1.19 converts it:
        a NumPy number or a bool fills every component (deprecated: a warning), another
        single value is refused, None is Warp's ValueError; sequences and values go on to
        wt.pack's checks."""
        if value is None:
            raise ValueError(f"Failed to convert argument for param {self.name} to {self.want}")
        if isinstance(value, (bool, np.bool_, wt.bool_, np.integer, np.floating)):
            warnings.warn(f"Implicit conversion from a value of type `{type(value).__name__}` to the composite "
                          f"type `{self.want}` for kernel parameter '{self.name}' is deprecated. Construct the "
                          f"value explicitly, e.g.: `{self.want}(...)`.", DeprecationWarning, stacklevel=5)
            return self.type(float(value) if isinstance(value, np.floating) else int(value))
        if is_number(value):
            raise RuntimeError(f"Error launching kernel '{self.kernel}', argument '{self.name}' expects {self.want} "
                               f"but got a single value of type {type(value).__name__}. Construct the value "
                               f"explicitly, e.g.: {self.want}(...).")
        return value

    def _pack_indexed(self, value, device) -> bytes:
        from .indexedarray import indexedarray

        want = self.want
        if value is None:  # an indexedarray without data, as None for an array
            return bytes(self.size)
        if not isinstance(value, indexedarray) or value.data is None:
            got = "a type annotation" if isinstance(value, indexedarray) else type(value).__name__
            raise TypeError(f"{self.where()} expects {want}, got {got}")
        if value.ndim != self.ndim or value.dtype is not self.elem_type:
            raise TypeError(f"{self.where()} expects {want}, got an indexedarray of "
                            f"dtype={wt.type_name(value.dtype)}, ndim={value.ndim}")
        return value._wp_slot_(device).tobytes()

    def _pack_array(self, value, device):
        want = self.want
        if value is None:  # as in Warp: an array without data (`if a:` is false)
            return 0
        if isinstance(value, np.ndarray):
            raise _HostArray(self.where())  # launch() stages it (see _launch_host_arrays)
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


class _HostArray(TypeError):
    """A NumPy array was passed for an array parameter: wp.launch() stages it; anywhere
    else (a recorded launch, set_param_*) it is this TypeError."""

    def __init__(self, where=""):
        super().__init__(f"{where} got a NumPy array: only wp.launch() takes NumPy arrays for "
                         f"array parameters (on the CPU); pass a wp.array elsewhere")


def _stage_host_array(param, value, device):
    """A daemon array holding a copy of `value` (a NumPy array passed for the array
    parameter `param`) viewed as Warp views its memory (__array_interface__): the
    data's scalar type must be the dtype's, and a vector or matrix dtype takes the
    trailing dimensions, which must be the dtype's shape."""
    dtype = param.elem_type
    where = f"Error launching kernel '{param.kernel}', argument '{param.name}'"
    if not device.is_cpu:
        raise RuntimeError(f"{where} expects an array of type {param.want}, but passed value has type "
                           f"ndarray (as in Warp, only CPU launches take NumPy arrays)")
    st = wt.scalar_from_numpy(value.dtype)
    scalar = getattr(dtype, "_wp_scalar_type_", None)
    eshape = tuple(getattr(dtype, "_shape_", ()))
    if st is None or scalar is None or st is not scalar:
        raise RuntimeError(f"Could not convert array interface with typestr='{value.dtype.str}' to Warp "
                           f"array with dtype={wt.type_name(dtype)}")
    if eshape and (len(eshape) > value.ndim or tuple(value.shape[value.ndim - len(eshape):]) != eshape):
        raise RuntimeError(f"Could not convert array interface with shape {value.shape} to Warp array with "
                           f"dtype={wt.type_name(dtype)}, ensure that source inner shape is {eshape}")
    outer = value.shape[:value.ndim - len(eshape)] or (1,)
    if len(outer) != param.ndim:
        raise TypeError(f"{param.where()} expects a {param.ndim}-D array ({param.want}), got a NumPy "
                        f"array of shape {value.shape}")
    return array(value.reshape(outer + eshape), dtype=dtype, device=device)


def _launch_host_arrays(kernel, dim, args, plan, dev, record_tape):
    """wp.launch with NumPy arrays for array parameters, as Warp runs it on the CPU
    (the kernel reads and writes the NumPy memory): each is copied into a daemon
    array, the launch runs and is waited for, and each writable NumPy array gets
    the array's contents back. Costs a round trip and two copies per array."""
    args = list(args)
    staged = []
    for i, (param, a) in enumerate(zip(plan.params, args)):
        if param.which == "array" and isinstance(a, np.ndarray):
            tmp = _stage_host_array(param, a, dev)
            staged.append((a, tmp))
            args[i] = tmp
    launch(kernel, dim, inputs=args, device=dev, record_tape=record_tape)
    for a, tmp in staged:
        if a.flags.writeable:
            np.copyto(a, tmp.numpy().reshape(a.shape))


class LaunchPlan:
    """What a launch of one kernel on one device needs, made once per module load."""

    def __init__(self, kernel: Kernel, loaded, info):
        self.module = loaded.handle
        self.name = info.name
        self.tid_ndim = info.tid_ndim
        self.params = [_Param(kernel.key, i, p) for i, p in enumerate(info.params)]
        self.specs = tuple(p.spec for p in self.params)
        self.header = wire.launch_header(self.module, self.name)
        # Launch.dim fields: int_dims by an int `dim` (read inline by
        # wp.launch), _dims by a tuple of ints (see dims()).
        self.int_dims = {}
        self._dims = {}

    def dims(self, kernel, dim):
        """(dims tuple, its Launch.dim field) for a launch's `dim`, checked by _dims."""
        cls = dim.__class__
        # Only ints and tuples of ints are cached: other numbers can equal them.
        ints = cls is int or (cls is tuple and all(d.__class__ is int for d in dim))
        if ints:
            cache = self.int_dims if cls is int else self._dims
            hit = cache.get(dim)
            if hit is not None:
                return hit
        dims = _dims(kernel, dim)
        out = (dims, wire.launch_dims(dims))
        if ints:
            if len(cache) >= 256:
                cache.clear()
            cache[dim] = out
        return out


def _plan(kernel: Kernel, rt, device, backward: bool = False) -> LaunchPlan:
    """The plan of `kernel` on `device`; `backward`: of its module with the backward
    pass (adjoint launches), loaded apart the first time one is needed."""
    key = (id(rt), device.alias, backward)
    cached = kernel._plans.get(key)
    version = kernel.module.version
    if cached is not None and cached[0] == version and cached[1] is rt:
        if not backward:
            kernel._last_plan = (rt, device, version, cached[2])
        return cached[2]
    loaded = kernel.module.load(rt, device, kernel.ir_name, backward=kernel if backward else None)
    info = loaded.kernels.get(kernel.ir_name)
    if info is None:
        # Left out of the module: by the daemon, or by translation (a module of the same
        # IR loaded before this kernel existed knows nothing of it).
        e = loaded.failed.get(kernel.ir_name) or kernel.module.translation_failures().get(kernel.ir_name)
        if e is not None:
            raise e.fresh()
    if info is None:
        raise RuntimeError(f"the daemon loaded module '{kernel.module.name}' without kernel "
                           f"'{kernel.ir_name}' (it returned: {', '.join(loaded.kernels) or 'none'})")
    plan = LaunchPlan(kernel, loaded, info)
    kernel._plans[key] = (version, rt, plan)
    if not backward:
        kernel._last_plan = (rt, device, version, plan)
    return plan


def _launch_adjoint(kernel, dim, args, adj_args, dev, rt, target=None):
    """Queues the adjoint of a launch (Warp's adjoint=True): the kernel's backward
    pass, with `adj_args` (one per parameter: gradient arrays, None for none, or
    values; missing trailing ones are None) as the adjoints of `args`."""
    if kernel.options.get("enable_backward") is False:
        raise RuntimeError(f"kernel '{kernel.key}' was defined with enable_backward=False: it has no adjoint")
    dims = _dims(kernel, dim)
    plan = _plan(kernel, rt, dev, backward=True)
    custom_error = kernel.module.adjoint_error(kernel)
    if custom_error is not None:
        raise custom_error.fresh()
    params = plan.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"kernel '{kernel.key}' takes {len(params)} arguments ({names}), "
                        f"but {len(args)} were given")
    if len(adj_args) > len(params):
        raise TypeError(f"adjoint launch of kernel '{kernel.key}': {len(adj_args)} adjoints for "
                        f"{len(params)} parameters")
    adj_args = list(adj_args) + [None] * (len(params) - len(adj_args))
    msg = runtime_pb2.Launch(module=plan.module, kernel=plan.name, dim=list(dims), adjoint=True)
    for p, a in zip(params, args):
        is_array, v = p.pack(a, dev)
        msg.args.add(array=v) if is_array else msg.args.add(bytes=v)
    for i, (p, a) in enumerate(zip(params, adj_args)):
        if a is None:
            # As in Warp: an array without an adjoint given uses its own gradient.
            a = _tape.adjoint_of(args[i])
            adj_args[i] = a
        # Stores consume an argument's own gradient unless it retains it (Warp 1.19).
        own = a is not None and isinstance(args[i], array) and a is args[i].grad
        msg.adj_consume.append(own and not args[i].retain_grad)
        msg.adj_own.append(own)
        if a is None:
            if p.which == "array":
                msg.adj_args.add(array=0)
            else:
                msg.adj_args.add(bytes=bytes(p.size))
            continue
        is_array, v = p.pack(a, dev)
        msg.adj_args.add(array=v) if is_array else msg.adj_args.add(bytes=v)
    if 0 in dims:
        return
    entry = wire.launch_command(msg.SerializeToString())
    stream = target if target is not None else rt.stream(dev)
    with rt.lock:
        stream.add_wire(entry, [*args, *adj_args])


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
    # CUDA launch shapes: a GPU's grid; as in Warp, they change nothing on the CPU (every
    # thread of the grid runs); checked here so a bad value is an error on every device.
    if not isinstance(max_blocks, (int, np.integer)) or not 0 <= max_blocks < 2 ** 31:
        raise ValueError(f"wp.launch of kernel '{kernel.key}': max_blocks must be an integer >= 0 "
                         f"(0: no limit) and below 2**31, got {max_blocks!r}")
    if block_dim is not None and (not isinstance(block_dim, (int, np.integer)) or not 1 <= block_dim <= 1024):
        raise ValueError(f"wp.launch of kernel '{kernel.key}': block_dim must be an integer from 1 to 1024 "
                         f"(CUDA's threads per block), got {block_dim!r}")


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=None):
    """Queues a launch of `kernel` over a 1-4-D grid `dim` on `device`.

    Arguments are checked here (TypeError/ValueError naming the kernel and the
    parameter); faults while running are raised at the next sync point.
    `record_tape`: whether a recording wp.Tape records the launch;
    `adjoint`: run the kernel's adjoint with `adj_inputs` and `adj_outputs`;
    `max_blocks` and `block_dim` (CUDA grid shapes) shape a GPU launch's grid (the
    daemon's default: blocks of 256, at most 32 per SM) and change nothing on the
    CPU, as in Warp; `stream`: a wp.Stream of the device (streams.py),
    else the device's current stream.

    The launch is queued as its serialized command (wire.py): the plan's
    fixed fields, the dims' field (cached per `dim`) and one entry per
    argument (_Param.encode), so no protobuf message is built.
    """
    if kernel.__class__ is not Kernel and not isinstance(kernel, Kernel):
        raise TypeError(f"wp.launch expects a @wp.kernel, got {type(kernel).__name__}")
    if (adjoint or stream is not None or max_blocks or block_dim is not None
            or adj_inputs is not _EMPTY or adj_outputs is not _EMPTY):
        _unsupported(kernel, adj_inputs, adj_outputs, stream, adjoint, record_cmd, max_blocks,
                     block_dim)
    if kernel.generic_params:
        kernel = kernel.instance_for([*inputs, *outputs])
    rt = context._runtime
    if rt is None:
        rt = runtime()
    if device is None:
        dev = rt.default_device
    else:
        dev = rt.devices.get(device) if device.__class__ is str else None
        if dev is None:
            dev = rt.device(device)
    target = None
    if stream is not None:
        from .streams import client_stream  # noqa: PLC0415 - streams imports context

        target = client_stream(rt, dev.alias, stream)
    if adjoint:
        # Adjoints line up with inputs and outputs apart; missing ones are None.
        adj_in = list(adj_inputs or ())
        if len(adj_in) > len(inputs):
            raise TypeError(f"adjoint launch of kernel '{kernel.key}': {len(adj_in)} adj_inputs for "
                            f"{len(inputs)} inputs")
        adj_in += [None] * (len(inputs) - len(adj_in))
        adj_args = [*adj_in, *(adj_outputs or ())]
        if record_cmd:
            cmd = Launch(kernel, dev, adjoint=True, bounds=dim, max_blocks=max_blocks,
                         block_dim=256 if block_dim is None else block_dim)
            for i, a in enumerate([*inputs, *outputs]):
                cmd.set_param_at_index(i, a)
            for i, a in enumerate(adj_args):
                cmd.set_param_at_index(i, a, adjoint=True)
            return cmd
        return _launch_adjoint(kernel, dim, [*inputs, *outputs], adj_args, dev, rt, target)
    last = kernel._last_plan
    if last is not None and last[0] is rt and last[1] is dev and last[2] == kernel.module.version:
        plan = last[3]
    else:
        _dims(kernel, dim)  # a bad dim is reported before the module is loaded
        plan = _plan(kernel, rt, dev)
    hit = plan.int_dims.get(dim) if dim.__class__ is int else None
    dims, dim_field = hit if hit is not None else plan.dims(kernel, dim)
    args = list(inputs)
    if outputs is not _EMPTY:
        args += list(outputs)
    specs = plan.specs
    if len(args) != len(specs):
        params = plan.params
        names = ", ".join(p.name for p in params)
        raise TypeError(f"kernel '{kernel.key}' takes {len(params)} arguments ({names}), "
                        f"but {len(args)} were given")
    if plan.tid_ndim > 1 and plan.tid_ndim != len(dims):
        raise ValueError(f"kernel '{kernel.key}' unpacks wp.tid() into {plan.tid_ndim} indices, "
                         f"but was launched with {len(dims)}-D dim {dims}")
    if record_tape and _tape._current is not None:
        _tape._current.record_launch(kernel, dim, inputs, outputs, dev,
                                     access=[(p.name, p.access) for p in plan.params])
    if record_cmd:
        packed = [p.pack(a, dev) for p, a in zip(plan.params, args)]
        return Launch._recorded(kernel, rt, dev, plan, dims, args, packed, block_dim, max_blocks)
    body = [plan.header, dim_field]
    append = body.append
    try:
        for (is_array, etype, ndim, prefix, fast, param), a in zip(specs, args):
            # _Param.encode's fast paths, inline: a call per argument is a good
            # part of a launch's time. Anything they do not take goes to encode.
            if is_array:
                if a.__class__ is array and a.dtype is etype and a.ndim == ndim and a.device is dev:
                    entry = _array_args.get(a.handle)
                    if entry is not None:
                        append(entry)
                        continue
            else:
                packer = fast.get(a.__class__)
                if packer is not None:
                    try:
                        append(prefix + packer(a))
                        continue
                    except _PACK_ERRORS:
                        pass
            append(param.encode(a, dev))
    except _HostArray:
        _launch_host_arrays(kernel, dim, args, plan, dev, record_tape)
        return
    if max_blocks or (block_dim is not None and block_dim != 256):
        # A GPU's grid (Launch.block_dim, max_blocks); the CPU ignores it, as Warp's does.
        append(wire.launch_shape(0 if block_dim is None else int(block_dim), int(max_blocks)))
    entry = wire.launch_command(b"".join(body))
    if 0 in dims:
        return
    stream = target if target is not None else rt.streams.get(dev.alias)
    if stream is None:
        stream = rt.stream(dev)
    lock = rt.lock
    lock.acquire()
    try:
        stream.add_wire(entry, args)
    finally:
        lock.release()


def _launch_entry(plan, dims, packed, block_dim=256, max_blocks=0) -> bytes:
    """The commands entry of a launch from checked, packed arguments."""
    shape = b""
    if max_blocks or (block_dim is not None and block_dim != 256):
        shape = wire.launch_shape(0 if block_dim is None else int(block_dim), int(max_blocks))
    return wire.launch_command(plan.header + wire.launch_dims(dims) + b"".join(
        [_array_arg(v) if is_array else wire.arg_bytes(v) for is_array, v in packed]) + shape)


class Launch:
    """A recorded launch (``wp.launch(..., record_cmd=True)``): checked and
    packed once; ``launch()`` queues it again without re-checking anything,
    and ``set_param_*``/``set_dim`` change one part of it (checked like the
    original argument)."""

    def __init__(self, kernel, device=None, hooks=None, params=None, params_addr=None, bounds=None,
                 max_blocks=0, block_dim=256, adjoint=False):
        """Warp's Launch(kernel, device): every parameter zero (an array parameter None)
        and no dim until set_dim; set_param_* and set_dim fill it in."""
        if params is not None or params_addr is not None or hooks is not None:
            raise NotImplementedError("Launch: params, params_addr and hooks are Warp internals; use set_param_*")
        rt = runtime()
        dev = rt.device(device if device is not None else rt.default_device)
        plan = _plan(kernel, rt, dev)
        packed = [(True, 0) if p.which == "array" else (False, bytes(p.size)) for p in plan.params]
        dims = _dims(kernel, bounds) if bounds is not None else (0,)
        self._setup(kernel, rt, dev, plan, dims, [None] * len(plan.params), packed, block_dim, max_blocks)
        if adjoint:
            self._adj_args = [None] * len(plan.params)

    @classmethod
    def _recorded(cls, kernel, rt, device, plan, dims, args, packed, block_dim=256, max_blocks=0):
        self = cls.__new__(cls)
        self._setup(kernel, rt, device, plan, dims, args, packed, block_dim, max_blocks)
        return self

    @property
    def block_dim(self) -> int:
        """Threads per block of the launch on a GPU (Warp's; the CPU ignores it)."""
        return self._block_dim

    @block_dim.setter
    def block_dim(self, value):
        self._block_dim = int(value)
        self._entry = None

    @property
    def max_blocks(self) -> int:
        """The most blocks of the launch on a GPU (0: the device's bound; the CPU ignores it)."""
        return self._max_blocks

    @max_blocks.setter
    def max_blocks(self, value):
        self._max_blocks = int(value)
        self._entry = None

    def _setup(self, kernel, rt, device, plan, dims, args, packed, block_dim=256, max_blocks=0):
        self._block_dim = 256 if block_dim is None else int(block_dim)
        self._max_blocks = int(max_blocks or 0)
        self.kernel = kernel
        self.device = device
        self._rt = rt
        self._session = rt.session
        self._stream = rt.stream(device)  # a runtime keeps its streams for its lifetime
        self._plan = plan
        self._dims = tuple(dims)
        self._args = list(args)  # keeps the arrays alive while recorded
        self._packed = list(packed)
        # Struct arguments are packed again at each launch: as in Warp (whose command holds
        # the struct's own storage), changes to the struct after it was set are launched.
        self._structs = {i for i, a in enumerate(self._args) if isinstance(a, wt.Struct)}
        # The serialized command (wire.py), made again after a set_*; None
        # also while a dimension is 0 (nothing to queue).
        self._entry = None
        # An adjoint launch's adjoints (None: the argument's own gradient at launch time);
        # None for a forward launch.
        self._adj_args = None

    @property
    def adjoint(self) -> bool:
        return self._adj_args is not None

    @staticmethod
    def _value(p, value):
        """`value` of parameter p, or for a value parameter not set the zero bytes a default
        launch passes (a quaternion's too: not the identity); an unset array stays None."""
        if value is not None or p.which in ("array", "indexedarray"):
            return value
        t = wt.from_typeref(p.typeref)
        if t is None or not hasattr(t, "_wp_from_storage_"):
            return None
        return t._wp_from_storage_(np.zeros(wt.element_shape(t), dtype=wt.numpy_dtype(t)))

    @property
    def params(self) -> list:
        """Warp's Launch.params, as values: the launch dimensions, each parameter's value,
        then for an adjoint launch each parameter's adjoint (unset ones as _value shows)."""
        plan = self._plan.params
        out = [self._dims, *(self._value(p, v) for p, v in zip(plan, self._args))]
        if self._adj_args is not None:
            out += [self._value(p, v) for p, v in zip(plan, self._adj_args)]
        return out

    def launch(self, stream=None):
        """Queues the recorded launch on its device's stream."""
        target = self._stream
        if stream is not None:
            from .streams import client_stream  # noqa: PLC0415 - streams imports context

            target = client_stream(self._rt, self.device.alias, stream)
        if self._rt.session != self._session:
            raise RuntimeError(f"this recorded launch of kernel '{self.kernel.key}' belongs to an "
                               f"earlier session of the daemon; record it again")
        if self._adj_args is not None:
            # Packed at each launch: a None adjoint is the argument's gradient then.
            args = [self._value(p, v) for p, v in zip(self._plan.params, self._args)]
            _launch_adjoint(self.kernel, self._dims, args, list(self._adj_args), self.device, self._rt,
                            target if stream is not None else None)
            return
        for i in self._structs:
            packed = self._plan.params[i].pack(self._args[i], self.device)
            if packed != self._packed[i]:
                self._packed[i] = packed
                self._entry = None
        entry = self._entry
        if entry is None:
            if 0 in self._dims:
                return
            entry = self._entry = _launch_entry(self._plan, self._dims, self._packed, self._block_dim,
                                                self._max_blocks)
        lock = self._rt.lock
        lock.acquire()
        try:
            target.add_wire(entry, self._args)
        finally:
            lock.release()

    def set_dim(self, dim):
        dims = _dims(self.kernel, dim)
        if self._plan.tid_ndim > 1 and self._plan.tid_ndim != len(dims):
            raise ValueError(f"kernel '{self.kernel.key}' unpacks wp.tid() into {self._plan.tid_ndim} "
                             f"indices, but was given {len(dims)}-D dim {dims}")
        self._dims = dims
        self._entry = None

    def set_param_at_index(self, index: int, value, adjoint: bool = False):
        params = self._plan.params
        if not -len(params) <= index < len(params):
            raise IndexError(f"kernel '{self.kernel.key}' has {len(params)} parameters, no index {index}")
        if adjoint:
            if self._adj_args is None:
                raise RuntimeError(f"this launch of kernel '{self.kernel.key}' is not an adjoint launch")
            if value is not None:
                params[index].pack(value, self.device)  # checked like the argument
            self._adj_args[index] = value
            return
        self._packed[index] = params[index].pack(value, self.device)
        self._args[index] = value
        self._entry = None
        (self._structs.add if isinstance(value, wt.Struct) else self._structs.discard)(index % len(params))

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
