"""Zero-copy CPU arrays for a client on the daemon's host.

A CPU array lives in a memory file of the daemon (a memfd segment of this
session's pool). A client that reached the daemon over its Unix socket asks
the share socket beside it (``<socket>.share``, server/local/share_socket.h)
for an array: it sends its bearer token, session token and the array's
handle, and gets back the file's descriptor over the socket (SCM_RIGHTS) and
where the array's bytes are in it. The client maps those pages: ``numpy()``
after a synchronize is a view of them, and an upload is one copy into them.
Any refusal (a TCP client, an old daemon, an array adopted from another
session) falls back to the gRPC transfers.

Small arrays (under SHARE_MIN_BYTES) share the daemon's memory files with the
session's other small arrays (segment_pool.h: 64 KiB to 4 MiB each). The client
maps such a file whole, once, and keeps it (Segments) while any array or view
in it lives: CreateArray names each new array's file and offset, so an array in
a file already mapped needs no request at all, and a mapping per tiny array
never happens. A file only ever holds this session's plain arrays (descriptors
and the daemon's own objects live in the session's private pool, never mapped).

The daemon keeps a freed large array's memory file a while for the
session's next array of about its size (runtime/memory/segment_pool.h), and
names each file in its reply. A freed array's mapping goes to the session's
Spares (when no view of it is left); a new array in the same file takes it
back instead of mapping the file again, so an upload per step into a new
array copies into pages that are already mapped.
"""

from __future__ import annotations

import collections
import ctypes
import mmap
import os
import socket
import threading
import weakref

from . import auth

SHARE_MIN_BYTES = 64 << 10


def share_path(address: str) -> str | None:
    """The share socket beside a unix: address, if the daemon serves one."""
    path = auth.unix_path(address)
    if path is None:
        return None
    path += ".share"
    return path if os.path.exists(path) else None


class Mapping:
    """The pages of one array, mapped read-write and shared with the daemon.

    key: (segment, first mapped byte, mapped length) when the daemon named
    the file (then a later array at the same place may reuse the mapping);
    None otherwise."""

    def __init__(self, mm: mmap.mmap, start: int, nbytes: int, key=None):
        self.mm, self.start, self.nbytes, self.key = mm, start, nbytes, key


class Spares:
    """Mappings of freed arrays, kept for the session's next arrays in the
    same files: at most MAX_COUNT and MAX_BYTES, the oldest unmapped first.
    Thread-safe (arrays are freed by the garbage collector, on any thread,
    even inside one of these methods: so a reentrant lock)."""

    MAX_COUNT = 4
    MAX_BYTES = 1 << 30

    def __init__(self):
        self._lock = threading.RLock()
        self._by_key = collections.OrderedDict()
        self._bytes = 0

    def put(self, m: Mapping):
        if m.key is None:
            return
        dropped = []
        with self._lock:
            old = self._by_key.pop(m.key, None)
            if old is not None:
                self._bytes -= len(old.mm)
                dropped.append(old)
            self._by_key[m.key] = m
            self._bytes += len(m.mm)
            while len(self._by_key) > self.MAX_COUNT or self._bytes > self.MAX_BYTES:
                _, old = self._by_key.popitem(last=False)
                self._bytes -= len(old.mm)
                dropped.append(old)
        for old in dropped:
            _unmap(old)

    def take(self, key) -> Mapping | None:
        with self._lock:
            m = self._by_key.pop(key, None)
            if m is not None:
                self._bytes -= len(m.mm)
            return m

    def clear(self):
        with self._lock:
            dropped = list(self._by_key.values())
            self._by_key.clear()
            self._bytes = 0
        for m in dropped:
            _unmap(m)

    def __len__(self):
        return len(self._by_key)


