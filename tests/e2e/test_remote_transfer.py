"""Array transfers for remote (TCP) clients: Upload and Download streams whose
chunks both sides read and write on the wire themselves (wire.py,
server/transfer_wire.cc). Round trips around the chunk size, ordering with
queued work, kernel output arriving with a download, and hostile upload
chunks, which fail with INVALID_ARGUMENT while the daemon keeps serving."""

import re
import subprocess
import sys
import textwrap

import grpc
import numpy as np
import pytest

from warpd import auth, wire
from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary

CHUNK = 2 << 20


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory):
    """(daemon, TCP address, token) of a daemon that also listens on loopback TCP."""
    d = Daemon(daemon_binary(), tmp_path_factory.mktemp("remote"), extra_args=["--listen", "127.0.0.1:0"])
    d.start()
    port = int(re.search(r"listening on .*127\.0\.0\.1:(\d+)", d.log_tail(20000)).group(1))
    token = (d.dir / "warpd.token").read_text().strip()
    yield d, f"127.0.0.1:{port}", token
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


@pytest.fixture(scope="module")
def tcp_stub(tcp_daemon):
    _, address, token = tcp_daemon
    channel = auth.open_channel(address, token=token)
    yield channel, runtime_pb2_grpc.RuntimeStub(channel)
    channel.close()


CLIENT = textwrap.dedent('''
    import sys
    import numpy as np
    import warpd as wp
    from warpd import context

    wp.config.quiet = True
    wp.init()
    assert context.runtime().share_path is None  # over TCP: no mapped arrays, transfers
    CHUNK = 2 << 20

    @wp.kernel
    def slow_fill(a: wp.array(dtype=float), v: float):
        i = wp.tid()
        x = float(0.0)
        for k in range(20000):
            x = x + wp.sin(float(k))
        a[i] = v + x * 0.0

    @wp.kernel
    def add(a: wp.array(dtype=float), v: float):
        i = wp.tid()
        a[i] = a[i] + v

    @wp.kernel
    def shout(a: wp.array(dtype=float)):
        i = wp.tid()
        if i == 0:
            print("hello from the kernel")
        a[i] = 7.0

    rng = np.random.default_rng(7)
    # Bytes around the chunk size, and several chunks with an odd tail.
    for n in [0, 1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 12345]:
        x = rng.integers(0, 256, n, dtype=np.uint8)
        a = wp.array(x, dtype=wp.uint8)
        got = a.numpy()
        assert got.dtype == np.uint8 and got.shape == (n,), (n, got.dtype, got.shape)
        assert np.array_equal(got, x), n
        y = rng.integers(0, 256, n, dtype=np.uint8)
        a.assign(y)  # into an existing array
        assert np.array_equal(a.numpy(), y), n
    v = rng.standard_normal((CHUNK // 12 + 3, 3)).astype(np.float32)
    av = wp.array(v, dtype=wp.vec3)
    assert np.array_equal(av.numpy(), v)

    # An upload after queued work lands after it; work queued after it sees it.
    n = 4096
    a = wp.zeros(n, dtype=float)
    for _ in range(3):
        wp.launch(slow_fill, dim=n, inputs=[a, -1.0])
    x = np.arange(n, dtype=np.float32)
    a.assign(x)
    wp.launch(add, dim=n, inputs=[a, 1.0])
    assert np.array_equal(a.numpy(), x + 1)

    # Kernel output comes with the download that waited for the kernel.
    b = wp.zeros(CHUNK // 4 + 1, dtype=float)
    wp.launch(shout, dim=b.shape[0], inputs=[b])
    print("before download", flush=True)
    got = b.numpy()
    print("after download", flush=True)
    assert np.all(got == 7.0)
    print("DONE")
''')


def test_python_client_round_trips_over_tcp(tcp_daemon, tmp_path):
    _, address, token = tcp_daemon
    script = tmp_path / "remote_client.py"
    script.write_text(CLIENT)
    env = {"WARPD_ADDRESS": address, "WARPD_TOKEN": token, "PYTHONPATH": ":".join(sys.path)}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == ["before download", "hello from the kernel", "after download", "DONE"], proc.stdout


def _array(stub, n):
    session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="hostile")).session
    handle = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cpu", shape=[n], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8))).handle
    return session, handle


def _download(stub, session, handle):
    return b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(session=session, handle=handle),
                                                  timeout=30))


