"""Operations: Prometheus metrics over HTTP and grpc.health.v1 (issue 9)."""

import re
import subprocess
import time
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest

from warpd.v1 import ir_pb2, runtime_pb2, runtime_pb2_grpc

from conftest import Daemon, daemon_binary, open_channel


def metric(text, name, **labels):
    """The value of one sample, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = "^" + re.escape(name) + (r"\{" + re.escape(want) + r"\}" if want else "") + r" (\S+)$"
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None


def test_metrics_endpoint_reports_tenant_usage(tmp_path):
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--metrics-listen", "127.0.0.1:0"])
    d.start()
    port = int(re.search(r"metrics: http://127\.0\.0\.1:(\d+)/metrics", d.log_tail(20000)).group(1))
    url = f"http://127.0.0.1:{port}/metrics"
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest()).session
    tenant = stub.GetUsage(runtime_pb2.GetUsageRequest(session=s)).tenant
    h = stub.CreateArray(runtime_pb2.CreateArrayRequest(session=s, device="cpu", shape=[3 << 20],
                                                        dtype=ir_pb2.TypeRef(scalar=ir_pb2.SCALAR_UINT8))).handle
    stub.Upload(iter([runtime_pb2.UploadChunk(session=s, handle=h, data=b"\x07" * 1000)]))
    data = b"".join(c.data for c in stub.Download(runtime_pb2.DownloadRequest(session=s, handle=h)))
    assert data[:1000] == b"\x07" * 1000 and len(data) == 3 << 20
    with pytest.raises(grpc.RpcError):
        list(stub.Download(runtime_pb2.DownloadRequest(session=s, handle=h + 99)))
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    assert metric(text, "warpd_tenant_memory_bytes", tenant=tenant) >= 3 << 20
    assert metric(text, "warpd_sessions_open", tenant=tenant) == 1
    assert metric(text, "warpd_arrays_live", tenant=tenant) == 1
    assert metric(text, "warpd_rpcs_total", method="CreateArray", code="OK") == 1
    assert metric(text, "warpd_rpcs_total", method="Upload", code="OK") == 1
    assert metric(text, "warpd_rpcs_total", method="Download", code="OK") == 1
    assert metric(text, "warpd_rpcs_total", method="Download", code="NOT_FOUND") == 1
    assert metric(text, "warpd_queued_commands", tenant=tenant) == 0
    assert metric(text, "warpd_uptime_seconds") >= 0
    assert re.search(r'^warpd_build_info\{version="[^"]+"\} 1$', text, re.M)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/secrets", timeout=10)
    assert e.value.code == 404
    channel.close()
    assert d.stop() == 0, d.log_tail()


def test_health_check_and_watch(tmp_path):
    d = Daemon(daemon_binary(), tmp_path)
    d.start()
    # grpc.health.v1 needs no token (probes are not tenants). Messages by
    # hand: HealthCheckRequest{service=""} is empty; the response's field 1
    # is the status (1 = SERVING).
    channel = grpc.insecure_channel(d.address)
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=None,
                                response_deserializer=None)
    assert check(b"", timeout=10) == b"\x08\x01"
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=None,
                                 response_deserializer=None)
    updates = watch(b"", timeout=30)
    assert next(updates) == b"\x08\x01"
    d.proc.terminate()  # draining: the watcher sees NOT_SERVING (2) or the stream ends
    try:
        assert next(updates) in (b"\x08\x02", b"")
    except grpc.RpcError:
        pass
    d.proc.wait(30)
    assert d.proc.returncode == 0, d.log_tail()
    channel.close()


def test_metrics_beyond_loopback_need_the_opt_in_and_warn(tmp_path):
    """Metrics are plain HTTP naming every tenant: beyond loopback only with --metrics-insecure (issue 23)."""
    proc = subprocess.run([daemon_binary(), "--metrics-listen", "0.0.0.0:0"], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "--metrics-listen 0.0.0.0:0 is reachable beyond this machine" in proc.stderr, proc.stderr
    assert "add --metrics-insecure" in proc.stderr, proc.stderr
    d = Daemon(daemon_binary(), tmp_path, extra_args=["--metrics-listen", "0.0.0.0:0", "--metrics-insecure"])
    d.start()
    log = d.log_tail(20000)
    port = int(re.search(r"metrics: http://0\.0\.0\.0:(\d+)/metrics", log).group(1))
    assert (f"[warning] metrics: serving http://0.0.0.0:{port}/metrics beyond loopback without TLS or "
            "authentication (--metrics-insecure)") in log, log
    # The operator chose this: tenant labels are still served.
    channel = open_channel(d.address)
    stub = runtime_pb2_grpc.RuntimeStub(channel)
    s = stub.OpenSession(runtime_pb2.OpenSessionRequest()).session
    tenant = stub.GetUsage(runtime_pb2.GetUsageRequest(session=s)).tenant
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert metric(r.read().decode(), "warpd_sessions_open", tenant=tenant) == 1
    channel.close()
    assert d.stop() == 0, d.log_tail()
