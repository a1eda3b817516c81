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

#: Print extra information (module loads, daemon start-up).
verbose: bool = False

#: Accepted for Warp compatibility ("release" or "debug"); the daemon decides.
mode: str = "release"

#: Accepted for Warp compatibility.
verify_cuda: bool = False
verify_fp: bool = False
print_launches: bool = False

#: The daemon's gRPC target ("unix:/path" or "host:port"). None: the
#: WARPD_ADDRESS environment variable, else a local daemon, else a private one.
address: Optional[str] = None

#: Always start a private daemon instead of looking for a local one
#: (also WARPD_PRIVATE_DAEMON=1).
private_daemon: bool = False

#: Seconds to wait for a configured daemon (WARPD_ADDRESS) to answer.
connect_timeout: float = 10.0

#: Seconds to wait for a private daemon to answer.
daemon_start_timeout: float = 60.0

#: Commands queued on a device before they are sent without waiting for a
#: sync point.
max_batch_commands: int = 1000
