"""Client/daemon version check at connect (issue 28): versions that differ only in the
patch number (from 1.0 on, the minor too) speak one protocol; wp.init() refuses any
other pair with a clear VersionMismatchError instead of failing later. The mismatch is
shown by a stand-in daemon answering GetServerInfo with another version (the real
daemon's version is the build's)."""

import subprocess
import sys
import textwrap
from concurrent import futures

import grpc
import pytest

from warpd import versions
from warpd.v1 import runtime_pb2, runtime_pb2_grpc


@pytest.mark.parametrize("client, daemon, ok", [
    ("0.1.0", "0.1.0", True), ("0.1.0", "0.1.7", True), ("0.1.0", "0.2.0", False), ("0.1.0", "1.1.0", False),
    ("1.2.0", "1.5.3", True), ("1.2.0", "2.0.0", False), ("0.1.0", "0.1.0-dev", True),
    ("0.1.0", "0.0.0-unknown", False), ("0.1.0", "", None), ("0.1.0", "banana", None)])
def test_compatibility_rule(client, daemon, ok):
    assert versions.compatible(client, daemon) is ok


def test_the_real_daemon_matches_this_client(wp):
    assert versions.compatible(wp.config.version, wp.context.runtime().info.version)


class OtherVersion(runtime_pb2_grpc.RuntimeServicer):
    def GetServerInfo(self, request, context):
        return runtime_pb2.ServerInfo(version="7.3.0", devices=[runtime_pb2.DeviceInfo(name="cpu", kind="cpu")])


def test_a_daemon_of_another_version_is_refused_at_init(tmp_path):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    runtime_pb2_grpc.add_RuntimeServicer_to_server(OtherVersion(), server)
    sock = tmp_path / "other.sock"
    server.add_insecure_port(f"unix:{sock}")
    server.start()
    try:
        script = textwrap.dedent(f"""
            import warpd as wp
            try:
                wp.init()
            except wp.VersionMismatchError as e:
                print("REFUSED", e)
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                             env={"WARPD_ADDRESS": f"unix:{sock}", "WARPD_TOKEN": "wpd_" + "0" * 43, "PATH": "/usr/bin:/bin"})
        assert "REFUSED" in out.stdout, out.stdout + out.stderr
        assert "is version 7.3.0" in out.stdout and "speak different protocols" in out.stdout
    finally:
        server.stop(None)
