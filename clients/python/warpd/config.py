"""Runtime options, set as module attributes (``wp.config.quiet = True``).

Options read by ``wp.init()`` must be set before it; the others are read when
they are used.
"""

from typing import Optional

version: str = "0.1.0"

#: Directory of the compiled-kernel cache. Set before ``wp.init()`` to choose
#: where a private daemon (or, with permission, a shared one) caches kernels;
#: after init it holds the daemon's cache directory.
kernel_cache_dir: Optional[str] = None

#: Suppress the banner and other informational output.
quiet: bool = False

#: Warp's logging levels (``wp.LOG_DEBUG`` ...) and the client's threshold: the
#: banner and other informational output print at ``LOG_INFO`` and below.
LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40
log_level: int = LOG_INFO

#: Print extra information (module loads, daemon start-up).
verbose: bool = False

#: Seconds a module load (a compile) may take before a progress display shows
#: that it is compiling (a bar in a notebook, a line on stderr elsewhere;
#: progress.py). None turns it off.
compile_progress_delay: Optional[float] = 1.0

#: Accepted for Warp compatibility ("release" or "debug"); the daemon decides.
mode: str = "release"

#: Accepted for Warp compatibility.
verify_cuda: bool = False
verify_fp: bool = False
print_launches: bool = False

#: Builtins called in Python scope (``wp.sin(wp.float64(x))``) return plain Python
#: numbers for every scalar type, as before Warp 1.9; by default they return
#: instances of the Warp type except for float32, int32 and bool (pyscope_core.py).
legacy_scalar_return_types: bool = False

#: The daemon's gRPC target ("unix:/path" or "host:port"). None: the
#: WARPD_ADDRESS environment variable, else a local daemon, else a private one.
address: Optional[str] = None

#: Bearer token for the daemon (also WARPD_TOKEN). None: the daemon's login
#: socket for Unix-socket addresses, its token file for loopback TCP (see
#: ``warpd.auth``).
token: Optional[str] = None

#: Token file of a local daemon without a tenants file (None: the default,
#: ``$XDG_RUNTIME_DIR/warpd.token`` or ``/tmp/warpd-$UID.token``).
token_file: Optional[str] = None

#: PEM file of the CA that signed the daemon's TLS certificate (also
#: WARPD_TLS_CA); TCP connections then use TLS.
tls_ca: Optional[str] = None

#: Always start a private daemon instead of looking for a local one
#: (also WARPD_PRIVATE_DAEMON=1).
private_daemon: bool = False

#: Seconds to wait for a configured daemon (WARPD_ADDRESS) to answer.
connect_timeout: float = 10.0

#: Seconds to wait for a private daemon to answer.
daemon_start_timeout: float = 60.0

#: Tune glibc's malloc thresholds for bulk gRPC transfers when connecting to a
#: daemon over TCP (see ``warpd.malloc_tuning``: remote ``numpy()`` 1.6x as
#: fast on the bench host, at the cost of up to 32 MiB of freed memory kept per
#: malloc arena). None: on for TCP connections unless WARPD_TUNE_MALLOC=0;
#: False: never. Read by ``wp.init()``.
tune_malloc: Optional[bool] = None

#: Microseconds a local client polls the command socket for an answer before
#: it sleeps (a short launch + synchronize answers within it, and a thread
#: that never slept is not woken; 0: always sleep). Read at every answer.
command_spin_us: float = 100.0

#: Commands queued on a device before they are sent without waiting for a
#: sync point.
max_batch_commands: int = 1000
