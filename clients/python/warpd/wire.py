"""Hand-encoded protobuf bytes for the commands a launch queues (the hot path).

A launch is queued as the serialized bytes of one entry of the repeated
``commands`` field (field 3 of both ``SubmitRequest`` and
``CreateGraphRequest``): tag, length, then the ``Command`` message. In
protobuf's wire format a message's serialization is the concatenation of its
fields, and a repeated message field is one such (tag, length, bytes) entry
per element, so a stream can build a Submit request by concatenating the
request's own fields with the entries it has queued (stream.py); the daemon
parses the result exactly like one built with the protobuf classes. Only
this file knows the field numbers it writes; they are those of
proto/warpd/v1/runtime.proto (``tests/e2e/test_launch_wire.py`` checks the
bytes against the protobuf classes).

Encoders here do not check values: callers pass handles and dims that are
non-negative and below 2**64, and argument bytes already packed.
"""

from __future__ import annotations

# (field number << 3) | wire type; 0 = varint, 2 = length-delimited.
_COMMANDS = b"\x1a"           # SubmitRequest/CreateGraphRequest.commands = 3
_COMMAND_LAUNCH = b"\x0a"     # Command.launch = 1
_LAUNCH_MODULE = b"\x08"      # Launch.module = 1
_LAUNCH_KERNEL = b"\x12"      # Launch.kernel = 2
_LAUNCH_DIM = b"\x1a"         # Launch.dim = 3 (packed int64)
_LAUNCH_ARG = b"\x22"         # Launch.args = 4
_ARG_BYTES = b"\x0a"          # LaunchArg.bytes = 1
_ARG_ARRAY = b"\x10"          # LaunchArg.array = 2
_LAUNCH_REPEAT = b"\x28"      # Launch.repeat = 5 (varint)
_LAUNCH_BLOCK_DIM = b"\x50"   # Launch.block_dim = 10 (varint)
_LAUNCH_MAX_BLOCKS = b"\x58"  # Launch.max_blocks = 11 (varint)
SUBMIT_SYNCHRONIZE = b"\x20\x01"  # SubmitRequest.synchronize = 4, true

# The most runs one launch command may ask for (the daemon's kMaxLaunchRepeat).
MAX_REPEAT = 1 << 16

_SMALL = [bytes([i]) for i in range(128)]


def varint(n: int) -> bytes:
    """Base-128 varint of a non-negative int below 2**64."""
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _delimited(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (_SMALL[n] if n < 128 else varint(n)) + payload


def launch_header(module: int, kernel: str) -> bytes:
    """The Launch fields that are the same for every launch of a kernel."""
    out = b""
    if module:
        out += _LAUNCH_MODULE + varint(module)
    if kernel:
        out += _delimited(_LAUNCH_KERNEL, kernel.encode())
    return out


def launch_dims(dims) -> bytes:
    """Launch.dim as a packed field (empty for no dims, like protobuf)."""
    if not dims:
        return b""
    return _delimited(_LAUNCH_DIM, b"".join(varint(d) for d in dims))


def launch_shape(block_dim: int, max_blocks: int) -> bytes:
    """Launch.block_dim and Launch.max_blocks (each left out at 0, like protobuf)."""
    out = b""
    if block_dim:
        out += _LAUNCH_BLOCK_DIM + varint(block_dim)
    if max_blocks:
        out += _LAUNCH_MAX_BLOCKS + varint(max_blocks)
    return out


def arg_bytes_prefix(size: int) -> bytes:
    """What precedes `size` packed bytes in a Launch.args entry (LaunchArg.bytes)."""
    return _LAUNCH_ARG + varint(size + 1 + len(varint(size))) + _ARG_BYTES + varint(size)


def arg_bytes(data: bytes) -> bytes:
    """A Launch.args entry holding packed value bytes."""
    return arg_bytes_prefix(len(data)) + data


def arg_array(handle: int) -> bytes:
    """A Launch.args entry holding an array handle."""
    return _delimited(_LAUNCH_ARG, _ARG_ARRAY + varint(handle))


# The two tags and lengths before a launch body of n < 126 bytes (both lengths one byte).
_LAUNCH_PREFIX = [_COMMANDS + bytes([n + 2]) + _COMMAND_LAUNCH + bytes([n]) for n in range(126)]


def launch_command(launch_body: bytes) -> bytes:
    """The commands entry for a Command whose launch is `launch_body`
    (a concatenation of launch_header, launch_dims and arg entries)."""
    n = len(launch_body)
    if n < 126:
        return _LAUNCH_PREFIX[n] + launch_body
    return _delimited(_COMMANDS, _delimited(_COMMAND_LAUNCH, launch_body))


def repeat_launch(entry: bytes, count: int) -> bytes:
    """The commands entry `entry` (made by launch_command) with its launch
    repeated `count` times (Launch.repeat; 2 <= count <= MAX_REPEAT)."""
    _, pos = _read_varint(entry, 1)      # after the commands tag: the Command's length
    _, pos = _read_varint(entry, pos + 1)  # after the launch tag: the Launch's length
    return launch_command(entry[pos:] + _LAUNCH_REPEAT + varint(count))


def command(serialized_command: bytes) -> bytes:
    """The commands entry for an already serialized Command message."""
    return _delimited(_COMMANDS, serialized_command)


# Transfers: array bytes in and out with one copy each in Python (array.py).
_UPLOAD_SESSION = b"\x0a"     # UploadChunk.session = 1
_UPLOAD_HANDLE = b"\x10"      # UploadChunk.handle = 2
_UPLOAD_OFFSET = b"\x18"      # UploadChunk.offset = 3
_UPLOAD_DATA = b"\x22"        # UploadChunk.data = 4
_DOWNLOAD_DATA = 0x0a         # DownloadChunk.data = 1
_DOWNLOAD_OUTPUT = 0x12       # DownloadChunk.output = 2


def upload_header(session: str, handle: int, offset: int) -> bytes:
    """The fields the first UploadChunk carries before its data."""
    out = _delimited(_UPLOAD_SESSION, session.encode()) if session else b""
    if handle:
        out += _UPLOAD_HANDLE + varint(handle)
    if offset:
        out += _UPLOAD_OFFSET + varint(offset)
    return out


def upload_chunk(data, header: bytes = b"") -> bytes:
    """A serialized UploadChunk: `header` (upload_header, first chunk only)
    and `data` (any contiguous bytes-like object), copied once."""
    if not len(data):
        return header
    return b"".join((header, _UPLOAD_DATA, varint(len(data)), data))


def _read_varint(buf, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at buf[pos]; ValueError when cut off."""
    value = shift = 0
    while shift < 64:
        if pos >= len(buf):
            break
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise ValueError("a malformed varint")


def download_chunk(msg: bytes) -> tuple[memoryview, bytes]:
    """(data, output) of a serialized DownloadChunk; data is a view into `msg`.

    ValueError when `msg` is not one (the daemon is trusted to send what it
    means, but a bad message must not become bad array contents)."""
    view = memoryview(msg)
    data, output = view[:0], b""
    pos, n = 0, len(msg)
    while pos < n:
        tag = msg[pos]
        if tag != _DOWNLOAD_DATA and tag != _DOWNLOAD_OUTPUT:
            raise ValueError(f"the daemon sent a DownloadChunk with an unexpected tag {tag}")
        size, start = _read_varint(msg, pos + 1)
        pos = start + size
        if pos > n:
            raise ValueError("the daemon sent a DownloadChunk whose field runs past its end")
        if tag == _DOWNLOAD_DATA:
            data = view[start:pos]
        else:
            output = msg[start:pos]
    return data, output