class Segments:
    """The session's shared memory files mapped whole, by serial (never reused within a
    session): each stays mapped while a Mapping of one of its arrays lives (weakly
    held here). Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_serial = weakref.WeakValueDictionary()

    def add(self, serial: int, mm: mmap.mmap) -> mmap.mmap:
        """mm, or the file's mapping another thread added first."""
        with self._lock:
            return self._by_serial.setdefault(serial, mm)

    def view(self, serial: int, offset: int, nbytes: int) -> Mapping | None:
        """The array at `offset` of file `serial` when that file is mapped here."""
        if serial <= 0:
            return None
        with self._lock:
            mm = self._by_serial.get(serial)
        if mm is None or offset < 0 or offset + nbytes > len(mm):
            return None
        return Mapping(mm, offset, nbytes)

    def __len__(self):
        return len(self._by_serial)


def _unmap(m: Mapping):
    try:
        m.mm.close()
    except (BufferError, ValueError):  # still exported: goes with its last view
        pass


def share_request(path: str, token: str, session: str, handle: int) -> tuple[list[str], int]:
    """Asks the share socket for an array: (the reply's words, the fd attached or -1;
    the caller closes it). Raises OSError when the socket cannot be reached."""
    fd = -1
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5.0)
            s.connect(path)
            s.sendall(f"{token} {session} {handle}\n".encode())
            line = b""
            while not line.endswith(b"\n") and len(line) < 1024:
                data, fds, _, _ = socket.recv_fds(s, 1024, 1)
                if fds:
                    for extra in fds[1:]:
                        os.close(extra)
                    if fd < 0:
                        fd = fds[0]
                    else:
                        os.close(fds[0])
                if not data:
                    break
                line += data
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return line.decode("ascii", "replace").split(), fd


def map_array(path: str, token: str, session: str, handle: int, nbytes: int,
              spares: Spares | None = None, segments: Segments | None = None) -> Mapping | None:
    """Maps the array's bytes (or takes a spare mapping of them), or None
    when the daemon will not share them. A small array (under SHARE_MIN_BYTES, given
    `segments`) maps its whole file, or finds it mapped already."""
    fd = -1
    try:
        parts, fd = share_request(path, token, session, handle)
        if len(parts) not in (3, 4) or parts[0] != "ok" or fd < 0:
            return None
        offset, size = int(parts[1]), int(parts[2])
        if size != nbytes or offset < 0:
            return None
        serial = int(parts[3]) if len(parts) == 4 else 0
        if segments is not None and nbytes < SHARE_MIN_BYTES and serial > 0:
            found = segments.view(serial, offset, size)
            if found is not None:
                return found
            length = os.fstat(fd).st_size
            if offset + size > length:
                return None
            # Pages are touched as the arrays in it are read: no MAP_POPULATE for a file
            # of up to 4 MiB of which this array may be 64 bytes.
            mm = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            mm = segments.add(serial, mm)
            return Mapping(mm, offset, size) if offset + size <= len(mm) else None
        page = mmap.ALLOCATIONGRANULARITY
        start = offset // page * page
        length = offset + size - start
        key = (int(parts[3]), start, length) if len(parts) == 4 and int(parts[3]) > 0 else None
        if key is not None and spares is not None:
            spare = spares.take(key)
            if spare is not None:
                return Mapping(spare.mm, offset - start, size, key)
        # The pages exist (the daemon committed them): map them all now
        # rather than one fault per page.
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mm = mmap.mmap(fd, length, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=start)
        return Mapping(mm, offset - start, size, key)
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


class _View:
    """What a NumPy view of a mapping hangs on: the mapped bytes and the
    warpd array, so the array (and its memory) lives as long as any view."""

    def __init__(self, mapping: Mapping, owner):
        self._bytes = (ctypes.c_char * mapping.nbytes).from_buffer(mapping.mm, mapping.start)
        self._owner = owner
        self.__array_interface__ = {"shape": (mapping.nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (ctypes.addressof(self._bytes), False)}


def byte_view(mapping: Mapping, owner):
    """A writable uint8 NumPy view of the mapped bytes that keeps `owner` alive."""
    import numpy as np

    return np.asarray(_View(mapping, owner))
