"""The exceptions warpd raises, and the one place gRPC status codes become them.

Every error that comes from the daemon is a :class:`WarpdError` whose message is
the server's message unchanged (for kernel problems it names the user's
file:line). Faults of asynchronous work (a kernel that indexed out of bounds)
are raised at the next sync point: ``wp.synchronize()``, ``array.numpy()``.

Errors found on the client before anything is sent (wrong launch arguments)
are plain ``TypeError``/``ValueError``, as in Warp.

Errors in a kernel's code (CompileError) and faults of a running kernel
(KernelError) name the user's file:line; when that file (or the notebook
cell, which IPython keeps in ``linecache``) is readable here, the line's text
is added as a note (PEP 678), as Warp shows it: tracebacks, in a terminal or a
notebook, print it under the message, while ``str(e)`` stays the daemon's
message (patterns written for Warp's messages keep matching).
"""

from __future__ import annotations

import linecache
import os
import re
import stat

import grpc

from .v1 import runtime_pb2


class WarpdError(RuntimeError):
    """Base class of every error reported by (or about) the warpd daemon.

    ``code`` is the gRPC status code when the error came from the daemon.
    """

    def __init__(self, message: str, code: grpc.StatusCode | None = None):
        super().__init__(message)
        self.message = message
        self.code = code


# Source files larger than this are not read for a note (a location is the
# daemon's text: it must not make the client read a huge or endless file).
_MAX_SOURCE_BYTES = 8 << 20


def source_line(path: str, line: int) -> str | None:
    """Line `line` (1-based) of `path`, without its newline; None when it
    cannot be read. Notebook cells come from linecache (IPython registers
    them there); other files only when they are regular files of at most
    _MAX_SOURCE_BYTES."""
    if line < 1 or not path:
        return None
    if path not in linecache.cache:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_SOURCE_BYTES:
            return None
    try:
        text = linecache.getline(path, line)
    except Exception:  # an undecodable file
        return None
    text = text.rstrip("\r\n")
    return text if text.strip() else None


def source_note(path: str, line: int, col: int | None = None) -> str | None:
    """The note showing line `line` of `path` as a compiler does: the line's
    number and text, and a caret under column `col` (1-based, in UTF-8 bytes
    as Python's ast counts them); None when the line cannot be read."""
    text = source_line(path, line)
    if text is None:
        return None
    number = str(line)
    out = f" {number} | {text}"
    if col is not None and col >= 1:
        prefix = text.encode("utf-8")[:col - 1].decode("utf-8", "replace")
        if len(prefix) < len(text):
            pad = "".join(c if c == "\t" else " " for c in prefix)
            out += f"\n {' ' * len(number)} | {pad}^"
    return out


# "file:line:col" or "file:line" (a CompileError's location).
_LOCATION = re.compile(r"^(.+?):(\d+)(?::(\d+))?$")
# Where a kernel fault happened, in the daemon's message: "kernel 'k' at file:line: ...".
_FAULT_AT = re.compile(r"\bat (.+?):(\d+): ")


def _add_source_note(exc: BaseException, path: str, line: int, col: int | None = None):
    note = source_note(path, line, col)
    if note is not None and note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


# Warp's error classes for mistakes in a kernel's code, with Warp 1.19's
# hierarchy: WarpCodegenError is a RuntimeError; the others derive from the
# builtin exception of their name only (a WarpCodegenTypeError is a
# TypeError, not a WarpCodegenError).
class WarpCodegenError(RuntimeError):
    """General error in a kernel's code (warpd's CompileError is one)."""


class WarpCodegenTypeError(TypeError):
    """A value of the wrong type in a kernel's code."""


class WarpCodegenValueError(ValueError):
    """A value of the right type but not an acceptable one in a kernel's code."""


class WarpCodegenAttributeError(AttributeError):
    """An attribute or function that does not exist, named in a kernel's code."""


class WarpCodegenIndexError(IndexError):
    """An index out of range in a kernel's code."""


