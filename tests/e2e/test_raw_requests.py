"""Garbage on the wire gets INVALID_ARGUMENT with a message; aborted uploads fail (issue 7)."""

import threading
import time

import grpc
import pytest

from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import open_channel, Daemon, daemon_binary

GARBAGE = b"\xff\xff\xff\xff\x0f garbage"
UNARY = ["GetServerInfo", "OpenSession", "CloseSession", "CreateArray", "CreateView", "FreeArray", "LoadModule",
         "Submit", "Synchronize", "ReadOutput", "SetKernelCacheDir", "ClearKernelCache"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(daemon_binary(), tmp_path_factory.mktemp("raw"), extra_args=["--log-level", "debug"])
    d.start()
    channel = open_channel(d.address)
    yield d, channel, runtime_pb2_grpc.RuntimeStub(channel)
    channel.close()
    alive = d.alive()
    assert d.stop() == 0 and alive, d.log_tail()


@pytest.mark.parametrize("method", UNARY + ["Download"])
def test_garbage_request_is_invalid_argument(daemon, method):
    _, channel, stub = daemon
    if method == "Download":
        call = channel.unary_stream(f"/warpd.v1.Runtime/{method}", request_serializer=None,
                                    response_deserializer=None)
        run = lambda: list(call(GARBAGE, timeout=10))  # noqa: E731
    else:
        call = channel.unary_unary(f"/warpd.v1.Runtime/{method}", request_serializer=None,
                                   response_deserializer=None)
        run = lambda: call(GARBAGE, timeout=10)  # noqa: E731
    with pytest.raises(grpc.RpcError) as e:
        run()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, e.value.code())
    assert method in e.value.details(), e.value.details()
    # The daemon still answers.
    assert stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=10).version


def _array(stub, n=1024):
    session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="raw")).session
    handle = stub.CreateArray(runtime_pb2.CreateArrayRequest(
        session=session, device="cpu", shape=[n], dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8))).handle
    return session, handle


def test_garbage_chunk_fails_the_upload(daemon):
    _, channel, stub = daemon
    session, handle = _array(stub)
    first = runtime_pb2.UploadChunk(session=session, handle=handle, data=b"\x01" * 16).SerializeToString()
    upload = channel.stream_unary("/warpd.v1.Runtime/Upload", request_serializer=None,
                                  response_deserializer=runtime_pb2.UploadResponse.FromString)
    with pytest.raises(grpc.RpcError) as e:
        upload(iter([first, GARBAGE]), timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert "UploadChunk" in e.value.details()
    # A well-formed upload still works, and reports what it wrote.
    ok = upload(iter([first]), timeout=10)
    assert ok.bytes_written == 16


def test_cancelled_upload_is_a_failure_not_a_success(daemon):
    d, _, stub = daemon
    session, handle = _array(stub)
    release = threading.Event()

    def chunks():
        yield runtime_pb2.UploadChunk(session=session, handle=handle, data=b"\x02" * 8)
        release.wait(10)  # the client gives up here, mid-stream

    future = stub.Upload.future(chunks(), timeout=30)
    time.sleep(0.3)
    future.cancel()
    release.set()
    deadline = time.monotonic() + 5
    while "upload cancelled by the client after 8 bytes" not in d.log_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "upload cancelled by the client after 8 bytes" in d.log_tail(), d.log_tail()


def test_client_text_cannot_forge_log_lines(daemon):
    d, _, stub = daemon
    stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="x\nFORGED-SESSION line"))
    session = stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name="log")).session
    bad = ir_pb2.Module(name="m", functions=[ir_pb2.Function(
        name="bad name", kind=ir_pb2.FUNCTION_KERNEL, span=ir_pb2.SourceSpan(file="f.py\nFORGED-ERROR line", line=1))])
    with pytest.raises(grpc.RpcError):
        stub.LoadModule(runtime_pb2.LoadModuleRequest(session=session, module=bad, devices=["cpu"]))
    log = d.log_tail(200_000)
    assert "x\\nFORGED-SESSION" in log, log[-2000:]  # logged, escaped
    for line in log.splitlines():
        assert not line.startswith("FORGED"), line
