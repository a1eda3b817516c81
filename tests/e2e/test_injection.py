"""Client text never becomes code (issue 7).

Every byte value 0-255 is placed into each string field of a module's IR (as
raw bytes on the wire, so invalid UTF-8 is sent too), plus known injection
payloads and long strings. Each module must either load and compute the right
values, or be rejected with INVALID_ARGUMENT and a message; the daemon keeps
serving. (A file name "x.py\\n#error X\\n//" once compiled into the daemon.)
"""

import struct

import grpc
import numpy as np
import pytest

import warpd as wp
from warpd.v1 import ir_pb2, runtime_pb2

from conftest import is_repeated

N = 16
S = 2.5
PLACEHOLDER = "Pq7Zplaceholder9"  # 16 ASCII bytes, an identifier, found nowhere else


@wp.kernel(module="injection_seed")
def inj_kernel(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = s * float(i) + 1.0


def _seed():
    from warpd import module as module_mod

    mod, _ = module_mod.get_module("injection_seed").build()
    return mod


def _walk(msg):
    yield msg
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if is_repeated(fd):
            for child in value:
                yield from _walk(child)
        else:
            yield from _walk(value)


def _rename(mod, old, new):
    """Renames identifier `old` everywhere it is a parameter or variable name."""
    for m in _walk(mod):
        if isinstance(m, ir_pb2.Name) and m.id == old:
            m.id = new
        if isinstance(m, ir_pb2.Param) and m.name == old:
            m.name = new


def _set_field(mod, field, text):
    """Sets one client string field of the module (every instance of it) to `text`."""
    if field == "file":
        for m in _walk(mod):
            if isinstance(m, ir_pb2.SourceSpan):
                m.file = text
    elif field == "module":
        mod.name = text
    elif field == "display_name":
        mod.functions[0].display_name = text
    elif field == "kernel":
        mod.functions[0].name = text
    elif field == "param":
        _rename(mod, "s", text)
    elif field == "local":
        _rename(mod, "i", text)
    else:
        raise ValueError(field)


FREE_TEXT = ["file", "module", "display_name"]
IDENTIFIERS = ["kernel", "param", "local"]


class Loader:
    """LoadModule with a request sent as raw bytes, then a launch that checks the result."""

    def __init__(self, raw):
        from warpd import context

        self.stub, self.session = raw
        self.load_raw = context.runtime().channel.unary_unary(
            "/warpd.v1.Runtime/LoadModule", request_serializer=None,
            response_deserializer=runtime_pb2.LoadModuleResponse.FromString)
        self.array = self.stub.CreateArray(runtime_pb2.CreateArrayRequest(
            session=self.session, device="cpu", shape=[N],
            dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_FLOAT32))).handle
        self.loaded = 0
        self.rejected = 0

    def request_bytes(self, mod, payload: bytes) -> bytes:
        req = runtime_pb2.LoadModuleRequest(session=self.session, module=mod, devices=["cpu"])
        data = req.SerializeToString()
        assert PLACEHOLDER.encode() in data
        if len(payload) == len(PLACEHOLDER):
            return data.replace(PLACEHOLDER.encode(), payload)
        raise AssertionError("payloads sent as raw bytes keep the placeholder's length")

    def check(self, what, data: bytes, kernel_name: str):
        try:
            resp = self.load_raw(data, timeout=60)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{what}: {e.code()}: {e.details()}"
            assert e.details(), f"{what}: INVALID_ARGUMENT without a message"
            self.rejected += 1
            return
        self.loaded += 1
        self.stub.Submit(runtime_pb2.SubmitRequest(session=self.session, device="cpu", commands=[
            runtime_pb2.Command(fill=runtime_pb2.FillArray(array=self.array, value=struct.pack("<f", -7.0))),
            runtime_pb2.Command(launch=runtime_pb2.Launch(
                module=resp.module, kernel=kernel_name, dim=[N],
                args=[runtime_pb2.LaunchArg(array=self.array),
                      runtime_pb2.LaunchArg(bytes=struct.pack("<f", S))]))], synchronize=True),
            timeout=60)
        got = np.frombuffer(b"".join(c.data for c in self.stub.Download(
            runtime_pb2.DownloadRequest(session=self.session, handle=self.array), timeout=60)),
            dtype=np.float32)
        np.testing.assert_array_equal(got, np.float32(S) * np.arange(N, dtype=np.float32) + 1,
                                      err_msg=what)


def _is_ident_char(b: int) -> bool:
    return chr(b).isascii() and (chr(b).isalnum() or chr(b) == "_")


@pytest.mark.parametrize("field", FREE_TEXT + IDENTIFIERS)
def test_every_byte_value_in_every_string_field(wp, raw, serving, field):
    loader = Loader(raw)
    seed = _seed()
    kernel_name = seed.functions[0].name
    for b in range(256):
        # Identifier characters only make another valid identifier (a new
        # kernel to compile); a few of them stand for the rest.
        if field in IDENTIFIERS and _is_ident_char(b) and chr(b) not in "aZ7_":
            continue
        payload = b"x" + bytes([b]) + PLACEHOLDER.encode()[2:]
        mod = ir_pb2.Module()
        mod.CopyFrom(seed)
        _set_field(mod, field, PLACEHOLDER)
        name = payload.decode("latin-1") if field == "kernel" else kernel_name
        loader.check(f"{field} with byte {b}", loader.request_bytes(mod, payload), name)
    if field in FREE_TEXT:
        # Every byte is harmless text there; only invalid UTF-8 is refused.
        assert loader.loaded >= 128, (loader.loaded, loader.rejected)
    else:
        assert loader.loaded == 4, (loader.loaded, loader.rejected)
    assert serving()


PAYLOADS = [
    "x.py\n#error INJECTED\n//",
    "x.py\n}\nextern \"C\" int system(const char*);\nstatic int r = system(\"id\");\n//",
    "a\\", "*/ #error INJECTED /*", "??/", "\r\n#include \"/etc/passwd\"\r\n", "\0#error nul",
    "é \u2028 \U0001F600", "%s%n%x", "../../../../etc/passwd",
]


@pytest.mark.parametrize("field", FREE_TEXT)
def test_injection_payloads_and_long_strings(wp, raw, serving, field):
    loader = Loader(raw)
    seed = _seed()
    kernel_name = seed.functions[0].name
    limit = 256 if field == "display_name" else 4096
    for text in PAYLOADS + ["y" * limit]:
        mod = ir_pb2.Module()
        mod.CopyFrom(seed)
        _set_field(mod, field, text)
        req = runtime_pb2.LoadModuleRequest(session=loader.session, module=mod, devices=["cpu"])
        loader.check(f"{field} = {text[:40]!r}", req.SerializeToString(), kernel_name)
    assert loader.loaded == len(PAYLOADS) + 1, (loader.loaded, loader.rejected)
    for size in (limit + 1, 1 << 20):
        mod = ir_pb2.Module()
        mod.CopyFrom(seed)
        _set_field(mod, field, "z" * size)
        req = runtime_pb2.LoadModuleRequest(session=loader.session, module=mod, devices=["cpu"])
        with pytest.raises(grpc.RpcError) as e:
            loader.load_raw(req.SerializeToString(), timeout=60)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
        assert "longer than" in e.value.details() or "too long" in e.value.details(), e.value.details()
    assert serving()
