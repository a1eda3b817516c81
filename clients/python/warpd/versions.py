"""Whether this client and a daemon speak the same protocol, by their versions.

Client and daemon are released together with one version number (the client's
``warpd.config.version``, the daemon's CMake project version, reported in
``ServerInfo.version``). Versions that differ only in the patch number (or,
from 1.0 on, in the minor number too) speak the same protocol; any other pair
may not, and ``wp.init()`` says so instead of failing later on a message one
side does not understand.
"""

from __future__ import annotations

import re
import warnings

from .errors import VersionMismatchError

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse(version: str):
    """(major, minor, patch) of "1.2.3" (a suffix such as "-dev" is ignored); None if unparsable."""
    m = _VERSION.match(version or "")
    return tuple(int(x) for x in m.groups()) if m else None


def compatible(client: str, daemon: str) -> bool | None:
    """True when the two versions speak the same protocol, False when they may not, None
    when a version cannot be read."""
    c, d = parse(client), parse(daemon)
    if c is None or d is None:
        return None
    if c[0] != d[0]:
        return False
    return c[0] >= 1 or c[1] == d[1]  # 0.x: the minor number is the protocol's


def check(client: str, daemon: str, address: str):
    """Raises VersionMismatchError for a daemon of another protocol; warns when the
    daemon's version cannot be read."""
    ok = compatible(client, daemon)
    if ok is None:
        warnings.warn(f"warpd: cannot read the version of the daemon at {address} ({daemon!r}) or of "
                      f"this client ({client!r}); they may not understand each other", stacklevel=3)
    elif not ok:
        raise VersionMismatchError(
            f"the warpd daemon at {address} is version {daemon}, this client (the warpd Python "
            f"package) is {client}: they speak different protocols. Install the client of the "
            f"daemon's version (pip install ./clients/python from the daemon's source tree at "
            f"version {daemon}), or connect to a daemon of version {client}")
