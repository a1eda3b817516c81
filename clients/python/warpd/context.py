"""The connection to the daemon: ``wp.init()``, the session, devices, streams.

There is one Runtime per process, made by ``init()`` (explicitly, or on first
use). It owns the gRPC channel, the session token, the device table and one
command Stream per device. ``Runtime.call`` is the single place RPCs are made
and their errors converted into WarpdErrors. A client on the daemon's Unix
socket sends Submit and Synchronize over the command socket instead
(local_commands.py: the same requests and answers, without gRPC) when the
daemon offers it.

Kernel output: what ``print``/``wp.printf`` in kernels printed comes back
with the answers to Submit, Synchronize and Download (after an error, from
ReadOutput) and is written to ``sys.stdout`` at once, so it appears in launch
order at the next sync point. In IPython/Jupyter the end of each cell is a
sync point when the cell left work queued, so a cell's kernel output shows
in that cell (as with Warp, whose CPU launches finish before the cell ends).
At exit (and ``wp.shutdown()``), queued work is run and its output printed
before the session closes.

Thread-safety: ``Runtime.lock`` (re-entrant) guards the streams and the
module-load caches; RPCs themselves are thread-safe in gRPC.
"""

from __future__ import annotations

import atexit
import os
import platform
import sys
import threading
import time

import grpc

from . import auth, config, local_commands, local_map, malloc_tuning, progress, versions
from . import daemon as daemon_mod
from .device import Device, resolve
from .errors import (AuthenticationError, DaemonStartError, DeadlineExceededError, DeviceError, UnavailableError,
                     WarpdError, from_rpc_error)
from .stream import Stream
from .v1 import runtime_pb2, runtime_pb2_grpc

_MAX_MESSAGE = 64 << 20
# How long the exit may wait for queued work so that its output is printed.
_EXIT_SYNC_TIMEOUT = 60.0

_runtime: Runtime | None = None
_init_lock = threading.Lock()

# The calls the command socket carries, and their answers.
_LOCAL_KINDS = {"Submit": local_commands.SUBMIT, "Synchronize": local_commands.SYNCHRONIZE,
                "Download": local_commands.DOWNLOAD, "CreateView": local_commands.CREATE_VIEW}
_RESPONSES = {"Submit": runtime_pb2.SubmitResponse, "Synchronize": runtime_pb2.SynchronizeResponse,
              "Download": runtime_pb2.DownloadChunk, "CreateView": runtime_pb2.CreateViewResponse}


class _LocalPending:
    """A Submit sent over the command socket whose reply is still to be read."""
    __slots__ = ("method",)

    def __init__(self, method: str):
        self.method = method


