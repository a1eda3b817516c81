"""Fixtures for the end-to-end suites: a real warpd daemon and an initialized client.

The daemon is $WARPD_BIN, else <repo>/build/bin/warpd (or, for debugging, an
already running daemon at $WARPD_TEST_ADDRESS). It runs for the whole
session on a Unix socket in a temporary directory, with its own kernel cache,
``--verify-cuda`` (every module's CUDA source is also compiled with NVRTC and
checked with ptxas) and ``--allow-client-cache-dir``. A missing binary FAILS
the tests that need it (it is never a skip: CI must build it).

Tests that only exercise the front end do not use these fixtures.
"""

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

# A test that uses the client without the `wp` fixture would otherwise find no
# address and autostart a private daemon of its own, and every later test in the
# process would talk to that one instead of the fixture's: point such a test at
# an address that cannot exist, so it fails with an error naming the cause.
# (The fixture sets the real address; tests of autostart drop the variable.
# Test files also import this file as `conftest`: a second run of this line
# must leave the fixture's address alone.)
os.environ.setdefault("WARPD_ADDRESS", "unix:/nonexistent/warpd-tests-must-request-the-wp-fixture.sock")


def daemon_binary() -> str:
    return os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")


def is_repeated(fd) -> bool:
    """Whether a protobuf field descriptor is repeated (protobuf >= 6 dropped `label`)."""
    rep = getattr(fd, "is_repeated", None)
    return rep if rep is not None else fd.label == fd.LABEL_REPEATED


def pid_alive(pid: int) -> bool:
    """True while process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except FileNotFoundError:
        return False


def open_channel(address, options=()):
    """A channel to the daemon at `address` whose calls carry this user's token
    (from the daemon's login socket, see warpd.auth)."""
    from warpd import auth

    return auth.open_channel(address, options=options)


class Daemon:
    def __init__(self, binary, workdir: Path, extra_args=(), client_owns_cache=True):
        self.binary = binary
        self.dir = workdir
        self.socket = workdir / "warpd.sock"
        self.address = f"unix:{self.socket}"
        self.cache_dir = workdir / "cache"
        self.log_path = workdir / "warpd.log"
        self.proc = None
        self.extra_args = list(extra_args)
        self.client_owns_cache = client_owns_cache

    def start(self, timeout=60.0):
        from warpd.v1 import runtime_pb2, runtime_pb2_grpc

        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--listen", self.address, "--cache-dir", str(self.cache_dir),
             "--verify-cuda", "--log-level", "info",
             "--token-file", str(self.dir / "warpd.token"), "--state-dir", str(self.dir / "state"),
             *(["--allow-client-cache-dir"] if self.client_owns_cache else []),
             # Sanitizers slow the daemon's CUDA verification (NVRTC in
             # process) 2-3x: the largest test modules come near the default
             # 60 s compile limit under ASan on a 2-core machine.
             *(["--compile-timeout", "300s"] if os.environ.get("WARPD_SANITIZED") else []),
             *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        channel = None
        deadline = time.monotonic() + timeout
        try:
            while True:
                if self.proc.poll() is not None:
                    pytest.fail(f"warpd exited with status {self.proc.returncode} at start-up:\n"
                                f"{self.log_tail()}", pytrace=False)
                if time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"warpd did not answer within {timeout} s:\n{self.log_tail()}",
                                pytrace=False)
                # The login socket appears once the daemon serves.
                # (A daemon whose tenants file does not map this user
                # refuses the login: its UNAUTHENTICATED answer shows it is up.)
                if channel is None and Path(str(self.socket) + ".login").exists():
                    from warpd.errors import UnavailableError

                    try:
                        channel = open_channel(self.address)
                    except UnavailableError:
                        channel = grpc.insecure_channel(self.address)
                if channel is not None:
                    try:
                        runtime_pb2_grpc.RuntimeStub(channel).GetServerInfo(
                            runtime_pb2.GetServerInfoRequest(), timeout=2)
                        return
                    except grpc.RpcError as e:
                        if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                            return
                time.sleep(0.05)
        finally:
            if channel is not None:
                channel.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=6000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def stop(self, timeout=10.0):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


