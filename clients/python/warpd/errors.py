"""The exceptions warpd raises, and the one place gRPC status codes become them.

Every error that comes from the daemon is a :class:`WarpdError` whose message is
the server's message unchanged (for kernel problems it names the user's
file:line). Faults of asynchronous work (a kernel that indexed out of bounds)
are raised at the next sync point: ``wp.synchronize()``, ``array.numpy()``.

Errors found on the client before anything is sent (wrong launch arguments)
are plain ``TypeError``/``ValueError``, as in Warp.
"""

from __future__ import annotations

import grpc


class WarpdError(RuntimeError):
    """Base class of every error reported by (or about) the warpd daemon.

    ``code`` is the gRPC status code when the error came from the daemon.
    """

    def __init__(self, message: str, code: grpc.StatusCode | None = None):
        super().__init__(message)
        self.message = message
        self.code = code


class WarpCodegenError(RuntimeError):
    """Warp's name for an error in a kernel's code (warpd's CompileError is one)."""


class WarpCodegenTypeError(WarpCodegenError, TypeError):
    pass


class WarpCodegenValueError(WarpCodegenError, ValueError):
    pass


class WarpCodegenAttributeError(WarpCodegenError, AttributeError):
    pass


class WarpCodegenIndexError(WarpCodegenError, IndexError):
    pass


class WarpCodegenKeyError(WarpCodegenError, KeyError):
    pass


class CompileError(WarpdError, WarpCodegenError):
    """A kernel module failed to translate or type-check ("file:line:col: error: ...")."""


class KernelError(WarpdError):
    """A kernel faulted while running (e.g. an out-of-bounds array access)."""


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
    else:
        cls = _BY_CODE.get(code, WarpdError)
    exc = cls(message, code)
    exc.rpc_error = err
    return exc