class WarpCodegenKeyError(KeyError):
    """An undefined name in a kernel's code."""


class CompileError(WarpdError, WarpCodegenError):
    """A kernel or function failed to translate or type-check.

    ``str(e)`` is ``"file:line:col: error: <text>"``: the text is Warp's
    wording where Warp has one and ends the message, so patterns written for
    Warp's errors (``...$``) match. The parts are attributes: ``location``
    ("file:line:col", or None), ``text``, ``function`` (the kernel or
    function it happened in, or None) and ``category`` (the
    ``warpd.v1.ErrorCategory`` number). The function is also a note
    (shown in tracebacks). Each category has its own subclass, which is also
    the Warp class of that category (:func:`compile_error` picks it).
    """

    category = 0  # ERROR_CATEGORY_GENERAL

    def __init__(self, message: str, code: grpc.StatusCode | None = None, *, location: str | None = None,
                 text: str | None = None, function: str | None = None):
        super().__init__(message, code)
        self.location = location
        self.text = message if text is None else text
        self.function = function
        if function:
            self.add_note(f"in {function}")
        where = _LOCATION.match(location or "")
        if where:
            _add_source_note(self, where.group(1), int(where.group(2)),
                             int(where.group(3)) if where.group(3) else None)

    def __str__(self):
        # KeyError's own __str__ would quote the message.
        return self.message

    def fresh(self) -> "CompileError":
        """A new exception equal to this one (to raise again with a new traceback)."""
        e = type(self)(self.message, self.code, location=self.location, text=self.text, function=self.function)
        for attr in ("failures", "rpc_error"):
            if hasattr(self, attr):
                setattr(e, attr, getattr(self, attr))
        return e


class CompileTypeError(CompileError, WarpCodegenTypeError):
    category = 1


class CompileValueError(CompileError, WarpCodegenValueError):
    category = 2


class CompileAttributeError(CompileError, WarpCodegenAttributeError):
    category = 3


class CompileKeyError(CompileError, WarpCodegenKeyError):
    category = 4


class CompileIndexError(CompileError, WarpCodegenIndexError):
    category = 5


_BY_CATEGORY = {c.category: c for c in (CompileError, CompileTypeError, CompileValueError, CompileAttributeError,
                                        CompileKeyError, CompileIndexError)}

# Python's exception classes a front-end check names -> the category whose class derives from it.
CATEGORY_OF = {TypeError: 1, ValueError: 2, AttributeError: 3, KeyError: 4, IndexError: 5}


def compile_error(text: str, category: int = 0, *, location: str | None = None, function: str | None = None,
                  message: str | None = None, code: grpc.StatusCode | None = None) -> CompileError:
    """The CompileError of `category` (a ``warpd.v1.ErrorCategory`` number, or
    a Python exception class of CATEGORY_OF) for `text` at `location`."""
    if isinstance(category, type):
        category = CATEGORY_OF.get(category, 0)
    cls = _BY_CATEGORY.get(category, CompileError)
    if message is None:
        message = f"{location}: error: {text}" if location else text
    return cls(message, code, location=location, text=text, function=function)


def from_failure(f, code: grpc.StatusCode | None = grpc.StatusCode.INVALID_ARGUMENT) -> CompileError:
    """The CompileError of a ``warpd.v1.FailedFunction`` (a daemon that sends no
    parts gives a general error whose message is the daemon's)."""
    what = f"{'kernel' if f.kernel else 'function'} '{f.display_name}'" if f.display_name else None
    if not f.text:
        return CompileError(f.message, code, function=what)
    return compile_error(f.text, f.category, location=f.location or None, function=what, code=code)


