"""A private warpd daemon for the benchmark, in a directory of its own.

It listens on a Unix socket in that directory (and on 127.0.0.1:PORT when a
port is given), keeps its kernel cache, token file and state there, and logs
to daemon.log there. ``start()`` returns once it answers GetServerInfo;
``stop()`` sends SIGTERM and waits. Restarting on the same directory keeps
the kernel cache (the disk-cache row depends on that).
"""

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, binary: str, workdir: Path, tcp_port: int | None = None, extra_args=()):
        self.binary, self.dir = binary, Path(workdir)
        self.extra_args = list(extra_args)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.unix_address = f"unix:{self.dir / 'warpd.sock'}"
        self.tcp_address = f"127.0.0.1:{tcp_port}" if tcp_port else None
        self.token_file = self.dir / "token"
        self.proc = None

    def start(self, timeout: float = 60.0):
        args = [self.binary, "--listen", self.unix_address, "--cache-dir", str(self.dir / "cache"),
                "--token-file", str(self.token_file), "--state-dir", str(self.dir / "state"),
                "--log-level", "warn"]
        if self.tcp_address:
            args += ["--listen", self.tcp_address]
        args += self.extra_args
        self.log = open(self.dir / "daemon.log", "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        from warpd.daemon import probe

        deadline = time.monotonic() + timeout
        while probe(self.unix_address, timeout=1.0) is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.binary} did not start; see {self.dir / 'daemon.log'}")
            time.sleep(0.05)

    def stop(self):
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        self.log.close()