@contextlib.contextmanager
def own_daemon(workdir: Path, sessions=(), **daemon_args):
    """A daemon of the test's own: yields (daemon, stub, [one session token per
    client name in `sessions`]); at the end it must stop with exit status 0."""
    from warpd.v1 import runtime_pb2, runtime_pb2_grpc

    d = Daemon(daemon_binary(), workdir, **daemon_args)
    d.start()
    channel = open_channel(d.address)
    try:
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        tokens = [stub.OpenSession(runtime_pb2.OpenSessionRequest(client_name=n)).session for n in sessions]
        yield d, stub, tokens
    finally:
        channel.close()
        assert d.stop() == 0, d.log_tail()


def write_tenants_file(directory: Path, limits_by_tenant: dict):
    """A tenants file at `directory`/tenants.json with one fresh token per
    tenant; returns (path, {name: token}). `limits_by_tenant` maps a tenant's
    name to its "limits" (None: the defaults)."""
    tokens = {name: secrets.token_hex(32) for name in limits_by_tenant}
    tenants = []
    for name, limits in limits_by_tenant.items():
        t = {"name": name, "token_sha256": [hashlib.sha256(tokens[name].encode()).hexdigest()]}
        if limits is not None:
            t["limits"] = limits
        tenants.append(t)
    path = directory / "tenants.json"
    path.write_text(json.dumps({"tenants": tenants}))
    return path, tokens


class ExternalDaemon:
    """A daemon someone else runs (WARPD_TEST_ADDRESS), for debugging the suites."""

    def __init__(self, address):
        self.address = address
        self.proc = None

    def alive(self):
        return True

    def log_tail(self, n=0):
        return "(external daemon)"


@pytest.fixture(scope="session")
def warpd_daemon(tmp_path_factory):
    external = os.environ.get("WARPD_TEST_ADDRESS")
    if external:
        os.environ["WARPD_ADDRESS"] = external
        yield ExternalDaemon(external)
        return
    binary = daemon_binary()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        pytest.fail(f"the warpd daemon binary {binary} does not exist: build it first "
                    f"(scripts/setup.sh) or set WARPD_BIN", pytrace=False)
    d = Daemon(binary, tmp_path_factory.mktemp("warpd"))
    d.start()
    os.environ["WARPD_ADDRESS"] = d.address
    yield d
    import warpd

    warpd.shutdown()
    alive_at_end = d.alive()
    code = d.stop()
    assert alive_at_end, f"warpd died during the tests:\n{d.log_tail()}"
    assert code == 0, f"warpd exited with status {code} on SIGTERM:\n{d.log_tail()}"


@pytest.fixture(scope="session")
def wp(warpd_daemon):
    """The warpd client, initialized against the session's daemon."""
    import warpd

    warpd.init()
    return warpd


@pytest.fixture
def raw(wp):
    """(stub, session) for requests the client API would never make."""
    from warpd import context
    from warpd.v1 import runtime_pb2_grpc

    rt = context.runtime()
    return runtime_pb2_grpc.RuntimeStub(rt.channel), rt.session


@pytest.fixture
def serving(wp, warpd_daemon):
    """Call after an error: asserts the daemon still runs kernels correctly."""
    def check():
        from serving_check import run_check

        assert warpd_daemon.alive(), f"warpd died:\n{warpd_daemon.log_tail()}"
        run_check(wp)
        return True

    return check


@pytest.fixture(scope="session")
def cpu_kernel_refusal(wp):
    """Why the daemon's CPU runs no kernels, or "" when it does: the lean CUDA-only
    build (scripts/build-lean.sh, the daemon of the GPU check) has no CPU JIT."""
    from warpd.errors import UnimplementedError

    @wp.kernel
    def cpu_probe(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0

    a = wp.zeros(1, dtype=float, device="cpu")
    try:
        wp.launch(cpu_probe, dim=1, inputs=[a], device="cpu")
        wp.synchronize_device("cpu")
    except UnimplementedError as e:
        return str(e)
    assert a.numpy()[0] == 1.0
    return ""


@pytest.fixture
def on_cpu(wp, cpu_kernel_refusal):
    """Runs the test with "cpu" as the default device (arrays and launches there, as a
    client whose default device is the CPU), for what only the CPU device has: memory
    mapped into a local client. Skips where the daemon runs no CPU kernels."""
    if cpu_kernel_refusal:
        pytest.skip(f"this daemon runs no kernels on the CPU: {cpu_kernel_refusal}")
    with wp.ScopedDevice("cpu"):
        yield
