"""How the client proves who it is to the daemon, and keeps its session alive.

Every call carries ``authorization: Bearer <token>``. The token comes from,
in order:

1. ``wp.config.token`` or the ``WARPD_TOKEN`` environment variable (a token
   an operator gave you for a shared daemon);
2. for a Unix-socket address, the daemon's login socket beside it
   (``<socket>.login``): the daemon looks at which local user connected
   (the kernel tells it) and answers with that user's tenant token;
3. for a loopback TCP address, the token file a daemon running without a
   tenants file writes for its own user (``$XDG_RUNTIME_DIR/warpd.token``,
   else ``/tmp/warpd-$UID.token``), read only when it belongs to this user and
   nobody else can read it.

TLS: ``wp.config.tls_ca`` or ``WARPD_TLS_CA`` names the PEM file of the
certificate authority that signed the daemon's certificate; TCP connections
then use TLS.

Leases: a session lives while its client holds it. ``LeaseHolder`` keeps one
``HoldSession`` stream open on a background thread; when this process dies,
the connection closes and the daemon frees the session after its grace
period.
"""

from __future__ import annotations

import os
import socket
import stat
import threading

import grpc

from . import config
from .errors import UnavailableError

_LOGIN_TIMEOUT = 5.0


def default_token_file() -> str:
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(xdg, "warpd.token") if xdg else f"/tmp/warpd-{os.getuid()}.token"


def unix_path(address: str) -> str | None:
    """The socket path of a unix: address, or None for TCP."""
    if not address.startswith("unix:"):
        return None
    path = address[5:]
    return path[2:] if path.startswith("//") else path


def _is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0]
    return host in ("localhost", "[::1]") or host.startswith("127.")


def login(socket_path: str) -> str:
    """The token the daemon's login socket gives this user (raises when it refuses)."""
    path = socket_path + ".login"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(_LOGIN_TIMEOUT)
        try:
            s.connect(path)
            data = b""
            while not data.endswith(b"\n") and len(data) < 1024:
                chunk = s.recv(1024)
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            raise UnavailableError(f"could not log in at the warpd login socket {path}: {e}") from None
    line = data.decode("utf-8", "replace").strip()
    if line.startswith("token "):
        return line[6:]
    reason = line[6:] if line.startswith("error ") else (line or "no answer")
    raise UnavailableError(f"the warpd daemon at unix:{socket_path} refused this user: {reason}",
                           grpc.StatusCode.PERMISSION_DENIED)


def read_token_file(path: str) -> str | None:
    """The token in `path` if it is a file of this user that only this user can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()
                or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO)):
            return None
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
        return text or None
    finally:
        os.close(fd)


def find_token(address: str) -> tuple[str | None, str]:
    """(the bearer token to use for `address` or None, where it came from or
    was looked for: words for an error message)."""
    if config.token:
        return config.token.strip(), "wp.config.token"
    if os.environ.get("WARPD_TOKEN"):
        return os.environ["WARPD_TOKEN"].strip(), "WARPD_TOKEN"
    path = unix_path(address)
    if path is not None:
        return login(path), f"the login socket {path}.login"
    if _is_loopback(address):
        file = config.token_file or default_token_file()
        token = read_token_file(file)
        if token is not None:
            return token, f"the token file {file}"
        return None, f"the token file {file}: {_token_file_problem(file)}"
    return None, "none: the address is not on this machine, so no token file is read"


def token_for(address: str) -> str | None:
    """The bearer token to use for `address`, or None when none is known."""
    return find_token(address)[0]


def _token_file_problem(path: str) -> str:
    """Why read_token_file(path) gave no token, in words."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return "no such file"
    except OSError as e:
        return e.strerror or str(e)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to this user ({os.getuid()})"
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"its mode {stat.S_IMODE(st.st_mode):o} lets others read it (it must be 600)"
    return "it is empty"


def refusal_help(address: str, daemon_message: str, source: str) -> str:
    """The message of the AuthenticationError for a daemon at `address` that
    refused a call (`daemon_message`); `source`: find_token's second part."""
    if "no bearer token" in daemon_message:
        why = (f"this client has no bearer token (it looked at WARPD_TOKEN, wp.config.token and "
               f"{source})")
    else:
        why = (f"{daemon_message}: the token from {source} was revoked, or belongs to another "
               f"daemon or to an earlier start of this one (a daemon without a tenants file makes "
               f"a new token at each start)")
    return (f"the warpd daemon at {address} was reached, but it refused this client: {why}.\n"
            f"Set WARPD_TOKEN (or wp.config.token) to a token this daemon accepts:\n"
            f"  - a shared daemon (one started with --tenants): its operator gives each tenant a token;\n"
            f"  - a daemon without a tenants file writes its token, readable by the daemon's user only, to\n"
            f"    $XDG_RUNTIME_DIR/warpd.token on the daemon's host (else /tmp/warpd-<uid>.token, or the\n"
            f"    path of its --token-file flag); there: export WARPD_TOKEN=$(cat /tmp/warpd-$(id -u).token)\n"
            f"See docs/operations.md, 'Who may call: tokens and tenants'.")



def _tls_ca() -> str | None:
    return config.tls_ca or os.environ.get("WARPD_TLS_CA") or None


class _Auth(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
            grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the bearer token to every call."""

    def __init__(self, token: str):
        self.metadata = ("authorization", "Bearer " + token)

    def _details(self, details):
        md = list(details.metadata or []) + [self.metadata]
        return details._replace(metadata=md) if hasattr(details, "_replace") else _Details(details, md)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)


class _Details(grpc.ClientCallDetails):
    def __init__(self, d, metadata):
        self.method = d.method
        self.timeout = d.timeout
        self.metadata = metadata
        self.credentials = d.credentials
        self.wait_for_ready = getattr(d, "wait_for_ready", None)
        self.compression = getattr(d, "compression", None)


def open_channel(address: str, options=(), token: str | None = None) -> grpc.Channel:
    """A channel to `address` whose calls carry the token (TLS when configured)."""
    ca = _tls_ca()
    if ca and unix_path(address) is None:
        with open(ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        channel = grpc.secure_channel(address, creds, options=list(options))
    else:
        channel = grpc.insecure_channel(address, options=list(options))
    if token is None:
        token = token_for(address)
    if token:
        channel = grpc.intercept_channel(channel, _Auth(token))
    return channel


class LeaseHolder:
    """Holds a session's lease with a HoldSession stream on a daemon thread."""

    def __init__(self, stub, session: str, request_type):
        self._stub = stub
        self._request = request_type(session=session)
        self._stop = threading.Event()
        self._call = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="warpd-lease", daemon=True)
        self._thread.start()

    def _run(self):
        delay = 0.5
        while not self._stop.is_set():
            try:
                with self._lock:
                    if self._stop.is_set():
                        return
                    self._call = self._stub.HoldSession(self._request)
                for _ in self._call:
                    delay = 0.5
                return  # the daemon ended the stream: the session is closed
            except grpc.RpcError as e:
                if self._stop.is_set() or e.code() in (grpc.StatusCode.UNAUTHENTICATED,
                                                       grpc.StatusCode.UNIMPLEMENTED):
                    return
            # The connection dropped: try again while the daemon may still
            # keep the session (its grace period).
            self._stop.wait(delay)
            delay = min(delay * 2, 5.0)

    def stop(self):
        with self._lock:
            self._stop.set()
            if self._call is not None:
                self._call.cancel()
