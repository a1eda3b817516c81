"""The command socket: a local client's fast path for Submit and Synchronize.

A client that reached the daemon over its Unix socket also connects to
``<socket>.cmd`` (server/local/command_socket.h has the protocol): one
connection for the session, frames of an 8-byte header (body length, kind)
and a body that is the same serialized request gRPC would carry (Submit,
Synchronize, Download of up to MAX_DOWNLOAD bytes in one reply, and
CreateView, so slicing an array costs one frame). It skips
gRPC's HTTP/2 framing and the daemon's thread hops, which is most of a
launch + synchronize round trip.

Anything that keeps the socket from working (an older daemon without it, a
TCP address, a refusal such as too many connections) leaves ``connect``
returning None, and the client uses gRPC. A refusal's message (e.g. "too
many command connections for tenant 'a' ...") is kept in ``last_refusal``
and printed with ``wp.config.verbose``. Once connected, a
broken connection (the daemon stopped) raises UnavailableError like a failed
RPC; at shutdown the daemon answers the request in flight first (within its
grace; CANCELLED if the work is cancelled), as it does a gRPC call.

Waiting for a reply: the client first polls the socket without sleeping
for up to ``config.command_spin_us`` (a short launch + synchronize answers
within it, and a thread that never slept is not woken), then sleeps in recv.
Requests that wait for queued work (Synchronize, a Submit that
synchronizes) spin only while such waits have lately been short (an
average under twice that budget): a wait for a millisecond-long build or
kernel would only take a core from the daemon, which on a small machine
runs that very work.

Not thread-safe: the runtime's lock serializes its use (stream.py).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time

import collections

import grpc

from . import auth, config
from .wire import SUBMIT_SYNCHRONIZE
from .errors import _BY_CODE, DeadlineExceededError, UnavailableError, WarpdError

HELLO, SUBMIT, SYNCHRONIZE, DOWNLOAD, CREATE_VIEW = 1, 2, 3, 4, 5
# The daemon's limit on one frame's body; larger requests go over gRPC.
MAX_FRAME = 2 << 20
# The most bytes one DOWNLOAD answers (server/local/local_commands.h).
MAX_DOWNLOAD = 512 << 10

_HEADER = struct.Struct("<IB3x")
_DONTWAIT = socket.MSG_DONTWAIT
_clock = time.perf_counter
_CODES = {c.value[0]: c for c in grpc.StatusCode}

#: Why the daemon last refused a command connection (its error message), or
#: None; for diagnostics.
last_refusal: str | None = None


def command_path(address: str) -> str | None:
    """The command socket beside a unix: address, or None for TCP."""
    path = auth.unix_path(address)
    return None if path is None else path + ".cmd"


class CommandChannel:
    def __init__(self, sock: socket.socket):
        self._sock = sock
        self.requests = 0  # sent so far, for tests and diagnostics
        # Per request sent and not yet answered: (waits for queued work, sent at).
        self._sent = collections.deque()
        # Moving average of how long waits for queued work took, in us.
        self.wait_average_us = 0.0

    def send(self, kind: int, body: bytes):
        """Sends one request; its reply is read by `reply` (in order)."""
        try:
            self._sock.sendall(_HEADER.pack(len(body), kind) + body)
        except OSError as e:
            raise self._broken(e) from None
        self.requests += 1
        waits = kind == SYNCHRONIZE or (kind == SUBMIT and body.endswith(SUBMIT_SYNCHRONIZE))
        self._sent.append((waits, _clock()))

    @property
    def owed(self) -> int:
        """Replies to requests sent and not yet read."""
        return len(self._sent)

    def reply(self) -> bytes:
        """The next reply's body; raises the WarpdError of an error reply."""
        code, body = self._read_frame()
        if code == 0:
            return body
        status = _CODES.get(code, grpc.StatusCode.UNKNOWN)
        raise _BY_CODE.get(status, WarpdError)(body.decode("utf-8", "replace"), status)

    def call(self, kind: int, body: bytes, timeout: float | None = None) -> bytes:
        """One request and its reply; with `timeout`, DeadlineExceededError
        when the reply takes longer (the connection is then out of step:
        close it)."""
        self.send(kind, body)
        if timeout is None:
            return self.reply()
        self._sock.settimeout(timeout)
        try:
            return self.reply()
        finally:
            try:
                self._sock.settimeout(None)
            except OSError:
                pass

    def close(self):
        try:
            self._sock.close()
        except OSError:
            pass

    def _read_frame(self):
        waits, sent = self._sent.popleft() if self._sent else (False, _clock())
        header = None
        spin = config.command_spin_us
        if waits and self.wait_average_us > 2 * spin:
            spin = 0  # waits are long lately: sleep at once
        if spin > 0 and self._sock.gettimeout() is None:
            header = self._poll_header(spin)
        if header is None:
            header = self._read_exactly(_HEADER.size)
        if waits:
            self.wait_average_us += 0.25 * ((_clock() - sent) * 1e6 - self.wait_average_us)
        n, code = _HEADER.unpack(header)
        return code, self._read_exactly(n) if n else b""

    def _poll_header(self, spin_us: float):
        """The next reply's header when it comes within `spin_us` (polled
        without sleeping), else None (for a blocking socket: with a timeout,
        Python's recv waits in poll first)."""
        sock = self._sock
        end = _clock() + spin_us * 1e-6
        while True:
            try:
                data = sock.recv(_HEADER.size, _DONTWAIT)
            except BlockingIOError:
                if _clock() > end:
                    return None
                continue
            except OSError as e:
                raise self._broken(e) from None
            if len(data) == _HEADER.size:
                return data
            if not data:
                raise UnavailableError("the warpd daemon closed the command connection",
                                       grpc.StatusCode.UNAVAILABLE)
            return data + self._read_exactly(_HEADER.size - len(data))

    def _read_exactly(self, n: int) -> bytes:
        sock = self._sock
        try:
            data = sock.recv(n)
            if len(data) == n:
                return data
            parts = [data]
            got = len(data)
            while True:
                if not data:
                    raise UnavailableError("the warpd daemon closed the command connection",
                                           grpc.StatusCode.UNAVAILABLE)
                if got == n:
                    return b"".join(parts)
                data = sock.recv(n - got)
                parts.append(data)
                got += len(data)
        except TimeoutError:
            raise DeadlineExceededError("no answer from the warpd daemon in time",
                                        grpc.StatusCode.DEADLINE_EXCEEDED) from None
        except OSError as e:
            raise self._broken(e) from None

    def _broken(self, e: OSError) -> UnavailableError:
        return UnavailableError(f"the warpd daemon's command connection broke: {e}",
                                grpc.StatusCode.UNAVAILABLE)


def connect(address: str, token: str, session: str, timeout: float = 2.0) -> CommandChannel | None:
    """A command channel for `session`, or None when the daemon offers none
    here (see the module doc). Set WARPD_COMMAND_SOCKET=0 to always use gRPC."""
    path = command_path(address)
    if path is None or not token or os.environ.get("WARPD_COMMAND_SOCKET", "1") == "0":
        return None
    global last_refusal
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        channel = CommandChannel(sock)
        try:
            channel.send(HELLO, f"{token} {session}".encode())
        except UnavailableError:
            pass  # refused at accept: the daemon may have answered and hung up already
        channel.reply()
        sock.settimeout(None)
        return channel
    except WarpdError as e:
        sock.close()
        if e.code is not None and e.code != grpc.StatusCode.UNAVAILABLE:  # an answer, not a broken socket
            last_refusal = e.message
            if config.verbose:
                print(f"warpd: the command socket refused this client ({e.message}); using gRPC",
                      file=sys.stderr)
        return None
    except OSError:
        sock.close()
        return None
