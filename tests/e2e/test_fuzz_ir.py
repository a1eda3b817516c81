"""Kernels are untrusted input: randomly mutated IR must give OK or a clear
INVALID_ARGUMENT, never another status, a crash or a hang; the daemon keeps
serving. Mutations are seeded, so a failure names a reproducible case."""

import os
import random

import grpc
import pytest

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import open_channel, Daemon, daemon_binary, is_repeated

from google.protobuf.descriptor import FieldDescriptor


@wp.func
def fz_helper(x: float, v: wp.vec3):
    if x > 0.0:
        return wp.dot(v, v) * x
    return -x


@wp.kernel(module="fuzz_seed")
def fz_kernel(a: wp.array(dtype=float), b: wp.array2d(dtype=wp.vec3), n: int, s: float):
    i, j = wp.tid()
    acc = float(0.0)
    for k in range(n):
        if k % 2 == 0 and i < n:
            acc = acc + fz_helper(s, b[i, j])
        else:
            acc = acc - wp.length(wp.cross(b[i, j], wp.vec3(1.0, 0.0, 0.0)))
    while acc > 100.0:
        acc = acc * 0.5
    a[i] = acc + float(j) if i != j else wp.sqrt(wp.abs(acc))
    wp.atomic_add(a, 0, 1.0)


def _seed_module():
    from warpd import module as module_mod
    mod, _ = module_mod.get_module("fuzz_seed").build()
    return mod


_STRINGS = ["", "x", "i", "a", "tid", "wp.dot", "dot", "range", "vec3", "float32", "1bad",
            "a" * 300, "fz_kernel", "__builtin_trap", "shape", "x.y"]


def _fields(msg, out):
    """Every (message, field descriptor) in the tree, depth first."""
    for fd in msg.DESCRIPTOR.fields:
        out.append((msg, fd))
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if is_repeated(fd):
                for child in getattr(msg, fd.name):
                    _fields(child, out)
            elif msg.HasField(fd.name):
                _fields(getattr(msg, fd.name), out)
    return out


def _mutate(mod, rng):
    exprs = [m for m, _ in _fields(mod, []) if isinstance(m, ir_pb2.Expr)]
    stmts = [m for m, _ in _fields(mod, []) if isinstance(m, ir_pb2.Stmt)]
    for _ in range(rng.randint(1, 3)):
        fields = _fields(mod, [])
        msg, fd = rng.choice(fields)
        repeated = is_repeated(fd)
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if repeated:
                items = getattr(msg, fd.name)
                if len(items) and rng.random() < 0.5:
                    del items[rng.randrange(len(items))]
                elif len(items):
                    items.add().CopyFrom(items[rng.randrange(len(items))])
            elif rng.random() < 0.4 or not (exprs or stmts):
                msg.ClearField(fd.name)
            else:
                target = getattr(msg, fd.name)
                pool = exprs if isinstance(target, ir_pb2.Expr) else stmts if isinstance(
                    target, ir_pb2.Stmt) else None
                if pool:
                    donor = type(target)()
                    donor.CopyFrom(rng.choice(pool))
                    target.CopyFrom(donor)
                else:
                    msg.ClearField(fd.name)
        elif fd.type == FieldDescriptor.TYPE_STRING:
            value = rng.choice(_STRINGS)
            if repeated:
                getattr(msg, fd.name).append(value)
            else:
                setattr(msg, fd.name, value)
        elif fd.type == FieldDescriptor.TYPE_BOOL:
            if not repeated:
                setattr(msg, fd.name, rng.random() < 0.5)
        elif fd.type == FieldDescriptor.TYPE_DOUBLE:
            if not repeated:
                setattr(msg, fd.name, rng.choice([0.0, -0.0, 1e308, -1e308, float("inf"),
                                                  float("nan"), 3.5]))
        elif fd.type == FieldDescriptor.TYPE_ENUM:
            value = rng.choice([0, 1, 2, 5, 12, 13, 99, -1])
            if repeated:
                getattr(msg, fd.name).append(value)
            else:
                setattr(msg, fd.name, value)
        else:  # integers
            bits = 32 if fd.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_UINT32) else 64
            signed = fd.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64)
            choices = [0, 1, 2, 3, 4, 5, 17, 255, (1 << (bits - 1)) - 1]
            if signed:
                choices += [-1, -(1 << (bits - 1))]
            value = rng.choice(choices)
            if repeated:
                getattr(msg, fd.name).append(value)
            else:
                setattr(msg, fd.name, value)