N = 64
BEFORE = bytes(range(N))
# Each case: (the raw chunks, given the first chunk's header fields; what the
# error names; the array's bytes after, when not BEFORE).
HOSTILE = {
    "garbage": (lambda h: [b"\xff\xff\xff\xff\x0f garbage"], "UploadChunk", None),
    "data longer than the message": (lambda h: [h + b"\x22\x10" + b"abcd"], "claims 16 bytes", None),
    "huge data length": (lambda h: [h + b"\x22" + b"\xff" * 9 + b"\x01" + b"ab"],
                         "claims 18446744073709551615", None),
    "truncated varint": (lambda h: [h + b"\x18\xff\xff"], "field offset is cut off", None),
    "11-byte varint": (lambda h: [h + b"\x18" + b"\x80" * 10 + b"\x00"], "over 64 bits", None),
    "repeated field": (lambda h: [h + b"\x22\x01a\x22\x01b"], "appears twice", None),
    "unknown field": (lambda h: [h + b"\x28\x01"], "unknown field number 5", None),
    "data as a varint": (lambda h: [h + b"\x20\x05"], "wire type 0", None),
    "offset past the end": (lambda h: [h + b"\x18" + wire.varint(N + 1) + wire.upload_chunk(b"z")],
                            "past the end of the array", None),
    "overflowing offset": (lambda h: [h + b"\x18" + wire.varint(2**64 - 1) + wire.upload_chunk(b"z")],
                           "past the end of the array", None),
    "upload past the end": (lambda h: [h + wire.upload_chunk(b"x" * (N + 1))], "runs past the end", None),
    "malformed second chunk": (lambda h: [h + wire.upload_chunk(b"ab"), b"\x22\x09ab"], "claims 9 bytes",
                               b"ab" + BEFORE[2:]),
    "second chunk past the end": (lambda h: [h + wire.upload_chunk(b"x" * N), wire.upload_chunk(b"y")],
                                  "runs past the end", b"x" * N),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_upload_chunks_are_invalid_argument(tcp_daemon, tcp_stub, case):
    d, _, _ = tcp_daemon
    channel, stub = tcp_stub
    session, handle = _array(stub, N)
    stub.Upload(iter([runtime_pb2.UploadChunk(session=session, handle=handle, data=BEFORE)]), timeout=30)
    make, why, after = HOSTILE[case]
    header = wire.upload_header(session, handle, 0)
    upload = channel.stream_unary("/warpd.v1.Runtime/Upload", request_serializer=None,
                                  response_deserializer=runtime_pb2.UploadResponse.FromString)
    with pytest.raises(grpc.RpcError) as e:
        upload(iter(make(header)), timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (case, e.value.details())
    assert why in e.value.details(), e.value.details()
    # Nothing was written past what was valid, and the daemon still serves.
    assert _download(stub, session, handle) == (after or BEFORE)
    assert d.alive(), d.log_tail()
    ok = upload(iter([header + wire.upload_chunk(b"\x05" * N)]), timeout=30)
    assert ok.bytes_written == N
    assert _download(stub, session, handle) == b"\x05" * N


def test_hand_written_chunks_match_protobuf():
    data = bytes(range(256)) * 3
    for session, handle, offset in [("", 0, 0), ("s-1", 9, 0), ("abc", 2**64 - 1, 2**63)]:
        want = runtime_pb2.UploadChunk(session=session, handle=handle, offset=offset, data=data)
        assert wire.upload_chunk(memoryview(data), wire.upload_header(session, handle, offset)) == \
            want.SerializeToString()
    for d, out in [(b"", b""), (b"abc", b""), (b"", b"hi\n"), (data, b"printed")]:
        got_data, got_out = wire.download_chunk(runtime_pb2.DownloadChunk(data=d, output=out).SerializeToString())
        assert bytes(got_data) == d and got_out == out
    for bad in [b"\x0a\x05ab", b"\x0a", b"\x0a\xff", b"\x1a\x00", b"\x08\x01"]:
        with pytest.raises(ValueError):
            wire.download_chunk(bad)


def test_downloads_parse_as_protobuf_over_tcp(tcp_stub):
    _, stub = tcp_stub
    n = 2 * CHUNK + 3
    session, handle = _array(stub, n)
    x = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8).tobytes()
    stub.Upload(iter([runtime_pb2.UploadChunk(session=session, handle=handle, data=x[:CHUNK]),
                      runtime_pb2.UploadChunk(data=x[CHUNK:])]), timeout=30)
    chunks = list(stub.Download(runtime_pb2.DownloadRequest(session=session, handle=handle), timeout=30))
    assert [len(c.data) for c in chunks] == [CHUNK, CHUNK, 3]
    assert b"".join(c.data for c in chunks) == x


MALLOC_CLIENT = textwrap.dedent('''
    import ctypes
    import numpy as np
    import warpd as wp
    from warpd import malloc_tuning

    wp.config.quiet = True
    wp.init()

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def mmapped_blocks_for(nbytes):
        before = libc.mallinfo2().hblks
        p = libc.malloc(nbytes)
        after = libc.mallinfo2().hblks
        libc.free(p)
        return after - before

    x = np.arange(3 * (1 << 19) + 7, dtype=np.float32)  # several 2 MiB download messages
    assert np.array_equal(wp.array(x, dtype=float).numpy(), x)
    print(malloc_tuning.applied(), mmapped_blocks_for(4 << 20), mmapped_blocks_for(64 << 20))
''')


@pytest.mark.parametrize("over,env_value,want", [
    ("tcp", None, "True 0 1"),      # 4 MiB from the heap; 64 MiB still mmapped
    ("tcp", "0", "False"),          # WARPD_TUNE_MALLOC=0
    ("unix", None, "False"),        # a local client streams nothing over gRPC
])
def test_tcp_clients_tune_malloc_for_transfers(tcp_daemon, tmp_path, over, env_value, want):
    d, address, token = tcp_daemon
    script = tmp_path / "malloc_client.py"
    script.write_text(MALLOC_CLIENT)
    env = {"WARPD_ADDRESS": address if over == "tcp" else d.address, "PYTHONPATH": ":".join(sys.path)}
    if over == "tcp":
        env["WARPD_TOKEN"] = token
    if env_value is not None:
        env["WARPD_TUNE_MALLOC"] = env_value
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = proc.stdout.split()
    assert " ".join(got[:len(want.split())]) == want, proc.stdout
