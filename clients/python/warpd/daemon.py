"""Finding and starting a private warpd daemon for ``wp.init()``.

When no daemon is configured or answering, ``wp.init()`` starts one that only
this process uses: it listens on a Unix socket in a fresh temporary directory
(mode 0700), and is stopped when the process exits (atexit, and on Linux a
parent-death signal when started from the main thread, so a killed client does
not leave it behind: ``--parent-pid``, which the daemon arms itself).

The daemon is started without running any Python code between fork and exec
(no ``preexec_fn``): in a process that uses gRPC, a forked child that runs
code gets gRPC's fork handlers, which restart its poller; the child's closing
of inherited descriptors then pulls the poller's epoll fd away and the child
aborts before exec ("Epoll1Poller ... epoll_wait error: Bad file
descriptor"). Without preexec_fn, subprocess uses vfork/exec directly.

The binary is, in order: ``$WARPD_BIN``; ``bin/warpd`` inside the package
(wheels); ``build/bin/warpd`` of the source tree an editable install points
into; ``warpd`` on PATH.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc

from . import auth
from .errors import DaemonStartError, UnavailableError
from .v1 import runtime_pb2, runtime_pb2_grpc


def find_binary() -> str | None:
    """Path of the warpd binary to start, or None."""
    env = os.environ.get("WARPD_BIN")
    if env:
        return env
    here = Path(__file__).resolve().parent
    candidates = [here / "bin" / "warpd"]
    # Editable install: <repo>/clients/python/warpd -> <repo>/build/bin/warpd.
    repo = here.parent.parent.parent
    candidates.append(repo / "build" / "bin" / "warpd")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("warpd")


def default_addresses() -> list[str]:
    """The addresses a default local daemon listens on, Unix socket first."""
    out = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    sock = os.path.join(xdg, "warpd.sock") if xdg else f"/tmp/warpd-{os.getuid()}.sock"
    if os.path.exists(sock):
        out.append("unix:" + sock)
    out.append("127.0.0.1:7788")
    return out


def probe(address: str, timeout: float) -> runtime_pb2.ServerInfo | None:
    """ServerInfo of the daemon at address if it answers within timeout, else None."""
    try:
        channel = auth.open_channel(address)
    except (UnavailableError, OSError):
        return None
    try:
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        return stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(), timeout=timeout)
    except grpc.RpcError:
        return None
    finally:
        channel.close()


class PrivateDaemon:
    """A warpd process owned by this client process."""

    def __init__(self, binary: str, cache_dir: str | None = None, log_level: str = "warn"):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="warpd-")
        self.socket = os.path.join(self.dir, "warpd.sock")
        self.address = "unix:" + self.socket
        self.log_path = os.path.join(self.dir, "warpd.log")
        args = [binary, "--listen", self.address, "--allow-client-cache-dir",
                "--log-level", log_level,
                # Its own token file, not the user's shared daemon's.
                "--token-file", os.path.join(self.dir, "warpd.token")]
        if cache_dir:
            args += ["--cache-dir", str(cache_dir)]
        self.args = args
        self.proc: subprocess.Popen | None = None
        self._stopped = False

    def start(self, timeout: float) -> runtime_pb2.ServerInfo:
        """Starts the process and waits until it answers GetServerInfo."""
        args = list(self.args)
        # The parent-death signal fires when the thread that started the
        # daemon exits, so only a main-thread start can ask for it.
        if threading.current_thread() is threading.main_thread() and sys.platform == "linux":
            args += ["--parent-pid", str(os.getpid())]
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=False,
            )
        except OSError as e:
            raise DaemonStartError(f"could not start the warpd daemon '{self.binary}': {e}") from None
        finally:
            log.close()
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        channel = None
        try:
            while True:
                if self.proc.poll() is not None:
                    raise DaemonStartError(
                        f"the warpd daemon '{self.binary}' exited with status {self.proc.returncode} "
                        f"during start-up:\n{self.log_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = self.log_tail()
                    self.stop()
                    raise DaemonStartError(
                        f"the warpd daemon '{self.binary}' did not answer on {self.address} within "
                        f"{timeout:.0f} s:\n{tail}")
                # The login socket appears once the daemon serves.
                if channel is None and os.path.exists(self.socket + ".login"):
                    try:
                        channel = auth.open_channel(self.address)
                    except UnavailableError:
                        pass
                if channel is not None:
                    try:
                        stub = runtime_pb2_grpc.RuntimeStub(channel)
                        return stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(),
                                                  timeout=min(2.0, max(left, 0.1)))
                    except grpc.RpcError:
                        pass
                time.sleep(0.02)
        finally:
            if channel is not None:
                channel.close()

    def log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except OSError:
            return "(no log)"
        text = data[-limit:].decode("utf-8", "replace").rstrip()
        return text or "(empty log)"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self, timeout: float = 5.0):
        """Terminates the daemon (SIGTERM, then SIGKILL) and removes its directory."""
        if self._stopped:
            return
        self._stopped = True
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                p.terminate()
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except Exception:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