@pytest.fixture(scope="module")
def fuzz_daemon(tmp_path_factory):
    """A daemon of its own with a short launch time limit: mutated loops may never end."""
    d = Daemon(daemon_binary(), tmp_path_factory.mktemp("fuzz"), extra_args=["--kernel-timeout", "250ms"])
    d.start()
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="fuzz")).session
    yield d, stub, session
    channel.close()
    alive = d.alive()
    code = d.stop()
    assert alive, f"warpd died during the fuzz tests:\n{d.log_tail()}"
    assert code == 0


def _launch_args(stub, session, kernel, rng):
    """Valid arguments for `kernel`: small zeroed arrays, random scalar bytes
    (NaNs, huge and negative integers included)."""
    args = []
    for p in kernel.params:
        if p.type.HasField("array"):
            shape = [3] * p.type.array.ndim
            resp = stub.CreateArray(runtime_pb2.CreateArrayRequest(
                session=session, device="cpu", dtype=p.type.array.dtype, shape=shape,
                init=runtime_pb2.ARRAY_INIT_ZEROS))
            args.append(runtime_pb2.LaunchArg(array=resp.handle))
        else:
            args.append(runtime_pb2.LaunchArg(bytes=rng.randbytes(p.size)))
    return args


def test_seed_module_compiles(fuzz_daemon):
    _, stub, session = fuzz_daemon
    resp = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=_seed_module()))
    assert [k.name for k in resp.kernels] == [f.name for f in _seed_module().functions
                                              if f.kind == ir_pb2.FUNCTION_KERNEL]


@pytest.mark.parametrize("seed_block", range(int(os.environ.get("WARPD_FUZZ_BLOCKS", "4"))))
def test_mutated_ir_compiles_or_is_rejected_and_runs_safely(fuzz_daemon, seed_block):
    """Every mutation loads (OK) or is INVALID_ARGUMENT; every loaded kernel,
    launched with arbitrary scalar values, finishes OK, faults cleanly
    (OUT_OF_RANGE) or hits the time limit (DEADLINE_EXCEEDED)."""
    d, stub, session = fuzz_daemon
    base = _seed_module()
    outcomes = {}
    for seed in range(seed_block * 60, seed_block * 60 + 60):
        rng = random.Random(seed)
        mod = ir_pb2.Module()
        mod.CopyFrom(base)
        _mutate(mod, rng)
        try:
            loaded = stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=mod),
                                     timeout=60)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"seed {seed}: {e.code()}: {e.details()}"
            assert e.details(), f"seed {seed}: empty error message"
            outcomes["rejected"] = outcomes.get("rejected", 0) + 1
            continue
        outcomes["loaded"] = outcomes.get("loaded", 0) + 1
        for k in loaded.kernels:
            dims = [3] * k.tid_ndim if k.tid_ndim >= 2 else [7]
            launch = runtime_pb2.Launch(module=loaded.module, kernel=k.name, dim=dims,
                                        args=_launch_args(stub, session, k, rng))
            req = runtime_pb2.SubmitRequest(session=session, device="cpu", synchronize=True)
            req.commands.add().launch.CopyFrom(launch)
            try:
                stub.Submit(req, timeout=60)
                outcomes["ran"] = outcomes.get("ran", 0) + 1
            except grpc.RpcError as e:
                assert e.code() in (grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.DEADLINE_EXCEEDED), (
                    f"seed {seed}, kernel {k.name}: {e.code()}: {e.details()}")
                outcomes[e.code().name] = outcomes.get(e.code().name, 0) + 1
        assert d.alive(), f"seed {seed} killed the daemon:\n{d.log_tail()}"
    # The mutations must exercise both outcomes, or the test proves little.
    print(f"block {seed_block}: {outcomes}")
    assert outcomes.get("rejected", 0) > 0 and outcomes.get("ran", 0) > 0, outcomes
    info = stub.GetServerInfo(runtime_pb2.GetServerInfoRequest())
    assert info.devices[0].name == "cpu"