class Runtime:
    def __init__(self, address: str, private: daemon_mod.PrivateDaemon | None = None):
        self.address = address
        self.private = private
        self.channel = None
        self.stub = None
        self._raw: dict = {}
        self.lock = threading.RLock()
        self.session = ""
        self.info: runtime_pb2.ServerInfo | None = None
        self.devices: dict[str, Device] = {}
        # Devices the daemon lists but cannot run work on (GPUs before CUDA
        # execution exists), by name; kept out of `devices`, so Warp's device
        # queries count only devices a program can use.
        self.unavailable_devices: dict[str, Device] = {}
        self.default_device: Device | None = None
        # Per device name: the stream work goes to now (wp.set_stream /
        # ScopedStream; the default one unless set), the default stream
        # (stream 0 on the daemon, which transfers follow), and the streams
        # made with wp.Stream (streams.py).
        self.streams: dict[str, Stream] = {}
        self.default_streams: dict[str, Stream] = {}
        self.side_streams: dict[str, list] = {}
        # Module loads: (content hash, device) -> LoadedModule, or the CompileError.
        self.loaded_modules: dict = {}
        self.closed = False
        self.token_source = ""  # where the token came from (auth.find_token), for errors
        self.lease: auth.LeaseHolder | None = None
        self.cell_hook = None  # (IPython shell, hook) while registered
        # Mappings of freed arrays, for later arrays in the same memory files.
        self.spare_mappings = local_map.Spares()
        self.segments = local_map.Segments()  # small arrays' files, mapped whole
        # The command socket's channel (local clients), or None: gRPC.
        self.commands: local_commands.CommandChannel | None = None

    # ---------------------------------------------------------------- RPCs

    def call(self, method: str, request, *, compiling: bool = False, timeout=None):
        """Unary RPC `method`; failures become WarpdErrors. `request` is a
        message, or its serialized bytes for the methods in `_raw`."""
        local = self._local_frame(method, request)
        if local is not None:
            self._settle_local()
            return self._local_call(method, local, timeout)
        try:
            if request.__class__ is bytes:
                return self._raw[method](request, timeout=timeout)
            return getattr(self.stub, method)(request, timeout=timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e, compiling=compiling) from None

    def call_waiting(self, method: str, request, *, compiling: bool = False, delay: float | None = None,
                     waiting=None):
        """Like call, over gRPC; when the answer takes more than `delay` seconds,
        `waiting(elapsed)` is called then and every progress.TICK seconds while
        it is awaited (on this thread: the RPC's future is waited on with a
        timeout). None `delay`: a plain call."""
        if delay is None or waiting is None:
            return self.call(method, request, compiling=compiling)
        start = time.monotonic()
        future = getattr(self.stub, method).future(request)
        try:
            wait = max(delay, 0.0)
            while True:
                try:
                    return future.result(timeout=wait)
                except grpc.FutureTimeoutError:
                    waiting(time.monotonic() - start)
                    wait = progress.TICK
        except grpc.RpcError as e:
            raise from_rpc_error(e, compiling=compiling) from None
        except BaseException:  # e.g. Ctrl-C (a notebook's interrupt) while waiting
            future.cancel()
            raise

    def call_stream(self, method: str, request, device: str = "", timeout=None):
        """A Submit or Synchronize: prints the kernel output of the answer.

        When the call fails, the output of the launches that ran before the
        failure (a kernel that printed, then faulted) is read and printed
        before the error is raised.
        """
        try:
            resp = self.call(method, request, timeout=timeout)
        except WarpdError as err:
            self.read_output(device, after=err)
            raise
        self.emit_output(resp.output)
        return resp

    def raw_method(self, method: str):
        """The gRPC multi-callable of `method` (one of `_raw`): it takes
        serialized requests (Upload: an iterator of them) and, for Download,
        yields serialized responses. Failures are grpc.RpcErrors."""
        return self._raw[method]

    def start_stream_call(self, method: str, request: bytes):
        """Starts `method` (one of `_raw`) without waiting; returns the future
        for finish_stream_call."""
        local = self._local_frame(method, request)
        if local is not None:
            self._settle_local()
            self.commands.send(local[0], local[1])
            return _LocalPending(method)
        return self._raw[method].future(request)

    def _settle_local(self):
        """Reads the replies the command socket still owes (Submits sent without
        waiting, by any stream) before a new request: it answers in order."""
        if not self.commands.owed:
            return
        for s in self.all_streams():
            if s._pending is not None and s._pending.__class__ is _LocalPending:
                s.wait_pending()

    def finish_stream_call(self, future, device: str = ""):
        """Waits for a call from start_stream_call; like call_stream's end
        (prints its kernel output; failures become WarpdErrors)."""
        try:
            if future.__class__ is _LocalPending:
                resp = _RESPONSES[future.method].FromString(self.commands.reply())
            else:
                resp = future.result()
        except grpc.RpcError as e:
            err = from_rpc_error(e)
            self.read_output(device, after=err)
            raise err from None
        except WarpdError as err:
            self.read_output(device, after=err)
            raise
        self.emit_output(resp.output)
        return resp

    def _local_frame(self, method: str, request):
        """(kind, body) when `method` goes over the command socket, else None."""
        if self.commands is None:
            return None
        kind = _LOCAL_KINDS.get(method)
        if kind is None:
            return None
        body = request if request.__class__ is bytes else request.SerializeToString()
        if len(body) > local_commands.MAX_FRAME:
            return None
        return kind, body

    def _local_call(self, method: str, frame, timeout):
        channel = self.commands
        if timeout is None:
            return _RESPONSES[method].FromString(channel.call(*frame))
        try:
            return _RESPONSES[method].FromString(channel.call(*frame, timeout=timeout))
        except DeadlineExceededError:
            # The reply is still owed: the connection is out of step. gRPC from now on.
            self.commands = None
            channel.close()
            raise

    def emit_output(self, data: bytes):
        """Writes kernel output to sys.stdout (decoded as UTF-8, bad bytes replaced)."""
        if not data:
            return
        out = sys.stdout
        if out is None:
            return
        try:
            out.write(data.decode("utf-8", "replace"))
            out.flush()
        except (OSError, ValueError):  # a closed or broken stdout
            pass

    def read_output(self, device: str = "", after: WarpdError | None = None):
        """Fetches and prints the kernel output waiting on the daemon, if any.

        `after`: the error that made this necessary; nothing is read when it
        says the daemon or the session is gone. Never raises.
        """
        if after is not None and after.code in (grpc.StatusCode.UNAVAILABLE,
                                                grpc.StatusCode.UNAUTHENTICATED):
            return
        try:
            resp = self.stub.ReadOutput(runtime_pb2.ReadOutputRequest(
                session=self.session, device=device), timeout=10.0)
        except grpc.RpcError:
            return
        self.emit_output(resp.output)

    def _open(self, timeout: float):
        """Gets this user's token (retrying while the daemon starts) and opens the channel."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                token, self.token_source = auth.find_token(self.address)
                break
            except UnavailableError as e:
                if e.code == grpc.StatusCode.PERMISSION_DENIED:  # the login socket answered: no
                    raise AuthenticationError(
                        f"{e.message}; ask the daemon's operator to map your uid to a tenant, or set "
                        f"WARPD_TOKEN (or wp.config.token) to a token they gave you (docs/operations.md, "
                        f"'Who may call: tokens and tenants')", e.code) from None
                if time.monotonic() >= deadline:
                    raise UnavailableError(f"could not reach the warpd daemon at {self.address}: "
                                           f"{e.message}", e.code) from None
                time.sleep(0.05)
        self.token = token or ""
        self.share_path = local_map.share_path(self.address)
        self.channel = auth.open_channel(self.address, token=token or "", options=[
            ("grpc.max_send_message_length", _MAX_MESSAGE),
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
            # Keep the connection (and so the session's lease) alive.
            ("grpc.keepalive_time_ms", 30000),
            ("grpc.keepalive_permit_without_calls", 1),
        ])
        self.stub = runtime_pb2_grpc.RuntimeStub(self.channel)
        # Methods that take already serialized requests (stream.py builds
        # Submit requests from pre-serialized commands; array.py writes
        # Upload chunks and reads Download chunks itself, see wire.py).
        self._raw = {
            "Submit": self.channel.unary_unary(
                "/warpd.v1.Runtime/Submit", request_serializer=None,
                response_deserializer=runtime_pb2.SubmitResponse.FromString),
            "Upload": self.channel.stream_unary(
                "/warpd.v1.Runtime/Upload", request_serializer=None,
                response_deserializer=runtime_pb2.UploadResponse.FromString),
            "Download": self.channel.unary_stream(
                "/warpd.v1.Runtime/Download", request_serializer=None, response_deserializer=None),
        }

    def connect(self, timeout: float):
        if not self.address.startswith("unix:") and _tune_malloc_wanted():
            malloc_tuning.apply()  # before gRPC's threads make their arenas
        self._open(timeout)
        try:
            self.info = self.stub.GetServerInfo(runtime_pb2.GetServerInfoRequest(),
                                                timeout=timeout, wait_for_ready=True)
        except grpc.RpcError as e:
            err = from_rpc_error(e)
            if isinstance(err, AuthenticationError):  # the daemon answered: not with this token
                raise self._refused(err) from None
            raise UnavailableError(f"could not reach the warpd daemon at {self.address}: "
                                   f"{err.message}", e.code()) from None
        versions.check(config.version, self.info.version, self.address)
        try:
            resp = self.call("OpenSession", runtime_pb2.OpenSessionRequest(
                client_name=f"warpd-python pid={os.getpid()} host={platform.node()}"))
        except AuthenticationError as err:
            raise self._refused(err) from None
        self.session = resp.session
        self.lease = auth.LeaseHolder(self.stub, self.session, runtime_pb2.HoldSessionRequest)
        self.commands = local_commands.connect(self.address, self.token, self.session)
        self._set_devices(self.info)

    def _refused(self, err: AuthenticationError) -> AuthenticationError:
        """The error for a daemon that refused this client's token (or its lack of one),
        saying what to do."""
        out = AuthenticationError(auth.refusal_help(self.address, err.message, self.token_source), err.code)
        out.rpc_error = getattr(err, "rpc_error", None)
        return out

    def _set_devices(self, info):
        listed = [Device(d) for d in info.devices]
        self.devices = {d.alias: d for d in listed if not d.unavailable}
        self.unavailable_devices = {d.alias: d for d in listed if d.unavailable}
        if "cpu" not in self.devices:
            raise WarpdError(f"the warpd daemon at {self.address} reports no \"cpu\" device")
        # As in Warp: the first GPU that runs work, else the CPU.
        cuda = [d for d in self.devices.values() if d.is_cuda]
        self.default_device = cuda[0] if cuda else self.devices["cpu"]

    def refresh_info(self):
        self.info = self.call("GetServerInfo", runtime_pb2.GetServerInfoRequest())
        return self.info

    # ------------------------------------------------------------- devices

    def device(self, ident=None) -> Device:
        return resolve(self.devices, self.default_device, ident, self.unavailable_devices)

    def stream(self, device) -> Stream:
        """The stream work on `device` goes to now (its default stream unless
        wp.set_stream or a ScopedStream chose another)."""
        name = device.alias if isinstance(device, Device) else device
        s = self.streams.get(name)
        if s is None:
            s = self.default_stream(name)
        return s

    def default_stream(self, device) -> Stream:
        """The device's default stream (the daemon's stream 0): arrays and
        objects free and transfer through it."""
        name = device.alias if isinstance(device, Device) else device
        s = self.default_streams.get(name)
        if s is None:
            with self.lock:
                s = self.default_streams.get(name)
                if s is None:
                    s = Stream(self, name)
                    self.default_streams[name] = s
                    self.streams.setdefault(name, s)
        return s

    def all_streams(self) -> list:
        """Every stream of this client: the defaults, then those of wp.Stream."""
        out = list(self.default_streams.values())
        for side in self.side_streams.values():
            out.extend(side)
        return out

    def flush_all(self):
        with self.lock:
            for s in self.all_streams():
                s.flush()

    def synchronize(self, device=None):
        with self.lock:
            if device is None:
                streams = self.all_streams()
                busy = [s for s in streams if s.queued or s.in_flight]
                # The common case, one stream with work (the default device's): one round trip.
                if len(streams) == 1 or len(busy) == 1:
                    (busy or streams)[0].synchronize()
                    return
                for s in streams:
                    s.flush()
                for s in streams:
                    s.in_flight = False
                self.call_stream("Synchronize", runtime_pb2.SynchronizeRequest(session=self.session))
            else:
                # The default stream first waits for the device's other streams.
                self.default_stream(self.device(device)).synchronize()

    # ---------------------------------------------------------------- exit

    def _finish_work(self):
        """Runs queued work and prints its kernel output (exit, shutdown).

        Errors are reported on stderr, not raised: the session is closing.
        """
        # Another thread may hold the lock at exit (it is still running then).
        if not self.lock.acquire(timeout=_EXIT_SYNC_TIMEOUT):
            return
        try:
            streams = [s for s in self.all_streams() if s.queued or s.in_flight]
            if not streams or not self.session:
                return
            for s in streams:
                s.flush()
                s.in_flight = False
            self.call_stream("Synchronize", runtime_pb2.SynchronizeRequest(session=self.session),
                             timeout=_EXIT_SYNC_TIMEOUT)
        except WarpdError as e:
            if e.code != grpc.StatusCode.UNAVAILABLE:
                print(f"warpd: at exit: {e}", file=sys.stderr)
        finally:
            self.lock.release()

    def has_pending_work(self) -> bool:
        with self.lock:
            return any(s.queued or s.in_flight for s in self.all_streams())

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.cell_hook is not None:
            shell, hook = self.cell_hook
            self.cell_hook = None
            try:
                shell.events.unregister("post_run_cell", hook)
            except Exception:
                pass
        try:
            self._finish_work()
        except BaseException:  # e.g. Ctrl-C while waiting: close anyway
            pass
        try:
            with self.lock:
                for s in self.all_streams():
                    s.drop()
            if self.lease is not None:
                self.lease.stop()
            if self.session:
                # Imports of the session's GPU memory go before its arrays do.
                from . import cuda_ipc  # noqa: PLC0415
                cuda_ipc.close_session(self.session)
                self.stub.CloseSession(runtime_pb2.CloseSessionRequest(session=self.session),
                                       timeout=2.0)
        except Exception:
            pass
        self.spare_mappings.clear()
        if self.commands is not None:
            self.commands.close()
            self.commands = None
        try:
            if self.channel is not None:
                self.channel.close()
        except Exception:
            pass
        if self.private is not None:
            self.private.stop()


def register_cell_sync(rt: Runtime, shell) -> bool:
    """Makes the end of each IPython cell a sync point when the cell left work
    queued (so its kernel output shows in that cell). A kernel fault found
    there is raised in the hook, which IPython reports under the cell."""
    events = getattr(shell, "events", None)
    if events is None:
        return False

    def sync_at_cell_end(*_):
        if not rt.closed and rt.has_pending_work():
            rt.synchronize()

    events.register("post_run_cell", sync_at_cell_end)
    rt.cell_hook = (shell, sync_at_cell_end)
    return True


def _register_notebook_sync(rt: Runtime):
    ipython = sys.modules.get("IPython")  # only when the process already runs IPython
    if ipython is None:
        return
    try:
        shell = ipython.get_ipython()
    except Exception:
        return
    if shell is not None:
        register_cell_sync(rt, shell)


def _banner(rt: Runtime) -> str:
    info = rt.info
    where = rt.address
    if rt.private is not None:
        where += f" (private daemon, pid {rt.private.pid})"
    lines = [f"warpd {config.version} initialized:",
             f"   Server: {where}" + (f", version {info.version}" if info.version else "")]
    if info.cuda_toolkit or info.cuda_driver:
        lines.append(f"   CUDA Toolkit: {info.cuda_toolkit or 'none'}, Driver: {info.cuda_driver or 'none'}")
    lines.append("   Devices:")
    width = max(len(n) for n in [*rt.devices, *rt.unavailable_devices]) + 2
    for d in [*rt.devices.values(), *rt.unavailable_devices.values()]:
        product = d.name + (f" (sm_{d.arch})" if d.is_cuda and d.arch else "")
        if d.unavailable:
            product += " - cannot run work: " + d.unavailable
        quoted = '"' + d.alias + '"'
        lines.append(f"     {quoted.ljust(width + 2)} | {product}")
    lines.append(f"   Kernel cache: {info.kernel_cache_dir or '(none)'}")
    return "\n".join(lines)


def _start_private() -> Runtime:
    binary = daemon_mod.find_binary()
    if binary is None:
        raise DaemonStartError(
            "no warpd daemon is configured or answering, and no warpd binary was found to start "
            "one: set WARPD_ADDRESS to a running daemon (e.g. unix:/path/warpd.sock or "
            "127.0.0.1:7788), or WARPD_BIN to the daemon binary, or put 'warpd' on PATH")
    private = daemon_mod.PrivateDaemon(binary, cache_dir=config.kernel_cache_dir)
    private.start(config.daemon_start_timeout)
    return Runtime(private.address, private)


def _tune_malloc_wanted() -> bool:
    if config.tune_malloc is not None:
        return bool(config.tune_malloc)
    return os.environ.get("WARPD_TUNE_MALLOC", "1") != "0"


def _make_runtime() -> Runtime:
    address = config.address or os.environ.get("WARPD_ADDRESS")
    if address:
        rt = Runtime(address)
        rt.connect(timeout=config.connect_timeout)
        return rt
    force_private = config.private_daemon or os.environ.get("WARPD_PRIVATE_DAEMON", "") not in ("", "0")
    if not force_private:
        for addr in daemon_mod.default_addresses():
            if daemon_mod.probe(addr, timeout=0.5) is not None:
                rt = Runtime(addr)
                rt.connect(timeout=5.0)
                return rt
    rt = _start_private()
    try:
        rt.connect(timeout=10.0)
    except BaseException:
        rt.close()
        raise
    return rt


def _apply_cache_dir(rt: Runtime):
    want = config.kernel_cache_dir
    have = rt.info.kernel_cache_dir
    if want and os.path.abspath(want) != os.path.abspath(have or ""):
        resp = rt.call("SetKernelCacheDir", runtime_pb2.SetKernelCacheDirRequest(
            session=rt.session, path=os.path.abspath(want)))
        rt.info.kernel_cache_dir = resp.kernel_cache_dir
    config.kernel_cache_dir = rt.info.kernel_cache_dir or config.kernel_cache_dir


def init():
    """Connects to the warpd daemon (starting a private one if needed). Idempotent.

    The daemon is $WARPD_ADDRESS (or ``wp.config.address``) when set; otherwise
    a local daemon at the default addresses when one answers; otherwise a
    private daemon this process starts and stops at exit.
    """
    global _runtime
    if _runtime is not None:
        return
    with _init_lock:
        if _runtime is not None:
            return
        rt = _make_runtime()
        try:
            _apply_cache_dir(rt)
        except WarpdError as e:
            if rt.private is not None:
                rt.close()
                raise
            import warnings

            warnings.warn(f"warpd: could not set the kernel cache directory to "
                          f"{config.kernel_cache_dir!r} on the shared daemon: {e}", stacklevel=2)
            config.kernel_cache_dir = rt.info.kernel_cache_dir
        atexit.register(rt.close)
        _register_notebook_sync(rt)
        _runtime = rt
        if not config.quiet and config.log_level <= config.LOG_INFO:
            print(_banner(rt), flush=True)


def runtime() -> Runtime:
    """The process's Runtime, initializing on first use."""
    if _runtime is None:
        init()
    return _runtime