class KernelError(WarpdError):
    """A kernel faulted while running (e.g. an out-of-bounds array access).

    The message names the kernel and its file:line; the line's text is a note
    when the file is readable here."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None):
        super().__init__(message, code)
        where = _FAULT_AT.search(message)
        if where:
            _add_source_note(self, where.group(1), int(where.group(2)))


class InvalidArgumentError(WarpdError, ValueError):
    """The daemon rejected a request as malformed or ill-typed."""


class NotFoundError(WarpdError, LookupError):
    """A handle (array, module) or kernel the daemon does not know."""


class AlreadyExistsError(WarpdError):
    pass


class PermissionDeniedError(WarpdError, PermissionError):
    pass


class SessionError(WarpdError):
    """The session is unknown to the daemon (expired, closed, or the daemon restarted)."""


class ResourceExhaustedError(WarpdError, MemoryError):
    """A quota or a size limit was exceeded."""


class FailedPreconditionError(WarpdError):
    pass


class DeadlineExceededError(WarpdError, TimeoutError):
    pass


class CancelledError(WarpdError):
    pass


class UnimplementedError(WarpdError, NotImplementedError):
    pass


class InternalError(WarpdError):
    """A bug in the daemon; the message says what it was doing."""


class UnavailableError(WarpdError, ConnectionError):
    """The daemon could not be reached."""


class AuthenticationError(WarpdError, PermissionError):
    """The daemon was reached but did not accept this client: the client has
    no bearer token, or one the daemon does not know (revoked, or written by
    an earlier start of the daemon), or the daemon's login socket refused
    this user. The message says where a token comes from (``WARPD_TOKEN``)."""


class VersionMismatchError(WarpdError):
    """The daemon's version speaks another protocol than this client's (versions.py)."""


class DaemonStartError(WarpdError):
    """A private daemon could not be started by ``wp.init()``."""


class DeviceError(WarpdError, ValueError):
    """A device identifier that the connected daemon does not have."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: SessionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.OUT_OF_RANGE: KernelError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DATA_LOSS: InternalError,
    grpc.StatusCode.UNKNOWN: InternalError,
    grpc.StatusCode.ABORTED: FailedPreconditionError,
}


# The daemon's UNAUTHENTICATED answers about the caller's token (server/tenants:
# TenantRegistry::Authenticate), as opposed to an unknown or closed session.
_TOKEN_REFUSALS = ("carries no bearer token", "unknown bearer token", "'authorization' metadata")


def is_token_refusal(message: str) -> bool:
    """Whether an UNAUTHENTICATED message says the call's token was refused."""
    return any(t in message for t in _TOKEN_REFUSALS)


def from_rpc_error(err: grpc.RpcError, *, compiling: bool = False) -> WarpdError:
    """Converts a failed RPC into the matching WarpdError.

    ``compiling``: the error answers LoadModule, where INVALID_ARGUMENT means
    the user's kernel code is wrong (a CompileError).
    """
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = err.details() if hasattr(err, "details") else None
    message = details or (code.name if code is not None else str(err))
    if compiling and code == grpc.StatusCode.INVALID_ARGUMENT:
        cls = CompileError
    elif code == grpc.StatusCode.UNAUTHENTICATED and is_token_refusal(message):
        cls = AuthenticationError
    else:
        cls = _BY_CODE.get(code, WarpdError)
    exc = cls(message, code)
    exc.rpc_error = err
    if cls is CompileError:
        exc.failures = _compile_failures(err)
    return exc


_DETAILS_KEY = "grpc-status-details-bin"
_FAILURES_TYPE = "type.googleapis.com/warpd.v1.CompileFailures"


def _compile_failures(err) -> dict:
    """IR name -> CompileError of each function a failed LoadModule lists in
    its error details (runtime.proto's StatusDetails); {} without them."""
    try:
        trailers = err.trailing_metadata() or ()
    except Exception:  # not a call error (tests build RpcErrors by hand)
        return {}
    out = {}
    for key, value in trailers:
        if key != _DETAILS_KEY:
            continue
        details = runtime_pb2.StatusDetails.FromString(value)
        for d in details.details:
            if d.type_url == _FAILURES_TYPE:
                for f in runtime_pb2.CompileFailures.FromString(d.value).failed:
                    out[f.name] = from_failure(f)
    return out