def is_initialized() -> bool:
    return _runtime is not None


def shutdown():
    """Closes the session (and stops a private daemon). A later call re-initializes."""
    global _runtime
    with _init_lock:
        rt, _runtime = _runtime, None
    if rt is not None:
        rt.close()


# -------------------------------------------------------------- public API


def synchronize():
    """Sends every queued command and waits until all devices are idle.

    Raises a pending kernel fault (KernelError) of this session.
    """
    runtime().synchronize()


def synchronize_device(device=None):
    runtime().synchronize(device if device is not None else runtime().default_device)


def get_device(ident=None) -> Device:
    return runtime().device(ident)


def set_device(ident):
    rt = runtime()
    rt.default_device = rt.device(ident)


def get_devices() -> list[Device]:
    """The daemon's devices that can run work. A GPU the daemon lists but cannot run
    work on yet is left out (as from get_cuda_devices, get_cuda_device_count and
    is_cuda_available, so `"cuda" if wp.is_cuda_available() else "cpu"` picks a device
    that works); naming it raises DeviceError saying why, and wp.init()'s banner shows it."""
    return list(runtime().devices.values())


def get_preferred_device() -> Device:
    return runtime().default_device


def get_cuda_devices() -> list[Device]:
    return [d for d in runtime().devices.values() if d.is_cuda]


def get_cuda_device_count() -> int:
    return len(get_cuda_devices())


def is_cuda_available() -> bool:
    return get_cuda_device_count() > 0


def is_cpu_available() -> bool:
    return True


def is_device_available(device) -> bool:
    """Whether the connected daemon has `device` (a name, alias or Device)."""
    try:
        runtime().device(device)
        return True
    except DeviceError:
        return False


def type_str(t) -> str:
    """Warp's spelling of a type (``warp._src.context.type_str``): "float32", "vec3f",
    "HashGridQuery" (of every precision), "array(dtype=vec3f, ndim=1)", a struct's name."""
    from . import types as wt  # noqa: PLC0415 - types imports nothing from here, but keep startup lean

    name = getattr(t, "_wp_type_name_", None)
    if name:
        return name
    tr = wt.to_typeref(t)
    if tr is not None:
        return wt.describe(tr)
    return getattr(t, "__name__", str(t))
